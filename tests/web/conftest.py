"""The `serve` fixture: `attn-tui serve` processes a test starts, each ended when the test ends."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # imported by the fixture itself: the module skips where textual-serve is not installed
    from tests.web.test_serve_visitors import Serve


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[type[Serve]]:
    from tests.web.test_serve_visitors import Serve

    started: list[Serve] = []

    def start(*options: str, **bounds: float) -> Serve:
        started.append(Serve(tmp_path, *options, **bounds))
        return started[-1]

    yield start  # type: ignore[misc]
    for server in started:
        server.end()
