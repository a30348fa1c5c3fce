"""Attention as torch math: the shared tail, positions, seeded parameters and one module per variant."""
