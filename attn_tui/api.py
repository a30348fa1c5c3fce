"""The Python API behind `attn_tui.compute`, `attn_tui.record` and `attn_tui.label`, for notebooks and scripts.

`compute` takes the options of `attn-tui stages` as keyword arguments and checks them
against the same option schema as the command line (`ask/options.py`), then builds the
ask with the same code (an option that does not apply is an error, never dropped).
What comes back is a Trace that indexes naturally (`trace["weights"]`,
`trace.stage("weights", layer=2, head=5)`) and shows itself as a Rich heatmap: in
Jupyter (`_repr_html_`), through Rich (`rich.print(trace)`), and as a plain table in a
Python console (`repr`); `trace.show()` prints it in colour.
"""

from __future__ import annotations

import argparse
import io
from collections.abc import Iterator, Sequence, Sized
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.text import Text

from attn_tui.ask.inputs import Parsed
from attn_tui.ask.model_request import model_ask
from attn_tui.ask.options import MODEL_OPTIONS, SETTINGS, Option, OptionError
from attn_tui.ask.request import VARIANT_OPTIONS, Reader, variant_ask
from attn_tui.ask.settings import RecordAsk
from attn_tui.errors import ConfigError, InputError
from attn_tui.i18n import N_, Msg, _
from attn_tui.io.files import quoted, short_repr
from attn_tui.sources.recorder import Recording as SourceRecording
from attn_tui.trace.stage import Trace as CoreTrace

TEXTS = ("text", "sample", "q", "k", "v", "x", "mask_file", "model", "target")  # text, or a matrix where MATRICES say
# Every keyword of `compute`: the inputs, every setting and the model run's options, as `attn-tui stages` takes them.
OPTIONS = (*TEXTS[:6], *VARIANT_OPTIONS, "device", "model", *MODEL_OPTIONS, "target")
HTML_WIDTH = 100
PYTHON_FLOAT_BYTES = 32  # a float object and its list slot: what a matrix costs once it is Python lists


class Trace(CoreTrace):
    """A trace with a face: a Rich heatmap of its weights in Jupyter and Rich, a plain table in a console."""

    @classmethod
    def of(cls, trace: CoreTrace) -> Trace:
        shown = cls.__new__(cls)
        shown.__dict__.update(trace.__dict__)
        return shown

    def heatmap(self, name: str = "weights", layer: int | None = None, head: int | None = None,
                step: int | None = None, module: str | None = None, width: int = 80) -> RenderableType:
        """One stage as a Rich heatmap table (the first of that name when no place is given)."""
        from attn_tui.present.printed import printed_stage
        from attn_tui.render.stage_table import stage_renderable

        return stage_renderable(printed_stage(self, self.stage(name, layer, head, step, module)), width)

    def show(self, name: str = "weights", layer: int | None = None, head: int | None = None,
             step: int | None = None, module: str | None = None) -> None:
        """Print a stage as a coloured heatmap on the terminal."""
        console = Console()
        console.print(self.heatmap(name, layer, head, step, module, min(console.width, 120)))

    def _summary(self) -> Text:
        names = ", ".join(self.names())
        places = []
        if self.layers > 1:
            places.append(str(Msg("{n} layers", n=self.layers)))
        if self.heads > 1:
            places.append(str(Msg("{n} heads", n=self.heads)))
        if self.steps():
            places.append(str(Msg("{n} steps", n=self.steps())))
        where = f" ({', '.join(places)})" if places else ""
        return Text.assemble(("attn-tui ", "bold"), (str(self.meta.title), "bold magenta"), where, "\n",
                             (_("stages: ") + names, "dim"))

    def _first(self) -> str:
        return "weights" if "weights" in self.names() else self.names()[-1]

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> Iterator[RenderableType]:
        yield self._summary()
        yield self.heatmap(self._first(), width=min(options.max_width, 120))
        for warning in self.warnings:
            yield Text(str(Msg("warning: {text}", text=str(warning))), style="yellow")

    def _render(self, color: bool, width: int) -> Console:
        console = Console(file=io.StringIO(), width=width, record=True, force_terminal=color,
                          color_system="truecolor" if color else None, force_jupyter=False)
        console.print(self)
        return console

    def _repr_html_(self) -> str:
        return self._render(True, HTML_WIDTH).export_html(inline_styles=True)

    def __repr__(self) -> str:
        return self._render(False, HTML_WIDTH).export_text().rstrip()


class Recording(SourceRecording):
    """`with attn_tui.record() as rec: …` — afterwards `rec.trace` is what the code computed, as a Trace."""

    @property
    def trace(self) -> Trace:
        """What ran inside the block, through the one door (`sources.run`) as every other ask."""
        from attn_tui.sources import run

        return Trace.of(run(RecordAsk(self.script, held=self)).trace)


class _Matrices(Reader):
    """Matrices given as Python lists, arrays or tensors; a string is a file path, as on the command line."""

    def __init__(self, max_memory: int | str | None = None) -> None:
        super().__init__()
        self.max_memory = max_memory

    def matrix(self, path: Any, name: str | Msg) -> Parsed:
        if isinstance(path, str):
            return super().matrix(path, name)
        shape = _shape(path, name)  # checked before a single number is copied or becomes a Python float
        _check_size(shape[0], shape[1], name, self.max_memory)
        try:
            rows = path.tolist() if hasattr(path, "tolist") else path
            out = [[float(v) for v in row] for row in rows]
        except (TypeError, ValueError, RuntimeError):  # also a meta or sparse tensor (a RuntimeError subclass)
            raise InputError(Msg("{name} must be a matrix: a list of rows of numbers, an array or a tensor",
                                 name=name)) from None
        return Parsed(out, (None,) * len(out))


def _shape(value: Any, name: str | Msg) -> tuple[int, int]:
    """(rows, widest row) of a tensor, an array or a list of rows, read from its sizes alone.

    A 1-D or 3-D tensor is refused here, not after `tolist()` has copied all of it; a list's rows
    are measured first, so one long row among short ones is counted at its length. Anything else
    (a generator, a string of numbers, a number) is no matrix: it could be endless or mean anything.
    """
    not_a_matrix = InputError(Msg("{name} must be a matrix: a list of rows of numbers, an array or a tensor",
                                  name=name))
    shape = getattr(value, "shape", None)
    if shape is not None:
        try:
            dims = tuple(int(n) for n in shape)
        except (TypeError, ValueError):
            raise not_a_matrix from None
        if len(dims) != 2:
            raise InputError(Msg("{name} must be a matrix (2 dimensions: rows × width), not {ndim}-D of shape {shape}",
                                 name=name, ndim=len(dims), shape=tuple(dims)))
        return dims[0], dims[1]
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        raise not_a_matrix
    widths = [len(row) for row in value if isinstance(row, Sized) and not isinstance(row, (str, bytes))]
    if len(widths) != len(value):
        raise not_a_matrix
    return len(value), max(widths, default=0)


def _check_size(rows: int, width: int, name: str | Msg, max_memory: int | str | None) -> None:
    from attn_tui.ask.budget import Estimate, memory_limit
    from attn_tui.ask.footprint import MAX_TOKENS, check_width

    if rows > MAX_TOKENS:
        raise ConfigError(Msg("{name} has {n} rows; attn-tui shows at most {max}", name=name, n=f"{rows:,}",
                              max=f"{MAX_TOKENS:,}"))
    check_width(width, name)
    as_lists = Estimate()
    as_lists.add(N_("inputs"), rows * width, PYTHON_FLOAT_BYTES)
    as_lists.check(memory_limit(max_memory), name)


MATRICES = ("q", "k", "v", "x", "mask_file")  # a list, an array or a tensor; a string is a file, as on the command line


def _declared(name: str) -> Option | None:
    """The schema's declaration of a keyword (read now, so a changed range is seen at once); None for a text."""
    return SETTINGS.get(name) or MODEL_OPTIONS.get(name)


def _checked(values: dict[str, Any]) -> dict[str, Any]:
    """Each option given to `compute` as the command line would take it: its type, its range, its choices.

    A keyword holds a Python value rather than typed text, so its kind is checked first (a bool is no
    number); then the schema reads it as the command line does, so `heads=0` and `--heads 0` get the
    same refusal.
    """
    checked = dict(values)
    for name, value in values.items():
        option = _declared(name)
        if value is None or (name in MATRICES and not isinstance(value, str)):
            continue
        flag = option is not None and option.kind is bool
        number = option is not None and option.kind in (int, float)
        wanted = N_("true or false") if flag else N_("a number") if number else N_("text")
        kinds: tuple[type, ...] = (bool,) if flag else (str, int, float) if number else (str,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and not flag):
            raise ConfigError(Msg("{name} must be {kind}, not {value}", name=f"{name}=", kind=Msg(wanted),
                                  value=short_repr(value)))
        if number:
            assert option is not None
            try:
                checked[name] = option.read(str(value))
            except OptionError as exc:
                raise ConfigError(Msg("{option}: {reason}", option=f"{name}=", reason=str(exc))) from None
        elif option is not None and option.choices is not None and value not in option.choices:
            raise ConfigError(Msg("unknown {name} {value}; choose one of {names}", name=f"{name}=",
                                  value=quoted(str(value), 30), names=", ".join(option.choices)))
    return checked


def compute(text: str | None = None, *, max_memory: int | None = None, **options: Any) -> Trace:
    """Compute a trace with the options of `attn-tui stages` (`variant=`, `mask=`, `heads=`, `model=`, …).

    Matrices (`q`, `k`, `v`, `x`, `mask_file`) may be lists of rows, arrays or tensors, or
    file paths. Bad options raise the same errors the command line reports.
    """
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise TypeError(str(Msg("compute() got unknown options: {names}; it takes {known}", names=", ".join(unknown),
                                known=", ".join(OPTIONS))))
    values = {name: options.get(name) for name in OPTIONS}
    values["text"] = text if text is not None else options.get("text")
    args = argparse.Namespace(**_checked(values))
    ask = model_ask(args) or variant_ask(args, _Matrices(max_memory))
    if ask is None:
        raise InputError(Msg("give an input: text=, sample=, q=/k=/v= or x="))
    from attn_tui.sources import run

    return Trace.of(run(ask, max_memory, model_statistics=False).trace)  # stages are read as asked


def record(tokens: Sequence[str] | None = None, key_tokens: Sequence[str] | None = None,
           max_calls: int = 64) -> Recording:
    """Record the attention computed inside a `with` block; `tokens` label its queries (and keys)."""
    return Recording(tokens, key_tokens, max_calls)  # a sentence, or a list of words; checked there
