"""DiffLlama from a local folder against transformers' own modules: every head's map, each pair's difference and
the layer's o_proj input, and the `diff` variant fed the same heads equals the family."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk  # noqa: E402
from attn_tui.attention.engine import compute  # noqa: E402
from attn_tui.attention.params import ParamFactory  # noqa: E402
from attn_tui.explain.cell import explain  # noqa: E402
from attn_tui.sources import run  # noqa: E402
from attn_tui.trace.stage import Trace  # noqa: E402
from tests.conftest import matrices  # noqa: E402
from tests.sources.tiny_models import CONFIGS, TEXT, reference, tiny  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

# 4 query heads in 2 pairs over 2 key/value heads (grouped), 3 layers so λ_init differs by depth
CONFIG = CONFIGS["diffllama"]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny(tmp_path_factory.mktemp("diffllama"), "diffllama", CONFIG)


@pytest.fixture(scope="module")
def trace(folder: Path) -> Trace:
    return run(ModelAsk(str(folder), TEXT)).trace


@pytest.fixture(scope="module")
def module_outputs(folder: Path) -> tuple[tuple[torch.Tensor, ...], list[torch.Tensor]]:
    """transformers' eager output_attentions per layer, and what each layer's o_proj read (its forward hook)."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder)
    model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    seen: list[torch.Tensor] = []
    hooks = [layer.self_attn.o_proj.register_forward_hook(lambda _m, args, _o: seen.append(args[0][0]))
             for layer in model.layers]
    with torch.no_grad():
        out = model(**tokenizer(TEXT, return_tensors="pt"), output_attentions=True)
    for hook in hooks:
        hook.remove()
    return tuple(a[0] for a in out.attentions), seen


def test_the_family_is_routed_and_every_heads_map_equals_output_attentions(folder: Path, trace: Trace) -> None:
    assert trace.meta.family == "diffllama" and trace.heads == 4
    expected = reference(folder)
    for layer, head in itertools.product(range(3), range(4)):
        found = trace.tensor("weights", layer=layer, head=head)
        assert (found - expected[layer][head]).abs().max() <= 1e-5, (layer, head)


def test_each_pairs_difference_and_the_layer_output_equal_the_modules_own(trace: Trace, module_outputs) -> None:
    attentions, o_proj_inputs = module_outputs
    for layer in range(3):
        lam = trace.tensor("lambda", layer=layer, head=0)[0]
        assert float(lam[2]) == pytest.approx(0.8 - 0.6 * math.exp(-0.3 * layer), abs=1e-6)
        for p in range(2):
            diff = attentions[layer][p] - lam[3] * attentions[layer][p + 2]  # the module's two maps, combined
            assert (trace.tensor("diff_weights", layer=layer, head=p) - diff).abs().max() <= 1e-5, (layer, p)
        found = trace.tensor("concat", layer=layer)
        assert (found - o_proj_inputs[layer]).abs().max() <= 1e-5, layer


def test_the_maps_and_the_difference_are_explained_as_diffllama_pairs_them(trace: Trace) -> None:
    from attn_tui.present.explanations import explanation

    assert trace.meta.explains[0] == "diffllama"
    assert "h + H/2" in explanation("weights", trace.meta.explains)
    assert "h + H/2" in explanation("diff_weights", trace.meta.explains)


def test_the_lambda_terms_are_the_modules_parameters(folder: Path, trace: Trace) -> None:
    model = transformers.AutoModel.from_pretrained(folder, attn_implementation="eager")
    for layer in range(3):
        attn = model.layers[layer].self_attn
        one = math.exp(float((attn.lambda_q1 * attn.lambda_k1).sum().detach()))
        two = math.exp(float((attn.lambda_q2 * attn.lambda_k2).sum().detach()))
        row = trace.tensor("lambda", layer=layer, head=1)[0].tolist()
        assert row == pytest.approx([one, two, attn.lambda_init, one - two + attn.lambda_init], rel=1e-5)


def test_the_variant_fed_the_familys_heads_equals_the_family(trace: Trace, monkeypatch: pytest.MonkeyPatch) -> None:
    """The `diff` variant on typed matrices: each pair's rotated queries and keys as [head p | head p + H/2], its
    values side by side, and the layer's λ vectors copied in; every stage of the difference is the family's."""
    layer, half = 1, 2
    q = torch.cat([torch.cat([trace.tensor("query_rot", layer=layer, head=p),
                              trace.tensor("query_rot", layer=layer, head=p + half)], dim=1) for p in range(half)], 1)
    k = torch.cat([torch.cat([trace.tensor("key_rot", layer=layer, head=p),
                              trace.tensor("key_rot", layer=layer, head=p + half)], dim=1) for p in range(half)], 1)
    v = torch.cat([trace.tensor("value_pair", layer=layer, head=p) for p in range(half)], dim=1)
    request = matrices(q.tolist(), k.tolist(), v.tolist(), variant="diff", heads=half, mask="causal", depth=layer)
    copied = {name: trace.params[f"blocks.{layer}.{name}"] for name in
              ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")}
    original = ParamFactory.normal

    def normal(self: ParamFactory, name: str, *shape: int, std: float) -> torch.Tensor:
        if name in copied:  # the family's λ vectors instead of seeded ones
            self.record[name] = copied[name].to(self.dtype)
            return self.record[name]
        return original(self, name, *shape, std=std)

    monkeypatch.setattr(ParamFactory, "normal", normal)
    variant = compute(request)
    for p in range(half):
        assert (variant.tensor("weights_1", head=p) - trace.tensor("weights", layer=layer, head=p)).abs().max() <= 1e-5
        assert (variant.tensor("weights_2", head=p)
                - trace.tensor("weights", layer=layer, head=p + half)).abs().max() <= 1e-5
        for name in ("lambda", "diff_weights", "diff_output", "head_norm"):
            assert (variant.tensor(name, head=p) - trace.tensor(name, layer=layer, head=p)).abs().max() <= 1e-5, name
    assert (variant.tensor("concat") - trace.tensor("concat", layer=layer)).abs().max() <= 1e-5


def test_every_cell_of_the_pairs_stages_is_recomputed_by_the_inspector(trace: Trace) -> None:
    for name in ("value_pair", "lambda", "diff_weights", "diff_output", "head_norm", "concat"):
        stage = trace.stage(name, layer=2, head=1 if name != "concat" else None)
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert arithmetic.matches, (stage.key, index, arithmetic)
