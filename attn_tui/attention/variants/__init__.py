"""One module per variant, its plain torch formula on top; the torch-free registry is `attn_tui.ask.variants`."""
