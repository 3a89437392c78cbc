"""Edits of the book: tools mv and tools mv-links, every file or none, at the recorded spans of the links."""
