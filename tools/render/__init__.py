"""Renderers: each output format reads the book model and rewrites its resolved links its own way."""
