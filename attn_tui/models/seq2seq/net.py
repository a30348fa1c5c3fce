"""GRU encoder, attention (Bahdanau additive or Luong general), GRU decoder.

The attention module returns its intermediate tensors as well as the context, so a
decode can be traced stage by stage without a second implementation of the maths.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class NetConfig:
    in_vocab: int
    out_vocab: int
    attention: str = "additive"  # additive | general
    emb_in: int = 32
    emb_out: int = 16
    enc_hidden: int = 64  # per direction; encoder outputs are 2 × this wide
    dec_hidden: int = 128
    attn_hidden: int = 64  # additive only

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


class Encoder(nn.Module):
    """Embedding → bidirectional GRU; each output sees the whole date from both sides."""

    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.in_vocab, cfg.emb_in, padding_idx=0)
        self.gru = nn.GRU(cfg.emb_in, cfg.enc_hidden, batch_first=True, bidirectional=True)
        self.init = nn.Linear(2 * cfg.enc_hidden, cfg.dec_hidden)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """src (B, S) → outputs (B, S, 2·enc_hidden), first decoder state (B, dec_hidden)."""
        packed = nn.utils.rnn.pack_padded_sequence(self.embed(src), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, last = self.gru(packed)
        out, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=src.shape[1])
        return out, torch.tanh(self.init(torch.cat([last[0], last[1]], dim=-1)))


@dataclass
class AttentionParts:
    """Everything one attention step computed, for tracing: (B, …) tensors."""

    query_proj: torch.Tensor  # (B, A) additive: W_a s; general: W_a s (B, K)
    key_proj: torch.Tensor | None  # (B, S, A) additive only
    energy: torch.Tensor | None  # (B, S, A) additive only
    scores: torch.Tensor  # (B, S)
    weights: torch.Tensor  # (B, S)
    context: torch.Tensor  # (B, K)


class Attention(nn.Module):
    """score = v_aᵀ tanh(W_a s + U_a h_j) (additive) or (W_a s)·h_j (general)."""

    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.kind = cfg.attention
        keys = 2 * cfg.enc_hidden
        if self.kind == "additive":
            self.W_a = nn.Linear(cfg.dec_hidden, cfg.attn_hidden, bias=False)
            self.U_a = nn.Linear(keys, cfg.attn_hidden, bias=False)
            self.v_a = nn.Linear(cfg.attn_hidden, 1, bias=False)
        elif self.kind == "general":
            self.W_a = nn.Linear(cfg.dec_hidden, keys, bias=False)
        else:
            raise ValueError(f"unknown attention {self.kind!r}")

    def forward(self, state: torch.Tensor, keys: torch.Tensor, key_mask: torch.Tensor) -> AttentionParts:
        """state (B, D), keys (B, S, K), key_mask (B, S) True for real characters."""
        query_proj = self.W_a(state)
        key_proj = energy = None
        if self.kind == "additive":
            key_proj = self.U_a(keys)  # (B, S, A)
            energy = torch.tanh(query_proj[:, None, :] + key_proj)  # (B, S, A)
            scores = self.v_a(energy).squeeze(-1)  # (B, S)
        else:
            scores = torch.einsum("bk,bsk->bs", query_proj, keys)  # (B, S)
        weights = torch.softmax(scores.masked_fill(~key_mask, float("-inf")), dim=-1)  # (B, S)
        context = torch.einsum("bs,bsk->bk", weights, keys)  # (B, K)
        return AttentionParts(query_proj, key_proj, energy, scores, weights, context)


class Decoder(nn.Module):
    """One step: attend with the previous state, feed [embedding; context] to the GRU cell."""

    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.out_vocab, cfg.emb_out)
        self.attention = Attention(cfg)
        self.cell = nn.GRUCell(cfg.emb_out + 2 * cfg.enc_hidden, cfg.dec_hidden)
        self.out = nn.Linear(cfg.dec_hidden + 2 * cfg.enc_hidden, cfg.out_vocab)

    def step(self, prev_token: torch.Tensor, state: torch.Tensor, keys: torch.Tensor,
             key_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, AttentionParts]:
        """prev_token (B,), state (B, D) → logits (B, V), new state (B, D), attention parts."""
        parts = self.attention(state, keys, key_mask)
        new_state = self.cell(torch.cat([self.embed(prev_token), parts.context], dim=-1), state)
        logits = self.out(torch.cat([new_state, parts.context], dim=-1))
        return logits, new_state, parts


class Seq2Seq(nn.Module):
    def __init__(self, cfg: NetConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)

    def forward(self, src: torch.Tensor, lengths: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        """Teacher forcing: tgt_in (B, T) starts with <s>; returns logits (B, T, V)."""
        keys, state = self.encoder(src, lengths)
        key_mask = src != 0
        logits = []
        for t in range(tgt_in.shape[1]):
            step_logits, state, _ = self.decoder.step(tgt_in[:, t], state, keys, key_mask)
            logits.append(step_logits)
        return torch.stack(logits, dim=1)
