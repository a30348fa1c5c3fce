"""Decode one date step by step into a Trace: each decoder step's attention stages, then the alignment.

The stages are cut from the very tensors the network computed (AttentionParts), so what
is shown is what decided each output character.
"""

from __future__ import annotations

import torch

from attn_tui.core.errors import InputError
from attn_tui.core.stage import Axis, Stage, Trace, dim_axis
from attn_tui.models.seq2seq import codec, dates
from attn_tui.models.seq2seq.net import Seq2Seq

STEP_STAGES = {
    "additive": ("query", "key", "query_proj", "key_proj", "energy", "scores", "weights", "context"),
    "general": ("query", "key", "query_proj", "scores", "weights", "context"),
}


def visible(ch: str) -> str:
    """A space would be an invisible axis label."""
    return "␣" if ch == " " else ch


@torch.no_grad()
def decode_trace(model: Seq2Seq, text: str, target: str | None = None, teacher_forcing: bool = False,
                 name: str = "seq2seq-dates") -> Trace:
    """Greedy decode (or teacher-forced on `target`) recording every step's attention."""
    model.eval()
    kind = model.cfg.attention
    if teacher_forcing and not target:
        raise InputError("teacher forcing needs a target date, e.g. 2026-11-22")
    ids = codec.encode_input(text)
    forced = codec.encode_target(target)[1:] if teacher_forcing else None
    chars = tuple(visible(c) for c in text.strip())
    src = torch.tensor([ids])  # (1, S)
    keys, state = model.encoder(src, torch.tensor([len(ids)]))  # (1, S, K), (1, D)
    mask = src != 0
    key_axis = Axis("key", chars)
    token = torch.tensor([codec.OUT_STOI[dates.START]])
    steps: list[list[Stage]] = []
    produced: list[str] = []
    rows: list[torch.Tensor] = []
    limit = len(forced) if forced else codec.MAX_OUTPUT
    for t in range(limit):
        query = state
        logits, state, parts = model.decoder.step(token, state, keys, mask)
        predicted = codec.OUT_ITOS[int(logits.argmax(-1))]
        produced.append(predicted)
        q_axis = Axis("query", (visible(predicted),))
        stages = [
            Stage("query", query, f"s_{t}: the decoder state before output {t} (the query)", (q_axis, dim_axis(query.shape[1])), step=t),
            Stage("key", keys[0], "h_j: the encoder outputs, one per input character (the keys)",
                  (key_axis, dim_axis(keys.shape[2])), step=t),
        ]
        if kind == "additive":
            a_axis = dim_axis(parts.query_proj.shape[1], "hidden", "h")
            stages += [
                Stage("query_proj", parts.query_proj, "W_a s_t", (q_axis, a_axis), step=t),
                Stage("key_proj", parts.key_proj[0], "U_a h_j for every input character", (key_axis, a_axis), step=t),
                Stage("energy", parts.energy, "E[j] = tanh(W_a s_t + U_a h_j)", (q_axis, key_axis, a_axis), step=t),
                Stage("scores", parts.scores, "e_j = v_aᵀ E[j]", (q_axis, key_axis), step=t),
            ]
        else:
            stages += [
                Stage("query_proj", parts.query_proj, "W_a s_t", (q_axis, dim_axis(parts.query_proj.shape[1])), step=t),
                Stage("scores", parts.scores, "e_j = (W_a s_t)·h_j", (q_axis, key_axis), step=t),
            ]
        stages += [
            Stage("weights", parts.weights, "α = softmax(e) over input characters: sums to 1", (q_axis, key_axis), step=t),
            Stage("context", parts.context, "c_t = Σ_j α_j h_j", (q_axis, dim_axis(parts.context.shape[1])), step=t),
        ]
        steps.append(stages)
        rows.append(parts.weights[0])
        token = torch.tensor([forced[t]]) if forced else logits.argmax(-1)
        if not forced and predicted == dates.END:
            break
    out_tokens = tuple(visible(c) for c in produced)
    output = "".join(c for c in produced if c not in (dates.END, dates.PAD, dates.START))
    trace = Trace(variant=name, query_tokens=out_tokens, key_tokens=chars, device="cpu", dtype="float32",
                  config={"model": name, "attention": kind, "output": output, "input": text.strip(),
                          "target": target, "teacher_forcing": teacher_forcing, "steps": len(steps)})
    for stages in steps:
        for stage in stages:
            trace.add(stage)
    trace.add(Stage("alignment", torch.stack(rows), "A[t, j] = α_t,j: each output character's weights",
                    (Axis("query", out_tokens), key_axis)))
    trace.params = {n: p.detach().clone() for n, p in model.decoder.attention.named_parameters()}
    return trace
