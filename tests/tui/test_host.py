"""`answered_by`: the App's actions and message handlers come from its controllers, each with its own signature,
and a name answered twice is refused when the class is made."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from textual.app import App
from textual.binding import Binding, BindingType
from textual.message import Message

from attn_tui.tui.app import AttnApp
from attn_tui.tui.host import Controller, answered_by
from attn_tui.tui.navigation import Navigation


@dataclass
class Pinged(Message):
    times: int


class Moving(Controller):
    def __init__(self, host: Any) -> None:
        super().__init__(host)
        self.heard: list[object] = []

    def action_move(self, d_row: int, d_col: int) -> None:
        self.heard.append((d_row, d_col))

    async def action_later(self) -> None:
        self.heard.append("awaited")

    def on_pinged(self, message: Pinged) -> None:
        self.heard.append(message.times)


@answered_by(moving=Moving)
class Small(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("m", "move(2, -1)"), Binding("l", "later")]

    def __init__(self) -> None:
        super().__init__()
        self.moving = Moving(self)


async def test_the_entry_points_reach_their_controller_with_every_argument() -> None:
    app = Small()
    async with app.run_test() as pilot:
        await pilot.press("m", "l")
        app.post_message(Pinged(3))
        await pilot.pause()
    assert app.moving.heard == [(2, -1), "awaited", 3]


def test_an_entry_point_carries_its_method_s_signature() -> None:
    assert list(inspect.signature(AttnApp.action_cursor).parameters) == ["self", "d_row", "d_col"]
    assert AttnApp.action_cursor.__wrapped__ is Navigation.action_cursor  # type: ignore[attr-defined]


def test_a_name_answered_twice_is_refused_when_the_class_is_made() -> None:
    class AlsoMoving(Controller):
        def action_move(self, d_row: int, d_col: int) -> None: ...

    with pytest.raises(TypeError, match="action_move is answered twice"):
        answered_by(moving=Moving, also=AlsoMoving)(type("Twice", (App,), {}))

    class Own(App[None]):
        def action_later(self) -> None: ...

    with pytest.raises(TypeError, match="action_later is answered twice"):
        answered_by(moving=Moving)(Own)
