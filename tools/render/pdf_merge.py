"""Writing the merged PDF: one subset of each shared font, the parts' objects renumbered into one file with one
page tree, one name tree of anchors and one outline."""
from __future__ import annotations

import builtins
import hashlib
import io
import re
import zlib
from pathlib import Path

from ..atomic import atomic_file
from ..cache import key_of
from .pdf_cut import _Objects
from .pdf_job import _Job
from .pdf_pool import _Parts
from .single import readable


def _subset(data: bytes, gids: set[int], missing: bool) -> bytes:
    """One subset for every part: the glyphs they use, at their own glyph ids. WeasyPrint's own HarfBuzz subsetting
    (what one render of the whole book would embed); fontTools where that is not available."""
    try:
        return _harfbuzz_subset(data, gids, missing)
    except Exception:  # another WeasyPrint or HarfBuzz: the slower, equivalent path
        pass
    from fontTools import subset
    from fontTools.ttLib import TTFont

    options = subset.Options(retain_gids=True, passthrough_tables=True, ignore_missing_glyphs=True, hinting=False,
                             desubroutinize=True, notdef_outline=missing)
    options.drop_tables += ["BASE", "DSIG", "EBDT", "EBLC", "EBSC", "GPOS", "GSUB", "JSTF", "LTSH", "PCLT", "SVG "]
    subsetter = subset.Subsetter(options)
    subsetter.populate(gids=sorted(gids))
    font = TTFont(io.BytesIO(data))
    subsetter.subset(font)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


def _harfbuzz_subset(data: bytes, gids: set[int], missing: bool) -> bytes:
    from types import SimpleNamespace

    from weasyprint.pdf.fonts import Font
    from weasyprint.text.ffi import ffi, harfbuzz, harfbuzz_subset

    if not harfbuzz_subset:
        raise RuntimeError("HarfBuzz's subsetter is not installed")
    if not hasattr(harfbuzz, "hb_face_create"):
        ffi.cdef("hb_blob_t * hb_blob_create (const char *data, unsigned int length, int mode, void *user_data, void *destroy);"
                 "hb_face_t * hb_face_create (hb_blob_t *blob, unsigned int index);")
    buffer = ffi.from_buffer(data)
    blob = harfbuzz.hb_blob_create(buffer, len(data), 1, ffi.NULL, ffi.NULL)  # 1: read-only, not copied
    face = ffi.gc(harfbuzz.hb_face_create(blob, 0), harfbuzz.hb_face_destroy)
    harfbuzz.hb_blob_destroy(blob)
    font = SimpleNamespace(hb_face=face, missing={0: 0} if missing else {}, family="shared font", file_content=data)
    Font._harfbuzz_subset(font, set(gids), False)
    del face, buffer
    if font.file_content is data:
        raise RuntimeError("HarfBuzz could not subset the font")
    return font.file_content


class _MissingFont(Exception):
    """A cached part uses a font whose program is neither in the cache nor written in this build."""


def _shared_fonts(job: _Job, parts: _Parts) -> dict[str, bytes]:
    used: dict[str, list] = {}
    for written in [parts.front, *parts.written]:
        for sha, (gids, missing) in written.fonts.items():
            entry = used.setdefault(sha, [set(), False])
            entry[0].update(gids)
            entry[1] = entry[1] or missing
    cache = job.cache
    subsets: dict[str, bytes] = {}
    for sha, (gids, missing) in sorted(used.items()):
        path = job.fonts / sha
        if cache is not None and path.exists() and cache.get("pdf-font-kept", sha) is None:
            cache.put("pdf-font", sha, path.read_bytes())  # for later builds that reuse parts using this font
            cache.put("pdf-font-kept", sha, True)
        key = key_of("pdf-font-subset", sha, tuple(sorted(gids)), missing)
        data = cache.get("pdf-font-subset", key) if cache is not None else None
        if not isinstance(data, bytes):
            full = path.read_bytes() if path.exists() else (cache.get("pdf-font", sha) if cache is not None else None)
            if not isinstance(full, bytes) or hashlib.sha256(full).hexdigest() != sha:
                raise _MissingFont(sha)
            data = _subset(full, gids, missing)
            if cache is not None:
                cache.put("pdf-font-subset", key, data)
        subsets[sha] = data
    return subsets


# --- merge: renumber the parts' objects and write one PDF ------------------------------------------------------------

# A reference `12 0 R`, outside literal and hexadecimal strings (pydyf escapes every parenthesis inside a string).
_REFERENCE = re.compile(rb"\((?:\\.|[^\\)])*\)|<[0-9A-Fa-f\s]*>|(?<![\w.])(\d+) 0 R\b", re.DOTALL)


def _pdf_string(name: str) -> bytes:
    """The bytes of a PDF string as pydyf writes them (ASCII, or UTF-16 with a byte order mark): name tree keys
    are compared with the links' destination names byte for byte."""
    try:
        return name.encode("ascii")
    except UnicodeEncodeError:
        return b"\xfe\xff" + name.encode("utf-16-be")


class _Book:
    """The merged PDF's objects, numbered from 1 as they are added."""

    def __init__(self) -> None:
        self.objects: list[tuple[bytes, bytes | None] | None] = []

    def reserve(self) -> int:
        self.objects.append(None)
        return len(self.objects)

    def set(self, number: int, value: bytes, stream: bytes | None = None) -> None:
        self.objects[number - 1] = (value, stream)

    def add(self, value: bytes, stream: bytes | None = None) -> int:
        self.objects.append((value, stream))
        return len(self.objects)

    def add_part(self, part: _Objects, tree: int, fonts: dict[str, int], dropped: builtins.set[int]) -> list[int]:  # `set` is a method here
        """Renumber a part's objects into the book; returns its pages' numbers."""
        mapping: dict[int, int] = {part.parent: tree}
        for local, sha in part.fonts.items():
            mapping[local] = fonts[sha]
        kept: list[tuple[bytes, bytes | None]] = []
        for local, value, stream in part.objects:
            if local not in dropped:
                mapping[local] = len(self.objects) + 1 + len(kept)
                kept.append((value, stream))

        def swap(match: re.Match) -> bytes:
            local = match.group(1)
            if local is None:
                return match.group(0)
            if int(local) in dropped:
                return b""  # a link that lands nowhere, removed from its page's /Annots
            return b"%d 0 R" % mapping[int(local)]

        for value, stream in kept:
            self.objects.append((_REFERENCE.sub(swap, value), stream))
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


def _outline(book: _Book, nodes: list, pages: list[int]) -> int | None:
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
            book.set(number, item.data)
        return numbers, count

    if not nodes:
        return None
    root = book.reserve()
    numbers, count = add(nodes, root)
    book.set(root, b"<</Type /Outlines /Count %d /First %d 0 R /Last %d 0 R>>" % (count, numbers[0], numbers[-1]))
    return root


def _global_bookmarks(nodes: list, first_index: int) -> list:
    return [(title, (first_index + page, x, y), _global_bookmarks(children, first_index), status)
            for title, (page, x, y), children, status in nodes]


def _merge(out: Path, parts: _Parts, subsets: dict[str, bytes]) -> int:
    import pydyf

    assert parts.front is not None and parts.front_layout is not None
    sources = [(parts.front.objects, parts.front_layout, 1)] + [
        (written.objects, layout, first) for written, layout, first in zip(parts.written, parts.layouts, parts.first_pages)]
    destinations: dict[str, tuple[int, float, float]] = {}  # anchor -> (page index in the book, x, y)
    for _, layout, first in sources:
        for name, (page, x, y) in layout.anchors.items():
            destinations.setdefault(name, (first - 1 + page, x, y))

    book = _Book()
    catalog, tree = book.reserve(), book.reserve()
    info = book.add(parts.front.objects.info) if parts.front.objects.info else None
    fonts = {}
    for sha, data in subsets.items():
        program = zlib.compress(data, 6)
        fonts[sha] = book.add(b"<</Length1 %d /Filter /FlateDecode /Length %d>>" % (len(data), len(program)), program)
    pages: list[int] = []
    for objects, layout, first in sources:
        if len(objects.pages) != layout.pages or len(pages) != first - 1:
            raise RuntimeError(f"a PDF part has {len(objects.pages)} pages where {layout.pages} were laid out from page {first}")
        dropped = {number for name, numbers in objects.links.items() if name not in destinations for number in numbers}
        pages += book.add_part(objects, tree, fonts, dropped)
    book.set(tree, pydyf.Dictionary({"Type": "/Pages", "Count": len(pages), "Kids": pydyf.Array(b"%d 0 R" % n for n in pages)}).data)

    names = pydyf.Array()
    for _, name in sorted((_pdf_string(name), name) for name in destinations):
        page, x, y = destinations[name]
        names.extend([pydyf.String(name), pydyf.Array([b"%d 0 R" % pages[page], "/XYZ", x, y, 0])])
    dests = book.add(pydyf.Dictionary({"Names": names}).data)
    bookmarks = [node for _, layout, first in sources for node in _global_bookmarks(layout.bookmarks, first - 1)]
    outlines = _outline(book, bookmarks, pages)
    entries = {"Type": "/Catalog", "Pages": b"%d 0 R" % tree, "Names": pydyf.Dictionary({"Dests": b"%d 0 R" % dests})}
    if outlines:
        entries["Outlines"] = b"%d 0 R" % outlines
    if parts.front.objects.lang:
        entries["Lang"] = parts.front.objects.lang
    book.set(catalog, pydyf.Dictionary(entries).data)
    with atomic_file(out) as temp:
        with open(temp, "wb") as handle:
            book.write(handle, catalog, info)
        readable(temp)
    return len(pages)


# --- entry point ---------------------------------------------------------------------------------------------------
