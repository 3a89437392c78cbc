"""Where each chapter and file lands in a multi-page output, and the relative URLs between them."""
from __future__ import annotations

import posixpath
from functools import lru_cache

from ..links.resolve import MARKDOWN_SUFFIXES


@lru_cache(maxsize=65536)
def page_path(chapter_path: str, suffix: str = ".html") -> str:
    """`a/b.md` -> `a/b.html`: one page per chapter, beside where the source sits."""
    stem, ext = posixpath.splitext(chapter_path)
    return (stem if ext.lower() in MARKDOWN_SUFFIXES else chapter_path) + suffix


def relative_url(target: str, from_page: str) -> str:
    """The relative URL of `target` (a path under the output root) from the page `from_page`."""
    return _relpath(target, posixpath.dirname(from_page) or ".")


@lru_cache(maxsize=65536)
def _relpath(target: str, base: str) -> str:
    return posixpath.relpath(target, base)


def root_prefix(page: str) -> str:
    """`../` repeated to climb from `page` to the output root ('' at the top)."""
    depth = page.count("/")
    return "../" * depth
