"""The chapter tree shown in sidebars and tables of contents: chapters nested by folder, in book order, under the
book's parts (group headings, not links) when the chapter list declares them."""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

from ..book import Book, Chapter
from ..chapter_parts import grouped
from ..source_names import is_readme


@dataclass
class NavNode:
    title: str
    chapter: str | None = None  # the chapter this entry opens (a folder's README), if any
    children: list[NavNode] = field(default_factory=list)
    part: bool = False  # a part of the book: a heading over its chapters


def build_nav(book: Book) -> list[NavNode]:
    """Top-level entries: the chapters before the first part, then each part with its chapters' tree."""
    top: list[NavNode] = []
    for part, chapters in grouped(book.chapters, book.parts):
        if part is None:
            top += _folder_tree(book, chapters)
        else:
            top.append(NavNode(part.title, children=_folder_tree(book, chapters), part=True))
    return top


def _folder_tree(book: Book, chapters: list[Chapter]) -> list[NavNode]:
    """A folder's README is the folder's own entry, other chapters nest under their folder."""
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

    for chapter in chapters:
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
