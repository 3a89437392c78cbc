"""Checks of the markdown source: one line per paragraph, tables GitHub renders."""
