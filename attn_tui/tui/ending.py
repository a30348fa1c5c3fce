"""SIGTERM, SIGHUP and a closed terminal end the app the way `q` does: the session written first, nothing half-written.

Textual's driver handles SIGTSTP, SIGCONT and SIGWINCH but neither SIGTERM nor SIGHUP,
whose default action kills the process at once: the sentence typed in the last half
second (the session is written a moment after each change) was lost, an export being
written stayed behind as a partial file, and the terminal was left in raw mode. Here
each becomes a message-loop callback that writes the session from the panes as they
are now, removes the partial files of writes still running in worker threads, and
exits with 128 + the signal's number, as a shell reports a process a signal ended.
Textual's shutdown writes to the terminal to restore it; a terminal that has closed can
block that write for good, so a watchdog ends the process if the shutdown has not within
a few seconds (everything worth keeping is written by then).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import threading
from collections.abc import Callable

ENDING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)  # a terminal that closes sends SIGHUP to the process it ran
SHUTDOWN_GRACE = 3.0  # seconds Textual's own shutdown may take after a signal before the watchdog ends the process


def exit_code(signum: int) -> int:
    return 128 + signum


def catch_ending_signals(on_signal: Callable[[int], None]) -> Callable[[], None]:
    """Call `on_signal(signum)` in the running event loop when SIGTERM or SIGHUP arrive; a function undoing it.

    Only the main thread's loop can take signals (not on Windows, whose loop refuses with a RuntimeError
    subclass): anywhere else this does nothing."""
    loop = asyncio.get_running_loop()
    caught: list[int] = []
    for signum in ENDING_SIGNALS:
        with contextlib.suppress(RuntimeError, ValueError):
            loop.add_signal_handler(signum, on_signal, signum)
            caught.append(signum)

    def release() -> None:
        for signum in caught:
            with contextlib.suppress(RuntimeError, ValueError):
                loop.remove_signal_handler(signum)

    return release


def end_within(seconds: float, code: int) -> threading.Timer:
    """End the process with `code` after `seconds` unless it has ended by then (a daemon timer dies with it)."""
    timer = threading.Timer(seconds, os._exit, (code,))
    timer.daemon = True
    timer.start()
    return timer
