"""View-models between a Trace and the screen: grids, stage views, positions, head cells. Textual-free."""
