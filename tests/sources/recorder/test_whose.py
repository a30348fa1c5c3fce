"""Whose code a frame is, decided once per file for every question asked of it, and the frame that called into the
mode, found past the mode's own frames however many there are."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.sources.recorder import Recording, capture, whose
from attn_tui.sources.recorder.capture import Recorder
from attn_tui.sources.recorder.whose import Author, author_of, is_library_file, is_own_file, is_user_file

SAMPLE = Path(attn_tui.__file__).parent / "samples" / "bahdanau_decoder.py"


@pytest.mark.parametrize(("filename", "author"), [
    (__file__, Author.USER),
    ("<stdin>", Author.USER),
    (str(SAMPLE), Author.USER),  # attn-tui's shipped sample scripts are the user's to read
    (pytest.__file__, Author.INSTALLED),
    (torch.__file__, Author.TORCH),
    (F.__file__, Author.TORCH),
    (os.__file__, Author.INTERPRETER),
    ("<frozen importlib._bootstrap>", Author.INTERPRETER),
    (attn_tui.__file__, Author.ATTN_TUI),
    (whose.__file__, Author.ATTN_TUI),
], ids=["test", "stdin", "sample", "installed", "torch", "torch.nn", "stdlib", "frozen", "attn-tui", "recorder"])
def test_one_author_per_file_answers_every_question_asked_of_it(filename: str, author: Author) -> None:
    assert author_of(filename) is author
    assert is_user_file(filename) is (author is Author.USER)  # a modeling file is looked past to the user's line
    assert is_library_file(filename) is (author is not Author.USER)  # a helper thread's code: not the user's
    assert is_own_file(filename) is (author is Author.ATTN_TUI)


def test_the_mode_itself_is_not_attn_tuis_own_call() -> None:
    assert author_of(capture.__file__) is Author.ATTN_TUI and not is_own_file(capture.__file__)


def test_where_finds_the_code_that_asked_with_none_of_the_modes_frames_between() -> None:
    try:
        (origin, scope), line = Recorder._where(), sys._getframe().f_lineno  # no _record, no __torch_function__
    finally:
        whose.forget_walks()
    assert origin is not None and (origin.file, origin.line) == (__file__, line)
    assert scope is not None and scope.name == sys._getframe().f_code.co_name


def test_a_wrapper_layer_in_the_mode_moves_no_line_and_the_walk_is_still_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    namespace = {"record": Recorder._record}
    wrapper = "def _record(self, *args):\n    return record(self, *args)\n"  # one more of the mode's own frames
    exec(compile(wrapper, capture.__file__, "exec"), namespace)
    monkeypatch.setattr(Recorder, "_record", namespace["_record"])
    q = torch.randn(3, 4)
    with Recording() as rec:
        here = sys._getframe()
        weights, line = torch.softmax(q @ q.T, -1), sys._getframe().f_lineno
        walked = whose.LAST_WALK[0]
        kept = walked is not None and walked[0] is here  # the next torch call from here reads no frame above it
        del walked
    assert kept
    (call,) = [node for calls in rec.recorder.anchors.values() for node in calls]
    assert call.origin is not None and (call.origin.file, call.origin.line) == (__file__, line)
    assert torch.equal(rec.recorded.tensor("weights"), weights)
