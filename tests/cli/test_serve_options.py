"""`attn-tui serve` refuses what it cannot do in one line, before any server starts."""

from __future__ import annotations

import builtins
import sys

import pytest

from tests.cli.test_cli import run_cli


def test_serve_without_textual_serve_says_how_to_install_it(capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_textual_serve(name: str, *args: object, **kwargs: object):
        if name.startswith("textual_serve"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_textual_serve)
    for loaded in [name for name in sys.modules if name.startswith(("textual_serve", "attn_tui.cli.serve_server"))]:
        monkeypatch.delitem(sys.modules, loaded)  # imported by an earlier test in this process: imported afresh
    code, _, err = run_cli(capsys, "serve")
    assert code == 2 and "pip install 'attn-tui[web]'" in err and err.count("\n") == 1


@pytest.mark.parametrize(("argv", "message"), [(["serve", "--port", "70000"], "between 1 and 65,535"),
                                               (["serve", "--host", " "], "--host is empty")])
def test_bad_serve_options(capsys, argv: list[str], message: str) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and message in err and err.count("\n") == 1
