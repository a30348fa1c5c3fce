"""What the person changes: settings, the input, samples, models, mask cells; undo; the saved session.

A controller of AttnApp over its `state` (tui/state.py), which holds the asks, undo and the
session's content; this module turns the panes' edits into its transitions and shows what
they say. Nothing typed is ever lost: loading a sample or editing a mask cell
pushes what was there onto an undo stack (ctrl+z), and the whole of it (editor texts
included, valid or not) is saved for the next start.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.ask.applies import applicable
from attn_tui.ask.models import DATE_MODELS
from attn_tui.ask.samples import load_samples, sentence_for
from attn_tui.ask.settings import MatrixInput, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.ask.variants import VARIANTS
from attn_tui.i18n import Msg, _
from attn_tui.tui.host import Controller, Host
from attn_tui.tui.messages import (
    InputTyped,
    ModelChosen,
    SampleChosen,
    SettingsEdited,
    SettingsRejected,
    SourceEdited,
    SourceRejected,
    TargetEdited,
    TraceReady,
)
from attn_tui.tui.state import OWN, Snapshot, session_ask

if TYPE_CHECKING:
    from textual.timer import Timer

    from attn_tui.ask.settings import Ask
    from attn_tui.io.session import Session

MAX_CUSTOM_CELLS = 512 * 512  # a mask edited cell by cell is held as a list of lists: keep it small


def _shapes(source: SentenceInput | MatrixInput | XInput) -> tuple[str, int, int]:
    """What makes typed matrices a new exercise rather than an edit: their kind and the number of queries and keys."""
    return (source.kind, *source.shape)


class Editing(Controller):
    """Settings, sources, samples, models, targets, mask cells, undo and the session."""

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self.pending_session: Session | None = None  # taken, not written yet
        self.save_timer: Timer | None = None

    # ----- putting an ask into the panes -----------------------------------------------------
    def show_ask(self, ask: Ask, matrices: bool = True) -> None:
        """Put an ask into the panes without posting edits back; the matrix editors only when `matrices`."""
        inputs, pane = self.host.input_pane, self.host.model_pane
        if not ask.from_panes:  # the user's code has no pane of its own: the variants' stay as they were
            ask = self.host.variants
        model, request = ask.model, ask.request
        inputs.model_mode = model is not None
        pane.show_model(model)
        if model is not None:
            inputs.show_sentence(model.text)
        elif request is not None and matrices:
            inputs.load(request.source)
        elif request is not None:
            sentence = request.source.sentence
            inputs.show_sentence(sentence if sentence is not None else inputs.sentence)
        self.show_applicable()

    def show_applicable(self) -> None:
        """Grey out the settings that do nothing here, and tell the editors what fits together."""
        request = self.host.variants
        variant = VARIANTS[request.settings.variant]
        inputs = self.host.input_pane
        inputs.multihead, inputs.same_width = variant.takes_x, variant.same_width
        inputs.refresh_status()
        self.host.model_pane.show_applicable(applicable(request))
        self.host.model_pane.show_custom_mask(request)

    def reject(self, error: str | Msg, prefix: str = "✗ ") -> None:
        """An edit that cannot be asked for: what is in flight is dropped, and the error line says why."""
        self.explorer.heatmap.loading = False
        self.host.show_error(self.host.state.rejected(error, prefix), "")
        self.host.back_to_shown()

    # ----- edits from the panes ------------------------------------------------------------
    def on_settings_edited(self, message: SettingsEdited) -> None:
        self.apply_settings(message.settings)

    def on_settings_rejected(self, message: SettingsRejected) -> None:
        if message.error:
            self.reject(message.error)
        elif self.host.state.clear_rejection():
            self.explorer.show_error(self.host.state.error)

    def apply_settings(self, settings: Settings) -> None:
        source = self.host.variants.source
        request = VariantAsk(source, settings, self.host.variants.custom_mask, self.host.variants.mask_by_hand)
        if VARIANTS[settings.variant].takes_x and source.typed:
            self.host.state.keep_variants(request)
            self.host.state.drop_in_flight()  # whatever is in flight is no longer wanted
            self.show_applicable()
            self.host.show_error(["✗ ", Msg("{variant} projects Q, K and V itself: type token vectors in the X editor "
                                            "(Matrices tab) or a sentence", variant=settings.variant),
                                  Msg("  (showing the last valid result)")], "")
            return
        self.host.ask(request)

    def on_source_rejected(self, message: SourceRejected) -> None:
        """An editor holds an error: what is in flight (perhaps a half-typed matrix) is dropped, the last valid
        result stays, and the error line says so (a model reads the sentence: the matrix editors feed nothing).
        With no error, the sentence came back in front: the editors' error leaves the line."""
        if message.error is None:
            if self.host.state.set_aside_source_error():
                self.explorer.show_error(self.host.state.error)
            return
        if self.host.state.source_rejected(message.error):
            self.explorer.heatmap.loading = False
            self.explorer.show_error(self.host.state.error)
            self.host.back_to_shown()

    def on_input_typed(self, message: InputTyped) -> None:
        self.save_soon()

    def on_source_edited(self, message: SourceEdited) -> None:
        model = self.host.state.wanted.model
        if model is not None:
            sentence = message.source.sentence
            if sentence is None:
                self.host.show_error(["✗ ", Msg("{model} reads a sentence: type it in the Sentence tab (or pick "
                                                "'variants' in the model pane for typed matrices)", model=model.name)],
                                     "")
                return
            self.host.ask(replace(model, text=sentence, probe=""))  # a sentence typed is read in the probe's place
            return
        settings = self._fresh_settings(message.source)
        mask = self._kept_mask(message.source)
        if mask is None and settings.mask_means != "attend":  # the custom mask went, and its "1 means" with it
            settings = replace(settings, mask_means="attend")
            self.host.model_pane.show(settings)
        self.host.ask(VariantAsk(message.source, settings, mask, mask is not None and self.host.variants.mask_by_hand))

    def _fresh_settings(self, source: SentenceInput | MatrixInput | XInput) -> Settings:
        """Typed matrices of new shapes start a new exercise: its mask starts at none unless the user keeps it.

        A causal or padding mask chosen for the last exercise silently changes the next
        one's numbers (causal over one query and four keys keeps only key 0), so the
        mask and its padded keys go back to their defaults; the notice names what went,
        ctrl+z brings it back, and the 'keep the mask' checkbox keeps it for good.
        """
        settings = self.host.variants.settings
        fresh = replace(settings, mask="none", pad_keys=0)
        if (source.sentence is not None or settings.mask == "none" or self.host.input_pane.keep_mask
                or _shapes(source) == _shapes(self.host.variants.source)):
            return settings
        kept = VariantAsk(source, settings)  # the new matrices with the old mask: what ctrl+z asks for
        self.host.state.keep_for_undo(Snapshot(kept, self.host.input_pane.typed(), kept))
        self.host.model_pane.show(fresh)
        self.host.notify(str(Msg("new matrices start with mask none (was {mask}); ctrl+z keeps {mask}, and ticking "
                                 "'keep the mask' (Matrices tab) keeps it from now on", mask=settings.mask)),
                         title=_("a new exercise starts clean"), timeout=8)
        return fresh

    def _kept_mask(self, source: SentenceInput | MatrixInput | XInput) -> list[list[float]] | None:
        """The custom mask still fits the new input (same queries and keys): keep it; otherwise say it went."""
        mask = self.host.variants.custom_mask
        if mask is None:
            return None
        n, m = source.shape
        if (len(mask), len(mask[0]) if mask else 0) in ((n, m), (1, m)):  # 1×S: one entry per key, for every query
            return mask
        self.host.notify(_("the cells you masked by hand were cleared: the input has other tokens now "
                           "(ctrl+z brings them back)"), timeout=6)
        return None

    # ----- samples and undo ------------------------------------------------------------------
    def on_sample_chosen(self, message: SampleChosen) -> None:
        self.load_sample(message.name)

    def load_sample(self, name: str) -> None:
        """Load a sample whole (input, variant, mask, every setting); what was typed can be had back with ctrl+z."""
        sample = load_samples()[name]
        self.host.state.push_undo()
        self.host.state.kept[OWN] = sample.request
        self.host.model_pane.show(sample.request.settings)
        ask: Ask = sample.model or sample.request
        self.explorer.forget_place()
        self.host.state.first_stage = sample.stage
        self.host.state.lesson = (ask, sample.notes) if sample.notes else None
        self.show_ask(ask)
        if sample.model is not None:
            self.host.input_pane.load(sample.request.source)
            self.host.input_pane.show_sentence(sample.model.text)
        about = _(sample.notes or sample.description)
        self.host.notify(str(Msg("{about}  (ctrl+z brings back what you had)", about=about)),
                         title=_("sample {name}").format(name=name), timeout=6)
        self.host.ask(ask)

    def action_undo(self) -> None:
        snapshot = self.host.state.undo()
        if snapshot is None:
            self.host.notify(_("nothing to undo"), timeout=3)
            return
        self.host.model_pane.show(snapshot.variants.settings)
        self.show_ask(snapshot.wanted, matrices=False)
        self.host.input_pane.restore(snapshot.typed)
        self.host.notify(_("restored what you had before"), timeout=3)
        if snapshot.recorded is not None:  # the recorded trace: shown again as it is, never recomputed
            self.host.post_message(TraceReady(self.host.state.show_recorded(snapshot.recorded), snapshot.recorded))
            return
        self.host.ask(snapshot.wanted)

    def set_setting(self, name: str, value: object) -> None:
        """One setting changed from outside the model pane (the palette): the pane shows it, the variants run it."""
        settings = self.host.variants.settings.replace(**{name: value})
        if self.host.state.wanted.model is not None:
            self.choose_model(None)
        self.host.model_pane.show(settings)
        self.apply_settings(settings)

    # ----- masks edited cell by cell -------------------------------------------------------
    async def action_toggle_mask(self) -> None:
        """x on the masked stage: mask the cell under the cursor, or unmask one masked by hand."""
        await self.explorer.drawn()  # x right after a move acts on the stage moved to
        trace, view = self.host.trace, self.host.view
        if trace is None or view is None:
            return
        if self.host.state.wanted.model is not None:
            self.host.notify(_("a model's mask is its own; mask cells of the attention variants"), timeout=4)
            return
        if view.name != "masked" or view.index_prefix:
            self.host.notify(_("x masks a cell of the masked stage: step there first"), timeout=4)
            return
        rows, cols = len(trace.query_tokens), len(trace.key_tokens)
        if rows * cols > MAX_CUSTOM_CELLS:
            self.host.notify(_("masking by hand stops at 512 × 512 cells; give a --mask-file instead"), timeout=5)
            return
        request = self.host.variants
        if request.custom_mask is None and request.settings.mask_means != "attend":
            # a new hand mask is written as torch reads one (1 = may attend): nothing was typed the other way round
            request = replace(request, settings=replace(request.settings, mask_means="attend"))
            self.host.model_pane.show(request.settings)
        i, j = self.explorer.cursor
        block = request.settings.mask_means == "block"  # a given mask is kept as typed: 1 = blocked, or 1 = may attend
        on, off = (0.0, 1.0) if block else (1.0, 0.0)  # (may attend, blocked) as the typed convention writes them
        custom = request.custom_mask
        shape = (len(custom), len(custom[0]) if custom else 0) if custom is not None else None
        if custom is not None and shape == (1, cols):  # one row per key: each query gets its own copy to edit
            custom = [list(custom[0]) for _r in range(rows)]
        fits = custom is not None and (len(custom), len(custom[0]) if custom else 0) == (rows, cols)
        mask = [list(row) for row in custom] if fits and custom is not None else [[on] * cols for _r in range(rows)]
        spec = trace.mask_of(trace.stages[view.place])
        kind = [] if spec is None else [r for r in spec.reasons(i, j) if not str(r.text).startswith("custom")]
        if mask[i][j] == off:
            mask[i][j] = on
            said = Msg("cell {i},{j} unmasked by hand", i=i, j=j) if not kind else Msg(
                "cell {i},{j} no longer masked by hand, but still masked: {reason}", i=i, j=j, reason=kind[0])
        elif kind:
            self.host.notify(str(Msg("cell {i},{j} is masked by the mask kind ({reason}): change the mask in the model "
                                     "pane", i=i, j=j, reason=kind[0])), timeout=6)
            return
        else:
            mask[i][j] = off
            said = Msg("cell {i},{j} masked by hand (a custom mask; x again unmasks it, ctrl+z undoes)", i=i, j=j)
        self.host.state.push_undo()
        self.host.notify(str(said) + ("  " + _("(the mask is kept as typed: 1 = blocked)") if block else ""), timeout=4)
        cleared = all(v == on for row in mask for v in row)
        self.host.ask(replace(request, custom_mask=None if cleared else mask, mask_by_hand=not cleared))

    # ----- models ------------------------------------------------------------------------
    def on_model_chosen(self, message: ModelChosen) -> None:
        self.choose_model(message.name)

    def choose_model(self, name: str | None) -> None:
        """Switch to a model by name or path (None: back to the variants).

        Each source keeps its own ask, and switching back restores it; a date model
        starts on a date, a transformer on the sentence typed for the variants. The
        matrix editors are never touched.
        """
        first_text = sentence_for(name) if name in DATE_MODELS else None
        ask = self.host.state.switch_source(name, self.host.input_pane.sentence, first_text)
        self.show_ask(ask, matrices=False)
        self.host.ask(ask)

    def on_target_edited(self, message: TargetEdited) -> None:
        model = self.host.state.wanted.model
        if model is not None and model.name in DATE_MODELS:
            self.host.ask(replace(model, target=message.target, teacher_forcing=message.teacher_forcing))

    # ----- the session kept between runs ---------------------------------------------------
    def session(self) -> Session:
        view = self.host.view
        return self.host.state.session(self.host.language, None if view is None else view.name)

    def save_soon(self) -> None:
        """Take the session now and write it a moment later (a burst of typing writes once; quitting writes
        what is pending, since the panes are gone by then)."""
        self.pending_session = self.session()
        if self.save_timer is not None:
            self.save_timer.stop()
        self.save_timer = self.host.set_timer(0.5, self.save_session)

    def save_session(self) -> None:
        from attn_tui.io.session import save

        session, self.pending_session = self.pending_session, None
        if session is None:
            return
        try:
            save(session)
        except Exception as exc:  # a full disk or a read-only home must not stop the app
            self.host.notify(str(Msg("the session could not be saved: {reason}", reason=exc)), severity="warning",
                             timeout=6)

    def save_now(self) -> None:
        """Write the session from the panes as they are this moment (a signal is ending the app)."""
        with contextlib.suppress(Exception):  # the panes are already gone: what save_soon took is the latest
            self.pending_session = self.session()
        self.save_session()

    def restore_session(self) -> None:
        """Put back the saved session; an input named on the command line wins, and the saved one is a ctrl+z away."""
        from attn_tui.io.session import SessionError, load
        from attn_tui.tui.state import session_typed

        try:
            session = load()
        except SessionError as exc:
            self.host.notify(str(Msg("the saved session could not be read ({reason}); starting fresh",
                                     reason=str(exc))), severity="warning", timeout=8)
            return
        if session is None:
            return
        inputs = self.host.input_pane
        inputs.restore(session_typed(session))

        def matrices(kind: str) -> MatrixInput | XInput | None:
            inputs.last_matrix = kind
            return inputs.matrix_source()

        if self.host.state.restore(session, session_ask(session, matrices)):
            self.host.model_pane.show(session.settings)
        self.host.language = session.language  # last: its relabelling saves what is restored by now, not the default
