"""What every handler of a worker's result shares."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from textual.app import App

Handler = TypeVar("Handler", bound=Callable[..., None])


def while_running(handler: Handler) -> Handler:
    """A worker's result that arrives while the app shuts down (its panes already gone) is dropped, not handled:
    quitting while a model loads must not end in a traceback."""

    @functools.wraps(handler)
    def handle(self: App[int], message: Any) -> None:
        if self.is_running:
            handler(self, message)

    return handle  # type: ignore[return-value]
