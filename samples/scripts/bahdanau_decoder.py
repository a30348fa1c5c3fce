"""GRU 인코더-디코더에 Bahdanau 어텐션: 디코더가 한 글자씩 만들 때마다 인코더 출력을 다시 본다.

The decoder calls the attention once per step, so the trace has one step per output
character: `attn-tui trace --sample bahdanau_decoder`. The weights are untrained (seeded).
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui

SOS_token = 0
MAX_LENGTH = 4


class BahdanauAttention(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.Wa = nn.Linear(hidden_size, hidden_size)  # query (디코더 hidden) 변환
        self.Ua = nn.Linear(hidden_size, hidden_size)  # key (인코더 출력) 변환
        self.Va = nn.Linear(hidden_size, 1)  # 점수 하나로 줄이기
        nn.init.normal_(self.Va.weight, std=3.0)  # 학습 전이라 가중치가 너무 고르게 나와서, 일부러 크게 초기화

    def forward(self, query, keys):
        # query: [batch, 1, hidden], keys: [batch, seq_len, hidden] → broadcast
        scores = self.Va(torch.tanh(self.Wa(query) + self.Ua(keys)))  # [batch, seq_len, 1]
        scores = scores.squeeze(2).unsqueeze(1)  # [batch, 1, seq_len]
        weights = F.softmax(scores, dim=-1)
        context = torch.bmm(weights, keys)  # [batch, 1, hidden]
        return context, weights


class AttnDecoderRNN(nn.Module):
    def __init__(self, hidden_size, output_size):
        super().__init__()
        self.embedding = nn.Embedding(output_size, hidden_size)
        self.attention = BahdanauAttention(hidden_size)
        self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
        self.out = nn.Linear(hidden_size, output_size)

    def forward_step(self, decoder_input, hidden, encoder_outputs):
        embedded = self.embedding(decoder_input)  # [batch, 1, hidden]
        query = hidden.permute(1, 0, 2)  # [batch, 1, hidden]
        context, attn_weights = self.attention(query, encoder_outputs)
        output, hidden = self.gru(torch.cat((embedded, context), dim=2), hidden)
        return self.out(output), hidden, attn_weights


torch.manual_seed(0)
source = ["나는", "학교에", "간다", "<eos>"]
hidden_size, vocab_size = 6, 8
encoder_embedding = nn.Embedding(len(source), hidden_size)
encoder = nn.GRU(hidden_size, hidden_size, batch_first=True)
decoder = AttnDecoderRNN(hidden_size, vocab_size)

attn_tui.label(["<sos>"], source)  # 디코더의 query 하나, 인코더의 key는 입력 단어들
with torch.no_grad():
    encoder_outputs, hidden = encoder(encoder_embedding(torch.arange(len(source))[None]))
    decoder_input = torch.tensor([[SOS_token]])
    for step in range(MAX_LENGTH):  # greedy decoding: 이전 출력이 다음 입력
        logits, hidden, weights = decoder.forward_step(decoder_input, hidden, encoder_outputs)
        decoder_input = logits.argmax(-1)
        print(f"step {step}: weights {weights[0, 0].tolist()}")
