"""Every key of the app in one list, so the footer, help screen, palette and tests agree.

Descriptions are English msgids (marked with N_); the footer, the help screen and the
palette translate them when they draw.
"""

from __future__ import annotations

from textual.binding import Binding

from attn_tui.i18n import N_

_JUMPS = (N_("Jump to stage 1"), N_("Jump to stage 2"), N_("Jump to stage 3"), N_("Jump to stage 4"),
          N_("Jump to stage 5"), N_("Jump to stage 6"), N_("Jump to stage 7"), N_("Jump to stage 8"),
          N_("Jump to stage 9"), N_("Jump to stage 10"))
_DIGITS = [Binding(str(n % 10), f"stage({n - 1})", _JUMPS[n - 1], show=False, id=f"stage.jump{n}")
           for n in range(1, 11)]

# The cell cursor's keys: the heatmap's own, and the app's by the same ids for when focus is elsewhere (an input,
# the heads grid), so one keymap entry moves the cursor from anywhere.
CURSOR_BINDINGS: list[Binding] = [
    Binding("up", "cursor(-1, 0)", N_("Cursor up"), show=False, id="cursor.up"),
    Binding("down", "cursor(1, 0)", N_("Cursor down"), show=False, id="cursor.down"),
    Binding("shift+up", "cursor(-1, 0)", N_("Cursor up"), show=False, id="cursor.shift_up"),
    Binding("shift+down", "cursor(1, 0)", N_("Cursor down"), show=False, id="cursor.shift_down"),
    Binding("shift+left", "cursor(0, -1)", N_("Cursor left"), show=False, id="cursor.shift_left"),
    Binding("shift+right", "cursor(0, 1)", N_("Cursor right"), show=False, id="cursor.shift_right"),
]

APP_BINDINGS: list[Binding] = [
    Binding("right,l", "next_stage", N_("Next stage"), id="stage.next"),
    Binding("left,h", "prev_stage", N_("Prev stage"), id="stage.prev"),
    Binding("home", "first_stage", N_("First stage"), show=False, id="stage.first"),
    Binding("end", "last_stage", N_("Last stage"), show=False, id="stage.last"),
    Binding("space", "play", N_("Play"), id="stage.play"),
    *_DIGITS,
    Binding("slash", "pick_stage", N_("Stage picker: every stage, step and tile"), show=False, id="stage.pick"),
    Binding("right_square_bracket", "next_head", N_("Next head"), show=False, id="head.next"),
    Binding("left_square_bracket", "prev_head", N_("Prev head"), show=False, id="head.prev"),
    Binding("right_curly_bracket", "next_layer", N_("Next layer (real model)"), show=False, id="layer.next"),
    Binding("left_curly_bracket", "prev_layer", N_("Prev layer (real model)"), show=False, id="layer.prev"),
    Binding("g", "toggle_grid", N_("Grid"), tooltip=N_("heads; a model's layers × heads; a decode's alignment"),
            id="view.grid"),
    Binding("s", "toggle_scale", N_("Colour scale: one for all heads and for A and B, or one each"), show=False,
            id="view.scale"),
    Binding("c", "compare", N_("Compare"), tooltip=N_("the same stage with one setting changed, and B − A"),
            id="view.compare"),
    Binding("a", "atlas", N_("Head atlas"), tooltip=N_("every head by its role: previous-token, induction, sink…"),
            show=False, id="view.atlas"),
    Binding("r", "toggle_rollout", N_("Attention rollout, r again value-weighted (real model)"), show=False,
            id="view.rollout"),
    Binding("p", "toggle_params", N_("Learned parameters"), show=False, id="view.params"),
    Binding("x", "toggle_mask", N_("Mask or unmask the cell (masked stage)"), show=False, id="mask.toggle"),
    Binding("e", "export", N_("Export"), tooltip=N_("the stage or the trace as .npz, .csv or .json; the screen as SVG"),
            id="app.export"),
    Binding("ctrl+z,u", "undo", N_("Undo the last sample, mask cell or restore"), show=False, id="app.undo"),
    Binding("t", "toggle_language", "한/En", id="view.language"),
    Binding("n", "write", N_("Write the next token (a causal model; 5n writes five, 12n twelve)"), show=False,
            id="generate.next"),
    Binding("N", "write_on", N_("Keep writing until the model ends its text (b stops)"), show=False,
            id="generate.hold"),
    Binding("b", "stop_writing", N_("Stop writing: keep the tokens written"), show=False, id="generate.stop"),
    Binding("i", "jump('#sentence')", N_("Type a sentence"), show=False, id="focus.sentence"),
    Binding("Q", "jump('#edit-Q')", N_("Type Q"), show=False, id="focus.q"),
    Binding("K", "jump('#edit-K')", N_("Type K"), show=False, id="focus.k"),
    Binding("V", "jump('#edit-V')", N_("Type V"), show=False, id="focus.v"),
    Binding("X", "jump('#edit-X')", N_("Type X (token vectors)"), show=False, id="focus.x"),
    Binding("m", "jump('#set-variant')", N_("Model pane: the variant"), show=False, id="focus.model"),
    *CURSOR_BINDINGS,
    Binding("comma", "query(-1)", N_("Previous query (energy)"), show=False, id="energy.prev_query"),
    Binding("full_stop", "query(1)", N_("Next query (energy)"), show=False, id="energy.next_query"),
    Binding("escape", "focus_heatmap", N_("Back to the heatmap"), show=False, id="focus.heatmap"),
    Binding("question_mark,f1", "help", N_("Help"), id="app.help"),
    Binding("q", "quit", N_("Quit"), id="app.quit_q"),  # an input takes q as a letter: ctrl+q quits from there
    Binding("ctrl+q", "quit", N_("Quit"), show=False, id="app.quit"),
]

TEXTUAL_WORDS = (N_("palette"),)  # Textual's own footer word for the command palette, translated with ours
