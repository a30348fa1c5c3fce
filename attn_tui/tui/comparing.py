"""Compare mode: the stage on show (A) beside the same stage with one setting changed (B), and B − A.

A mixin of AttnApp. B is computed by a worker of its own, so A stays responsive; a B that
arrives after the comparison changed is dropped by its generation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from textual import work

from attn_tui.ask.settings import Ask
from attn_tui.i18n import Msg, _
from attn_tui.tui import served
from attn_tui.tui.messages import CompareFailed, CompareReady
from attn_tui.tui.workers import while_running

if TYPE_CHECKING:
    from textual.app import App

    from attn_tui.present.compare import Comparison
    from attn_tui.trace.shown import Shown
    from attn_tui.trace.stage import Trace
    from attn_tui.tui.state import AppState
    from attn_tui.tui.widgets.explorer import Explorer

    _AppBase = App[int]
else:
    _AppBase = object


class CompareActions(_AppBase):
    """`c`, the B worker and its results."""

    state: AppState
    torch_ready: bool
    max_memory: int | None

    if TYPE_CHECKING:  # what AttnApp provides; declared for the type checker only, nothing stands in at runtime
        @property
        def explorer(self) -> Explorer: ...

        @property
        def trace(self) -> Trace | None: ...

        def notify(self, message: str | Msg, *, markup: bool = False, **options: Any) -> None: ...

        def atlas_b_arrived(self, comparison: Comparison, shown_b: Shown | None) -> None: ...

        def atlas_b_dropped(self) -> None: ...

    def action_compare(self) -> None:
        """c: choose one setting to change and see A, B and B − A; c again leaves."""
        from attn_tui.tui.screens.choose import ChoiceScreen

        if self.state.comparison is not None:
            self.end_compare()
            return
        if self.trace is None:
            return
        self.push_screen(ChoiceScreen(_("Compare this stage with one setting changed (B):"),
                                      [(str(c.title), c) for c in self.compare_options()]), self.start_compare)

    def compare_options(self) -> list[Comparison]:
        """What B can be for the trace on show (empty before the first trace)."""
        from attn_tui.present.compare import comparisons

        trace = self.trace
        if trace is None:
            return []
        others = sorted(self.state.loaded_models)  # another model opened this session, on the same sentence
        windows = [None if (g := trace.geometry.get(n)) is None else g.window for n in range(trace.layers)]
        heads = trace.heads_at(self.explorer.layer_index)  # the layer's own (a Qwen3-Next linear layer's value heads)
        return comparisons(self.state.wanted, heads, self.explorer.head, trace.layers,
                           self.explorer.layer_index, others, windows)  # the layers computed so far say theirs

    def start_compare(self, comparison: Comparison | None) -> None:
        if comparison is None:
            return
        self.state.start_compare(comparison)
        if comparison.same_trace:
            self.explorer.show_b(comparison, None)
        else:
            self.compute_b()

    def end_compare(self) -> None:
        self.state.end_compare()  # whatever B is in flight is no longer wanted
        self.explorer.end_compare()
        self.atlas_b_dropped()

    def compute_b(self) -> None:
        comparison = self.state.comparison
        if comparison is None or not self.torch_ready:
            return
        if not comparison.fits(self.state.wanted):
            self.end_compare()
            return
        b = self.state.send_b()
        if b is None:  # a head comparison: B is the same trace at another head
            self.explorer.show_b(comparison, None)
            return
        self._compute_b(*b)

    @work(thread=True, exclusive=True, group="compare", description="compare")
    def _compute_b(self, ask: Ask, generation: int) -> None:
        from attn_tui.errors import AttnError, describe
        from attn_tui.sources import run

        try:
            served.check_ask(ask)
            self.post_message(CompareReady(generation, run(ask, self.max_memory, cpu_fallback=True)))
        except AttnError as exc:
            self.post_message(CompareFailed(generation, exc.message))
        except Exception as exc:
            self.post_message(CompareFailed(generation, describe(exc)))

    @while_running
    def on_compare_ready(self, message: CompareReady) -> None:
        comparison = self.state.b_arrived(message.generation)
        if comparison is not None:
            self.explorer.show_b(comparison, message.shown)
            self.atlas_b_arrived(comparison, message.shown)

    @while_running
    def on_compare_failed(self, message: CompareFailed) -> None:
        if message.generation == self.state.b_generation:
            self.notify(message.error, title=_("B could not be computed"), severity="error", timeout=8)
            self.end_compare()

