"""The registry of attention variants: every package under `attention/variants/` that declares a `VARIANT`.

A variant is one package: `__init__.py` declares it (torch-free: its `Variant`, its stage kinds `KINDS`, its ops),
`compute.py` holds its math, `explain.py` its explainers. Nothing else lists the variants: the option schema, the
stage-kind catalog, the explainer registry and the CLI read them from here, so adding a variant adds a package.

Found by walking the package folder and importing each declaration, which imports nothing above `trace`'s
torch-free data (tests/attention/test_declarations.py), so the CLI and the first frame read them before torch.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from functools import cache
from types import ModuleType

from attn_tui.ask.variant import Sizes as Sizes
from attn_tui.ask.variant import Variant as Variant

PACKAGE = "attn_tui.attention.variants"


@cache
def declarations() -> tuple[ModuleType, ...]:
    """Each variant's declaring module (its package's `__init__`), in the variants' declared order."""
    folder = importlib.import_module(PACKAGE)
    found = [importlib.import_module(f"{PACKAGE}.{info.name}")
             for info in pkgutil.iter_modules(folder.__path__) if info.ispkg]
    declared = [module for module in found if isinstance(getattr(module, "VARIANT", None), Variant)]
    return tuple(sorted(declared, key=lambda module: module.VARIANT.order))


def parts(part: str) -> tuple[ModuleType, ...]:
    """Each variant's module `part` (`explain`) where its package has one, in the variants' order."""
    return tuple(importlib.import_module(f"{module.__name__}.{part}") for module in declarations()
                 if importlib.util.find_spec(f"{module.__name__}.{part}") is not None)


def _registry() -> dict[str, Variant]:
    found: dict[str, Variant] = {}
    for module in declarations():
        variant = module.VARIANT
        if variant.name != module.__name__.rsplit(".", 1)[-1] or variant.name in found:
            raise TypeError(f"{module.__name__} declares the variant {variant.name!r}: a variant is named by its "
                            "package, once")
        found[variant.name] = variant
    return found


VARIANTS: dict[str, Variant] = _registry()
