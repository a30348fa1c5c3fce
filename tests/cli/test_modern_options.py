"""The options of today's variants: each applies where it should, is refused elsewhere, and reaches the JSON."""

from __future__ import annotations

import json

import pytest
import torch

from attn_tui.cli import main


def _json(capsys, *argv: str) -> dict:
    assert main(["stages", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("argv,fragment", [
    (["--text", "a b", "--variant", "scaled_dot", "--rope-base", "500"], "--rope-base does not apply to scaled_dot"),
    (["--text", "a b", "--variant", "rope", "--kv-heads", "1"], "--kv-heads does not apply to rope: it belongs to gqa"),
    (["--text", "a b", "--variant", "gqa", "--tile", "2"], "--tile does not apply to gqa: it belongs to flash"),
    (["--text", "a b", "--variant", "rope", "--heads", "2"], "--heads does not apply to rope"),
    (["--text", "a b", "--variant", "flash", "--head", "0"], "--head does not apply to flash"),
    (["--text", "a b", "--window", "2"], "--window needs a sliding mask"),
    (["--text", "a b", "--mask", "causal", "--window", "2"], "not 'causal'"),
    (["--text", "a b c", "--variant", "gqa", "--heads", "4", "--kv-heads", "3"], "--kv-heads 3 must divide --heads 4"),
    (["--text", "a b c", "--variant", "gqa", "--heads", "3"], "--heads 3 does not divide the model dimension 8"),
    (["--text", "a b", "--variant", "alibi", "--heads", "3"], "--heads 3 does not divide the width 8 of Q"),
    (["--text", "a b", "--variant", "rope", "--dim", "5"], "must be even, not 5"),
    (["--text", "a b", "--variant", "rope", "--rope-base", "1"], "must be a finite number above 1"),
    (["--text", "a b", "--variant", "rope", "--rope-base", "inf"], "must be a finite number above 1"),
    (["--text", "a b", "--variant", "flash", "--tile", "0"], "must be between 1"),
    (["--text", "a b", "--mask", "sliding", "--window", "0"], "must be between 1"),
    (["--text", "a b", "--mask", "sliding", "--window", "-3"], "must be between 1"),
    (["--text", "a b", "--mask", "sliding", "--window", "99999999999"], "must be between 1"),
    (["--text", "a b", "--variant", "gqa", "--kv-heads", "0"], "must be between 1"),
    (["--text", "a b", "--variant", "gqa", "--kv-heads", "two"], "expected a whole number"),
    (["--text", "a b", "--variant", "flash", "--tile", "1.5"], "expected a whole number"),
    (["--text", "a b", "--variant", "rope", "--rope-base", "nan"], "must be a finite number above 1"),
    (["--text", "a b", "--variant", "rope", "--rope-base", "ten"], "expected a number"),
    (["--text", "a b", "--variant", "rope", "--rope-base", "-5"], "must be a finite number above 1"),
    (["--model", "minilm", "--text", "a", "--window", "2"], "--window does not apply to a model"),
    (["--model", "minilm", "--text", "a", "--variant", "rope"], "--variant does not apply to a model"),
])
def test_options_that_do_not_apply_are_one_line_errors(capsys, argv: list[str], fragment: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["stages", *argv])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


def test_the_json_carries_everything_to_recompute_gqa(capsys) -> None:
    doc = _json(capsys, "--text", "나는 학교에 간다 오늘", "--variant", "gqa", "--heads", "4", "--kv-heads", "2",
                "--mask", "sliding", "--window", "2")
    assert doc["settings"]["kv_heads"] == 2 and doc["kv_map"] == [0, 0, 1, 1] and doc["settings"]["window"] == 2
    assert set(doc["params"]) == {"embedding", "W_q", "W_k", "W_v", "W_o"}
    mask = torch.tensor(doc["mask"])
    assert torch.equal(mask, torch.tensor([[1, 0, 0, 0], [1, 1, 0, 0], [0, 1, 1, 0], [0, 0, 1, 1]]))
    heads = [s["head"] for s in doc["stages"] if s["name"] == "key"]
    assert heads == [0, 1, 2, 3]


def test_the_json_of_flash_has_a_step_per_tile(capsys) -> None:
    doc = _json(capsys, "--sample", "flash_tiles")
    steps = [s["step"] for s in doc["stages"] if s["name"] == "running_max"]
    assert steps == [0, 1, 2] and doc["settings"]["tile"] == 3
    assert [s["step"] for s in doc["stages"] if s["name"] == "output"] == [None]


def test_rope_base_and_alibi_slopes_reach_the_json(capsys) -> None:
    doc = _json(capsys, "--text", "a b c", "--variant", "rope", "--rope-base", "500", "--stage", "query_rot")
    assert doc["settings"]["rope_base"] == 500 and "500" in doc["stages"][0]["formula"]
    doc = _json(capsys, "--text", "a b c", "--variant", "alibi", "--heads", "4", "--stage", "bias", "--head", "1")
    assert doc["params"]["alibi_slopes"] == [0.25, 0.0625, 0.015625, 0.00390625]
    assert doc["stages"][0]["data"][0] == [0.0, -0.0625, -0.125]


def test_rope_on_typed_matrices_of_odd_width_is_one_line(tmp_path, capsys) -> None:
    for name in "qkv":
        (tmp_path / name).write_text("1 2 3\n4 5 6\n")
    with pytest.raises(SystemExit) as exit_:
        main(["stages", "--variant", "rope", *(f"--{n}={tmp_path / n}" for n in "qkv")])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and "must be even, not 3" in err and len(err.strip().splitlines()) == 1, err
