"""The arithmetic of any one cell, recomputed from the trace's own tensors through the op that made it.

`cell.explain` is the entry and `cell.MODULES` the registry; `classic` and `modern` hold one
explainer per op kind each (their `EXPLAINERS`); `common` holds what they share.
"""
