"""A model bigger than --max-memory: loaded with accelerate's device_map="auto", its layers offloaded to disk, and
traced exactly as the whole model (every layer's stages, weights and params); what cannot work even offloaded is
refused in one line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from attn_tui.ask.settings import ModelAsk  # noqa: E402
from attn_tui.sources import run  # noqa: E402
from attn_tui.sources.families import family_for  # noqa: E402
from attn_tui.sources.load_plan import load_plan  # noqa: E402
from attn_tui.sources.offload import layer_list  # noqa: E402
from attn_tui.sources.transformer import model_run  # noqa: E402
from tests.hostile.helpers import attn_tui  # noqa: E402
from tests.sources.tiny_models import CONFIGS as FAMILIES  # noqa: E402
from tests.sources.tiny_models import LINEAR_KINDS, TEXT, reference, tiny  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

LAYERS = 6
WIDE = dict(num_hidden_layers=LAYERS, intermediate_size=2048)  # layers big beside the embeddings
CONFIGS: dict[str, dict[str, Any]] = {
    "bert": dict(FAMILIES["bert"], **WIDE),
    "gpt2": dict(FAMILIES["gpt2"], n_layer=LAYERS, n_inner=2048),
    "llama": dict(FAMILIES["llama"], **WIDE),
    "gemma3_text": dict(FAMILIES["gemma3_text"], **WIDE, layer_types=["sliding_attention", "full_attention"] * 3),
}


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTN_TUI_CACHE_DIR", str(tmp_path / "cache"))


def _budget(path: Path, model_type: str) -> int:
    """A --max-memory that holds the tokenizer, a run, the parts outside the layers and about two layers beside the
    one accelerate keeps room for: the first layers stay in memory, the others go to disk."""
    whole = transformers.AutoModel.from_pretrained(path)
    family = family_for(model_type)
    assert family is not None
    blocks = whole.get_submodule(layer_list(whole, family.blocks, LAYERS) or "")
    layer = 4 * sum(p.numel() for p in blocks[0].parameters())
    rest = 4 * sum(p.numel() for p in whole.parameters()) - LAYERS * layer
    plan = load_plan(path, 2**40, "tiny")
    return plan.tokenizer + plan.reserve + rest + int(3.5 * layer)


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_a_model_over_the_budget_is_offloaded_and_traced_as_the_whole_model(tmp_path: Path, model_type: str) -> None:
    path = tiny(tmp_path, model_type, CONFIGS[model_type])
    budget = _budget(path, model_type)
    said: list[str] = []
    offloaded = run(ModelAsk(str(path), TEXT), max_memory=budget, on_progress=lambda p: said.append(str(p.what)))
    whole = run(ModelAsk(str(path), TEXT)).trace
    trace = offloaded.trace
    loaded = model_run(str(path), TEXT, None, "auto", budget).loaded
    assert any("offloading layers" in line for line in said), said
    assert loaded.offloaded == ("", "", "disk", "disk", "disk", "disk"), loaded.offloaded
    assert trace.meta.offloaded == loaded.offloaded  # type: ignore[union-attr]
    assert trace.meta.header()["settings"]["offloaded"] == loaded.offloaded  # exported with the trace
    blocks = loaded.model.get_submodule(loaded.blocks)
    assert all(p.device.type == "meta" for p in blocks[LAYERS - 1].parameters())  # on disk, not in memory
    assert all(p.device.type == "cpu" for p in blocks[0].parameters())
    expected = reference(path)
    for layer in range(LAYERS):
        for head in range(trace.heads):
            torch.testing.assert_close(trace.tensor("weights", layer, head), expected[layer][head], atol=1e-5,
                                       rtol=1e-5)
            assert torch.equal(trace.tensor("weights", layer, head), whole.tensor("weights", layer, head))
        # read for the trace, then let go: the offloaded layer is back on the meta device
        assert all(p.device.type == "meta" for p in blocks[layer].parameters()) == (layer >= 2)
    assert set(trace.stages) == set(whole.stages)
    for place, stage in whole.stages.items():
        assert torch.equal(trace.stages[place].tensor, stage.tensor), place
    assert trace.params.keys() == whole.params.keys() and trace.inputs.keys() == whole.inputs.keys()
    for name, tensor in whole.params.items():
        assert torch.equal(trace.params[name], tensor), name
    for name, tensor in whole.inputs.items():
        assert torch.equal(trace.inputs[name], tensor), name
    assert offloaded.stats is not None and whole.stats is not None  # the grid of heads reads the same weights
    assert torch.equal(offloaded.stats.weights, run(ModelAsk(str(path), TEXT)).stats.weights)  # type: ignore


# Families that write with a cache of their own (DeepSeek's latent, Qwen3-Next's state): six layers, all dense
WRITERS: dict[str, dict[str, Any]] = {
    "llama": CONFIGS["llama"], "gemma3_text": CONFIGS["gemma3_text"],
    "deepseek_v3": dict(FAMILIES["deepseek_v3"], **WIDE, first_k_dense_replace=LAYERS),
    "qwen3_next": dict(FAMILIES["qwen3_next"], **WIDE, layer_types=LINEAR_KINDS * (LAYERS // 2)),
}


@pytest.mark.parametrize("model_type", sorted(WRITERS))
def test_an_offloaded_model_writes_every_step_as_the_whole_model(tmp_path: Path, model_type: str) -> None:
    """Writing reads each layer's weights at every step (the new rows, the lazily traced stages, a latent cache or
    a state that steps): an offloaded layer is read into memory for it, so every stage of every step equals the
    whole model's."""
    path = tiny(tmp_path, model_type, WRITERS[model_type])
    ask = ModelAsk(str(path), TEXT, generate=3)
    offloaded, whole = run(ask, max_memory=_budget(path, model_type)).trace, run(ask).trace
    assert "disk" in offloaded.meta.offloaded  # type: ignore[union-attr]
    assert offloaded.meta.generated_ids == whole.meta.generated_ids  # type: ignore[union-attr]
    offloaded.fill_steps()
    whole.fill_steps()
    assert set(offloaded.stages) == set(whole.stages) and offloaded.steps() == whole.steps() == 3
    for place, stage in whole.stages.items():
        torch.testing.assert_close(offloaded.stages[place].tensor, stage.tensor, atol=1e-6, rtol=1e-6,
                                   msg=lambda text, at=place: f"{at}: {text}")


@pytest.mark.parametrize("model_type", ["llama", "gemma3_text"])
def test_an_offloaded_models_compare_and_atlas_runs_are_the_whole_models(tmp_path: Path, model_type: str) -> None:
    """Compare's B (the same model on another text, asked after A) and the atlas's induction probe read every
    layer again: under the same budget each equals the whole model's, stage for stage and in its statistics."""
    path = tiny(tmp_path, model_type, CONFIGS[model_type])
    budget = _budget(path, model_type)
    a = ModelAsk(str(path), TEXT)
    asks = {"A": a, "B": a.changed({"text": "the door looked at the cat"}),
            "atlas": a.changed({"probe": "induction", "probe_length": 8})}
    for what, ask in asks.items():
        offloaded, whole = run(ask, max_memory=budget), run(ask)
        assert "disk" in offloaded.trace.meta.offloaded, what  # type: ignore[union-attr]
        assert set(offloaded.trace.stages) == set(whole.trace.stages), what
        for place, stage in whole.trace.stages.items():
            assert torch.equal(offloaded.trace.stages[place].tensor, stage.tensor), (what, place)
        assert offloaded.stats is not None and whole.stats is not None
        assert torch.equal(offloaded.stats.weights, whole.stats.weights), what


def test_the_command_line_says_which_layers_are_offloaded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from attn_tui.cli import main

    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    budget = str(_budget(path, "llama"))
    capsys.readouterr()
    assert main(["stages", "--model", str(path), "--text", TEXT, "--layer", "4", "--stage", "weights",
                 "--max-memory", budget]) == 0
    out = capsys.readouterr().out
    assert "layers 2–5 offloaded to disk" in " ".join(out.split("weights ·")[0].split()), out  # in the heading
    assert main(["heads", "--model", str(path), "--text", TEXT, "--max-memory", budget]) == 0
    assert "layers 2–5 offloaded to disk" in capsys.readouterr().out
    assert main(["stages", "--model", str(path), "--text", TEXT, "--stage", "weights"]) == 0
    assert "offloaded" not in capsys.readouterr().out  # within the default budget: whole, nothing said


def _as_bin(path: Path) -> Path:
    """The folder with its weights as a `pytorch_model.bin` (read with weights_only) instead of safetensors."""
    model = transformers.AutoModelForCausalLM.from_pretrained(path)
    torch.save(model.state_dict(), path / "pytorch_model.bin")
    (path / "model.safetensors").unlink()
    return path


def test_a_bin_checkpoint_is_offloaded_into_a_private_folder_gone_when_the_process_ends(tmp_path: Path) -> None:
    from attn_tui.sources import hf

    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    budget = _budget(path, "llama")
    _as_bin(path)
    cache = tmp_path / "cache" / "offload"
    loaded = hf.load(str(path), max_memory=budget)
    assert loaded.offloaded == ("", "", "disk", "disk", "disk", "disk")
    (folder,) = cache.iterdir()  # accelerate wrote the offloaded layers out again (a .bin is not read in place)
    assert folder.stat().st_mode & 0o077 == 0  # this user's only
    assert any(f.name.startswith("layers.5.") for f in folder.iterdir())
    trace = hf.trace_run(hf.run(loaded, TEXT), 5, 0)
    expected = reference(path)
    for head in range(trace.heads):
        torch.testing.assert_close(trace.tensor("weights", 5, head), expected[5][head], atol=1e-5, rtol=1e-5)
    outcome = attn_tui("heads", "--model", str(path), "--text", TEXT, "--max-memory", str(budget),
                       env={"ATTN_TUI_CACHE_DIR": str(tmp_path / "child")})
    assert outcome.code == 0 and "layers 2–5 offloaded to disk" in outcome.out, outcome
    assert outcome.err == ""  # no notice from accelerate or transformers reaches the terminal
    assert (tmp_path / "child" / "offload").is_dir() and not any((tmp_path / "child" / "offload").iterdir())


def test_offloading_a_bin_checkpoint_onto_a_full_disk_is_refused(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    from attn_tui.ask.budget import BudgetError
    from attn_tui.sources import load_plan as plans

    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    plan = load_plan(path, _budget(path, "llama"), "tiny")
    plans.check_disk(plan, path, tmp_path)  # safetensors: read where it is, nothing written
    _as_bin(path)
    monkeypatch.setattr(plans.shutil, "disk_usage", lambda _where: shutil._ntuple_diskusage(10**9, 10**9, 1024))
    with pytest.raises(BudgetError, match=r"would write about .* which has 1.0 kB free"):
        plans.check_disk(plan, path, tmp_path)


def test_a_budget_too_small_even_offloaded_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    plan = load_plan(path, 2**40, "tiny")
    small = str(plan.tokenizer + plan.reserve + plan.largest // 2)  # the run fits; the embeddings, read whole, do not
    for argv in (["stages", "--model", str(path), "--text", TEXT], ["--model", str(path), "--text", TEXT]):  # the app
        outcome = attn_tui(*argv, "--max-memory", small)
        assert outcome.refused("needs about"), outcome
        assert "even with its layers offloaded to disk (the embeddings 3.7 MB" in outcome.err, outcome.err
        assert "the limit is" in outcome.err


def test_a_config_that_implies_more_weights_than_its_files_is_not_offloaded(tmp_path: Path,
                                                                            capsys: pytest.CaptureFixture[str]) -> None:
    from attn_tui.cli import main

    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "num_hidden_layers": 200}))  # 6 layers in the file
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["stages", "--model", str(path), "--text", "a b", "--max-memory", "150M"])
    assert exited.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "config.json says 200 layers; its weights hold 6" in err, err


def test_without_accelerate_a_model_over_the_budget_is_refused_in_one_line(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from attn_tui.sources import hf
    from attn_tui.sources.folder import ModelError

    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    budget = _budget(path, "llama")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "accelerate" else real(name, *a))
    with pytest.raises(ModelError, match=r"offloading its layers needs accelerate: pip install 'attn-tui\[models\]'"):
        hf.load(str(path), max_memory=budget)
    assert hf.load(str(path)).offloaded == ()  # within the budget it loads whole, accelerate or not
