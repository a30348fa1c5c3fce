"""Sources of attention: each turns what was asked into a Trace through one protocol (see registry.py)."""
