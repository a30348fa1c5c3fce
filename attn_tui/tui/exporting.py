"""Exports from the app: the stage or the whole trace as npz, csv or json, or the screen as SVG.

A controller of AttnApp. Files are written by a worker (a long trace streams in row blocks);
the notice names the path written, or why nothing was.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from attn_tui.i18n import Msg, Plural, _
from attn_tui.tui.host import Controller
from attn_tui.tui.messages import ExportDone, ExportFailed
from attn_tui.tui.served import offer_download, visible_path
from attn_tui.tui.workers import while_running

if TYPE_CHECKING:
    from attn_tui.tui.screens.export import ExportAsk


class Exporting(Controller):
    """`e`, the export worker and its results."""

    async def action_export(self) -> None:
        from attn_tui.io.export import file_name
        from attn_tui.tui.screens.export import ExportScreen
        from attn_tui.tui.served import offered_folder

        await self.explorer.drawn()  # the stage on show is the one the user moved to

        trace, view = self.host.trace, self.host.view
        if trace is None or view is None:
            self.host.notify(_("nothing to export yet"), timeout=3)
            return
        self.host.push_screen(ExportScreen(file_name(trace.stages[view.place]), offered_folder()), self.export)

    def export(self, ask: ExportAsk | None) -> None:
        if ask is None:
            return
        if ask.what == "screen":
            self.host.call_after_refresh(self._save_screen, ask.path)
            return
        self.host.run_worker(partial(self._export, ask), thread=True, exclusive=True, group="export",
                             description="export")

    def _save_screen(self, path: Path) -> None:
        """The screen as SVG, re-set so a browser keeps each character in its cells (render/svg.py), written
        beside `path` and renamed: a full disk keeps the file that was there."""
        from attn_tui.errors import AttnError
        from attn_tui.io.files import quoted, writable_file, write_text_atomic
        from attn_tui.render.svg import cell_aligned

        try:
            writable_file(path, Msg("the screenshot"))
            try:
                write_text_atomic(path, cell_aligned(self.host.export_screenshot()))
            except OSError as exc:
                raise AttnError(Msg("cannot write {what} to {path}: {reason}", what=Msg("the screenshot"),
                                    path=quoted(str(path)), reason=exc.strerror or exc)) from None
        except AttnError as exc:
            self.host.notify(str(exc), title=_("export failed"), severity="error", timeout=8)
            return
        self.host.notify(_("saved the screen to {path}").format(path=visible_path(path.resolve())), timeout=8)
        offer_download(self.host, path.resolve())

    def _export(self, ask: ExportAsk) -> None:
        from attn_tui.errors import AttnError, describe
        from attn_tui.io.export import export

        trace, view = self.host.trace, self.host.view
        assert trace is not None and view is not None
        try:
            if ask.what == "trace":
                for layer in range(trace.layers if trace.layers > 1 else 0):
                    trace.fill(layer, None)
                trace.fill_steps()  # a writing's every step, its stages beyond the weights traced now
                stages = list(trace)
            else:
                stages = [trace.stages[view.place]]
            export(trace, stages, ask.fmt, ask.path, what=Msg("the export"))  # checks the path, then writes
        except AttnError as exc:
            self.host.post_message(ExportFailed(exc.message))
            return
        except Exception as exc:
            self.host.post_message(ExportFailed(describe(exc)))
            return
        self.host.post_message(ExportDone(str(ask.path.resolve()), len(stages)))

    @while_running
    def on_export_done(self, message: ExportDone) -> None:
        self.host.notify(Plural("wrote {n} stage to {path}", "wrote {n} stages to {path}", n=message.stages,
                           path=visible_path(Path(message.path))), title=_("exported"),
                    timeout=10)
        offer_download(self.host, Path(message.path))

    @while_running
    def on_export_failed(self, message: ExportFailed) -> None:
        self.host.notify(message.error, title=_("export failed"), severity="error", timeout=10)

