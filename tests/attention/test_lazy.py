"""Long inputs: the score stages are read by tiles, exactly what the dense computation gives, never held whole."""

from __future__ import annotations

import itertools
import subprocess
import sys

import pytest
import torch

from attn_tui.attention.engine import compute
from attn_tui.explain.cell import explain
from attn_tui.trace.lazy import LazyTensor
from attn_tui.trace.values import stats_of
from tests.conftest import sentence
from tests.limits import limit

N = 512
TEXT = " ".join(f"w{i % 41}" for i in range(N - 3)) + " <pad> <pad> <pad>"
TILES = [(slice(0, 7), slice(0, 9)), (slice(200, 264), slice(100, 356)), (slice(N - 5, N), slice(N - 70, N)),
         (slice(31, 32), slice(None))]


@pytest.mark.parametrize("variant,mask,fill", [
    ("scaled_dot", "none", "-inf"), ("scaled_dot", "causal+padding", "-inf"), ("dot", "causal", "-1e9"),
    ("general", "padding", "-inf"), ("additive", "causal", "-inf"), ("concat", "none", "-inf"),
    ("multihead", "causal", "-1e9"),
])
def test_tiles_equal_the_dense_computation(variant: str, mask: str, fill: str) -> None:
    request = sentence(TEXT, variant=variant, mask=mask, mask_fill=fill, heads=2, dim=8)
    dense, lazy = compute(request, lazy=False), compute(request, lazy=True)
    assert lazy.names() == dense.names() and lazy.warnings == dense.warnings
    for stage in lazy:
        whole = dense.stages[stage.place].tensor
        if not stage.lazy:
            assert torch.allclose(stage.tensor, whole, atol=1e-5, rtol=1e-5), stage.key
            continue
        for rows, cols in TILES:
            tile, expected = stage.data[rows, cols], whole[rows, cols]
            assert torch.equal(torch.isfinite(tile), torch.isfinite(expected)), stage.key
            finite = torch.isfinite(expected)
            assert torch.allclose(tile[finite], expected[finite], atol=1e-5, rtol=1e-5), (stage.key, rows, cols)
            assert torch.equal(tile[~finite], expected[~finite]), stage.key  # the same fills, the same -inf
        a, b = stats_of(dense, dense.stages[stage.place]), stats_of(lazy, stage)
        assert (a.masked, a.marks) == (b.masked, b.marks) and a.lo == pytest.approx(b.lo, abs=1e-5)


def test_every_lazy_stage_is_read_by_tiles_and_explained() -> None:
    trace = compute(sentence(TEXT, variant="additive", mask="causal", dim=4))
    assert trace.lazy and all(trace.stages[p].lazy for p in trace.stages if p.name in
                              ("energy", "scores", "masked", "weights"))
    for stage in trace:
        if stage.lazy:
            for index in itertools.islice(itertools.product(*(range(0, n, 97) for n in stage.shape)), 12):
                arithmetic = explain(trace, stage.place, index)
                assert arithmetic.matches, (stage.key, index, arithmetic)


def test_a_tile_computes_only_its_rows_and_columns() -> None:
    trace = compute(sentence(TEXT, variant="scaled_dot"))
    stage = trace.stage("weights")
    assert isinstance(stage.data, LazyTensor)
    tiles = stage.data.tiles
    seen: list[tuple[slice, slice]] = []
    original = tiles.pre
    tiles.pre = lambda rows, cols: (seen.append((rows, cols)), original(rows, cols))[1]
    stage.data[10:20, 30:50]
    assert [(r.start, r.stop, c.start, c.stop) for r, c in seen] == [(10, 20, 30, 50)]


@pytest.mark.slow
def test_sixteen_thousand_tokens_never_hold_a_whole_stage() -> None:
    """One dense 16k × 16k float32 stage is 1 GB; the whole trace stays far below it."""
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a big pytest worker would count
    code = ("import torch\n"
            "from attn_tui.attention.engine import compute\n"
            "from attn_tui.ask.settings import VariantAsk, SentenceInput, Settings\n"
            "text = ' '.join(f'w{i % 300}' for i in range(16384))\n"
            "settings = Settings(variant='scaled_dot', mask='causal', device='cpu')\n"
            "trace = compute(VariantAsk(SentenceInput(text), settings))\n"
            "trace.stage('weights').data[8000:8060, 7000:7100]\n"
            "print(next(int(line.split()[1]) for line in open('/proc/self/status')\n"
            "            if line.startswith('VmHWM')) // 1024)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit(300))
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) < 700, f"peak {result.stdout.strip()} MB"


def test_an_export_streams_past_the_screen_cache() -> None:
    """Writing a lazy stage reads it in blocks that are neither cached nor push the screen's tiles out."""
    import io

    from attn_tui.io.export import write_trace_json
    from attn_tui.trace.lazy import TILE_CACHE_CELLS

    trace = compute(sentence(TEXT, variant="scaled_dot", mask="causal"))
    stage = trace.stage("weights")
    assert isinstance(stage.data, LazyTensor)
    tiles = stage.data.tiles
    shown = stage.data[0:64, 0:256]
    before = dict(tiles._cache)
    write_trace_json(trace, io.StringIO(), [stage])
    assert list(tiles._cache) == list(before) and tiles._cached_cells <= TILE_CACHE_CELLS
    assert torch.equal(stage.data[0:64, 0:256], shown)
