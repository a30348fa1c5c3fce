"""compute() against torch's own kernels in the same process: SDPA, nn.MultiheadAttention, a bare softmax(QKᵀ/√d)V."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk
from attn_tui.attention.engine import compute


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median of `repeat` calls after one warm-up call."""
    fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs)


def _sentence(n: int) -> str:
    return " ".join(f"w{i % 97}" for i in range(n))


def scaled_dot(sizes: list[int], dim: int) -> None:
    print(f"\nscaled_dot, d = {dim}: compute() / SDPA and / a bare softmax(QKᵀ/√d)V on the same Q, K, V")
    print(f"{'tokens':>7} {'compute ms':>11} {'SDPA ms':>9} {'ratio':>6} {'bare ms':>8} {'ratio':>6}")
    for n in sizes:
        request = VariantAsk(SentenceInput(_sentence(n)), Settings(variant="scaled_dot", dim=dim, device="cpu"))
        trace = compute(request)
        q, k, v = (trace.tensor(name) for name in ("query", "key", "value"))
        repeat = 3 if n >= 4096 else 7
        ours = median_seconds(lambda request=request: compute(request), repeat)
        sdpa = median_seconds(lambda q=q, k=k, v=v: F.scaled_dot_product_attention(q[None], k[None], v[None]), repeat)
        bare = (median_seconds(lambda q=q, k=k, v=v: torch.softmax(q @ k.T / dim**0.5, -1) @ v, repeat)
                if n <= 8192 else float("nan"))
        print(f"{n:>7} {ours * 1e3:>11.1f} {sdpa * 1e3:>9.1f} {ours / sdpa:>6.2f} {bare * 1e3:>8.1f} "
              f"{ours / bare:>6.2f}")


def multihead(sizes: list[int], dim: int, heads: int) -> None:
    print(f"\nmultihead, d_model = {dim}, {heads} heads: compute() / nn.MultiheadAttention with the same weights, "
          "returning each head's weights (as a trace must), called with its defaults (weights averaged over "
          "heads), and returning no weights")
    print(f"{'tokens':>7} {'compute ms':>11} {'MHA+w ms':>9} {'ratio':>6} {'default':>8} {'ratio':>6} "
          f"{'MHA ms':>8} {'ratio':>6}")
    for n in sizes:
        request = VariantAsk(SentenceInput(_sentence(n)), Settings(variant="multihead", dim=dim, heads=heads,
                                                                 device="cpu"))
        trace = compute(request)
        mha = torch.nn.MultiheadAttention(dim, heads, batch_first=True)
        with torch.no_grad():
            mha.in_proj_weight.copy_(trace.params["W_qkv"])
            mha.in_proj_bias.copy_(trace.params["b_qkv"])
            mha.out_proj.weight.copy_(trace.params["W_o"])
            mha.out_proj.bias.copy_(trace.params["b_o"])
        x = trace.tensor("embedding")[None]
        repeat = 3 if n >= 4096 else 7
        ours = median_seconds(lambda request=request: compute(request), repeat)
        with torch.no_grad():
            weights = median_seconds(lambda x=x, mha=mha: mha(x, x, x, average_attn_weights=False), repeat)
            default = median_seconds(lambda x=x, mha=mha: mha(x, x, x), repeat)  # weights averaged over heads
            bare = median_seconds(lambda x=x, mha=mha: mha(x, x, x, need_weights=False), repeat)
        print(f"{n:>7} {ours * 1e3:>11.1f} {weights * 1e3:>9.1f} {ours / weights:>6.2f} {default * 1e3:>8.1f} "
              f"{ours / default:>6.2f} {bare * 1e3:>8.1f} {ours / bare:>6.2f}")
