"""The mask convention is a setting: a mask typed 1 = blocked (the notes' padding) or 1 = may attend (SDPA), L×S or 1×S.

Every number is checked against torch's own SDPA given the mask read by hand, so the
setting cannot quietly read a mask the wrong way round.
"""

from __future__ import annotations

import json

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.ask.settings import MatrixInput, Settings, VariantAsk
from attn_tui.attention.engine import compute
from attn_tui.errors import ConfigError, ShapeError
from attn_tui.io.session import Session, SessionError, parse
from attn_tui.trace.masks import build_mask
from tests.cli.test_cli import run_cli

Q = [[1.0, 0.5], [0.0, 1.0], [-1.0, 0.25]]  # (L=3, d=2)
K = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [2.0, 2.0]]  # (S=4, d=2)
V = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5], [9.0, 9.0]]  # the last key is the padding: its value must not leak


def _sdpa(allowed: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """SDPA's output and its weights (recomputed) with `allowed` (L, S) bool, True = may attend."""
    q, k, v = (torch.tensor(m, dtype=torch.float64) for m in (Q, K, V))
    out = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=allowed[None])[0]
    scores = (q @ k.T / 2 ** 0.5).masked_fill(~allowed, float("-inf"))
    return out, torch.softmax(scores, dim=-1)


def _run(mask: list[list[float]], means: str) -> attn_tui.Trace:
    settings = Settings(variant="scaled_dot", mask_means=means, dtype="float64", device="cpu")
    return compute(VariantAsk(MatrixInput(Q, K, V), settings, mask))


@pytest.mark.parametrize("rows", [[[0, 0, 0, 1]], [[0, 0, 0, 1]] * 3])
def test_a_mask_typed_one_means_padding_blocks_the_padding_key(rows: list[list[float]]) -> None:
    trace = _run(rows, "block")
    allowed = torch.tensor([[True, True, True, False]]).expand(3, 4)
    out, weights = _sdpa(allowed)
    assert torch.allclose(trace.tensor("output"), out) and torch.allclose(trace.tensor("weights"), weights)
    assert torch.equal(trace.tensor("weights")[:, 3], torch.zeros(3, dtype=torch.float64))  # exactly 0, not small
    assert not trace.warnings


def test_the_same_numbers_read_as_attend_are_the_other_way_round_and_warned_about() -> None:
    trace = _run([[0, 0, 0, 1]], "attend")
    assert torch.equal(trace.tensor("weights")[:, 3], torch.ones(3, dtype=torch.float64))  # all weight on the pad
    assert any("--mask-means block" in str(w) for w in trace.warnings)


def test_one_row_per_key_is_the_same_as_that_row_for_every_query() -> None:
    one = _run([[1, 0, 1, 1]], "attend")
    every = _run([[1, 0, 1, 1]] * 3, "attend")
    assert torch.equal(one.tensor("weights"), every.tensor("weights"))
    assert torch.equal(one.tensor("output"), every.tensor("output"))


def test_a_mask_of_neither_shape_is_refused_naming_both() -> None:
    with pytest.raises(ShapeError, match=r"2×4 but the scores are 3×4.*one row with one entry per key \(1×4\)"):
        _run([[1, 1, 1, 0]] * 2, "block")
    with pytest.raises(ConfigError, match="unknown mask convention"):
        build_mask("none", ("a", "b"), 2, means="sideways")


def test_the_inspector_says_the_mask_as_typed_beside_the_may_attend_view() -> None:
    from attn_tui.explain.cell import explain

    trace = _run([[0, 0, 0, 1]], "block")
    masked = next(s for s in trace.stages.values() if s.place.name == "masked")
    assert "typed 1 = blocked" in str(masked.formula)
    blocked = explain(trace, masked.place, (0, 3)).lines
    assert blocked[0].startswith("mask[0,3] = 0") and any("holds 1 here (1 = blocked)" in line for line in blocked)
    kept = explain(trace, masked.place, (0, 0)).lines
    assert any("the mask as typed holds 0 here (1 = blocked)" in line for line in kept)
    assert trace.masking(masked).mask.legend_note() == "typed 1 = blocked"  # type: ignore[union-attr]
    plain = _run([[1, 1, 1, 0]], "attend")
    assert plain.masking(next(s for s in plain.stages.values() if s.place.name == "masked")).mask.legend_note() == ""


def test_the_command_line_and_the_api_take_the_setting(capsys, tmp_path) -> None:
    for name, rows in (("q", Q), ("k", K), ("v", V)):
        (tmp_path / name).write_text("\n".join(" ".join(map(str, r)) for r in rows))
    (tmp_path / "mask").write_text("0 0 0 1\n")
    files = ["--q", str(tmp_path / "q"), "--k", str(tmp_path / "k"), "--v", str(tmp_path / "v")]
    code, out, err = run_cli(capsys, "stages", *files, "--mask-file", str(tmp_path / "mask"), "--mask-means",
                             "block", "--dtype", "float64", "--format", "json")
    assert code == 0, err
    weights = next(s for s in json.loads(out)["stages"] if s["name"] == "weights")["data"]
    assert [row[3] for row in weights] == [0.0, 0.0, 0.0]
    api = attn_tui.compute(q=Q, k=K, v=V, mask_file=[[0, 0, 0, 1]], mask_means="block", dtype="float64",
                          device="cpu")
    assert torch.equal(api.tensor("weights"), torch.tensor(weights, dtype=torch.float64))
    (tmp_path / "two").write_text("0 0 2 1\n")
    for bad, said in ((["--mask-means", "block"], "--mask-means does not apply without a custom mask"),
                      (["--mask-file", str(tmp_path / "two"), "--mask-means", "block"],
                       "use 1 where a key is blocked and 0 where a query may attend"),
                      (["--mask-file", str(tmp_path / "mask"), "--mask-means", "1"], "invalid choice")):
        code, out, err = run_cli(capsys, "stages", *files, *bad)
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1
    with pytest.raises(ConfigError, match="mask_means= must be text"):
        attn_tui.compute(q=Q, k=K, v=V, mask_file=[[0, 0, 0, 1]], mask_means=True)


def test_the_session_keeps_the_convention_and_refuses_an_unknown_one() -> None:
    kept = Session(Settings(mask_means="block"), custom_mask=[[0.0, 0.0, 1.0]])
    again = parse(kept.to_json())
    assert again.settings.mask_means == "block" and again.custom_mask == [[0.0, 0.0, 1.0]]
    broken = json.loads(kept.to_json())
    broken["settings"]["mask_means"] = "sideways"
    with pytest.raises(SessionError, match="mask_means"):
        parse(json.dumps(broken))


def test_the_session_keeps_whether_the_mask_was_made_by_hand() -> None:
    by_hand = parse(Session(custom_mask=[[1.0, 0.0]], mask_by_hand=True).to_json())
    assert by_hand.mask_by_hand and by_hand.custom_mask == [[1.0, 0.0]]
    assert not parse(Session(custom_mask=[[1.0, 0.0]]).to_json()).mask_by_hand  # a sample's or file's mask
    assert not parse(Session(mask_by_hand=True).to_json()).mask_by_hand  # nothing left that was masked


@pytest.mark.parametrize("means", ["attend", "block"])
def test_a_mask_value_error_counts_rows_and_columns_from_0(means: str) -> None:
    """The heatmap, `x` and the inspector count cells from 0; so does an error about a mask cell."""
    from attn_tui.trace.masks import custom_mask

    with pytest.raises(ShapeError) as caught:
        custom_mask([[1.0, 0.0], [0.0, 2.0]], means)
    assert "holds 2 at row 1, column 1 (counted from 0)" in str(caught.value)
