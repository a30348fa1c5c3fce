"""Memory is budgeted before it is spent, and sizes are checked before any O(N²) work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attn_tui.ask.budget import BudgetError, parse_size
from attn_tui.ask.footprint import ask_sizes, estimate
from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk, XInput
from tests.hostile.helpers import TIME_LIMIT, attn_tui

pytestmark = pytest.mark.slow


def test_a_hundred_thousand_distinct_words_are_refused_before_torch_loads() -> None:
    """The check is linear and torch-free: no vocabulary, no embedding, not even `import torch` first."""
    code = ("import sys\n"
            "from attn_tui.ask.footprint import estimate\n"
            "from attn_tui.ask.settings import VariantAsk, SentenceInput\n"
            "text = ' '.join(f'w{i}' for i in range(100_000))\n"
            "try:\n    estimate(VariantAsk(SentenceInput(text)))\nexcept Exception as exc:\n    print(exc)\n"
            "print('torch' in sys.modules)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=TIME_LIMIT)
    assert result.stdout.splitlines() == ["100,000 queries; attn-tui shows at most 16,384: shorten the input", "False"]
    words = " ".join(f"w{i}" for i in range(16_385))  # as many as one argument may carry
    outcome = attn_tui("stages", "--text", words, ceiling=1024**3)  # torch could not even load in 1 GB
    assert outcome.refused("16,385 queries"), outcome


def test_a_wide_typed_x_is_refused(tmp_path: Path) -> None:
    (tmp_path / "x").write_text(" ".join(["0.5"] * 16_000))
    outcome = attn_tui("stages", "--x", str(tmp_path / "x"), "--variant", "multihead", "--heads", "1")
    assert outcome.refused("16000 numbers wide"), outcome


@pytest.mark.slow
def test_the_limit_follows_the_memory_the_process_may_use() -> None:
    """Under a 2 GB address-space ceiling the default limit shrinks with it: refused, never killed."""
    text = " ".join(f"w{i % 50}" for i in range(3000))
    outcome = attn_tui("stages", "--text", text, "--variant", "additive", "--dim", "1024", ceiling=2 * 1024**3)
    assert outcome.refused("the limit is"), outcome
    assert "energy" in outcome.err


def test_max_memory_is_named_with_the_figure() -> None:
    outcome = attn_tui("stages", "--text", " ".join(["w"] * 1500), "--max-memory", "16M", "--format", "json")
    assert outcome.refused("the limit is 16.0 MB"), outcome
    assert attn_tui("stages", "--text", "a", "--max-memory", "lots").refused("--max-memory expects a size")


@pytest.mark.parametrize("request_,part", [
    (VariantAsk(SentenceInput(" ".join(["w"] * 4000)), Settings(variant="additive", dim=64)), "energy"),
    (VariantAsk(SentenceInput(" ".join(["w"] * 9000)), Settings(variant="multihead", heads=8, dim=16)), "score stages"),
    (VariantAsk(XInput([[0.1] * 4096] * 2), Settings(variant="multihead", heads=1)), "parameters"),
])
def test_estimate_names_the_largest_part(request_: VariantAsk, part: str) -> None:
    found = estimate(request_)
    with pytest.raises(BudgetError, match=f"the largest part, {part}"):
        found.check(found.total // 2, "this request")


def test_estimate_counts_the_json_text() -> None:
    request = VariantAsk(SentenceInput("a b c d"))
    assert estimate(request, json_output=True).total > estimate(request).total
    assert parse_size("1.5G") == int(1.5 * 1024**3) and parse_size("512M") == 512 * 1024**2


def test_seq2seq_target_is_bounded() -> None:
    outcome = attn_tui("stages", "--model", "seq2seq-dates", "--text", "22 Nov 2026", "--target", "1" * 10_000,
                       "--teacher-forcing")
    assert outcome.refused("the model writes at most"), outcome


def test_the_table_of_a_huge_stage_prints_without_exhausting_memory() -> None:
    """2,048 tokens: JSON of one stage is streamed row block by row block."""
    outcome = attn_tui("stages", "--text", " ".join(f"w{i % 90}" for i in range(2048)), "--stage", "weights",
                       "--format", "json", ceiling=3 * 1024**3)
    assert outcome.code == 0, outcome.err
    assert outcome.out.count("\n") == 1 and outcome.out.startswith("{")




def test_flash_with_tiny_tiles_on_many_keys_is_refused_before_the_tiles_are_made(tmp_path: Path) -> None:
    """--tile 1 on 2,048 keys would be 10,240 stages: bounded like the tokens, and the way out named."""
    (tmp_path / "q").write_text("0.1 0.2 0.3 0.4\n")
    (tmp_path / "kv").write_text("\n".join(f"0.{i % 9} 0.5 0.25 1" for i in range(2048)))
    paths = ["--q", str(tmp_path / "q"), "--k", str(tmp_path / "kv"), "--v", str(tmp_path / "kv")]
    outcome = attn_tui("stages", "--variant", "flash", *paths, "--tile", "1", "--stage", "output")
    assert outcome.refused("--tile 1 cuts 2,048 keys into 2,048 tiles; attn-tui steps through at most 1,024: "
                           "use --tile 2 or more"), outcome
    assert attn_tui("stages", "--variant", "flash", *paths, "--tile", "2", "--stage", "output").code == 0


def test_the_estimate_counts_every_stage_a_trace_will_hold() -> None:
    """Flash's stages grow as keys / tile; each is counted at its record's size, not only its numbers."""
    from attn_tui.ask.footprint import STAGE_BYTES, stage_count
    from attn_tui.attention.engine import compute

    for tile in (1, 3, 8):
        request = VariantAsk(XInput([[0.1 * i, 0.2] for i in range(20)]), Settings.of(variant="flash", tile=tile))
        trace = compute(request)
        sizes, _ = ask_sizes(request)
        assert len(list(trace)) <= stage_count("flash", sizes) <= len(list(trace)) + 4
        assert estimate(request).parts["stage records"] == stage_count("flash", sizes) * STAGE_BYTES
