"""The head atlas screen: every head of the run on show by its role, a filter, a ranking, and B's atlas beside A's.

The roles of a model come with what is on show (the door computed them in the worker); a variant's are
computed here in a thread worker (`present.atlas.atlas_for`), so the first frame never waits on torch.
Where the user is (cursor, filter, ranking, compare) lives in the app's `AppState.atlas`, so the
atlas opens again as it was left; Enter closes it with the head to show, Escape with None.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.console import Group
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, ScrollableContainer, Vertical
from textual.message import Message
from textual.screen import ModalScreen
from textual.widgets import Static

from attn_tui.i18n import N_, _
from attn_tui.present.atlas import Atlas, AtlasPosition, atlas_for, detail, legend_note, title
from attn_tui.present.text import printable
from attn_tui.render.atlas import atlas_grid, grid_header, legend, ranking_table
from attn_tui.tui.reader import ATLAS

if TYPE_CHECKING:
    from attn_tui.trace.shown import Shown

KEYS = N_("Enter: weights · f/F: filter · o: rank · c: compare · p: probe · Esc: back")


class AtlasSide(Vertical):
    """One atlas (A's or B's): its heading and the grid or ranking, scrolling both ways."""

    DEFAULT_CSS = """
    AtlasSide { width: 1fr; height: 1fr; }
    AtlasSide .atlas-heading { height: 1; text-style: bold; color: $accent; display: none; }
    AtlasSide .atlas-heading.-named { display: block; }
    AtlasSide .atlas-rows { height: 1fr; overflow: auto auto; scrollbar-size: 1 1; }
    AtlasSide .atlas-top { height: 1; overflow: hidden hidden; }
    AtlasSide.-ranked .atlas-top { display: none; }
    AtlasSide .atlas-body, AtlasSide .atlas-columns { width: auto; }
    """

    def __init__(self, side: str) -> None:
        super().__init__(id=f"atlas-{side}")
        self.side = side
        self.atlas: Atlas | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="atlas-heading", id=f"atlas-{self.side}-heading")
        with ScrollableContainer(classes="atlas-top", can_focus=False):
            yield Static("", classes="atlas-columns", id=f"atlas-{self.side}-columns")
        with ScrollableContainer(id=f"atlas-{self.side}-scroll", classes="atlas-rows", can_focus=False):
            yield Static("", classes="atlas-body", id=f"atlas-{self.side}-body")

    def on_mount(self) -> None:
        self.watch(self.query_one(".atlas-rows"), "scroll_x", self._scroll_columns)

    def _scroll_columns(self, x: float) -> None:
        """The heads' names follow the rows sideways (a model with many heads is wider than the screen)."""
        self.query_one(".atlas-top", ScrollableContainer).scroll_to(x=x, animate=False)

    def draw(self, heading: str, atlas: Atlas | None, position: AtlasPosition, waiting: str = "") -> None:
        self.atlas = atlas
        named = self.query_one(".atlas-heading", Static)
        named.update(printable(heading))
        named.set_class(bool(heading), "-named")
        body = self.query_one(".atlas-body", Static)
        if atlas is None:
            body.update(waiting)
            return
        cursor = self.side == "a"  # one cursor: B shows the same head without it
        self.set_class(position.ranked, "-ranked")
        self.query_one(".atlas-columns", Static).update(grid_header(atlas, position, cursor))
        body.update(ranking_table(atlas, position, cursor) if position.ranked else atlas_grid(atlas, position, cursor))
        self.call_after_refresh(self._follow, atlas, position)

    def _follow(self, atlas: Atlas, position: AtlasPosition) -> None:
        """Keep the cursor's row in view (the ranking's header takes two lines)."""
        scroll = self.query_one(".atlas-rows", ScrollableContainer)
        row = position.rank_of(atlas) + 2 if position.ranked else min(position.layer, atlas.layers - 1)
        if row < scroll.scroll_y + 2 or row >= scroll.scroll_y + scroll.size.height:
            scroll.scroll_to(y=max(0, row - scroll.size.height // 2), animate=False)


class AtlasScreen(ModalScreen["tuple[int, int] | None"]):
    """The atlas of A (and, comparing, B beside it); Enter leaves with A's (layer, head) under the cursor.

    Modal, so the app's keys (a head, a layer, a token written) do not act on the stages hidden behind it."""

    DEFAULT_CSS = """
    AtlasScreen { layout: vertical; background: $surface; }
    AtlasScreen #atlas-title { height: auto; text-style: bold; }
    AtlasScreen #atlas-keys { height: auto; color: $text-muted; }
    AtlasScreen #atlas-sides { height: 1fr; }
    AtlasScreen #atlas-b { display: none; margin: 0 0 0 1; }
    AtlasScreen.-comparing #atlas-b { display: block; }
    AtlasScreen #atlas-detail { height: auto; color: $accent; }
    AtlasScreen #atlas-legend { height: auto; }
    """

    BINDINGS = [
        Binding("escape,a", "close", N_("Close the atlas"), id="atlas.close"),
        Binding("enter", "jump", N_("The head's weights on the current input"), id="atlas.jump"),
        Binding("up", "move(-1, 0)", N_("Cursor up"), show=False, id="atlas.up"),
        Binding("down", "move(1, 0)", N_("Cursor down"), show=False, id="atlas.down"),
        Binding("left", "move(0, -1)", N_("Cursor left"), show=False, id="atlas.left"),
        Binding("right", "move(0, 1)", N_("Cursor right"), show=False, id="atlas.right"),
        Binding("f", "filter(1)", N_("Filter by the next role"), id="atlas.filter"),
        Binding("F", "filter(-1)", N_("Filter by the previous role"), show=False, id="atlas.filter_back"),
        Binding("o", "rank", N_("Rank the heads by the role's score, then by what they moved"), id="atlas.rank"),
        Binding("c", "compare", N_("B's atlas beside A's"), id="atlas.compare"),
        Binding("p", "probe", N_("The model on the induction probe, or back on the sentence"), id="atlas.probe"),
        Binding("e", "export", N_("Export the atlas: its heads' role scores, or the screen"), id="atlas.export"),
        Binding("t", "language", "한/En", id="atlas.language"),
    ]

    @dataclass
    class Ready(Message):
        """A worker built an atlas (None: this run has no head roles)."""

        side: str
        atlas: Atlas | None

    @dataclass
    class CompareAsked(Message):
        """c with no B yet: the app offers what B can be and computes it as compare mode does."""

        screen: AtlasScreen  # told when B arrives

    @dataclass
    class ProbeAsked(Message):
        """p: the app runs the model again on the induction probe (or back on the sentence)."""

        screen: AtlasScreen

    @dataclass
    class ExportAsked(Message):
        """e: the app exports the atlas's heads, or the atlas as drawn."""

        screen: AtlasScreen

    def __init__(self, shown: Shown, position: AtlasPosition, start: tuple[int, int],
                 b: tuple[Shown, str, str] | None = None) -> None:
        super().__init__()
        self.shown_a = shown
        self.position = position
        self.start = start  # the head the explorer shows: the cursor starts there
        self.b = b  # B's computation and the two headings (A's label, B's label); None: no B yet
        self.atlases: dict[str, Atlas | None] = {}
        self.waiting_b = False

    def compose(self) -> ComposeResult:
        yield Static("", id="atlas-title")
        yield Static("", id="atlas-keys")
        with Horizontal(id="atlas-sides"):
            yield AtlasSide("a")
            yield AtlasSide("b")
        yield Static("", id="atlas-detail")
        yield Static("", id="atlas-legend")

    def on_mount(self) -> None:
        self._build("a", self.shown_a)
        if self.b is not None:
            self._build("b", self.b[0])
        self.draw()

    @work(thread=True, group=ATLAS, description=ATLAS)  # its reads are off the event loop
    def _build(self, side: str, shown: Shown) -> None:
        self.post_message(self.Ready(side, atlas_for(shown)))

    def on_atlas_screen_ready(self, message: Ready) -> None:
        self.atlases[message.side] = message.atlas
        if message.side == "a" and message.atlas is not None:
            self.position.place(message.atlas, *self.start)
        self.draw()

    @property
    def atlas(self) -> Atlas | None:
        return self.atlases.get("a")

    @property
    def comparing(self) -> bool:
        return self.position.comparing and (self.b is not None or self.waiting_b)

    # ----- drawing -------------------------------------------------------------------------
    def draw(self) -> None:
        atlas, position = self.atlas, self.position
        self.set_class(self.comparing, "-comparing")
        self.query_one("#atlas-keys", Static).update(_(KEYS))
        title_line = self.query_one("#atlas-title", Static)
        if "a" not in self.atlases:
            title_line.update(_("computing every head's roles…"))
            return
        if atlas is None:
            title_line.update(_("no head atlas here: the roles need a run whose queries are its keys (a model or a "
                                "variant read over its sentence, not a decode's steps)"))
            return
        shown = _("filter: {role} scores").format(role=title(position.role)) if position.role \
            else _("strongest roles")
        probe = _("on the induction probe") if getattr(self.shown_a.trace.meta, "probe", "") else ""
        order = (_("ranked by moved") if position.by_moved and atlas.has_moved else _("ranked")) \
            if position.ranked else ""
        title_line.update(printable(" · ".join(part for part in (_("atlas of {name}: {layers}×{heads} heads, {n} "
                                                                   "tokens").format(name=atlas.name,
                                                                                    layers=atlas.layers,
                                                                                    heads=atlas.heads, n=atlas.tokens),
                                                                 probe, shown, order) if part)))
        a_label, b_label = (self.b[1], self.b[2]) if self.b is not None else ("", "")
        self.query_one("#atlas-a", AtlasSide).draw(f"A: {a_label}" if self.comparing else "", atlas, position)
        if self.comparing:
            b = self.atlases.get("b")
            waiting = _("computing B…") if self.b is None or "b" not in self.atlases else _("B has no head roles")
            self.query_one("#atlas-b", AtlasSide).draw(f"B: {b_label}", b, position, waiting)
        cell = atlas.cell(position.layer, position.head)
        line = detail(cell)
        b_atlas = self.atlases.get("b")
        if self.comparing and b_atlas is not None and position.layer < b_atlas.layers \
                and position.head < b_atlas.heads:
            line += "\n" + "B: " + detail(b_atlas.cell(position.layer, position.head))
        self.query_one("#atlas-detail", Static).update(line)
        self.query_one("#atlas-legend", Static).update(Group(legend(atlas, b_atlas if self.comparing else None),
                                                             Text(legend_note(), style="dim")))

    # ----- keys ----------------------------------------------------------------------------
    def action_close(self) -> None:
        self.dismiss(None)

    def action_jump(self) -> None:
        if self.atlas is None:
            self.notify(_("no head to go to: the atlas is empty"), timeout=3)
            return
        self.dismiss((self.position.layer, self.position.head))

    def action_move(self, d_layer: int, d_head: int) -> None:
        if self.atlas is not None:
            self.position.move(self.atlas, d_layer, d_head)
            self.draw()

    def action_filter(self, step: int) -> None:
        self.position.cycle_role(step)
        if self.position.ranked and self.atlas is not None:
            self.position.to_top(self.atlas)  # a new order: its top head
        self.draw()

    def action_rank(self) -> None:
        """o: the ranking by score (top heads first, the cursor on the first), then by what each head moved (a
        model's run), then back to the grid (the cursor stays)."""
        if self.atlas is None:
            return
        self.position.cycle_rank(self.atlas)
        if self.position.ranked:
            self.position.to_top(self.atlas)
        self.draw()

    def action_compare(self) -> None:
        """c: B's atlas beside A's, or back to A's alone; with no B yet, pick what B is (another model opened,
        or A's ask with one setting changed) and it is computed as compare mode computes it."""
        if self.position.comparing:
            self.position.comparing = False
            self.draw()
            return
        if self.b is not None:
            self.position.comparing = True
            self.draw()
            return
        self.post_message(self.CompareAsked(self))

    def waiting_for_b(self) -> None:
        """B was picked and is being computed."""
        self.waiting_b = self.position.comparing = True
        self.draw()

    def show_b(self, shown: Shown, a_label: str, b_label: str) -> None:
        """B's computation arrived: its atlas is built beside A's."""
        self.b, self.waiting_b = (shown, a_label, b_label), False
        self.atlases.pop("b", None)
        self.position.comparing = True
        self._build("b", shown)
        self.draw()

    def drop_b(self) -> None:
        """B failed, or compare mode ended: A's atlas alone."""
        self.b, self.waiting_b = None, False
        self.atlases.pop("b", None)
        self.position.comparing = False
        self.draw()

    def action_probe(self) -> None:
        """p: the model again on the induction probe, or back on the sentence; the atlas waits for the run."""
        self.post_message(self.ProbeAsked(self))

    def action_export(self) -> None:
        """e: the atlas's heads as JSON or CSV, or the atlas as drawn (SVG)."""
        self.post_message(self.ExportAsked(self))

    def waiting_for_a(self) -> None:
        """A new run of A was asked for (p): its atlas is computed when it arrives."""
        self.atlases.pop("a", None)
        self.draw()

    def show_a(self, shown: Shown) -> None:
        """A's new run arrived: its atlas is built, the cursor where it was."""
        self.shown_a, self.start = shown, (self.position.layer, self.position.head)
        self.atlases.pop("a", None)
        self._build("a", shown)
        self.draw()

    def action_language(self) -> None:
        self.app.action_toggle_language()  # type: ignore[attr-defined]
        self.draw()
