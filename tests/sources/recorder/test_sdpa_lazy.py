"""A long recorded scaled_dot_product_attention laid out by tiles: equal to the whole layout, to a float64
reference, and sent across the child's boundary as it is (lazy), not left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.explain.cell import explain
from attn_tui.sources.recorder import sdpa_lazy, wire
from attn_tui.sources.recorder.held import laid_out_bytes
from attn_tui.trace.stage import Trace

B, H, L, D = 2, 3, 40, 8
CELLS = ((35, 33), (3, 30), (5, 2), (39, 0))


def _inputs(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(B, H, L, D, generator=g) for _ in range(3))  # type: ignore[return-value]


def _masks() -> dict[str, dict[str, object]]:
    """Each way SDPA is given a mask: the causal flag, a bool padding mask, a 0/-inf float mask, an additive bias."""
    pad = torch.ones(B, 1, L, L, dtype=torch.bool)
    pad[1, ..., 30:] = False
    gate = torch.zeros(L, L).masked_fill(~torch.ones(L, L, dtype=torch.bool).tril(), -torch.inf)
    bias = torch.randn(1, H, L, L, generator=torch.Generator().manual_seed(9))
    keys = torch.ones(L, dtype=torch.bool)
    keys[33:] = False
    broadcast = keys[None, None, None, :].expand(B, H, L, L)  # one row of keys, broadcast (stride 0) as models do
    return {"causal": {"is_causal": True}, "bool": {"attn_mask": pad}, "gate": {"attn_mask": gate},
            "bias": {"attn_mask": bias}, "none": {}, "broadcast": {"attn_mask": broadcast}}


def _record(kwargs: dict[str, object], seed: int = 0) -> tuple[Trace, torch.Tensor]:
    q, k, v = _inputs(seed)
    with attn_tui.record() as rec:
        out = F.scaled_dot_product_attention(q, k, v, **kwargs)  # type: ignore[arg-type]
    return rec.trace, out


@pytest.mark.parametrize("kind", ["causal", "bool", "gate", "bias", "none", "broadcast"])
def test_a_lazy_call_equals_the_whole_layout_stage_by_stage(kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    kwargs = _masks()[kind]
    whole, _ = _record(kwargs)
    monkeypatch.setattr(sdpa_lazy, "LAZY_CELLS", 100)
    tiled, out = _record(kwargs)
    assert [s.place for s in tiled] == [s.place for s in whole]
    assert not tiled.warnings
    lazy = [s for s in tiled if s.lazy]
    assert {s.name for s in lazy} >= {"scores", "scaled", "weights"}
    for stage in lazy:
        reference = whole.stages[stage.place]
        torch.testing.assert_close(stage.data[:, :].to(reference.tensor.dtype), reference.tensor)
        torch.testing.assert_close(stage.data[7:19, 20:31].to(reference.tensor.dtype), reference.tensor[7:19, 20:31])
        for cell in CELLS:
            tiled_lines = explain(tiled, stage.place, cell)
            assert tiled_lines.matches, (stage.place.key, tiled_lines.lines)
            if stage.name == "masked":  # why a cell is hidden, told as the whole layout tells it
                assert tiled_lines.lines == explain(whole, reference.place, cell).lines
    assert torch.equal(tiled.stage("output", head=2, step=1).tensor, out[1, 2])


def test_a_call_above_the_threshold_holds_no_whole_score_stage_and_matches_float64() -> None:
    g = torch.Generator().manual_seed(4)
    length = 1100  # 4 heads × 1100² > LAZY_CELLS
    q, k, v = (torch.randn(1, 4, length, 16, generator=g) for _ in range(3))
    assert 4 * length * length > sdpa_lazy.LAZY_CELLS
    with attn_tui.record() as rec:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    trace = rec.trace
    for name in ("scores", "scaled", "masked", "weights"):
        assert trace.stage(name, head=3).lazy, name
    scores = q[0, 3, 1000:1010].double() @ k[0, 3].double().T / 4  # (10, S)
    future = torch.arange(length)[None, :] > torch.arange(1000, 1010)[:, None]
    reference = torch.softmax(scores.masked_fill(future, -torch.inf), dim=-1)
    torch.testing.assert_close(trace.stage("weights", head=3).data[1000:1010, :].double(), reference, atol=1e-6, rtol=0)
    assert torch.equal(trace.stage("output", head=3).tensor, out[0, 3])
    stats = trace.stats[trace.stage("weights", head=3).place]
    assert stats.row_deviation < 1e-5 and not stats.empty_rows
    lines = explain(trace, trace.stage("masked", head=3).place, (2, 700)).lines
    assert any("future key" in line for line in lines), lines
    assert "at most" in str(trace.stage("output", head=3).formula)


@pytest.mark.parametrize("kind", ["causal", "bool", "bias"])
def test_lazy_stages_cross_the_childs_boundary_lazily(kind: str, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    monkeypatch.setattr(sdpa_lazy, "LAZY_CELLS", 100)
    monkeypatch.setattr(wire, "MATERIALIZE_CELLS", 100)  # as a long call's (L, S) stages are: never sent whole
    sent, _ = _record(_masks()[kind], seed=1)
    wire.write_trace(sent, tmp_path)
    back = wire.read_trace(tmp_path)
    assert list(back.stages) == list(sent.stages) and back.warnings == sent.warnings
    assert back.stats == sent.stats
    for stage in sent:
        got = back.stages[stage.place]
        assert got.lazy == stage.lazy, stage.place.key
        if not stage.lazy:
            assert torch.equal(got.tensor, stage.tensor)
            continue
        assert torch.equal(got.data[5:30, 2:39], stage.data[5:30, 2:39]), stage.place.key
        for cell in CELLS:
            assert explain(back, got.place, cell).lines == explain(sent, stage.place, cell).lines
    # q, k, v, the output and the mask travel once per call; the five (L, S) stages whole would be 5 × this
    assert (tmp_path / wire.TENSORS).stat().st_size < 2 * 4 * B * H * L * L


def test_a_lazy_call_is_not_counted_as_laid_out_whole() -> None:
    q, k, v = (torch.randn(1, 4, 1100, 16) for _ in range(3))
    with attn_tui.record() as rec:
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    node = next(iter(rec.recorder.anchors.values()))[0]
    assert laid_out_bytes(node) == 0


@pytest.mark.slow
def test_attn_tui_trace_brings_a_long_calls_stages_back_lazily(tmp_path: Path) -> None:
    """The child records a 1,100-token call; the parent gets lazy stages, rebuilt from Q, K and the mask."""
    from attn_tui.sources.recorder.supervise import run_script

    script = tmp_path / "long_sdpa.py"
    script.write_text(
        "import torch\n"
        "import torch.nn.functional as F\n"
        "g = torch.Generator().manual_seed(5)\n"
        "q, k, v = (torch.randn(1, 4, 1100, 16, generator=g) for _ in range(3))\n"
        "mask = torch.ones(1100, 1100, dtype=torch.bool).tril()\n"
        "mask[:, 1000:] = False\n"
        "out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)\n"
        "torch.save({'q': q, 'k': k, 'out': out}, __file__ + '.pt')\n", encoding="utf-8")
    trace = run_script(script, quiet_stdout=True).trace
    saved = torch.load(str(script) + ".pt")
    assert not any("stay in the traced process" in str(w) for w in trace.warnings)
    weights = trace.stage("weights", head=2)
    assert weights.lazy and trace.stage("masked", head=2).lazy
    scores = saved["q"][0, 2, 1050:1060].double() @ saved["k"][0, 2].double().T / 4  # (10, S)
    allowed = torch.ones(1100, 1100, dtype=torch.bool).tril()[1050:1060]
    allowed[:, 1000:] = False
    reference = torch.softmax(scores.masked_fill(~allowed, -torch.inf), dim=-1)
    torch.testing.assert_close(weights.data[1050:1060, :].double(), reference, atol=1e-6, rtol=0)
    assert torch.equal(trace.stage("output", head=2).tensor, saved["out"][0, 2])
    lines = explain(trace, trace.stage("masked", head=2).place, (1050, 1040)).lines
    assert any("padding" in line for line in lines), lines  # told by its parts: the keys no query may read
