"""More attention written the way learners write it, in styles `modules.py` does not show: our own code.

Tutorials, lecture notebooks and homework write the same attention many ways: einsum
products, multiplication by the inverse scale, `baddbmm`, boolean and additive masks,
`torch.where`, a softmax in float32, heads folded into the batch, one nn.Linear per head
in a Python loop, the chatbot tutorial's Luong scores, a GRU decoder calling Bahdanau,
grouped-query heads repeated with `repeat_interleave`, a hand-written softmax. The
recorder must lay each out without any change to it.
"""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class EinsumAttention(nn.Module):
    """einsum으로 QKᵀ, 스케일은 d**-0.5를 곱하고, bool 마스크는 ~mask로 -inf."""

    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)

    def forward(self, x, mask):
        b, n, d = x.shape
        h = self.heads
        q = self.to_q(x).reshape(b, n, h, d // h).permute(0, 2, 1, 3)
        k = self.to_k(x).reshape(b, n, h, d // h).permute(0, 2, 1, 3)
        v = self.to_v(x).reshape(b, n, h, d // h).permute(0, 2, 1, 3)
        dots = torch.einsum("bhqd,bhkd->bhqk", q, k) * self.scale
        dots = dots.masked_fill(~mask, float("-inf"))  # mask: True = 볼 수 있음
        attn = dots.softmax(dim=-1)
        out = torch.einsum("bhqk,bhkd->bhqd", attn, v)
        return out.permute(0, 2, 1, 3).reshape(b, n, d), attn


def inverse_scale_attention(q, k, v):
    """q @ kᵀ * d**-0.5, softmax는 float32로 계산해서 원래 dtype으로."""
    d = q.shape[-1]
    att = q @ k.transpose(-2, -1) * d ** -0.5
    att = F.softmax(att, dim=-1, dtype=torch.float32).to(q.dtype)
    return att @ v, att


def baddbmm_attention(q, k, v):
    """baddbmm(0, q, kᵀ, alpha=1/√d): 곱하기와 스케일을 한 번에 (HF 코드에서 본 방식)."""
    b, n, d = q.shape
    zeros = torch.zeros(b, n, k.shape[1], dtype=q.dtype)
    scores = torch.baddbmm(zeros, q, k.transpose(1, 2), beta=0.0, alpha=1.0 / math.sqrt(d))
    weights = torch.softmax(scores, dim=-1)
    return torch.bmm(weights, v), weights


def additive_one_minus_mask(q, k, v, mask):
    """mask는 1 = 볼 수 있음, (1 - mask) * -1e9를 더해서 가린다 (BERT 방식)."""
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    scores = scores + (1.0 - mask[:, None, :]) * -1e9
    probs = nn.Softmax(dim=-1)(scores)
    return torch.matmul(probs, v), probs


def where_attention(q, k, v, allowed):
    """torch.where(mask, scores, -inf): 마스크 False인 곳을 -inf로."""
    scores = q @ k.mT / math.sqrt(q.shape[-1])
    scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
    weights = torch.softmax(scores, -1)
    return weights @ v, weights


class ViewTransposeHeads(nn.Module):
    """W_q/W_k/W_v 따로, view(...).transpose(1, 2)로 헤드 분리, contiguous().view로 합치기."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.n_heads, self.d_k = n_heads, d_model // n_heads
        self.W_q = nn.Linear(d_model, d_model)
        self.W_k = nn.Linear(d_model, d_model)
        self.W_v = nn.Linear(d_model, d_model)
        self.W_o = nn.Linear(d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, query, key, value, mask=None):
        bs = query.size(0)
        q = self.W_q(query).view(bs, -1, self.n_heads, self.d_k).transpose(1, 2)
        k = self.W_k(key).view(bs, -1, self.n_heads, self.d_k).transpose(1, 2)
        v = self.W_v(value).view(bs, -1, self.n_heads, self.d_k).transpose(1, 2)
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.d_k)
        if mask is not None:
            scores = scores.masked_fill(mask.unsqueeze(1) == 0, -1e9)
        p_attn = F.softmax(scores, dim=-1)
        p_attn = self.dropout(p_attn)  # eval 모드면 그대로
        x = torch.matmul(p_attn, v)
        x = x.transpose(1, 2).contiguous().view(bs, -1, self.n_heads * self.d_k)
        return self.W_o(x), p_attn


class Head(nn.Module):
    """헤드 하나: key/query/value Linear 각각, tril 버퍼로 causal 마스크 (강의 노트 스타일)."""

    def __init__(self, n_embd: int, head_size: int, block_size: int) -> None:
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.register_buffer("tril", torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(0.2)

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)
        q = self.query(x)
        wei = q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float("-inf"))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        v = self.value(x)
        return wei @ v


class HeadLoop(nn.Module):
    """헤드마다 따로 만든 Head를 파이썬 루프로 돌리고 cat → proj."""

    def __init__(self, n_embd: int, num_heads: int, block_size: int) -> None:
        super().__init__()
        head_size = n_embd // num_heads
        self.heads = nn.ModuleList([Head(n_embd, head_size, block_size) for _ in range(num_heads)])
        self.proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        return self.proj(out)


class LuongScores(nn.Module):
    """챗봇 튜토리얼의 Luong 점수: dot / general / concat, seq-first (max_len, batch, hidden)."""

    def __init__(self, method: str, hidden_size: int) -> None:
        super().__init__()
        self.method = method
        if method == "general":
            self.attn = nn.Linear(hidden_size, hidden_size)
        elif method == "concat":
            self.attn = nn.Linear(hidden_size * 2, hidden_size)
            self.v = nn.Parameter(torch.randn(hidden_size))

    def dot_score(self, hidden, encoder_output):
        return torch.sum(hidden * encoder_output, dim=2)

    def general_score(self, hidden, encoder_output):
        energy = self.attn(encoder_output)
        return torch.sum(hidden * energy, dim=2)

    def concat_score(self, hidden, encoder_output):
        energy = self.attn(torch.cat((hidden.expand(encoder_output.size(0), -1, -1), encoder_output), 2)).tanh()
        return torch.sum(self.v * energy, dim=2)

    def forward(self, hidden, encoder_outputs):
        # hidden: (1, batch, hidden), encoder_outputs: (max_len, batch, hidden)
        if self.method == "general":
            attn_energies = self.general_score(hidden, encoder_outputs)
        elif self.method == "concat":
            attn_energies = self.concat_score(hidden, encoder_outputs)
        else:
            attn_energies = self.dot_score(hidden, encoder_outputs)
        attn_energies = attn_energies.t()  # (batch, max_len)
        attn_weights = F.softmax(attn_energies, dim=1).unsqueeze(1)  # (batch, 1, max_len)
        context = attn_weights.bmm(encoder_outputs.transpose(0, 1))  # (batch, 1, hidden)
        return context, attn_weights


class Additive(nn.Module):
    """Bahdanau: score = V(tanh(W1(query) + W2(values))), softmax는 dim=1, context는 sum(weights * values)."""

    def __init__(self, units: int) -> None:
        super().__init__()
        self.W1 = nn.Linear(units, units)
        self.W2 = nn.Linear(units, units)
        self.V = nn.Linear(units, 1)

    def forward(self, query, values):
        query_with_time_axis = query.unsqueeze(1)  # (batch, 1, hidden)
        score = self.V(torch.tanh(self.W1(query_with_time_axis) + self.W2(values)))  # (batch, max_len, 1)
        attention_weights = F.softmax(score, dim=1)
        context_vector = attention_weights * values
        context_vector = torch.sum(context_vector, dim=1)  # (batch, hidden)
        return context_vector, attention_weights


class AttnDecoder(nn.Module):
    """GRU 디코더가 스텝마다 Additive 어텐션을 부른다 (hidden을 query로)."""

    def __init__(self, hidden_size: int, vocab: int) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab, hidden_size)
        self.attention = Additive(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, vocab)

    def forward(self, encoder_outputs, hidden, steps: int):
        token = torch.zeros(encoder_outputs.size(0), 1, dtype=torch.long)
        contexts, all_weights = [], []
        for _ in range(steps):
            embedded = self.embedding(token)  # (batch, 1, hidden)
            context, weights = self.attention(hidden[-1], encoder_outputs)
            gru_input = torch.cat((embedded, context.unsqueeze(1)), dim=2)
            output, hidden = self.gru(gru_input, hidden)
            token = self.out(output).argmax(-1)
            contexts.append(context)
            all_weights.append(weights)
        return contexts, all_weights


class GroupedQuery(nn.Module):
    """GQA: 쿼리 헤드 4개, 키/값 헤드 2개를 repeat_interleave로 늘려서 맞춘다."""

    def __init__(self, dim: int, n_heads: int, n_kv_heads: int) -> None:
        super().__init__()
        self.n_heads, self.n_kv, self.hd = n_heads, n_kv_heads, dim // n_heads
        self.wq = nn.Linear(dim, n_heads * self.hd, bias=False)
        self.wk = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
        self.wv = nn.Linear(dim, n_kv_heads * self.hd, bias=False)
        self.wo = nn.Linear(n_heads * self.hd, dim, bias=False)

    def forward(self, x):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.hd).transpose(1, 2)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv, self.hd).transpose(1, 2)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv, self.hd).transpose(1, 2)
        rep = self.n_heads // self.n_kv
        xk = xk.repeat_interleave(rep, dim=1)
        xv = xv.repeat_interleave(rep, dim=1)
        scores = torch.matmul(xq, xk.transpose(2, 3)) / math.sqrt(self.hd)
        causal = torch.full((seqlen, seqlen), float("-inf")).triu(1)
        scores = scores + causal
        scores = F.softmax(scores.float(), dim=-1).type_as(xq)
        out = torch.matmul(scores, xv).transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out), scores


class CausalSelfAttention(nn.Module):
    """c_attn 하나로 qkv, split(n_embd, dim=2), bias 버퍼로 causal 마스크."""

    def __init__(self, n_embd: int, n_head: int, block_size: int) -> None:
        super().__init__()
        self.n_head, self.n_embd = n_head, n_embd
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size,
                                                                                           block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y), att


class FoldedHeads(nn.Module):
    """헤드를 배치에 접어서 (batch * heads, len, head_dim)으로 bmm (fairseq 스타일)."""

    def __init__(self, embed_dim: int, num_heads: int) -> None:
        super().__init__()
        self.num_heads, self.head_dim = num_heads, embed_dim // num_heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(embed_dim, embed_dim)
        self.k_proj = nn.Linear(embed_dim, embed_dim)
        self.v_proj = nn.Linear(embed_dim, embed_dim)
        self.out_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, query, key):
        tgt_len, bsz, embed_dim = query.size()  # (time, batch, channel)
        q = self.q_proj(query) * self.scaling
        k = self.k_proj(key)
        v = self.v_proj(key)
        q = q.contiguous().view(tgt_len, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        k = k.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        v = v.contiguous().view(-1, bsz * self.num_heads, self.head_dim).transpose(0, 1)
        attn_weights = torch.bmm(q, k.transpose(1, 2))
        attn_probs = F.softmax(attn_weights, dim=-1)
        attn = torch.bmm(attn_probs, v)
        attn = attn.transpose(0, 1).contiguous().view(tgt_len, bsz, embed_dim)
        return self.out_proj(attn), attn_probs


def softmax(x):
    """노트에서 직접 만든 softmax: exp(x) / sum(exp(x))."""
    return torch.exp(x) / torch.sum(torch.exp(x), dim=-1, keepdim=True)


def handmade_softmax_attention(Q, K, V):
    """직접 만든 softmax를 쓰는 어텐션; 스케일은 torch.sqrt(tensor)로."""
    d_k = torch.tensor(K.shape[-1], dtype=torch.float32)
    scores = torch.matmul(Q, K.transpose(0, 1)) / torch.sqrt(d_k)
    weights = softmax(scores)
    return torch.matmul(weights, V), weights


def keys_first_attention(query, keys, values):
    """쿼리 하나(벡터)에 대해 keys @ query로 점수를 낸다: (seq, d) @ (d,) → (seq,)."""
    scores = keys @ query / math.sqrt(query.shape[0])
    weights = torch.softmax(scores, dim=0)
    return weights @ values, weights


def finfo_mask_attention(q, k, v, padding):
    """패딩(True = pad)을 dtype의 최솟값으로 채운다 (HF 코드에서 자주 보는 방식)."""
    scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    scores = scores.masked_fill(padding[:, None, :], torch.finfo(scores.dtype).min)
    weights = F.softmax(scores, dim=-1)
    return torch.matmul(weights, v), weights


def sdpa_gqa(q, k, v):
    """SDPA의 enable_gqa=True: 키/값 헤드가 쿼리 헤드보다 적다."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)


def annotated_attention(query, key, value, mask=None, dropout=None):
    """하버드 주석 트랜스포머식 함수: mask == 0을 -1e9로, dropout은 있으면 적용."""
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadedAttention(nn.Module):
    """Linear 4개를 ModuleList로, 리스트 컴프리헨션으로 q/k/v를 만들고 모듈 밖 함수가 어텐션을 계산."""

    def __init__(self, h: int, d_model: int, dropout: float = 0.1) -> None:
        super().__init__()
        self.d_k, self.h = d_model // h, h
        self.linears = nn.ModuleList([nn.Linear(d_model, d_model) for _ in range(4)])
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, query, key, value, mask=None):
        if mask is not None:
            mask = mask.unsqueeze(1)  # 모든 헤드에 같은 마스크
        nbatches = query.size(0)
        query, key, value = [lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                             for lin, x in zip(self.linears, (query, key, value))]
        x, self.attn = annotated_attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        return self.linears[-1](x)


class ConcatExpand(nn.Module):
    """concat 점수: hidden을 expand로 늘려 cat, v는 bias 없는 Linear(hidden, 1)."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.W = nn.Linear(2 * hidden, hidden)
        self.v = nn.Linear(hidden, 1, bias=False)

    def forward(self, hidden, encoder_outputs):
        src_len = encoder_outputs.size(1)
        repeated = hidden.unsqueeze(1).expand(-1, src_len, -1)
        energy = torch.tanh(self.W(torch.cat([repeated, encoder_outputs], dim=-1)))
        attention = self.v(energy).squeeze(-1)
        weights = F.softmax(attention, dim=-1)
        return torch.bmm(weights.unsqueeze(1), encoder_outputs).squeeze(1), weights


class BiGRUAttention(nn.Module):
    """양방향 GRU 인코더 출력(2·hidden)에 Bahdanau, context는 einsum('bs,bsh->bh')."""

    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.encoder = nn.GRU(3, hidden, batch_first=True, bidirectional=True)
        self.Wa = nn.Linear(hidden, hidden)
        self.Ua = nn.Linear(2 * hidden, hidden)
        self.Va = nn.Linear(hidden, 1)

    def forward(self, x, state):
        outputs, _ = self.encoder(x)  # (batch, src_len, 2 * hidden)
        energy = self.Va(torch.tanh(self.Wa(state).unsqueeze(1) + self.Ua(outputs))).squeeze(-1)
        weights = torch.softmax(energy, dim=1)
        return torch.einsum("bs,bsh->bh", weights, outputs), weights
