"""What every family adapter builds on: the one layer tracer, W_O's lookup, and the reusable parts a family with a
cache of its own switches on (a latent cache that steps, a recurrent state that steps)."""
