"""Screens pushed over the main view (help)."""
