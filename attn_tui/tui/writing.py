"""The app's writing keys: `n` writes the next token of a causal model (a count typed just before, `5n`, writes
that many), `b` stops a writing in flight and keeps what it wrote.

Each press asks the one door for the same model with more tokens; the source keeps the text being written
(sources/generate.py), so a press costs one step of the model, and the steps show as they are made.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.ask.models import DATE_MODELS
from attn_tui.i18n import _
from attn_tui.tui.actions import NavigationActions

if TYPE_CHECKING:
    from attn_tui.ask.settings import Ask
    from attn_tui.tui.state import AppState

COUNT_WINDOW = 2.0  # seconds a digit waits for `n` to take it as a count


class WritingActions(NavigationActions):
    """`n` and `b`; a digit typed before `n` is its count (the digit still jumps to its stage, as it always did)."""

    state: AppState
    _count: tuple[int, float] | None = None  # the digit last typed and when

    if TYPE_CHECKING:
        def ask(self, ask: Ask) -> None: ...

    def action_stage(self, index: int) -> None:
        self._count = ((index + 1) % 10, time.monotonic())
        super().action_stage(index)

    def _typed_count(self) -> int:
        count, self._count = self._count, None
        if count is None or count[0] == 0 or time.monotonic() - count[1] > COUNT_WINDOW:
            return 1
        return count[0]

    def action_write(self) -> None:
        """Write the next token (or as many as the digit typed before): the model on show, asked for more."""
        count = self._typed_count()
        model = self.state.wanted.model
        if model is None or model.name in DATE_MODELS:
            self.notify(_("n writes with a causal language model: open one in the model pane (smollm2, or a "
                          "folder of a Llama, Qwen2 or Gemma model)"), timeout=4)
            return
        self.ask(replace(model, generate=model.generate + count))

    def action_stop_writing(self) -> None:
        """Stop the writing in flight; the tokens written so far stay on show."""
        kept = self.state.stop_growing()
        if kept is None:
            self.notify(_("nothing is being written: n writes the next token"), timeout=3)
            return
        self.workers.cancel_group(self, "compute")
        self.shown = kept
        self.notify(_("stopped after {n} tokens: n goes on from there").format(n=kept.trace.steps()), timeout=4)
