"""What to compute, torch-free: the settings, the one option schema, inputs, samples and the memory budget."""
