"""셀프 어텐션 한 번 돌려보기: 나는 학교에 간다, 미래 단어는 못 보게 causal mask.

Run it as it is (`python self_attention.py`), or watch it compute itself:
`attn-tui trace --sample self_attention`.
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui


class SelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super().__init__()
        # 같은 입력 x에서 Q, K, V를 만드는 선형 투영
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)
        self.scale = math.sqrt(embed_dim)

    def forward(self, x, mask=None):
        Q = self.query(x)
        K = self.key(x)
        V = self.value(x)
        # QK^T / √d_k: 질문(Q)과 각 단어의 키(K)가 얼마나 닮았는지
        scores = torch.matmul(Q, K.transpose(-2, -1)) / self.scale
        if mask is not None:
            # mask가 0인 곳은 -inf → softmax 뒤에 정확히 0
            scores = scores.masked_fill(mask == 0, float("-inf"))
        attention_weights = F.softmax(scores, dim=-1)
        output = torch.matmul(attention_weights, V)
        return output, attention_weights


torch.manual_seed(0)
words = ["나는", "학교에", "간다"]
vocab = {word: i for i, word in enumerate(words)}
EMBEDDING_DIM = 4

embedding = nn.Embedding(len(vocab), EMBEDDING_DIM)
ids = torch.tensor([[vocab[w] for w in words]])  # (1, 3)
x = embedding(ids)  # (1, 3, 4)
causal = torch.tril(torch.ones(len(words), len(words)))  # 1 = 볼 수 있음

attn_tui.label(words)  # trace 화면에 q0, q1 대신 단어를 보여준다 (그냥 실행하면 아무 일도 안 함)
model = SelfAttention(EMBEDDING_DIM)
with torch.no_grad():
    output, weights = model(x, causal)
print("attention weights:\n", weights[0])
