"""The app writes: `n` asks the model on show for one more token (`5n` five, `12n` twelve), `N` keeps writing,
each step shows as it is made, and `b` stops a writing in flight or a hold, keeping the tokens written."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from attn_tui.tui.widgets.stage_bar import StageBar
from tests.limits import limit
from tests.sources.tiny_models import SMALL, tiny
from tests.tui.helpers import model_app, settle, until

pytestmark = [pytest.mark.slow, pytest.mark.app, pytest.mark.models]
SIZE = (110, 34)
TEXT = "the cat sat"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny(tmp_path_factory.mktemp("app-writer"), "llama", dict(SMALL, num_key_value_heads=2))


async def test_n_writes_the_next_token_and_its_row_is_on_show(folder: Path) -> None:
    from attn_tui.ask.settings import ModelAsk
    from attn_tui.sources import run

    app = model_app(str(folder), TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace is not None and app.trace.steps() == 0  # one forward pass: nothing written yet
        await pilot.press("n")
        await settle(pilot)
        assert app.shown is not None and app.shown.ask.model.generate == 1  # type: ignore[union-attr]
        assert app.trace.steps() == 1 and len(app.trace.meta.generated_ids) == 1  # type: ignore[union-attr]
        await pilot.press("n")
        await settle(pilot)
        trace = app.trace
        assert trace.steps() == 2
        whole = run(ModelAsk(str(folder), TEXT, generate=2)).trace
        assert trace.meta.generated_ids == whole.meta.generated_ids  # type: ignore[union-attr]
        await pilot.press("9")  # the weights of the newest step: one row over every key so far
        app.explorer.go_to_place(max(i for i, p in enumerate(app.explorer.places)
                                     if p.name == "weights" and p.step == 1))
        await pilot.pause()
        assert app.view.place.step == 1 and app.view.grid.values.shape == (1, 6)
        assert "token 1 of 2: fed" in str(app.query_one(StageBar).render())


async def test_a_digit_then_n_writes_that_many_and_the_view_stays_where_it_was(folder: Path) -> None:
    app = model_app(str(folder), TEXT)
    app.writing.count_clock = lambda: 0.0  # every key at once, however slowly the machine delivers them
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_place(1)
        await pilot.press("5")
        assert app.explorer.stage_index == 4  # a digit alone still jumps to its stage
        await pilot.press("n")
        await settle(pilot)
        assert app.trace.steps() == 5 and app.shown.ask.model.generate == 5  # type: ignore[union-attr]
        assert app.view.place.name == "key"  # the digit was a count: the view is back on the stage it was on
        await pilot.press("1", "2", "n")  # two digits are one count
        await settle(pilot)
        assert app.trace.steps() == 17 and app.shown.ask.model.generate == 17  # type: ignore[union-attr]


async def test_a_digit_older_than_the_count_window_is_a_jump_and_n_writes_one(folder: Path) -> None:
    from attn_tui.tui.writing import COUNT_WINDOW

    now = [0.0]
    app = model_app(str(folder), TEXT)
    app.writing.count_clock = lambda: now[0]
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        now[0] += COUNT_WINDOW + 0.5  # the digit waited too long to be a count
        await pilot.press("n")
        await settle(pilot)
        assert app.trace.steps() == 1 and app.explorer.stage_index == 2  # one token; the jump to stage 3 stays


async def test_shift_n_keeps_writing_until_b_stops_it_or_its_most(folder: Path, monkeypatch) -> None:
    import attn_tui.tui.writing as writing

    monkeypatch.setattr(writing, "HOLD_MOST", 4)
    app = model_app(str(folder), TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("N")
        await until(pilot, lambda: app.shown is not None and app.shown.ask.model.generate == 4  # type: ignore[union-attr]
                     and app.trace.steps() == 4)
        await settle(pilot)
        assert app.trace.steps() == 4 and not app.writing.holding  # a token a step, then it stops at its most
        monkeypatch.setattr(writing, "HOLD_MOST", 200)
        await pilot.press("N")
        await until(pilot, lambda: app.trace.steps() >= 6)
        await pilot.press("b")
        await settle(pilot)
        held = app.trace.steps()
        assert not app.writing.holding and held >= 6
        await settle(pilot)  # nothing in flight: no step can come after this
        assert app.trace.steps() == held  # nothing more after b


async def test_b_stops_a_writing_and_keeps_what_it_wrote_then_n_goes_on(folder: Path, monkeypatch) -> None:
    import attn_tui.sources as door

    real = door.run
    reached, release = threading.Event(), threading.Event()

    def held(ask, *args, on_step=None, **kwargs):
        def step(shown) -> None:
            on_step(shown)
            if shown.trace.steps() == 2:
                reached.set()
                release.wait(timeout=limit(30))

        return real(ask, *args, on_step=None if on_step is None else step, **kwargs)

    monkeypatch.setattr(door, "run", held)
    app = model_app(str(folder), "the dog", generate=0)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("8", "n")
            await until(pilot, reached.is_set)
            await until(pilot, lambda: app.explorer.trace is not None and app.explorer.trace.steps() == 2)
            await pilot.press("b")
            release.set()
            await settle(pilot)
            assert app.shown is not None and app.trace.steps() == 2
            assert app.shown.ask.model.generate == 2  # type: ignore[union-attr]
            written = app.trace.meta.generated_ids  # type: ignore[union-attr]
            await pilot.press("n")
            await settle(pilot)
            assert app.trace.steps() == 3 and app.trace.meta.generated_ids[:2] == written  # type: ignore[union-attr]
    finally:
        release.set()


async def test_n_on_the_variants_says_what_it_needs_and_b_with_nothing_in_flight_says_so() -> None:
    from tests.tui.helpers import sample_app

    app = sample_app()
    notes: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.notify = lambda message, **_: notes.append(str(message))  # type: ignore[method-assign]
        await pilot.press("n", "b")
        assert "causal language model" in notes[0] and "nothing is being written" in notes[1]


async def test_compare_puts_the_whole_cache_against_streamingllms_window(folder: Path) -> None:
    import numpy as np

    from attn_tui.tui.widgets.compare_view import CompareView
    from tests.tui.test_compare import _compare

    app = model_app(str(folder), "the cat sat on the mat", generate=6)  # 8 tokens; the window keeps 4 + 8
    async with app.run_test(size=(130, 40)) as pilot:
        await settle(pilot)
        await _compare(pilot, "cache")
        assert app.comparison is not None and app.comparison.b_ask(app.wanted).cache == "window:8,sinks:4"
        places = app.explorer.places
        app.explorer.go_to_place(next(n for n, p in enumerate(places) if (p.name, p.step) == ("weights", 2)))
        await settle(pilot)
        view = app.query_one(CompareView)
        a, b, diff = (view.heatmap(side).grid for side in ("a", "b", "diff"))
        assert a.values.shape == b.values.shape == (1, 10)  # nothing evicted yet: the same row
        assert float(np.abs(diff.values).max()) < 1e-5
        app.explorer.go_to_place(next(n for n, p in enumerate(places) if (p.name, p.step) == ("weights", 5)))
        await settle(pilot)
        a, b, diff = (view.heatmap(side).grid for side in ("a", "b", "diff"))
        assert a.values.shape == (1, 13) and b is not None and b.values.shape == (1, 12)  # one position evicted
        # B − A after the eviction: B's row laid on A's keys (it kept 0…3 and 5…12), −A on the evicted key 4
        assert diff is not None and diff.values.shape == (1, 13)
        kept = [0, 1, 2, 3, *range(5, 13)]
        np.testing.assert_allclose(diff.values[0, kept], b.values[0] - a.values[0, kept], atol=1e-6)
        assert abs(diff.values[0, 4] + a.values[0, 4]) < 1e-6
        title = view.query_one("#compare-b").query_one(".compare-title").render()
        assert "“" in str(title)  # the text B wrote is shown beside its title
        shown_b = app.explorer.shown_b
        assert shown_b is not None and len(shown_b.trace.meta.generated_ids) == 6  # type: ignore[union-attr]
