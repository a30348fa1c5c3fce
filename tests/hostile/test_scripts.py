"""`attn-tui trace` runs the user's file, and its time is bounded: a file that sleeps, forks or leaves threads behind
ends with one line, a child it forks never goes on to print or open the app, and the command always exits."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hostile.helpers import attn_tui
from tests.limits import limit

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
                             script], capture_output=True, text=True, timeout=limit(120), cwd=tmp_path)
    assert result.returncode == 0 and "weights · head 0" in result.stdout, result.stderr


def _pids_of(tmp_path: Path) -> str:
    """Lines a file starts with: `_note()` writes the id of the process calling it (a spawned child runs them too)."""
    return (f"import os\n\ndef _note():\n    with open({str(tmp_path / 'pids')!r}, 'a') as f:\n"
            "        f.write(f'{os.getpid()}\\n')\n\n_note()\n")


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")  # a zombie has ended; only its parent's wait is missing


def _left_behind(tmp_path: Path, expected: int) -> list[int]:
    """The processes of the file still running once attn-tui has exited (after a moment for the kernel)."""
    pids = [int(p) for p in (tmp_path / "pids").read_text().split()]
    assert len(pids) >= expected, pids  # the file did start them: the check below can fail
    deadline = time.monotonic() + limit(3)
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


SPIN = "while True:\n    pass\n"
DEFIANT = {  # each holds on to the process its own way, then spins
    "ignores_alarm": "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\n" + SPIN,
    "rearms_alarm": "import signal\nsignal.signal(signal.SIGALRM, lambda *a: signal.setitimer(signal.ITIMER_REAL, "
                    "100))\nsignal.setitimer(signal.ITIMER_REAL, 100)\n" + SPIN,
    "cancels_timer": "import signal\nsignal.setitimer(signal.ITIMER_REAL, 0)\nsignal.alarm(0)\n" + SPIN,
    "bare_except": "while True:\n    try:\n        while True:\n            pass\n    except:  # noqa\n        pass\n",
    "atexit_hang": "import atexit, time\natexit.register(time.sleep, 10**6)\n" + ATTENTION,
}


@pytest.mark.parametrize("name", list(DEFIANT))
def test_the_timeout_holds_whatever_the_file_does_to_signals(name: str, tmp_path: Path) -> None:
    script = _script(tmp_path, f"{name}.py", _pids_of(tmp_path) + DEFIANT[name])
    started = time.monotonic()
    outcome = attn_tui("trace", "--format", "table", "--timeout", "4", script, cwd=tmp_path)
    assert outcome.refused(f"{name}.py ran for 4 s and was stopped"), outcome
    assert time.monotonic() - started < limit(55)  # the clock counts from the file's start, not from torch's import
    assert _left_behind(tmp_path, 1) == []


@pytest.mark.parametrize("method", ["spawn", "fork"])
def test_a_multiprocessing_child_that_loops_is_stopped_with_the_file(method: str, tmp_path: Path) -> None:
    """The file waits on a child of its own that never ends: the clock stops both, and the child prints nothing."""
    body = (_pids_of(tmp_path) + "import multiprocessing as mp\n\ndef spin():\n    _note()\n    while True:\n"
            "        pass\n\n"
            f"if __name__ == '__main__':\n    p = mp.get_context({method!r}).Process(target=spin)\n    p.start()\n"
            "    p.join()\n")
    script = _script(tmp_path, "pool.py", body)
    outcome = attn_tui("trace", "--format", "table", "--timeout", "6", script, cwd=tmp_path)
    assert outcome.refused("pool.py ran for 6 s and was stopped"), outcome
    assert _left_behind(tmp_path, 2) == []


def test_keyboard_interrupt_raised_by_the_file_is_one_line(tmp_path: Path) -> None:
    script = _script(tmp_path, "interrupts.py", _pids_of(tmp_path) + ATTENTION + "raise KeyboardInterrupt\n")
    outcome = attn_tui("trace", "--format", "table", script, cwd=tmp_path)
    assert outcome.refused("interrupts.py:11: KeyboardInterrupt"), outcome
    assert _left_behind(tmp_path, 1) == []


def test_a_daemon_thread_left_in_torch_does_not_abort(tmp_path: Path) -> None:
    """Python's shutdown with a daemon thread inside a torch kernel can abort the process; the trace must come out."""
    body = (_pids_of(tmp_path) + "import threading, torch\n\ndef churn():\n    a = torch.randn(256, 256)\n"
            "    while True:\n        a = torch.tanh(a @ a)\n\nthreading.Thread(target=churn, daemon=True).start()\n"
            + ATTENTION)
    script = _script(tmp_path, "churns.py", body)
    outcome = attn_tui("trace", "--format", "table", "--stage", "weights", script, cwd=tmp_path)
    assert outcome.code == 0 and "weights · head 0" in outcome.out, outcome
    assert outcome.err == "", outcome
    assert _left_behind(tmp_path, 1) == []


def test_a_big_sdpa_under_a_small_max_memory_is_laid_out_by_tiles(tmp_path: Path) -> None:
    """SDPA's fused kernel never holds its (L, S) weights; laid out whole they would take 5 tensors of 8·2048²·4 B
    (640 MB). The recorder lays such a call out by tiles from q, k and its mask (sdpa_lazy.py), so a 256 MB budget
    traces it, and no whole score stage is ever made."""
    body = (_pids_of(tmp_path) + "import torch\nq = torch.randn(1, 8, 2048, 64)\n"
            "torch.nn.functional.scaled_dot_product_attention(q, q, q)\n")
    script = _script(tmp_path, "big.py", body)
    outcome = attn_tui("trace", "--format", "table", "--max-memory", "256M", script, cwd=tmp_path)
    assert outcome.code == 0 and "queries 2048  keys 2048" in outcome.out and outcome.err == "", outcome
    assert _left_behind(tmp_path, 1) == []


def test_calls_kept_past_max_memory_stop_the_file_while_it_runs(tmp_path: Path) -> None:
    """A loop whose every call the recorder keeps alive: it stops as soon as they pass the limit, not at the end."""
    body = (_pids_of(tmp_path) + "import torch, time\nfor i in range(10**6):\n"
            "    s = torch.randn(4, 512, 512)\n    w = torch.softmax(s, dim=-1)\n")
    script = _script(tmp_path, "loops.py", body)
    outcome = attn_tui("trace", "--format", "table", "--max-memory", "64M", "--timeout", "50", script, cwd=tmp_path)
    assert outcome.refused("loops.py: its recording would hold"), outcome
    assert "more than --max-memory allows (64.0 MB)" in outcome.err
    assert _left_behind(tmp_path, 1) == []


def test_attn_tui_stopped_by_sigterm_takes_the_file_and_its_children_with_it(tmp_path: Path) -> None:
    body = (_pids_of(tmp_path) + "import multiprocessing as mp\n\ndef spin():\n    _note()\n    while True:\n"
            "        pass\n\nif __name__ == '__main__':\n    mp.get_context('fork').Process(target=spin).start()\n"
            + SPIN)
    script = _script(tmp_path, "held.py", body)
    process = subprocess.Popen([sys.executable, "-m", "attn_tui", "trace", "--format", "table", script],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    deadline = time.monotonic() + limit(50)
    pids = tmp_path / "pids"
    while (not pids.exists() or len(pids.read_text().split()) < 2) and time.monotonic() < deadline:
        time.sleep(0.1)
    process.terminate()
    _, err = process.communicate(timeout=limit(30))
    assert process.returncode != 0 and b"Traceback" not in err, err
    assert _left_behind(tmp_path, 2) == []


def test_the_files_output_shows_with_its_escapes_made_visible(tmp_path: Path) -> None:
    script = _script(tmp_path, "loud.py", "print('\\x1b[2J\\x1b]0;owned\\x07 hello')\n" + ATTENTION)
    outcome = attn_tui("trace", "--format", "table", script, cwd=tmp_path)
    assert outcome.code == 0 and "weights · head 0" in outcome.out, outcome
    assert "␛[2J␛]0;owned␇ hello" in outcome.err and "\x1b" not in outcome.err + outcome.out


def _on_a_terminal(script: str, cwd: Path, answer: bytes = b"") -> tuple[int, bytes]:
    """`attn-tui trace --format table SCRIPT` on a pseudo-terminal of its own, as a person runs it; `answer` typed
    once the file asks ("name: "). The exit code, and every byte the terminal received."""
    import fcntl
    import os
    import pty
    import select
    import termios

    master, slave = pty.openpty()

    def own_terminal() -> None:
        os.setsid()
        fcntl.ioctl(slave, termios.TIOCSCTTY, 0)

    process = subprocess.Popen([sys.executable, "-m", "attn_tui", "trace", "--format", "table", "--stage",
                                "weights", script], stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                               preexec_fn=own_terminal)
    os.close(slave)
    seen = b""
    deadline = time.monotonic() + limit(55)
    answered = not answer
    while time.monotonic() < deadline:
        if not select.select([master], [], [], 0.5)[0]:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the terminal closed: every process on it has exited
            break
        seen += chunk
        if not answered and b"name: " in seen:
            os.write(master, answer)
            answered = True
    os.close(master)
    if process.poll() is None:
        process.kill()
    return process.wait(timeout=limit(30)), seen


def test_input_reads_what_is_typed_at_the_terminal(tmp_path: Path) -> None:
    """The file has no terminal, but attn-tui passes on what is typed at its own: `input()` reads it."""
    script = _script(tmp_path, "asks.py", "name = input('name: ')\nprint('hello', name)\n" + ATTENTION)
    code, seen = _on_a_terminal(script, tmp_path, b"Ada\n")
    assert code == 0, seen
    assert b"hello Ada" in seen and b"rows sum to 1 (" in seen, seen  # the table, in colour on a terminal


def test_the_file_has_no_terminal_to_write_escapes_to(tmp_path: Path) -> None:
    """A session of its own and no controlling terminal: `/dev/tty` cannot be opened, so the title (OSC 0) and the
    clipboard (OSC 52) it tries to set never reach the terminal; what it prints arrives with ESC made visible."""
    body = ("import os\ntry:\n    tty = open('/dev/tty', 'w')\nexcept OSError as exc:\n"
            "    print('no tty:', type(exc).__name__)\nelse:\n"
            "    tty.write('\\x1b]0;owned\\x07\\x1b]52;c;aGk=\\x07'); tty.flush(); print('tty opened')\n"
            "print('own session:', os.getsid(0) == os.getpid())\n"
            "print('\\x1b]0;printed\\x07')\n")
    script = _script(tmp_path, "escapes.py", body + ATTENTION)
    code, seen = _on_a_terminal(script, tmp_path)
    assert code == 0, seen
    assert b"no tty: OSError" in seen and b"own session: True" in seen, seen
    assert b"\x1b]" not in seen and "␛]0;printed␇".encode() in seen, seen  # Rich's colours are CSI, never OSC


@pytest.mark.parametrize(("body", "signal_name"), [("import ctypes\nctypes.string_at(0)\n", "SIGSEGV"),
                                                   ("import os, signal\nos.killpg(0, signal.SIGKILL)\n", "SIGKILL")])
def test_a_file_that_crashes_its_process_is_one_line(body: str, signal_name: str, tmp_path: Path) -> None:
    """A segfault, or the file killing its own process group: attn-tui is outside it and says how the file ended."""
    script = _script(tmp_path, "crashes.py", body)
    outcome = attn_tui("trace", "--format", "table", script, cwd=tmp_path)
    assert outcome.refused(f"crashes.py was ended by {signal_name}"), outcome


def test_a_process_that_leaves_the_files_group_is_ended_too(tmp_path: Path) -> None:
    """A daemon the file starts in a session of its own (`start_new_session=True`) escapes a group kill; it comes
    back to attn-tui when its parent ends, and is ended there."""
    sleeper = _script(tmp_path, "sleeper.py", _pids_of(tmp_path) + "import time\ntime.sleep(10**6)\n")
    body = (_pids_of(tmp_path) + f"import subprocess, sys, time\nsubprocess.Popen([sys.executable, {sleeper!r}], "
            f"start_new_session=True)\nwhile len(open({str(tmp_path / 'pids')!r}).read().split()) < 2:\n"
            "    time.sleep(0.05)\n" + ATTENTION)
    script = _script(tmp_path, "daemon.py", body)
    outcome = attn_tui("trace", "--format", "table", script, cwd=tmp_path)
    assert outcome.code == 0 and "weights · head 0" in outcome.out, outcome
    assert _left_behind(tmp_path, 2) == []
