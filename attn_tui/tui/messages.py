"""Messages that travel up to the app: results from workers and edits from the panes.

Small dataclasses so a worker thread can post them safely and a test can read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual.message import Message

from attn_tui.core.settings import MatrixInput, ModelInput, Request, SentenceInput, Settings, XInput


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
    """A compute worker finished; `generation` lets the app drop results it no longer wants."""

    generation: int
    request: Request
    trace: Any  # attn_tui.core.stage.Trace (torch is not imported here)
    seconds: float
    notice: str | None = None
    model: ModelInput | None = None  # the real or trained model run, None for a variant
    summary: Any = None  # model_views.ModelSummary of a transformer: every head at a glance


@dataclass
class ComputeFailed(Message):
    """The engine refused the request; the message is written for the user as is."""

    generation: int
    request: Request
    error: str
    model: ModelInput | None = None


@dataclass
class SettingsEdited(Message):
    """The model pane holds new, valid settings."""

    settings: Settings


@dataclass
class SourceEdited(Message):
    """The input pane holds a new, valid input (the last tab typed in wins)."""

    source: SentenceInput | MatrixInput | XInput


@dataclass
class SampleChosen(Message):
    """A sample was picked in the Samples tab."""

    name: str


@dataclass
class CellClicked(Message):
    """A heatmap cell was clicked; row and column are in the displayed grid."""

    row: int
    col: int


@dataclass
class ModelChosen(Message):
    """The model pane picked a model by name or path; None goes back to the attention variants."""

    name: str | None


@dataclass
class TargetEdited(Message):
    """The seq2seq target date or the teacher-forcing switch changed (target None when empty)."""

    target: str | None
    teacher_forcing: bool
