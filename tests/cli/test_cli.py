"""`attn-tui stages` and `attn-tui samples`: output formats, exit codes, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from attn_tui.cli import main


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def test_json_round_trips_and_matches_sdpa(capsys, tmp_path) -> None:
    (tmp_path / "q").write_text("[[0, 10, 0], [0, 0, 10], [10, 10, 0]]")
    (tmp_path / "k").write_text("10 0 0\n0 10 0\n0 0 10\n0 0 10")
    (tmp_path / "v").write_text("1,0;10,0;100,5;1000,6")
    code, out, _ = run_cli(capsys, "stages", "--q", str(tmp_path / "q"), "--k", str(tmp_path / "k"),
                           "--v", str(tmp_path / "v"), "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["variant"] == "scaled_dot" and doc["dtype"] == "float32"
    assert doc["device"].startswith("cuda" if torch.cuda.is_available() else "cpu")  # --device auto
    assert doc["tokens"] == {"query": ["q0", "q1", "q2"], "key": ["k0", "k1", "k2", "k3"]}
    by_name = {s["name"]: s for s in doc["stages"]}
    assert list(by_name) == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"]
    assert all(s["head"] is None and s["formula"] for s in doc["stages"])
    q, k, v = (torch.tensor(doc["inputs"][n]) for n in "QKV")
    expected = F.scaled_dot_product_attention(q, k, v)
    assert torch.allclose(torch.tensor(by_name["output"]["data"]), expected, atol=1e-6)
    assert by_name["weights"]["shape"] == [3, 4]


def test_json_spells_infinities(capsys) -> None:
    _code, out, _ = run_cli(capsys, "stages", "--text", "a b c", "--mask", "causal", "--mask-fill", "-inf",
                           "--format", "json", "--stage", "masked")
    doc = json.loads(out)
    assert [s["name"] for s in doc["stages"]] == ["masked"]
    assert doc["stages"][0]["data"][0][1:] == ["-inf", "-inf"]


def test_mask_file_and_fully_masked_row_warning(capsys, tmp_path) -> None:
    (tmp_path / "m").write_text("1 0\n0 0")
    _code, out, _ = run_cli(capsys, "stages", "--text", "a b", "--mask-file", str(tmp_path / "m"),
                           "--format", "json", "--mask-fill=-inf")
    doc = json.loads(out)
    assert doc["mask"] == [[1, 0], [0, 0]]
    assert any("row 1" in w for w in doc["warnings"])
    weights = next(s for s in doc["stages"] if s["name"] == "weights")
    assert weights["data"][1] == [0.0, 0.0]


def test_multihead_head_filter(capsys) -> None:
    _code, out, _ = run_cli(capsys, "stages", "--sample", "multihead_korean", "--head", "2", "--format", "json")
    doc = json.loads(out)
    heads = {s["head"] for s in doc["stages"]}
    assert heads == {None, 2}
    assert [s["name"] for s in doc["stages"]][-2:] == ["concat", "projected"]


def test_table_output_fits_80_columns_and_aligns_korean(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "stages", "--sample", "long_paragraph", "--stage", "weights")
    assert code == 0
    from rich.cells import cell_len

    assert max(cell_len(line) for line in out.splitlines()) <= 80
    assert "showing" in out and "of 70 columns" in out
    code, out, _ = run_cli(capsys, "stages", "--sample", "korean_padded", "--stage", "masked")
    rows = [line for line in out.splitlines() if line.startswith(("나는", "학교에", "간다"))]
    assert len({cell_len(r) for r in rows}) == 1  # Korean labels padded by cell width
    assert "-∞" in out


def test_samples_command_lists_every_sample(capsys) -> None:
    code, out, _ = run_cli(capsys, "samples")
    assert code == 0
    for name in ("korean", "korean_padded", "english_causal", "lookup", "cross_attention", "long_paragraph"):
        assert name in out


@pytest.mark.parametrize("argv,fragment", [
    (["stages"], "give an input"),
    (["stages", "--text", "a", "--variant", "nope"], "invalid choice: 'nope'"),
    (["stages", "--text", "a", "--heads", "0"], "must be between 1 and"),
    (["stages", "--text", "a", "--seed", "9" * 23], "between -4,611,686,018,427,387,904 and 4,611,686,018,427,387,904"),
    (["stages", "--text", "a", "--variant", "multihead", "--seed", "x"], "expected a whole number"),
    (["stages", "--q", "/no/such/file", "--k", "x", "--v", "y"], "cannot read Q: no file '/no/such/file'"),
    (["stages", "--q", "/dev/null"], "missing --k, --v"),
    (["stages", "--text", "a b", "--variant", "multihead", "--heads", "3"], "--heads 3 does not divide"),
    (["stages", "--text", "a b", "--variant", "dot", "--stage", "scaled"], "has no stage 'scaled'"),
    (["stages", "--text", "a b", "--head", "1"], "--head does not apply to scaled_dot"),
    (["stages", "--sample", "nope"], "no sample called 'nope'"),
    (["stages", "--text", "a b", "--mask-fill", "0"], "invalid choice: '0'"),
    (["stages", "--text", "a b", "--temperature", "-1"], "must be a positive finite number"),
    (["stages", "--text", "a", "--sample", "korean"], "cannot be combined"),
    (["stages", "--text", "   "], "sentence is empty"),
    (["stages", "--text", "a b", "--format", "xml"], "invalid choice: 'xml'"),
    (["--bogus"], "unrecognized arguments"),
])
def test_bad_input_exits_2_with_one_line(capsys, argv: list[str], fragment: str) -> None:
    code, _out, err = run_cli(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert fragment in err
    assert "Traceback" not in err


def test_matrix_errors_name_line_and_column(capsys, tmp_path) -> None:
    (tmp_path / "q").write_text("1 0\n0 x")
    (tmp_path / "k").write_text("1 0 0\n0 1 0")
    (tmp_path / "v").write_text("1\n2")
    code, _, err = run_cli(capsys, "stages", "--q", str(tmp_path / "q"), "--k", str(tmp_path / "k"),
                           "--v", str(tmp_path / "v"))
    assert code == 2 and "line 2, column 3: expected a number" in err and str(tmp_path / "q") in err
    assert "'x'" not in err  # a file's content is never echoed: it might not be a matrix at all
    (tmp_path / "q").write_text("1 0\n0 1")
    code, _, err = run_cli(capsys, "stages", "--q", str(tmp_path / "q"), "--k", str(tmp_path / "k"),
                           "--v", str(tmp_path / "v"))
    assert code == 2 and "Q is 2×2 but K is 2×3: their last dimensions must match" in err


@pytest.mark.parametrize("typed,word,where", [("1 0 0\n0 nan 0", "nan", "line 2, column 3"),
                                              ("[[1, -inf, 0]]", "-inf", "line 1, column 6")])
def test_typed_nan_and_inf_are_named_in_one_line(capsys, tmp_path, typed: str, word: str, where: str) -> None:
    """A file holding nan or inf: exit 2, one line naming the file, the place and the value, in both languages."""
    (tmp_path / "q").write_text(typed)
    (tmp_path / "k").write_text("1 0 0\n0 1 0")
    (tmp_path / "v").write_text("1\n2")
    argv = ("stages", "--q", str(tmp_path / "q"), "--k", str(tmp_path / "k"), "--v", str(tmp_path / "v"))
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and "Traceback" not in err
    assert f"{where}: {word} is not a finite number" in err and str(tmp_path / "q") in err
    from attn_tui import i18n

    i18n.set_language("ko")
    code, _, err = run_cli(capsys, *argv)
    particle = "은" if word == "nan" else "는"  # 난은, 인프는: the particle the value's last sound asks for
    assert code == 2 and err.count("\n") == 1 and f"{word}{particle} 유한한 수가 아닙니다" in err, err


@pytest.mark.slow
def test_installed_script_reads_stdin_and_exits_2_without_traceback() -> None:
    """Through a real process: standard input, exit codes and stderr as a user sees them."""
    ok = subprocess.run([sys.executable, "-m", "attn_tui", "stages", "--x", "-", "--variant", "multihead",
                         "--heads", "2", "--format", "json"], input="1 0 0 1\n0 1 1 0\n1 1 0 0",
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    assert json.loads(ok.stdout)["tokens"]["query"] == ["x0", "x1", "x2"]
    bad = subprocess.run([sys.executable, "-m", "attn_tui", "stages", "--q", "-", "--k", "-", "--v", "-"],
                         input="1", capture_output=True, text=True)
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1 and "Traceback" not in bad.stderr


def test_model_samples_run_headless_and_options_override(capsys) -> None:
    code, out, _ = run_cli(capsys, "stages", "--sample", "dates_english", "--teacher-forcing", "--format", "json",
                           "--stage", "alignment")
    doc = json.loads(out)
    assert code == 0 and doc["output"] == "2026-11-22" and doc["settings"]["teacher_forcing"] is True
    code, _, err = run_cli(capsys, "stages", "--sample", "dates_korean", "--teacher-forcing")
    assert code == 2 and "--teacher-forcing needs --target" in err


def test_table_colour_scale_leaves_masked_fill_out(capsys) -> None:
    """A -1e9 fill must not swamp the colour range of the unmasked scores (as in the app)."""
    code, out, _ = run_cli(capsys, "stages", "--text", "a b c", "--mask", "causal", "--mask-fill", "-1e9",
                           "--stage", "masked")
    scale_line = next(line for line in out.splitlines() if line.startswith("scale"))
    assert code == 0 and "e+09" not in scale_line


@pytest.mark.parametrize("argv", [["--help"], ["stages", "--help"]])
def test_help_names_every_value_for_a_person(capsys, argv: list[str]) -> None:
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0 and "--heads N" in out and "--seed S" in out
    assert "TOP_" not in out and "--text TEXT" in out  # argparse's default metavar is the internal dest


def test_trace_help_lists_every_shipped_sample_script(capsys) -> None:
    from attn_tui.ask.samples import samples_dir

    shipped = sorted(p.stem for p in (samples_dir() / "scripts").glob("*.py") if not p.name.startswith("_"))
    code, out, _ = run_cli(capsys, "trace", "--help")
    flat = " ".join(out.split())  # argparse wraps the help
    assert code == 0 and "luong_padding" in shipped and f"({', '.join(shipped)})" in flat


def test_every_option_of_every_command_says_what_it_does_in_both_languages() -> None:
    import argparse

    from attn_tui import i18n
    from attn_tui.cli.parser import build_parser

    def silent(parser: argparse.ArgumentParser, command: str) -> list[str]:
        found = []
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found += silent(sub, f"{command} {name}")
            elif not (action.help or "").strip() and action.option_strings:
                found.append(f"{command} {action.option_strings[-1]}")
        return found

    before = i18n.language()
    try:
        for language in ("en", "ko"):
            i18n.set_language(language)
            assert silent(build_parser(), "attn-tui") == [], language
        # every help is translated, not the English passed through (argparse's own -h and --version aside)
        helps = [a.help for a in build_parser()._actions if a.option_strings and a.dest not in ("help", "version")]
        assert all(any("가" <= ch <= "힣" for ch in text or "") for text in helps), helps
    finally:
        i18n.set_language(before)


def test_stage_alone_lists_the_stages_of_what_was_asked(capsys) -> None:
    code, out, _ = run_cli(capsys, "stages", "--sample", "multihead_korean", "--stage")
    assert code == 0 and out.strip() == ("multihead's stages: embedding, positional, embedded_pos, qkv_proj, query, "
                                         "key, value, scores, scaled, masked, weights, output, concat, projected")
    code, out, _ = run_cli(capsys, "stages", "--sample", "multihead_korean", "--stage", "--head", "1")
    assert code == 0 and "weights" in out
