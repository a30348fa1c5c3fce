"""The stage catalog knows every stage any variant or source produces, and every table is generated from it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.trace.catalog import KINDS, kind_of
from tests.conftest import sentence

PACKAGE = Path(attn_tui.__file__).parent


def _unknown(names: set[str]) -> set[str]:
    return {name for name in names if name not in KINDS}


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_every_stage_of_every_variant_is_in_the_catalog(variant: str) -> None:
    options = VARIANTS[variant].options
    settings: dict[str, object] = {"variant": variant, "dim": 4, "positional": True}
    if "heads" in options:
        settings["heads"] = 2
    trace = compute(sentence("a b c", **settings))
    assert not _unknown(set(trace.names()))
    assert not _unknown(set(VARIANTS[variant].stages))


def test_every_stage_of_the_date_models_is_in_the_catalog() -> None:
    from attn_tui.ask.models import DATE_MODELS
    from attn_tui.ask.settings import ModelAsk
    from attn_tui.sources import run

    for model in DATE_MODELS:
        assert not _unknown(set(run(ModelAsk(model, "22 Nov 2026")).trace.names())), model


def _recorded_names() -> set[str]:
    """Stages the recorder lays out for code written the ways the notes and torch's own module write it."""
    torch.manual_seed(0)
    names: set[str] = set()
    x, memory = torch.randn(1, 3, 8), torch.randn(1, 4, 8)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    with attn_tui.record() as rec:
        mha(x, memory, memory)  # cross-attention; weights averaged over the heads
    names |= set(rec.trace.names())
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 4)
    with attn_tui.record() as rec:
        scores = q @ k.T / 2.0
        shifted = scores - scores.max(dim=-1, keepdim=True).values
        weights = shifted.exp() / shifted.exp().sum(dim=-1, keepdim=True)
        F.dropout(weights, 0.5, training=True) @ v
    names |= set(rec.trace.names())
    return names


def test_every_stage_the_recorder_lays_out_is_in_the_catalog() -> None:
    names = _recorded_names()
    assert {"input", "key_input", "mean_weights"} <= names  # the walk reached the recorder's own stages
    assert not _unknown(names)


def _literal_stage_names() -> set[str]:
    """Every stage name the sources and the engine write as a literal: Place("x"…), place.at("x"), Role("x"…)."""
    found: set[str] = set()
    for folder in ("attention", "sources"):
        for path in (PACKAGE / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                        and isinstance(node.args[0].value, str)):
                    continue
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if called in ("Place", "at", "Role", "fresh"):
                    found.add(node.args[0].value)
    return found


def test_every_stage_name_written_in_a_source_is_in_the_catalog() -> None:
    names = _literal_stage_names()
    assert {"embedding", "query_rot", "sink_mass", "running_max", "alignment_mean", "shifted"} <= names
    assert not _unknown(names)


def test_an_unknown_stage_gets_a_plain_default() -> None:
    kind = kind_of("my_module_out")
    assert (kind.symbol, kind.title, kind.explanation, kind.colour_scale, kind.probability) == (
        "my_module_out", "my_module_out", "", "diverging", False)


def test_the_catalog_is_the_one_table() -> None:
    """Titles, explanations and symbols read the catalog: a kind's entry is what each of them shows."""
    from attn_tui.present.explanations import explanation
    from attn_tui.present.titles import stage_title
    from attn_tui.trace.ops import Place
    from attn_tui.trace.stage import Axis, Stage

    for name, kind in KINDS.items():
        assert stage_title(name) == kind.title == name  # English titles are the names
        assert explanation(name, ()) == kind.explanation
        stage = Stage(Place(name), torch.zeros(1), "x", (Axis("dim", ("d0",)),))
        assert stage.symbol == kind.symbol
    assert explanation("scores", ("additive",)) == KINDS["scores"].by_run["additive"] != KINDS["scores"].explanation
    probabilities = {name for name, kind in KINDS.items() if kind.probability}
    assert probabilities == {"weights", "alignment", "alignment_mean", "mean_weights", "rollout", "weights_1",
                             "weights_2", "written"}


def test_korean_titles_come_from_the_catalog() -> None:
    from attn_tui import i18n
    from attn_tui.present.titles import stage_title

    i18n.set_language("ko")
    try:
        titled = {name: stage_title(name) for name in KINDS}
    finally:
        i18n.set_language("en")
    assert titled["scores"] == "점수" and titled["alignment_mean"] == "정렬평균"
    assert all(title != name for name, title in titled.items()), "a stage title without Korean"
