"""A variant is one package: its declaration is read before torch, and a new package is the whole of a new variant.

The last test writes a variant no one has seen (cosine attention, with an option, a stage kind, an op and an
explainer of its own) into a folder of its own, puts that folder beside the shipped variants, and checks that the
command line, the API, the budget, the catalog, the inspector and the `≠ defaults` line all take it up, with
numbers equal to a float64 reference, without a line of attn-tui changed.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attn_tui.ask.variants import VARIANTS, declarations, parts
from tests.limits import limit

ROOT = Path(__file__).resolve().parents[2]
# What a declaration may import: the torch-free vocabulary it is written in, nothing that computes or shows.
DECLARES_WITH = {"attn_tui.ask.option", "attn_tui.ask.variant", "attn_tui.trace.op", "attn_tui.trace.place",
                 "attn_tui.trace.stage_kind", "attn_tui.trace.masks", "attn_tui.i18n", "attn_tui.errors"}


def test_the_registry_is_every_variant_package_in_its_declared_order() -> None:
    assert list(VARIANTS) == ["dot", "scaled_dot", "general", "additive", "concat", "multihead", "rope", "gqa",
                              "alibi", "sink", "flash", "mla", "diff", "linear"]
    folder = ROOT / "attn_tui" / "attention" / "variants"
    assert {path.parent.name for path in folder.glob("*/__init__.py")} == set(VARIANTS)
    assert [m.__name__.split(".")[-2] for m in parts("explain")] == ["alibi", "flash", "mla", "diff", "linear"]


@pytest.mark.parametrize("module", declarations(), ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_a_declaration_imports_only_the_torch_free_vocabulary(module: object) -> None:
    path = Path(getattr(module, "__file__", ""))
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and (node.module or "").startswith("attn_tui")}
    assert imported <= DECLARES_WITH, imported - DECLARES_WITH


def test_every_declaration_loads_without_torch() -> None:
    code = ("import sys\nfrom attn_tui.ask.variants import VARIANTS\nfrom attn_tui.trace.catalog import KINDS\n"
            "print(len(VARIANTS), sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'numpy')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit(60),
                            check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"{len(VARIANTS)} []"


COSINE = {
    "__init__.py": '''
        """Cosine attention: the scores are the cosine of query and key, times τ."""

        from __future__ import annotations

        from dataclasses import dataclass

        from attn_tui.ask.option import Option
        from attn_tui.ask.variant import Variant, score_tail
        from attn_tui.trace.op import Op
        from attn_tui.trace.place import Place
        from attn_tui.trace.stage_kind import StageKind


        @dataclass(frozen=True)
        class Cosine(Op):
            query: Place
            key: Place
            tau: float


        KINDS = (StageKind("cosine", "S_cos", "cosine", "The cosine of query and key, times tau."),)
        TAU = Option("tau", float, 10.0, "cosine: the scores' scale (default 10)", low=0, above=True, metavar="TAU",
                     label="tau", row="input", refusal="must be a positive number, got {text}")
        VARIANT = Variant(name="cosine", title="Cosine", order=1000,
                          stages=("query", "key", "value", "cosine", "masked", "weights", "output"),
                          footprint=lambda z: score_tail(z, 4), learned=False, own=(TAU,), score_based=False)
    ''',
    "compute.py": '''
        """Cosine attention.

            s = tau * F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).T   # (L, S)
            a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
            o = a @ v
        """

        from attn_tui.attention.attend import PreStage
        from attn_tui.attention.variants.cosine import Cosine


        def run(ctx, q, k, v):
            tau = float(ctx.settings.value("tau"))
            qn, kn = q / q.norm(dim=-1, keepdim=True), k / k.norm(dim=-1, keepdim=True)

            def pre(rows, cols):
                return {"cosine": (tau * qn[rows] @ kn[cols].T)[None]}

            stage = PreStage("cosine", "S = tau·cos(q, k)", ctx.qk_axes,
                             lambda at: Cosine(at.at("query"), at.at("key"), tau))
            ctx.record_geometry(tau)
            ctx.scores(pre, [stage], "cosine")
    ''',
    "explain.py": '''
        from attn_tui.attention.variants.cosine import Cosine
        from attn_tui.explain.common import row64


        def _cosine(trace, stage, index):
            i, j = index
            q, k = row64(trace.stages[stage.op.query].data[i]), row64(trace.stages[stage.op.key].data[j])
            total = stage.op.tau * float(q @ k) / float(q.norm() * k.norm())
            return f"S[{i},{j}] = tau·q·k / (|q||k|)", [f"= {total:.4g}"], total


        EXPLAINERS = {Cosine: _cosine}
    ''',
}

CHECK = '''
import json, sys
import attn_tui.attention.variants as shipped
shipped.__path__.append(sys.argv[1])  # the folder holding the new package, beside the shipped ones

import torch
import attn_tui
from attn_tui.ask.footprint import estimate
from attn_tui.ask.request import variant_ask
from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk
from attn_tui.cli.parser import parse
from attn_tui.errors import AttnError
from attn_tui.explain.cell import explain
from attn_tui.present.settings_line import settings_line
from attn_tui.trace.catalog import kind_of
from attn_tui.trace.ops import Place

args = parse(["stages", "--text", "the cat sat on the mat", "--variant", "cosine", "--tau", "4", "--mask", "causal"])
trace = attn_tui.compute("the cat sat on the mat", variant="cosine", tau=4.0, mask="causal")
q, k = trace.tensor("query").double(), trace.tensor("key").double()
cos = (q / q.norm(dim=-1, keepdim=True)) @ (k / k.norm(dim=-1, keepdim=True)).T
reference = torch.softmax((4 * cos).masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf")), -1)
cell = explain(trace, Place("cosine"), (3, 1))
try:
    variant_ask(parse(["stages", "--text", "a b", "--variant", "scaled_dot", "--tau", "4"]))
    refused = None
except AttnError as exc:
    refused = str(exc)
apart = (trace.tensor("weights").double() - reference).abs().max().item()
budget = estimate(VariantAsk(SentenceInput("a b"), Settings.of(variant="cosine"))).total
print(json.dumps({
    "names": trace.names(), "args_tau": args.tau, "weights": apart, "kind": kind_of("cosine").symbol,
    "matches": cell.matches, "expected": cell.expected, "line": settings_line(trace), "budget": budget,
    "refused": refused}))
'''


def test_a_new_variant_is_its_package_and_nothing_else(tmp_path: Path) -> None:
    package = tmp_path / "cosine"
    package.mkdir()
    for name, text in COSINE.items():
        (package / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    result = subprocess.run([sys.executable, "-c", CHECK, str(tmp_path)], capture_output=True, text=True,
                            timeout=limit(120), check=False, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-2000:]
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["names"][-5:] == ["value", "cosine", "masked", "weights", "output"]
    assert found["args_tau"] == 4.0  # the command line's flag, made from the declared option
    assert found["weights"] < 1e-6  # the shared tail on its scores, against softmax(τ·cos) in float64
    assert found["kind"] == "S_cos" and found["matches"] and found["expected"] != 0  # catalog and inspector
    assert "tau 4" in found["line"]  # the `≠ defaults` line names the variant's own setting
    assert found["budget"] > 0
    # --tau for another variant: refused, as any variant's own setting is
    assert found["refused"] == "--tau does not apply to scaled_dot: it belongs to cosine"
