"""Every test in tests/tui drives the app through Pilot: marked `app`.

A Pilot test costs one to three seconds (the app composes, computes and repaints), so all but the
app's smoke tests are also `slow`: the fast subset stays under a minute, and CI runs them all.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SMOKE = {"test_startup.py", "test_korean.py", "test_scale.py"}  # the app's tests that stay in `-m "not slow"`


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path).replace("\\", "/")
        if "tests/tui/" in path:
            item.add_marker(pytest.mark.app)
            if item.path.name not in SMOKE:
                item.add_marker(pytest.mark.slow)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """With `-m "not slow"`, the Pilot modules past the smoke tests are not even imported: every test in them is
    slow (above), so importing them would only be deselecting them."""
    if config.getoption("markexpr", "") != "not slow" or not collection_path.name.startswith("test_"):
        return None
    return True if collection_path.suffix == ".py" and collection_path.name not in SMOKE else None


@pytest.fixture(autouse=True)
def _steady_cursors(monkeypatch: pytest.MonkeyPatch) -> None:
    """An input's cursor stays as it is drawn: a picture (or a check of the screen) never depends on when in its
    half-second blink a loaded machine got round to taking it."""
    from textual.widgets import Input

    monkeypatch.setattr(Input, "_toggle_cursor", lambda self: None)
