"""Luong general 어텐션, 패딩 마스크는 1 = 패딩 (그 key는 가려짐): 짧은 문장을 배치 길이에 맞춰 채운 경우.

The mask is written 1 = padding, one row per key, `(batch, length)`, and applied with
`masked_fill(mask.unsqueeze(1), -inf)`: the opposite of torch SDPA's 1 = may attend.
Run it as it is (`python luong_padding.py`), or watch it compute itself:
`attn-tui trace --sample luong_padding` (the inspector shows the code's own mask beside the may-attend view).
"""

import torch
import torch.nn as nn

import attn_tui


class LuongGeneral(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.W_a = nn.Linear(hidden_size, hidden_size, bias=False)  # score = (W_a h_t)·h_s

    def forward(self, h_src, h_t, mask=None):
        # h_src: (batch, length, hidden)   h_t: (batch, 1, hidden)   mask: (batch, length), 1 = 패딩
        query = self.W_a(h_t)  # (batch, 1, hidden)
        scores = torch.bmm(query, h_src.transpose(1, 2))  # (batch, 1, length)
        if mask is not None:
            # 마스크가 1(True)인 곳은 -inf → softmax 뒤에 가중치 0
            scores = scores.masked_fill(mask.unsqueeze(1), float("-inf"))
        weights = torch.softmax(scores, dim=-1)  # (batch, 1, length)
        context = torch.bmm(weights, h_src)  # (batch, 1, hidden)
        return context, weights


torch.manual_seed(0)
HIDDEN = 4
words = ["나는", "학교에", "간다", "<pad>"]  # 세 단어 + 패딩 하나 (배치의 더 긴 문장에 맞춤)
h_src = torch.randn(1, len(words), HIDDEN)  # 인코더의 모든 시점 출력
h_t = torch.randn(1, 1, HIDDEN)  # 디코더의 t번째 은닉 상태
mask = torch.tensor([[0, 0, 0, 1]], dtype=torch.bool)  # (batch, length): 1 = 패딩

attn_tui.label(["h_t"], words)  # trace 화면에 q0, k0 대신 이름을 보여준다 (그냥 실행하면 아무 일도 안 함)
model = LuongGeneral(HIDDEN)
with torch.no_grad():
    context, weights = model(h_src, h_t, mask)
print("attention weights:", weights[0, 0])  # 패딩 자리는 정확히 0
