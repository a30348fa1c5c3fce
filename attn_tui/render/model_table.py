"""A real model at a glance for the terminal: per-head statistics and the rollout matrix."""

from __future__ import annotations

from collections.abc import Sequence

import torch
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from attn_tui.attention.summary import ROLLOUT_FORMULA, HeadStats
from attn_tui.i18n import _
from attn_tui.present.text import printable
from attn_tui.render.colors import Scale
from attn_tui.render.stage_table import stage_renderable
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Axis, Stage
from attn_tui.trace.values import StageStats


def stats_table(stats: Sequence[HeadStats], layers: int, heads: int, field: str, title: str) -> Table:
    """Layers down, heads across, one statistic coloured on its own scale."""
    values = torch.tensor([getattr(s, field) for s in stats]).reshape(layers, heads)
    scale = Scale.fit(float(values.min()), float(values.max()))
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 0), title_justify="left")
    table.add_column(_("layer"), justify="right")
    for h in range(heads):
        table.add_column(f"h{h}", justify="right", width=5)
    for layer in range(layers):
        table.add_row(str(layer), *(Text(f"{values[layer, h]:.2f}", style=scale.style(float(values[layer, h])))
                                    for h in range(heads)))
    return table


def print_model_summary(name: str, tokens: tuple[str, ...], stats: Sequence[HeadStats], rolled: torch.Tensor,
                        layers: int, heads: int, console: Console | None = None) -> None:
    console = console or Console()
    console.print(Text.assemble(("attn-tui ", "bold"), (printable(name), "bold magenta"),
                                "  " + _("{layers} layers × {heads} heads  {n} tokens").format(
                                    layers=layers, heads=heads, n=len(tokens))))
    console.print(stats_table(stats, layers, heads, "entropy", _("mean entropy (nats): low = focused")))
    console.print(stats_table(stats, layers, heads, "max_weight", _("largest weight")))
    console.print(stats_table(stats, layers, heads, "first_token_share", _("share of attention on the first token")))
    axis_q, axis_k = Axis("query", tokens), Axis("key", tokens)
    stage = Stage(Place("rollout"), rolled, ROLLOUT_FORMULA, (axis_q, axis_k))
    console.print()
    rollout_stats = StageStats()
    rollout_stats.add(rolled)
    console.print(stage_renderable(stage, rollout_stats, None, min(console.width, 120)))
