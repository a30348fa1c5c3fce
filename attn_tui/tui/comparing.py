"""Compare mode: the stage on show (A) beside the same stage with one setting changed (B), and B − A.

A controller of AttnApp. B is computed by a worker of its own, so A stays responsive; a B that
arrives after the comparison changed is dropped by its generation.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from attn_tui.i18n import _
from attn_tui.tui import served
from attn_tui.tui.host import Controller, Host
from attn_tui.tui.messages import CompareFailed, CompareReady
from attn_tui.tui.workers import while_running

if TYPE_CHECKING:
    from attn_tui.ask.settings import Ask
    from attn_tui.present.compare import Comparison
    from attn_tui.trace.shown import Shown


class Comparing(Controller):
    """`c`, the B worker and its results; whoever shows B besides the explorer (an open atlas) is told by
    `shows_b` and `drops_b`."""

    def __init__(self, host: Host, shows_b: Callable[[Comparison, Shown | None], None],
                 drops_b: Callable[[], None]) -> None:
        super().__init__(host)
        self.shows_b, self.drops_b = shows_b, drops_b

    def action_compare(self) -> None:
        """c: choose one setting to change and see A, B and B − A; c again leaves."""
        from attn_tui.tui.screens.choose import ChoiceScreen

        if self.host.state.comparison is not None:
            self.end_compare()
            return
        if self.host.trace is None:
            return
        self.host.push_screen(ChoiceScreen(_("Compare this stage with one setting changed (B):"),
                                           [(str(c.title), c) for c in self.compare_options()]), self.start_compare)

    def compare_options(self) -> list[Comparison]:
        """What B can be for the trace on show (empty before the first trace)."""
        from attn_tui.present.compare import comparisons

        trace = self.host.trace
        if trace is None:
            return []
        others = sorted(self.host.state.loaded_models)  # another model opened this session, on the same sentence
        windows = [None if (g := trace.geometry.get(n)) is None else g.window for n in range(trace.layers)]
        heads = trace.heads_at(self.explorer.layer_index)  # the layer's own (a Qwen3-Next linear layer's value heads)
        return comparisons(self.host.state.wanted, heads, self.explorer.head, trace.layers,
                           self.explorer.layer_index, others, windows)  # the layers computed so far say theirs

    def start_compare(self, comparison: Comparison | None) -> None:
        if comparison is None:
            return
        self.host.state.start_compare(comparison)
        if comparison.same_trace:
            self.explorer.show_b(comparison, None)
        else:
            self.compute_b()

    def end_compare(self) -> None:
        self.host.state.end_compare()  # whatever B is in flight is no longer wanted
        self.explorer.end_compare()
        self.drops_b()

    def compute_b(self) -> None:
        comparison = self.host.state.comparison
        if comparison is None or not self.host.torch_ready:
            return
        if not comparison.fits(self.host.state.wanted):
            self.end_compare()
            return
        b = self.host.state.send_b()
        if b is None:  # a head comparison: B is the same trace at another head
            self.explorer.show_b(comparison, None)
            return
        self.host.run_worker(partial(self._compute_b, *b), thread=True, exclusive=True, group="compare",
                             description="compare")

    def _compute_b(self, ask: Ask, generation: int) -> None:
        from attn_tui.errors import AttnError, describe
        from attn_tui.sources import run

        try:
            served.check_ask(ask)
            self.host.post_message(CompareReady(generation, run(ask, self.host.max_memory, cpu_fallback=True)))
        except AttnError as exc:
            self.host.post_message(CompareFailed(generation, exc.message))
        except Exception as exc:
            self.host.post_message(CompareFailed(generation, describe(exc)))

    @while_running
    def on_compare_ready(self, message: CompareReady) -> None:
        comparison = self.host.state.b_arrived(message.generation)
        if comparison is not None:
            self.explorer.show_b(comparison, message.shown)
            self.shows_b(comparison, message.shown)

    @while_running
    def on_compare_failed(self, message: CompareFailed) -> None:
        if message.generation == self.host.state.b_generation:
            self.host.notify(message.error, title=_("B could not be computed"), severity="error", timeout=8)
            self.end_compare()

