"""Two or three sentences per stage, in English and Korean: what the stage does and why.

Keyed by stage name, with `name:key` overrides where a variant does the step its own
way (the scores of additive attention are not a dot product). A run names its keys,
most specific first (a trace's `meta.explains`, e.g. ("decoder", "additive")): the
decoder's own text wins, then the attention kind's.
"""

from __future__ import annotations

LANGUAGES = ("en", "ko")

_TEXT: dict[str, dict[str, str]] = {
    "embedding": {
        "en": "Each word is looked up in a table and becomes a vector of numbers. The table here is "
              "random but seeded, so the same word always gets the same vector; a trained model would "
              "have learned these rows.",
        "ko": "각 단어를 표에서 찾아 숫자 벡터로 바꿉니다. 여기서는 시드를 고정한 무작위 표라서 같은 단어는 "
              "언제나 같은 벡터를 받습니다. 학습된 모델이라면 이 행들을 학습으로 얻었을 것입니다.",
    },
    "positional": {
        "en": "Attention by itself does not know word order: shuffling the words only shuffles the "
              "rows. Sine and cosine waves of different frequencies give every position its own "
              "pattern, which is added to the word vectors.",
        "ko": "어텐션 자체는 단어의 순서를 모릅니다. 단어를 섞으면 행만 섞일 뿐입니다. 주파수가 서로 다른 "
              "사인과 코사인 파형이 위치마다 고유한 무늬를 만들고, 이것을 단어 벡터에 더합니다.",
    },
    "embedded_pos": {
        "en": "The word vector plus its position vector. From here on, the same word at two places "
              "in the sentence is two different vectors.",
        "ko": "단어 벡터에 위치 벡터를 더한 결과입니다. 이제부터는 같은 단어라도 문장 속 위치가 다르면 "
              "서로 다른 벡터가 됩니다.",
    },
    "query": {
        "en": "Each row is a query: what this token is looking for. It is the token's vector seen "
              "through a learned projection W_q, so the model can ask about something other than "
              "the token itself.",
        "ko": "각 행은 쿼리, 즉 이 토큰이 무엇을 찾고 있는지입니다. 학습된 투영 W_q를 거친 토큰 벡터이므로 "
              "모델은 토큰 자신과 다른 것을 물어볼 수 있습니다.",
    },
    "key": {
        "en": "Each row is a key: how this token advertises itself to the queries. A query and a key "
              "that point the same way will give a large score.",
        "ko": "각 행은 키, 즉 이 토큰이 쿼리들에게 자신을 어떻게 소개하는지입니다. 같은 방향을 가리키는 "
              "쿼리와 키는 큰 점수를 만듭니다.",
    },
    "value": {
        "en": "Each row is a value: what this token hands over when it is attended to. Keys decide "
              "who is chosen; values are what gets mixed into the answer.",
        "ko": "각 행은 값(value), 즉 이 토큰이 선택되었을 때 건네주는 내용입니다. 키는 누가 선택될지를 "
              "정하고, 값은 답에 섞여 들어갈 내용입니다.",
    },
    "qkv_proj": {
        "en": "One matrix product makes the queries, keys and values of every head at once. The "
              "result is cut into three parts and then into one slice of columns per head.",
        "ko": "한 번의 행렬곱으로 모든 헤드의 쿼리, 키, 값을 한꺼번에 만듭니다. 결과를 세 부분으로 나누고, "
              "다시 헤드마다 열 구간 하나씩으로 자릅니다.",
    },
    "query_proj": {
        "en": "The query is multiplied by a learned matrix W_a before it meets the keys. This lets "
              "the model compare vectors of different sizes and decide which directions matter.",
        "ko": "쿼리에 학습된 행렬 W_a를 곱한 뒤에 키와 비교합니다. 덕분에 크기가 다른 벡터끼리도 비교할 수 "
              "있고, 어떤 방향이 중요한지를 모델이 정할 수 있습니다.",
    },
    "query_proj:additive": {
        "en": "Bahdanau attention first maps each query into a hidden space with W_a. Doing it once "
              "per query, rather than once per query-key pair, keeps the cost down.",
        "ko": "바다나우 어텐션은 먼저 각 쿼리를 W_a로 은닉 공간에 옮깁니다. 쿼리-키 쌍마다가 아니라 "
              "쿼리마다 한 번만 계산하므로 비용이 줄어듭니다.",
    },
    "key_proj": {
        "en": "Each key is mapped into the same hidden space with U_a. A query and a key can now be "
              "added together, which is the heart of additive attention.",
        "ko": "각 키도 U_a로 같은 은닉 공간에 옮깁니다. 이제 쿼리와 키를 더할 수 있는데, 이것이 가산 "
              "어텐션의 핵심입니다.",
    },
    "energy": {
        "en": "For every query-key pair a small neural network layer is applied: tanh of the two "
              "projections added (or of the pair concatenated). The heatmap shows one query at a time: "
              "rows are keys, columns are hidden units.",
        "ko": "모든 쿼리-키 쌍에 작은 신경망 층을 적용합니다. 두 투영을 더한 값(또는 이어 붙인 쌍)에 tanh를 "
              "씌웁니다. 히트맵은 한 번에 쿼리 하나를 보여 줍니다. 행은 키, 열은 은닉 유닛입니다.",
    },
    "scores": {
        "en": "Every query is compared with every key by a dot product: large when they point the "
              "same way. Row i says how well query i matches each key, before any normalisation.",
        "ko": "모든 쿼리를 모든 키와 내적으로 비교합니다. 같은 방향을 가리킬수록 값이 큽니다. i번째 행은 "
              "정규화 전에 쿼리 i가 각 키와 얼마나 잘 맞는지를 나타냅니다.",
    },
    "scores:additive": {
        "en": "The energy vector of each pair is reduced to one number by a learned vector v_a. The "
              "score is what a tiny network thinks of the match, not a plain dot product.",
        "ko": "각 쌍의 에너지 벡터를 학습된 벡터 v_a로 숫자 하나로 줄입니다. 점수는 단순한 내적이 아니라 "
              "작은 신경망이 내린 일치도 판단입니다.",
    },
    "scores:concat": {
        "en": "The energy vector of each pair is reduced to one number by a learned vector v_c. The "
              "concat form is additive attention with its two weight matrices written as one.",
        "ko": "각 쌍의 에너지 벡터를 학습된 벡터 v_c로 숫자 하나로 줄입니다. concat 형태는 두 가중치 행렬을 "
              "하나로 붙여 쓴 가산 어텐션과 같습니다.",
    },
    "scores:general": {
        "en": "Each projected query W_a q is compared with every key by a dot product. The learned "
              "W_a decides which features of the query should line up with which features of the key.",
        "ko": "투영된 쿼리 W_a q를 모든 키와 내적으로 비교합니다. 학습된 W_a가 쿼리의 어떤 특징이 키의 어떤 "
              "특징과 맞아야 하는지를 정합니다.",
    },
    "scaled": {
        "en": "The scores are divided by √d_k. A dot product of d_k random terms grows like √d_k, "
              "and large scores push softmax into a one-hot with vanishing gradients; the division "
              "keeps them near unit size.",
        "ko": "점수를 √d_k로 나눕니다. 무작위 항 d_k개의 내적은 √d_k에 비례해 커지는데, 점수가 크면 "
              "소프트맥스가 원-핫에 가까워져 기울기가 사라집니다. 나눗셈이 점수를 1 근처로 유지합니다.",
    },
    "masked": {
        "en": "Where the mask is 0 (padding, or a future word under a causal mask) the score is "
              "replaced by -∞ or -1e9, so softmax gives it no weight. The mask here follows torch: "
              "1 means the query may attend to the key.",
        "ko": "마스크가 0인 곳(패딩, 또는 인과 마스크 아래의 미래 단어)은 점수를 -∞나 -1e9로 바꿔서 "
              "소프트맥스가 가중치를 주지 않게 합니다. 여기 마스크는 torch 관례를 따릅니다. 1은 쿼리가 그 키를 "
              "볼 수 있다는 뜻입니다.",
    },
    "weights": {
        "en": "Softmax turns each row of scores into probabilities: exponentiate, then divide by the "
              "row's sum, so every row sums to 1. Subtracting the row's maximum first changes nothing "
              "but avoids overflow.",
        "ko": "소프트맥스가 점수의 각 행을 확률로 바꿉니다. 지수를 취한 뒤 행의 합으로 나누므로 모든 행의 "
              "합은 1입니다. 먼저 행의 최댓값을 빼도 결과는 같지만 넘침(overflow)을 막아 줍니다.",
    },
    "output": {
        "en": "Each output row is a weighted average of the value rows, using that query's weights. "
              "A query that puts all its weight on one key simply copies that key's value.",
        "ko": "각 출력 행은 그 쿼리의 가중치로 값 행들을 가중 평균한 것입니다. 한 키에 가중치를 모두 준 "
              "쿼리는 그 키의 값을 그대로 복사합니다.",
    },
    "concat": {
        "en": "The outputs of all heads are placed side by side. Each head could attend to "
              "something different; here their findings are gathered into one vector per token.",
        "ko": "모든 헤드의 출력을 나란히 붙입니다. 헤드마다 다른 것에 주목할 수 있었고, 여기서 그 결과를 "
              "토큰마다 벡터 하나로 모읍니다.",
    },
    "query:decoder": {
        "en": "The query is the decoder's state: the GRU's memory of the date so far and of what it has "
              "written. It asks: which input characters matter for the next output character?",
        "ko": "쿼리는 디코더의 상태, 즉 지금까지의 날짜와 이미 쓴 출력을 기억하는 GRU의 은닉 상태입니다. "
              "다음 출력 문자를 위해 어떤 입력 문자가 중요한지를 묻습니다.",
    },
    "key:decoder": {
        "en": "The keys are the encoder's outputs, one per input character. A bidirectional GRU read the "
              "whole date both ways, so each row knows its character and the characters around it.",
        "ko": "키는 입력 문자마다 하나씩 있는 인코더의 출력입니다. 양방향 GRU가 날짜 전체를 양쪽에서 읽었으므로 "
              "각 행은 자기 문자와 그 주변 문자를 함께 압니다.",
    },
    "context": {
        "en": "The context is the weighted average of the encoder outputs, using this step's weights. "
              "It is what the decoder reads before writing its next character.",
        "ko": "컨텍스트는 이번 단계의 가중치로 인코더 출력을 가중 평균한 것입니다. 디코더는 다음 문자를 쓰기 "
              "전에 이것을 읽습니다.",
    },
    "alignment": {
        "en": "One row per output character, one column per input character: the weights of every "
              "decoder step stacked. A trained model lines up '11' with the month and '22' with the day.",
        "ko": "출력 문자마다 한 행, 입력 문자마다 한 열: 모든 디코더 단계의 가중치를 쌓은 것입니다. 학습된 모델은 "
              "'11'을 월에, '22'를 일에 맞춰 정렬합니다.",
    },
    "projected": {
        "en": "A final learned matrix W_o mixes the heads' outputs together. This is the layer's "
              "result, with the same width as its input so layers can be stacked.",
        "ko": "마지막으로 학습된 행렬 W_o가 헤드들의 출력을 섞습니다. 이것이 층의 결과이며 입력과 폭이 같아서 "
              "층을 쌓을 수 있습니다.",
    },
}


def explanation(stage: str, keys: tuple[str, ...], language: str = "en") -> str:
    """The explanation of `stage` for a run whose explanation keys are `keys` (most specific first)."""
    lang = language if language in LANGUAGES else "en"
    found = (_TEXT.get(f"{stage}:{v}") for v in keys)
    entry = next((e for e in found if e), None) or _TEXT.get(stage)
    if entry is None:
        return ""
    return entry[lang]


def stage_names() -> set[str]:
    """Every stage name that has an explanation (overrides folded in)."""
    return {key.partition(":")[0] for key in _TEXT}
