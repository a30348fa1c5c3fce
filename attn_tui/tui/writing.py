"""The app's writing keys: `n` writes the next token of a causal model (a count typed just before, `5n` or `12n`,
writes that many: the digits were a count, so the view stays where it was), `N` keeps writing a token at a time
until the model ends its text, the model's length or HOLD_MOST tokens, and `b` stops a writing in flight (or a
hold) and keeps what it wrote.

Each press asks the one door for the same model with more tokens; the source keeps the text being written
(sources/generate.py), so a press costs one step of the model, and the steps show as they are made.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.ask.models import DATE_MODELS
from attn_tui.i18n import _
from attn_tui.tui.host import Controller, Host

if TYPE_CHECKING:
    from attn_tui.trace.shown import Shown
    from attn_tui.tui.navigation import Navigation

COUNT_WINDOW = 2.0  # seconds a digit waits for `n` (or the next digit) to take it as a count
COUNT_MOST = 999  # the largest count digits make
HOLD_MOST = 256  # tokens one `N` writes at most


class Writing(Controller):
    """`n`, `N` and `b`; digits typed before `n` are its count (each digit still jumps to its stage as it always
    did, and `n` takes the view back to where the first digit found it)."""

    def __init__(self, host: Host, navigation: Navigation,
                 count_clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(host)
        self.navigation = navigation
        self.count_clock = count_clock  # when each digit came (a test sets its own)
        self.count: tuple[int, float, int] | None = None  # the count typed so far, when its last digit came, the place
        self.holding = 0  # tokens an `N` may still write (0: not holding)
        self.hold_at = 0  # the tokens written that the result a hold waits for has

    def action_stage(self, index: int) -> None:
        digit, now, count = (index + 1) % 10, self.count_clock(), self.count
        if count is not None and now - count[1] <= COUNT_WINDOW and count[0] * 10 + digit <= COUNT_MOST:
            self.count = (count[0] * 10 + digit, now, count[2])
        else:
            self.count = (digit, now, self.explorer.stage_index)
        self.navigation.to_stage(index)

    def _typed_count(self) -> int:
        count, self.count = self.count, None
        if count is None or count[0] == 0 or self.count_clock() - count[1] > COUNT_WINDOW:
            return 1
        self.explorer.go_to_place(count[2])  # the digits were a count, not a jump
        return count[0]

    def action_write_on(self) -> None:
        """Keep writing, a token a step, until the model ends its text, reaches its length or HOLD_MOST tokens, or
        `b` stops it."""
        self.holding = HOLD_MOST
        self.action_write()

    def keep_writing(self, shown: Shown) -> None:
        """A result is on show: while holding, ask for one more token, unless the text ended."""
        if not self.holding:
            return
        model, meta = shown.ask.model, shown.trace.meta
        if model is None or model.generate != self.hold_at or getattr(meta, "stopped", False):
            self.holding = 0  # the text ended, or something else is on show now (the hold's ask was refused)
            return
        self.holding -= 1
        if self.holding:
            self.hold_at = model.generate + 1
            self.host.ask(replace(model, generate=self.hold_at))

    def action_write(self) -> None:
        """Write the next token (or as many as the digit typed before): the model on show, asked for more."""
        count = self._typed_count()
        model = self.host.state.wanted.model
        if model is None or model.name in DATE_MODELS:
            self.holding = 0
            self.host.notify(_("n writes with a causal language model: open one in the model pane (smollm2, or a "
                               "folder of a Llama, Qwen2 or Gemma model)"), timeout=4)
            return
        self.hold_at = model.generate + count
        self.host.ask(replace(model, generate=self.hold_at))

    def action_stop_writing(self) -> None:
        """Stop the writing in flight; the tokens written so far stay on show."""
        holding, self.holding = self.holding, 0
        kept = self.host.state.stop_growing()
        if kept is None and holding:
            self.host.notify(_("stopped: n goes on from there"), timeout=3)
            return
        if kept is None:
            self.host.notify(_("nothing is being written: n writes the next token"), timeout=3)
            return
        self.host.stop_computing()
        self.host.shown = kept
        self.host.notify(_("stopped after {n} tokens: n goes on from there").format(n=kept.trace.steps()), timeout=4)
