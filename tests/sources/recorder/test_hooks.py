"""The recorder's hooks: each one's `enter` makes its change and its `exit` takes it back, and the recorder enters
them in the order `HOOKS` declares and leaves them in reverse, every exit run even when another fails."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.overrides import _get_current_function_mode_stack

from attn_tui.sources.recorder import Recording, capture
from attn_tui.sources.recorder.capture import Recorder
from attn_tui.sources.recorder.hooks import (
    COMPILE_STANCE,
    FLEX_ATTENTION,
    FROZEN_HEAP,
    HOOKS,
    PRUNING,
    THREADS,
    RecorderHook,
)
from attn_tui.sources.recorder.node import Node, walk


class Logged(RecorderHook):
    """A hook that writes what it was asked into `log`, and fails where told to."""

    def __init__(self, name: str, log: list[str], fails: str = "") -> None:
        self.name, self.log, self.fails = name, log, fails

    def enter(self, recorder: object) -> None:
        self.log.append(f"enter {self.name}")
        if self.fails == "enter":
            raise RuntimeError(self.name)

    def exit(self, recorder: object) -> None:
        self.log.append(f"exit {self.name}")
        if self.fails == "exit":
            raise RuntimeError(self.name)


def test_the_hooks_are_declared_once_in_the_order_they_are_entered() -> None:
    assert HOOKS == (THREADS, FLEX_ATTENTION, FROZEN_HEAP, COMPILE_STANCE, PRUNING)
    assert all(isinstance(hook, RecorderHook) for hook in HOOKS)


def test_the_hooks_are_left_in_reverse_each_one_even_when_another_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    hooks = (Logged("a", log), Logged("b", log, fails="exit"), Logged("c", log, fails="exit"))
    monkeypatch.setattr(capture, "HOOKS", hooks)
    stack = list(_get_current_function_mode_stack())
    with pytest.raises(RuntimeError, match="c"), Recorder() as recorder:  # the first failure, raised after them all
        log.append("body")
        assert recorder.recording and _get_current_function_mode_stack()[-1] is recorder
    assert log == ["enter a", "enter b", "enter c", "body", "exit c", "exit b", "exit a"]
    assert not recorder.recording and list(_get_current_function_mode_stack()) == stack


def test_a_hook_that_fails_to_enter_leaves_the_ones_before_it_and_the_mode_never_listens(
        monkeypatch: pytest.MonkeyPatch) -> None:
    log: list[str] = []
    hooks = (Logged("a", log), Logged("b", log, fails="enter"), Logged("c", log))
    monkeypatch.setattr(capture, "HOOKS", hooks)
    stack = list(_get_current_function_mode_stack())
    recorder = Recorder()
    with pytest.raises(RuntimeError, match="b"):
        recorder.__enter__()
    assert log == ["enter a", "enter b", "exit a"]
    assert not recorder.recording and list(_get_current_function_mode_stack()) == stack


def _threading() -> tuple[object, ...]:
    return threading.Thread.start, threading.Thread._bootstrap_inner, ThreadPoolExecutor.submit  # type: ignore[attr-defined]


def test_threads_enter_covers_the_threads_and_pools_and_exit_puts_threading_back() -> None:
    before = _threading()
    recorder = Recorder()
    THREADS.enter(recorder)
    try:
        assert recorder.threads is not None and recorder.threads.live
        assert all(now is not was for now, was in zip(_threading(), before))  # start, bootstrap and submit wrapped
    finally:
        THREADS.exit(recorder)
    assert _threading() == before and not recorder.threads.live


def test_flex_attention_enter_wraps_the_function_and_exit_puts_it_back() -> None:
    module = pytest.importorskip("torch.nn.attention.flex_attention")
    original = module.flex_attention
    recorder = Recorder()
    FLEX_ATTENTION.enter(recorder)
    try:
        assert module.flex_attention is not original and module.flex_attention.__wrapped_flex__ is original
    finally:
        FLEX_ATTENTION.exit(recorder)
    assert module.flex_attention is original


def test_the_frozen_heap_enter_freezes_it_and_exit_hands_it_back_with_the_collectors_settings_untouched() -> None:
    settings = gc.get_threshold(), gc.isenabled()
    assert gc.get_freeze_count() == 0
    recorder = Recorder()
    FROZEN_HEAP.enter(recorder)
    try:
        assert gc.get_freeze_count() > 0
    finally:
        FROZEN_HEAP.exit(recorder)
    assert gc.get_freeze_count() == 0 and (gc.get_threshold(), gc.isenabled()) == settings


def test_the_compile_stance_enter_forces_eager_and_exit_puts_the_programs_own_back() -> None:
    eval_frame = pytest.importorskip("torch._dynamo.eval_frame")
    before = eval_frame._stance.stance
    recorder = Recorder()
    COMPILE_STANCE.enter(recorder)
    try:
        assert eval_frame._stance.stance == "force_eager"
    finally:
        COMPILE_STANCE.exit(recorder)
    assert eval_frame._stance.stance == before


class Projected(nn.Module):
    """SDPA over projections of a tensor made by recorded ops (x · 2 + 1): what pruning lets go."""

    def __init__(self) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x * 2 + 1
        q, k, v = (p(h).view(1, 5, 2, 4).transpose(1, 2) for p in (self.q, self.k, self.v))
        return F.scaled_dot_product_attention(q, k, v)


def _kept_names(monkeypatch: pytest.MonkeyPatch, hooks: tuple[RecorderHook, ...]) -> set[str]:
    """The names of the nodes a recording of `Projected` keeps alive from its call, recorded under `hooks`."""
    monkeypatch.setattr(capture, "HOOKS", hooks)
    torch.manual_seed(0)
    model = Projected().eval()
    with torch.no_grad(), Recording() as rec:
        model(torch.randn(1, 5, 8))
    calls: list[Node] = [node for kept in rec.recorder.anchors.values() for node in kept]
    assert [call.name for call in calls] == ["scaled_dot_product_attention"]
    return {node.name for node in walk(calls, lambda node: [*node.tensors(), *node.consumers])}


def test_pruning_changes_nothing_on_entering_or_leaving_and_cuts_a_kept_call_behind_its_projections(
        monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder()
    PRUNING.enter(recorder)
    PRUNING.exit(recorder)
    whole = _kept_names(monkeypatch, tuple(hook for hook in HOOKS if hook is not PRUNING))
    cut = _kept_names(monkeypatch, HOOKS)
    assert {"mul", "add", "linear"} <= whole
    assert "linear" in cut and not {"mul", "add"} & cut  # the projections' input is a leaf now
