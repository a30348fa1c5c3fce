"""One package per variant: its torch-free declaration (`__init__.py`), its math with the plain torch formula on top
(`compute.py`) and the explainers of its own ops (`explain.py`); `attn_tui.ask.variants` finds them."""
