"""The samples the app can show: those the attention engine computes (model samples run headless)."""

from __future__ import annotations

from attn_tui.core.samples import Sample, load_samples


def app_samples() -> dict[str, Sample]:
    """Engine samples by name; a sample that needs a real or trained model is left to `attn-tui stages`."""
    return {name: s for name, s in load_samples().items() if getattr(s, "model", None) is None}


def model_sample_names() -> list[str]:
    return [name for name in load_samples() if name not in app_samples()]
