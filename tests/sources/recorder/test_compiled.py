"""Code compiled with torch.compile, recorded: it runs as written while the recording runs (hooks/eager.py), so every
call is seen, a `fullgraph=True` compile does not fail, dynamo warns about nothing, and the program's own stance
comes back when the recording ends."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import warnings

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from tests.limits import limit

dynamo = pytest.importorskip("torch._dynamo")
eval_frame = pytest.importorskip("torch._dynamo.eval_frame")


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return F.scaled_dot_product_attention(q * 1.0, k, v, is_causal=True)


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return tuple(torch.randn(1, 2, 12, 8, generator=g) for _ in range(3))  # type: ignore[return-value]


def _stance() -> str:
    return str(eval_frame._stance.stance)


@pytest.fixture(autouse=True)
def _fresh_dynamo() -> None:
    dynamo.reset()  # no compiled code of another test is reused


def test_a_fullgraph_compiled_function_is_recorded_whole_and_compiles_again_after() -> None:
    compiled = torch.compile(_attention, backend="eager", fullgraph=True)
    q, k, v = _inputs()
    with warnings.catch_warnings(record=True) as heard:
        warnings.simplefilter("always")
        with attn_tui.record() as rec:
            during = _stance()
            out = compiled(q, k, v)
    assert during == "force_eager" and _stance() == "default"
    assert not [w for w in heard if "Dynamo" in str(w.message)]  # dynamo never traced the recorder
    assert rec.recorder.failed is None
    trace = rec.trace
    for head in range(2):
        assert torch.equal(trace.tensor("output", head=head), out[0, head])
        scores = (q[0, head] @ k[0, head].T) / 8 ** 0.5
        scores = scores.masked_fill(torch.ones(12, 12, dtype=torch.bool).triu(1), float("-inf"))
        torch.testing.assert_close(trace.tensor("weights", head=head), scores.softmax(-1))
    compiled_before = dynamo.utils.counters["stats"]["unique_graphs"]
    torch.testing.assert_close(compiled(q, k, v), out)  # compiled now, as the program asked
    assert dynamo.utils.counters["stats"]["unique_graphs"] > compiled_before


def test_the_programs_own_stance_comes_back_and_one_it_sets_while_recording_stays() -> None:
    torch.compiler.set_stance("eager_on_recompile")
    try:
        with attn_tui.record():
            assert _stance() == "force_eager"
        assert _stance() == "eager_on_recompile"
        with attn_tui.record():
            torch.compiler.set_stance("fail_on_recompile")
        assert _stance() == "fail_on_recompile"
    finally:
        torch.compiler.set_stance("default")


def test_nested_recordings_keep_the_stance_until_the_last_ends() -> None:
    with attn_tui.record():
        with attn_tui.record():
            assert _stance() == "force_eager"
        assert _stance() == "force_eager"
    assert _stance() == "default"


def test_where_the_stance_is_not_ours_a_fullgraph_compile_runs_compiled_and_does_not_fail() -> None:
    """The program set its own stance inside the recording: dynamo traces the code, and the mode steps aside
    (what the compiled graph then runs is seen only where its backend calls torch in Python, as "eager" does)."""
    compiled = torch.compile(_attention, backend="eager", fullgraph=True)
    q, k, v = _inputs()
    try:
        with attn_tui.record() as rec:
            torch.compiler.set_stance("default")
            out = compiled(q, k, v)
            F.scaled_dot_product_attention(q, k, v)  # an eager call is still seen
    finally:
        torch.compiler.set_stance("default")
    torch.testing.assert_close(out, _attention(q, k, v))
    assert rec.recorder.failed is None
    assert "test_where_the_stance_is_not_ours" in " ".join(scope.name for scope in rec.recorder.seen)  # the eager call


@pytest.mark.slow
def test_dynamo_first_imported_inside_the_recording_still_runs_compiled_code_as_written() -> None:
    """A program that has not imported dynamo when it starts recording (`attn-tui trace` of a plain torch file):
    its first torch.compile imports it, and the stance is set then."""
    program = textwrap.dedent("""
        import sys, torch, torch.nn.functional as F, attn_tui
        assert "torch._dynamo" not in sys.modules
        q, k, v = (torch.randn(1, 2, 12, 8) for _ in range(3))
        with attn_tui.record() as rec:
            f = torch.compile(lambda q, k, v: F.scaled_dot_product_attention(q, k, v), backend="eager",
                              fullgraph=True)
            out = f(q, k, v)
            from torch._dynamo import eval_frame
            during = eval_frame._stance.stance
        watching = [f for f in sys.meta_path if type(f).__name__ == "_Watch"]
        print(during, eval_frame._stance.stance, sum(rec.recorder.seen.values()), len(watching),
              torch.equal(rec.trace.tensor("output", head=1), out[0, 1]))
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=limit(300))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["force_eager", "default", "1", "0", "True"]


@pytest.mark.slow
def test_a_recording_without_dynamo_leaves_no_import_watch_behind() -> None:
    program = textwrap.dedent("""
        import sys, torch, attn_tui
        with attn_tui.record():
            during = [type(f).__name__ for f in sys.meta_path].count("_Watch")
        print(during, [type(f).__name__ for f in sys.meta_path].count("_Watch"), "torch._dynamo" in sys.modules)
    """)
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=limit(300))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["1", "0", "False"]
