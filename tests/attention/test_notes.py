"""Each source note's own example, from its sample on a fresh start, against the note's own code in torch.

The notes' layers are unseeded, so where a note printed random numbers the test builds the
note's own modules (nn.Linear with its bias, in float64), gives them the sample's seeded weights
and biases, and runs the note's forward; where it printed numbers that follow from its inputs
alone (note 002's lookup) the test checks those numbers.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from attn_tui.ask.samples import get_sample
from attn_tui.attention.engine import compute

F64 = torch.float64


def _close(got: torch.Tensor, expected: torch.Tensor) -> None:
    """float32 (the app) against float64 (the note's formula): float32's own rounding, no more."""
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


def _t(trace, name: str) -> torch.Tensor:
    return trace.tensor(name).to("cpu", F64)


def _linear(trace, weight: str, bias: str) -> nn.Linear:
    """The note's nn.Linear, holding the sample's seeded weight and bias."""
    w = trace.params[weight].to("cpu", F64)
    layer = nn.Linear(w.shape[1], w.shape[0], dtype=F64)
    with torch.no_grad():
        layer.weight.copy_(w)
        layer.bias.copy_(trace.params[bias].to("cpu", F64).reshape(-1))
    return layer


def test_note_000_plain_dot_product_on_korean() -> None:
    trace = compute(get_sample("note_000_dot").request)
    assert trace.query_tokens == ("나는", "학교에", "간다")
    assert "scaled" not in [s.name for s in trace.stages.values()]  # no √d_k in note 000
    # the note: inputs_embedded = embedding(ids); W_query = nn.Linear(4, 4) …; Q, K, V all (3, 4)
    x = trace.params["embedding"].to("cpu", F64)[[trace.meta.vocab.index(t) for t in trace.query_tokens]]  # (3, 4)
    W_query, W_key, W_value = (_linear(trace, f"W_{c}", f"b_{c}") for c in "qkv")  # noqa: N806  (the note's names)
    with torch.no_grad():
        q, k, v = W_query(x), W_key(x), W_value(x)
    assert all(layer.bias.abs().sum() > 0 for layer in (W_query, W_key, W_value))  # the biases are really there
    for name, expected in (("query", q), ("key", k), ("value", v)):
        _close(_t(trace, name), expected)
    # the note's attention(): scores = Q·Kᵀ, softmax, context = weights·V
    scores = q @ k.transpose(-2, -1)
    weights = F.softmax(scores, dim=-1)
    context = weights @ v
    assert tuple(trace.tensor("scores").shape) == (3, 3) and tuple(trace.tensor("output").shape) == (3, 4)
    _close(_t(trace, "scores"), scores)
    _close(_t(trace, "weights"), weights)
    _close(_t(trace, "output"), context)


def test_note_001_masked_self_attention_with_sinusoidal_positions() -> None:
    trace = compute(get_sample("note_001_masked").request)
    n, d = 4, 8
    # the note's PositionalEncoding: div_term = exp(arange(0, d, 2) · (−ln 10000 / d)); sin on even, cos on odd
    position = torch.arange(0, n, dtype=F64).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d, 2, dtype=F64) * (-math.log(10000.0) / d))
    pe = torch.zeros(n, d, dtype=F64)
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term)
    _close(_t(trace, "positional"), pe)
    x = trace.params["embedding"].to("cpu", F64)[[trace.meta.vocab.index(t) for t in trace.query_tokens]] + pe  # (4, 8)
    _close(_t(trace, "embedded_pos"), x)
    with torch.no_grad():  # the note's SelfAttention: self.query = nn.Linear(embed_dim, embed_dim) …
        q, k, v = (_linear(trace, f"W_{c}", f"b_{c}")(x) for c in "qkv")
    _close(_t(trace, "query"), q)
    # the note's SelfAttention.forward: scores = Q·Kᵀ/√d; masked_fill(mask == 0, −inf); softmax; weights·V
    scores = torch.matmul(q, k.transpose(-2, -1) / math.sqrt(d))
    causal = torch.tril(torch.ones(n, n, dtype=torch.bool))
    not_pad = torch.tensor([t != "<pad>" for t in trace.key_tokens])
    mask = (causal & not_pad[None, :]).to(F64)  # 1 = may attend, as in the note
    scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    _close(_t(trace, "weights"), weights)
    _close(_t(trace, "output"), weights @ v)
    w = trace.tensor("weights")
    assert (w[:, 3] == 0).all() and (w.triu(1) == 0).all()  # the <pad> key and every later word: exactly 0
    assert (F.scaled_dot_product_attention(q, k, v, attn_mask=mask.bool()) - _t(trace, "output")).abs().max() < 1e-5


def test_note_002_lookup_prints_the_notes_numbers() -> None:
    trace = compute(get_sample("note_002_lookup").request)
    # the note prints (numpy, suppress=True): [[0. 1. 0. 0.]] and [[10.  0.]]
    assert [[round(w, 4) for w in row] for row in trace.tensor("weights").tolist()] == [[0.0, 1.0, 0.0, 0.0]]
    assert [[round(o, 4) for o in row] for row in trace.tensor("output").tolist()] == [[10.0, 0.0]]
    # the note's scaled_dot_product_attention (TensorFlow), in torch: logits = QKᵀ/√depth (+ mask·−1e9), softmax
    q = torch.tensor([[0, 10, 0]], dtype=F64)
    k = torch.tensor([[10, 0, 0], [0, 10, 0], [0, 0, 10], [0, 0, 10]], dtype=F64)
    v = torch.tensor([[1, 0], [10, 0], [100, 5], [1000, 6]], dtype=F64)
    logits = q @ k.T / torch.sqrt(torch.tensor(k.shape[-1], dtype=F64))
    attention_weights = F.softmax(logits, dim=-1)
    _close(_t(trace, "weights"), attention_weights)
    _close(_t(trace, "output"), attention_weights @ v)
    assert trace.warnings == []


def test_note_004_bahdanau_one_decoder_state_over_encoder_outputs() -> None:
    sample = get_sample("note_004_bahdanau")
    trace = compute(sample.request)
    source = sample.request.source
    query = torch.tensor(source.q, dtype=F64)  # (1, hidden): the decoder's hidden state s
    keys = torch.tensor(source.k, dtype=F64)  # (5, hidden): the encoder's outputs h_j
    assert source.v == source.k  # the note's context is weights·keys: V is K
    # the note's BahdanauAttention: self.Wa, self.Ua = nn.Linear(hidden, hidden); self.Va = nn.Linear(hidden, 1)
    Wa, Ua = _linear(trace, "W_a", "b_W_a"), _linear(trace, "U_a", "b_U_a")  # noqa: N806  (the note's names)
    Va = nn.Linear(4, 1, dtype=F64)  # noqa: N806
    with torch.no_grad():
        Va.weight.copy_(trace.params["v_a"].to("cpu", F64)[None, :])
        Va.bias.copy_(trace.params["b_v_a"].to("cpu", F64))
        # forward(query, keys): scores = Va(tanh(Wa(query) + Ua(keys))); squeeze; softmax; bmm(weights, keys)
        scores = Va(torch.tanh(Wa(query[None]) + Ua(keys[None]))).squeeze(2).unsqueeze(1)  # (1, 1, 5)
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys[None])  # (1, 1, hidden)
    scores, weights, context = scores[0], weights[0], context[0]
    _close(_t(trace, "query_proj"), Wa(query).detach())
    _close(_t(trace, "scores"), scores)
    _close(_t(trace, "weights"), weights)
    _close(_t(trace, "output"), context)
    assert tuple(trace.tensor("weights").shape) == (1, 5) and trace.key_tokens == ("h1", "h2", "h3", "h4", "h5")


def test_note_samples_set_every_setting_they_depend_on() -> None:
    """Each note's sample names its mask, fill and temperature (and its projection and sizes where it has them),
    so nothing an earlier exercise chose can leak in: the sample's text says them, not the defaults."""
    from attn_tui.ask.samples import samples_dir

    for path in sorted(samples_dir().glob("2*_note_*.toml")):
        text = path.read_text(encoding="utf-8")
        for key in ("variant", "mask", "mask_fill", "temperature", "dtype"):
            assert f"\n{key} = " in text, (path.name, key)
        if "\nprojection = " in text or '"additive"' in text:  # the notes' nn.Linear layers have a bias
            assert "\nbias = true" in text, path.name
