"""Snapshots of a model writing (reviewed by eye before being accepted): a generated token's one row of weights
over the cache, the cache of a layer, the sampler's probabilities, and the rows written so far."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.sources.tiny_models import SMALL, tiny
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]
# A fixed folder: its path is on screen, and the model (seeded) is the same each time it is written.
FOLDER = Path("/tmp") / "attn-tui-snapshot-writer"  # not $TMPDIR: the same path on every machine


def _at(name: str, step: int):
    async def run_before(pilot) -> None:
        await settle(pilot)
        places = pilot.app.explorer.places
        pilot.app.explorer.go_to_place(next(n for n, p in enumerate(places) if (p.name, p.step) == (name, step)))
        await pilot.pause()

    return run_before


@pytest.mark.parametrize(("stage", "step"), [("weights", 3), ("cache_keys", 3), ("probs", 2), ("written", 3)])
def test_a_writing_stage(snap_compare, stage: str, step: int) -> None:
    folder = FOLDER / "llama"
    if not (folder / "config.json").is_file():  # made aside, then moved into place whole: workers may race
        FOLDER.mkdir(exist_ok=True)
        made = tiny(Path(tempfile.mkdtemp(dir=FOLDER)), "llama", dict(SMALL, num_key_value_heads=2))
        try:
            made.rename(folder)
        except OSError:
            assert (folder / "config.json").is_file()  # another worker moved its own (the same model) first
        shutil.rmtree(made.parent, ignore_errors=True)
    app = model_app(str(folder), "the cat sat", generate=4)
    assert snap_compare(app, terminal_size=(110, 34), run_before=_at(stage, step))


@pytest.mark.parametrize(("model_type", "stage"), [("deepseek_v3", "latent_cache"), ("qwen3_next", "state")])
def test_a_cache_of_its_own(snap_compare, model_type: str, stage: str) -> None:
    """DeepSeek's latent cache (a row a position) and Qwen3-Next's state (the same size at every step)."""
    from tests.sources.test_deepseek_v3 import CONFIGS as LATENT
    from tests.sources.test_qwen3_next import CONFIGS as NEXT

    config = {"deepseek_v3": LATENT["interleaved"], "qwen3_next": NEXT["dense"]}[model_type]
    folder = FOLDER / model_type
    if not (folder / "config.json").is_file():
        FOLDER.mkdir(exist_ok=True)
        made = tiny(Path(tempfile.mkdtemp(dir=FOLDER)), model_type, config)
        try:
            made.rename(folder)
        except OSError:
            assert (folder / "config.json").is_file()
        shutil.rmtree(made.parent, ignore_errors=True)
    app = model_app(str(folder), "the cat sat", generate=3)
    assert snap_compare(app, terminal_size=(110, 34), run_before=_at(stage, 2))
