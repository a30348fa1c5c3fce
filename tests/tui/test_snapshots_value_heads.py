"""Snapshot (reviewed by eye before being accepted): Qwen3-Next's layer × head grid with a linear layer's 4 value
heads beside a full-attention layer's 2, that row blank past its own heads, on the linear layer's last value head."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]
FOLDER = Path("/tmp") / "attn-tui-snapshot-value-heads"  # a fixed path: it is on screen


async def _grid_at_head_3(pilot) -> None:  # type: ignore[no-untyped-def]
    await settle(pilot)
    await pilot.press("right_square_bracket", "right_square_bracket", "right_square_bracket")
    await settle(pilot)
    await pilot.press("g")
    await pilot.pause()


def test_the_grid_of_a_model_whose_layers_have_their_own_heads(snap_compare) -> None:
    pytest.importorskip("transformers")
    from tests.sources.test_qwen3_next_heads import WIDE
    from tests.sources.tiny_models import tiny

    folder = FOLDER / "wide"
    if not (folder / "config.json").is_file():  # made aside, then moved into place whole: workers may race
        FOLDER.mkdir(exist_ok=True)
        made = tiny(Path(tempfile.mkdtemp(dir=FOLDER)), "qwen3_next", WIDE)
        try:
            made.rename(folder)
        except OSError:
            assert (folder / "config.json").is_file()
        shutil.rmtree(made.parent, ignore_errors=True)
    app = model_app(str(folder), "the cat sat", layer=0, head=0)
    assert snap_compare(app, terminal_size=(130, 40), run_before=_grid_at_head_3)
