"""The app's navigation keys: stages, play, cursor, heads, layers, panels, focus and help.

A controller of AttnApp: each action forwards to the explorer (where the user is) and says
so when a key does not apply, instead of doing nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.i18n import N_, _
from attn_tui.present.stage_view import one_head_note
from attn_tui.tui.bindings import APP_BINDINGS
from attn_tui.tui.host import Controller, Host
from attn_tui.tui.screens.help import HelpScreen

if TYPE_CHECKING:
    from textual.timer import Timer


ONE_LAYER = N_("only a real transformer has layers: pick minilm in the model pane")  # what { } say elsewhere


class Navigation(Controller):
    """Stage stepping, playing, the cursor, heads and layers, the panels, focus keys and help."""

    def __init__(self, host: Host) -> None:
        super().__init__(host)
        self.player: Timer | None = None  # stepping through the stages while playing

    def action_next_stage(self) -> None:
        self.explorer.go_to_place(self.explorer.stage_index + 1)

    def action_prev_stage(self) -> None:
        self.explorer.go_to_place(self.explorer.stage_index - 1)

    def action_first_stage(self) -> None:
        self.explorer.go_to_place(0)

    def action_last_stage(self) -> None:
        self.explorer.go_to_place(len(self.explorer.places) - 1)

    def to_stage(self, index: int) -> None:
        """A digit: the stage bar's `index`th stage (the digit is also a count for `n`: writing.py)."""
        if index < len(self.explorer.stage_names()):
            self.explorer.go_to_stage(index)

    def action_play(self) -> None:
        """Start or stop stepping through the stages (and decoder steps) at a steady pace."""
        if self.player is not None:
            self._stop_playing()
            return
        explorer = self.explorer
        if explorer.stage_index >= len(explorer.places) - 1:
            explorer.go_to_place(0)
        self.player = self.host.set_interval(self.host.play_interval, self._advance)
        self.host.notify(_("playing: space stops"), timeout=2)

    @property
    def playing(self) -> bool:
        return self.player is not None

    def _advance(self) -> None:
        explorer = self.explorer
        if explorer.stage_index >= len(explorer.places) - 1:
            self._stop_playing()
        else:
            explorer.go_to_place(explorer.stage_index + 1)

    def _stop_playing(self) -> None:
        if self.player is not None:
            self.player.stop()
            self.player = None

    def action_cursor(self, d_row: int, d_col: int) -> None:
        """The cursor keys where the heatmap does not have focus (an input, the heads grid): its cursor moves."""
        self.explorer.heatmap.action_cursor(d_row, d_col)

    def action_query(self, step: int) -> None:
        self.explorer.change_query(step)

    def action_next_head(self) -> None:
        self._moved(self.explorer.change_head(1), one_head_note())

    def action_prev_head(self) -> None:
        self._moved(self.explorer.change_head(-1), one_head_note())

    def action_next_layer(self) -> None:
        self._moved(self.explorer.change_layer(1), _(ONE_LAYER))

    def action_prev_layer(self) -> None:
        self._moved(self.explorer.change_layer(-1), _(ONE_LAYER))

    def _moved(self, moved: bool, why_not: str) -> None:
        """A head or layer key: the pane says where the user is now, or the notice why the key does nothing."""
        if moved:
            self.host.show_pane_view()
        else:
            self.host.notify(why_not, timeout=4)

    def action_toggle_grid(self) -> None:
        explorer = self.explorer
        whole = ("heads", "model_grid", "alignment")
        explorer.toggle_panel(explorer.panel if explorer.panel in whole else explorer.grid_panel())

    def action_toggle_scale(self) -> None:
        self.explorer.toggle_scale()
        if self.explorer.panel not in ("heads", "compare"):
            self.host.notify(_("s sets the colour scale of the heads panel (g) and of compare (c): it applies there"),
                        timeout=3)

    def action_toggle_rollout(self) -> None:
        """r: the attention rollout, r again the value-weighted rollout (where the run traced `moved`), r again
        the stages."""
        if self.host.shown is None or self.host.shown.stats is None:
            self.host.notify(_("attention rollout needs a real transformer: pick minilm in the model pane"), timeout=3)
            return
        explorer = self.explorer
        if explorer.panel != "rollout":
            explorer.value_weighted = False
            explorer.toggle_panel("rollout")
        elif not explorer.value_weighted and self.host.shown.stats.rollout_moved is not None:
            explorer.value_weighted = True  # r again: the value-weighted rollout, then r returns to the stages
            explorer.render_place()
        else:
            explorer.value_weighted = False
            explorer.toggle_panel("rollout")

    def action_toggle_params(self) -> None:
        self.explorer.toggle_panel("params")

    def action_focus_heatmap(self) -> None:
        self.explorer.heatmap.focus()

    def action_jump(self, selector: str) -> None:
        """Jump to the sentence, an editor or the model pane (and to its tab)."""
        from textual.widgets import TabbedContent

        tabs = self.host.query_one("#input-tabs")
        assert isinstance(tabs, TabbedContent)
        if selector == "#sentence":
            tabs.active = "tab-sentence"
        elif selector.startswith("#edit-"):
            tabs.active = "tab-matrices"
        widget = self.host.query_one(selector)
        if widget.disabled or not widget.display or (widget.parent is not None and not widget.parent.display):
            self.host.notify(_("that field is not in use now"), timeout=3)
            return
        widget.focus()
        # A tab just switched is laid out on the next refresh: only then can its editor be scrolled into a short pane.
        self.host.call_after_refresh(widget.scroll_visible, animate=False)

    def action_pick_stage(self) -> None:
        """Every place of the trace in a fuzzy list: the digits reach only the bar's first ten."""
        from attn_tui.tui.stage_picker import stage_commands

        commands = stage_commands(self.explorer)
        if not commands:
            self.host.notify(_("no trace yet: the stages appear once it is computed"), timeout=3)
            return
        self.host.search_commands(commands, placeholder=_("Go to stage… (type a name, step or tile)"))

    def action_help(self) -> None:
        self.host.push_screen(HelpScreen(list(APP_BINDINGS)))
