"""The samples the app can show: every shipped sample, model samples included."""

from __future__ import annotations

from attn_tui.core.samples import Sample, load_samples


def app_samples() -> dict[str, Sample]:
    """Samples by name; a model sample (sample.model set) opens the app on that model."""
    return dict(load_samples())
