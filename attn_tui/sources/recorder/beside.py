"""The kernel's own output set beside A·V recomputed from the weights shown, and when their gap is more than rounding.

A fused call returns its output but not its weights: the weights shown are recomputed. If
the kernel's output is A·V of those weights, up to the rounding of the call's dtype, they are
the kernel's; a larger gap means the kernel computed something else (another mask, other
weights), and the trace says so. A·V is recomputed in at least float32 and the tolerance
follows the dtype's eps, so that bfloat16 and float16 calls that are right say nothing.
"""

from __future__ import annotations

import math

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.found import Found


def exact_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype A·V is recomputed in to be set beside the kernel: at least float32, so that the difference said
    is the kernel's and the weights' own rounding, not the rounding of a bfloat16 product made here."""
    return torch.promote_types(dtype, torch.float32)


def beside_kernel(kernel: torch.Tensor, weights: torch.Tensor, values: torch.Tensor, found: Found) -> Msg:
    """The output stage's line: the kernel's output against A·V recomputed from the weights shown, their largest
    difference said (and warned about when it is more than rounding: then the weights shown are not the kernel's)."""
    wide = exact_dtype(values.dtype)
    exact = values.to(wide)  # (n, S, dv)
    # kernel − A·V in one product (n, L, dv); a NaN anywhere is said as an infinite difference
    gap = torch.baddbmm(kernel.to(wide), weights.to(wide), exact, alpha=-1) if weights.dim() == 3 \
        else kernel.to(wide) - weights.to(wide) @ exact
    worst = float(gap.abs().amax()) if gap.numel() else 0.0
    return kernel_line(math.inf if math.isnan(worst) else worst, values, found)


ROUNDINGS = 16  # how many of the dtype's rounding steps (eps · max|V|) a right kernel's output may be off by


def tolerance(values: torch.Tensor) -> float:
    """The largest difference from A·V that is still rounding, for value rows `values` (…, S, dv) of their dtype.

    Every output row is an average of value rows, so its numbers are at most max|V|, and each step
    that rounds in the call's dtype (the scores, the weights shown, the kernel's own products and
    its output) moves it by about eps · max|V|, scores rounded in proportion to their size. Measured
    on SDPA's CPU kernels in bfloat16 and float16 (queries up to 1100, logits up to about ±40) a right
    output is off by at most 12.3 of these; a kernel that computed something else (another mask,
    other weights) is off by a share of max|V| itself. Float32 and float64 keep the floor of
    1e-5 · max(1, max|V|): their kernels add thousands of products in another order than here.
    """
    scale = float(values.abs().amax().float().nan_to_num(nan=0.0, posinf=0.0)) if values.numel() else 0.0
    rounding = ROUNDINGS * torch.finfo(values.dtype).eps * scale
    if values.dtype in (torch.float16, torch.bfloat16):
        return rounding
    return max(rounding, 1e-5 * max(1.0, scale))


def kernel_line(worst: float, values: torch.Tensor, found: Found) -> Msg:
    """The output's line for a largest difference `worst` between the kernel's output and A·V of `values`."""
    if worst > tolerance(values):
        found.warnings.append(Msg("the kernel's output and A·V recomputed from the weights shown differ by up to "
                                  "{gap}: the weights shown may not be the kernel's", gap=f"{worst:.3g}"))
    return Msg("O: the kernel's own output; A·V recomputed here differs from it by at most {gap}",
               gap=f"{worst:.2g}")
