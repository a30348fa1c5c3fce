"""Every time limit a test sets: a generous safety net against a hang, never what a test asserts.

A loaded machine runs the same work several times slower, so each limit is multiplied by one factor
that CI (or anyone) can raise: `ATTN_TUI_TEST_TIME_FACTOR=4 pytest`. A verdict never depends on it;
only how long a hang takes to fail does.
"""

from __future__ import annotations

import os


def _factor() -> float:
    try:
        factor = float(os.environ.get("ATTN_TUI_TEST_TIME_FACTOR", "1"))
    except ValueError:
        return 1.0
    return factor if factor >= 1 else 1.0


FACTOR = _factor()


def limit(seconds: float) -> float:
    """`seconds`, scaled for the machine the suite runs on."""
    return seconds * FACTOR
