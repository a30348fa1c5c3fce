"""The attention engine: pure torch, no UI imports, so it can be used and tested headless."""
