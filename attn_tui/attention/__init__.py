"""Attention as torch math: the shared tail, positions, seeded parameters and one package per variant."""
