"""A real model at a glance for the terminal: per-head statistics and the rollout matrix.

Draws the app's own model summary (`attn_tui.present.model_view.ModelSummary`), so the
rollout is coloured as the app colours it (a probability: its rows sum to 1).
"""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.model_view import ModelSummary
from attn_tui.present.printed import printed_rollout
from attn_tui.present.text import printable
from attn_tui.render.colors import Scale
from attn_tui.render.stage_table import stage_renderable


def stats_table(summary: ModelSummary, field: str, title: str) -> Table:
    """Layers down, heads across, one statistic of `HeadCell` (`field`) coloured on its own scale."""
    values = [[None if (cell := summary.cell(layer, h)) is None else float(getattr(cell, field))
               for h in range(summary.heads)] for layer in range(summary.layers)]  # None: a head the layer lacks
    flat = [v for row in values for v in row if v is not None]
    scale = Scale.fit(min(flat), max(flat))
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 0), title_justify="left")
    table.add_column(_("layer"), justify="right")
    for h in range(summary.heads):
        table.add_column(f"h{h}", justify="right", width=5)
    for layer, row in enumerate(values):
        table.add_row(str(layer), *(Text("") if v is None else Text(f"{v:.2f}", style=scale.style(v)) for v in row))
    return table


def print_model_summary(summary: ModelSummary, console: Console | None = None) -> None:
    console = console or Console()
    console.print(Text.assemble(("attn-tui ", "bold"), (printable(summary.name), "bold magenta"),
                                "  " + _("{layers} layers × {heads} heads  {n} tokens").format(
                                    layers=summary.layers, heads=summary.heads, n=len(summary.tokens))))
    if summary.offload:
        console.print(Text(summary.offload, style="yellow"))
    console.print(stats_table(summary, "entropy", _("mean entropy (nats): low = focused")))
    console.print(stats_table(summary, "max_weight",
                              _("largest weight of each row, averaged over rows with more than one key")))
    console.print(stats_table(summary, "first_share", _("share of attention on the first token")))
    console.print()
    console.print(stage_renderable(printed_rollout(summary), min(console.width, 120)))

