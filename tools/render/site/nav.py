"""The chapter tree shown in sidebars and tables of contents: chapters nested by folder, in book order, under the
book's parts (group headings, not links) when the chapter list declares them."""
from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from markupsafe import Markup

from tools.book.model import Book, Chapter
from tools.book.parts import grouped
from tools.core.extensions import active
from tools.core.source_names import is_readme
from tools.render.pages import relative_url


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


class LazyNav:
    """A page's chapter tree as the `nav` items a theme's template may walk (`tree(nav)`), made only if one does."""

    def __init__(self, make: Callable[[str, str], list[dict]], current: str, page: str, key: str):
        self._make, self._args, self._key = make, (current, page), key
        self._items: list[dict] | None = None

    def _list(self) -> list[dict]:
        if self._items is None:
            self._items = self._make(*self._args)
        return self._items

    def __iter__(self) -> Iterator[dict]:
        return iter(self._list())

    def __len__(self) -> int:
        return len(self._list())

    def __getitem__(self, index):
        return self._list()[index]

    def __eq__(self, other: object) -> bool:  # tools serve's PageMemo: the same tree for the same page and chapter
        return isinstance(other, LazyNav) and self._key != "" and (self._key, self._args) == (other._key, other._args)

    __hash__ = None  # type: ignore[assignment]


_MARK = "\x00"  # in no title: markdown-it turns NUL into U+FFFD, and no file name holds one


class NavTrees:
    """The chapter tree as HTML: the links in it are relative to the page's folder, so it is drawn once per folder
    and the current chapter is marked in a copy, instead of once per page (a book of N chapters would draw N x N
    items). A theme's own `_nav.html`, or a chapter whose item is not found as drawn, gets the tree drawn for it."""

    def __init__(self, env, nav: list[NavNode], policy, items: Callable[[str, str], list[dict]]):
        self.tree = env.get_template("_nav.html").module.tree
        self.items, self.policy = items, policy
        self.fast = "_nav.html" not in active().theme_files
        self.folders: dict[str, str] = {}
        self.titles: dict[str, str] = {}
        twice: set[str] = set()  # a chapter in the tree twice is marked twice: its pages get the tree drawn for them
        stack = list(nav)
        while stack:
            node = stack.pop()
            if node.chapter and not node.part:
                if node.chapter in self.titles:
                    twice.add(node.chapter)
                self.titles[node.chapter] = node.title
            stack.extend(node.children)
        for chapter in twice:
            del self.titles[chapter]
        self.nav = nav
        self.pieces: list[str] | None = None  # the tree drawn once, split where each chapter's URL goes
        self.order: list[str] = []  # the chapter whose URL follows each piece

    def _drawn(self, page: str) -> str:
        """The tree for `page`'s folder, nothing marked: drawn once with a marker for each link's URL, and each
        folder's URLs put in its place. A URL holds no character HTML escapes (it is percent-encoded), so the
        drawing is the one the template gives; a title holding a marker draws every folder's tree for it."""
        if self.pieces is None:
            drawn = str(self.tree(self._marked(self.nav)))
            pieces = drawn.split(_MARK)
            expected = [str(number) for number in range(len(self.order))]
            self.pieces = pieces[0::2] if pieces[1::2] == expected and len(pieces) == 2 * len(self.order) + 1 else []
        if not self.pieces:
            return str(self.tree(self.items("", page)))
        urls = [relative_url(self.policy.page_of(chapter), page) for chapter in self.order]
        return "".join(piece + url for piece, url in zip(self.pieces, [*urls, ""]))

    def _marked(self, nodes: list[NavNode]) -> list[dict]:
        items = []
        for node in nodes:
            url = ""
            if node.chapter:
                url = f"{_MARK}{len(self.order)}{_MARK}"
                self.order.append(node.chapter)
            items.append({"title": node.title, "url": url, "current": False, "part": node.part, "children": self._marked(node.children)})
        return items

    def html(self, current: str, page: str) -> Markup:
        if not self.fast:
            return Markup(self.tree(self.items(current, page)))
        folder = posixpath.dirname(page)
        base = self.folders.get(folder)
        if base is None:
            base = self.folders[folder] = self._drawn(page)
        title = self.titles.get(current)
        if not current or title is None:
            return Markup(base) if not current else Markup(self.tree(self.items(current, page)))
        url = relative_url(self.policy.page_of(current), page)
        plain, marked = (self._item(url, title, flag) for flag in (False, True))
        if base.count(plain) != 1:
            return Markup(self.tree(self.items(current, page)))
        return Markup(base.replace(plain, marked, 1))

    def _item(self, url: str, title: str, current: bool) -> str:
        """The opening of one chapter's item as the tree draws it, up to the end of its link."""
        drawn = str(self.tree([{"title": title, "url": url, "current": current, "part": False, "children": []}]))
        return drawn[drawn.index("<li") : drawn.index("</a>") + 4]
