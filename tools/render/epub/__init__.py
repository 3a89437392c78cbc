"""The EPUB 3 backend."""
