"""Real and trained models; heavy imports (transformers) stay inside functions."""
