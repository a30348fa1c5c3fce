"""Phi-3, GPT-NeoX (Pythia) and OLMo-2 from a local folder: a tiny random-weight model of each traces every layer's
and head's weights as transformers' own eager `output_attentions` has them, and each family's own stages (a fused
projection split into heads, a partial rotation, a q/k norm over the whole projection, no norm before attention)
equal a float64 recomputation from the saved weights alone."""

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
from attn_tui.present.geometry_line import geometry_line  # noqa: E402
from attn_tui.sources import folder, run  # noqa: E402
from attn_tui.sources.families import routing  # noqa: E402
from attn_tui.trace.ops import Place  # noqa: E402
from attn_tui.trace.stage import Trace  # noqa: E402
from tests.sources.tiny_models import CONFIGS as REGISTRY  # noqa: E402
from tests.sources.tiny_models import TEXT, reference, tiny  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

CONFIGS = {t: REGISTRY[t] for t in ("phi3", "gpt_neox", "olmo2")}
BASE = {"phi3": 500.0, "gpt_neox": 500.0, "olmo2": 10000.0}
D_H, HEADS = 8, 4


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("fused")
    return {model_type: tiny(root, model_type, config) for model_type, config in CONFIGS.items()}


@pytest.fixture(scope="module")
def traces(folders: dict[str, Path]) -> dict[str, Trace]:
    return {model_type: run(ModelAsk(str(path), TEXT)).trace for model_type, path in folders.items()}


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_layer_and_head_equals_output_attentions(folders: dict[str, Path], traces: dict[str, Trace],
                                                       model_type: str) -> None:
    trace, expected = traces[model_type], reference(folders[model_type])
    assert trace.meta.family == routing()[model_type] == model_type  # type: ignore[union-attr]
    assert len(expected) == trace.layers == 2 and trace.heads == HEADS
    for layer, weights in enumerate(expected):
        trace.tensor("weights", layer, 0)  # the later layers are traced when asked for
        for head in range(trace.heads):
            torch.testing.assert_close(trace.tensor("weights", layer, head), weights[head], atol=1e-5, rtol=1e-5)


# --- an independent recomputation of layer 0, in float64, from model.safetensors and the tokenizer alone ---

def _saved(path: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return {name.split(".", 1)[1] if name.startswith(("model.", "gpt_neox.")) else name: tensor.double()
            for name, tensor in load_file(path / "model.safetensors").items()}


def _embedded(path: Path, saved: dict[str, torch.Tensor], table: str) -> torch.Tensor:
    ids = transformers.AutoTokenizer.from_pretrained(path)(TEXT)["input_ids"]
    return saved[table][torch.tensor(ids)]  # (N, d)


def _rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    return x / (x.pow(2).mean(-1, keepdim=True) + eps).sqrt() * weight


def _turned(x: torch.Tensor, rotated: int, base: float) -> torch.Tensor:
    """Rotate-half on the first `rotated` dimensions of each row, pair (i, i + rotated/2) by p·base^(−2i/rotated)."""
    out = x.clone()
    half = rotated // 2
    for p in range(x.shape[0]):
        for i in range(half):
            angle = p * base ** (-2 * i / rotated)
            a, b = x[p, i], x[p, i + half]
            cos, sin = math.cos(angle), math.sin(angle)
            out[p, i], out[p, i + half] = a * cos - b * sin, b * cos + a * sin
    return out


def _weights(q: torch.Tensor, k: torch.Tensor, window: int | None) -> torch.Tensor:
    n = q.shape[0]
    allowed = torch.ones(n, n, dtype=torch.bool).tril()
    if window is not None:
        allowed &= torch.arange(n)[None, :] > torch.arange(n)[:, None] - window
    return torch.softmax((q @ k.T / math.sqrt(q.shape[1])).masked_fill(~allowed, -math.inf), dim=-1)


def _layer0(model_type: str, path: Path) -> dict[str, list[torch.Tensor]]:
    """Each query head's stages of layer 0, as the family's modelling code defines them, by hand."""
    w = _saved(path)
    config = json.loads((path / "config.json").read_text())
    at = "layers.0."
    if model_type == "gpt_neox":  # LayerNorm input; fused rows laid out head by head: [q_h k_h v_h] per head
        x = _embedded(path, w, "embed_in.weight")
        x = torch.nn.functional.layer_norm(x, (x.shape[1],), w[at + "input_layernorm.weight"],
                                           w[at + "input_layernorm.bias"], config["layer_norm_eps"])
        qkv = (x @ w[at + "attention.query_key_value.weight"].T + w[at + "attention.query_key_value.bias"])
        qkv = qkv.view(len(x), HEADS, 3 * D_H)  # (N, H, 3·d_h)
        q = [qkv[:, h, :D_H] for h in range(HEADS)]
        k = [qkv[:, h, D_H:2 * D_H] for h in range(HEADS)]
        v = [qkv[:, h, 2 * D_H:] for h in range(HEADS)]
        stages = {"query": q, "key": k, "value": v}
        q_in, k_in, rotated = q, k, 4
    elif model_type == "phi3":  # RMSNorm input; fused rows: every query head, then the key heads, then the value heads
        x = _rms(_embedded(path, w, "embed_tokens.weight"), w[at + "input_layernorm.weight"], config["rms_norm_eps"])
        fused = x @ w[at + "self_attn.qkv_proj.weight"].T  # (N, H·d_h + 2·H_kv·d_h)
        q_all, k_all, v_all = fused[:, :HEADS * D_H], fused[:, HEADS * D_H:HEADS * D_H + 2 * D_H], fused[:, -2 * D_H:]
        q = [q_all[:, h * D_H:(h + 1) * D_H] for h in range(HEADS)]
        k = [k_all[:, (h // 2) * D_H:(h // 2 + 1) * D_H] for h in range(HEADS)]  # heads 0, 1 read kv head 0
        v = [v_all[:, (h // 2) * D_H:(h // 2 + 1) * D_H] for h in range(HEADS)]
        stages = {"query": q, "key": k, "value": v}
        q_in, k_in, rotated = q, k, 4
    else:  # olmo2: the raw input, no norm before attention; RMSNorm over the whole q and the whole k projection
        x = _embedded(path, w, "embed_tokens.weight")
        q_all, k_all = x @ w[at + "self_attn.q_proj.weight"].T, x @ w[at + "self_attn.k_proj.weight"].T
        eps = config["rms_norm_eps"]
        q_n = _rms(q_all, w[at + "self_attn.q_norm.weight"], eps)
        k_n = _rms(k_all, w[at + "self_attn.k_norm.weight"], eps)
        q = [q_all[:, h * D_H:(h + 1) * D_H] for h in range(HEADS)]
        k = [k_all[:, (h // 2) * D_H:(h // 2 + 1) * D_H] for h in range(HEADS)]
        q_in = [q_n[:, h * D_H:(h + 1) * D_H] for h in range(HEADS)]
        k_in = [k_n[:, (h // 2) * D_H:(h // 2 + 1) * D_H] for h in range(HEADS)]
        stages = {"query": q, "key": k, "query_norm": q_in, "key_norm": k_in}
        rotated = D_H
    stages["query_rot"] = [_turned(t, rotated, BASE[model_type]) for t in q_in]
    stages["key_rot"] = [_turned(t, rotated, BASE[model_type]) for t in k_in]
    window = config.get("sliding_window")
    stages["weights"] = [_weights(qr, kr, window) for qr, kr in zip(stages["query_rot"], stages["key_rot"])]
    return stages


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_each_family_stage_equals_a_float64_recomputation_from_the_saved_weights(
        folders: dict[str, Path], traces: dict[str, Trace], model_type: str) -> None:
    trace = traces[model_type]
    expected = _layer0(model_type, folders[model_type])
    names = trace.names()
    assert [n for n in names if n in expected] == list(expected)  # in the family's order, none missing
    for name, per_head in expected.items():
        for head, tensor in enumerate(per_head):
            torch.testing.assert_close(trace.tensor(name, 0, head).double(), tensor, atol=1e-5, rtol=1e-5,
                                       msg=lambda m, name=name, head=head: f"{name}@h{head}: {m}")


def test_olmo2_norms_the_whole_projection_not_each_head(traces: dict[str, Trace]) -> None:
    """The norm's mean runs over all heads' dimensions: a per-head RMSNorm of the same q would differ."""
    trace = traces["olmo2"]
    q = trace.tensor("query", 0, 1).double()
    weight = trace.params["blocks.0.q_norm"].double()[D_H:2 * D_H]  # head 1's columns of the (H·d_h,) weight
    per_head = q / (q.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt() * weight
    assert not torch.allclose(trace.tensor("query_norm", 0, 1).double(), per_head, atol=1e-3)
    assert "RMSNorm(X·W_qᵀ) over the whole projection's 32 dimensions" in str(trace.stage("query_norm", 0, 1).formula)
    assert "the layer's input, not normed" in str(trace.stage("query", 0, 1).formula)


@pytest.mark.parametrize(("model_type", "names"), [
    ("olmo2", ("query_norm", "key_norm", "query_rot", "key_rot")),
    ("phi3", ("query_rot", "key_rot")),
    ("gpt_neox", ("query_rot", "key_rot", "query")),
])
def test_the_inspector_explains_each_family_stage(traces: dict[str, Trace], model_type: str,
                                                  names: tuple[str, ...]) -> None:
    trace = traces[model_type]
    for name in names:
        for index in ((0, 0), (3, 1), (5, 2), (6, 7)):  # turned dimensions and ones passed through
            for head in (0, 3):
                found = explain(trace, Place(name, 1, head), index)
                assert found.matches, (name, head, index, found)


def test_the_inspector_shows_the_rms_of_the_whole_projection_row_and_the_weight(traces: dict[str, Trace]) -> None:
    trace = traces["olmo2"]
    found = explain(trace, Place("key_norm", 0, 3), (4, 5))  # query head 3 reads key/value head 1: columns 8…15
    assert found.matches
    assert "w[13]" in found.title
    assert "row 4 of the whole projection (2 heads, 16 dimensions; this head's are 8…15)" in found.lines[0]
    k = torch.cat([trace.tensor("key", 0, 0)[4], trace.tensor("key", 0, 3)[4]]).double()  # the whole row: 16 dims
    assert f"{float(k.pow(2).mean()):.4g}" in found.lines[1]
    weight = float(trace.params["blocks.0.k_norm"][13])
    assert f"{weight:.4g}" in found.lines[-1]


@pytest.mark.parametrize(("model_type", "line"), [
    ("phi3", "layer 1: sliding window 3 · rotary θ=500 on 50% of each head · scale 1/√8"),
    ("gpt_neox", "layer 1: causal · rotary θ=500 on 50% of each head · scale 1/√8"),
    ("olmo2", "layer 1: causal · rotary θ=10000 · scale 1/√8"),
])
def test_the_caption_says_the_share_turned_the_base_and_the_window(traces: dict[str, Trace], model_type: str,
                                                                   line: str) -> None:
    trace = traces[model_type]
    trace.tensor("weights", 1, 0)
    assert geometry_line(trace, 1) == line
    if model_type == "phi3":  # the window of 3 masks keys the causal mask allows
        mask = trace.mask_of(1)
        assert mask is not None and mask.window == 3 and not bool(mask.allowed[-1, 0])


def test_the_cli_opens_each_folder(folders: dict[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    from attn_tui.cli import main

    for model_type, path in folders.items():
        capsys.readouterr()
        assert main(["stages", "--model", str(path), "--text", "the cat sat", "--layer", "1", "--head", "3",
                     "--format", "json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        by_name = {s["name"]: s for s in doc["stages"]}
        assert (by_name["weights"]["layer"], by_name["weights"]["head"]) == (1, 3), model_type
        assert main(["heads", "--model", str(path), "--text", "the cat sat", "--format", "json"]) == 0
        assert len(json.loads(capsys.readouterr().out)["stats"]) == 2 * HEADS, model_type


def test_the_api_opens_each_folder(folders: dict[str, Path], traces: dict[str, Trace]) -> None:
    import attn_tui

    for model_type, path in folders.items():
        trace = attn_tui.compute(TEXT, model=str(path), layer=1, head=2)
        torch.testing.assert_close(trace.tensor("weights", 1, 2), traces[model_type].tensor("weights", 1, 2))


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_the_folder_estimate_follows_what_transformers_builds(tmp_path: Path, model_type: str) -> None:
    """config.json's sizes give the parameters transformers allocates (a fused projection is as many), within 3%."""
    config = dict(CONFIGS[model_type], vocab_size=5000, hidden_size=64)
    made = transformers.AutoConfig.for_model(model_type, **config)
    made.save_pretrained(tmp_path)
    real = sum(p.numel() for p in transformers.AutoModel.from_config(made).parameters())
    assert abs(folder.config_parameters(tmp_path) - real) / real < 0.03, (folder.config_parameters(tmp_path), real)


@pytest.mark.parametrize("layout", ["bin", "shards"])
def test_a_bin_read_with_weights_only_and_a_sharded_checkpoint_open_as_the_safetensors_does(
        folders: dict[str, Path], traces: dict[str, Trace], tmp_path: Path, layout: str) -> None:
    """The same gpt_neox weights as pytorch_model.bin (plain tensors: weights_only reads them) or as two shards and
    an index trace the same weights as the single file, every layer and head."""
    import shutil

    from safetensors.torch import load_file, save_file

    path = Path(shutil.copytree(folders["gpt_neox"], tmp_path / layout))
    tensors = load_file(path / "model.safetensors")
    (path / "model.safetensors").unlink()
    if layout == "bin":
        torch.save(tensors, path / "pytorch_model.bin")
    else:
        names = sorted(tensors)
        shards = {n: f"model-0000{1 + 2 * i // len(names)}-of-00002.safetensors" for i, n in enumerate(names)}
        for shard in set(shards.values()):
            save_file({n: tensors[n] for n in names if shards[n] == shard}, path / shard, metadata={"format": "pt"})
        (path / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": shards}))
    trace, single = run(ModelAsk(str(path), TEXT)).trace, traces["gpt_neox"]
    for layer in range(2):
        for head in range(HEADS):
            torch.testing.assert_close(trace.tensor("weights", layer, head), single.tensor("weights", layer, head),
                                       atol=0, rtol=0)


def test_gpt_neox_without_biases_traces_and_says_so(tmp_path: Path) -> None:
    path = tiny(tmp_path, "gpt_neox", dict(CONFIGS["gpt_neox"], attention_bias=False))
    trace = run(ModelAsk(str(path), TEXT)).trace
    expected = reference(path)
    for head in range(HEADS):
        torch.testing.assert_close(trace.tensor("weights", 0, head), expected[0][head], atol=1e-5, rtol=1e-5)
    assert "blocks.0.b_q" not in trace.params
    formula = str(trace.stage("query", 0, 1).formula)
    assert formula.startswith("Q_h = X·W_qᵀ, columns of head 1") and "b_q" not in formula
    with_bias = str(run(ModelAsk(str(tiny(tmp_path, "gpt_neox", CONFIGS["gpt_neox"], name="biased")), TEXT))
                    .trace.stage("query", 0, 1).formula)
    assert with_bias.startswith("Q_h = X·W_qᵀ + b_q, columns of head 1")


@pytest.mark.parametrize(("model_type", "module", "x_of"), [
    ("phi3", "qkv_proj", lambda w, x, eps: _rms(x, w["layers.0.input_layernorm.weight"], eps)),
    ("gpt_neox", "query_key_value", lambda w, x, eps: torch.nn.functional.layer_norm(
        x, (x.shape[1],), w["layers.0.input_layernorm.weight"], w["layers.0.input_layernorm.bias"], eps)),
])
def test_a_projections_formula_names_its_rows_of_the_fused_weight(folders: dict[str, Path], traces: dict[str, Trace],
                                                                  model_type: str, module: str, x_of: Any) -> None:
    """The rows the formula names, cut from the saved fused weight by that label alone, give the stage."""
    import re

    path, trace = folders[model_type], traces[model_type]
    w = _saved(path)
    config = json.loads((path / "config.json").read_text())
    table = "embed_in.weight" if model_type == "gpt_neox" else "embed_tokens.weight"
    x = x_of(w, _embedded(path, w, table), config.get("layer_norm_eps") or config.get("rms_norm_eps"))
    fused = w[f"layers.0.{'attention' if model_type == 'gpt_neox' else 'self_attn'}.{module}.weight"]
    bias = w.get(f"layers.0.attention.{module}.bias")
    seen = set()
    for name in ("query", "key", "value"):
        for head in range(HEADS):
            formula = str(trace.stage(name, 0, head).formula)
            found = re.search(rf"rows (\d+)…(\d+) of the model's fused {module}$", formula)
            assert found, formula
            a, b = int(found.group(1)), int(found.group(2))
            assert b - a + 1 == D_H
            seen.add(a)
            expected = x @ fused[a:b + 1].T + (0 if bias is None else bias[a:b + 1])
            torch.testing.assert_close(trace.tensor(name, 0, head).double(), expected, atol=1e-5, rtol=1e-5)
    assert len(seen) == (3 * HEADS if model_type == "gpt_neox" else HEADS + 2 + 2)  # every row block, once
