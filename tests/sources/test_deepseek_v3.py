"""DeepSeek-V3 (family `deepseek_v3`) from a local folder: multi-head latent attention against transformers.

Tiny random-weight models built offline (tiny_models.py): one with the query's low-rank path and DeepSeek's
interleaved rotary pairs, one without the low-rank path (q_lora_rank None, V2-Lite's layout), rotate-half
and biased down-projections, with a mixture-of-experts layer after a dense one, one with YaRN's rope, and a
DeepSeek-V2 (its pairs turned as complex numbers).
Every layer's and head's weights equal transformers' eager `output_attentions`, the heads' outputs side by side
equal what the module's own o_proj reads (a forward hook), and the `mla` variant with a layer's weights copied in
equals it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk  # noqa: E402
from attn_tui.attention import params as params_module  # noqa: E402
from attn_tui.attention.engine import compute  # noqa: E402
from attn_tui.explain.cell import explain  # noqa: E402
from attn_tui.sources import run  # noqa: E402
from attn_tui.trace.ops import Place  # noqa: E402
from attn_tui.trace.stage import Trace  # noqa: E402
from tests.cli.test_cli import run_cli  # noqa: E402
from tests.conftest import x_matrix  # noqa: E402
from tests.sources.tiny_models import DEEPSEEK, TEXT, reference, tiny  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

CONFIGS = DEEPSEEK
TYPES = {"v2": "deepseek_v2"}  # each model's model_type; the others are deepseek_v3


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("deepseek")
    return {name: tiny(root, TYPES.get(name, "deepseek_v3"), config, name=name) for name, config in CONFIGS.items()}


@pytest.fixture(scope="module")
def traces(folders: dict[str, Path]) -> dict[str, Trace]:
    return {name: run(ModelAsk(str(path), TEXT)).trace for name, path in folders.items()}


def _module_run(path: Path) -> tuple[Any, dict[int, torch.Tensor], tuple[torch.Tensor, ...]]:
    """The model, what each layer's o_proj read (N, H·d_v) by a forward hook, and each layer's input."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    read: dict[int, torch.Tensor] = {}
    hooks = [layer.self_attn.o_proj.register_forward_hook(
        lambda _m, args, _out, i=i: read.__setitem__(i, args[0][0].detach())) for i, layer in enumerate(model.layers)]
    with torch.no_grad():
        out = model(**tokenizer(TEXT, return_tensors="pt"), output_hidden_states=True)
    for hook in hooks:
        hook.remove()
    return model, read, tuple(h[0] for h in out.hidden_states)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_every_layer_and_head_equals_output_attentions(folders: dict[str, Path], traces: dict[str, Trace],
                                                      name: str) -> None:
    expected = reference(folders[name])
    trace = traces[name]
    for layer, weights in enumerate(expected):
        for head in range(weights.shape[0]):
            assert torch.allclose(trace.tensor("weights", layer, head), weights[head], atol=1e-5), (layer, head)


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_heads_outputs_equal_what_the_modules_own_o_proj_reads(folders: dict[str, Path],
                                                                   traces: dict[str, Trace], name: str) -> None:
    _model, read, _hidden = _module_run(folders[name])
    trace = traces[name]
    for layer, expected in read.items():
        heads = torch.cat([trace.tensor("output", layer, h) for h in range(trace.heads)], dim=-1)  # (N, H·d_v)
        assert torch.allclose(heads, expected, atol=1e-5), layer


def test_the_stages_are_the_variants_and_the_cache_is_the_latent_and_the_rotary_key(traces: dict[str, Trace]
                                                                                    ) -> None:
    trace = traces["interleaved"]
    names = set(trace.names())
    assert {"q_latent", "q_latent_norm", "query_nope", "query_rope", "query_rot", "kv_latent", "kv_latent_norm",
            "key_rope", "key_rot", "latent_cache", "key_nope", "key", "value", "scores", "weights"} <= names
    assert trace.stage("latent_cache", 0).data.shape[-1] == 8 + 4
    caption = str(trace.stage("latent_cache", 0).formula)
    assert "12 numbers (48 bytes)" in caption and "80 numbers (320 bytes)" in caption
    plain = traces["plain_query"]
    assert "q_latent" not in plain.names() and "blocks.0.W_q" in plain.params and "blocks.0.b_dkv" in plain.params
    geometry = trace.geometry_of(0)
    assert geometry is not None and geometry.positional.interleaved and geometry.positional.fraction == 4 / 12


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_inspector_explains_each_family_stage(traces: dict[str, Trace], name: str) -> None:
    trace = traces[name]
    for place, stage in list(trace.stages.items()):
        if place.layer != 1 or place.head not in (None, 2):
            continue
        for index in ((0, 0), (5, 1), (stage.data.shape[0] - 1, stage.data.shape[1] - 1)):
            found = explain(trace, place, index)
            assert found.matches, (place.key, index, found.total, found.stored)


def _deinterleave(rows: torch.Tensor) -> torch.Tensor:
    """A rotary part's rows (…, d_rope, in) from DeepSeek's interleaved pairs to rotate-half's order."""
    return torch.cat([rows[..., 0::2, :], rows[..., 1::2, :]], dim=-2)


def test_the_variant_with_a_layers_weights_copied_in_equals_the_family(folders: dict[str, Path],
                                                                       traces: dict[str, Trace],
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The variant's sizes on width 32 with 4 heads are this model's (q_rank 16, kv_rank 8, 8 + 4 wide heads);
    its rotate-half meets the model's interleaved pairs once their rows are put in rotate-half's order."""
    model, read, hidden = _module_run(folders["interleaved"])
    layer = 1
    attn = model.layers[layer].self_attn
    x = model.layers[layer].input_layernorm(hidden[layer][None])[0].detach()  # (N, 32)
    w_qb = attn.q_b_proj.weight.detach().view(4, 12, 16)  # (H, d_nope + d_rope, q_rank)
    w_qb = torch.cat([w_qb[:, :8], _deinterleave(w_qb[:, 8:])], dim=1).reshape(48, 16)
    down = attn.kv_a_proj_with_mqa.weight.detach()  # (8 + 4, 32)
    up = attn.kv_b_proj.weight.detach().view(4, 16, 8)  # (H, d_nope + d_v, kv_rank)
    copied = {"W_qa": attn.q_a_proj.weight, "W_qb": w_qb, "W_dkv": down[:8], "W_kr": _deinterleave(down[8:]),
              "W_uk": up[:, :8].reshape(32, 8), "W_uv": up[:, 8:].reshape(32, 8), "W_o": attn.o_proj.weight,
              "q_norm": attn.q_a_layernorm.weight - 1, "kv_norm": attn.kv_a_layernorm.weight - 1}  # the norms: 1 + w
    drawn = params_module.ParamFactory.normal

    def normal(self: params_module.ParamFactory, name: str, *shape: int, std: float) -> torch.Tensor:
        if name not in copied:
            return drawn(self, name, *shape, std=std)
        tensor = copied[name].detach().to(self.dtype)
        assert tuple(tensor.shape) == shape, name
        self.record[name] = tensor
        return tensor

    monkeypatch.setattr(params_module.ParamFactory, "normal", normal)
    family = traces["interleaved"]
    for absorbed in (False, True):
        variant = compute(x_matrix(x.tolist(), variant="mla", heads=4, mask="causal", absorbed=absorbed))
        for h in range(4):
            assert torch.allclose(variant.tensor("weights", head=h), family.tensor("weights", layer, h), atol=1e-5)
        assert torch.allclose(variant.tensor("concat"), read[layer], atol=1e-5)
        assert torch.allclose(variant.tensor("projected"), read[layer] @ attn.o_proj.weight.detach().T, atol=1e-5)


def test_the_cli_opens_the_folder_and_writes_with_its_latent_cache_in_json(folders: dict[str, Path],
                                                                           capsys: pytest.CaptureFixture[str]) -> None:
    import json

    path = str(folders["interleaved"])
    code, out, _err = run_cli(capsys, "stages", "--model", path, "--text", "the cat sat", "--layer", "1", "--stage",
                              "latent_cache")
    assert code == 0 and "cache[t]" in out
    code, out, err = run_cli(capsys, "stages", "--model", path, "--text", "the cat sat", "--generate", "2",
                             "--format", "json")
    assert code == 0 and "Traceback" not in err
    document = json.loads(out)
    assert len(document["generated_ids"]) == 2
    places = {(s["name"], s["layer"], s["head"], s["step"]) for s in document["stages"]}
    for step in (0, 1):
        assert ("weights", 1, 3, step) in places and ("latent_cache", 1, None, step) in places


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_folder_estimate_follows_what_transformers_builds(tmp_path: Path, name: str) -> None:
    """The latent attention's and the experts' parameters from config.json (within 3%), before a tensor exists:
    each layer as transformers builds it, dense before `first_k_dense_replace` and with its experts after (the
    plain_query model has one of each, the others are dense)."""
    import json

    from attn_tui.sources import folder

    config = dict(CONFIGS[name], vocab_size=5000)
    model_type = TYPES.get(name, "deepseek_v3")
    (tmp_path / "config.json").write_text(json.dumps({"model_type": model_type, **config}))
    built = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(model_type, **config))
    real = sum(p.numel() for p in built.parameters())
    assert abs(folder.config_parameters(tmp_path) - real) / real < 0.03, (folder.config_parameters(tmp_path), real)


def test_a_saved_dense_model_is_not_counted_with_the_experts_its_config_names(folders: dict[str, Path]) -> None:
    """transformers saves every default, the 256 routed experts of DeepSeek-V3 too, beside first_k_dense_replace:
    a model whose layers are all dense is counted as the dense model it is (and its files hold it)."""
    import json

    from attn_tui.sources import folder

    path = folders["interleaved"]
    saved = json.loads((path / "config.json").read_text(encoding="utf-8"))
    assert saved["n_routed_experts"] > 0 and saved["first_k_dense_replace"] >= saved["num_hidden_layers"]
    real = sum(p.numel() for p in transformers.AutoModel.from_pretrained(path).parameters())
    assert abs(folder.config_parameters(path) - real) / real < 0.03, (folder.config_parameters(path), real)
    assert folder.weights_bytes(path) // 2 >= folder.config_parameters(path)  # what load_plan compares


def test_yarns_own_frequencies_and_scale_are_the_ones_shown(traces: dict[str, Trace]) -> None:
    """YaRN moves θ_i away from base^(−2i/d) and scales the scores by its mscale: the inspector reads the model's."""
    trace = traces["yarn"]
    assert not torch.allclose(trace.params["blocks.0.inv_freq"], 10000.0 ** (-torch.arange(0, 4, 2) / 4))
    found = explain(trace, Place("key_rot", 0), (5, 3))
    assert found.matches and "the model's own frequency" in "\n".join(found.lines)
    geometry = trace.geometry_of(0)
    assert geometry is not None and geometry.scale != pytest.approx(12 ** -0.5)
    assert "the model's own scaling, not 1/√12" in str(trace.stage("scaled", 0, 1).formula)
    assert "the model's own" not in str(traces["interleaved"].stage("scaled", 0, 1).formula)
