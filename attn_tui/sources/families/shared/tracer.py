"""The one layer tracer every model family shares: a LayerSpec in, every stage of that layer's heads out.

Projections (a head's rows of W_q, W_k, W_v), a norm on q and k where the model has one
(per head, or over the whole projection before the split into heads), the rotation where
it is rotary (all of a head or a fraction of it, rotate-half or interleaved), scores and
the model's own scale, a soft cap, then the shared tail with the layer's own mask (its
window where it slides). The stages and ops are those of the `scaled_dot`, `rope` and
`gqa` variants, recorded by the same functions, so a model's stages read as the variants'
do; each layer also records its geometry (trace/geometry.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import torch
import torch.nn.functional as F

from attn_tui.attention.attend import PreStage, Tail, score_stages
from attn_tui.attention.variants.gqa.compute import kv_map, shared_formula
from attn_tui.attention.variants.rope.compute import angles, record_rotation, rotate, rotated_score_stages
from attn_tui.attention.variants.scaled_dot.compute import scaled_pre, scaled_stages
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.sources.families.shared.output_proj import output_weight
from attn_tui.sources.families.spec import Family, LayerSpec, NormSpec, RotarySpec
from attn_tui.sources.model_run import ModelRun
from attn_tui.trace.geometry import LayerGeometry, Positional
from attn_tui.trace.lazy import PreTile
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.meta import TransformerRun
from attn_tui.trace.ops import Dot, HeadNorm, Linear, MovedNorm, PartialRotary, Place, SoftCap
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis

Fill = Callable[[ModelRun, Trace, "int | None"], None]


def trace_run(run_: ModelRun, layer: int, head: int, family: Family) -> Trace:
    """The run as one Trace; `layer` is computed now (every head of it), the others when asked for."""
    loaded = run_.loaded
    cfg = loaded.model.config
    kv_heads = family.kv_heads(cfg)
    meta = TransformerRun(model=loaded.name, family=loaded.family, layers=loaded.layers, heads=loaded.heads,
                          scale=0.0, causal=loaded.causal, special_tokens=run_.special, kv_heads=kv_heads,
                          kv_map=kv_map(loaded.heads, kv_heads) if kv_heads else (), rope_base=family.rope_base(cfg),
                          offloaded=loaded.offloaded, token_ids=run_.ids, probe=run_.probe,
                          scored_from=run_.scored_from, layer_heads=family.layer_heads(cfg))
    return layered_trace(run_, meta, layer, head, lambda r, t, lay: fill_layer(r, t, lay, family))


def layered_trace(run_: ModelRun, meta: TransformerRun, layer: int, head: int, fill: Fill) -> Trace:
    """A model's run as one Trace whose layers `fill` computes: `layer` now, the others when asked for."""
    loaded = run_.loaded
    if not 0 <= layer < loaded.layers:
        raise ConfigError(Msg("--layer {layer} is out of range: {model} has layers 0…{last}", layer=layer,
                              model=loaded.name, last=loaded.layers - 1))
    own = meta.layer_heads[layer] if meta.layer_heads else loaded.heads  # a layer may have its own count
    if not 0 <= head < own and meta.layer_heads:
        raise ConfigError(Msg("--head {head} is out of range: layer {layer} of {model} has heads 0…{last}",
                              head=head, layer=layer, model=loaded.name, last=own - 1))
    if not 0 <= head < own:
        raise ConfigError(Msg("--head {head} is out of range: {model} has heads 0…{last}", head=head,
                              model=loaded.name, last=loaded.heads - 1))
    n = len(run_.tokens)
    mask = None if bool(run_.mask.all()) else MaskSpec((n, n), meta.causal, run_.padding, dense=run_.mask)
    trace = Trace(meta, run_.tokens, run_.tokens, str(run_.mask.device),
                  str(next(loaded.model.parameters()).dtype).replace("torch.", ""), mask=mask,
                  warnings=list(run_.warnings), filler=lambda t, lay, _head: fill(run_, t, lay))
    fill(run_, trace, layer)
    return trace


def fill_layer(run_: ModelRun, trace: Trace, layer: int | None, family: Family) -> None:
    """Every head of `layer`, read by the family into a LayerSpec and traced by `record_layer`.

    An offloaded layer's weights are read into memory for this (accelerate's own hooks) and let go after:
    the trace keeps the rows it shows (W_q, W_k, W_v, the norms), not the layer.
    """
    if layer is None or not 0 <= layer < run_.loaded.layers:
        return
    with torch.no_grad(), run_.loaded.in_memory(layer):
        scale: float | None
        own = family.own_layer(run_.loaded.model, layer)
        if own is not None:  # a layer that records itself
            scale = own.record(run_, trace, layer)
        else:
            spec = family.layer(run_, layer)
            w_o = output_weight(run_.loaded.model, run_.loaded.blocks, layer, spec.x.shape[-1], family.output)
            if w_o is not None and w_o.shape[1] == spec.heads * spec.head_dim and family.w_o_reads_heads():
                spec = replace(spec, weights={**spec.weights, "W_o": w_o})  # the `moved` stage reads it
            record_layer(trace, spec, layer, run_, grouped=family.kv_heads(run_.loaded.model.config) > 0)
            for part in family.after_heads:
                part.record(trace, spec, layer, run_, None, None)
            scale = spec.scale
    if scale is not None:  # a layer without scores (a state) leaves the run's scale as the last one that has
        trace.meta = replace(trace.meta, scale=scale)  # type: ignore[arg-type]


def layer_mask(trace: Trace, spec: LayerSpec, run_: ModelRun, own: bool = False) -> MaskSpec | None:
    """The trace's mask for a global layer; for a sliding one, the model's mask cut to the window.

    `own`: the run's own mask even for a global layer (a generation step's run is longer than the trace's)."""
    if spec.window is None and not own:
        return trace.mask
    n = len(run_.tokens)
    if spec.window is None:
        return MaskSpec((n, n), spec.causal, run_.padding, dense=run_.mask)
    at = torch.arange(n, device=run_.mask.device)
    band = at[None, :] > at[:, None] - spec.window  # (N, N): key j within the window of query i
    return MaskSpec((n, n), spec.causal, run_.padding, dense=run_.mask & band, window=spec.window)


def geometry(spec: LayerSpec) -> LayerGeometry:
    kind = "sliding" if spec.window is not None else "causal" if spec.causal else "full"
    rotary = spec.rotary
    positional = (Positional("rotary", rotary.base, rotary.fraction, rotary.interleaved) if rotary is not None
                  else Positional(spec.positional))
    return LayerGeometry(kind, spec.window, positional, spec.scale, spec.soft_cap, scale_name=spec.scale_name)


def record_layer(trace: Trace, spec: LayerSpec, layer: int, run_: ModelRun, grouped: bool, step: int | None = None,
                 queries: int | None = None) -> None:
    """Every stage of every head of one layer, from its description.

    `step` places the stages at a generation step; `queries`: only the last `queries` rows of `spec.x` query
    (a generated token's one row), while every row is a key (what the cache holds)."""
    prefix = f"blocks.{layer}."
    n, heads, d_h = spec.x.shape[0], spec.heads, spec.head_dim
    first = 0 if queries is None else n - queries  # the position of the first query row
    rows = slice(first, n)
    x_name = prefix + "X" + ("" if step is None else f"@t{step}")
    q_name = x_name if first == 0 else prefix + f"x_q@t{step}"
    trace.inputs[x_name] = spec.x
    trace.inputs[q_name] = spec.x[rows]
    for name, tensor in spec.weights.items():
        trace.params[prefix + name] = tensor.detach()
    groups = kv_map(heads, spec.kv_heads)
    tokens, keys = Axis("query", run_.tokens[rows]), Axis("key", run_.tokens)
    axes = {"q": tokens, "k": keys, "v": keys}
    dims = dim_axis(d_h)
    projected = {}
    for part, count in (("q", heads), ("k", spec.kv_heads), ("v", spec.kv_heads)):
        x = spec.x[rows] if part == "q" else spec.x
        full = F.linear(x, spec.weights[f"W_{part}"], spec.weights.get(f"b_{part}"))  # (rows, count·d_h)
        projected[part] = full.view(x.shape[0], count, d_h).transpose(0, 1)  # (count, rows, d_h)
    names = {"q": "query", "k": "key", "v": "value"}
    for h in range(heads):
        g = groups[h]
        for part in "qkv":
            index = h if part == "q" else g
            bias = prefix + f"b_{part}" if f"b_{part}" in spec.weights else None
            formula = _projection_formula(part, h, g, groups, d_h, spec, grouped)
            if spec.fused is not None:  # the rows the model's own fused projection holds them in
                first_row = spec.fused.first_row(part, index)
                formula = Msg("{formula}; rows {a}…{b} of the model's fused {module}", formula=formula, a=first_row,
                              b=first_row + d_h - 1, module=spec.fused.module)
            trace.add(Stage(Place(names[part], layer, h, step), projected[part][index], formula, (axes[part], dims),
                            Linear(q_name if part == "q" else x_name, prefix + f"W_{part}", bias, index * d_h)))
    q, k = projected["q"], projected["k"]  # (H, L, d_h), (H_kv, N, d_h)
    q_last, k_last = "query", "key"
    if spec.q_norm is not None:
        q = _record_norm(trace, spec.q_norm, q, "query", layer, heads, tuple(range(heads)), tokens, dims, step)
        q_last = "query_norm"
    if spec.k_norm is not None:
        k = _record_norm(trace, spec.k_norm, k, "key", layer, heads, groups, keys, dims, step)
        k_last = "key_norm"
    k_heads = k[torch.tensor(groups, device=k.device)]  # (H, N, d_h): each query head's key
    if spec.rotary is not None:
        q, k_heads = _record_rotary(trace, spec.rotary, q, k_heads, q_last, k_last, layer, (tokens, keys), dims,
                                    step, first)
        stages, factor = rotated_score_stages((tokens, keys), d_h, spec.scale)
    else:
        stages, factor = scaled_stages((tokens, keys), d_h, spec.scale)
        if (q_last, k_last) != ("query", "key"):  # a per-head norm: the scores read the normed q and k
            stages[0] = PreStage("scores", "S = Q_n·K_nᵀ: S[i,j] = q_n,i·k_n,j", (tokens, keys),
                                 lambda at: Dot(at.at(q_last), at.at(k_last)))
    if spec.scale_name is not None:  # the model's own factor, named as its config names it
        stages[1] = replace(stages[1], formula=Msg("S' = S · {scale}   (the model's {name}, not 1/√d_k = {usual})",
                                                   scale=f"{spec.scale:.4g}", name=spec.scale_name,
                                                   usual=f"{d_h ** -0.5:.4g}"))
    pre, last = scaled_pre(q, k_heads, factor), "scaled"
    if spec.soft_cap is not None:
        pre, last = _capped(pre, spec.soft_cap), "capped"
        cap = spec.soft_cap
        stages.append(PreStage("capped", Msg("S_cap = {cap}·tanh(S' / {cap})   (the model's soft cap keeps every "
                                             "score inside ±{cap})", cap=f"{cap:g}"), (tokens, keys),
                               lambda at: SoftCap(at.at("scaled"), cap)))
    mask = layer_mask(trace, spec, run_, own=step is not None)
    trace.layer_masks[layer] = mask
    trace.geometry[layer] = geometry(spec)
    if mask is not None and first:
        mask = mask.part(rows, slice(None))  # the query rows' part: cell (0, j) is cell (first, j) of the whole
    tail = Tail(tokens, keys, mask, "-inf", 1.0, output_formula="O = A·V_h")
    values = projected["v"][torch.tensor(groups, device=spec.x.device)]  # (H, N, d_h): each head's group's
    score_stages(trace, tail, pre, stages, last, values, [Place("scores", layer, h, step) for h in range(heads)],
                 [Place("value", layer, h, step) for h in range(heads)], lazy=False)
    if "W_o" in spec.weights:
        record_moved(trace, spec.weights["W_o"], values, layer, (tokens, keys), step)


def record_moved(trace: Trace, w_o: torch.Tensor, values: torch.Tensor, layer: int, qk_axes: tuple[Axis, Axis],
                 step: int | None = None) -> None:
    """Stage `moved` of every head: ‖A[i, j] · v_j·W_O,hᵀ‖ (Kobayashi et al. 2020, "Attention is not only a weight").

    The weights alone say where a head looks; a key whose value W_O maps to almost nothing moves almost nothing
    however large its weight. α ≥ 0, so the norm is α_ij · ‖v_j·W_O,hᵀ‖: one norm per key, times the weights.
    w_o (d, H·d_h) in nn.Linear's layout; values (H, S, d_h): each query head's value rows.
    """
    heads, _, d_h = values.shape
    w = w_o.to(values.device, torch.float32)
    for h in range(heads):
        at = Place("weights", layer, h, step)
        weights = trace.stages[at].data  # (L, S): whole, as a model's layer is traced (never lazy)
        assert isinstance(weights, torch.Tensor)
        weights = weights.float()
        moved_by = values[h].float() @ w[:, h * d_h:(h + 1) * d_h].T  # (S, d): what each key adds, unweighted
        moved = weights * moved_by.norm(dim=-1)[None, :]  # (L, S)
        trace.add(Stage(at.at("moved"), moved, Msg("M[i,j] = ‖A[i,j] · v_j·W_O,{h}ᵀ‖   (the size of what key j adds "
                                                   "to query i's output through head {h}, after W_O; Kobayashi et "
                                                   "al. 2020)", h=h), qk_axes,
                        MovedNorm(at, at.at("value"), f"blocks.{layer}.W_o", h * d_h)))


def _projection_formula(part: str, h: int, g: int, groups: tuple[int, ...], d_h: int, spec: LayerSpec,
                        grouped: bool) -> Msg:
    if not grouped and f"b_{part}" not in spec.weights:  # a model without biases (GPT-NeoX's attention_bias off)
        return Msg("{letter}_h = X·W_{part}ᵀ, columns of head {h}   (X = {source})", letter=part.upper(), part=part,
                   h=h, source=spec.source)
    if not grouped:
        return Msg("{letter}_h = X·W_{part}ᵀ + b_{part}, columns of head {h}   (X = {source})", letter=part.upper(),
                   part=part, h=h, source=spec.source)
    if part == "q":
        bias = " + b_q" if "b_q" in spec.weights else ""
        if isinstance(spec.source, str) and spec.source.endswith("(X)"):  # RMSNorm(X), LayerNorm(X): a formula
            return Msg("Q_{h} = {source}·W_qᵀ{bias}, columns of head {h}   (before the rotation)", h=h, bias=bias,
                       source=spec.source)
        # a layer that reads X otherwise (OLMo-2: the raw input, normed after attention), said in words
        return Msg("Q_{h} = X·W_qᵀ{bias}, columns of head {h}   (X = {source}; before the rotation)", h=h, bias=bias,
                   source=spec.source)
    return shared_formula(part.upper(), h, g, groups, f"{g * d_h}…{(g + 1) * d_h - 1}")


def head_norm(x: torch.Tensor, norm: NormSpec) -> torch.Tensor:
    """x (…, d_h) normalised over its last axis, as the model's RMSNorm or LayerNorm does, in float32."""
    x32 = x.float()
    weight = norm.offset + norm.weight.float()
    if norm.kind == "rms":
        out = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + norm.eps) * weight
    else:
        out = F.layer_norm(x32, (x.shape[-1],), weight, None if norm.bias is None else norm.bias.float(), norm.eps)
    return out.to(x.dtype)


def _record_norm(trace: Trace, norm: NormSpec, x: torch.Tensor, name: str, layer: int, heads: int,
                 index: tuple[int, ...], axis: Axis, dims: Axis, step: int | None = None) -> torch.Tensor:
    """Stages `{name}_norm` of each query head (head h reads row index[h] of x); returns x normed (rows, N, d_h).

    A norm over the whole projection (OLMo-2) runs over every row's dimensions side by side, as the model
    norms X·Wᵀ before splitting it into heads; each head's stage keeps its own columns of the result."""
    letter = name[0]
    prefix = f"blocks.{layer}."
    trace.params[prefix + f"{letter}_norm"] = norm.weight.detach()
    bias = None
    if norm.bias is not None:
        bias = prefix + f"{letter}_norm_bias"
        trace.params[bias] = norm.bias.detach()
    rows, n, d_h = x.shape
    kind = "RMSNorm" if norm.kind == "rms" else "LayerNorm"
    weight = "(1 + w)" if norm.offset else "w"
    whole: tuple[Place, ...] = ()
    if norm.scope == "projection":
        joined = x.transpose(0, 1).reshape(n, rows * d_h)  # (N, rows·d_h): the projection before the split
        normed = head_norm(joined, norm).view(n, rows, d_h).transpose(0, 1)  # (rows, N, d_h)
        readers = {row: h for h, row in reversed(list(enumerate(index)))}  # each row's first query head
        whole = tuple(Place(name, layer, readers[row]) for row in range(rows))
        formula = Msg("{letter}_n = {norm}(X·W_{lower}ᵀ) over the whole projection's {d} dimensions ({rows} heads "
                      "side by side, normed before the split into heads), times {weight}", letter=letter.upper(),
                      norm=kind, lower=letter, d=rows * d_h, rows=rows, weight=weight)
    else:
        normed = head_norm(x, norm)  # (rows, N, d_h)
        formula = Msg("{letter}_n = {norm}({letter}_h) over the head's {d} dimensions, times {weight}   (each "
                      "head's {letter} is normed before the scores)", letter=letter.upper(), norm=kind, d=d_h,
                      weight=weight)
    for h in range(heads):
        trace.add(Stage(Place(f"{name}_norm", layer, h, step), normed[index[h]], formula, (axis, dims),
                        HeadNorm(Place(name, layer, h, step), norm.kind, prefix + f"{letter}_norm", norm.eps, bias,
                                 norm.offset, whole, index[h] * d_h if whole else 0)))
    return normed


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Interleaved rotary: pairs (2i, 2i + 1) turned, cos and sin (N, r) repeated per pair."""
    pairs = torch.stack([-x[..., 1::2], x[..., 0::2]], dim=-1).flatten(-2)  # [−x1, x0, −x3, x2, …]
    return x * cos + pairs * sin


def _record_rotary(trace: Trace, rotary: RotarySpec, q: torch.Tensor, k: torch.Tensor, q_last: str, k_last: str,
                   layer: int, qk_axes: tuple[Axis, Axis], dims: Axis, step: int | None = None, first: int = 0
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """query_rot and key_rot of every head (q: (H, L, d_h), its rows at positions first…; k: (H, N, d_h));
    returns them stacked."""
    n, d_h = k.shape[1], q.shape[2]
    rotated = round(d_h * rotary.fraction)
    rotated -= rotated % 2
    cos, sin = rotary.cos, rotary.sin
    if cos is None or sin is None:
        cos, sin = angles(n, rotated, rotary.base, q.dtype, q.device)  # (N, r): rotate-half layout
        if rotary.interleaved:
            cos, sin = (t[:, :rotated // 2].repeat_interleave(2, dim=-1) for t in (cos, sin))
        cos, sin = cos * rotary.scaling, sin * rotary.scaling
    whole = rotated == d_h and not rotary.interleaved
    out = []
    for x, source, name, axis in ((q, q_last, "query_rot", qk_axes[0]), (k, k_last, "key_rot", qk_axes[1])):
        turned = []
        start = first if name == "query_rot" else 0
        cos_x, sin_x = cos[start:], sin[start:]  # (rows, r): the angles of the rows' positions
        for h in range(x.shape[0]):
            at, src = Place(name, layer, h, step), Place(source, layer, h, step)
            if whole:  # Llama's layout, the whole head turned: the `rope` variant's own stage and op
                turned.append(record_rotation(trace, at, src, x[h], cos_x, sin_x, (axis, dims), rotary.base,
                                              rotary.scaling, start))
                continue
            turn = rotate_pairs if rotary.interleaved else rotate
            part = torch.cat([turn(x[h][:, :rotated], cos_x, sin_x), x[h][:, rotated:]], dim=-1)
            pairs = "(2i, 2i+1)" if rotary.interleaved else f"(i, i + {rotated // 2})"
            letter = "Q" if name.startswith("query") else "K"
            turned.append(trace.add(Stage(at, part, Msg(
                "{letter}_rot[p]: the first {r} of {d} dimensions turned pair by pair {pairs} by the angle p·θ_i, "
                "θ_i = {base}^(−2i/{r}); the rest pass unturned", letter=letter, r=rotated, d=d_h, pairs=pairs,
                base=f"{rotary.base:g}"), (axis, dims),
                PartialRotary(src, rotary.base, rotated, rotary.interleaved, rotary.scaling, start))))
        out.append(torch.stack(turned))
    return out[0], out[1]


def _capped(pre: PreTile, cap: float) -> PreTile:
    """The scores and scaled stages of `pre`, then capped = cap·tanh(scaled / cap), on any tile."""
    def capped(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        tiles = pre(rows, cols)
        return {**tiles, "capped": torch.tanh(tiles["scaled"] / cap) * cap}

    return capped
