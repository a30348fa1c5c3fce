"""The trained date decoder as a source: each decoder step's attention stages, then the alignment.

The query, keys and projections are the very tensors the network computed at that step;
the scores go through the same tail as every other source (masked → weights → context),
and the tests check that those weights equal the network's own, step by step.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from attn_tui.ask.budget import Estimate, memory_limit
from attn_tui.attention.attend import Tail, attend
from attn_tui.errors import InputError
from attn_tui.i18n import N_, Msg, Plural
from attn_tui.models.seq2seq import codec, dates
from attn_tui.models.seq2seq.net import AttentionParts, Seq2Seq
from attn_tui.trace.geometry import LayerGeometry, Positional
from attn_tui.trace.growing import OnStep, Publisher
from attn_tui.trace.meta import DecoderRun
from attn_tui.trace.ops import Dot, Given, Linear, Place, Reduce, Stack, TanhOfSum
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis
from attn_tui.trace.steps import decoder_step


def visible(ch: str) -> str:
    """A space would be an invisible axis label."""
    return "␣" if ch == " " else ch


def encoded(text: str, target: str | None,
            teacher_forcing: bool) -> tuple[list[int], list[int] | None, tuple[str, ...]]:
    """The input's ids, the ids teacher forcing feeds (None without it), and the input's characters as shown."""
    if teacher_forcing and not target:
        raise InputError(Msg("teacher forcing needs a target date, e.g. 2026-11-22"))
    forced = codec.encode_target(target)[1:] if teacher_forcing and target else None
    return codec.encode_input(text), forced, tuple(visible(c) for c in text.strip())


def _step_stages(trace: Trace, t: int, query: torch.Tensor, keys: torch.Tensor, parts: AttentionParts,
                 predicted: str, key_axis: Axis, additive: bool) -> None:
    """Record step t: the state querying the encoder outputs, then the shared tail."""
    q_axis = Axis("query", (visible(predicted),))
    add = trace.add
    add(Stage(Place("query", step=t), query, Msg("s_{t}: the decoder state before output {t} (the query)", t=t),
              (q_axis, dim_axis(query.shape[1])),
              Given(Msg("the decoder GRU's state s_{t}: the network's memory of what it read and wrote", t=t))))
    add(Stage(Place("key", step=t), keys, Msg("h_j: the encoder outputs, one per input character (the keys)"),
              (key_axis, dim_axis(keys.shape[1])),
              Given(Msg("an encoder output: the bidirectional GRU's reading of one input character"))))
    if additive:
        assert parts.key_proj is not None and parts.energy is not None
        a_axis = dim_axis(parts.query_proj.shape[1], "hidden", "u")
        add(Stage(Place("query_proj", step=t), parts.query_proj, "W_a s_t", (q_axis, a_axis),
                  Linear(Place("query", step=t), "W_a.weight")))
        add(Stage(Place("key_proj", step=t), parts.key_proj[0], Msg("U_a h_j for every input character"),
                  (key_axis, a_axis), Linear(Place("key", step=t), "U_a.weight")))
        add(Stage(Place("energy", step=t), parts.energy, "E[j] = tanh(W_a s_t + U_a h_j)", (q_axis, key_axis, a_axis),
                  TanhOfSum(Place("query_proj", step=t), Place("key_proj", step=t))))
        add(Stage(Place("scores", step=t), parts.scores, "e_j = v_aᵀ E[j]", (q_axis, key_axis),
                  Reduce(Place("energy", step=t), "v_a.weight")))
    else:
        add(Stage(Place("query_proj", step=t), parts.query_proj, "W_a s_t",
                  (q_axis, dim_axis(parts.query_proj.shape[1])), Linear(Place("query", step=t), "W_a.weight")))
        add(Stage(Place("scores", step=t), parts.scores, "e_j = (W_a s_t)·h_j", (q_axis, key_axis),
                  Dot(Place("query_proj", step=t), Place("key", step=t))))
    tail = Tail(q_axis, key_axis, output="context", output_formula="c_t = Σ_j α_j h_j")
    attend(trace, tail, parts.scores, keys, [Place("scores", step=t)], [Place("key", step=t)])


def written(produced: list[str]) -> str:
    """The characters written so far, without the markers."""
    return "".join(c for c in produced if c not in (dates.END, dates.PAD, dates.START))


def so_far(meta: DecoderRun, produced: list[str], fed: list[str]) -> DecoderRun:
    """The decode's metadata once `produced` is written, each step fed `fed`."""
    return replace(meta, output=written(produced), steps=len(produced),
                   fed=tuple(visible(c) for c in fed[:len(produced)]))


@torch.no_grad()
def decode_trace(model: Seq2Seq, text: str, target: str | None = None, teacher_forcing: bool = False,
                 name: str = "seq2seq-dates", max_memory: int | None = None, on_step: OnStep | None = None) -> Trace:
    """Greedy decode (or teacher-forced on `target`) recording every step's attention.

    `on_step`, when given, is handed the trace as it stands after each step (a snapshot that later steps
    leave as it is), so a view can show the first steps while the rest are decoded."""
    model.eval()
    needed = Estimate()
    needed.add(N_("the model"), sum(p.numel() for p in model.parameters()))
    needed.add(N_("decoder steps"), codec.MAX_OUTPUT * codec.MAX_INPUT * 8 * model.cfg.attn_hidden)
    needed.check(memory_limit(max_memory), Msg("decoding with {name}", name=name))
    kind = model.cfg.attention
    ids, forced, chars = encoded(text, target, teacher_forcing)
    src = torch.tensor([ids])  # (1, S)
    keys, state = model.encoder(src, torch.tensor([len(ids)]))  # (1, S, K), (1, D)
    mask = src != 0
    key_axis = Axis("key", chars)
    token = torch.tensor([codec.OUT_STOI[dates.START]])
    meta = DecoderRun(model=name, attention=kind, input=text.strip(), output="", steps=0, target=target,
                      teacher_forcing=teacher_forcing)
    trace = Trace(meta, (), chars, "cpu", "float32")
    # One attention: the decoder state reads every input character (no mask but the padding, no position, no
    # scale: the GRU carries order itself).
    trace.geometry[0] = LayerGeometry("full", None, Positional("none"), 1.0)
    trace.params = {n: p.detach() for n, p in model.decoder.attention.named_parameters()}
    produced: list[str] = []
    fed: list[str] = []
    publisher = Publisher(trace, on_step)
    limit = len(forced) if forced else codec.MAX_OUTPUT
    for t in range(limit):
        fed.append(codec.OUT_ITOS[int(token)])
        query = state
        logits, state, parts = model.decoder.step(token, state, keys, mask)
        predicted = codec.OUT_ITOS[int(logits.argmax(-1))]
        produced.append(predicted)
        _step_stages(trace, t, query, keys[0], parts, predicted, key_axis, kind == "additive")
        publisher.step(decoder_step(t, visible(predicted), chars if t == 0 else ()), so_far(meta, produced, fed),
                       tuple(visible(c) for c in produced))
        token = torch.tensor([forced[t]]) if forced else logits.argmax(-1)
        if not forced and predicted == dates.END:
            break
    out_tokens = tuple(visible(c) for c in produced)
    output = written(produced)
    trace.query_tokens = out_tokens
    trace.meta = so_far(meta, produced, fed)
    if target is not None and output != target:
        differ = [n for n, (a, b) in enumerate(zip(output.ljust(len(target)), target.ljust(len(output)))) if a != b]
        trace.warn(Plural("the output {output} differs from the target {target} at character {where}",
                          "the output {output} differs from the target {target} at characters {where}",
                          output=repr(output), target=repr(target), n=len(differ),
                          where=", ".join(map(str, differ[:12]))))
    rows = [Place("weights", step=t) for t in range(len(produced))]
    trace.add(Stage(Place("alignment"), torch.cat([trace.stages[p].tensor for p in rows]),
                    Msg("A[t, j] = α_t,j: each output character's weights"), (Axis("query", out_tokens), key_axis),
                    Stack(tuple(rows))))
    return trace
