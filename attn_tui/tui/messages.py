"""Messages that travel up to the app: results from workers and edits from the panes.

Small dataclasses so a worker thread can post them safely and a test can read them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.message import Message

from attn_tui.core.settings import MatrixInput, SentenceInput, Settings, XInput

if TYPE_CHECKING:
    from attn_tui.present.shown import Shown
    from attn_tui.sources.base import Ask


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
class ComputeFailed(Message):
    """The source refused the ask; the error is written for the user as is."""

    generation: int
    ask: Ask
    error: str


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
class SampleChosen(Message):
    """A sample was picked in the Samples tab."""

    name: str


@dataclass
class CursorMoved(Message):
    """The heatmap's cell cursor moved (key or click); row and column are in the displayed grid."""

    row: int
    col: int


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
