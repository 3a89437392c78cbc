"""Names that mean something in a book's sources, decided once for every reader of the book.

- `SKIPPED_DIRS`: folders that never hold the book's sources (version control, virtual environments, caches,
  the default build output); `skipped_folder` adds any site the tool built (its stamp file, `OUTPUT_STAMP`).
  The file index, check-links' replay, `check-style`/`fix-tables`, `serve`'s watcher and `mv` skip them.
  It is the union of the two lists that had drifted apart (the scan's and the style checks'); `_build` is the
  tool's own default output folder, which is never a source.
- a folder's README, as GitHub shows it under the folder's file list: `README.md` or `README.markdown`, in any
  case (`index.md` is not one: GitHub does not show it for the folder). When a folder has several, GitHub's
  order picks one (`README_NAMES`, then the others by name).
"""
from __future__ import annotations

import os
import posixpath

SKIPPED_DIRS = frozenset({
    ".git", ".hg", ".svn",  # version control
    ".venv", "venv", "node_modules", "__pycache__",  # environments and bytecode
    ".cache", ".pytest_cache", ".hypothesis",  # caches (the build cache is .cache/build)
    "_build",  # the default output folder
})

OUTPUT_STAMP = ".tools-output"  # in every site folder the tool writes (tools/core/outputs.py)


def skipped_folder(folder: str) -> bool:
    """Whether a walk over a book leaves the folder at path `folder` out: a name of SKIPPED_DIRS, or a site the tool
    built (isfile: an unreadable folder is no site)."""
    return os.path.basename(folder) in SKIPPED_DIRS or os.path.isfile(os.path.join(folder, OUTPUT_STAMP))


def skipped_path(root: str, rel: str) -> bool:
    """Whether the file or folder `rel` (relative to `root`, with os.sep) lies in a folder a walk over the book skips."""
    folder = root
    for part in rel.split(os.sep)[:-1]:
        folder = os.path.join(folder, part)
        if skipped_folder(folder):
            return True
    return False


README_NAMES = ("README.md", "readme.md", "Readme.md", "README.markdown")  # the preferred spellings, in order
_README_LOWER = frozenset(name.lower() for name in README_NAMES)


def is_readme(path: str) -> bool:
    """Whether the file at `path` (posix, relative) is its folder's README."""
    return posixpath.basename(path).lower() in _README_LOWER


def readme_preference(path: str) -> tuple[int, str]:
    """Sort key among the READMEs of one folder: GitHub's preferred spellings first, then by name."""
    name = posixpath.basename(path)
    return (README_NAMES.index(name) if name in README_NAMES else len(README_NAMES), name)
