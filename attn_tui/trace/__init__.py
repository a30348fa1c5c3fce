"""The record every view reads: places, axes, stages, the trace with its run metadata, and the ops that made them."""
