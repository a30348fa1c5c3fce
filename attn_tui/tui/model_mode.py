"""Real and trained models in the app: choosing one, its layer and head, and the whole-model panels.

A mixin of AttnApp. `self.model` (a ModelInput) is None while the attention variants are
shown; otherwise compute runs the model, and g, r, [ ] and { } act on the model.
"""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text

from attn_tui.core.samples import load_samples
from attn_tui.core.settings import ModelInput, SentenceInput
from attn_tui.tui.messages import ModelChosen, TargetEdited
from attn_tui.tui.widgets.heatmap import Heatmap
from attn_tui.tui.widgets.input_pane import InputPane
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from attn_tui.tui.widgets.model_grid import ModelGrid
from attn_tui.tui.widgets.model_pane import SEQ2SEQ, ModelPane

DATE_SAMPLE = "dates_english"  # the sentence a date model starts on the first time it is chosen
VARIANTS_KEY = ""  # the key of the attention variants' own sentence among the kept sentences
PANEL_CLASSES = {"heads": "-grid", "params": "-grid", "model_grid": "-model-grid", "rollout": "-matrix",
                 "alignment": "-matrix"}


class ModelMode:
    """Needs from the app: model, good_model, summary, trace, request, panel, sentences, _recompute, _show_stage."""

    @property
    def transformer(self) -> bool:
        """A real transformer is shown (layers of heads), not a variant or a decode."""
        return self.model is not None and self.model.name not in SEQ2SEQ

    def on_model_chosen(self, message: ModelChosen) -> None:
        self.choose_model(message.name)

    def choose_model(self, name: str | None) -> None:
        """Switch to a model by name or path (None: back to the variants).

        Each source keeps the sentence typed for it, and switching back restores it; a
        date model starts on a date. The matrix editors are never touched.
        """
        inputs = self.query_one(InputPane)
        self.sentences[self._source_key(self.model)] = inputs.sentence
        key = VARIANTS_KEY if name is None else name
        text = self.sentences.get(key)
        if text is None:
            text = load_samples()[DATE_SAMPLE].model.text if name in SEQ2SEQ else (
                self.sentences.get(VARIANTS_KEY) or inputs.sentence or "the cat sat on the mat")
        if name is None:
            self.model = None
            inputs.model_mode = False
            if isinstance(self.request.source, SentenceInput):
                self.request = replace(self.request, source=SentenceInput(text))
        else:
            self.model = ModelInput(name, text)
            inputs.model_mode = True
        self.query_one(ModelPane).show_model(self.model)
        inputs.show_sentence(text)
        self._recompute()

    @staticmethod
    def _source_key(model: ModelInput | None) -> str:
        return VARIANTS_KEY if model is None else model.name

    def on_target_edited(self, message: TargetEdited) -> None:
        if self.model is None or self.model.name not in SEQ2SEQ:
            return
        self.model = replace(self.model, target=message.target, teacher_forcing=message.teacher_forcing)
        self._recompute()

    def _loading(self, busy: bool) -> None:
        """The loading indicator while a model loads the first time (seconds); the UI stays live."""
        pane = self.query_one(ModelPane)
        self.query_one(Heatmap).loading = busy
        if busy:
            pane.show_status(f"loading {self.model.name}…")

    # ----- layer and head ------------------------------------------------------------------
    def _change_model_head(self, d_layer: int, d_head: int) -> bool:
        """Move a transformer's layer or head; False when no transformer is shown."""
        if not self.transformer or self.trace is None:
            return False
        layers, heads = int(self.trace.config["layers"]), int(self.trace.config["heads"])
        self.model = replace(self.model, layer=(self.model.layer + d_layer) % layers,
                             head=(self.model.head + d_head) % heads)
        self._recompute()
        return True

    def action_next_layer(self) -> None:
        self._layer_step(1)

    def action_prev_layer(self) -> None:
        self._layer_step(-1)

    def _layer_step(self, step: int) -> None:
        if not self._change_model_head(step, 0):
            self.notify("only a real transformer has layers: pick minilm in the model pane", timeout=3)

    # ----- whole-model panels --------------------------------------------------------------
    def action_toggle_rollout(self) -> None:
        if self.summary is None:
            self.notify("attention rollout needs a real transformer: pick minilm in the model pane", timeout=3)
            return
        self._toggle_panel("rollout")

    def _grid_panel(self) -> str:
        """What g shows: a transformer's layer × head grid, a decode's alignment so far, or the heads."""
        if self.summary is not None:
            return "model_grid"
        if self.trace is not None and self.trace.steps():
            return "alignment"
        return "heads"

    def _toggle_panel(self, panel: str) -> None:
        self.panel = None if self.panel == panel else panel
        right = self.query_one("#right")
        for name in set(PANEL_CLASSES.values()):
            right.set_class(PANEL_CLASSES.get(self.panel or "") == name, name)
        right.set_class(self.panel == "rollout", "-rollout-shown")
        right.set_class(self.panel == "alignment", "-alignment-shown")
        self.query_one("#main").set_class(self.panel == "model_grid", "-full")
        focus = {"heads": "#heads-grid", "params": "#heads-grid", "model_grid": "#model-grid",
                 "rollout": "#rollout-map", "alignment": "#alignment-map"}.get(self.panel or "", "#heatmap")
        self.query_one(focus).focus()
        if self.trace is not None:
            self._show_stage()

    def _panel_still_fits(self) -> None:
        """Close a whole-model panel that the new trace has nothing for."""
        fits = {"model_grid": self.summary is not None, "rollout": self.summary is not None,
                "alignment": self.trace is not None and bool(self.trace.steps())}
        if self.panel in fits and not fits[self.panel]:
            self._toggle_panel(self.panel)

    def _show_model_panel(self) -> bool:
        """Draw the model grid, rollout or alignment panel; False when the panel is none of them."""
        from attn_tui.tui.model_views import ROLLOUT_FORMULA, alignment_grid

        if self.panel == "model_grid":
            self.query_one(ModelGrid).show(self.summary, self.model.layer, self.model.head)
        elif self.panel == "rollout":
            self.query_one("#rollout", MatrixPanel).show(
                ROLLOUT_FORMULA, self.summary.rollout, None,
                "how much of each token's last-layer representation traces back to each input token, "
                "through every layer and the residual path (r returns; click a cell for its value)")
        elif self.panel == "alignment":
            name, step = self.places[self.stage_index]
            steps = self.trace.steps()
            filled = steps if step is None else step + (name in ("weights", "context"))
            output = self.trace.config.get("output", "")
            self.query_one("#alignment", MatrixPanel).show(
                f"alignment so far: {filled} of {steps} decoder steps  ('{self.trace.config.get('input')}' → "
                f"'{output}')", alignment_grid(self.trace, filled), None,
                "a row fills in when its step's weights are computed; → steps on (g returns)")
        else:
            return False
        return True

    def _model_lines(self) -> str:
        """What the bar says about the model: the head in view, or the decoder step and its output."""
        trace = self.trace
        if self.transformer:
            return f"{self.model.name}  layer {self.model.layer} head {self.model.head}"
        if trace is not None and trace.steps():
            name, step = self.places[self.stage_index]
            forced = "  teacher-forced" if trace.config.get("teacher_forcing") else ""
            if step is None:
                return f"all {trace.steps()} decoder steps → '{trace.config.get('output')}'{forced}"
            return f"decoder step {step + 1} of {trace.steps()}: writes {trace.query_tokens[step]!r}{forced}"
        return ""

    def _show_model_tokens(self) -> None:
        """The model's own tokens (special ones dimmed), or a decode's output, under the sentence."""
        trace, inputs = self.trace, self.query_one(InputPane)
        if self.model is None or trace is None:
            return
        note = Text(f"{self.model.name} ", style="dim")
        if trace.steps():
            note.append("→ ")
            note.append(str(trace.config.get("output")), "bold green")
            if trace.config.get("teacher_forcing"):
                note.append(f"   (teacher forcing on {trace.config.get('target')})", "magenta")
            inputs.show_note(note)
            return
        special = set(trace.config.get("special_tokens", ()))
        note.append("tokens: ")
        for n, token in enumerate(trace.query_tokens):
            note.append(token if n in special else f" {token} ", "dim italic" if n in special else "reverse")
            note.append(" ")
        note.append(f"  ({len(trace.query_tokens)})", "dim")
        inputs.show_note(note)
