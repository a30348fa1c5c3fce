"""A softmax over a layer's outputs (a classifier's classes, a sampler's vocabulary) is left out of the trace.

Its scores are a projection onto a parameter's rows, the softmax over those rows (recorder/logits.py). Attention
stays whatever else the code computes: a product of two activations, Bahdanau's energy scored per key (a linear to
one number for each key), several scores per token softmaxed over the tokens, Luong's location scores that then
weight the values. A file whose only softmax is a classifier's ends with the usual "no attention" line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from attn_tui.sources.recorder.build import NoAttentionError
from tests.cli.test_cli import run_cli
from tests.sources.recorder.test_parity import every_cell_matches


class AttendThenClassify(nn.Module):
    """One head of self-attention, then a classifier over its last token: two softmaxes, one attention."""

    def __init__(self, dim: int, classes: int) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        scores = self.q(x) @ self.k(x).transpose(-2, -1) / x.shape[-1] ** 0.5
        attn = F.softmax(scores, dim=-1)
        out = attn @ self.v(x)
        probs = F.softmax(self.head(out[:, -1]), dim=-1)  # (batch, classes)
        return attn, probs


def sample_by_hand(hidden: torch.Tensor, embed: torch.Tensor, seen: torch.Tensor) -> torch.Tensor:
    """A sampler as generate() writes it: tied-embedding logits, a repetition penalty through a padded scatter,
    a temperature, top-k by masked_fill; its softmax runs over the vocabulary."""
    logits = (hidden @ embed.T)[:, -1].float()  # (batch, vocab)
    padded = F.pad(logits, (0, 1))
    picked = torch.gather(padded, 1, seen)
    penalised = padded.scatter(1, seen, torch.where(picked < 0, picked * 1.3, picked / 1.3))[..., :embed.shape[0]]
    scaled = penalised / 0.7
    kept = scaled.masked_fill(scaled < torch.topk(scaled, 5)[0][..., -1:], -float("inf"))
    return torch.softmax(kept, dim=-1)


def test_a_classifiers_softmax_is_left_out_and_the_attention_kept() -> None:
    torch.manual_seed(0)
    model = AttendThenClassify(8, 5)
    x = torch.randn(2, 4, 8)
    with torch.no_grad(), attn_tui.record() as rec:
        attn, probs = model(x)
    trace = rec.trace
    assert trace.meta.modules == ("AttendThenClassify",) and trace.meta.calls == (1,)
    assert {tuple(s.shape) for s in trace if s.name == "weights"} == {(4, 4)}  # never the (1, 5) of the classes
    for b in range(2):
        assert torch.equal(trace.tensor("weights", step=b), attn[b])
    assert probs.shape == (2, 5)
    every_cell_matches(trace)


def test_a_hand_written_sampler_over_tied_embeddings_is_no_attention() -> None:
    torch.manual_seed(1)
    embed = nn.Embedding(50, 8)
    hidden = torch.randn(1, 3, 8)
    seen = torch.tensor([[1, 7, 7, 49]])
    with torch.no_grad(), attn_tui.record() as rec:
        probs = sample_by_hand(hidden, embed.weight, seen)
    assert torch.allclose(probs.sum(-1), torch.ones(1)) and int((probs > 0).sum()) == 5
    with pytest.raises(NoAttentionError, match="reads a layer's outputs"):
        _ = rec.trace


def test_the_sampler_beside_attention_leaves_only_the_attention() -> None:
    torch.manual_seed(2)
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 4)
    embed = torch.nn.Parameter(torch.randn(40, 4))
    with torch.no_grad(), attn_tui.record() as rec:
        out = F.scaled_dot_product_attention(q, k, v)
        sample_by_hand(out[0, :1], embed, torch.tensor([[3]]))
    trace = rec.trace
    assert len(trace.meta.modules) == 1 and trace.meta.calls == (1,) and set(trace.names()) >= {"weights", "output"}
    expected = torch.softmax(q[0] @ k[0].transpose(-1, -2) / 2.0, dim=-1)  # (heads, L, S)
    for h in range(2):
        torch.testing.assert_close(trace.tensor("weights", head=h), expected[h], atol=1e-6, rtol=0)
        assert torch.equal(trace.tensor("output", head=h), out[0, h])


class EnergyOnly(nn.Module):
    """Bahdanau's energy scored per key (a linear to one number each), softmax over the keys; only the weights are
    returned, so no product with values says it is attention: the linear to one number does."""

    def __init__(self, units: int) -> None:
        super().__init__()
        self.W1, self.W2, self.V = nn.Linear(units, units), nn.Linear(units, units), nn.Linear(units, 1)

    def forward(self, query: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        score = self.V(torch.tanh(self.W1(query.unsqueeze(1)) + self.W2(values)))  # (batch, keys, 1)
        return F.softmax(score, dim=1)


class TokenPooling(nn.Module):
    """Structured self-attention (Lin et al. 2017): r rows of scores per token, each softmaxed over the tokens."""

    def __init__(self, dim: int, rows: int) -> None:
        super().__init__()
        self.W1, self.W2 = nn.Linear(dim, dim, bias=False), nn.Linear(dim, rows, bias=False)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return F.softmax(self.W2(torch.tanh(self.W1(h))).transpose(1, 2), dim=-1)  # (batch, rows, tokens)


class LuongLocation(nn.Module):
    """Luong's location scores: softmax(W_a h_t) over the source positions, then a weighted sum of their states."""

    def __init__(self, dim: int, max_len: int) -> None:
        super().__init__()
        self.Wa = nn.Linear(dim, max_len)

    def forward(self, h_t: torch.Tensor, encoder: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        weights = F.softmax(self.Wa(h_t), dim=-1)  # (batch, max_len)
        return torch.bmm(weights.unsqueeze(1), encoder).squeeze(1), weights


def test_queries_and_keys_that_require_grad_are_no_layers_weights() -> None:
    """A toy's `q` and `k` made with requires_grad=True (a gradient check, a saliency map) are autograd leaves, not a
    module's parameters: their product's softmax is attention, with no values after it."""
    g = torch.Generator().manual_seed(4)
    q = torch.randn(1, 5, 8, generator=g, requires_grad=True)
    k = torch.randn(1, 6, 8, generator=g, requires_grad=True)
    with attn_tui.record() as rec:
        weights = torch.softmax(q @ k.transpose(-2, -1) / 8 ** 0.5, dim=-1)
    assert torch.equal(rec.trace.stage("weights").tensor, weights[0].detach())


def test_an_energy_scored_per_key_stays_attention() -> None:
    torch.manual_seed(3)
    module = EnergyOnly(4)
    query, values = torch.randn(2, 4), torch.randn(2, 5, 4)
    with torch.no_grad(), attn_tui.record() as rec:
        weights = module(query, values)
    trace = rec.trace
    assert trace.meta.kinds == ("additive",) and "energy" in trace.names()
    for b in range(2):
        assert torch.equal(trace.tensor("weights", step=b).reshape(-1), weights[b, :, 0])
    every_cell_matches(trace)


def test_several_scores_per_token_softmaxed_over_the_tokens_stay_attention() -> None:
    torch.manual_seed(4)
    module = TokenPooling(6, 3)
    h = torch.randn(2, 5, 6)
    with torch.no_grad(), attn_tui.record() as rec:
        weights = module(h)
    trace = rec.trace
    assert trace.meta.modules == ("TokenPooling",)
    for b in range(2):
        assert torch.equal(trace.tensor("weights", step=b), weights[b])


def test_location_scores_that_weight_the_values_stay_attention() -> None:
    torch.manual_seed(5)
    module = LuongLocation(4, 6)
    h_t, encoder = torch.randn(2, 4), torch.randn(2, 6, 4)
    with torch.no_grad(), attn_tui.record() as rec:
        context, weights = module(h_t, encoder)
    trace = rec.trace
    assert trace.meta.modules == ("LuongLocation",)
    for b in range(2):
        assert torch.equal(trace.tensor("weights", step=b).reshape(-1), weights[b])
        torch.testing.assert_close(trace.tensor("output", step=b).reshape(-1), context[b], atol=0, rtol=0)


@pytest.mark.slow  # a child process that imports torch: seconds
def test_a_file_whose_only_softmax_is_a_classifiers_ends_with_the_no_attention_line(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    script = tmp_path / "classify.py"
    script.write_text("import torch\nhead = torch.nn.Linear(8, 3)\nx = torch.randn(4, 8)\n"
                      "print(torch.softmax(head(x), dim=-1).argmax(-1))\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(script))
    assert code == 2 and out == ""
    ours = [line for line in err.splitlines() if line.startswith("attn-tui")]
    assert len(ours) == 1 and "classify.py ran, but no attention was recorded" in ours[0], err
    assert "reads a layer's outputs" in ours[0] and "Traceback" not in err
