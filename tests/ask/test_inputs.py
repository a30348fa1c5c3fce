"""The matrix parser: accepted forms, errors with line and column, and fuzzing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_tui.ask.inputs import check_qkv_shapes, parse_matrix, tokenize
from attn_tui.errors import InputError, ShapeError

EYE = [[1.0, 0.0], [0.0, 1.0]]


@pytest.mark.parametrize("text", [
    "1 0\n0 1", "1, 0\n0, 1", "1 0; 0 1", "1,0;0,1;", "[[1, 0], [0, 1]]", "[[1. 0.]\n [0. 1.]]",
    "\n\n  1 0  # first row\n0 1\n", "[[1,0],[0,1],]", "[ [1 0] [0 1] ]", "1.0e0 0\n0 +1",
])
def test_accepted_forms(text: str) -> None:
    assert parse_matrix(text) == EYE


def test_single_bracketed_row_and_unicode_minus() -> None:
    assert parse_matrix("[1, -2, 3]") == [[1.0, -2.0, 3.0]]
    assert parse_matrix("−1.5 .5") == [[-1.5, 0.5]]


@pytest.mark.parametrize("text,line,column,fragment", [
    ("1 2\n3 x", 2, 3, "expected a number, found 'x'"),
    ("1 2\n3", 2, 1, "row 2 has 1 number but row 1 has 2"),
    ("1,,2", 1, 3, "between the commas"),
    ("[[1, 2], [3]]", 1, 10, "row 2 has 1 number but row 1 has 2"),
    ("[[1, 2]", 1, 8, "expected ',' or ']'"),
    ("[[1, 2]] 3", 1, 10, "after the closing ']'"),
    ("[[[1]]]", 1, 3, "two levels"),
    ("1 nan", 1, 3, "nan is not a finite number"),
    ("1 2\n3 -inf", 2, 3, "-inf is not a finite number"),
    ("[[1, 2], [Infinity, 0]]", 1, 11, "inf is not a finite number"),
    ("1 +INF", 1, 3, "inf is not a finite number"),
    ("1 nanx", 1, 3, "expected a number, found 'nanx'"),
    ("1 1e999", 1, 3, "finite"),
    ("1 2]", 1, 4, "unexpected ']'"),
    ("1e5e3", 1, 1, "'1e5e3'"),
])
def test_errors_name_line_and_column(text: str, line: int, column: int, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        parse_matrix(text, "K")
    err = info.value
    assert (err.line, err.column) == (line, column)
    assert fragment in str(err)
    assert str(err).startswith(f"K, line {line}, column {column}: ")


def test_empty_matrix_is_named() -> None:
    with pytest.raises(InputError, match="Q is empty"):
        parse_matrix("  \n # nothing\n", "Q")


def test_shape_errors_name_both_shapes() -> None:
    with pytest.raises(ShapeError, match="Q is 3×4 but K is 4×3: their last dimensions must match"):
        check_qkv_shapes((3, 4), (4, 3), (4, 2), same_width=True)
    with pytest.raises(ShapeError, match="K is 4×3 but V is 5×2"):
        check_qkv_shapes((3, 3), (4, 3), (5, 2), same_width=False)
    check_qkv_shapes((3, 4), (4, 3), (4, 2), same_width=False)


def test_tokenize_splits_on_whitespace_and_rejects_empty() -> None:
    assert tokenize(" 나는  학교에\t간다 <pad> ") == ["나는", "학교에", "간다", "<pad>"]
    with pytest.raises(InputError, match="empty"):
        tokenize("   ")


_MATRIX_ALPHABET = st.sampled_from(list("0123456789.,;[] \n-+eE#x\t−") + ["nan", "inf", "1e999", "\u00a0"])


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(st.one_of(st.text(max_size=60), st.lists(_MATRIX_ALPHABET, max_size=40).map("".join)))
def test_parser_raises_only_its_own_error(text: str) -> None:
    try:
        rows = parse_matrix(text, "Q")
    except InputError as err:
        assert err.line is None or err.line >= 1
        assert err.column is None or err.column >= 1
        return
    assert rows and all(len(row) == len(rows[0]) for row in rows)
    assert all(isinstance(x, float) for row in rows for x in row)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.floats(allow_nan=False, allow_infinity=False, width=32), min_size=3, max_size=3),
                min_size=1, max_size=5), st.sampled_from(["plain", "csv", "semi", "brackets"]))
def test_printed_matrices_parse_back(rows: list[list[float]], style: str) -> None:
    if style == "plain":
        text = "\n".join(" ".join(repr(x) for x in row) for row in rows)
    elif style == "csv":
        text = "\n".join(", ".join(repr(x) for x in row) for row in rows)
    elif style == "semi":
        text = "; ".join(" ".join(repr(x) for x in row) for row in rows)
    else:
        text = repr(rows)
    assert parse_matrix(text) == [[float(x) for x in row] for row in rows]
