"""Sample inputs (TOML), installed as the package `attn_tui.samples`."""
