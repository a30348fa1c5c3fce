"""The Python API: the README's examples run, `compute` matches `stages`, a trace shows itself."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import attn_tui
from attn_tui.errors import ConfigError, InputError
from tests.limits import limit

README = Path(__file__).resolve().parent.parent / "README.md"


def readme_examples() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("## From Python", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


@pytest.mark.parametrize("n", range(2))
def test_the_readme_examples_run(n: int, capsys) -> None:
    examples = readme_examples()
    assert len(examples) == 2
    exec(compile(examples[n], f"README example {n + 1}", "exec"), {"__name__": "__readme__"})
    out = capsys.readouterr().out
    assert ("softmax" in out) if n == 0 else ("README example 2:" in out)


def test_compute_is_stages(capsys) -> None:
    from tests.cli.test_cli import run_cli

    trace = attn_tui.compute("the cat sat", variant="multihead", heads=2, mask="causal", seed=3, device="cpu")
    _, out, _ = run_cli(capsys, "stages", "--text", "the cat sat", "--variant", "multihead", "--heads", "2",
                        "--mask", "causal", "--seed", "3", "--format", "json")
    doc = json.loads(out)

    def numbers(value):
        return [numbers(v) for v in value] if isinstance(value, list) else float(value)

    for stage in doc["stages"]:
        assert torch.allclose(trace.tensor(stage["name"], head=stage["head"]).double(),
                              torch.tensor(numbers(stage["data"]), dtype=torch.float64), atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("variant, options, flags", [
    ("gqa", {"kv_heads": 2, "heads": 4, "window": 2, "mask": "sliding"},
     ["--heads", "4", "--kv-heads", "2", "--window", "2", "--mask", "sliding"]),
    ("rope", {"rope_base": 500.0}, ["--rope-base", "500"]),
    ("flash", {"tile": 2, "mask": "causal"}, ["--tile", "2", "--mask", "causal"]),
])
def test_compute_takes_the_options_of_todays_variants(variant, options, flags, capsys) -> None:
    from tests.cli.test_cli import run_cli

    trace = attn_tui.compute("나는 어제 친구와 함께 갔다", variant=variant, dim=8, device="cpu", **options)
    _, out, _ = run_cli(capsys, "stages", "--text", "나는 어제 친구와 함께 갔다", "--variant", variant, "--dim", "8",
                        *flags, "--stage", "output", "--format", "json")
    for stage in json.loads(out)["stages"]:
        assert torch.allclose(trace.tensor("output", head=stage["head"]).double(),
                              torch.tensor(stage["data"], dtype=torch.float64), atol=1e-6)
    own = next(iter(options))  # the variant's own option: refused for a variant it does not belong to
    with pytest.raises(ConfigError, match=f"--{own.replace('_', '-')} does not apply to scaled_dot"):
        attn_tui.compute("a b", variant="scaled_dot", **{own: options[own]})


def test_compute_takes_matrices_and_refuses_what_does_not_apply() -> None:
    trace = attn_tui.compute(q=[[0, 10, 0]], k=torch.eye(3) * 10, v=[[1, 0], [10, 0], [100, 5]], variant="dot",
                             device="cpu")
    assert torch.allclose(trace["output"], torch.tensor([[10.0, 0.0]]))
    with pytest.raises(ConfigError, match="--heads does not apply to dot"):
        attn_tui.compute("a b", variant="dot", heads=2)
    with pytest.raises(InputError, match="give an input"):
        attn_tui.compute()
    with pytest.raises(TypeError, match="unknown options: colour"):
        attn_tui.compute("a b", colour="red")


def test_a_trace_indexes_by_name_and_place() -> None:
    trace = attn_tui.compute("나는 학교에 간다", variant="multihead", heads=2)
    assert torch.equal(trace["weights"], trace.stage("weights", head=0).tensor)
    assert not torch.equal(trace.stage("weights", head=1).tensor, trace["weights"])
    with pytest.raises(KeyError, match="energy"):
        trace.stage("energy")


def test_a_trace_shows_itself_in_a_console_in_rich_and_in_jupyter() -> None:
    from rich.console import Console

    trace = attn_tui.compute("나는 학교에 간다", mask="causal")
    plain = repr(trace)
    assert "\x1b[" not in plain and "weights" in plain and "학교에" in plain and "0.798" in plain
    html = trace._repr_html_()
    assert html.startswith("<!DOCTYPE html>") and "학교에" in html and "background-color" in html
    console = Console(record=True, width=100, force_terminal=True, color_system="truecolor")
    console.print(trace)
    assert "\x1b[" in console.export_text(styles=True, clear=False) and "학교에" in console.export_text()


def test_importing_attn_tui_imports_no_torch_and_no_rich() -> None:
    code = "import sys, attn_tui; attn_tui.label(['a']); print('torch' in sys.modules, 'rich' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit(60))
    assert result.stdout.split() == ["False", "False"]


class _NeverCopied:
    """A tensor-like whose copy would fail the test: only its shape may be read."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape

    def tolist(self) -> list:
        raise AssertionError("copied before its shape was checked")


@pytest.mark.parametrize("value,fragment", [
    (_NeverCopied(10**9), "must be a matrix (2 dimensions: rows × width), not 1-D of shape (1000000000,)"),
    (_NeverCopied(1, 10**5, 10**5), "not 3-D of shape (1, 100000, 100000)"),
    (torch.zeros(2, 3, 4), "not 3-D of shape (2, 3, 4)"),
    (_NeverCopied(10**6, 4), "has 1,000,000 rows; attn-tui shows at most 16,384"),
    ([[1.0, 2.0], [0.5] * 10**6], "is 1000000 numbers wide"),  # the long row is measured, not the first
    ((row for row in [[1.0, 2.0]]), "must be a matrix: a list of rows"),  # could be endless: never iterated
])
def test_compute_checks_a_matrix_shape_before_any_copy(value: object, fragment: str) -> None:
    with pytest.raises((InputError, ConfigError), match=re.escape(fragment)):
        attn_tui.compute(q=value, k=[[1.0, 2.0]], v=[[1.0, 2.0]])
