"""Exports from the app: the stage or the whole trace as npz, csv or json, the atlas's heads as json or csv, or the
screen (the main one or the atlas) as SVG.

A controller of AttnApp. Files are written by a worker (a long trace streams in row blocks); one
larger than LARGE says its size and asks first; the notice names the path written, or why nothing
was. The folder of the last export is offered for the next, and kept in the session.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from attn_tui.i18n import Msg, Plural, _
from attn_tui.tui.host import Controller, Host
from attn_tui.tui.messages import ExportDone, ExportFailed, ExportTooLarge
from attn_tui.tui.served import offer_download, offered_folder, served, visible_path
from attn_tui.tui.workers import while_running

if TYPE_CHECKING:
    from attn_tui.present.atlas import Atlas
    from attn_tui.trace.place import Place
    from attn_tui.trace.stage import Stage, Trace
    from attn_tui.tui.screens.atlas import AtlasScreen
    from attn_tui.tui.screens.export import ExportAsk


class Exporting(Controller):
    """`e` (in the main view and in the atlas), the export worker and its results."""

    def __init__(self, host: Host, save_session_soon: Callable[[], None]) -> None:
        """`save_session_soon`: the folder chosen is in the session."""
        super().__init__(host)
        self.save_session_soon = save_session_soon
        self.atlas: Atlas | None = None  # the atlas an export from the atlas screen writes

    def folder(self) -> Path:
        """Where a bare file name goes: the last export's folder while it is there, else where the app started."""
        last = Path(self.host.state.export_folder)
        return last if self.host.state.export_folder and not served() and last.is_dir() else offered_folder()

    async def action_export(self) -> None:
        from attn_tui.io.export import file_name
        from attn_tui.tui.screens.export import ExportScreen

        await self.explorer.drawn()  # the stage on show is the one the user moved to

        trace, view = self.host.trace, self.host.view
        if trace is None or view is None:
            self.host.notify(_("nothing to export yet"), timeout=3)
            return
        self.host.push_screen(ExportScreen(file_name(trace.stages[view.place]), self.folder()), self.export)

    def on_atlas_screen_export_asked(self, message: AtlasScreen.ExportAsked) -> None:
        """e in the atlas: its heads' role scores, or the atlas as it is drawn."""
        from attn_tui.tui.screens.export import WHAT, ExportScreen

        screen = message.screen
        if screen.atlas is None:
            self.host.notify(_("no head atlas here to export"), timeout=3)
            return
        self.atlas = screen.atlas
        self.host.push_screen(ExportScreen(WHAT["atlas"][1], self.folder(), ("atlas", "screen")), self.export)

    def export(self, ask: ExportAsk | None) -> None:
        if ask is None:
            return
        if ask.what == "screen":
            self.host.call_after_refresh(self._save_screen, ask.path)  # once the dialog is gone from the screen
            return
        # What is on show when the user said so, read here on the event loop: the worker writes that, and only that.
        trace, view = self.host.trace, self.host.view
        if ask.what != "atlas" and (trace is None or view is None):
            return
        self._run(partial(self._export, ask, trace, None if view is None else view.place))

    def _run(self, work: Callable[[], None]) -> None:
        self.host.run_worker(work, thread=True, exclusive=True, group="export", description="export")

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
        self.written_to(path)
        self.host.notify(_("saved the screen to {path}").format(path=visible_path(path.resolve())), timeout=8)
        offer_download(self.host, path.resolve())

    def _export(self, ask: ExportAsk, trace: Trace | None, place: Place | None) -> None:
        """In the worker: the stages asked for (a whole trace's filled first), and their size asked about first
        when it is over LARGE; the atlas's heads."""
        from attn_tui.io.export import output_size
        from attn_tui.tui.screens.export import LARGE

        if ask.what == "atlas":
            self._reported(ask, lambda: self._write_atlas(ask))
            return
        assert trace is not None and place is not None
        stages: list[Stage] = []

        def gather() -> int:
            if ask.what == "trace":
                for layer in range(trace.layers if trace.layers > 1 else 0):
                    trace.fill(layer, None)
                trace.fill_steps()  # a writing's every step, its stages beyond the weights traced now
                stages.extend(trace)
            else:
                stages.append(trace.stages[place])
            return output_size(trace, stages, ask.fmt)

        size = self._reported(ask, gather, done=False)
        if size is None:
            return
        if size > LARGE:
            self.host.post_message(ExportTooLarge(ask, size, partial(self._write, ask, trace, stages)))
            return
        self._write(ask, trace, stages)

    def _write(self, ask: ExportAsk, trace: Trace, stages: list[Stage]) -> None:
        from attn_tui.io.export import export

        def write() -> int:
            export(trace, stages, ask.fmt, ask.path, what=Msg("the export"))  # checks the path, then writes
            return len(stages)

        self._reported(ask, write)

    def _reported(self, ask: ExportAsk, work: Callable[[], int], done: bool = True) -> int | None:
        """`work`'s count, and (`done`) the notice of what was written; a failure is said instead (None)."""
        from attn_tui.errors import AttnError, describe

        try:
            count = work()
        except AttnError as exc:
            self.host.post_message(ExportFailed(exc.message))
            return None
        except Exception as exc:
            self.host.post_message(ExportFailed(describe(exc)))
            return None
        if done:
            self.host.post_message(ExportDone(str(ask.path.resolve()), count, ask.what))
        return count

    def _write_atlas(self, ask: ExportAsk) -> int:
        """The atlas's heads as JSON (with what it is of) or CSV, one row a head; how many heads."""
        import csv
        import io
        import json

        from attn_tui.io.files import writable_file, write_text_atomic
        from attn_tui.present.atlas import ROW_FIELDS

        atlas = self.atlas
        assert atlas is not None
        rows = atlas.rows()
        writable_file(ask.path, Msg("the export"))
        if ask.fmt == "csv":
            out = io.StringIO()
            writer = csv.DictWriter(out, fieldnames=ROW_FIELDS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(rows)
            text = out.getvalue()
        else:
            text = json.dumps({"atlas": atlas.name, "layers": atlas.layers, "heads": atlas.heads,
                               "tokens": atlas.tokens, "rows": rows}, ensure_ascii=False, indent=1) + "\n"
        write_text_atomic(ask.path, text)
        return len(rows)

    def written_to(self, path: Path) -> None:
        """The folder of what was written is offered next time (served: serve's folder, always)."""
        if not served():
            self.host.state.export_folder = str(path.resolve().parent)
            self.save_session_soon()

    @while_running
    def on_export_too_large(self, message: ExportTooLarge) -> None:
        """An export larger than LARGE: its size, and the choice to write it or not."""
        from attn_tui.ask.budget import format_bytes
        from attn_tui.tui.screens.choose import ChoiceScreen

        size = format_bytes(message.size)
        question = _("This export is about {size}: write it to {path}?").format(size=size, path=message.ask.path.name)
        self.host.push_screen(ChoiceScreen(question, [(_("write {size}").format(size=size), True),
                                                      (_("do not write it"), False)]),
                              lambda yes: self._run(message.write) if yes else None)

    @while_running
    def on_export_done(self, message: ExportDone) -> None:
        path = Path(message.path)
        self.written_to(path)
        what = (Plural("wrote {n} head to {path}", "wrote {n} heads to {path}", n=message.count,
                       path=visible_path(path)) if message.what == "atlas"
                else Plural("wrote {n} stage to {path}", "wrote {n} stages to {path}", n=message.count,
                            path=visible_path(path)))
        self.host.notify(what, title=_("exported"), timeout=10)
        offer_download(self.host, path)

    @while_running
    def on_export_failed(self, message: ExportFailed) -> None:
        self.host.notify(message.error, title=_("export failed"), severity="error", timeout=10)
