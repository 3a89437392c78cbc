"""Writing the merged PDF: the parts' objects renumbered into one file with one page tree, one name tree of
anchors and one outline."""
from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from pathlib import Path

from ...atomic import atomic_file
from ..single import readable
from .fonts import SharedFace, add_fonts
from .parts import Objects
from .schedule import Parts
from .tags import TreeMerge

# A reference `12 0 R`, outside literal and hexadecimal strings (pydyf escapes every parenthesis inside a string).
_REFERENCE = re.compile(rb"\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>|(?<![\w.])(\d+) 0 R\b", re.DOTALL)


def _pdf_string(name: str) -> bytes:
    """The bytes of a PDF string as pydyf writes them (ASCII, or UTF-16 with a byte order mark): name tree keys
    are compared with the links' destination names byte for byte."""
    try:
        return name.encode("ascii")
    except UnicodeEncodeError:
        return b"\xfe\xff" + name.encode("utf-16-be")


class MergedPdf:
    """The merged PDF's objects, numbered from 1 as they are added."""

    def __init__(self) -> None:
        self.objects: list[tuple[bytes, bytes | None] | None] = []
        self.renumber: Callable[[bytes], bytes] = lambda value: value  # the last part's numbering (`add_part`)

    def reserve(self) -> int:
        self.objects.append(None)
        return len(self.objects)

    def fill(self, number: int, value: bytes, stream: bytes | None = None) -> None:
        self.objects[number - 1] = (value, stream)

    def add(self, value: bytes, stream: bytes | None = None) -> int:
        self.objects.append((value, stream))
        return len(self.objects)

    def add_part(self, part: Objects, tree: int, fonts: dict[str, int], dropped: set[int],
                 replaced: dict[int, int] | None = None, edit: Callable[[int, bytes], bytes] | None = None) -> list[int]:
        """Renumber a part's objects into the book; returns its pages' numbers. `replaced`: objects not written,
        references to them sent to the book's own; `edit(local number, value)`: applied before renumbering.
        `renumber` then renumbers any value of the part."""
        mapping: dict[int, int] = {part.parent: tree, **(replaced or {})}
        for local, sha in part.fonts.items():
            mapping[local] = fonts[sha]
        kept: list[tuple[bytes, bytes | None]] = []
        for local, value, stream in part.objects:
            if local not in dropped and local not in (replaced or {}):
                mapping[local] = len(self.objects) + 1 + len(kept)
                kept.append((edit(local, value) if edit else value, stream))

        def swap(match: re.Match) -> bytes:
            local = match.group(1)
            if local is None:
                return match.group(0)
            if int(local) in dropped:
                return b""  # a link that lands nowhere, removed from its page's /Annots
            return b"%d 0 R" % mapping[int(local)]

        for value, stream in kept:
            self.objects.append((_REFERENCE.sub(swap, value), stream))
        self.renumber = lambda value: _REFERENCE.sub(swap, value)
        return [mapping[page] for page in part.pages]

    def write(self, handle, root: int, info: int | None) -> None:
        """Streams as they are; the other objects in compressed object streams; a cross-reference stream."""
        position = 0

        def emit(data: bytes) -> None:
            nonlocal position
            handle.write(data)
            position += len(data)

        entries: list[tuple[int, int, int]] = [(0, 0, 65535)] + [(0, 0, 0)] * len(self.objects)
        emit(b"%PDF-1.7\n%\xf0\x9f\x96\xa4\n")
        packed = []
        for number, (value, stream) in enumerate(self.objects, 1):  # type: ignore[misc]
            if stream is None:
                packed.append(number)
                continue
            entries[number] = (1, position, 0)
            emit(b"%d 0 obj\n%s\nstream\n%s\nendstream\nendobj\n" % (number, value, stream))
        number = len(self.objects) + 1
        for start in range(0, len(packed), 1000):
            chunk = packed[start:start + 1000]
            index, body, offset = [], [], 0
            for slot, packed_number in enumerate(chunk):
                value = self.objects[packed_number - 1][0]  # type: ignore[index]
                index.append(b"%d %d" % (packed_number, offset))
                body.append(value)
                offset += len(value) + 1
                entries[packed_number] = (2, number, slot)
            head = b" ".join(index)
            content = zlib.compress(head + b"\n" + b"\n".join(body), 6)
            entries.append((1, position, 0))
            emit(b"%d 0 obj\n<</Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d>>\nstream\n%s\nendstream\nendobj\n"
                 % (number, len(chunk), len(head) + 1, len(content), content))
            number += 1
        entries.append((1, position, 0))  # the cross-reference stream itself
        wide = max(1, (position.bit_length() + 7) // 8)
        table = zlib.compress(b"".join(kind.to_bytes(1, "big") + where.to_bytes(wide, "big") + extra.to_bytes(2, "big")
                                       for kind, where, extra in entries), 6)
        trailer = b"<</Type /XRef /Size %d /W [1 %d 2] /Root %d 0 R%s /Filter /FlateDecode /Length %d>>" % (
            number + 1, wide, root, b" /Info %d 0 R" % info if info else b"", len(table))
        xref = position
        emit(b"%d 0 obj\n%s\nstream\n%s\nendstream\nendobj\n" % (number, trailer, table))
        emit(b"startxref\n%d\n%%%%EOF\n" % xref)


def _outline(book: MergedPdf, nodes: list, pages: list[int]) -> int | None:
    """The outline dictionaries (as WeasyPrint writes them) for bookmarks whose page is an index into `pages`."""
    import pydyf

    def add(nodes: list, parent: int) -> tuple[list[int], int]:
        count = len(nodes)
        numbers: list[int] = []
        items: list = []
        for title, (page, x, y), children, status in nodes:
            number = book.reserve()
            item = pydyf.Dictionary({"Title": pydyf.String(title), "Parent": b"%d 0 R" % parent,
                                     "Dest": pydyf.Array([b"%d 0 R" % pages[page], "/XYZ", x, y, 0])})
            child_numbers, child_count = add(children, number)
            item["Count"] = -child_count if status == "closed" else child_count
            if status != "closed":
                count += child_count
            if child_numbers:
                item["First"], item["Last"] = b"%d 0 R" % child_numbers[0], b"%d 0 R" % child_numbers[-1]
            if numbers:
                item["Prev"] = b"%d 0 R" % numbers[-1]
                items[-1]["Next"] = b"%d 0 R" % number
            numbers.append(number)
            items.append(item)
        for number, item in zip(numbers, items):
            book.fill(number, item.data)
        return numbers, count

    if not nodes:
        return None
    root = book.reserve()
    numbers, count = add(nodes, root)
    book.fill(root, b"<</Type /Outlines /Count %d /First %d 0 R /Last %d 0 R>>" % (count, numbers[0], numbers[-1]))
    return root


def _global_bookmarks(nodes: list, first_index: int) -> list:
    return [(title, (first_index + page, x, y), _global_bookmarks(children, first_index), status)
            for title, (page, x, y), children, status in nodes]


def merge(out: Path, parts: Parts, subsets: dict[str, SharedFace], continues: list[bool] | None = None) -> int:
    """`continues[i]`: chapter i is in the part an earlier chapter opened; its bookmarks go under that part's."""
    import pydyf

    assert parts.front is not None and parts.front_layout is not None
    sources = [(parts.front.objects, parts.front_layout, 1)] + [
        (written.objects, layout, first) for written, layout, first in zip(parts.written, parts.layouts, parts.first_pages)]
    destinations: dict[str, tuple[int, float, float]] = {}  # anchor -> (page index in the book, x, y)
    for _, layout, first in sources:
        for name, (page, x, y) in layout.anchors.items():
            destinations.setdefault(name, (first - 1 + page, x, y))

    book = MergedPdf()
    catalog, tree = book.reserve(), book.reserve()
    info = book.add(parts.front.objects.info) if parts.front.objects.info else None
    fonts = add_fonts(book, subsets)
    pages: list[int] = []
    structure = TreeMerge(book) if parts.front.objects.tags is not None else None
    for index, (objects, layout, first) in enumerate(sources):
        if len(objects.pages) != layout.pages or len(pages) != first - 1:
            raise RuntimeError(f"a PDF part has {len(objects.pages)} pages where {layout.pages} were laid out from page {first}")
        dropped = {number for name, numbers in objects.links.items() if name not in destinations for number in numbers}
        if structure is None:
            pages += book.add_part(objects, tree, fonts, dropped)
            continue
        tags = objects.tags
        pages += book.add_part(objects, tree, fonts, structure.dropped(tags, dropped), structure.replaced(tags, index == 0),
                               structure.edit(tags, index))
        structure.add(tags, book.renumber, index == 0)
    book.fill(tree, pydyf.Dictionary({"Type": "/Pages", "Count": len(pages), "Kids": pydyf.Array(b"%d 0 R" % n for n in pages)}).data)

    names = pydyf.Array()
    for _, name in sorted((_pdf_string(name), name) for name in destinations):
        page, x, y = destinations[name]
        names.extend([pydyf.String(name), pydyf.Array([b"%d 0 R" % pages[page], "/XYZ", x, y, 0])])
    dests = book.add(pydyf.Dictionary({"Names": names}).data)
    bookmarks: list = []
    for number, (_, layout, first) in enumerate(sources):
        nodes = _global_bookmarks(layout.bookmarks, first - 1)
        in_part = number > 0 and continues is not None and continues[number - 1]
        (bookmarks[-1][2] if in_part and bookmarks else bookmarks).extend(nodes)  # [-1]: the part's own bookmark
    outlines = _outline(book, bookmarks, pages)
    entries = {"Type": "/Catalog", "Pages": b"%d 0 R" % tree, "Names": pydyf.Dictionary({"Dests": b"%d 0 R" % dests})}
    if outlines:
        entries["Outlines"] = b"%d 0 R" % outlines
    if parts.front.objects.lang:
        entries["Lang"] = parts.front.objects.lang
    if structure is not None:
        structure.finish(entries)
    book.fill(catalog, pydyf.Dictionary(entries).data)
    with atomic_file(out) as temp:
        with open(temp, "wb") as handle:
            book.write(handle, catalog, info)
        readable(temp)
    return len(pages)
