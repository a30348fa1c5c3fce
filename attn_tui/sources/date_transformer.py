"""The trained transformer date model as a source: the encoder's self-attention once, then each decoder step.

At step t the decoder runs on what it has written so far (<s> and its first t outputs,
or the target's under teacher forcing); for each layer the step's position queries
those positions (causal self-attention: later ones do not exist yet) and then the
encoder's outputs (cross-attention). Every head's query, key and value are recomputed
here from the layer's normalised input and the layer's own W_q, W_k, W_v; the scaled
scores go through the shared tail, and the tests check that the weights equal the
network's own, for every layer, head and step. Last come the cross-attention
alignments: one per layer and head, and each layer's mean over heads.
"""

from __future__ import annotations

import math

import torch

from attn_tui.ask.budget import Estimate, memory_limit
from attn_tui.attention.attend import Tail, attend
from attn_tui.attention.variants.scaled_dot.compute import SCALE_REASON
from attn_tui.i18n import N_, Msg, Plural
from attn_tui.models.seq2seq import codec, dates
from attn_tui.models.seq2seq.transformer import DateTransformer, MultiHeadAttention, Tap
from attn_tui.sources.dates import encoded, so_far, visible
from attn_tui.trace.geometry import LayerGeometry, Positional
from attn_tui.trace.growing import OnStep, Publisher
from attn_tui.trace.meta import DecoderRun
from attn_tui.trace.ops import Dot, Linear, Mean, Place, Scale, Stack
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis
from attn_tui.trace.steps import decoder_step

CROSS = "cross_attn"

# What the projections read in each module: (symbol, what it is) for the query, then for the key and value.
_READS = {
    "enc_attn": (("X", N_("X: every input character's vector after layer {layer}'s ln1")),) * 2,
    "self_attn": (("x_t", N_("x_t: decoder position {step} after layer {layer}'s ln1")),
                  ("X", N_("X: decoder positions 0…{step} after ln1, all that is written so far"))),
    "cross_attn": (("x_t", N_("x_t: decoder position {step} after layer {layer}'s ln2")),
                   ("M", N_("M: the encoder's output, one row per input character"))),
}


def _module_of(model: DateTransformer, tap: Tap) -> MultiHeadAttention:
    block = model.encoder[tap.layer] if tap.module == "enc_attn" else model.decoder[tap.layer]
    found = getattr(block, "attn" if tap.module == "enc_attn" else tap.module)
    assert isinstance(found, MultiHeadAttention)
    return found


def param_prefix(tap: Tap) -> str:
    """The state-dict prefix of a tap's attention: `encoder.0.attn`, `decoder.1.cross_attn`."""
    return f"encoder.{tap.layer}.attn" if tap.module == "enc_attn" else f"decoder.{tap.layer}.{tap.module}"


def record_attention(trace: Trace, model: DateTransformer, tap: Tap, step: int | None, query_axis: Axis,
                     key_axis: Axis) -> None:
    """Every head of one attention: query, key, value, scores, scaled, then the shared tail's stages.

    `tap.query_in` (1, L, d) holds the rows that query (the step's position only, for a
    decoder step; the caller slices it); `tap.key_in` (1, S, d) the rows attended to.
    """
    attn = _module_of(model, tap)
    prefix = param_prefix(tap)
    suffix = "" if step is None else f"@t{step}"
    x_q, x_k = tap.query_in[0], tap.key_in[0]  # (L, d), (S, d)
    q_name = f"{prefix}.X{suffix}" if tap.module == "enc_attn" else f"{prefix}.x_q{suffix}"
    k_name = {"enc_attn": q_name, "self_attn": f"{prefix}.X{suffix}", "cross_attn": "memory"}[tap.module]
    trace.inputs[q_name], trace.inputs[k_name] = x_q, x_k
    reads_q, reads_k = ((symbol, Msg(text, layer=tap.layer, step=step)) for symbol, text in _READS[tap.module])
    heads, d_h = attn.heads, attn.d_head
    projected = {}
    for name, part, x, reads, in_name in (("query", "q", x_q, reads_q, q_name), ("key", "k", x_k, reads_k, k_name),
                                          ("value", "v", x_k, reads_k, k_name)):
        weight, bias = f"{prefix}.W_{part}.weight", f"{prefix}.W_{part}.bias"
        full = x @ trace.params[weight].T + trace.params[bias]  # (N, d)
        projected[name] = full.view(x.shape[0], heads, d_h).transpose(0, 1)  # (heads, N, d_h)
        axis = query_axis if name == "query" else key_axis
        for h in range(heads):
            trace.add(Stage(Place(name, tap.layer, h, step, tap.module), projected[name][h],
                            Msg("{P}_h = {X}·W_{p}ᵀ + b_{p}, the columns of head {head}   ({reads})", P=part.upper(),
                                X=reads[0], p=part, head=h, reads=reads[1]),
                            (axis, dim_axis(d_h)), Linear(in_name, weight, bias, h * d_h)))
    factor = 1 / math.sqrt(d_h)
    scores = projected["query"] @ projected["key"].transpose(-2, -1)  # (heads, L, S)
    scaled = scores * factor  # (heads, L, S)
    axes = (query_axis, key_axis)
    for h in range(heads):
        at = Place("scores", tap.layer, h, step, tap.module)
        trace.add(Stage(at, scores[h], "S = Q_h·K_hᵀ: S[i,j] = q_i·k_j", axes, Dot(at.at("query"), at.at("key"))))
        trace.add(Stage(at.at("scaled"), scaled[h], f"S' = S / √d_k   (d_k = {d_h}, √d_k = {math.sqrt(d_h):g})",
                        axes, Scale(at, factor, SCALE_REASON)))
    tail = Tail(query_axis, key_axis, output_formula=Msg("O = A·V_h: this head's part of the layer's output, "
                                                         "before W_o mixes the heads"))
    scaled_at = [Place("scaled", tap.layer, h, step, tap.module) for h in range(heads)]
    attend(trace, tail, scaled, projected["value"], scaled_at, [p.at("value") for p in scaled_at])


@torch.no_grad()
def decode_trace(model: DateTransformer, text: str, target: str | None = None, teacher_forcing: bool = False,
                 name: str = "transformer-dates", max_memory: int | None = None,
                 on_step: OnStep | None = None) -> Trace:
    """Greedy decode (or teacher-forced on `target`) recording the encoder, then every step, layer and head.

    `on_step`, when given, is handed the trace after the encoder's and each step's stages (see dates.py)."""
    model.eval()
    cfg = model.cfg
    n, d_h = codec.MAX_INPUT, cfg.d_model // cfg.heads
    needed = Estimate()
    needed.add(N_("the model"), sum(p.numel() for p in model.parameters()))
    needed.add(N_("encoder stages"), cfg.layers * (cfg.heads * (4 * n * d_h + 3 * n * n) + n * cfg.d_model))
    needed.add(N_("decoder steps"), codec.MAX_OUTPUT * cfg.layers * 2 * (cfg.heads * (4 * n * d_h + 3 * n)
                                                                     + 2 * n * cfg.d_model))
    needed.check(memory_limit(max_memory), Msg("decoding with {name}", name=name))
    ids, forced, chars = encoded(text, target, teacher_forcing)
    src = torch.tensor([ids])  # (1, S)
    meta = DecoderRun(model=name, attention="scaled_dot", input=text.strip(), output="", steps=0, target=target,
                      teacher_forcing=teacher_forcing, layers=cfg.layers, heads=cfg.heads, arch="transformer")
    trace = Trace(meta, (), chars, "cpu", "float32")
    for layer in range(cfg.layers):  # each layer's cross-attention, which its alignment shows: every input
        # character, sinusoids added to the embeddings, q·k / √d_h (its self-attention is the same, but causal)
        trace.geometry[layer] = LayerGeometry("full", None, Positional("absolute"),
                                              1 / math.sqrt(cfg.d_model // cfg.heads))
    trace.params = {n: p.detach() for n, p in model.named_parameters() if ".W_q." in n or ".W_k." in n
                    or ".W_v." in n}
    taps: list[Tap] = []
    memory = model.encode(src, taps)  # (1, S, d)
    in_axis = Axis("key", chars)
    for tap in taps:
        record_attention(trace, model, tap, None, Axis("query", chars), in_axis)
    fed = [codec.OUT_STOI[dates.START]]
    produced: list[str] = []
    publisher = Publisher(trace, on_step)
    for t in range(len(forced) if forced else codec.MAX_OUTPUT):
        taps = []
        logits = model.decode(torch.tensor([fed]), memory, src, taps)[0, -1]  # (V,): position t's prediction
        best = int(logits.argmax())
        produced.append(codec.OUT_ITOS[best])
        q_axis = Axis("query", (visible(produced[-1]),))
        written = Axis("key", tuple(codec.OUT_ITOS[i] for i in fed))
        for tap in taps:
            tap.query_in = tap.query_in[:, t:t + 1]  # (1, 1, d): this step's position only
            record_attention(trace, model, tap, t, q_axis, written if tap.module == "self_attn" else in_axis)
        publisher.step(decoder_step(t, q_axis.labels[0], written.labels[-1:]),
                       so_far(meta, produced, [codec.OUT_ITOS[i] for i in fed]), tuple(visible(c) for c in produced))
        fed.append(forced[t] if forced else best)
        if not forced and produced[-1] == dates.END:
            break
    out_tokens = tuple(visible(c) for c in produced)
    output = "".join(c for c in produced if c not in (dates.END, dates.PAD, dates.START))
    trace.query_tokens = out_tokens
    trace.meta = so_far(meta, produced, [codec.OUT_ITOS[i] for i in fed])
    if target is not None and output != target:
        differ = [n for n, (a, b) in enumerate(zip(output.ljust(len(target)), target.ljust(len(output)))) if a != b]
        trace.warn(Plural("the output {output} differs from the target {target} at character {where}",
                          "the output {output} differs from the target {target} at characters {where}",
                          output=repr(output), target=repr(target), n=len(differ),
                          where=", ".join(map(str, differ[:12]))))
    add_alignments(trace, len(produced), cfg.layers, cfg.heads, (Axis("query", out_tokens), in_axis))
    return trace


def add_alignments(trace: Trace, steps: int, layers: int, heads: int, axes: tuple[Axis, Axis]) -> None:
    """Cross-attention alignments (outputs × inputs): each layer's and head's steps stacked, then each
    layer's mean over its heads."""
    for layer in range(layers):
        for h in range(heads):
            rows = tuple(Place("weights", layer, h, t, CROSS) for t in range(steps))
            trace.add(Stage(Place("alignment", layer, h, None, CROSS),
                            torch.cat([trace.stages[p].tensor for p in rows]),  # (T, S)
                            Msg("A[t, j] = α_t,j: the cross-attention weights of layer {layer}, head {head}, "
                                "one row per output character", layer=layer, head=h), axes, Stack(rows)))
    for layer in range(layers):
        parts = tuple(Place("alignment", layer, h, None, CROSS) for h in range(heads))
        trace.add(Stage(Place("alignment_mean", layer, None, None, CROSS),
                        torch.stack([trace.stages[p].tensor for p in parts]).mean(0),  # (T, S)
                        Msg("Ā = mean over the {heads} heads of layer {layer}'s alignments", heads=heads, layer=layer),
                        axes, Mean(parts)))
