"""Rich-only drawing of traces: colour scales, heatmap tables, labels, formulas."""
