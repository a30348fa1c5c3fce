"""What a stage's dimensions index: an Axis per dimension, with a label per position.

Its own module, below the stage and the steps, so that a step can name the key axis it sees without
importing the Trace that holds it (`trace.stage` re-exports both names).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Axis:
    """One dimension of a stage's tensor: what it indexes and a label per position.

    Kept beside the tensor so a view never has to guess whether rows are queries,
    keys or feature dimensions.
    """

    name: str  # "query", "key", "token", "dim", "hidden", …
    labels: tuple[str, ...]


def dim_axis(size: int, name: str = "dim", prefix: str = "d") -> Axis:
    """Feature-dimension axis labelled d0, d1, …"""
    return Axis(name, tuple(f"{prefix}{i}" for i in range(size)))
