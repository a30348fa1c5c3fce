"""No torch operation runs on the event loop's thread: a walk over every screen, key by key, with a
TorchFunctionMode that sees only the thread it was entered on (the loop's; the reader's and the
compute worker's calls are theirs).

Every read of a trace for the screen goes through the app's reader (tui/reader.py); a key that
needs something not read yet asks for it and draws it when it arrives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import SentenceInput, VariantAsk
from tests.tui.helpers import RecordingApp, model_app, sample_app, torch_calls_on_the_loop

SIZE = (120, 40)
LONG = " ".join(f"w{i}" for i in range(300))  # 90,000 query × key cells: the score stages are lazy tiles


def _long_app() -> RecordingApp:
    request = load_samples()["korean"].request
    return RecordingApp(VariantAsk(SentenceInput(LONG), request.settings.replace(mask="causal")))


WALKS = {
    # the stages, a cell, the heads, the parameters, the scale, help, the stage picker, the language
    "korean": (lambda: sample_app("korean"),
               ["right", "right", "right", "right", "down", "shift+right", "g", "g", "p", "p", "end", "home", "s",
                "question_mark", "escape", "slash", "escape", "t", "t"]),
    "multihead": (lambda: sample_app("multihead_korean"),
                  ["right"] * 6 + ["right_square_bracket", "left_square_bracket", "g", "g", "down", "comma",
                                   "full_stop", "c", "enter", "down", "shift+right", "s", "c"]),
    "flash": (lambda: sample_app("flash_tiles"), ["right"] * 8 + ["down", "slash", "escape"]),
    "lookup": (lambda: sample_app("lookup"), ["7", "x", "down", "x", "8"]),
    # lazy tiles: moving far along a long input brings cells into view that are computed when asked for
    "long": (_long_app, ["end", "left", "left", "left"] + ["pagedown"] * 3 + ["shift+down"] * 70 + ["g", "g"]),
    # a decode: its steps, the alignment so far, B another setting; a linear-attention state stepping
    "dates": (lambda: sample_app("dates_korean"), ["right", "right", "end", "g", "g", "c", "enter", "down", "c"]),
    "state": (lambda: sample_app("linear_state_korean"), ["right"] * 5 + ["down", "g", "g", "e", "escape"]),
    # a real model: its grid of heads, the rollout both ways, the atlas, another layer and head
    "model": (lambda: model_app("minilm", "the cat sat on the mat"),
              ["g", "g", "r", "r", "r", "right_curly_bracket", "right_square_bracket", "down", "a", "down", "f",
               "escape"]),
}


@pytest.mark.parametrize("walk", [*sorted(WALKS), "writing"])
async def test_no_torch_operation_runs_on_the_event_loop(walk: str, tmp_path: Path) -> None:
    if walk == "writing":  # a causal model writing token by token: each step's stages traced when asked for
        from tests.sources.tiny_models import CONFIGS, TEXT, tiny

        folder = tiny(tmp_path, "llama", CONFIGS["llama"])
        app, keys = model_app(str(folder), TEXT), ["n", "n", "end", "right_curly_bracket", "down", "g", "g"]
    else:
        make, keys = WALKS[walk]
        app = make()
    async with app.run_test(size=SIZE) as pilot:
        where = await torch_calls_on_the_loop(pilot, keys)
        if walk == "long":  # the walk did reach cells that had to be read before they were drawn
            assert app.explorer.heatmap.cells_asked > 0
    assert not where, f"{sum(where.values())} torch calls on the event loop: " + ", ".join(
        f"{line} ×{n}" for line, n in where.most_common(8))
