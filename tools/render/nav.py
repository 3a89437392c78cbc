"""The chapter tree shown in sidebars and tables of contents: chapters nested by folder, in book order."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from ..book import Book
from ..source_names import is_readme


@dataclass
class NavNode:
    title: str
    chapter: str | None = None  # the chapter this entry opens (a folder's README), if any
    children: list[NavNode] = field(default_factory=list)


def build_nav(book: Book) -> list[NavNode]:
    """Top-level entries; a folder's README is the folder's own entry, other chapters nest under their folder."""
    top: list[NavNode] = []
    folders: dict[str, NavNode] = {}

    def folder_node(folder: str) -> list[NavNode]:
        if not folder:
            return top
        if folder not in folders:
            node = NavNode(title=posixpath.basename(folder).replace("-", " ").capitalize())
            folder_node(posixpath.dirname(folder)).append(node)
            folders[folder] = node
        return folders[folder].children

    for chapter in book.chapters:
        folder = posixpath.dirname(book.index.logical(chapter.path))  # a translation's chapters nest as the original's
        if is_readme(chapter.path) and folder:
            if folder in folders and folders[folder].chapter is None:
                folders[folder].chapter, folders[folder].title = chapter.path, chapter.title
                continue
            if folder not in folders:
                folder_node(posixpath.dirname(folder)).append(node := NavNode(chapter.title, chapter.path))
                folders[folder] = node
                continue
        folder_node(folder).append(NavNode(chapter.title, chapter.path))
    return top
