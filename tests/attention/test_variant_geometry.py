"""Every variant records its one layer's geometry, and that record alone redoes its weights.

The reference is written here in float64 from the recorded q and k and the geometry
(mask kind and window, rotary base, ALiBi slopes, scale, sink), not from the engine's code,
so a geometry that says something other than what the variant computed fails.
"""

from __future__ import annotations

import math

import pytest
import torch

from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.attention.variants.alibi.compute import SLOPES
from attn_tui.attention.variants.sink.compute import SINK
from attn_tui.trace.geometry import LayerGeometry
from attn_tui.trace.stage import Trace
from tests.conftest import sentence

TEXT = "the cat sat on the warm mat"


def _rotate_half(x: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate-half RoPE in float64, written out pair by pair: (x_i, x_{i+d/2}) turned by p·base^(−2i/d)."""
    n, d = x.shape
    out = x.clone()
    for p in range(n):
        for i in range(d // 2):
            angle = p * base ** (-2 * i / d)
            a, b = x[p, i].item(), x[p, i + d // 2].item()
            out[p, i] = a * math.cos(angle) - b * math.sin(angle)
            out[p, i + d // 2] = b * math.cos(angle) + a * math.sin(angle)
    return out


def _reference(trace: Trace, geometry: LayerGeometry, head: int | None) -> torch.Tensor:
    """softmax of the geometry's scores for one head, float64: (L, S)."""
    q = trace.tensor("query", head=head).double()
    k = trace.tensor("key", head=head).double()
    if geometry.positional.kind == "rotary":
        q, k = _rotate_half(q, geometry.positional.base), _rotate_half(k, geometry.positional.base)
    scores = q @ k.T * geometry.scale
    n, s = scores.shape
    i, j = torch.arange(n)[:, None], torch.arange(s)[None, :]
    if geometry.positional.kind == "alibi":
        slope = geometry.of_head(head or 0).heads[0].slope
        assert slope is not None
        scores = scores - slope * (i - j).abs()
    allowed = torch.ones(n, s, dtype=torch.bool)
    if geometry.mask in ("causal", "sliding"):
        allowed &= j <= i
    if geometry.window is not None:
        allowed &= j > i - geometry.window
    scores = scores / geometry.temperature
    scores = scores.masked_fill(~allowed, -math.inf)
    if geometry.sink:
        sink = trace.params[SINK].double()[head or 0]
        full = torch.cat([scores, sink.expand(n, 1)], dim=1).softmax(-1)
        return full[:, :-1]
    return scores.softmax(-1)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_variant_records_its_geometry(variant: str) -> None:
    trace = compute(sentence("a b c", variant=variant, dim=8, heads=2))
    geometry = trace.geometry_of(0)
    causal = variant == "linear"  # its recurrence reads the tokens in order, whatever the mask setting
    assert geometry is not None and geometry.mask == ("causal" if causal else "full")
    assert geometry.positional.kind in ("none", "rotary", "alibi")
    assert trace.mask_of(0) is None


@pytest.mark.parametrize("variant", ["scaled_dot", "rope", "alibi", "sink", "flash", "multihead", "gqa", "dot"])
@pytest.mark.parametrize("mask", ["none", "causal", "sliding"])
def test_the_geometry_alone_redoes_the_weights(variant: str, mask: str) -> None:
    trace = compute(sentence(TEXT, variant=variant, dim=8, heads=2, mask=mask, window=2, temperature=1.5,
                             rope_base=500.0, positional=variant in ("scaled_dot", "dot")))
    geometry = trace.geometry_of(0)
    assert geometry is not None
    assert geometry.mask == {"none": "full"}.get(mask, mask)
    assert geometry.window == (2 if mask == "sliding" else None)
    assert geometry.positional.kind == {"rope": "rotary", "alibi": "alibi"}.get(
        variant, "absolute" if variant in ("scaled_dot", "dot") else "none")
    heads = [None] if trace.heads == 1 else list(range(trace.heads))
    for head in heads:
        reference = _reference(trace, geometry, head)
        if variant == "flash":  # no weights stage: its output is the weights times V
            torch.testing.assert_close(trace.tensor("output").double(), reference @ trace.tensor("value").double(),
                                       atol=1e-5, rtol=1e-4)
        else:
            torch.testing.assert_close(trace.tensor("weights", head=head).double(), reference, atol=1e-5, rtol=1e-4)


def test_scale_is_the_factor_on_q_k_and_the_temperature_is_its_own() -> None:
    scaled = compute(sentence(TEXT, variant="scaled_dot", dim=16, temperature=2.0)).geometry_of(0)
    dot = compute(sentence(TEXT, variant="dot", dim=16)).geometry_of(0)
    multi = compute(sentence(TEXT, variant="multihead", dim=16, heads=4)).geometry_of(0)
    assert scaled is not None and dot is not None and multi is not None
    assert scaled.scale == pytest.approx(1 / math.sqrt(16)) and scaled.temperature == 2.0
    assert dot.scale == 1.0 and multi.scale == pytest.approx(1 / math.sqrt(4))


def test_alibi_slopes_are_per_head_entries_and_the_sink_is_named() -> None:
    trace = compute(sentence(TEXT, variant="alibi", dim=16, heads=4))
    geometry = trace.geometry_of(0)
    assert geometry is not None
    assert [h.slope for h in geometry.heads] == pytest.approx(trace.params[SLOPES].tolist())
    assert [h.slope for h in geometry.heads] == pytest.approx([2 ** -2, 2 ** -4, 2 ** -6, 2 ** -8])
    sink = compute(sentence(TEXT, variant="sink", dim=16, heads=2)).geometry_of(0)
    assert sink is not None and sink.sink and not geometry.sink
