"""Every head's strongest role for the terminal: layers down, heads across, a role's short name and score."""

from __future__ import annotations

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.role_table import RoleTable

ROLE_STYLES = {"previous_token": "bold cyan", "duplicate_token": "bold blue", "induction": "bold magenta",
               "sink": "bold yellow", "local": "green", "broad": "dim"}


def role_renderable(table: RoleTable) -> Table:
    title = _("each head's strongest role and its score")
    if table.probe:
        title += "  " + _("(on the {probe} probe's repeated half)").format(probe=table.probe)
    grid = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), title_justify="left")
    grid.add_column(_("layer"), justify="right")
    for h in range(table.heads):
        grid.add_column(f"h{h}", justify="right")
    for layer in range(table.layers):
        row = [table.cell(layer, h) for h in range(table.heads)]
        grid.add_row(str(layer), *(Text(f"{c.short} {c.score:.2f}", style=ROLE_STYLES[c.role]) for c in row))
    return grid


def print_role_table(table: RoleTable, console: Console | None = None) -> None:
    console = console or Console()
    console.print(role_renderable(table))
    console.print(Text("  ").join(Text(f"{label} ({count})", style=ROLE_STYLES[role])
                                  for role, label, count in table.legend()))
    console.print(Text(_("a head is named by a pattern role (previous token, duplicate token, induction, sink) that "
                         "holds at least half its attention, else local (half within ±2 positions), else broad "
                         "(its breadth: entropy over the most it could be)"), style="dim"))
