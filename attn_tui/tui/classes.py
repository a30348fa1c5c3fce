"""The screen's CSS classes for its size, and several classes set at once with one restyle (each single change
restyles a whole subtree)."""

from __future__ import annotations

from textual.dom import DOMNode


def set_classes(node: DOMNode, wanted: dict[str, bool]) -> None:
    """Add the classes mapped to True and remove the others; restyle once, and only if something changed."""
    changed = any(on != node.has_class(name) for name, on in wanted.items())
    if changed:
        for name, on in wanted.items():
            node.set_class(on, name, update=False)
        node.update_node_styles()


MIN_SIZE = (60, 18)  # below this the layout cannot hold its panes
WIDE = 120  # from this width the inspector and explanation sit side by side
NARROW = 80  # below this width the left column gives up some of its room


def screen_classes(width: int, height: int) -> dict[str, bool]:
    """The screen's classes for a terminal of this size; app.tcss lays the panes out by them."""
    return {"-too-small": width < MIN_SIZE[0] or height < MIN_SIZE[1],
            "-wide": width >= WIDE, "-narrow": width < NARROW}
