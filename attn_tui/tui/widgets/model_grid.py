"""The layer × head grid of a real model: every head's weights and statistics at once."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import ScrollableContainer
from textual.widgets import Static

from attn_tui.i18n import N_, _
from attn_tui.present.kv_sharing import sharing_of
from attn_tui.present.layer_windows import window_labels, window_note
from attn_tui.present.model_view import ModelSummary, sink_note
from attn_tui.present.text import printable
from attn_tui.render.kv_sharing import sharing_block
from attn_tui.render.model_grid import grid_width, model_grid_table

KEY = N_("each head: its weights (queries ↓, keys →, two rows a line); under it H: mean entropy (nats), ^: each "
         "row's largest weight, averaged over the rows with more than one key, ⇤: share on the first token")


class ModelGrid(ScrollableContainer, inherit_bindings=False):
    """Scrolls both ways (a long sentence makes wide heads); the arrows keep their app-wide meaning."""

    DEFAULT_CSS = """
    ModelGrid { height: 1fr; overflow: auto auto; scrollbar-size: 1 1; }
    ModelGrid #model-grid-body { width: auto; }
    """

    BINDINGS = [
        Binding("pageup", "page_up", "Page up", show=False, id="model_grid.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="model_grid.page_down"),
    ]

    current: tuple[int, int] = (0, 0)  # (layer, head) highlighted, for tests
    needed = 0  # cells the heads need across: the body is never narrower

    def compose(self) -> ComposeResult:
        yield Static("", id="model-grid-body")

    def on_resize(self) -> None:
        """Shown while hidden (no width yet), or the terminal resized: the body takes the width there is, so a
        small model's notes are not wrapped to its few heads' width."""
        if self.needed:
            self.query_one("#model-grid-body", Static).styles.width = max(self.size.width - 1, self.needed)

    def show(self, summary: ModelSummary, layer: int, head: int) -> None:
        """(layer, head) is the head the stages show; it is highlighted."""
        self.current = (layer, head)
        # the grid is as wide as the widest layer; a narrower layer (a Qwen3-Next full layer) has no cell past its own
        cell = summary.cell(layer, head) if head < summary.heads else None
        title = Text.assemble((_("{name}: {layers} layers × {heads} heads").format(
            name=printable(summary.name), layers=summary.layers, heads=summary.heads), "bold"),
            ("   " + _("g returns to the stages; [ ] { } pick the head"), "dim"))
        now = Text(_("layer {layer} head {head}: mean entropy {entropy} nats · largest weight {largest} · share on "
                     "{token} {share}").format(layer=layer, head=head, entropy=f"{cell.entropy:.3f}",
                                              largest=f"{cell.max_weight:.3f}", token=repr(summary.tokens[0]),
                                              share=f"{cell.first_share:.3f}"), style="magenta") if cell else \
            Text(_("layer {layer} has no head {head}: it has fewer heads than the grid").format(
                layer=layer, head=head), style="magenta")
        notes = window_labels(summary.windows)  # w3 under each sliding layer's label
        table = model_grid_table(summary.cells, summary.layers, summary.heads, (layer, head), notes)
        body = self.query_one("#model-grid-body", Static)
        # As wide as the heads need, never squeezed to the screen: the container scrolls instead.
        self.needed = grid_width(summary.cells, summary.heads, notes)
        body.styles.width = max(self.size.width - 1, self.needed)
        windows = window_note(summary.windows)  # which layers are local, and their window
        # grouped-query models: which key/value head each head reads (not drawn on a Qwen3-Next linear layer's value
        # head past the attention heads, which the map does not describe)
        sharing = sharing_of(summary.kv_map, head) if head < len(summary.kv_map) or not summary.kv_map else None
        offload = [Text(summary.offload, style="yellow")] if summary.offload else []  # layers read from disk
        body.update(Group(title, *offload, Text(_(KEY), style="dim"), now, Text(sink_note(summary), style="magenta"),
                          *([Text(windows, style="cyan")] if windows else []),
                          *([] if sharing is None else [sharing_block(sharing)]), table))
