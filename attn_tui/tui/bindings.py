"""Every key of the app in one list, so the footer, help screen, palette and tests agree."""

from __future__ import annotations

from textual.binding import Binding

_DIGITS = [Binding(str(n % 10), f"stage({n - 1})", f"Jump to stage {n}", show=False, id=f"stage.jump{n}")
           for n in range(1, 11)]

APP_BINDINGS: list[Binding] = [
    Binding("right,l", "next_stage", "Next stage", id="stage.next"),
    Binding("left,h", "prev_stage", "Prev stage", id="stage.prev"),
    Binding("home", "first_stage", "First stage", show=False, id="stage.first"),
    Binding("end", "last_stage", "Last stage", show=False, id="stage.last"),
    Binding("space", "play", "Play", id="stage.play"),
    *_DIGITS,
    Binding("right_square_bracket", "next_head", "Next head", show=False, id="head.next"),
    Binding("left_square_bracket", "prev_head", "Prev head", show=False, id="head.prev"),
    Binding("right_curly_bracket", "next_layer", "Next layer (real model)", show=False, id="layer.next"),
    Binding("left_curly_bracket", "prev_layer", "Prev layer (real model)", show=False, id="layer.prev"),
    Binding("g", "toggle_grid", "Grid", tooltip="heads; a model's layers × heads; a decode's alignment",
            id="view.grid"),
    Binding("r", "toggle_rollout", "Attention rollout (real model)", show=False, id="view.rollout"),
    Binding("p", "toggle_params", "Learned parameters", show=False, id="view.params"),
    Binding("t", "toggle_language", "한/En", id="view.language"),
    Binding("up", "cursor(-1, 0)", "Cursor up", show=False, id="cursor.up"),
    Binding("down", "cursor(1, 0)", "Cursor down", show=False, id="cursor.down"),
    Binding("shift+up", "cursor(-1, 0)", "Cursor up", show=False, id="cursor.shift_up"),
    Binding("shift+down", "cursor(1, 0)", "Cursor down", show=False, id="cursor.shift_down"),
    Binding("shift+left", "cursor(0, -1)", "Cursor left", show=False, id="cursor.shift_left"),
    Binding("shift+right", "cursor(0, 1)", "Cursor right", show=False, id="cursor.shift_right"),
    Binding("comma", "query(-1)", "Previous query (energy)", show=False, id="energy.prev_query"),
    Binding("full_stop", "query(1)", "Next query (energy)", show=False, id="energy.next_query"),
    Binding("escape", "focus_heatmap", "Back to the heatmap", show=False, id="focus.heatmap"),
    Binding("question_mark,f1", "help", "Help", id="app.help"),
    Binding("ctrl+q", "quit", "Quit", show=False, id="app.quit"),
]
