"""The app's moving keys: stepping through stages (and decoder steps), playing, the cell cursor.

A mixin of AttnApp, kept apart so app.py holds the computing and showing and this file
holds what the arrows, digits and space do with them.
"""

from __future__ import annotations

from attn_tui.tui.messages import CellClicked
from attn_tui.tui.positions import bar_window
from attn_tui.tui.screens.help import HelpScreen
from attn_tui.tui.widgets.explanation import Explanation
from attn_tui.tui.widgets.heatmap import Heatmap


class Navigation:
    """Needs from the app: places, stage_index, view, trace, cursor, _show_stage, _show_cell."""

    def stage_names(self) -> list[str]:
        """The stage names the bar lists now (for a decode: the current step's, then alignment)."""
        return [self.places[n][0] for n in bar_window(self.places, self.stage_index)]

    def go_to_stage(self, index: int) -> None:
        """Jump to stage `index` of the bar (what the digits and the palette name)."""
        window = bar_window(self.places, self.stage_index)
        if window:
            self.go_to_place(window[max(0, min(index, len(window) - 1))])

    def go_to_place(self, index: int) -> None:
        if self.places:
            self.stage_index = max(0, min(index, len(self.places) - 1))
            self._show_stage()

    def action_next_stage(self) -> None:
        self.go_to_place(self.stage_index + 1)

    def action_prev_stage(self) -> None:
        self.go_to_place(self.stage_index - 1)

    def action_first_stage(self) -> None:
        self.go_to_place(0)

    def action_last_stage(self) -> None:
        self.go_to_place(len(self.places) - 1)

    def action_stage(self, index: int) -> None:
        if index < len(self.stage_names()):
            self.go_to_stage(index)

    def action_play(self) -> None:
        """Start or stop stepping through the stages (and decoder steps) at a steady pace."""
        if self._player is not None:
            self._stop_playing()
            return
        if self.stage_index >= len(self.places) - 1:
            self.go_to_place(0)
        self._player = self.set_interval(self.play_interval, self._advance)
        self.notify("playing: space stops", timeout=2)

    @property
    def playing(self) -> bool:
        return self._player is not None

    def _advance(self) -> None:
        if self.stage_index >= len(self.places) - 1:
            self._stop_playing()
        else:
            self.action_next_stage()

    def _stop_playing(self) -> None:
        if self._player is not None:
            self._player.stop()
            self._player = None

    def action_toggle_language(self) -> None:
        self.language = "ko" if self.language == "en" else "en"
        if self.view is not None and self.trace is not None:
            self._show_explanation()

    def action_cursor(self, d_row: int, d_col: int) -> None:
        if self.view is None:
            return
        grid = self.view.grid
        row = max(0, min(grid.rows - 1, self.cursor[0] + d_row))
        col = max(0, min(grid.cols - 1, self.cursor[1] + d_col))
        self._set_cursor(row, col)

    def _set_cursor(self, row: int, col: int) -> None:
        self.cursor = (row, col)
        self.query_one(Heatmap).move_cursor(self.cursor)
        self._show_cell()

    def on_cell_clicked(self, message: CellClicked) -> None:
        self._set_cursor(message.row, message.col)

    def action_query(self, step: int) -> None:
        """Pick the query whose energy slice is shown (and move the cursor with it elsewhere)."""
        if self.trace is None:
            return
        self.energy_query = max(0, min(len(self.trace.query_tokens) - 1, self.energy_query + step))
        if self.view is not None and self.view.grid.row_axis in ("query", "token"):
            self.cursor = (min(self.energy_query, self.view.grid.rows - 1), self.cursor[1])
        self._show_stage()

    def action_focus_heatmap(self) -> None:
        self.query_one(Heatmap).focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.palette_bindings()))

    def _show_explanation(self) -> None:
        from attn_tui.tui.model_views import explanation_variant

        self.query_one(Explanation).show(self.view.name, explanation_variant(self.trace), self.language)
