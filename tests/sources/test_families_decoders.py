"""Five decoder families from a local folder: Mistral, Qwen3, Gemma (1), Granite and StarCoder2.

Each is built offline as a tiny random-weight model (tiny_models.py) and opened through the door. Every
layer's and head's weights equal transformers' own eager `output_attentions`; every stage before them equals a
float64 recomputation written out here from the saved safetensors (the family's input norm, q/k/v with their
biases, Qwen3's per-head q/k norm, the rotation, the family's scale, the window), fed by transformers' own hidden
states, never by the trace's intermediates; the embedding's multipliers are checked from the saved table too.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk  # noqa: E402
from attn_tui.explain.cell import explain  # noqa: E402
from attn_tui.sources import folder, run  # noqa: E402
from attn_tui.sources.families import (  # noqa: E402
    family_for,
    routing,
    supported_types,
)
from attn_tui.trace.ops import Place  # noqa: E402
from attn_tui.trace.stage import Trace  # noqa: E402
from tests.sources.tiny_models import CONFIGS as REGISTRY  # noqa: E402
from tests.sources.tiny_models import MULTIPLIER, TEXT, WINDOW, reference, tiny  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

CONFIGS = {t: REGISTRY[t] for t in ("mistral", "qwen3", "gemma", "granite", "starcoder2")}
FAMILIES = sorted(CONFIGS)
SLIDING = {"mistral": (WINDOW, WINDOW), "starcoder2": (WINDOW, WINDOW), "qwen3": (None, WINDOW),
           "gemma": (None, None), "granite": (None, None)}  # each layer's window, written out


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each family's tiny model, built once for the module (they are what takes the time)."""
    root = tmp_path_factory.mktemp("decoders")
    return {model_type: tiny(root, model_type, config) for model_type, config in CONFIGS.items()}


@pytest.fixture(scope="module")
def traces(folders: dict[str, Path]) -> dict[str, Trace]:
    return {model_type: run(ModelAsk(str(path), TEXT)).trace for model_type, path in folders.items()}


def _hidden_states(path: Path) -> tuple[list[int], tuple[torch.Tensor, ...]]:
    """The token ids and transformers' own input of each layer, (N, d) each."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    ids = tokenizer(TEXT)["input_ids"]
    with torch.no_grad():
        out = model(torch.tensor([ids]), output_hidden_states=True)
    return ids, tuple(h[0] for h in out.hidden_states)


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weight


def _rotate(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate-half RoPE in float64, a loop over positions and pairs: x (heads, N, d_h)."""
    out = x.clone()
    half = x.shape[-1] // 2
    for p in range(x.shape[1]):
        for i in range(half):
            angle = p * base ** (-2 * i / x.shape[-1])
            a, b = x[:, p, i], x[:, p, i + half]
            out[:, p, i] = a * math.cos(angle) - b * math.sin(angle)
            out[:, p, i + half] = b * math.cos(angle) + a * math.sin(angle)
    return out


def float64_layer(model_type: str, config: dict[str, Any], saved: dict[str, torch.Tensor], layer: int,
                  hidden: torch.Tensor, window: int | None) -> dict[str, torch.Tensor]:
    """One layer's stages as the family's modeling code computes them, in float64 from the saved weights."""
    at = f"model.layers.{layer}."
    h = hidden.double()  # (N, d)
    norm = saved[at + "input_layernorm.weight"]
    if model_type == "starcoder2":  # nn.LayerNorm with a bias
        mean, var = h.mean(-1, keepdim=True), h.var(-1, unbiased=False, keepdim=True)
        x = (h - mean) / (var + config["norm_epsilon"]).sqrt() * norm + saved[at + "input_layernorm.bias"]
    else:  # RMSNorm; Gemma's scales by (1 + w)
        x = _rms(h, 1 + norm if model_type == "gemma" else norm, config["rms_norm_eps"])
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    d_h = config.get("head_dim") or config["hidden_size"] // heads
    parts = {}
    for part, count in (("q", heads), ("k", kv), ("v", kv)):
        projected = x @ saved[at + f"self_attn.{part}_proj.weight"].T  # (N, count·d_h)
        if at + f"self_attn.{part}_proj.bias" in saved:
            projected = projected + saved[at + f"self_attn.{part}_proj.bias"]
        parts[part] = projected.view(-1, count, d_h).transpose(0, 1)  # (count, N, d_h)
    stages = {"X": x, "query": parts["q"], "key": parts["k"], "value": parts["v"]}
    q, k = parts["q"], parts["k"]
    if model_type == "qwen3":  # per-head RMSNorm, weight w with no offset
        q = stages["query_norm"] = _rms(q, saved[at + "self_attn.q_norm.weight"], config["rms_norm_eps"])
        k = stages["key_norm"] = _rms(k, saved[at + "self_attn.k_norm.weight"], config["rms_norm_eps"])
    base = float((config.get("rope_parameters") or {}).get("rope_theta") or config.get("rope_theta") or 10000.0)
    q, k = stages["query_rot"], stages["key_rot"] = _rotate(q, base), _rotate(k, base)
    scale = config["attention_multiplier"] if model_type == "granite" else d_h ** -0.5
    k = k[torch.arange(heads) // (heads // kv)]  # (H, N, d_h): each query head's key/value head
    scaled = stages["scaled"] = q @ k.transpose(1, 2) * scale  # (H, N, N)
    n = x.shape[0]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    if window is not None:
        allowed &= torch.arange(n)[None, :] > torch.arange(n)[:, None] - window
    stages["weights"] = torch.softmax(scaled.masked_fill(~allowed, -math.inf), dim=-1)
    return stages


@pytest.mark.parametrize("model_type", FAMILIES)
def test_every_layer_and_head_equals_output_attentions(folders: dict[str, Path], traces: dict[str, Trace],
                                                       model_type: str) -> None:
    trace, expected = traces[model_type], reference(folders[model_type])
    assert trace.meta.family == routing()[model_type] == model_type  # type: ignore[union-attr]
    assert len(expected) == trace.layers == 2 and len(trace.query_tokens) > WINDOW + 2
    for layer, weights in enumerate(expected):
        for head in range(trace.heads):
            torch.testing.assert_close(trace.tensor("weights", layer, head), weights[head], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("model_type", FAMILIES)
def test_every_stage_equals_a_float64_recomputation_from_the_saved_weights(folders: dict[str, Path],
                                                                         traces: dict[str, Trace],
                                                                         model_type: str) -> None:
    from safetensors.torch import load_file

    path, trace = folders[model_type], traces[model_type]
    config = json.loads((path / "config.json").read_text())
    saved = {name: tensor.double() for name, tensor in load_file(path / "model.safetensors").items()}
    ids, hidden = _hidden_states(path)
    embedded = saved["model.embed_tokens.weight"][ids]  # (N, d): the first layer's input, from the saved table
    factor = {"gemma": config["hidden_size"] ** 0.5, "granite": config.get("embedding_multiplier")}.get(model_type, 1.0)
    assert factor == {"gemma": 32 ** 0.5, "granite": 3.0}.get(model_type, 1.0)  # what the config said
    torch.testing.assert_close(hidden[0].double(), embedded * factor, atol=1e-5, rtol=1e-5)
    heads, kv = config["num_attention_heads"], config["num_key_value_heads"]
    names = trace.names()
    if model_type == "qwen3":
        assert names.index("query") < names.index("query_norm") < names.index("query_rot") < names.index("scores")
    else:
        assert "query_norm" not in names and "key_norm" not in names
    for layer in range(trace.layers):
        want = float64_layer(model_type, config, saved, layer, hidden[layer], SLIDING[model_type][layer])
        torch.testing.assert_close(trace.inputs[f"blocks.{layer}.X"].double(), want["X"], atol=1e-5, rtol=1e-5)
        for head in range(heads):
            for name, tensor in want.items():
                if name == "X":
                    continue
                index = head if tensor.shape[0] == heads else head // (heads // kv)  # a key/value head's own
                got = trace.tensor(name, layer, head).double()
                torch.testing.assert_close(got, tensor[index], atol=1e-4, rtol=1e-4, msg=f"{name} {layer} {head}")
            torch.testing.assert_close(trace.tensor("weights", layer, head).double(), want["weights"][head],
                                       atol=1e-5, rtol=1e-5)


def test_gemma_reads_its_own_head_width_and_scales_by_its_root(traces: dict[str, Trace]) -> None:
    trace = traces["gemma"]
    assert trace.tensor("query", 0, 0).shape[-1] == 16 != 32 // 4  # config.head_dim, not hidden / heads
    assert trace.params["blocks.0.W_q"].shape == (4 * 16, 32) and trace.params["blocks.0.W_k"].shape == (16, 32)
    assert trace.geometry_of(0).scale == pytest.approx(16 ** -0.5)  # type: ignore[union-attr]
    assert "RMSNorm(X)·(1 + w)" in str(trace.stage("query", 0, 2).formula)
    for name in ("query", "key", "query_rot"):  # a head's 16 rows of W_q read at its own offset
        for index in ((0, 0), (4, 15), (7, 9)):
            assert explain(trace, Place(name, 1, 3), index).matches, (name, index)
    assert explain(trace, Place("scaled", 1, 3), (7, 2)).matches


def test_granite_scales_by_its_attention_multiplier_and_says_so(traces: dict[str, Trace]) -> None:
    from attn_tui.present.geometry_line import geometry_line

    trace = traces["granite"]
    geometry = trace.geometry_of(1)
    assert geometry is not None and geometry.scale == pytest.approx(MULTIPLIER) and abs(MULTIPLIER - 8 ** -0.5) > 0.2
    assert geometry.scale_name == "attention_multiplier"
    torch.testing.assert_close(trace.tensor("scaled", 1, 3), trace.tensor("scores", 1, 3) * MULTIPLIER)
    assert str(trace.stage("scaled", 1, 3).formula) == \
        "S' = S · 0.07   (the model's attention_multiplier, not 1/√d_k = 0.3536)"
    assert geometry_line(trace, 1) == "layer 1: causal · rotary θ=10000 · scale 0.07 (attention_multiplier)"
    assert explain(trace, Place("scaled", 1, 3), (4, 2)).matches
    from attn_tui.io.export import geometry_header, read_geometry

    assert read_geometry(json.loads(json.dumps(geometry_header(trace))))[1] == geometry  # the export keeps its name


def test_starcoder2_projects_its_layer_norm_with_biases(traces: dict[str, Trace]) -> None:
    trace = traces["starcoder2"]
    assert {"blocks.0.b_q", "blocks.0.b_k", "blocks.0.b_v"} <= set(trace.params)
    assert str(trace.stage("query", 0, 1).formula).startswith("Q_1 = LayerNorm(X)·W_qᵀ + b_q, columns of head 1")
    for name in ("query", "key", "value"):
        assert explain(trace, Place(name, 0, 3), (5, 2)).matches, name


def test_qwen3_norms_each_heads_q_and_k_and_the_inspector_shows_rms_and_weight(traces: dict[str, Trace]) -> None:
    trace = traces["qwen3"]
    for name in ("query_norm", "key_norm", "query_rot", "key_rot"):
        for index in ((0, 0), (3, 5), (5, 2)):
            assert explain(trace, Place(name, 1, 2), index).matches, (name, index)
    found = explain(trace, Place("key_norm", 1, 2), (3, 5))
    weight = float(trace.params["blocks.1.k_norm"][5])
    text = "\n".join([found.title, *found.lines])
    assert "rms" in text and "mean of the squares" in text and f"{weight:.4g}" in text
    assert f"(1 + {weight:.4g})" not in text  # Qwen3's norm has no (1 + w) offset
    assert "times w " in str(trace.stage("query_norm", 0, 0).formula)


@pytest.mark.parametrize("model_type", ["mistral", "starcoder2", "qwen3"])
def test_a_sliding_layer_hides_the_keys_past_its_window(traces: dict[str, Trace], model_type: str) -> None:
    trace = traces[model_type]
    n = len(trace.query_tokens)
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    band = torch.arange(n)[None, :] > torch.arange(n)[:, None] - WINDOW
    for layer, window in enumerate(SLIDING[model_type]):
        geometry, mask = trace.geometry_of(layer), trace.mask_of(layer)
        assert geometry is not None and mask is not None
        allowed = causal & band if window is not None else causal
        assert (geometry.mask, geometry.window, mask.window) == (("sliding", WINDOW, WINDOW) if window else
                                                                  ("causal", None, None))
        assert torch.equal(mask.allowed, allowed)
        for head in range(trace.heads):
            assert torch.equal(trace.tensor("weights", layer, head) > 0, allowed)


@pytest.mark.parametrize(("model_type", "lines", "note"), [
    ("mistral", ["sliding window 3", "sliding window 3"], "local layers 0–1 (sliding window 3) · no global layer"),
    ("qwen3", ["causal", "sliding window 3"], "local layers 1 (sliding window 3) · global layers 0"),
    ("gemma", ["causal", "causal"], ""),
])
def test_the_caption_and_the_grid_say_which_layers_are_local(traces: dict[str, Trace], model_type: str,
                                                            lines: list[str], note: str) -> None:
    from attn_tui.present.layer_windows import window_labels, window_note, windows_of
    from attn_tui.present.stage_view import place_caption, stage_view

    trace = traces[model_type]
    root = trace.tensor("query", 0, 0).shape[-1]  # d_h: Gemma's 16, the others' 8
    for layer, words in enumerate(lines):
        caption = place_caption(trace, stage_view(trace, "weights", layer, 0, 0), layer, 0)
        assert caption.endswith(f"\nlayer {layer}: {words} · rotary θ=10000 · scale 1/√{root}"), caption
    windows = windows_of(trace)
    assert window_note(windows) == note
    assert window_labels(windows) == tuple("" if w is None else f"w{w}" for w in SLIDING[model_type])


@pytest.mark.parametrize("model_type", FAMILIES)
def test_the_folder_estimate_follows_what_transformers_builds(tmp_path: Path, model_type: str) -> None:
    """config.json's sizes give the parameters transformers allocates (within 3%), before it builds one."""
    config = dict(CONFIGS[model_type], vocab_size=5000, hidden_size=64)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type, **config}))
    built = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(model_type, **config))
    real = sum(p.numel() for p in built.parameters())
    assert abs(folder.config_parameters(tmp_path) - real) / real < 0.03, (folder.config_parameters(tmp_path), real)


def test_routing_names_each_family_and_the_folder_check_accepts_it(folders: dict[str, Path]) -> None:
    for model_type in FAMILIES:
        family = family_for(model_type)
        assert family is not None and family.name == model_type and family.causal
        assert folder.check_folder(folders[model_type]) == model_type
    assert set(FAMILIES) <= set(supported_types())


def test_the_command_line_and_the_api_open_a_folder(folders: dict[str, Path], capsys: pytest.CaptureFixture[str]
                                                    ) -> None:
    from attn_tui.api import compute
    from attn_tui.cli import main

    path = str(folders["qwen3"])
    capsys.readouterr()
    assert main(["heads", "--model", path, "--text", TEXT]) == 0
    out = capsys.readouterr().out
    assert "local layers 1 (sliding window 3) · global layers 0" in out
    assert main(["heads", "--model", path, "--text", TEXT, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["windows"] == [None, WINDOW]
    trace = compute(TEXT, model=str(folders["starcoder2"]), layer=1, head=3)
    torch.testing.assert_close(trace.tensor("weights", 1, 3), reference(folders["starcoder2"])[1][3],
                               atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("model_type", "change", "fragment"), [
    ("mistral", {"sliding_window": 0}, "has sliding_window '0': a window is a whole number of tokens, at least 1"),
    ("starcoder2", {"sliding_window": -2}, "has sliding_window '-2': a window"),
    ("qwen3", {"sliding_window": "3"}, "has sliding_window '3': a window"),
    ("mistral", {"sliding_window": True}, "has sliding_window 'True': a window"),
    ("qwen3", {"head_dim": 16}, "cannot load"),  # the saved q/k/v and norms are 8 wide a head
    ("gemma", {"hidden_size": 64}, "cannot load"),
    ("starcoder2", {"num_key_value_heads": 4}, "cannot load"),
])
def test_a_hostile_folder_of_these_families_is_one_line_and_exit_2(folders: dict[str, Path], tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str], model_type: str,
                                                                    change: dict[str, Any], fragment: str) -> None:
    import shutil

    from attn_tui.cli import main

    path = tmp_path / model_type
    shutil.copytree(folders[model_type], path)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, **change}))
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["heads", "--model", str(path), "--text", TEXT])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and fragment in err, err
