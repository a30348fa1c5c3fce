"""The App as its controllers see it, and how the App hands Textual's calls to them.

Textual calls actions and message handlers on DOM nodes, so the App has those entry points, generated
from its controllers (`answered_by`), each forwarding to the controller that answers it; a controller
reaches the App only through `Host`: what is asked and on show, the panes, and the few Textual calls
it makes.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Sequence

    from textual.command import SimpleCommand
    from textual.message import Message
    from textual.screen import Screen
    from textual.timer import Timer
    from textual.widget import Widget
    from textual.worker import Worker

    from attn_tui.ask.settings import Ask, VariantAsk
    from attn_tui.i18n import Msg
    from attn_tui.present.stage_view import StageView
    from attn_tui.trace.shown import Shown
    from attn_tui.trace.stage import Trace
    from attn_tui.tui.state import AppState
    from attn_tui.tui.widgets.explorer import Explorer
    from attn_tui.tui.widgets.input_pane import InputPane
    from attn_tui.tui.widgets.model_pane import ModelPane

AppType = TypeVar("AppType")


class Host(Protocol):
    """What a controller reads and calls on the App."""

    state: AppState
    shown: Shown | None
    language: str
    torch_ready: bool
    max_memory: int | None
    play_interval: float

    @property
    def explorer(self) -> Explorer: ...

    @property
    def model_pane(self) -> ModelPane: ...

    @property
    def input_pane(self) -> InputPane: ...

    @property
    def trace(self) -> Trace | None: ...

    @property
    def view(self) -> StageView | None: ...

    @property
    def variants(self) -> VariantAsk: ...

    @property
    def error(self) -> str: ...

    @property
    def is_running(self) -> bool: ...

    @property
    def screen(self) -> Screen[object]: ...

    @property
    def screen_stack(self) -> list[Screen[Any]]: ...

    def query_one(self, selector: str) -> Widget: ...

    def ask(self, ask: Ask) -> None: ...

    def show_error(self, parts: list[str | Msg], joiner: str = " · ") -> None: ...

    def back_to_shown(self) -> None: ...

    def stop_computing(self) -> None: ...

    def show_pane_view(self) -> None: ...

    def notify(self, message: str | Msg, *, markup: bool = False, **options: Any) -> None: ...

    def push_screen(self, screen: Screen[Any], callback: Any = None) -> Any: ...

    def search_commands(self, commands: Sequence[SimpleCommand], placeholder: str = "Search for commands…") -> Any: ...

    def post_message(self, message: Message) -> bool: ...

    def run_worker(self, work: Callable[[], Any], *, group: str = "default", description: str = "",
                   exclusive: bool = False, thread: bool = False) -> Worker[Any]: ...

    def call_after_refresh(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    def set_interval(self, interval: float, callback: Callable[[], Any] | None = None) -> Timer: ...

    def set_timer(self, delay: float, callback: Callable[[], Any] | None = None) -> Timer: ...

    def export_screenshot(self) -> str: ...


class Controller:
    """One part of what the App does for the user, over its `host`."""

    def __init__(self, host: Host) -> None:
        self.host = host

    @property
    def explorer(self) -> Explorer:
        return self.host.explorer

    @property
    def is_running(self) -> bool:
        """False while the app shuts down: a worker's late result is then dropped (`while_running`)."""
        return self.host.is_running


def answered_by(**controllers: type[Controller]) -> Callable[[type[AppType]], type[AppType]]:
    """A class decorator: each named controller's actions (`action_*`) and message handlers (`on_*`) become
    entry points of the App, answered by the controller held in the App's attribute of that name.

    Textual reads the parameters an action or handler takes from its signature, so an entry point carries its
    method's (functools.wraps: `action_cursor(d_row, d_col)` gets both of a binding's arguments). A name two
    controllers answer, or one the App answers itself, is a mistake caught here, at import."""

    def decorate(app_class: type[AppType]) -> type[AppType]:
        for attribute, controller in controllers.items():
            for name, method in vars(controller).items():
                if not name.startswith(("action_", "on_")):
                    continue
                if hasattr(app_class, name):
                    raise TypeError(f"{app_class.__name__}.{name} is answered twice ({controller.__name__})")
                setattr(app_class, name, _forward(attribute, method))
        return app_class

    return decorate


def _forward(attribute: str, method: Callable[..., Any]) -> Callable[..., Any]:
    name = method.__name__

    @functools.wraps(method)
    def entry(app: object, *args: Any) -> Any:
        return getattr(getattr(app, attribute), name)(*args)

    return entry
