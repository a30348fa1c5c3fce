"""Each variant module opens with its plain torch formula, and that formula, run as written on the trace's own
inputs and learned parameters, gives the staged computation's output."""

from __future__ import annotations

import ast
import importlib
import math
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from tests.conftest import matrices, x_matrix

L, S, D, HEADS = 5, 5, 8, 2


def formula(variant: str) -> str:
    """The indented block of the variant module's docstring: the lines a reader can run."""
    module = importlib.import_module(f"attn_tui.attention.variants.{variant}.compute")
    assert module.__file__ is not None
    doc = ast.get_docstring(ast.parse(Path(module.__file__).read_text(encoding="utf-8")), clean=False) or ""
    block: list[str] = []
    for line in doc.split("\n")[1:]:
        if line.startswith("    "):
            block.append(line)
        elif block:  # the first line after the block ends it
            break
    return textwrap.dedent("\n".join(block))


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_variant_module_opens_with_its_plain_formula(variant: str) -> None:
    text = formula(variant)
    assert text.count("\n") >= 2 and ("softmax" in text or "scaled_dot_product_attention" in text
                                      or variant == "linear"), variant
    compile(text, variant, "exec")  # it is Python


def _random(rows: int, cols: int, seed: int) -> torch.Tensor:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed))


def _heads(t: torch.Tensor) -> torch.Tensor:
    return t.view(t.shape[0], HEADS, -1).transpose(0, 1)  # (H, n, d_h): head h owns its columns


RUN = ["dot", "scaled_dot", "general", "additive", "concat", "rope", "alibi", "sink", "flash", "multihead", "gqa",
       "linear", "diff"]
PLAIN = {  # the words the pseudo-torch formulas use for torch's own functions
    "softmax": lambda s: torch.softmax(s, dim=-1), "sqrt": math.sqrt, "exp": torch.exp,
    "rms_norm": lambda x: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5)}


@pytest.mark.parametrize("variant", RUN)
def test_the_plain_formula_gives_the_staged_output(variant: str) -> None:
    q, k, v = _random(L, D, 1), _random(S, D, 2), _random(S, D, 3)
    mask = torch.ones(L, S, dtype=torch.bool).tril()
    mask_name = "none" if variant in ("flash", "diff") else "causal"  # their formulas show no mask; linear's is causal
    ns: dict[str, object] = {"torch": torch, "F": F, "math": math, "L": L, "S": S, "d": D, "mask": mask}
    if variant in ("multihead", "gqa"):
        x = _random(L, D, 4)
        options = {"heads": 4, "kv_heads": 2} if variant == "gqa" else {"heads": HEADS}
        trace = compute(x_matrix(x.tolist(), variant=variant, mask=mask_name, **options))
        ns.update(x=x, h=HEADS, H=4, K=2, d_h=D // 4)
        expected = trace.tensor("projected")
        result = "y"
    else:
        options = {"heads": 1 if variant == "diff" else HEADS} if VARIANTS[variant].per_head else {}
        options |= {"temperature": 2.0} if variant == "scaled_dot" else {}
        options |= {"dim": 6} if variant in ("additive", "concat") else {}
        trace = compute(matrices(q.tolist(), k.tolist(), v.tolist(), variant=variant, mask=mask_name, **options))
        ns.update(q=q, k=k, v=v, temperature=2.0, base=10000.0, T=4, d_v=D, H=HEADS, d_h=D // HEADS,
                  i=torch.arange(L), j=torch.arange(S))
        if VARIANTS[variant].per_head and variant != "diff":
            ns.update(q=_heads(q), k=_heads(k), v=_heads(v))
        last = "head_norm" if variant == "diff" else "output"  # diff's head ends with its norm
        expected = (torch.stack([trace.tensor("output", head=h) for h in range(HEADS)])
                    if VARIANTS[variant].per_head and variant != "diff" else trace.tensor(last))
        result = "o"
    ns.update({name: p.detach().double().float() for name, p in trace.params.items()})
    if variant == "diff":  # one head two halves wide: λ from its four vectors, λ_init at depth 0
        ns.update(PLAIN, d=D // 2, lam_init=0.8 - 0.6 * math.exp(0), lq1=ns["lambda_q1"], lk1=ns["lambda_k1"],
                  lq2=ns["lambda_q2"], lk2=ns["lambda_k2"])
        result = "y"
    if variant == "linear":  # its gates are made from each token (the formula reads them as α, β)
        from attn_tui.attention.variants.linear.compute import l2_rows

        ns.update({"l2": l2_rows, "d_k": D, "α": trace.tensor("decay")[:, 0], "β": trace.tensor("beta")[:, 0]})
        result = "out"
    exec(compile(formula(variant), variant, "exec"), ns)
    got = ns[result]
    assert isinstance(got, torch.Tensor)
    torch.testing.assert_close(got, expected.to(got.dtype), atol=1e-5, rtol=1e-5)
