"""Every test in tests/tui drives the app through Pilot: marked `app`."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/tui/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.app)
