"""Model families as adapters over one tracer: a tiny random-weight model of each family, saved as a folder
and opened through the door, traces every layer's and head's weights as transformers' own eager
`output_attentions` has them; a model whose layers alternate a sliding window and global attention keeps
each layer's own mask and geometry."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk  # noqa: E402
from attn_tui.explain.cell import explain  # noqa: E402
from attn_tui.sources import folder, run  # noqa: E402
from attn_tui.sources.families import families, family_for, routing  # noqa: E402
from attn_tui.trace.ops import Place  # noqa: E402
from tests.sources.tiny_models import CONFIGS as FAMILIES  # noqa: E402
from tests.sources.tiny_models import TEXT, reference, tiny  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

CONFIGS = {t: FAMILIES[t] for t in ("bert", "gpt2", "llama", "qwen2", "gemma2", "gemma3_text")}


def _tiny(tmp_path: Path, model_type: str) -> Path:
    return tiny(tmp_path, model_type, CONFIGS[model_type])


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_layer_and_head_equals_output_attentions(tmp_path: Path, model_type: str) -> None:
    path = _tiny(tmp_path, model_type)
    trace = run(ModelAsk(str(path), TEXT)).trace
    expected = reference(path)
    assert trace.meta.family == routing()[model_type]  # type: ignore[union-attr]
    assert len(expected) == trace.layers
    if model_type == "qwen2":  # max_window_layers 1: layer 0 global, layer 1 slides (its window is in the weights)
        assert [trace.mask_of(layer).window for layer in range(2)] == [None, 3]  # type: ignore[union-attr]
    for layer, weights in enumerate(expected):
        for head in range(trace.heads):
            got = trace.tensor("weights", layer, head)
            torch.testing.assert_close(got, weights[head], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(torch.stack([trace.tensor("output", layer, h) for h in range(trace.heads)]).sum(),
                                   torch.stack([weights[h] @ trace.tensor("value", layer, h)
                                                for h in range(trace.heads)]).sum(), atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("model_type", ["gemma2", "gemma3_text"])
def test_layers_alternate_a_sliding_window_and_global_attention(tmp_path: Path, model_type: str) -> None:
    trace = run(ModelAsk(str(_tiny(tmp_path, model_type)), TEXT)).trace
    n = len(trace.query_tokens)
    assert n > 4  # longer than the window of 3, so the window masks something
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    band = torch.arange(n)[None, :] > torch.arange(n)[:, None] - 3
    for layer in range(trace.layers):
        geometry = trace.geometry_of(layer)
        mask = trace.mask_of(layer)
        assert geometry is not None and mask is not None and geometry.positional.kind == "rotary"
        assert geometry.scale == pytest.approx(8 ** -0.5)
        if layer % 2 == 0:
            assert (geometry.mask, geometry.window, mask.window) == ("sliding", 3, 3)
            assert torch.equal(mask.allowed, causal & band)
            assert str(mask.reasons(n - 1, 0)[0]).startswith("sliding window")
        else:
            assert (geometry.mask, geometry.window) == ("causal", None)
            assert torch.equal(mask.allowed, causal)
        for head in range(trace.heads):  # the window's keys get no weight at all, every other key some
            assert torch.equal(trace.tensor("weights", layer, head) > 0, mask.allowed)
    assert trace.mask is not None and torch.equal(trace.mask.allowed, causal)  # today's callers: the global mask


def test_gemma2_caps_its_scores_and_gemma3_norms_each_heads_q_and_k(tmp_path: Path) -> None:
    capped = run(ModelAsk(str(_tiny(tmp_path, "gemma2")), TEXT)).trace
    names = capped.names()
    assert names.index("scaled") < names.index("capped") < names.index("masked") and "query_norm" not in names
    assert capped.geometry_of(1).soft_cap == 2.0  # type: ignore[union-attr]
    scaled, cap = capped.tensor("scaled", 1, 0), capped.tensor("capped", 1, 0)
    assert float(cap.abs().max()) <= 2.0 < float(scaled.abs().max())  # the cap bends the large scores
    torch.testing.assert_close(cap, 2.0 * torch.tanh(scaled / 2.0))
    normed = run(ModelAsk(str(_tiny(tmp_path, "gemma3_text")), TEXT)).trace
    names = normed.names()
    assert names.index("query") < names.index("query_norm") < names.index("query_rot") < names.index("scores")
    assert "capped" not in names and normed.geometry_of(0).soft_cap is None  # type: ignore[union-attr]
    bases = [normed.geometry_of(layer).positional.base for layer in range(4)]  # type: ignore[union-attr]
    assert bases == [10000.0, 1_000_000.0] * 2  # each kind of layer turns by its own base
    q = normed.tensor("query", 0, 1).double()  # (N, d_h) before the norm
    weight = 1 + normed.params["blocks.0.q_norm"].double()
    expected = q / (q.pow(2).mean(-1, keepdim=True) + 1e-6).sqrt() * weight
    torch.testing.assert_close(normed.tensor("query_norm", 0, 1).double(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("model_type", "names"), [("gemma3_text", ("query_norm", "key_norm", "query_rot", "key_rot")),
                                                    ("gemma2", ("capped", "query_rot"))])
def test_the_inspector_explains_the_norm_the_rotation_and_the_cap(tmp_path: Path, model_type: str,
                                                                  names: tuple[str, ...]) -> None:
    trace = run(ModelAsk(str(_tiny(tmp_path, model_type)), TEXT)).trace
    for name in names:
        for index in ((0, 0), (3, 5), (5, 2)):
            found = explain(trace, Place(name, 1, 2), index)
            assert found.matches, (name, index, found)


def test_each_family_declares_the_model_types_it_reads_and_an_unknown_one_is_refused(tmp_path: Path) -> None:
    assert family_for("bert").name == "bert" and family_for("gpt2").name == "gpt2"  # type: ignore[union-attr]
    assert family_for("llama").name == family_for("qwen2").name == "llama"  # type: ignore[union-attr]
    assert family_for("gemma2").name == "gemma2" and family_for("gemma3_text").name == "gemma3"  # type: ignore[union-attr]
    assert family_for("t5") is None
    assert set(routing()) == {model_type for family in families().values() for model_type in family.reads}


@pytest.mark.parametrize("interleaved", [False, True])
def test_a_partial_or_interleaved_rotation_and_a_layer_norm_equal_a_float64_loop(tmp_path: Path,
                                                                                 interleaved: bool) -> None:
    """The tracer's rotary of half a head (rotate-half or interleaved pairs) and a per-head LayerNorm, as a family
    that declared them would get them: every cell checked against a loop in float64, and explained."""
    from dataclasses import replace

    from attn_tui.sources.families import llama
    from attn_tui.sources.families.shared.tracer import trace_run
    from attn_tui.sources.families.spec import Family, NormSpec, RotarySpec
    from attn_tui.sources.transformer import model_run

    torch.manual_seed(1)
    d_h, base = 8, 500.0
    norm = NormSpec("layer", torch.randn(d_h), 1e-5, bias=torch.randn(d_h))

    def layer(run_: Any, index: int) -> Any:
        return replace(llama.layer(run_, index), rotary=RotarySpec(base, fraction=0.5, interleaved=interleaved),
                       k_norm=norm)

    model_run_ = model_run(str(_tiny(tmp_path, "llama")), TEXT)
    trace = trace_run(model_run_, 1, 0, Family("partial", True, layer, llama.kv_heads, llama.rope_base))
    k = trace.tensor("key", 1, 3).double()  # (N, d_h) before the norm
    mean, var = k.mean(-1, keepdim=True), k.var(-1, unbiased=False, keepdim=True)
    normed = (k - mean) / (var + 1e-5).sqrt() * norm.weight.double() + norm.bias.double()
    torch.testing.assert_close(trace.tensor("key_norm", 1, 3).double(), normed, atol=1e-5, rtol=1e-5)
    expected = normed.clone()
    for p in range(k.shape[0]):
        for i in range(2):  # 4 of 8 dimensions turned: 2 pairs
            a, b = (2 * i, 2 * i + 1) if interleaved else (i, i + 2)
            angle = p * base ** (-2 * i / 4)
            expected[p, a] = normed[p, a] * math.cos(angle) - normed[p, b] * math.sin(angle)
            expected[p, b] = normed[p, b] * math.cos(angle) + normed[p, a] * math.sin(angle)
    torch.testing.assert_close(trace.tensor("key_rot", 1, 3).double(), expected, atol=1e-5, rtol=1e-5)
    q = trace.tensor("query_rot", 1, 3).double()
    weights = torch.softmax((q @ expected.T * trace.geometry_of(1).scale).masked_fill(  # type: ignore[union-attr]
        ~torch.ones(len(q), len(q), dtype=torch.bool).tril(), -math.inf), dim=-1)
    torch.testing.assert_close(trace.tensor("weights", 1, 3).double(), weights, atol=1e-5, rtol=1e-5)
    geometry = trace.geometry_of(1)
    assert geometry is not None and geometry.positional.fraction == 0.5
    assert geometry.positional.interleaved == interleaved
    for name in ("key_norm", "key_rot", "query_rot"):
        for index in ((0, 0), (4, 1), (6, 3), (7, 6)):  # turned dimensions and ones passed through
            assert explain(trace, Place(name, 1, 3), index).matches, (name, index)


@pytest.mark.parametrize("model_type", ["llama", "gemma2", "gemma3_text"])
def test_the_folder_estimate_follows_what_transformers_builds_for_a_decoder(tmp_path: Path, model_type: str) -> None:
    """config.json's sizes (head_dim, shared key/value heads, a gated MLP) give the parameters transformers
    allocates, within the norms (3%), before it builds one."""
    import json

    config = dict(CONFIGS[model_type], vocab_size=5000, hidden_size=64)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type, **config}))
    built = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(model_type, **config))
    real = sum(p.numel() for p in built.parameters())
    assert abs(folder.config_parameters(tmp_path) - real) / real < 0.03, (folder.config_parameters(tmp_path), real)


def test_a_decoder_config_with_a_huge_head_width_is_refused_before_transformers_builds_it(tmp_path: Path,
                                                                                         capsys) -> None:
    import json

    from attn_tui.cli import main

    path = _tiny(tmp_path, "llama")
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, "head_dim": 10**8}))  # 3·10⁹ weights per layer
    capsys.readouterr()  # saving the tiny model wrote its own progress
    with pytest.raises(SystemExit) as exited:
        main(["stages", "--model", str(path), "--text", "a b", "--max-memory", "2G"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "weights" in err, err


@pytest.mark.parametrize(("model_type", "change", "fragment"), [
    ("gemma2", {"auto_map": {"AutoModel": "modeling_evil.Model"}}, "never runs a model folder's code"),
    ("llama", {"model_type": "t5"}, "has model_type 't5'; attn-tui traces"),
])
def test_a_hostile_decoder_folder_is_one_line_and_exit_2(tmp_path: Path, capsys, model_type: str,
                                                         change: dict[str, Any], fragment: str) -> None:
    """The folder rules hold for every family: code shipped in the folder is refused, an unknown model_type is
    named, before transformers reads anything."""
    import json

    from attn_tui.cli import main

    path = _tiny(tmp_path, model_type)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, **change}))
    (path / "modeling_evil.py").write_text("raise SystemExit('the folder ran its code')\n")
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(["stages", "--model", str(path), "--text", "a b"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and fragment in err, err
