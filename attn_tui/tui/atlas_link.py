"""`a`: the head atlas of what is on show; Enter there jumps to a head's weights; `c` there picks B.

A controller of AttnApp. The atlas screen keeps its place in `AppState.atlas`; B's atlas reads the
computation compare mode makes (comparing.py), so the main view's compare and the atlas's agree.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.ask.models import DATE_MODELS
from attn_tui.i18n import _
from attn_tui.tui.host import Controller, Host

if TYPE_CHECKING:
    from attn_tui.ask.settings import ModelAsk
    from attn_tui.present.compare import Comparison
    from attn_tui.trace.shown import Shown
    from attn_tui.tui.comparing import Comparing
    from attn_tui.tui.screens.atlas import AtlasScreen


class AtlasLink(Controller):
    """Opening the atlas, the jump it ends with, and B for its compare (compare mode's computation)."""

    def __init__(self, host: Host, comparing: Comparing) -> None:
        super().__init__(host)
        self.comparing = comparing

    def action_atlas(self) -> None:
        """a: every head of the run on show by its role (layers × heads), starting at the head on show."""
        from attn_tui.tui.screens.atlas import AtlasScreen

        shown = self.host.shown
        if shown is None:
            self.host.notify(_("no trace yet: the atlas appears once it is computed"), timeout=3)
            return
        explorer = self.explorer
        self.host.push_screen(AtlasScreen(shown, self.host.state.atlas, (explorer.layer_index, explorer.head),
                                          self.b_now()), self.jump_to_head)

    def b_now(self) -> tuple[Shown, str, str] | None:
        """B's computation while compare mode has one (not a head or layer of A's own trace), with the labels."""
        comparison, shown_b = self.host.state.comparison, self.explorer.shown_b
        if comparison is None or comparison.same_trace or shown_b is None:
            return None
        return shown_b, str(comparison.a_label), str(comparison.b_label)

    def jump_to_head(self, head: tuple[int, int] | None) -> None:
        """Enter in the atlas: that layer and head, at its weights stage."""
        if head is None:
            return
        explorer = self.explorer
        explorer.layer_index, explorer.head = head
        if explorer.panel not in ("heatmap", "compare"):
            explorer.switch_panel("heatmap")
        weights = [n for n, place in enumerate(explorer.places) if place.name == "weights"]
        explorer.go_to_place(weights[0] if weights else explorer.stage_index)
        self.host.show_pane_view()

    def on_atlas_screen_compare_asked(self, message: AtlasScreen.CompareAsked) -> None:
        """c in the atlas with no B: pick another model opened or one changed setting; B is computed as compare
        mode computes it, and the atlas is told when it arrives (`atlas_shows_b`)."""
        from attn_tui.tui.screens.choose import ChoiceScreen

        screen = message.screen
        options = [c for c in self.comparing.compare_options() if not c.same_trace]
        if not options:
            self.host.notify(_("nothing to compare this atlas with: open another model (model pane) first, then "
                               "press a and c again"), timeout=6)
            return

        def picked(comparison: Comparison | None) -> None:
            if comparison is not None:
                screen.waiting_for_b()
                self.comparing.start_compare(comparison)

        self.host.push_screen(ChoiceScreen(_("Compare this atlas with B's:"), [(str(c.title), c) for c in options]),
                              picked)

    def on_atlas_screen_probe_asked(self, message: AtlasScreen.ProbeAsked) -> None:
        """p in the atlas: run the model on the induction probe (a seeded random sequence said twice, where
        induction heads show), or back on the sentence; the atlas waits for the run and Enter then opens a
        head's weights on what was run."""
        screen = message.screen
        model = self.host.shown.ask.model if self.host.shown is not None else None
        if model is None or model.name in DATE_MODELS:
            self.host.notify(_("the induction probe is fed to a transformer: open one in the model pane first"),
                             timeout=4)
            return
        screen.waiting_for_a()
        self.host.ask(replace(model, probe="" if model.probe else "induction"))

    def a_arrived(self, shown: Shown) -> None:
        """A new run is on show: an atlas waiting for it (p) reads its heads."""
        from attn_tui.tui.screens.atlas import AtlasScreen

        for screen in self.host.screen_stack:
            if isinstance(screen, AtlasScreen) and screen.shown_a is not shown:
                screen.show_a(shown)


def atlas_shows_b(host: Host, comparison: Comparison, shown_b: Shown | None) -> None:
    """Compare mode's B came back: an open atlas (under a dialog too) draws its atlas beside A's."""
    from attn_tui.tui.screens.atlas import AtlasScreen

    for screen in host.screen_stack:
        if isinstance(screen, AtlasScreen) and shown_b is not None:
            screen.show_b(shown_b, str(comparison.a_label), str(comparison.b_label))


def atlas_drops_b(host: Host) -> None:
    """Compare mode ended: an open atlas (under a dialog too) drops B's."""
    from attn_tui.tui.screens.atlas import AtlasScreen

    for screen in host.screen_stack:
        if isinstance(screen, AtlasScreen):
            screen.drop_b()


def probe_note(model: ModelAsk) -> str:
    """The model pane's status on a probe run: which probe stands in for the sentence (kept for `p`)."""
    if not model.probe:
        return ""
    return " · " + _("on the induction probe: {n} random tokens said twice (seed {seed}); the sentence is kept").format(
        n=model.probe_length, seed=model.probe_seed)
