"""Messages that travel up to the app: results from workers and edits from the panes.

Small dataclasses so a worker thread can post them safely and a test can read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from attn_tui.ask.settings import MatrixInput, SentenceInput, Settings, XInput
from attn_tui.i18n import Msg

if TYPE_CHECKING:
    from collections.abc import Callable

    from attn_tui.ask.settings import Ask
    from attn_tui.sources.progress import Progress
    from attn_tui.trace.shown import Shown
    from attn_tui.tui.screens.export import ExportAsk


@dataclass
class TorchReady(Message):
    """torch and the engine finished importing in the loader thread."""

    seconds: float


@dataclass
class TorchFailed(Message):
    """torch could not be imported: the app can still show inputs but not compute."""

    error: str


@dataclass
class TraceReady(Message):
    """The compute worker finished; `generation` lets the app drop results it no longer wants."""

    generation: int
    shown: Shown


@dataclass
class TraceGrew(Message):
    """The compute worker made another step of a trace it is still making (a decoder writing): `shown` holds the
    steps made so far (`steps_ready` of them), never half a step; a `TraceReady` follows with the whole trace."""

    generation: int
    shown: Shown
    steps_ready: int


@dataclass
class LoadProgressed(Message):
    """The compute worker's load reached another phase, or moved on in one (throttled: tui/workers.py)."""

    generation: int
    progress: Progress


@dataclass
class ComputeFailed(Message):
    """The source refused the ask; the error is written for the user as is."""

    generation: int
    ask: Ask
    error: str | Msg


@dataclass
class SettingsEdited(Message):
    """The model pane holds new, valid settings."""

    settings: Settings


@dataclass
class SettingsRejected(Message):
    """A setting was typed that cannot be used (kept in its field, not applied); `error` says why, "" clears."""

    error: str


@dataclass
class SourceEdited(Message):
    """The input pane holds a new, valid input (the last tab typed in wins)."""

    source: SentenceInput | MatrixInput | XInput


@dataclass
class SourceRejected(Message):
    """A matrix editor holds an error: nothing is computed from it; `error` is read in the language on show.
    None: the editors' error no longer applies (the sentence is back in front)."""

    error: Msg | None


@dataclass
class SampleChosen(Message):
    """A sample was picked in the Samples tab."""

    name: str


@dataclass
class ModelChosen(Message):
    """The model pane picked a model by name or path; None goes back to the attention variants."""

    name: str | None


@dataclass
class TargetEdited(Message):
    """The date model's target or the teacher-forcing switch changed (target None when empty)."""

    target: str | None
    teacher_forcing: bool


@dataclass
class PanelChanged(Message):
    """The explorer switched panels; a whole-model grid wants the full width."""

    panel: str
    full_width: bool


@dataclass
class CompareReady(Message):
    """B of compare mode was computed (generation: which B was asked last)."""

    generation: int
    shown: Shown


@dataclass
class CompareFailed(Message):
    """B of compare mode could not be computed; the error is written for the user."""

    generation: int
    error: str | Msg


@dataclass
class ExportDone(Message):
    """An export was written; the path is what the notice shows, with how many stages (or heads) it holds."""

    path: str
    count: int
    what: str  # stage | trace | atlas


@dataclass
class ExportTooLarge(Message):
    """An export would write `size` bytes, more than the dialog writes without asking; `write` writes it (in a
    worker), just as it was measured."""

    ask: ExportAsk
    size: int
    write: Callable[[], None]


@dataclass
class ExportFailed(Message):
    error: str | Msg


@dataclass
class InputTyped(Message):
    """Something was typed in the input pane, valid or not: the session keeps it."""
