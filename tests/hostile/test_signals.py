"""SIGTERM, SIGHUP and a closed terminal lose nothing: what was typed a moment before is there at the next start.

The app runs in a pty of its own, as in a terminal window; the signal comes as soon as the
typed text is on screen, before the session's half-second write would have run.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from tests.hostile.helpers import AppInPty

pytestmark = pytest.mark.slow

SENTENCE = "신호가 와도 남는 문장"
CTRL_U, CTRL_Q = "\x15", "\x11"


def _end(app: AppInPty, how: str) -> int:
    """End the app by `how` (a signal's name, or "close": the terminal window closes); its exit code."""
    if how == "close":
        app.close()
    else:
        os.kill(app.pid, getattr(signal, how))
    return app.exit_code()


def _start(state: Path) -> AppInPty:
    app = AppInPty(env={"ATTN_TUI_STATE_DIR": str(state), "ATTN_TUI_LANG": "en"})
    app.wait_for("weights")  # the stage bar: the first trace is on show
    return app


def _quit(app: AppInPty) -> None:
    app.type(CTRL_Q)
    assert app.exit_code() == 0


@pytest.mark.parametrize("how,code", [("SIGTERM", 128 + signal.SIGTERM), ("SIGHUP", 128 + signal.SIGHUP),
                                      ("close", 128 + signal.SIGHUP)])
def test_the_sentence_typed_before_the_end_is_there_at_the_next_start(how: str, code: int, tmp_path: Path) -> None:
    app = _start(tmp_path)
    try:
        app.type("i", pause=0.5)
        app.type(CTRL_U, pause=0.5)
        app.type(SENTENCE, pause=0)
        app.wait_for(SENTENCE)
        assert _end(app, how) == code
    finally:
        app.close()
    assert json.loads((tmp_path / "session.json").read_text(encoding="utf-8"))["sentence"] == SENTENCE
    assert sorted(p.name for p in tmp_path.iterdir()) == ["session.json"]  # no temporary file left beside it
    again = _start(tmp_path)
    try:
        again.wait_for(SENTENCE)
        _quit(again)
    finally:
        again.close()


def test_a_matrix_typed_before_sigterm_is_there_at_the_next_start(tmp_path: Path) -> None:
    app = _start(tmp_path)
    try:
        # Q shows the Matrices tab and focuses its Q editor, scrolled into view (the hint above it may never be
        # drawn in a short pane); ctrl+a takes the editor's whole line, replaced by what is typed. The typed rows
        # on screen are the sign it all landed: on a loaded machine a Q the app got before it was ready is lost,
        # and the whole sequence is typed again (a Q that lands twice only adds a letter ctrl+a then replaces).
        for attempt in range(3):
            app.type("Q", pause=1.0)
            app.type("\x01")
            app.type("7 6 5 4", pause=0)
            try:
                app.wait_for("7 6 5 4", 20.0)
                break
            except AssertionError:
                if attempt == 2:
                    raise
        assert _end(app, "SIGTERM") == 128 + signal.SIGTERM
    finally:
        app.close()
    session = json.loads((tmp_path / "session.json").read_text(encoding="utf-8"))
    assert "7 6 5 4" in session["editors"]["Q"]
    again = _start(tmp_path)
    try:
        again.type("Q")
        again.wait_for("7 6 5 4")
        _quit(again)
    finally:
        again.close()
