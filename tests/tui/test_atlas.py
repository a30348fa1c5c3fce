"""Pilot tests of the head atlas (a): every binding of its screen, the jump to a head's weights, the role filter,
the ranking, compare (another model's atlas beside A's), a variant's atlas and a run without one."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from textual.widgets import OptionList, Static

from attn_tui.attention.head_roles import head_roles
from attn_tui.attention.summary import real_keys, stack
from attn_tui.present.atlas import ROLES, atlas_of
from attn_tui.tui.screens.atlas import AtlasScreen, AtlasSide
from attn_tui.tui.screens.choose import ChoiceScreen
from tests.tui.helpers import model_app, sample_app, settle

SIZE = (80, 24)
TEXT = "the cat sat on the mat because the cat was tired"


async def _open(pilot) -> AtlasScreen:
    await pilot.press("a")
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, AtlasScreen)
    await pilot.pause()
    return screen


def _text(screen: AtlasScreen, selector: str) -> str:
    from io import StringIO

    from rich.console import Console

    console = Console(width=200, record=True, file=StringIO(), color_system=None)
    console.print(screen.query_one(selector, Static).content)
    return console.export_text()


def _roles_of(shown) -> list[dict[str, float]]:
    """The scores the door computed, by head, with breadth as `broad` (what the atlas must show)."""
    return [{**r.scores, "broad": r.breadth} for r in shown.stats.roles]


@pytest.mark.models
async def test_a_opens_the_atlas_at_the_head_on_show_and_escape_or_a_closes_it() -> None:
    pytest.importorskip("transformers")
    app = model_app("minilm", TEXT, layer=2, head=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot)
        atlas = screen.atlas
        assert atlas is not None and (atlas.layers, atlas.heads) == (6, 12)
        assert (app.state.atlas.layer, app.state.atlas.head) == (2, 5)
        for cell, scores in zip(atlas.cells, _roles_of(app.shown), strict=True):
            assert all(cell.scores[r] == scores[r] for r in ROLES) and cell.entropy == scores["entropy"]
        body = _text(screen, "#atlas-a-body")
        assert "L5" in body and "h11" in _text(screen, "#atlas-a-columns")
        assert "atlas of minilm: 6×12 heads" in _text(screen, "#atlas-title")
        assert "layer 2 head 5" in _text(screen, "#atlas-detail")
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, AtlasScreen)
        await _open(pilot)
        await pilot.press("a")
        await pilot.pause()
        assert not isinstance(app.screen, AtlasScreen)


@pytest.mark.models
async def test_enter_jumps_to_the_heads_weights_on_the_current_input() -> None:
    pytest.importorskip("transformers")
    from attn_tui.sources.transformer import model_run

    app = model_app("minilm", TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _open(pilot)
        await pilot.press("down", "down", "right", "right", "right", "up", "left")
        await pilot.pause()
        assert (app.state.atlas.layer, app.state.atlas.head) == (1, 2)
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, AtlasScreen)
        assert (app.explorer.layer_index, app.explorer.head) == (1, 2) and app.view.name == "weights"
        expected = model_run("minilm", TEXT).attentions[1][2]
        assert torch.allclose(torch.from_numpy(app.view.grid.values).float(), expected.float(), atol=1e-6)
        assert "layer 1 head 2" in str(app.query_one("#stage-bar").render())


@pytest.mark.models
async def test_f_filters_by_a_role_and_o_ranks_the_heads_by_it() -> None:
    pytest.importorskip("transformers")
    app = model_app("minilm", TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot)
        atlas = screen.atlas
        await pilot.press("f")
        assert app.state.atlas.role == "previous_token"
        assert "filter: previous-token scores" in _text(screen, "#atlas-title")
        body = _text(screen, "#atlas-a-body")
        best = max(atlas.cells, key=lambda c: c.scores["previous_token"])
        assert best.shown("previous_token").text in body
        await pilot.press("F", "F")
        assert app.state.atlas.role == "broad"
        await pilot.press("f", "f", "f", "f")  # none, previous-token, duplicate-token, induction
        assert app.state.atlas.role == "induction"
        await pilot.press("o")
        await pilot.pause()
        order = atlas.ranking("induction")
        assert app.state.atlas.ranked and (app.state.atlas.layer, app.state.atlas.head) == (order[0].layer,
                                                                                          order[0].head)
        lines = [line for line in _text(screen, "#atlas-a-body").splitlines() if line.strip()[:1].isdigit()]
        assert [line.split()[1:3] for line in lines[:3]] == [[f"L{c.layer}", f"h{c.head}"] for c in order[:3]]
        assert f"{order[0].scores['induction']:.3f}" in lines[0]
        await pilot.press("down", "down")
        assert (app.state.atlas.layer, app.state.atlas.head) == (order[2].layer, order[2].head)
        await pilot.press("enter")
        await settle(pilot)
        assert (app.explorer.layer_index, app.explorer.head) == (order[2].layer, order[2].head)
        screen = await _open(pilot)  # the atlas opens as it was left
        assert app.state.atlas.ranked and app.state.atlas.role == "induction"
        await pilot.press("o")  # the ranking by what each head moved (minilm's run traces `moved`)
        await pilot.pause()
        by_moved = atlas.ranking("moved")
        assert app.state.atlas.by_moved and (app.state.atlas.layer, app.state.atlas.head) == (by_moved[0].layer,
                                                                                            by_moved[0].head)
        assert "ranked by moved" in _text(screen, "#atlas-title")
        lines = [line for line in _text(screen, "#atlas-a-body").splitlines() if line.strip()[:1].isdigit()]
        assert lines[0].split()[1:3] == [f"L{by_moved[0].layer}", f"h{by_moved[0].head}"]
        roles = {(r.layer, r.head): r.moved for r in app.shown.stats.roles}  # the door's own numbers
        assert f"{roles[by_moved[0].layer, by_moved[0].head]:.2f}" in lines[0]
        assert max(v or 0.0 for v in roles.values()) == by_moved[0].moved
        await pilot.press("o")
        assert not app.state.atlas.ranked and not app.state.atlas.by_moved


@pytest.mark.models
async def test_c_puts_another_models_atlas_beside_as(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.sources.test_families import CONFIGS
    from tests.sources.tiny_models import TEXT as TINY_TEXT
    from tests.sources.tiny_models import reference, tiny

    a_path = tiny(tmp_path, "llama", CONFIGS["llama"], name="a-llama")
    b_path = tiny(tmp_path, "bert", CONFIGS["bert"], name="b-bert")
    app = model_app(str(b_path), TINY_TEXT)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        b_tokens = app.trace.key_tokens
        app.editing.choose_model(str(a_path))
        await settle(pilot)
        screen = await _open(pilot)
        await pilot.press("c")
        await pilot.pause()
        chooser = app.screen
        assert isinstance(chooser, ChoiceScreen) and all(not c.same_trace for _label, c in chooser.options)
        chooser.query_one(OptionList).highlighted = next(n for n, (_label, c) in enumerate(chooser.options)
                                                         if c.key == "other")
        await pilot.press("enter")
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if screen.atlases.get("b") is not None:
                break
        assert app.screen is screen and screen.has_class("-comparing") and screen.query_one("#atlas-b").display
        expected = head_roles(torch.stack(reference(b_path, TINY_TEXT)).float(), b_tokens)  # transformers' own
        b = screen.atlases["b"]
        assert b is not None
        for cell, roles in zip(b.cells, expected, strict=True):
            assert cell.scores["induction"] == pytest.approx(roles.scores["induction"], abs=1e-5)
            assert cell.scores["sink"] == pytest.approx(roles.scores["sink"], abs=1e-5)
            assert cell.scores["broad"] == pytest.approx(roles.breadth, abs=1e-5)
        assert "B: b-bert" in _text(screen, "#atlas-b-heading")
        assert "\nB: " in _text(screen, "#atlas-detail")
        counts, b_counts = screen.atlas.counts(), b.counts()
        assert f"broad ≥0.80 (A {counts['broad']} · B {b_counts['broad']})" in _text(screen, "#atlas-legend")
        await pilot.press("o")  # both ranked, each by its own scores
        await pilot.pause()
        b_top = b.ranking(None)[0]
        assert f"L{b_top.layer} h{b_top.head}" in _text(screen, "#atlas-b-body").splitlines()[2]
        await pilot.press("o")
        await pilot.press("c")  # A's atlas alone; B is kept for the next c
        assert not screen.has_class("-comparing")
        await pilot.press("c")
        assert screen.has_class("-comparing")


async def test_c_with_nothing_to_compare_says_how_to_get_b() -> None:
    """The user's own recorded code: no setting of attn-tui's to change, no other model opened."""
    from attn_tui.ask.settings import RecordAsk
    from tests.tui.helpers import RecordingApp
    from tests.tui.test_recorded import recorded_multihead

    app = RecordingApp(record=RecordAsk().keeping(recorded_multihead()))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _open(pilot)
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, AtlasScreen)
        assert any("open another model" in n.message for n in app.notices)


@pytest.mark.parametrize(("variant", "extra"), [("multihead", {}), ("gqa", {"kv_heads": 2}), ("alibi", {}),
                                                ("sink", {})])
async def test_a_variant_with_heads_has_its_atlas(variant: str, extra: dict[str, int]) -> None:
    app = sample_app("korean", variant=variant, heads=4, **extra)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot)
        trace = app.trace
        expected = atlas_of(trace.meta.title, head_roles(stack(trace), trace.key_tokens, real_keys(trace)), 1, 4,
                            len(trace.key_tokens))
        assert screen.atlas == expected
        await pilot.press("right", "right", "enter")
        await settle(pilot)
        assert app.explorer.head == 2 and app.view.name == "weights"


async def test_a_run_without_head_roles_says_so() -> None:
    app = sample_app("korean", variant="flash")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot)
        assert screen.atlas is None and "no head atlas here" in _text(screen, "#atlas-title")
        await pilot.press("enter")
        assert any("atlas is empty" in n.message for n in app.notices)
        await pilot.press("escape")
        assert not isinstance(app.screen, AtlasScreen)


async def test_t_in_the_atlas_switches_the_language() -> None:
    app = sample_app("korean", variant="multihead", heads=4)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot)
        await pilot.press("t")
        await pilot.pause()
        assert app.language == "ko" and "지도" in _text(screen, "#atlas-title")
        assert "국소" in _text(screen, "#atlas-legend")
        assert isinstance(screen.query_one("#atlas-a"), AtlasSide)
        await pilot.press("t")
        assert app.language == "en"
        await pilot.press("right_square_bracket", "g")  # the app's keys do not reach the stages behind the atlas
        assert app.explorer.head == 0 and app.explorer.panel == "heatmap" and app.screen is screen


@pytest.mark.models
async def test_c_puts_the_same_model_on_its_sentence_twice_beside_it() -> None:
    """The same model on two inputs: B is A's sentence repeated (the induction probe's shape)."""
    pytest.importorskip("transformers")
    from attn_tui.ask.settings import ModelAsk
    from attn_tui.sources import run

    app = model_app("minilm", "the cat sat")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot)
        await pilot.press("c")
        await pilot.pause()
        chooser = app.screen
        assert isinstance(chooser, ChoiceScreen)
        chooser.query_one(OptionList).highlighted = next(n for n, (_label, c) in enumerate(chooser.options)
                                                         if c.key == "repeat")
        await pilot.press("enter")
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if screen.atlases.get("b") is not None:
                break
        b = screen.atlases["b"]
        twice = run(ModelAsk("minilm", "the cat sat the cat sat"), None)
        assert b is not None and b.tokens == len(twice.trace.key_tokens) == 8  # [CLS] … [SEP]
        for cell, scores in zip(b.cells, _roles_of(twice), strict=True):
            assert all(cell.scores[r] == pytest.approx(scores[r], abs=1e-6) for r in ROLES)
        assert "B: the sentence twice" in _text(screen, "#atlas-b-heading")
        await pilot.press("escape")
        await pilot.pause()
        assert app.explorer.panel == "compare"  # compare mode stays on in the main view, B as the atlas had it


async def test_the_palette_opens_the_atlas() -> None:
    from tests.tui.helpers import run_from_palette

    app = sample_app("korean", variant="multihead", heads=4)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        await run_from_palette(pilot, "Head atlas")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert isinstance(app.screen, AtlasScreen) and app.screen.atlas is not None


def _probe_attentions(length: int, seed: int) -> tuple[list[int], torch.Tensor]:
    """The induction probe's ids drawn with minilm's own tokenizer, and transformers' own attentions on them:
    (layers, heads, N, N), the reference the app's probe run is checked against."""
    from transformers import AutoModel, AutoTokenizer

    from attn_tui.sources.folder import known_model
    from attn_tui.sources.probe import induction_ids

    folder = known_model("minilm")
    tokenizer = AutoTokenizer.from_pretrained(folder)
    model = AutoModel.from_pretrained(folder, attn_implementation="eager").eval()
    ids = induction_ids(tokenizer, model.config.vocab_size, length, seed, model.config.max_position_embeddings)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([ids]), output_attentions=True)
    return ids, torch.stack([a[0] for a in out.attentions]).float()


@pytest.mark.models
async def test_p_runs_the_model_on_the_induction_probe_and_enter_opens_a_heads_weights_on_it() -> None:
    pytest.importorskip("transformers")
    app = model_app("minilm", TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot)
        await pilot.press("p")
        await settle(pilot)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert app.screen is screen and app.shown is not None
        model = app.shown.ask.model
        assert model is not None and model.probe == "induction" and model.text == TEXT  # the sentence is kept
        ids, attentions = _probe_attentions(model.probe_length, model.probe_seed)
        assert list(app.shown.trace.meta.token_ids) == ids
        atlas = screen.atlas
        assert atlas is not None and atlas.tokens == len(ids) == 1 + 2 * model.probe_length
        assert "on the induction probe" in _text(screen, "#atlas-title")
        scored = torch.arange(len(ids)) >= len(ids) - model.probe_length  # the repeated half, as the door scores
        expected = head_roles(attentions, ids, rows=scored)
        for cell, roles in zip(atlas.cells, expected, strict=True):
            assert cell.scores["induction"] == pytest.approx(roles.scores["induction"], abs=1e-4)
        top = atlas.ranking("induction")[0]  # the head most like an induction head on the probe
        screen.position.place(atlas, top.layer, top.head)
        await pilot.press("enter")
        await settle(pilot)
        assert (app.explorer.layer_index, app.explorer.head) == (top.layer, top.head)
        view = app.explorer.view
        assert view is not None and view.place.name == "weights"
        torch.testing.assert_close(torch.from_numpy(view.grid.values).float(), attentions[top.layer, top.head],
                                   atol=1e-5, rtol=1e-4)
        screen = await _open(pilot)  # p again: back on the sentence
        await pilot.press("p")
        await settle(pilot)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        assert app.shown.ask.model is not None and not app.shown.ask.model.probe
        assert screen.atlas is not None and screen.atlas.tokens == len(app.shown.trace.key_tokens)
        assert "on the induction probe" not in _text(screen, "#atlas-title")


async def test_p_on_a_variant_says_the_probe_needs_a_transformer() -> None:
    app = sample_app("korean", variant="multihead", heads=4)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await _open(pilot)
        shown = app.shown
        await pilot.press("p")
        await settle(pilot)
        assert app.screen is screen and app.shown is shown and screen.atlas is not None  # nothing re-run
        assert any("induction probe" in n.message for n in app.notices)


async def test_e_in_the_atlas_exports_its_heads_or_its_screen(tmp_path) -> None:
    import csv
    import json

    from textual.widgets import Input

    from attn_tui.tui.screens.export import ExportScreen

    app = sample_app("korean", variant="multihead", heads=4)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        atlas = (await _open(pilot)).atlas

        async def export(what: str, fmt: str, name: str) -> None:
            await pilot.press("e")
            await pilot.pause()
            dialog = app.screen
            assert isinstance(dialog, ExportScreen)
            assert [b.id for b in dialog.query("#export-what RadioButton")] == ["what-atlas", "what-screen"]
            dialog.query_one(f"#what-{what}").value = True
            if fmt != "svg":
                dialog.query_one(f"#fmt-{fmt}").value = True
            await pilot.pause()
            path_input = dialog.query_one("#export-path", Input)
            path_input.value = str(tmp_path / name)
            path_input.focus()
            await pilot.press("enter")
            for _ in range(50):
                await app.workers.wait_for_complete()
                await pilot.pause()
                if (tmp_path / name).exists():
                    break

        await export("atlas", "json", "atlas.json")
        written = json.loads((tmp_path / "atlas.json").read_text(encoding="utf-8"))
        assert len(written["rows"]) == atlas.layers * atlas.heads == 4
        assert written["rows"][2]["head"] == 2 and written["rows"][2]["role"] == atlas.cell(0, 2).role
        assert written["rows"][2]["score_previous_token"] == atlas.cell(0, 2).scores["previous_token"]
        await export("atlas", "csv", "atlas.csv")
        with (tmp_path / "atlas.csv").open(encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        assert [int(r["head"]) for r in rows] == [0, 1, 2, 3] and float(rows[1]["entropy"]) == atlas.cell(0, 1).entropy
        await export("screen", "svg", "atlas.svg")
        assert isinstance(app.screen, AtlasScreen)  # the atlas stays open, and its picture is what was written
        assert "<svg" in (tmp_path / "atlas.svg").read_text(encoding="utf-8")[:200]
        assert any("wrote 4 heads" in str(n.message) for n in app.notices)
