"""The console's panes: one widget per file, each usable on its own."""
