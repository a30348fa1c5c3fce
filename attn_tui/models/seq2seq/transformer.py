"""A small pre-norm transformer encoder-decoder for the date task, with every head's attention readable.

Pre-norm (x + Attn(LayerNorm(x)), then x + FF(LayerNorm(x)), a final LayerNorm on each
side) trains stably on CPU without a warm-up. Attention is written out with explicit
W_q, W_k, W_v, W_o so each head's weights can be returned and its query, key and value
recomputed from the layer's normalised input: `Tap` records exactly what each attention
read, so a decode can be traced without a second implementation of the network.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
from torch import nn

ARCH = "transformer"


@dataclass(frozen=True)
class TransformerConfig:
    in_vocab: int
    out_vocab: int
    d_model: int = 64
    heads: int = 4
    layers: int = 2  # encoder layers and decoder layers alike
    d_ff: int = 128
    max_len: int = 64  # positions the sinusoidal table holds (inputs are at most 40 characters)
    dropout: float = 0.1
    jitter: int = 8  # training only: each input's positions start at a random offset in 0…jitter

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def sinusoids(length: int, d: int) -> torch.Tensor:
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(…): (length, d)."""
    pos = torch.arange(length, dtype=torch.float32)[:, None]  # (length, 1)
    rate = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log(10000.0) / d))  # (d/2,)
    table = torch.zeros(length, d)
    table[:, 0::2] = torch.sin(pos * rate)
    table[:, 1::2] = torch.cos(pos * rate)
    return table


@dataclass
class Tap:
    """What one attention of one layer read and computed (batch first), kept for tracing.

    `query_in` (B, L, d) and `key_in` (B, S, d) are the normalised inputs its W_q and W_k,
    W_v read; `weights` (B, heads, L, S) are its own softmax weights.
    """

    module: str  # enc_attn | self_attn | cross_attn
    layer: int
    query_in: torch.Tensor
    key_in: torch.Tensor
    weights: torch.Tensor


class MultiHeadAttention(nn.Module):
    """softmax(Q_h K_hᵀ / √d_h) V_h for each head h, concatenated and mixed by W_o.

    Computes what nn.MultiheadAttention computes (the tests copy its weights in and
    compare), but returns every head's weights without averaging.
    """

    def __init__(self, d_model: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        if d_model % heads:
            raise ValueError(f"{heads} heads do not divide d_model {d_model}")
        self.heads, self.d_head = heads, d_model // heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def split(self, x: torch.Tensor) -> torch.Tensor:
        """(B, N, d) → (B, heads, N, d_head)."""
        return x.view(x.shape[0], x.shape[1], self.heads, self.d_head).transpose(1, 2)

    def forward(self, query_in: torch.Tensor, key_in: torch.Tensor,
                allowed: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """query_in (B, L, d), key_in (B, S, d), allowed broadcastable to (B, 1, L, S), True = may attend.

        Returns the output (B, L, d) and the weights (B, heads, L, S).
        """
        q, k, v = self.split(self.W_q(query_in)), self.split(self.W_k(key_in)), self.split(self.W_v(key_in))
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, heads, L, S)
        if allowed is not None:
            scores = scores.masked_fill(~allowed, float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (B, heads, L, S)
        mixed = self.dropout(weights) @ v  # (B, heads, L, d_head)
        joined = mixed.transpose(1, 2).reshape(query_in.shape[0], query_in.shape[1], -1)  # (B, L, d)
        return self.W_o(joined), weights


class FeedForward(nn.Sequential):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__(nn.Linear(cfg.d_model, cfg.d_ff), nn.ReLU(), nn.Linear(cfg.d_ff, cfg.d_model),
                         nn.Dropout(cfg.dropout))


class EncoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.attn = MultiHeadAttention(cfg.d_model, cfg.heads, cfg.dropout)
        self.ff = FeedForward(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, allowed: torch.Tensor, layer: int, taps: list[Tap] | None) -> torch.Tensor:
        h = self.ln1(x)
        out, weights = self.attn(h, h, allowed)
        if taps is not None:
            taps.append(Tap("enc_attn", layer, h, h, weights))
        x = x + self.drop(out)
        ff: torch.Tensor = self.ff(self.ln2(x))
        return x + ff


class DecoderLayer(nn.Module):
    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.ln1, self.ln2, self.ln3 = (nn.LayerNorm(cfg.d_model) for _ in range(3))
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.heads, cfg.dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.heads, cfg.dropout)
        self.ff = FeedForward(cfg)
        self.drop = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, memory: torch.Tensor, causal: torch.Tensor, memory_allowed: torch.Tensor,
                layer: int, taps: list[Tap] | None) -> torch.Tensor:
        h = self.ln1(x)
        out, weights = self.self_attn(h, h, causal)
        if taps is not None:
            taps.append(Tap("self_attn", layer, h, h, weights))
        x = x + self.drop(out)
        h = self.ln2(x)
        out, weights = self.cross_attn(h, memory, memory_allowed)
        if taps is not None:
            taps.append(Tap("cross_attn", layer, h, memory, weights))
        x = x + self.drop(out)
        ff: torch.Tensor = self.ff(self.ln3(x))
        return x + ff


class DateTransformer(nn.Module):
    """Characters of a date in, ISO characters out: embeddings + sinusoids, 2 + 2 pre-norm layers.

    The embeddings are not multiplied by √d: initialised N(0, 1) they are already as large
    as the sinusoids, and scaled up they would drown the positions this task depends on.
    """

    def __init__(self, cfg: TransformerConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.src_embed = nn.Embedding(cfg.in_vocab, cfg.d_model, padding_idx=0)
        self.tgt_embed = nn.Embedding(cfg.out_vocab, cfg.d_model)
        self.register_buffer("positions", sinusoids(cfg.max_len, cfg.d_model), persistent=False)
        self.encoder = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.layers))
        self.decoder = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.layers))
        self.enc_norm, self.dec_norm = nn.LayerNorm(cfg.d_model), nn.LayerNorm(cfg.d_model)
        self.out = nn.Linear(cfg.d_model, cfg.out_vocab)
        self.drop = nn.Dropout(cfg.dropout)

    def _embed(self, table: nn.Embedding, ids: torch.Tensor, jitter: int = 0) -> torch.Tensor:
        pe: torch.Tensor = self.positions  # type: ignore[assignment]
        at = torch.arange(ids.shape[1], device=ids.device)[None, :]  # (1, N)
        if jitter and self.training:
            at = at + torch.randint(0, jitter + 1, (ids.shape[0], 1), device=ids.device)  # (B, N)
        embedded: torch.Tensor = self.drop(table(ids) + pe[at])
        return embedded

    def encode(self, src: torch.Tensor, taps: list[Tap] | None = None) -> torch.Tensor:
        """src (B, S) padded with 0 → memory (B, S, d): the encoder's normalised outputs."""
        allowed = (src != 0)[:, None, None, :]  # (B, 1, 1, S): padding is never attended
        x = self._embed(self.src_embed, src, self.cfg.jitter)
        for n, layer in enumerate(self.encoder):
            x = layer(x, allowed, n, taps)
        memory: torch.Tensor = self.enc_norm(x)
        return memory

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src: torch.Tensor,
               taps: list[Tap] | None = None) -> torch.Tensor:
        """tgt_in (B, T) starting with <s> → logits (B, T, V); position t sees positions 0…t only."""
        t = tgt_in.shape[1]
        causal = torch.ones(t, t, dtype=torch.bool, device=tgt_in.device).tril()  # (T, T)
        memory_allowed = (src != 0)[:, None, None, :]  # (B, 1, 1, S)
        x = self._embed(self.tgt_embed, tgt_in)
        for n, layer in enumerate(self.decoder):
            x = layer(x, memory, causal, memory_allowed, n, taps)
        logits: torch.Tensor = self.out(self.dec_norm(x))
        return logits

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing, as the GRU's forward: tgt_in (B, T) starts with <s>; returns logits (B, T, V)."""
        return self.decode(tgt_in, self.encode(src), src)

    @torch.no_grad()
    def greedy_ids(self, src: torch.Tensor, start: int, end: int, limit: int) -> torch.Tensor:
        """Greedy decoding of a batch: (B, ≤ limit) ids written after <s>, stopping once every row wrote </s>."""
        memory = self.encode(src)
        out = torch.full((src.shape[0], 1), start, dtype=torch.long, device=src.device)
        done = torch.zeros(src.shape[0], dtype=torch.bool, device=src.device)
        for _ in range(limit):
            token = self.decode(out, memory, src)[:, -1].argmax(-1)  # (B,)
            out = torch.cat([out, token[:, None]], dim=1)
            done |= token == end
            if bool(done.all()):
                break
        return out[:, 1:]
