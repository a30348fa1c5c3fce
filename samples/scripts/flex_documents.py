"""flex_attention으로 문서 두 개를 한 줄에: 같은 문서 안의 앞 단어만 보는 mask_mod, 거리만큼 깎는 score_mod (ALiBi).

Run it as it is (`python flex_documents.py`), or watch it compute itself:
`attn-tui trace --sample flex_documents`.
"""

import warnings

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

import attn_tui

warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")

WORDS = ["나는", "학교에", "간다", "<eos>", "너는", "집에", "온다", "<eos>"]
L, HEADS, D = len(WORDS), 2, 8
DOC = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])  # 단어마다 어느 문서인지 (packed sequences)
SLOPES = torch.tensor([0.5, 0.125])  # 헤드마다 기울기 m: 가파른 헤드는 가까운 곳을 본다


def alibi(score, b, h, q_idx, kv_idx):
    # 먼 키일수록 점수를 m·거리만큼 깎는다
    return score - SLOPES[h] * (q_idx - kv_idx)


def same_document_causal(b, h, q_idx, kv_idx):
    # 같은 문서 안에서, 앞에 나온 단어만 본다
    return (DOC[q_idx] == DOC[kv_idx]) & (q_idx >= kv_idx)


torch.manual_seed(0)
x = torch.randn(1, L, HEADS * D)
qkv = torch.nn.Linear(HEADS * D, 3 * HEADS * D)
attn_tui.label(WORDS)
mask = create_block_mask(same_document_causal, None, None, L, L, device="cpu", BLOCK_SIZE=2)
with torch.no_grad():  # flex_attention on CPU computes no gradients
    q, k, v = qkv(x).view(1, L, 3, HEADS, D).permute(2, 0, 3, 1, 4)  # 각각 (1, HEADS, L, D)
    out = flex_attention(q, k, v, score_mod=alibi, block_mask=mask)
print(out.shape)
