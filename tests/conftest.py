"""Shared fixtures: small builders for requests so tests read as the settings they vary."""

from __future__ import annotations

import pytest

from attn_tui.core.settings import MatrixInput, Request, SentenceInput, Settings, XInput


def sentence(text: str, **settings: object) -> Request:
    return Request(SentenceInput(text), Settings(**settings))


def matrices(q, k, v, custom_mask=None, **settings: object) -> Request:
    return Request(MatrixInput(q, k, v), Settings(**settings), custom_mask)


def x_matrix(x, **settings: object) -> Request:
    return Request(XInput(x), Settings(**settings))


@pytest.fixture
def lookup_qkv():
    q = [[0, 10, 0], [0, 0, 10], [10, 10, 0]]
    k = [[10, 0, 0], [0, 10, 0], [0, 0, 10], [0, 0, 10]]
    v = [[1, 0], [10, 0], [100, 5], [1000, 6]]
    return q, k, v


@pytest.fixture(autouse=True)
def _english(monkeypatch: pytest.MonkeyPatch, tmp_path):
    """Tests read English unless they switch (child processes get it through the environment), and keep
    any saved session in their own folder, never the user's."""
    from attn_tui import i18n

    monkeypatch.setenv("ATTN_TUI_LANG", "en")
    monkeypatch.setenv("ATTN_TUI_STATE_DIR", str(tmp_path / "state"))
    i18n.set_language("en")
    yield
    i18n.set_language("en")
