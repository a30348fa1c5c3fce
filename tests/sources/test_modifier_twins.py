"""The synthetic twins: a variant with one layer's weights of a real family copied in equals that family's stages.

Gemma 2 is `rope --softcap`, Qwen3 and Gemma 3 are `rope --qk-norm rms` (Gemma 3's norm scales by 1 + w, so
its weight is copied as 1 + w), OLMo-2 is `--qk-norm rms-all`. Each family is a tiny random-weight model
(tiny_models.py) traced through the door; its own trace's input X and weights are handed to the variant
(the seeded parameters replaced by the copied ones), and every stage both have must agree to 1e-5 (relative
where a float32 score is large).
A single head covers the whole chain, rotation and all (the `rope` variant has one head); several heads
through `gqa`, which does not rotate, cover each head's projection and norm (over the whole projection, for
OLMo-2, where the heads' dimensions share one mean).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk, Settings, VariantAsk, XInput
from attn_tui.attention.engine import compute
from attn_tui.attention.params import ParamFactory
from attn_tui.sources import run
from attn_tui.trace.stage import Trace
from tests.sources.tiny_models import SMALL, TEXT, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]

ONE = dict(SMALL, num_attention_heads=1, num_key_value_heads=1, head_dim=32, rms_norm_eps=1e-6)  # one head, d = 32
WIDE = dict(sliding_window=64, query_pre_attn_scalar=32)  # Gemma: no window shorter than the text, 1/√d_h
SINGLE: dict[str, tuple[str, dict[str, Any], dict[str, object]]] = {
    "gemma2": ("gemma2", dict(ONE, **WIDE, attn_logit_softcapping=2.0, final_logit_softcapping=None),
               {"softcap": 2.0}),
    "qwen3": ("qwen3", ONE, {"qk_norm": "rms"}),
    "gemma3": ("gemma3_text", dict(ONE, **WIDE), {"qk_norm": "rms"}),
    "olmo2": ("olmo2", ONE, {"qk_norm": "rms-all"}),
}
SHARED = ("query", "key", "value", "query_norm", "key_norm", "query_rot", "key_rot", "scores", "scaled", "capped",
          "masked", "weights", "output")


def copied_in(monkeypatch: pytest.MonkeyPatch, given: dict[str, torch.Tensor]) -> None:
    """The variant's seeded parameters named in `given` become those tensors (a layer's weights copied in)."""
    weight, ones_near = ParamFactory.weight, ParamFactory.ones_near

    def take(self: ParamFactory, name: str, drawn: torch.Tensor) -> torch.Tensor:
        if name not in given:
            return drawn
        assert given[name].shape == drawn.shape, (name, given[name].shape, drawn.shape)
        self.record[name] = given[name].to(self.dtype)
        return self.record[name]

    monkeypatch.setattr(ParamFactory, "weight", lambda self, name, *shape: take(self, name, weight(self, name, *shape)))
    monkeypatch.setattr(ParamFactory, "ones_near",
                        lambda self, name, *args: take(self, name, ones_near(self, name, *args)))


def _family(tmp_path: Path, model_type: str, config: dict[str, Any]) -> Trace:
    return run(ModelAsk(str(tiny(tmp_path, model_type, config)), TEXT)).trace


def _twin(monkeypatch: pytest.MonkeyPatch, family: Trace, variant: str, settings: dict[str, object],
          heads: int = 1, kv_heads: int = 1) -> Trace:
    p = family.params
    offset = 1.0 if family.meta.family == "gemma3" else 0.0  # type: ignore[union-attr]  # Gemma scales by 1 + w
    given = {name: p[f"blocks.0.{name}"] for name in ("W_q", "W_k", "W_v")}
    given |= {name: p[f"blocks.0.{name}"] + offset for name in ("q_norm", "k_norm") if f"blocks.0.{name}" in p}
    copied_in(monkeypatch, given)
    x = family.inputs["blocks.0.X"]  # (N, d): what the family's projections read
    base = family.geometry[0].positional.base or 10000.0
    return compute(VariantAsk(XInput(x.tolist(), family.query_tokens),
                           Settings.of(variant=variant, mask="causal", device="cpu", heads=heads, kv_heads=kv_heads,
                                       rope_base=base, **settings)))


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_the_variant_with_the_familys_weights_is_the_family(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           name: str) -> None:
    model_type, config, settings = SINGLE[name]
    family = _family(tmp_path, model_type, config)
    twin = _twin(monkeypatch, family, "rope", settings)
    family_names, twin_names = set(family.names()), set(twin.names())
    assert [n for n in SHARED if n in family_names] == [n for n in SHARED if n in twin_names]  # the same stages
    assert ("capped" in twin_names) == ("softcap" in settings) and ("key_norm" in twin_names) == ("qk_norm" in settings)
    for stage in (n for n in SHARED if n in family_names):
        got, expected = twin.tensor(stage), family.tensor(stage, 0, 0)
        torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5, msg=f"{name} {stage}")  # float32 scores ~100


@pytest.mark.parametrize("model_type,norm", [("olmo2", "rms-all"), ("qwen3", "rms")])
def test_several_heads_norm_as_the_family_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model_type: str,
                                               norm: str) -> None:
    config = dict(SMALL, num_key_value_heads=2, head_dim=8, rms_norm_eps=1e-6)  # 4 query heads over 2 kv heads
    family = _family(tmp_path, model_type, config)
    twin = _twin(monkeypatch, family, "gqa", {"qk_norm": norm}, heads=4, kv_heads=2)
    for head in range(4):
        for stage in ("query", "key", "value", "query_norm", "key_norm"):
            got, expected = twin.tensor(stage, head=head), family.tensor(stage, 0, head)
            torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5, msg=f"{model_type} {stage} {head}")
    if norm == "rms-all":  # one mean over all 32 dimensions, not one per head
        whole = torch.cat([twin.tensor("query_norm", head=h) for h in range(4)], dim=-1) / twin.params["q_norm"]
        assert torch.allclose(whole.pow(2).mean(-1), torch.ones(whole.shape[0]), atol=1e-3)
    else:
        per_head = twin.tensor("query_norm", head=1) / twin.params["q_norm"]
        assert torch.allclose(per_head.pow(2).mean(-1), torch.ones(per_head.shape[0]), atol=1e-3)
