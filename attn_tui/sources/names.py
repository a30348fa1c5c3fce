"""The models attn-tui opens by name, torch-free, so the command line and the app's first frame can list them."""

from __future__ import annotations

DATE_MODELS = {"seq2seq-dates": "additive", "seq2seq-dates-general": "general"}  # name → its attention
MODEL_NAMES = ("minilm", *DATE_MODELS)
