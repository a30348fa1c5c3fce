"""`attn-tui stages` writes JSON, CSV and .npz, to standard output or a file, with named rows and projections."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
import torch

from tests.cli.test_cli import run_cli


def test_csv_prints_one_stage_with_its_token_labels(capsys) -> None:
    code, out, err = run_cli(capsys, "stages", "--text", "나는 학교에 간다", "--stage", "weights", "--format", "csv")
    assert code == 0, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["query", "나는", "학교에", "간다"]
    weights = np.array([[float(x) for x in row[1:]] for row in rows[1:]])
    assert np.allclose(weights.sum(axis=1), 1.0)


def test_csv_of_several_stages_needs_a_folder(capsys, tmp_path) -> None:
    code, _out, err = run_cli(capsys, "stages", "--text", "a b", "--format", "csv")
    assert code == 2 and "--stage" in err and "--out FOLDER" in err
    folder = tmp_path / "stages"
    folder.mkdir()
    code, _out, err = run_cli(capsys, "stages", "--text", "a b", "--format", "csv", "--out", str(folder))
    assert code == 0, err
    assert {p.name for p in folder.iterdir()} >= {"weights.csv", "scores.csv", "embedding.csv"}


def test_npz_needs_out_and_holds_every_stage_by_its_place(capsys, tmp_path) -> None:
    code, _out, err = run_cli(capsys, "stages", "--text", "a b c", "--format", "npz")
    assert code == 2 and "--out" in err
    path = tmp_path / "t.npz"
    code, out, err = run_cli(capsys, "stages", "--text", "a b c", "--variant", "multihead", "--heads", "2",
                             "--format", "npz", "--out", str(path))
    assert code == 0 and str(path) in out, err
    arrays = np.load(path)
    assert "weights@h1" in arrays and arrays["weights@h1"].shape == (3, 3)
    assert np.allclose(arrays["weights@h1"].sum(axis=1), 1.0)


def test_json_to_a_file(capsys, tmp_path) -> None:
    path = tmp_path / "t.json"
    code, out, _err = run_cli(capsys, "stages", "--sample", "lookup", "--stage", "output", "--format", "json",
                              "--out", str(path))
    assert code == 0 and "1 stage" in out
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["stages"][0]["data"][0] == pytest.approx([10.0, 0.0], abs=1e-3)


@pytest.mark.parametrize("argv,fragment", [
    (["--format", "table", "--out", "x.txt"], "--out writes json, csv or npz"),
    (["--format", "csv", "--params"], "--params applies to --format json"),
    (["--format", "json", "--out", "/no/such/dir/x.json"], "no directory"),
])
def test_bad_output_options_exit_2(capsys, argv: list[str], fragment: str) -> None:
    code, _out, err = run_cli(capsys, "stages", "--text", "a b", *argv)
    assert code == 2 and fragment in err and len(err.strip().splitlines()) == 1


def test_named_rows_label_the_axes(capsys, tmp_path) -> None:
    (tmp_path / "x").write_text("나는: 1 0 1 0\n학교에: 0 1 0 1\n<pad>: 0 0 0 0\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "stages", "--x", str(tmp_path / "x"), "--variant", "dot", "--projection",
                             "identity", "--mask", "padding", "--stage", "weights", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert data["tokens"]["query"] == ["나는", "학교에", "<pad>"]
    weights = torch.tensor(data["stages"][0]["data"])
    x = torch.tensor([[1.0, 0, 1, 0], [0, 1, 0, 1], [0, 0, 0, 0]])
    expected = torch.softmax((x @ x.T).masked_fill(torch.tensor([False, False, True]), float("-inf")), dim=-1)
    assert torch.allclose(weights, expected, atol=1e-6)  # Q = K = V = X, the <pad> key masked


@pytest.mark.parametrize("argv,fragment", [
    (["--q", "Q", "--k", "Q", "--v", "Q", "--projection", "identity"], "already the projections"),
    (["--text", "a b", "--variant", "multihead", "--projection", "identity"], "fused projection"),
])
def test_projection_where_it_does_not_apply(capsys, tmp_path, monkeypatch, argv: list[str], fragment: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Q").write_text("1 0\n0 1")
    code, _out, err = run_cli(capsys, "stages", *argv)
    assert code == 2 and fragment in err


def test_the_cli_speaks_korean_when_asked(capsys, monkeypatch) -> None:
    from attn_tui import i18n

    i18n.set_language("ko")
    code, _out, err = run_cli(capsys, "stages", "--text", "a b", "--heads", "2")
    assert code == 2 and "multihead" in err and "적용되지 않습니다" in err
