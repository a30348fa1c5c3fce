"""Every test in tests/tui drives the app through Pilot: marked `app`.

A Pilot test costs one to three seconds (the app composes, computes and repaints), so all but the
app's smoke tests are also `slow`: the fast subset stays under a minute, and CI runs them all.
"""

from __future__ import annotations

import pytest

SMOKE = {"test_startup.py", "test_korean.py", "test_scale.py"}  # the app's tests that stay in `-m "not slow"`


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        path = str(item.path).replace("\\", "/")
        if "tests/tui/" in path:
            item.add_marker(pytest.mark.app)
            if item.path.name not in SMOKE:
                item.add_marker(pytest.mark.slow)
