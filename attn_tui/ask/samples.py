"""Sample inputs shipped as TOML: a sentence or typed matrices, plus suggested settings.

Read with tomllib only (no torch), so the app can list samples on its first frame.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

from attn_tui.ask.options import SETTINGS
from attn_tui.ask.settings import MatrixInput, ModelAsk, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.errors import InputError
from attn_tui.i18n import Msg
from attn_tui.io.files import quoted

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10 only
    import tomli as tomllib

DEFAULT_SAMPLE = "korean"  # what the app opens on when no input is named
MODEL_SENTENCE = "the cat sat on the mat"  # what a transformer reads when nothing of its own is given
DATE_SAMPLE = "dates_english"  # whose date a date model reads when none is given


@dataclass(frozen=True)
class Sample:
    """A shipped input. `description` and `notes` are English; the catalogs hold their Korean
    (tools/catalog.py extracts them from the TOML files), so show them through `_`."""

    name: str
    description: str
    request: VariantAsk
    notes: str = ""
    model: ModelAsk | None = None  # set when the sample runs a real or trained model
    stage: str | None = None  # the stage the app opens on (None: the first of the pipeline)


def samples_dir() -> Path:
    """The `attn_tui.samples` package: installed, or the link to `samples/` in a source checkout."""
    return Path(str(resources.files("attn_tui.samples")))


def sample_script_paths() -> dict[str, Path]:
    """The shipped sample scripts of `attn-tui trace --sample` by name (the file name without .py): read from the
    folder, so that `--help` lists every one."""
    folder = samples_dir() / "scripts"
    return {p.stem: p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_")}


def parse_sample(text: str, origin: str) -> Sample:
    """One sample from TOML text; errors name the file and what is wrong."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(Msg("not valid TOML: {reason}", reason=exc), source=origin) from None
    for key in ("name", "description"):
        if not isinstance(data.get(key), str):
            raise InputError(Msg("needs a string '{key}'", key=key), source=origin)
    settings = {k: data[k] for k in SETTINGS.keys() & data.keys()}
    try:
        settings_obj = Settings.of(**settings)
    except TypeError as exc:
        raise InputError(str(exc), source=origin) from None
    if "text" in data:
        source: SentenceInput | MatrixInput | XInput = SentenceInput(data["text"])
    elif "x" in data:
        source = XInput(data["x"], _tokens(data.get("tokens")))
    elif all(key in data for key in ("q", "k", "v")):
        source = MatrixInput(data["q"], data["k"], data["v"], _tokens(data.get("query_tokens")),
                             _tokens(data.get("key_tokens")))
    else:
        raise InputError(Msg("needs 'text', 'x', or all of 'q', 'k' and 'v'"), source=origin)
    model = None
    if "model" in data:
        if "text" not in data:
            raise InputError(Msg("a model sample needs 'text'"), source=origin)
        keys = {"layer", "head", "pad_to", "target", "teacher_forcing"} & data.keys()
        model = ModelAsk(data["model"], data["text"], **{k: data[k] for k in keys})
    stage = data.get("stage")
    if stage is not None and not isinstance(stage, str):
        raise InputError(Msg("'stage' must be a stage name"), source=origin)
    return Sample(data["name"], data["description"], VariantAsk(source, settings_obj, data.get("mask_matrix")),
                  data.get("notes", ""), model, stage)


def _tokens(value: list[str] | None) -> tuple[str, ...] | None:
    return None if value is None else tuple(value)


@lru_cache(maxsize=1)
def load_samples() -> dict[str, Sample]:
    """Every shipped sample by name, in file-name order."""
    found: dict[str, Sample] = {}
    for path in sorted(samples_dir().glob("*.toml")):
        sample = parse_sample(path.read_text(encoding="utf-8"), path.name)
        found[sample.name] = sample
    return found


def get_sample(name: str) -> Sample:
    samples = load_samples()
    if name not in samples:
        raise InputError(Msg("no sample called {name}; `attn-tui samples` lists them", name=quoted(name)))
    return samples[name]


def sentence_for(model: str) -> str:
    """What `model` reads when no text is given: the text of the first shipped sample that runs it, a date for a
    date model, else MODEL_SENTENCE."""
    from attn_tui.ask.models import DATE_MODELS

    samples = load_samples()
    for sample in samples.values():
        if sample.model is not None and sample.model.name == model:
            return sample.model.text
    date = samples[DATE_SAMPLE].model
    return date.text if model in DATE_MODELS and date is not None else MODEL_SENTENCE
