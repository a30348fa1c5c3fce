"""The arithmetic of one cell at one stage, recomputed from the trace's own tensors.

The app's inspector shows these lines; the tests check that every recomputed `total`
equals the stage's cell, so what the inspector claims is what the engine did.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch

from attn_tui.core.masks import FILLS
from attn_tui.core.stage import Trace

MAX_TERMS = 8  # terms written out before the rest are summarised as "…"


@dataclass(frozen=True)
class Arithmetic:
    """How one cell came to be: a headline, the terms written out, and their result.

    `total` is recomputed here in float64; `expected` is the stage's own cell. They
    agree up to the stage's dtype rounding, which the tests assert.
    """

    title: str
    lines: list[str] = field(default_factory=list)
    total: float = 0.0
    expected: float = 0.0


def _f(x: float) -> str:
    if math.isinf(x):
        return "-∞" if x < 0 else "+∞"
    if math.isnan(x):
        return "NaN"
    return f"{x:.4g}"


def _sum_terms(pairs: list[tuple[float, float]], a: str, b: str) -> tuple[list[str], float]:
    """Lines for Σ a_m·b_m and the float64 sum; long sums show the first terms then '…'."""
    total = math.fsum(x * y for x, y in pairs)
    shown = [f"{_f(x)}·{_f(y)}" for x, y in pairs[:MAX_TERMS]]
    more = f" + … ({len(pairs) - MAX_TERMS} more)" if len(pairs) > MAX_TERMS else ""
    return [f"Σ_m {a}[m]·{b}[m] =", "  " + " + ".join(shown) + more, f"  = {_f(total)}"], total


def _row(t: torch.Tensor, i: int) -> list[float]:
    return t[i].double().cpu().tolist()


def model_input(trace: Trace) -> torch.Tensor:
    """X, the matrix the projections read: embedded_pos, else embedding, else the typed X."""
    names = trace.names()
    for name in ("embedded_pos", "embedding"):
        if name in names:
            return trace.tensor(name)
    return trace.inputs["X"]


def mask_of(trace: Trace, head: int | None = None) -> torch.Tensor | None:
    """Boolean (L, S), True = may attend, read back from the masked stage; None if nothing is masked.

    A cell is masked when the masked stage holds the fill and its input did not, so a
    genuine -inf from overflow is never mistaken for a mask.
    """
    if "masked" not in trace.names():
        return None
    masked = trace.tensor("masked", head).float()  # (L, S)
    before = trace.tensor(_pre_mask_name(trace), head).float() / _temperature(trace)  # (L, S)
    fill = FILLS.get(str(trace.config.get("mask_fill", "-inf")), float("-inf"))
    hidden = (masked == fill) & (before != fill)
    return None if not bool(hidden.any()) else ~hidden


def _pre_mask_name(trace: Trace) -> str:
    return "scaled" if "scaled" in trace.names() else "scores"


def _temperature(trace: Trace) -> float:
    return float(trace.config.get("temperature", 1.0) or 1.0)


def explain(trace: Trace, name: str, head: int | None, index: tuple[int, ...],
            step: int | None = None) -> Arithmetic:
    """The arithmetic behind `stage[index]`; index has one entry per axis of the stage.

    `step` picks the decoder step of a seq2seq trace, whose stages repeat once per step.
    """
    if trace.steps():
        stage_tensor = trace.tensor(name) if step is None else trace.tensor_at(name, step)
        title, lines, total = _SEQ2SEQ.get(name, _state)(trace, name, step or 0, index)
        return Arithmetic(title, lines, total, float(stage_tensor[index].double()))
    stage = trace.stage(name, head)
    expected = float(stage.tensor[index].double())
    handler = _HANDLERS.get(name, _copied)
    title, lines, total = handler(trace, name, head, index)
    return Arithmetic(title, lines, total, expected)


def _copied(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    value = float(trace.stage(name, head).tensor[index].double())
    return f"{name}{list(index)}", ["typed or given as is: no arithmetic at this stage"], value


def _embedding(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j = index
    token = trace.query_tokens[i]
    vocab = list(trace.config.get("vocab", []))
    table = trace.params["embedding"]  # (V, d)
    row = vocab.index(token)
    value = float(table[row, j].double())
    return (f"X[{i},{j}] for token {token!r}",
            [f"row {row} of the seeded table (vocabulary entry {token!r}), column {j}",
             "the same word always gets the same row" + ("; <pad> is the zero row" if token == "<pad>" else ""),
             f"= {_f(value)}"], value)


def _positional(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    pos, j = index
    d = trace.tensor(name).shape[1]
    even = j - j % 2
    angle = pos / 10000 ** (even / d)
    fn = "sin" if j % 2 == 0 else "cos"
    value = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return (f"PE[{pos},{j}]",
            [f"{fn}(pos / 10000^({even}/{d})) = {fn}({pos} / {_f(10000 ** (even / d))})",
             f"= {fn}({_f(angle)}) = {_f(value)}"], value)


def _embedded_pos(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j = index
    e = float(trace.tensor("embedding")[i, j].double())
    p = float(trace.tensor("positional")[i, j].double())
    return f"X[{i},{j}] = embedding + PE", [f"{_f(e)} + {_f(p)}", f"= {_f(e + p)}"], e + p


def _projection(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    """query/key/value: typed, a slice of qkv_proj (multihead), or X·Wᵀ (sentences)."""
    i, j = index
    if trace.variant == "multihead":
        d_h = trace.tensor(name, head).shape[1]
        offset = {"query": 0, "key": 1, "value": 2}[name] * d_h * trace.heads + (head or 0) * d_h
        value = float(trace.tensor("qkv_proj")[i, offset + j].double())
        return (f"{name} head {head} [{i},{j}]",
                [f"column {j} of head {head} is column {offset + j} of qkv_proj", f"= {_f(value)}"], value)
    if "X" not in trace.inputs and "embedding" not in trace.names():
        return _copied(trace, name, head, index)
    weight = trace.params["W_" + name[0]]  # (d, d)
    x = _row(model_input(trace), i)
    lines, total = _sum_terms(list(zip(x, _row(weight, j))), f"X[{i}]", f"W_{name[0]}[{j}]")
    bias = trace.params.get("b_" + name[0])  # a real model's projections have a bias
    if bias is None:
        return f"{name}[{i},{j}] = x_{i}·W_{name[0]}[{j}]", lines, total
    b = float(bias[j].double())
    total += b
    lines.append(f"  + b_{name[0]}[{j}] ({_f(b)}) = {_f(total)}")
    return f"{name}[{i},{j}] = x_{i}·W_{name[0]}[{j}] + b_{name[0]}[{j}]", lines, total


def _linear(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    """qkv_proj, query_proj, key_proj, projected: a row times a weight row (plus bias)."""
    i, j = index
    source_name, weight, bias = {
        "qkv_proj": (None, "W_qkv", "b_qkv"),
        "query_proj": ("query", "W_a", None),
        "key_proj": ("key", "U_a", None),
        "projected": ("concat", "W_o", "b_o"),
    }[name]
    source = model_input(trace) if source_name is None else trace.tensor(source_name)
    row = "k" if name == "key_proj" else ("c" if name == "projected" else ("x" if name == "qkv_proj" else "q"))
    lines, total = _sum_terms(list(zip(_row(source, i), _row(trace.params[weight], j))),
                              f"{row}_{i}", f"{weight}[{j}]")
    if bias is not None:
        b = float(trace.params[bias][j].double())
        total += b
        lines.append(f"  + {bias}[{j}] ({_f(b)}) = {_f(total)}")
    return f"{name}[{i},{j}] = {row}_{i}·{weight}[{j}]" + (f" + {bias}[{j}]" if bias else ""), lines, total


def _energy(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j, h = index
    if trace.variant == "additive":
        a = float(trace.tensor("query_proj")[i, h].double())
        b = float(trace.tensor("key_proj")[j, h].double())
        total = math.tanh(a + b)
        return (f"E[{i},{j},{h}] = tanh(W_a q_{i} + U_a k_{j})[{h}]",
                [f"(W_a q_{i})[{h}] = {_f(a)}", f"(U_a k_{j})[{h}] = {_f(b)}",
                 f"tanh({_f(a)} + {_f(b)}) = tanh({_f(a + b)}) = {_f(total)}"], total)
    pair = _row(trace.tensor("query"), i) + _row(trace.tensor("key"), j)
    lines, inner = _sum_terms(list(zip(_row(trace.params["W_c"], h), pair)), f"W_c[{h}]", f"[q_{i};k_{j}]")
    total = math.tanh(inner)
    lines.append(f"tanh({_f(inner)}) = {_f(total)}")
    return f"E[{i},{j},{h}] = tanh(W_c[q_{i}; k_{j}])[{h}]", lines, total


def _scores(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j = index
    if trace.variant in ("additive", "concat"):
        v_name = "v_a" if trace.variant == "additive" else "v_c"
        pairs = list(zip(trace.params[v_name].double().cpu().tolist(),
                         trace.tensor("energy")[i, j].double().cpu().tolist()))
        lines, total = _sum_terms(pairs, v_name, f"E[{i},{j}]")
        return f"S[{i},{j}] = {v_name}ᵀ E[{i},{j}]", lines, total
    q_name = "query_proj" if trace.variant == "general" else "query"
    q = _row(trace.tensor(q_name, head), i)
    k = _row(trace.tensor("key", head), j)
    sym = "q'" if trace.variant == "general" else "q"
    lines, total = _sum_terms(list(zip(q, k)), f"{sym}_{i}", f"k_{j}")
    return f"S[{i},{j}] = {sym}_{i}·k_{j}", lines, total


def _scaled(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j = index
    s = float(trace.tensor("scores", head)[i, j].double())
    d_k = trace.tensor("key", head).shape[1]
    scale = float(trace.config.get("scale", 1 / math.sqrt(d_k)))  # a real model states its own
    total = s * scale
    if not math.isclose(scale, 1 / math.sqrt(d_k), rel_tol=1e-6):
        return (f"S'[{i},{j}] = S[{i},{j}] · scale", [f"{_f(s)} · {_f(scale)}", f"= {_f(total)}",
                "(the model's own scaling factor)"], total)
    return (f"S'[{i},{j}] = S[{i},{j}] / √d_k",
            [f"{_f(s)} / √{d_k} = {_f(s)} / {_f(math.sqrt(d_k))}", f"= {_f(total)}",
             "(keeps the scores near unit variance so softmax does not saturate)"], total)


def _masked(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j = index
    t = _temperature(trace)
    before = float(trace.tensor(_pre_mask_name(trace), head)[i, j].double())
    mask = mask_of(trace, head)
    allowed = True if mask is None else bool(mask[i, j])
    lines = [f"mask[{i},{j}] = {int(allowed)}   (1 = may attend)"]
    if t != 1:
        lines.append(f"divided by the temperature: {_f(before)} / {t:g}")
    if allowed:
        total = before / t
        lines.append(f"kept: {_f(total)}")
    else:
        fill = str(trace.config.get("mask_fill", "-inf"))
        total = FILLS[fill]
        lines.append(f"masked: replaced by the fill {fill}")
    return f"M[{i},{j}]", lines, total


def _weights(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j = index
    return _softmax_cell(_row(trace.tensor("masked", head), i), i, j, "M")


def _softmax_cell(row: list[float], i: int, j: int, m: str):
    """Softmax of one row at column j, written out with the max subtracted."""
    finite = [x for x in row if not math.isinf(x)]
    if not finite:
        return (f"A[{i},{j}]", ["every key of this row is masked with -∞:",
                                "the row has nothing to attend to, so its weights are 0 (as SDPA returns)"], 0.0)
    top = max(finite)
    exps = [0.0 if math.isinf(x) else math.exp(x - top) for x in row]
    denom = math.fsum(exps)
    total = exps[j] / denom
    shown = " + ".join(_f(e) for e in exps[:MAX_TERMS]) + (" + …" if len(exps) > MAX_TERMS else "")
    return (f"A[{i},{j}] = exp({m}[{i},{j}] − max) / Σ_k exp({m}[{i},k] − max)",
            [f"max of row {i} = {_f(top)}",
             f"exp({_f(row[j])} − {_f(top)}) = {_f(exps[j])}",
             f"Σ_k = {shown} = {_f(denom)}",
             f"{_f(exps[j])} / {_f(denom)} = {_f(total)}"], total)


def _output(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j = index
    a = _row(trace.tensor("weights", head), i)
    v = trace.tensor("value", head)[:, j].double().cpu().tolist()
    lines, total = _sum_terms(list(zip(a, v)), f"A[{i}]", f"V[:,{j}]")
    lines[0] = f"Σ_k A[{i},k]·V[k,{j}]  (weights × column {j} of the values) ="
    return f"O[{i},{j}] = Σ_k A[{i},k] V[k,{j}]", lines, total


def _concat(trace: Trace, name: str, head: int | None, index: tuple[int, ...]):
    i, j = index
    d_h = trace.tensor("output", 0).shape[1]
    h, col = divmod(j, d_h)
    value = float(trace.tensor("output", h)[i, col].double())
    return (f"C[{i},{j}]", [f"column {j} = column {col} of head {h}'s output", f"= {_f(value)}"], value)


_HANDLERS = {
    "embedding": _embedding,
    "positional": _positional,
    "embedded_pos": _embedded_pos,
    "query": _projection,
    "key": _projection,
    "value": _projection,
    "qkv_proj": _linear,
    "query_proj": _linear,
    "key_proj": _linear,
    "projected": _linear,
    "energy": _energy,
    "scores": _scores,
    "scaled": _scaled,
    "masked": _masked,
    "weights": _weights,
    "output": _output,
    "concat": _concat,
}


# ----- seq2seq decoder steps: index (0, …) is the one query of step t ----------------------------
def _state(trace: Trace, name: str, t: int, index: tuple[int, ...]):
    value = float(trace.tensor_at(name, t)[index].double())
    what = {"query": f"the decoder GRU's state s_{t} before output {t}: the network's memory, not attention",
            "key": f"encoder output h_{index[0]}: the bidirectional GRU's reading of input character {index[0]}"}
    lines = [what.get(name, "computed by the network as is"), f"= {_f(value)}"]
    return f"{name}{list(index)} at step {t}", lines, value


def _s2s_linear(trace: Trace, name: str, t: int, index: tuple[int, ...]):
    """query_proj = W_a s_t, key_proj = U_a h_j: a row times a weight row (no bias)."""
    i, a = index
    source, weight = ("query", "W_a") if name == "query_proj" else ("key", "U_a")
    sym = "s_t" if source == "query" else f"h_{i}"
    pairs = list(zip(_row(trace.tensor_at(source, t), i), _row(trace.params[weight + ".weight"], a)))
    lines, total = _sum_terms(pairs, sym, f"{weight}[{a}]")
    return f"{name}[{i},{a}] = {sym}·{weight}[{a}]", lines, total


def _s2s_energy(trace: Trace, name: str, t: int, index: tuple[int, ...]):
    _, j, a = index
    q = float(trace.tensor_at("query_proj", t)[0, a].double())
    k = float(trace.tensor_at("key_proj", t)[j, a].double())
    total = math.tanh(q + k)
    return (f"E[{j},{a}] = tanh(W_a s_{t} + U_a h_{j})[{a}]",
            [f"(W_a s_{t})[{a}] = {_f(q)}", f"(U_a h_{j})[{a}] = {_f(k)}",
             f"tanh({_f(q)} + {_f(k)}) = tanh({_f(q + k)}) = {_f(total)}"], total)


def _s2s_scores(trace: Trace, name: str, t: int, index: tuple[int, ...]):
    _, j = index
    if trace.config.get("attention") == "additive":
        v = trace.params["v_a.weight"][0].double().cpu().tolist()  # (A,)
        lines, total = _sum_terms(list(zip(v, _row(trace.tensor_at("energy", t)[0], j))), "v_a", f"E[{j}]")
        return f"e_{j} = v_aᵀ tanh(W_a s_{t} + U_a h_{j})", lines, total
    lines, total = _sum_terms(list(zip(_row(trace.tensor_at("query_proj", t), 0), _row(trace.tensor_at("key", t), j))),
                              f"(W_a s_{t})", f"h_{j}")
    return f"e_{j} = (W_a s_{t})·h_{j}", lines, total


def _s2s_weights(trace: Trace, name: str, t: int, index: tuple[int, ...]):
    title, lines, total = _softmax_cell(_row(trace.tensor_at("scores", t), 0), 0, index[1], "e")
    return f"α_{t},{index[1]}: " + title, lines, total


def _s2s_context(trace: Trace, name: str, t: int, index: tuple[int, ...]):
    _, k = index
    alpha = _row(trace.tensor_at("weights", t), 0)
    h = trace.tensor_at("key", t)[:, k].double().cpu().tolist()
    lines, total = _sum_terms(list(zip(alpha, h)), "α", f"h[:,{k}]")
    lines[0] = f"Σ_j α_j·h_j[{k}]  (this step's weights × column {k} of the encoder outputs) ="
    return f"c_{t}[{k}] = Σ_j α_j h_j[{k}]", lines, total


def _s2s_alignment(trace: Trace, name: str, t: int, index: tuple[int, ...]):
    row, j = index
    value = float(trace.tensor_at("weights", row)[0, j].double())
    return (f"A[{row},{j}] = α_{row},{j}",
            [f"row {row} is the weights of decoder step {row} (output {trace.query_tokens[row]!r})",
             f"weight on input character {j} ({trace.key_tokens[j]!r}) = {_f(value)}"], value)


_SEQ2SEQ = {
    "query_proj": _s2s_linear,
    "key_proj": _s2s_linear,
    "energy": _s2s_energy,
    "scores": _s2s_scores,
    "weights": _s2s_weights,
    "context": _s2s_context,
    "alignment": _s2s_alignment,
}
