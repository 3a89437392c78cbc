"""Mermaid diagrams: drawn to SVG once per source in a headless browser (the drawing stage), checked, and shown in a page."""
