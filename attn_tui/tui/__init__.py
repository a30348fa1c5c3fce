"""The Textual app: panes for the model and the inputs, a live heatmap, stage stepping."""
