"""Writing the merged PDF as the parts come: their objects renumbered into one file (`stream.PdfStream`), with one
page tree, one name tree of anchors, one outline, one structure tree and each shared font once."""
from __future__ import annotations

import re
from collections.abc import Callable

from tools.render.pdf.fonts import SharedFace, add_fonts
from tools.render.pdf.hooks import FontUse
from tools.render.pdf.parts import Layout, Written
from tools.render.pdf.schedule import Parts
from tools.render.pdf.stream import PdfStream
from tools.render.pdf.tags import TreeMerge, without_ua_claim

# A reference `12 0 R`, outside literal and hexadecimal strings (pydyf escapes every parenthesis inside a string).
_REFERENCE = re.compile(rb"\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>|(?<![\w.])(\d+) 0 R\b", re.DOTALL)


def _pdf_string(name: str) -> bytes:
    """The bytes of a PDF string as pydyf writes them (ASCII, or UTF-16 with a byte order mark): name tree keys
    are compared with the links' destination names byte for byte."""
    try:
        return name.encode("ascii")
    except UnicodeEncodeError:
        return b"\xfe\xff" + name.encode("utf-16-be")


class BookWriter:
    """The merged PDF, written part by part as the parts come (`add`), in any order, then finished (`finish`): each
    part's objects are renumbered into the book and go to the file at once (`PdfStream`). What stays in memory until
    the end is what the page tree, the name tree, the outline, the fonts and the structure tree need: each part's page
    numbers, the anchors' names, the glyphs used, the parent tree, and the few objects that point at a link whose
    anchor no part laid out so far has (`held`): once every part's anchors are known, a link that lands nowhere is
    dropped as one render drops it, and the objects pointing at it lose that reference."""

    def __init__(self, handle) -> None:
        self.pdf = PdfStream(handle)
        self.catalog, self.tree = self.pdf.reserve(), self.pdf.reserve()
        self.anchors: set[str] = set()  # the names of the anchors of the parts laid out so far (`know`)
        self.pages: dict[int, list[int]] = {}  # part (0: cover and contents) -> its pages' numbers in the book
        self.fonts: dict[str, int] = {}  # shared face -> its font dictionary's number, filled by `finish`
        self.used: dict[str, FontUse] = {}  # shared face -> what all parts added so far use of it
        self.warnings: set[str] = set()
        self.held: list[tuple[int, bytes, bytes | None]] = []  # objects written at the end, with their book numbers
        self.unsure: dict[int, str] = {}  # book number of a link (or of its object reference) -> the anchor's name
        self.structure: TreeMerge | None = None
        self.tagged: bool | None = None  # decided by the first part added
        self.info = b""
        self.lang = b""
        self.unlabelled = 0  # Figures without words in the parts added so far (`tags.finish_tags`)
        self.metadata: tuple[int, bytes, bytes | None] | None = None  # the front matter's XMP, written by `finish`

    def know(self, layout: Layout) -> None:
        """A part's anchors are known (laid out or cached): links to them are kept."""
        self.anchors.update(layout.anchors)

    def add(self, index: int, written: Written, pages: int) -> None:
        """Part `index` (0: the cover and contents, i + 1: chapter i), laid out as `pages` pages."""
        part = written.objects
        if len(part.pages) != pages:
            raise RuntimeError(f"a PDF part has {len(part.pages)} pages where {pages} were laid out")
        self.warnings.update(written.warnings)
        for face, use in written.fonts.items():
            union = self.used.setdefault(face, FontUse((), {}, {}, use.name, use.family, use.flags, use.ascent, use.descent))
            for gid, width in use.widths.items():
                union.widths.setdefault(gid, width)
            for gid, text in use.to_unicode.items():
                union.to_unicode.setdefault(gid, text)
        if self.tagged is None:
            self.tagged = part.tags is not None
            self.structure = TreeMerge(self.pdf) if self.tagged else None
        if index == 0:
            self.info, self.lang = part.info, part.lang
        tags = part.tags if self.structure is not None else None
        structure = self.structure
        unsure = {number: name for name, numbers in part.links.items() if name not in self.anchors for number in numbers}
        if tags is not None:
            unsure.update({tags.objrs[number]: name for number, name in list(unsure.items()) if number in tags.objrs})
        replaced = structure.replaced(tags, index == 0) if structure is not None else {}
        edit = structure.edit(tags, index) if structure is not None else None
        mapping: dict[int, int] = {part.parent: self.tree, **replaced}
        for local, face in part.fonts.items():
            if face not in self.fonts:
                self.fonts[face] = self.pdf.reserve()
            mapping[local] = self.fonts[face]
        for local, _, _ in part.objects:
            if local not in replaced:
                mapping[local] = self.pdf.reserve()
        for local, name in unsure.items():
            self.unsure[mapping[local]] = name
        touches = False

        def swap(match: re.Match) -> bytes:
            nonlocal touches
            local = match.group(1)
            if local is None:
                return match.group(0)
            touches = touches or int(local) in unsure
            return b"%d 0 R" % mapping[int(local)]

        metadata = tags.metadata if tags is not None and index == 0 else 0
        if tags is not None:
            self.unlabelled += tags.unlabelled
        for local, value, stream in part.objects:
            if local in replaced:
                continue
            touches = local in unsure
            value = _REFERENCE.sub(swap, edit(local, value) if edit else value)
            if local == metadata:  # its PDF/UA claim holds only if no part has a Figure without words
                self.metadata = (mapping[local], value, stream)
            elif touches:
                self.held.append((mapping[local], value, stream))
            else:
                self.pdf.put(mapping[local], value, stream)
        self.pages[index] = [mapping[page] for page in part.pages]
        if structure is not None:
            structure.add(tags, lambda value: _REFERENCE.sub(swap, value), index)

    @property
    def ua_claimed(self) -> bool:
        """Whether the PDF says it is PDF/UA-1: tagged, and every Figure has words (an image its alt text)."""
        return bool(self.tagged) and self.unlabelled == 0

    def _write_held(self, destinations: dict) -> Callable[[bytes], bytes]:
        """The objects held back, without the links that land nowhere (a dropped link is an empty object); returns
        what removes references to those from a value."""
        dropped = {number for number, name in self.unsure.items() if name not in destinations}

        def clean(value: bytes) -> bytes:
            if not dropped:
                return value
            return _REFERENCE.sub(lambda m: b"" if m.group(1) is not None and int(m.group(1)) in dropped else m.group(0), value)

        for number, value, stream in self.held:
            if number in dropped:
                self.pdf.put(number, b"null")
            else:
                self.pdf.put(number, clean(value), stream)
        self.held = []
        return clean

    def finish(self, parts: Parts, subsets: dict[str, SharedFace], continues: list[bool] | None = None) -> int:
        """The page tree, name tree, outline, fonts, structure tree and catalog, once every part is added; returns
        the page count. `continues[i]`: chapter i is in the part an earlier chapter opened; its bookmarks go under
        that part's."""
        import pydyf

        assert parts.front_layout is not None
        sources = [(parts.front_layout, 1)] + list(zip(parts.layouts, parts.first_pages))
        destinations: dict[str, tuple[int, float, float]] = {}  # anchor -> (page index in the book, x, y)
        for layout, first in sources:
            for name, (page, x, y) in layout.anchors.items():
                destinations.setdefault(name, (first - 1 + page, x, y))
        clean = self._write_held(destinations)
        pages: list[int] = []
        for index, (layout, first) in enumerate(sources):
            own = self.pages.get(index)
            if own is None or len(own) != layout.pages or len(pages) != first - 1:
                raise RuntimeError(f"the PDF part {index} is missing or does not start on page {first}")
            pages += own
        add_fonts(self.pdf, subsets, self.fonts)
        self.pdf.put(self.tree, pydyf.Dictionary({"Type": "/Pages", "Count": len(pages),
                                                  "Kids": pydyf.Array(b"%d 0 R" % n for n in pages)}).data)
        info = self.pdf.add(self.info) if self.info else None
        names = []  # each entry made into bytes at once: a book's tens of thousands of anchors as pydyf objects weigh MiBs
        for _, name in sorted((_pdf_string(name), name) for name in destinations):
            page, x, y = destinations[name]
            names.append(pydyf.Array([pydyf.String(name), pydyf.Array([b"%d 0 R" % pages[page], "/XYZ", x, y, 0])]).data[1:-1])
        dests = self.pdf.add(b"<</Names [%s]>>" % b" ".join(names))
        bookmarks: list = []
        for number, (layout, first) in enumerate(sources):
            nodes = _global_bookmarks(layout.bookmarks, first - 1)
            in_part = number > 0 and continues is not None and continues[number - 1]
            (bookmarks[-1][2] if in_part and bookmarks else bookmarks).extend(nodes)  # [-1]: the part's own bookmark
        outlines = _outline(self.pdf, bookmarks, pages)
        entries = {"Type": "/Catalog", "Pages": b"%d 0 R" % self.tree, "Names": pydyf.Dictionary({"Dests": b"%d 0 R" % dests})}
        if outlines:
            entries["Outlines"] = b"%d 0 R" % outlines
        if self.lang:
            entries["Lang"] = self.lang
        if self.metadata is not None:
            number, value, stream = self.metadata
            if not self.ua_claimed and stream is not None:
                value, stream = without_ua_claim(value, stream)
            self.pdf.put(number, value, stream)
        if self.structure is not None:
            self.structure.finish(entries, clean)
        self.pdf.put(self.catalog, pydyf.Dictionary(entries).data)
        self.pdf.finish(self.catalog, info)
        return len(pages)


def _outline(book: PdfStream, nodes: list, pages: list[int]) -> int | None:
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
            book.put(number, item.data)
        return numbers, count

    if not nodes:
        return None
    root = book.reserve()
    numbers, count = add(nodes, root)
    book.put(root, b"<</Type /Outlines /Count %d /First %d 0 R /Last %d 0 R>>" % (count, numbers[0], numbers[-1]))
    return root


def _global_bookmarks(nodes: list, first_index: int) -> list:
    return [(title, (first_index + page, x, y), _global_bookmarks(children, first_index), status)
            for title, (page, x, y), children, status in nodes]
