"""The models attn-tui opens by name, torch-free, so the command line and the app's first frame can list them."""

from __future__ import annotations

GRU_DATE_MODELS = {"seq2seq-dates": "additive", "seq2seq-dates-general": "general"}  # name → its attention
TRANSFORMER_DATE_MODELS = {"transformer-dates": "transformer"}  # name → its shipped checkpoint
DATE_MODELS = {**GRU_DATE_MODELS, **TRANSFORMER_DATE_MODELS}  # the date models: a target, teacher forcing
MODEL_NAMES = ("minilm", *DATE_MODELS)
