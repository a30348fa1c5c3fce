"""Attention computed in other threads of the user's program: recorded, or named as unseen."""

from __future__ import annotations

import io
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.sources.recorder.build import NoAttentionError
from tests.limits import limit
from tests.sources.recorder.modules import MultiHeadAttention


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q, k, v, is_causal=True)


def inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(seed)
    return torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)


def expected_weights(q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    """(heads, L, S) softmax of the causal scaled scores, in float64."""
    scores = (q.double() @ k.double().transpose(-2, -1))[0] / 2.0
    return scores.masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), -torch.inf).softmax(-1)


def test_a_plain_thread_started_under_the_recording_is_recorded() -> None:
    q, k, v = inputs(0)
    got: dict[str, torch.Tensor] = {}
    with attn_tui.record() as rec:
        worker = threading.Thread(target=lambda: got.update(out=attend(q, k, v)))
        worker.start()
        worker.join()
    trace = rec.trace
    assert trace.meta.modules == ("attend",)
    for h in range(2):
        torch.testing.assert_close(trace.tensor("weights", head=h).double(), expected_weights(q, k)[h])
        assert torch.equal(trace.tensor("output", head=h), got["out"][0, h])
    assert not any("thread" in str(w) for w in trace.warnings)


class Worker(threading.Thread):
    """A thread class that overrides run(), as many programs write one."""

    def __init__(self, module: torch.nn.Module, x: torch.Tensor) -> None:
        super().__init__()
        self.module, self.x = module, x

    def run(self) -> None:
        with torch.no_grad():
            self.out = self.module(self.x, None)


def test_a_thread_subclass_and_the_main_thread_are_both_recorded() -> None:
    torch.manual_seed(1)
    module = MultiHeadAttention(8, 2).eval()
    x = torch.randn(1, 3, 8)
    with attn_tui.record() as rec:
        worker = Worker(module, x)
        worker.start()
        worker.join()
        q, k, v = inputs(2)
        attend(q, k, v)
    trace = rec.trace
    assert set(trace.meta.modules) == {"MultiHeadAttention", "attend"}
    assert torch.equal(trace.tensor("projected", module="MultiHeadAttention"), worker.out[0][0])


def test_a_thread_pool_made_before_the_recording_runs_its_tasks_under_it() -> None:
    calls = [inputs(seed) for seed in (3, 4, 5)]
    with ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda qkv: qkv[0] + 1, calls))  # the workers exist before the recording
        with attn_tui.record() as rec:
            outs = list(pool.map(lambda qkv: attend(*qkv), calls))
    trace = rec.trace
    assert trace.steps() == 3 and rec.recorder.seen and sum(rec.recorder.seen.values()) == 3
    recorded = sorted(float(trace.tensor("output", head=0, step=t).sum()) for t in range(3))
    assert recorded == sorted(float(out[0, 0].sum()) for out in outs)


def test_a_thread_pool_made_under_the_recording() -> None:
    calls = [inputs(seed) for seed in (6, 7)]
    with attn_tui.record() as rec, ThreadPoolExecutor(max_workers=2) as pool:
        list(pool.map(lambda qkv: attend(*qkv), calls))
    assert sum(rec.recorder.seen.values()) == 2  # each call once, though both the worker and its task enter the mode
    trace = rec.trace
    expected = sorted(float(expected_weights(q, k)[1, 4, 0]) for q, k, _ in calls)
    recorded = sorted(float(trace.tensor("weights", head=1, step=t)[4, 0]) for t in range(2))
    assert recorded == pytest.approx(expected, abs=1e-6)


def test_a_thread_running_before_the_recording_is_named_as_unseen() -> None:
    go, done = threading.Event(), threading.Event()

    def early() -> None:
        go.wait(10)
        attend(*inputs(8))
        done.set()

    runner = threading.Thread(target=early, name="early-bird")
    runner.start()
    try:
        with attn_tui.record() as rec:
            go.set()
            done.wait(10)
            attend(*inputs(9))
    finally:
        go.set()
        runner.join()
    trace = rec.trace
    assert sum(rec.recorder.seen.values()) == 1  # the main thread's call only
    said = [str(w) for w in trace.warnings if "early-bird" in str(w)]
    assert said == ["a thread was already running when the recording began, so attention it computed is not "
                    "recorded: early-bird"]


def test_threading_is_put_back_after_the_recording() -> None:
    bootstrap, submit = threading.Thread._bootstrap_inner, ThreadPoolExecutor.submit  # type: ignore[attr-defined]
    start = threading.Thread.start
    with attn_tui.record():
        assert threading.Thread._bootstrap_inner is not bootstrap  # type: ignore[attr-defined]
    assert threading.Thread._bootstrap_inner is bootstrap  # type: ignore[attr-defined]
    assert ThreadPoolExecutor.submit is submit and threading.Thread.start is start


def test_a_recording_in_one_thread_leaves_out_threads_and_tasks_other_threads_start_meanwhile() -> None:
    """Thread A records its own block; the main thread, not recording, starts a thread and a pool task while A's
    recording runs: theirs is not A's code, and A's trace holds A's call alone."""
    inside, done, kept = threading.Event(), threading.Event(), {}

    def recorded() -> None:
        q, k, v = inputs(1)
        with attn_tui.record() as rec:
            attend(q, k, v)
            inside.set()
            done.wait(30)
        kept["trace"] = rec.trace

    a = threading.Thread(target=recorded)
    a.start()
    assert inside.wait(limit(30))
    other = threading.Thread(target=lambda: attend(*(torch.randn(1, 2, 9, 4) for _ in range(3))))
    other.start()
    other.join()
    with ThreadPoolExecutor(1) as pool:
        pool.submit(attend, *(torch.randn(1, 2, 7, 4) for _ in range(3))).result()
    done.set()
    a.join()
    assert {tuple(s.shape) for s in kept["trace"] if s.name == "weights"} == {(5, 5)}


def _running(target: object, name: str, daemon: bool) -> tuple[threading.Thread, threading.Event]:
    """A thread running `target(stop)` until `stop` is set."""
    stop = threading.Event()
    thread = threading.Thread(target=target, args=(stop,), name=name, daemon=daemon)
    thread.start()
    return thread, stop


def test_a_daemon_worker_running_before_the_recording_is_named_in_the_error_when_nothing_else_ran() -> None:
    import queue

    jobs: queue.Queue[tuple[torch.Tensor, ...] | None] = queue.Queue()
    results: queue.Queue[torch.Tensor] = queue.Queue()

    def loop() -> None:
        while (job := jobs.get()) is not None:
            results.put(attend(*job))

    worker = threading.Thread(target=loop, name="daemon-loop", daemon=True)
    worker.start()
    try:
        with attn_tui.record() as rec:
            jobs.put(inputs(10))
            results.get(timeout=limit(10))
        with pytest.raises(NoAttentionError) as caught:
            _ = rec.trace
        assert str(caught.value) == ("no softmax, scaled_dot_product_attention, flex_attention or "
                                     "nn.MultiheadAttention was called; a thread was already running when the "
                                     "recording began, so attention it computed is not recorded: daemon-loop")
        with attn_tui.record() as rec:  # with attention in the main thread too, the daemon is a warning
            jobs.put(inputs(11))
            results.get(timeout=limit(10))
            attend(*inputs(12))
        said = [str(w) for w in rec.trace.warnings if "thread" in str(w)]
        assert said == ["a thread was already running when the recording began, so attention it computed is not "
                        "recorded: daemon-loop"]
    finally:
        jobs.put(None)
        worker.join()


def test_library_helper_threads_are_not_named_but_a_thread_running_a_model_is() -> None:
    from tqdm import tqdm

    from attn_tui.sources.recorder.hooks.threads import helper

    module = MultiHeadAttention(8, 2).eval()
    with tqdm(total=1, disable=False, file=io.StringIO()) as bar:
        bar.update()
        monitor = tqdm.monitor
    go = threading.Event()  # what a library's helper thread waits on
    model = threading.Thread(target=module.forward, args=(torch.zeros(1, 2, 8), None), name="model-thread",
                             daemon=True)
    mine, done = _running(lambda stop: stop.wait(10), "mine", daemon=True)
    try:
        assert not helper(mine) and not helper(model)  # the user's function; a library method bound to a model
        if monitor is not None:  # tqdm's monitor (a Thread subclass from site-packages), when tqdm started one
            assert helper(monitor)
        assert helper(threading.Timer(1, go.set))  # a Timer running a function of the standard library
        waiting = threading.Thread(target=go.wait, name="stdlib-wait", daemon=True)  # a library's own wait
        waiting.start()
        assert helper(waiting)
        with attn_tui.record() as rec:
            attend(*inputs(13))
        said = [str(w) for w in rec.trace.warnings if "thread" in str(w)]
        assert said == ["a thread was already running when the recording began, so attention it computed is not "
                        "recorded: mine"]
    finally:
        done.set()
        go.set()
        mine.join()


def test_a_pool_started_under_the_recording_keeps_no_mode_after_it() -> None:
    """The pool's worker starts with the first task the recorded code hands it, and outlives the recording: each
    task is covered, not the worker, so a task after the recording (or one another thread submits) runs plain."""
    from torch.overrides import _get_current_function_mode_stack

    def modes() -> list[str]:
        return [type(m).__name__ for m in _get_current_function_mode_stack()]

    with ThreadPoolExecutor(1) as pool:
        with attn_tui.record() as rec:
            during = pool.submit(modes).result()
            pool.submit(attend, *inputs(3)).result()
        after = pool.submit(modes).result()
    assert during == ["Recorder"] and after == []
    assert rec.trace.stage("weights", head=1).shape == (5, 5)


def test_recordings_in_two_threads_that_end_out_of_order_put_threading_back() -> None:
    originals = (threading.Thread.start, threading.Thread._bootstrap_inner,  # type: ignore[attr-defined]
                 ThreadPoolExecutor.submit)
    first_in, second_in, first_may_end, second_may_end = (threading.Event() for _ in range(4))

    def first() -> None:
        with attn_tui.record():
            first_in.set()
            first_may_end.wait(30)

    def second() -> None:
        with attn_tui.record():
            second_in.set()
            second_may_end.wait(30)

    a, b = threading.Thread(target=first), threading.Thread(target=second)
    a.start()
    assert first_in.wait(limit(30))
    b.start()
    assert second_in.wait(limit(30))
    first_may_end.set()  # the first to begin ends first
    a.join()
    second_may_end.set()
    b.join()
    assert (threading.Thread.start, threading.Thread._bootstrap_inner,  # type: ignore[attr-defined]
            ThreadPoolExecutor.submit) == originals
