"""`attn-tui stages --model M --text T --generate N`: the JSON holds the prompt, the ids written, the text and
every stage with its layer, head and step; each wrong option is one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attn_tui.cli import main
from tests.sources.tiny_models import SMALL, tiny


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny(tmp_path_factory.mktemp("cli-writer"), "llama", dict(SMALL, num_key_value_heads=2))


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_json_holds_the_prompt_the_ids_written_the_text_and_every_stage_of_every_step(capsys, folder: Path) -> None:
    code, out, _ = _cli(capsys, "stages", "--model", str(folder), "--text", "the cat sat", "--generate", "3",
                        "--format", "json")
    assert code == 0
    document = json.loads(out)
    assert document["kind"] == "generation" and document["prompt_tokens"] == ["[CLS]", "the", "cat", "sat", "[SEP]"]
    assert len(document["generated_ids"]) == 3 and isinstance(document["output"], str) and document["output"]
    places = {(s["name"], s["layer"], s["head"], s["step"]) for s in document["stages"]}
    for step in range(3):
        for layer in range(2):
            for head in range(4):
                assert ("weights", layer, head, step) in places
        assert {("logits", None, None, step), ("probs", None, None, step), ("chosen", None, None, step)} <= places
        # a step's other stages, traced when asked for, are written too
        assert {("query_rot", 1, 3, step), ("scores", 1, 3, step), ("output", 0, 0, step),
                ("cache_keys", 1, 0, step)} <= places
    rows = {s["step"]: s["shape"] for s in document["stages"] if s["name"] == "weights" and s["layer"] == 1
            and s["head"] == 3}
    assert rows == {0: [5, 5], 1: [1, 6], 2: [1, 7]}  # the prefill, then one row a step over a growing cache
    chosen = [s for s in document["stages"] if s["name"] == "chosen"]
    labels = [s["axes"][1]["labels"][s["data"][0].index(1.0)] for s in chosen]
    assert labels == document["generated_tokens"]


def test_a_draw_prints_the_same_tokens_for_the_same_seed(capsys, folder: Path) -> None:
    argv = ("stages", "--model", str(folder), "--text", "the cat sat", "--generate", "4", "--do-sample", "--seed",
            "11", "--temperature", "1.5", "--top-k", "50", "--top-p", "0.95", "--format", "json", "--stage", "chosen")
    first = json.loads(_cli(capsys, *argv)[1])
    again = json.loads(_cli(capsys, *argv)[1])
    assert first["generated_ids"] == again["generated_ids"] and first["settings"]["seed"] == 11


@pytest.mark.parametrize(("argv", "says"), [
    (("--generate", "-1"), "--generate"),
    (("--generate", "2", "--top-p", "1.5"), "--top-p"),
    (("--generate", "2", "--top-k", "3"), "--do-sample"),
    (("--do-sample",), "--generate"),
    (("--temperature", "0.5"), "--temperature"),
    (("--generate", "60"), "64 tokens"),
])
def test_each_wrong_option_is_one_line_and_exit_2(capsys, folder: Path, argv: tuple[str, ...], says: str) -> None:
    code, out, err = _cli(capsys, "stages", "--model", str(folder), "--text", "the cat sat", *argv)
    assert code == 2 and out == "" and says in err and len(err.strip().splitlines()) == 1, err


def test_a_date_model_does_not_take_generate(capsys) -> None:
    code, _, err = _cli(capsys, "stages", "--model", "transformer-dates", "--text", "22 Nov 2026", "--generate", "2")
    assert code == 2 and "--generate is for causal language models" in err
