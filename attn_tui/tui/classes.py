"""Several CSS classes set at once with one restyle: each single change restyles a whole subtree."""

from __future__ import annotations

from textual.dom import DOMNode


def set_classes(node: DOMNode, wanted: dict[str, bool]) -> None:
    """Add the classes mapped to True and remove the others; restyle once, and only if something changed."""
    changed = any(on != node.has_class(name) for name, on in wanted.items())
    if changed:
        for name, on in wanted.items():
            node.set_class(on, name, update=False)
        node.update_node_styles()
