"""The app's widgets, one job each; they take attributes and post messages."""
