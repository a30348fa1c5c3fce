"""The one registry of tiny test configs holds a model of every family the app traces."""

from __future__ import annotations

from attn_tui.sources.families import families, routing
from tests.sources.tiny_models import CONFIGS, DEEPSEEK, QWEN3_NEXT


def test_every_family_adapter_has_a_tiny_model_in_the_registry() -> None:
    assert set(CONFIGS) <= set(routing())
    assert {routing()[model_type] for model_type in CONFIGS} == set(families())
    assert CONFIGS["deepseek_v3"] is next(iter(DEEPSEEK.values()))  # a family's own config is its first variation
    assert CONFIGS["qwen3_next"] is next(iter(QWEN3_NEXT.values()))
