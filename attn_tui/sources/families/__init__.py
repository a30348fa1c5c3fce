"""Model families as adapters over one shared layer tracer (tracer.py).

A family is one module here that reads its config and weights into a `LayerSpec` and
exports `FAMILY`; which module reads a folder is decided by one table keyed by
`config.model_type`, `ask.models.FAMILY_OF` (torch-free, so the command line can refuse an
unsupported folder before it imports torch).
"""

from __future__ import annotations

import importlib

from attn_tui.ask.models import FAMILY_OF
from attn_tui.sources.families.spec import Family


def family_named(name: str) -> Family:
    """The adapter of a family (a value of FAMILY_OF): the module of that name, imported on first use."""
    module = importlib.import_module(f"attn_tui.sources.families.{name}")
    family = module.FAMILY
    assert isinstance(family, Family)
    return family


def family_for(model_type: str) -> Family | None:
    """The adapter that reads a config of this `model_type`, or None when no family traces it."""
    name = FAMILY_OF.get(model_type)
    return None if name is None else family_named(name)
