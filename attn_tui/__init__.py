"""attn-tui: watch attention compute itself, stage by stage, in the terminal."""

__version__ = "0.1.0"
