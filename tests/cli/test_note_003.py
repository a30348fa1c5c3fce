"""Seed note 003 (Luong general attention, a mask where 1 marks padding) reproduced from a fresh start.

The note's own computation is written out here in torch, as the note writes it
(`masked_fill(mask.unsqueeze(1), -inf)` on a `(batch, length)` mask), and checked against
what a fresh `attn-tui` process prints for the shipped sample and the shipped script; SDPA
with the mask negated (its 1 = may attend) is the independent reference for both.
"""

from __future__ import annotations

import json
import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attn_tui.ask.samples import get_sample, samples_dir
from tests.limits import limit

NOTE_MASK = [[0, 0, 0, 1]]  # (batch, length): 1 = padding, as the note writes it


def _fresh(tmp_path: Path, *argv: str) -> dict:
    """`attn-tui ARGV --format json` in a new process, with an empty state directory and no session."""
    env = {**os.environ, "ATTN_TUI_STATE_DIR": str(tmp_path / "state"), "ATTN_TUI_LANG": "en"}
    result = subprocess.run([sys.executable, "-m", "attn_tui", *argv, "--format", "json"], capture_output=True,
                            text=True, cwd=tmp_path, env=env, timeout=limit(300))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def _stage(doc: dict, name: str) -> torch.Tensor:
    data = next(s for s in doc["stages"] if s["name"] == name)["data"]
    return torch.tensor([[float(x) for x in row] for row in data], dtype=torch.float64)


def _note(h_src: torch.Tensor, h_t: torch.Tensor, w_a: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The note's Attention.forward, step by step: (batch, 1, length) weights and (batch, 1, hidden) context."""
    linear = torch.nn.Linear(w_a.shape[1], w_a.shape[0], bias=False).double()
    with torch.no_grad():
        linear.weight.copy_(w_a)
        query = linear(h_t)  # |query| = (batch_size, 1, hidden_size)
        weight = torch.bmm(query, h_src.transpose(1, 2))  # |weight| = (batch_size, 1, length)
        weight.masked_fill_(mask.unsqueeze(1), -float("inf"))
        weight = torch.softmax(weight, dim=-1)
        context_vector = torch.bmm(weight, h_src)  # |context_vector| = (batch_size, 1, hidden_size)
    return weight, context_vector


@pytest.mark.slow  # a child process that imports torch: seconds each
def test_the_sample_reproduces_the_notes_example_from_a_fresh_start(tmp_path: Path) -> None:
    sample = get_sample("luong_padding_note")
    assert sample.request.custom_mask == NOTE_MASK and sample.request.settings.mask_means == "block"
    doc = _fresh(tmp_path, "stages", "--sample", "luong_padding_note", "--dtype", "float64")
    assert doc["settings"]["mask_means"] == "block" and not doc["warnings"]
    h_src = torch.tensor(sample.request.source.k, dtype=torch.float64)[None]  # type: ignore[union-attr]
    h_t = torch.tensor(sample.request.source.q, dtype=torch.float64)[None]  # type: ignore[union-attr]
    w_a = torch.tensor(doc["params"]["W_a"], dtype=torch.float64)
    weight, context = _note(h_src, h_t, w_a, torch.tensor(NOTE_MASK, dtype=torch.bool))
    assert torch.allclose(_stage(doc, "weights"), weight[0], atol=1e-12)
    assert torch.allclose(_stage(doc, "output"), context[0], atol=1e-12)
    assert _stage(doc, "weights")[0, 3].item() == 0.0  # the padding's weight: exactly 0, as the note says
    sdpa = F.scaled_dot_product_attention(h_t @ w_a.T, h_src, h_src, attn_mask=~torch.tensor(NOTE_MASK).bool(),
                                          scale=1.0)
    assert torch.allclose(_stage(doc, "output"), sdpa[0], atol=1e-12)


@pytest.mark.slow  # a child process that imports torch: seconds each
def test_the_script_traces_with_its_own_mask_and_convention(tmp_path: Path) -> None:
    doc = _fresh(tmp_path, "trace", "--sample", "luong_padding")
    weights, output = _stage(doc, "weights"), _stage(doc, "output")
    assert weights[0, 3].item() == 0.0
    masked = next(s for s in doc["stages"] if s["name"] == "masked")
    assert "masked_fill where True (True = blocked)" in masked["formula"]
    ran = runpy.run_path(str(samples_dir() / "scripts" / "luong_padding.py"))  # the script, run as itself
    assert torch.allclose(weights, ran["weights"][0].double(), atol=1e-6)
    model, h_src, h_t = ran["model"], ran["h_src"], ran["h_t"]
    with torch.no_grad():
        sdpa = F.scaled_dot_product_attention(model.W_a(h_t), h_src, h_src, attn_mask=~ran["mask"][:, None, :],
                                              scale=1.0)
    assert torch.allclose(output, sdpa[0].double(), atol=1e-6)


def test_the_inspector_shows_the_codes_own_mask_beside_the_may_attend_view() -> None:
    import attn_tui
    from attn_tui.explain.cell import explain

    with attn_tui.record() as rec:
        runpy.run_path(str(samples_dir() / "scripts" / "luong_padding.py"))
    trace = rec.trace
    masked = next(s for s in trace.stages.values() if s.place.name == "masked")
    pad = explain(trace, masked.place, (0, 3)).lines
    assert pad[0] == "mask[0,3] = 0   (1 = may attend)"
    assert "masked, your code's mask holds True here → filled with -inf (blocked)" in pad
    word = explain(trace, masked.place, (0, 0)).lines
    assert word[:2] == ["mask[0,0] = 1   (1 = may attend)", "your code's mask holds False here → kept (may attend)"]
    spec = trace.masking(masked).mask  # type: ignore[union-attr]
    assert spec is not None and str(spec.convention()) == "your code's mask: masked_fill where True (True = blocked)"
    assert spec.legend_note() == "code: True → -∞"
