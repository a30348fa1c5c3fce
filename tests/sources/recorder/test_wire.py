"""A recorded trace across the process boundary of `attn-tui trace`: read back equal, and never run as code."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.i18n import Msg, Plural
from attn_tui.sources.recorder.wire import (
    DOCUMENT,
    TENSORS,
    WireError,
    decode_message,
    encode_message,
    read_trace,
    write_trace,
)
from attn_tui.trace.ops import Masking
from attn_tui.trace.stage import Trace
from tests.sources.recorder import modules as m
from tests.sources.recorder.test_parity import every_cell_matches


def _recorded() -> Trace:
    """Two modules with parameters, a causal mask, an SDPA with a boolean mask: most ops and a MaskSpec."""
    torch.manual_seed(3)
    encoder, decoder = m.SelfAttention(4), m.BahdanauAttention(4)
    x = torch.randn(1, 3, 4)
    with attn_tui.record(tokens=["나는", "학생", "입니다"]) as rec:
        keys, _ = encoder(x, torch.tril(torch.ones(3, 3)))
        decoder(torch.randn(1, 1, 4), keys)
        q = torch.randn(1, 2, 3, 4)
        F.scaled_dot_product_attention(q, q, q, attn_mask=torch.tensor([[True, False, True]] * 3))
    return rec.trace


def test_a_trace_reads_back_equal(tmp_path: Path) -> None:
    sent = _recorded()
    write_trace(sent, tmp_path)
    back = read_trace(tmp_path)
    assert back.meta == sent.meta and back.query_tokens == ("나는", "학생", "입니다")
    assert list(back.stages) == list(sent.stages)
    for place, stage in sent.stages.items():
        got = back.stages[place]
        assert torch.equal(got.tensor, stage.tensor) and got.tensor.dtype == stage.tensor.dtype, place.key
        if isinstance(stage.op, Masking) and stage.op.mask is not None:  # a MaskSpec compares by identity
            assert isinstance(got.op, Masking) and got.op.mask is not None and got.op.fill == stage.op.fill
            assert torch.equal(got.op.mask.allowed, stage.op.mask.allowed), place.key
        else:
            assert got.op == stage.op, place.key
        assert (got.axes, got.origin, str(got.formula)) == (stage.axes, stage.origin, str(stage.formula))
    assert back.params.keys() == sent.params.keys()
    assert all(torch.equal(back.params[k], sent.params[k]) for k in sent.params)
    assert back.warnings == sent.warnings and back.stats == sent.stats
    masked = [s for s in back if s.name == "masked"]
    assert masked and all(back.mask_of(s) is not None for s in masked)
    every_cell_matches(back)  # the inspector recomputes every cell from what came back alone


def test_messages_stay_translatable() -> None:
    plural = Plural("{n} key", "{n} keys", n=3)
    nested = Msg("{what} failed", what=Msg("the layout"))
    assert decode_message(json.loads(json.dumps(encode_message(plural)))) == plural
    assert decode_message(json.loads(json.dumps(encode_message(nested)))) == nested
    assert decode_message(encode_message("plain")) == "plain"


def test_only_attn_tuis_own_types_are_rebuilt(tmp_path: Path) -> None:
    """A document naming any other class, or a tensors file holding a pickled object, is refused, not run."""
    write_trace(_recorded(), tmp_path)
    document = json.loads((tmp_path / DOCUMENT).read_text())
    document["meta"]["kind"] = "Popen"
    (tmp_path / DOCUMENT).write_text(json.dumps(document))
    with pytest.raises(WireError, match="unknown kind 'Popen'"):
        read_trace(tmp_path)

    class Boom:
        def __reduce__(self):
            return (Path.touch, (tmp_path / "ran",))

    (tmp_path / TENSORS).write_bytes(pickle.dumps([Boom()], protocol=2))
    with pytest.raises(WireError):
        read_trace(tmp_path)
    assert not (tmp_path / "ran").exists()
