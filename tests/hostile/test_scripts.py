"""`attn-tui trace` runs the user's file, and its time is bounded: a file that sleeps, forks or leaves threads behind
ends with one line, a child it forks never goes on to print or open the app, and the command always exits."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.helpers import attn_tui

pytestmark = pytest.mark.slow

ATTENTION = "import torch\nq = torch.randn(1, 2, 4, 8)\ntorch.nn.functional.scaled_dot_product_attention(q, q, q)\n"


def _script(tmp_path: Path, name: str, text: str) -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


@pytest.mark.parametrize("body", ["import time\ntime.sleep(10**6)\n",  # sleeps forever
                                  "while True:\n    pass\n",  # spins forever
                                  "try:\n    input()\nexcept Exception:\n    pass\nwhile True:\n    try:\n"
                                  "        __import__('time').sleep(1)\n    except Exception:\n        pass\n"])
def test_a_file_that_never_ends_is_stopped_by_the_timeout(body: str, tmp_path: Path) -> None:
    script = _script(tmp_path, "forever.py", body)
    outcome = attn_tui("trace", "--format", "table", "--timeout", "3", script, cwd=tmp_path)
    assert outcome.refused("forever.py ran for 3 s and was stopped"), outcome


def test_a_forked_child_ends_where_the_files_code_ends(tmp_path: Path) -> None:
    """`if os.fork() == 0: …; sys.exit(0)`: the child must not go on to report (or open an app) a second time."""
    script = _script(tmp_path, "forks.py", "import os, sys\nif os.fork() == 0:\n    print('child says hi')\n"
                     "    sys.exit(0)\n" + ATTENTION + "os.wait()\n")
    outcome = attn_tui("trace", "--format", "table", script, cwd=tmp_path)
    assert outcome.code == 0 and "Traceback" not in outcome.err, outcome
    assert outcome.out.count("weights · head 0") == 1 and "no attention was recorded" not in outcome.err
    assert "child says hi" in outcome.err  # the file's own output, on stderr so the table stays clean


def test_threads_left_running_do_not_keep_it_alive(tmp_path: Path) -> None:
    script = _script(tmp_path, "threads.py", "import threading, time\n"
                     "threading.Thread(target=time.sleep, args=(10**6,)).start()\n" + ATTENTION)
    done = attn_tui("trace", "--format", "table", script, cwd=tmp_path)
    assert done.code == 0 and "weights · head 0" in done.out, done
    assert done.lines == ["warning: threads.py left 1 thread running; attn-tui exits without waiting for it"]
    failed = attn_tui("trace", "--format", "table", "--stage", "nope", script, cwd=tmp_path)
    assert failed.refused("no stage 'nope'"), failed  # the error line alone, and still an exit


def test_timeout_is_checked_like_any_number(tmp_path: Path) -> None:
    script = _script(tmp_path, "ok.py", ATTENTION)
    assert attn_tui("trace", "--timeout", "-1", script).refused("must be between 0 and 1,000,000")
    assert attn_tui("trace", "--timeout", "ten", script).refused("expected a whole number")


def test_no_timeout_means_none(tmp_path: Path) -> None:
    script = _script(tmp_path, "slowish.py", "import time\ntime.sleep(2)\n" + ATTENTION)
    result = subprocess.run([sys.executable, "-m", "attn_tui", "trace", "--format", "table", "--timeout", "0",
                             script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert result.returncode == 0 and "weights · head 0" in result.stdout, result.stderr
