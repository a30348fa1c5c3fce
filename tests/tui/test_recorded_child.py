"""The app opened on what `attn-tui trace` got back from the file's own process: the same stages, lines and cells."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attn_tui.ask.settings import RecordAsk
from attn_tui.sources.recorder.supervise import run_script
from attn_tui.tui.widgets.inspector import Inspector
from attn_tui.tui.widgets.stage_bar import StageBar
from tests.limits import limit
from tests.tui.helpers import RecordingApp, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]

SCRIPT = """import torch
torch.manual_seed(0)
q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
torch.save(out, "out.pt")
"""


async def test_a_trace_from_the_files_process_opens_in_the_app(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "causal.py").write_text(SCRIPT)
    trace = run_script(tmp_path / "causal.py", timeout=limit(120)).trace
    expected = torch.load(tmp_path / "out.pt")  # (1, heads, L, d): what the file's own process computed
    assert torch.equal(trace.tensor("output", head=1), expected[0, 1])
    app = RecordingApp(record=RecordAsk().keeping(trace))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.view.name == "weights"
        assert "made by causal.py:4:" in str(app.query_one(StageBar).render())
        inspector = str(app.query_one(Inspector).render())
        assert "✓ matches" in inspector
        await pilot.press("]")
        assert app.view.head == 1
