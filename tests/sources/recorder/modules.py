"""Attention written the way the study notes write it: small nn.Modules and functions, our own code.

Each is a learner's module the recorder must understand without any change to it: the
tests run them under `attn_tui.record()` and compare what was recorded with what they
returned. Comments are in the notes' register on purpose.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class SelfAttention(nn.Module):
    """스케일드 닷-프로덕트 셀프 어텐션 (마스크는 0인 곳을 -inf로)."""

    def __init__(self, embed_dim: int) -> None:
        super().__init__()
        # 같은 x에서 Q, K, V를 각각 선형 투영
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.scale = math.sqrt(embed_dim)

    def forward(self, x, mask=None):
        Q = self.query(x)
        K = self.key(x)
        V = self.value(x)
        # 스케일링을 K쪽에 먼저 적용해도 결과는 같다
        scores = torch.matmul(Q, K.transpose(-2, -1) / self.scale)
        if mask is not None:
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attention_weights = F.softmax(scores, dim=-1)
        output = torch.matmul(attention_weights, V)
        return output, attention_weights


class MultiHeadAttention(nn.Module):
    """qkv를 한 번에 투영하고 reshape → permute(2, 0, 3, 1, 4)로 헤드를 나눈다."""

    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        assert embed_dim % num_heads == 0
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.qkv_proj = nn.Linear(embed_dim, 3 * embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)
        self.scale = math.sqrt(self.head_dim)

    def forward(self, x, mask=None):
        batch_size, seq_len, embed_dim = x.size()
        qkv = self.qkv_proj(x)
        qkv = qkv.reshape(batch_size, seq_len, 3, self.num_heads, self.head_dim)
        qkv = qkv.permute(2, 0, 3, 1, 4)  # (3, batch, heads, seq, head_dim)
        Q, K, V = qkv[0], qkv[1], qkv[2]
        scores = torch.matmul(Q, K.transpose(-2, -1)) / self.scale
        if mask is not None:
            if mask.dim() == 3:
                mask = mask.unsqueeze(1)  # 헤드 차원 맞추기
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attention_weights = F.softmax(scores, dim=-1)
        attn_output = torch.matmul(attention_weights, V)  # (batch, heads, seq, head_dim)
        attn_output = attn_output.transpose(1, 2).contiguous()
        attn_output = attn_output.reshape(batch_size, seq_len, embed_dim)  # 헤드 결합
        return self.out_proj(attn_output), attention_weights


class BahdanauAttention(nn.Module):
    """e = Va(tanh(Wa(query) + Ua(keys))): 디코더 hidden이 query, 인코더 출력이 key이자 value."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)
        self.Ua = nn.Linear(hidden_size, hidden_size)
        self.Va = nn.Linear(hidden_size, 1)

    def forward(self, query, keys):
        # query: [batch, 1, hidden], keys: [batch, seq_len, hidden]
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))  # [batch, seq_len, 1]
        scores = scores.squeeze(2).unsqueeze(1)  # [batch, 1, seq_len]
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)  # [batch, 1, hidden]
        return context, weights


class LuongGeneral(nn.Module):
    """Luong general: score = (W_a h_t)·h_s, bmm로 계산. mask는 1이 padding (노트의 규약)."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.linear = nn.Linear(hidden_size, hidden_size, bias=False)
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, h_src, h_t_tgt, mask=None):
        query = self.linear(h_t_tgt)  # (batch, 1, hidden)
        weight = torch.bmm(query, h_src.transpose(1, 2))  # (batch, 1, length)
        if mask is not None:
            weight.masked_fill_(mask.unsqueeze(1), -float("inf"))  # 1인 곳이 padding
        weight = self.softmax(weight)
        context_vector = torch.bmm(weight, h_src)
        return context_vector, weight


class ConcatAttention(nn.Module):
    """v · tanh(W[s; h]): hidden을 seq_len만큼 repeat해서 인코더 출력과 cat."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.attn = nn.Linear(hidden_size * 2, hidden_size)
        self.v = nn.Parameter(torch.rand(hidden_size))

    def forward(self, hidden, encoder_outputs):
        seq_len = encoder_outputs.shape[1]
        hidden_expanded = hidden.unsqueeze(1).repeat(1, seq_len, 1)  # (batch, seq_len, hidden)
        energy = torch.tanh(self.attn(torch.cat((hidden_expanded, encoder_outputs), dim=2)))
        attention_scores = torch.sum(self.v * energy, dim=2)
        attention_weights = F.softmax(attention_scores, dim=1)
        context_vector = torch.bmm(attention_weights.unsqueeze(1), encoder_outputs).squeeze(1)
        return context_vector, attention_weights


def attention(query, key, value):
    """제일 단순한 닷-프로덕트 어텐션 함수."""
    scores = torch.matmul(query, key.transpose(-2, -1))
    attention_weights = F.softmax(scores, dim=-1)
    context_vector = torch.matmul(attention_weights, value)
    return context_vector


def additive_mask_attention(query, key, value, mask):
    """노트 002처럼 mask * -1e9를 더하는 방식 (mask는 1이 가려질 자리)."""
    matmul_qk = query @ key.transpose(-1, -2)
    logits = matmul_qk / math.sqrt(key.shape[-1])
    logits += mask * -1e9
    weights = torch.softmax(logits, dim=-1)
    return weights @ value, weights
