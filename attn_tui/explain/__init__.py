"""The arithmetic of any one cell, recomputed from the trace's own tensors through the op that made it."""
