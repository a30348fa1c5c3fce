"""A Qwen3-Next Gated DeltaNet layer writing token by token: its cache is one d_k × d_v state per value head.

Softmax attention keeps a key and a value per position, so its cache grows with the text; a linear layer keeps
the state S_t, the same size at every step. A step reads the new rows through the module's own projections and
its short causal convolution (the last kernel − 1 rows kept, as transformers keeps its conv state), then runs the
gated delta rule once per row: S ← α·S; S ← S + β·k̂(v − S·k̂)ᵀ (k̂ as a column, the recalled value as a row).

The step's implied attention row comes from the same recurrence without recomputing the prefix: S_t is
Σ_j w_j·v_jᵀ, with w_j (d_k) per position, and each step turns every w_j as it turns S (w_j ← α(w_j − β·k̂(k̂·w_j)))
and adds w_t = β·k̂_t, so the row is a_j = q̂_t·w_j and o_t = Σ_j a_j·v_j: one step costs O(n·d_k) per head.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from transformers.activations import ACT2FN

from attn_tui.ask.budget import format_bytes
from attn_tui.attention.variants.linear.compute import BETA_AXIS, DECAY_AXIS, l2_rows
from attn_tui.i18n import Msg
from attn_tui.sources.model_run import LoadedModel, ModelRun
from attn_tui.trace.ops import Given, Place
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis


def state_formula(step: int, d_k: int, d_v: int, heads: int, size: int, positions: int, full: int) -> Msg:
    return Msg("S after step {step}: {d_k} × {d_v} for this value head; the layer's {heads} heads hold {size}, the "
               "same at every step however long the text. A softmax layer with these heads would cache a key and a "
               "value per position: {full} for the {n} positions so far, and growing", step=step, d_k=d_k, d_v=d_v,
               heads=heads, size=format_bytes(size), n=positions, full=format_bytes(full))


class StateStep:
    """One Gated DeltaNet layer's state, conv window and per-position write vectors, kept between steps."""

    def __init__(self, loaded: LoadedModel, index: int) -> None:
        block = loaded.model.layers[index]
        self.index, self.norm, self.la = index, block.input_layernorm, block.linear_attn
        la = self.la
        self.heads, self.d_k, self.d_v = int(la.num_v_heads), int(la.head_k_dim), int(la.head_v_dim)
        self.share = self.heads // int(la.num_k_heads)  # value heads per key head
        channels = 2 * int(la.key_dim) + int(la.value_dim)
        device = loaded.runs_on  # not its weights': an offloaded layer's are on the meta device until read
        self.before = torch.zeros(int(la.conv_kernel_size) - 1, channels, device=device)  # the conv's last rows
        self.state = torch.zeros(self.heads, self.d_k, self.d_v, device=device)  # (H_v, d_k, d_v): S so far
        self.w = torch.zeros(self.heads, 0, self.d_k, device=device)  # (H_v, n, d_k): S = Σ_j w_j·v_jᵀ

    def features(self, rows: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """q̂, k̂ (q, H_v, d_k), v (q, H_v, d_v), g, β (q, H_v) and z (q, H_v, d_v) of the new rows (q, d)."""
        la = self.la
        x = self.norm(rows[None])  # (1, q, d)
        q = x.shape[1]
        query, key, value, z, b, a = la.fix_query_key_value_ordering(la.in_proj_qkvz(x), la.in_proj_ba(x))
        mixed = torch.cat([t.reshape(q, -1) for t in (query, key, value)], dim=-1)  # (q, C) before the conv
        window = torch.cat([self.before.to(mixed.dtype), mixed])  # (K − 1 + q, C)
        self.before = window[window.shape[0] - self.before.shape[0]:]
        m = window.shape[0]
        conv = ACT2FN[la.activation](la.conv1d(window.T[None])[..., :m])[0].T[m - q:]  # (q, C): causal conv, act
        kd = int(la.key_dim)
        repeat = torch.arange(self.heads, device=rows.device) // self.share  # value head h reads key head h // share
        q_all = conv[:, :kd].reshape(q, -1, self.d_k)[:, repeat].float()
        k_all = conv[:, kd:2 * kd].reshape(q, -1, self.d_k)[:, repeat].float()
        v_all = conv[:, 2 * kd:].reshape(q, self.heads, self.d_v).float()
        g = -la.A_log.float().exp() * F.softplus(a[0].float() + la.dt_bias)  # (q, H_v)
        beta = b[0].sigmoid().float()  # (q, H_v)
        return l2_rows(q_all) * self.d_k ** -0.5, l2_rows(k_all), v_all, g, beta, z[0]

    def step(self, trace: Trace, rows: torch.Tensor, first: int, labels: tuple[str, ...], step: int) -> None:
        q_hat, k_hat, v, g, beta, z = self.features(rows)
        q = rows.shape[0]
        n = first + q
        implied = torch.zeros(self.heads, q, n, device=rows.device)  # (H_v, q, n)
        out = torch.zeros(q, self.heads, self.d_v, device=rows.device)
        for r in range(q):
            alpha, k, b = g[r].exp()[:, None, None], k_hat[r], beta[r][:, None]  # (H, 1, 1), (H, d_k), (H, 1)
            self.state = self.state * alpha
            recalled = torch.einsum("hkv,hk->hv", self.state, k)  # (H, d_v): what S returns for k̂ now
            self.state = self.state + torch.einsum("hk,hv->hkv", k, (v[r] - recalled) * b)
            turned = self.w - (b * k)[:, None, :] * (self.w @ k[:, :, None])  # (H, m, d_k): (I − β·k̂k̂ᵀ)·w_j
            self.w = torch.cat([turned * alpha, (b * k)[:, None, :]], dim=1)  # (H, m + 1, d_k)
            out[r] = torch.einsum("hkv,hk->hv", self.state, q_hat[r])  # (H, d_v): o = q̂·S
            implied[:, r, :self.w.shape[1]] = (self.w @ q_hat[r][:, :, None])[..., 0]  # (H, m + 1)
        normed = self.la.norm(out.to(z.dtype), z)  # (q, H_v, d_v): the module's own gated RMSNorm
        self._record(trace, step, labels, implied, normed, g.exp(), beta)

    def _record(self, trace: Trace, step: int, labels: tuple[str, ...], implied: torch.Tensor,
                normed: torch.Tensor, decay: torch.Tensor, beta: torch.Tensor) -> None:
        """Per value head: the step's decay and write strength (q, 1), the state after it, its implied rows and
        what out_proj reads. decay, beta (q, H_v)."""
        n, q = len(labels), implied.shape[1]
        item = self.state.element_size()
        size = self.heads * self.d_k * self.d_v * item
        full = self.heads * n * (self.d_k + self.d_v) * item
        queries, keys = Axis("query", labels[n - q:]), Axis("key", labels)
        key_dims, value_dims = dim_axis(self.d_k, "key dim", "k"), dim_axis(self.d_v, "value dim", "v")
        held = Given(Msg("kept by the writer after step {step}: the gated delta rule run once for each token it "
                         "read", step=step))
        for h in range(self.heads):
            trace.add(Stage(Place("decay", self.index, h, step), decay[:, h:h + 1], Msg(
                "α_t = exp(g_t), g_t = −exp(A_log)·softplus(x_t·w_a + dt_bias): the share of the state kept"),
                (queries, DECAY_AXIS), held))
            trace.add(Stage(Place("beta", self.index, h, step), beta[:, h:h + 1],
                            Msg("β_t = σ(x_t·w_b): how strongly token t writes its value"), (queries, BETA_AXIS), held))
            trace.add(Stage(Place("state", self.index, h, step), self.state[h].clone(),
                            state_formula(step, self.d_k, self.d_v, self.heads, size, n, full),
                            (key_dims, value_dims), held))
            trace.add(Stage(Place("implied", self.index, h, step), implied[h],
                            Msg("A[t, j] = q̂_t·w_j: how much of value j this token's output holds (o_t = Σ_j "
                                "A[t, j]·v_j, no softmax), w_j turned by every later step as the state is"),
                            (queries, keys), held))
            trace.add(Stage(Place("gated_norm", self.index, h, step), normed[:, h],
                            Msg("O_n = RMSNorm(O)·w ⊙ SiLU(z): the head's output normed, then opened by its gate z"),
                            (queries, dim_axis(self.d_v)), held))

    def record(self, trace: Trace, run_: ModelRun, step: int, queries: int) -> None:
        """Every stage of the step is recorded as it is written (`step`): nothing is left to trace."""
        return None
