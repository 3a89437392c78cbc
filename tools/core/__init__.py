"""The lowest layer: what any command needs and no book knows (errors, reports, safe reads, atomic outputs, interrupts, processes, the cache, git)."""
