"""A DeepSeek (MLA) layer writing token by token: its cache is the normed latent and the turned rotary key.

What DeepSeek keeps per token is c_kv (kv_lora_rank numbers) and k_rot (qk_rope_head_dim numbers), not a key and
a value per head. A step computes the new rows' latent and rotary key, appends them, and scores the new queries
against the cache itself: W_uk folded into the query (q_nope·W_uk,h against ĉ_kv, the absorbed form), so no key
is rebuilt and a step costs one step. The weights equal the expanded form's (the tests hold them to one full
forward of the model); every other stage of a step is traced when a view asks, by the `mla` variant's `record`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attn_tui.ask.budget import format_bytes
from attn_tui.attention.variants.mla.compute import rms
from attn_tui.i18n import Msg
from attn_tui.sources.families.spec import LatentFamily
from attn_tui.sources.model_run import LoadedModel, ModelRun
from attn_tui.trace.masks import softmax_dtype
from attn_tui.trace.ops import Given, Place
from attn_tui.trace.stage import Axis, Stage, Trace


def latent_cache_formula(step: int, rows: int, new: int, rank: int, d_rope: int, heads: int, d_qk: int, d_v: int,
                         item: int) -> Msg:
    """What the latent cache holds after `step`, and what full multi-head attention would hold instead."""
    size = rows * (rank + d_rope) * item
    full = rows * heads * (d_qk + d_v) * item
    return Msg("MLA cache after step {step}: {rows} rows × [ĉ_kv {r} | k_rot {d}] (the last {new} new at this step): "
               "{size}. Full multi-head attention would cache a key ({heads} × {d_qk}) and a value ({heads} × "
               "{d_v}) per position: {full}, {ratio}× as much", step=step, rows=rows, r=rank, d=d_rope,
               new=min(new, rows), size=format_bytes(size), heads=heads, d_qk=d_qk, d_v=d_v, full=format_bytes(full),
               ratio=f"{full / size:.3g}")


class LatentStep:
    """One MLA layer's cache as DeepSeek keeps it, a row a position, and its steps' weights read from it."""

    def __init__(self, loaded: LoadedModel, index: int, deepseek_v3: LatentFamily) -> None:
        self.loaded, self.index = loaded, index
        model = loaded.model
        self.attn = model.layers[index].self_attn
        self.norm = model.layers[index].input_layernorm
        self.prefix = f"blocks.{index}."
        self.family = deepseek_v3
        self.m = deepseek_v3.latent_sizes(self.attn, model.config, loaded.heads, self.prefix)
        self.latent: torch.Tensor | None = None  # (n, kv_rank): ĉ_kv of every position so far
        self.k_rot: torch.Tensor | None = None  # (n, d_rope): the turned shared key of every position so far

    @property
    def w(self) -> dict[str, torch.Tensor]:
        """The layer's weights as they are now: read at each step, since an offloaded layer's are in memory only
        while the step reads them (the writer's `in_memory`)."""
        return self.family.weights(self.attn, self.m.kv_rank, self.m.heads, self.m.d_nope)

    def step(self, trace: Trace, rows: torch.Tensor, first: int, labels: tuple[str, ...], step: int
             ) -> torch.Tensor:
        m, w = self.m, self.w
        x = self.norm(rows[None])[0]  # (q, d): what the projections read
        q = x.shape[0]
        turn = self.family.turn_at(self.loaded.model, x, first, self.prefix)
        at = Place("latent_cache", self.index, None, step)
        latent = rms(F.linear(x, w["W_dkv"], w.get("b_dkv")), w["kv_norm"], m.eps_kv)  # (q, r)
        k_rot = turn(F.linear(x, w["W_kr"], w.get("b_kr")), at, at)[0]  # (q, d_rope)
        self.latent = latent if self.latent is None else torch.cat([self.latent, latent])  # (n, r)
        self.k_rot = k_rot if self.k_rot is None else torch.cat([self.k_rot, k_rot])  # (n, d_rope)
        if "W_qa" in w:
            q_all = F.linear(rms(F.linear(x, w["W_qa"], w.get("b_qa")), w["q_norm"], m.eps_q), w["W_qb"])
        else:
            q_all = F.linear(x, w["W_q"])
        queries = q_all.view(q, m.heads, m.d_qk).transpose(0, 1)  # (H, q, d_qk)
        q_rot = torch.stack([turn(queries[h, :, m.d_nope:], at, at)[0] for h in range(m.heads)])  # (H, q, d_rope)
        w_uk = w["W_uk"].view(m.heads, m.d_nope, m.kv_rank)  # (H, d_nope, r)
        absorbed = queries[:, :, :m.d_nope] @ w_uk  # (H, q, r): W_uk folded into the query
        scores = absorbed @ self.latent.T + q_rot @ self.k_rot.T  # (H, q, n)
        n = scores.shape[-1]
        masked = (scores * m.scale).to(softmax_dtype(scores.dtype))
        if q > 1:  # the prompt's rows: each sees the keys up to its own
            at_q = torch.arange(first, first + q, device=x.device)[:, None]
            masked = masked.masked_fill(torch.arange(n, device=x.device)[None, :] > at_q, float("-inf"))
        self._record_cache(trace, step, labels, q)
        return torch.softmax(masked, dim=-1)  # (H, q, n)

    def _record_cache(self, trace: Trace, step: int, labels: tuple[str, ...], new: int) -> None:
        assert self.latent is not None and self.k_rot is not None
        m = self.m
        cache = torch.cat([self.latent, self.k_rot], dim=-1)  # (n, r + d_rope)
        columns = Axis("cached", tuple(f"c{i}" for i in range(m.kv_rank)) + tuple(f"r{i}" for i in range(m.d_rope)))
        formula = latent_cache_formula(step, cache.shape[0], new, m.kv_rank, m.d_rope, m.heads, m.d_qk, m.d_v,
                                       cache.element_size())
        at = Place("latent_cache", self.index, None, step)
        trace.add(Stage(at, cache, formula, (Axis("key", labels), columns),
                        Given(Msg("kept by the writer after step {step}: each position's ĉ_kv and k_rot, computed "
                                  "once, when its token was read", step=step))))

    def record(self, trace: Trace, run_: ModelRun, step: int, queries: int) -> float:
        kept = trace.stages.pop(Place("latent_cache", self.index, None, step), None)  # back in its place after
        scale = self.family.record_layer(run_, trace, self.index, step, queries if step else None)
        if kept is not None:  # the cache as the writer kept it, its bytes beside full attention's, stays on show
            trace.stages[kept.place] = kept
        return scale
