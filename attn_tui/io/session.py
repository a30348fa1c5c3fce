"""The session kept between runs: settings, the sentence, every editor's text (valid or not), the model, the language.

A small JSON file in the user's state directory (platformdirs; ATTN_TUI_STATE_DIR
overrides it), written atomically. Anything wrong with it, from a truncated write to a
hand edit, costs a notice and a fresh start, never the start itself.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from attn_tui.ask.checks import check_fields, check_ranges, matrix_shape
from attn_tui.ask.model_request import check_generation
from attn_tui.ask.options import MODEL_OPTIONS, SETTINGS, choices
from attn_tui.ask.settings import ModelAsk, Settings
from attn_tui.errors import AttnError, InputError
from attn_tui.i18n import LANGUAGES, Msg
from attn_tui.io.files import check_text, read_text, write_text_atomic

VERSION = 1
MAX_BYTES = 8 * 1024 * 1024
EDITORS = ("Q", "K", "V", "X")
MENUS = choices()  # every value a menu of the app can show (read again, from the option schema, for each file)


def state_dir() -> Path:
    chosen = os.environ.get("ATTN_TUI_STATE_DIR")
    if chosen:
        return Path(chosen)
    import platformdirs

    return Path(platformdirs.user_state_dir("attn-tui", appauthor=False))


def session_path() -> Path:
    return state_dir() / "session.json"


@dataclass
class Session:
    """What a person made in the app: enough to put every pane back as it was."""

    settings: Settings = field(default_factory=Settings)
    source: str = "sentence"  # sentence | matrices | x: the input the variants read
    sentence: str = ""
    editors: dict[str, str] = field(default_factory=dict)  # the text of each matrix editor, exactly as typed
    custom_mask: list[list[float]] | None = None
    model: ModelAsk | None = None
    language: str = "en"
    stage: str | None = None
    mask_by_hand: bool = False  # the custom mask was made with `x`: the settings line says "masked by hand"
    export_folder: str = ""  # where the last export went, offered for the next ("": the folder started in)

    def to_json(self) -> str:
        data: dict[str, Any] = {"version": VERSION, **asdict(self)}
        data["settings"] = self.settings.as_dict()
        data["model"] = None if self.model is None else asdict(self.model)
        return json.dumps(data, ensure_ascii=False, indent=1)


class SessionError(Exception):
    """The saved session cannot be used; the message says why, for a notice."""


def _typed(value: object, kind: type | tuple[type, ...], what: str) -> Any:
    """`value` if it has one of the kinds (a bool is not an int here); SessionError otherwise."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
        raise SessionError(str(Msg("{what} has the wrong type", what=what)))
    if isinstance(value, str):
        _checked(check_text, value, what)  # JSON may spell a lone surrogate or a NUL that no keyboard types
    return value


def _checked(check: Callable[..., object], *args: Any) -> None:
    """Run one of the core's checks; what it refuses makes the session unusable, said in its own words."""
    try:
        check(*args)
    except AttnError as exc:
        raise SessionError(str(exc)) from None


def _settings(data: object) -> Settings:
    """Settings from the file, each field checked as the option schema declares it: its type, its range and, for a
    menu of the app, its choices."""
    if not isinstance(data, dict):
        raise SessionError(str(Msg("{what} has the wrong type", what="settings")))
    settings = Settings.of(**{k: v for k, v in data.items() if k in SETTINGS})
    _checked(check_fields, settings, "settings", choices())
    _checked(check_ranges, settings, "settings")
    return settings


def _model(data: object) -> ModelAsk | None:
    if data is None:
        return None
    if not isinstance(data, dict):
        raise SessionError(str(Msg("{what} has the wrong type", what="model")))
    known = {f.name: f for f in fields(ModelAsk)}
    values = {k: v for k, v in data.items() if k in known}
    _typed(values.get("name"), str, "model.name")
    _typed(values.get("text", ""), str, "model.text")
    model = ModelAsk(**values)
    _checked(check_fields, model, "model", choices())
    _checked(check_ranges, model, "model", MODEL_OPTIONS)
    _checked(check_generation, model)
    return model


def parse(text: str) -> Session:
    """A session from the file's text; SessionError naming what is wrong."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionError(str(Msg("not JSON ({reason})", reason=exc.msg))) from None
    except RecursionError:  # `[[[[…` a million deep: json's decoder recurses once per level
        raise SessionError(str(Msg("the input is nested too deeply"))) from None
    if not isinstance(data, dict) or type(data.get("version")) is not int or data["version"] != VERSION:
        raise SessionError(str(Msg("written by another version of attn-tui")))
    editors = _typed(data.get("editors", {}), dict, "editors")
    source = data.get("source", "sentence")
    if source not in ("sentence", "matrices", "x"):
        raise SessionError(str(Msg("{what} has the wrong type", what="source")))
    mask = data.get("custom_mask")
    if mask is not None and not (isinstance(mask, list) and all(
            isinstance(row, list) and all(isinstance(x, (int, float)) for x in row) for row in mask)):
        raise SessionError(str(Msg("{what} has the wrong type", what="custom_mask")))
    settings = _settings(data.get("settings", {}))
    if mask is not None:
        _checked(matrix_shape, mask, "custom_mask")
        _check_zeros_and_ones(mask, settings.mask_means)
    language = data.get("language", "en")
    stage = data.get("stage")
    return Session(settings, source, _typed(data.get("sentence", ""), str, "sentence"),
                   {k: _typed(v, str, f"editors.{k}") for k, v in editors.items() if k in EDITORS}, mask,
                   _model(data.get("model")), language if language in LANGUAGES else "en",
                   stage if isinstance(stage, str) else None, mask is not None and data.get("mask_by_hand") is True,
                   _typed(data.get("export_folder", ""), str, "export_folder"))


def _check_zeros_and_ones(mask: list[list[float]], means: str) -> None:
    """A saved mask holds 0s and 1s, as any custom mask does: a NaN or a 0.5 in the file is a broken session (set
    aside), not a session that opens on an error every start."""
    for i, row in enumerate(mask):
        for j, value in enumerate(row):
            if value not in (0, 1):  # NaN too: it equals nothing
                raise SessionError(str(
                    Msg("the mask holds {value} at row {i}, column {j} (counted from 0): use 1 where a key is blocked "
                        "and 0 where a query may attend (--mask-means block)", value=f"{value:g}", i=i, j=j)
                    if means == "block" else
                    Msg("the mask holds {value} at row {i}, column {j} (counted from 0): use 1 where a query may "
                        "attend and 0 where it may not", value=f"{value:g}", i=i, j=j)))


def load(path: Path | None = None) -> Session | None:
    """The saved session; None when there is none. A broken one raises SessionError (and is set aside,
    as session.json.broken, so it is never read again but not lost either)."""
    path = path or session_path()
    try:
        if not path.exists():
            return None
    except OSError as exc:  # a state directory whose path is too long, or that cannot be searched
        raise SessionError(exc.strerror or str(exc)) from None
    try:
        return parse(read_text(path, Msg("the saved session"), limit=MAX_BYTES))
    except (InputError, SessionError, TypeError, ValueError) as exc:
        with contextlib.suppress(OSError):
            os.replace(path, path.with_name(path.name + ".broken"))
        raise SessionError(str(exc)) from None


def save(session: Session, path: Path | None = None) -> None:
    """Write atomically: a crash, a signal or a full disk mid-write leaves the previous session whole."""
    path = path or session_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, session.to_json(), mode=0o600)  # what a person typed is theirs alone to read
