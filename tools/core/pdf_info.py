"""A PDF's document information (`/Creator`, `/Producer`) read through its last cross-reference section only.

pypdf reads every cross-reference entry before it answers anything: on the PDF of a book ten times the upstream one
(30 MB, 630,000 objects) that took 1.1 s and 120 MiB, and pikepdf 3.3 s and 780 MiB, in every build that replaces it.
Here the file's end names the cross-reference section, the section the `/Info` object, and only that object (and the
object stream holding it) is read, each piece bounded; pypdf parses the dictionaries. Whatever this does not follow
(a `/Prev` chain it would need, predictors, encryption, an `/Info` it cannot find) returns None, and the caller asks
pypdf."""
from __future__ import annotations

import io
import re
import zlib
from typing import BinaryIO

TAIL = 2048  # `startxref` and its offset are in the file's last bytes
CHUNK = 64 * 1024  # what one object's dictionary may take
MAX_TABLE = 32 * 1024 * 1024  # bytes of a stream read, and decoded, at most (a 630,000-object table decodes to 4 MB)
MAX_INDEX = 1024 * 1024  # an object stream's numbers and offsets (the tool writes a thousand objects per stream)
OBJECT = re.compile(rb"\s*(\d+)\s+(\d+)\s+obj\b")
STREAM = re.compile(rb">>\s*stream[ \t]*(?:\r\n|\n|\r)")
SUBSECTION = re.compile(rb"\s*(\d+)\s+(\d+)[ \t]*(?:\r\n|\n|\r)")
STARTXREF = re.compile(rb"startxref\s+(\d+)")


class _Unknown(Exception):
    """The file is not laid out the way this reader follows."""


def document_info(handle: BinaryIO, size: int) -> dict[str, str] | None:
    """`/Creator` and `/Producer` (those present) of the PDF open in `handle`, whose length is `size`; None when
    this reader cannot tell (ask pypdf)."""
    try:
        return _document_info(handle, size)
    except Exception:  # noqa: BLE001 - not followed here, or pypdf's parse of a broken dictionary: pypdf decides
        return None


def _document_info(handle: BinaryIO, size: int) -> dict[str, str]:
    from pypdf.generic import DictionaryObject, IndirectObject

    handle.seek(max(0, size - TAIL))
    tail = handle.read(TAIL)
    found = STARTXREF.match(tail, max(0, tail.rfind(b"startxref")))  # the last one: an update's comes after the original's
    if not found or int(found.group(1)) >= size:
        raise _Unknown
    section = int(found.group(1))
    handle.seek(section)
    head = handle.read(CHUNK)
    if head.lstrip().startswith(b"xref"):
        trailer, locate = _classic_section(handle, section + head.index(b"xref") + 4)
    else:
        xref = _Stream(handle, section)
        if xref.dictionary.get("/Type") != "/XRef":
            raise _Unknown
        trailer, locate = xref.dictionary, _xref_rows(xref)
    # A dictionary cut short; a hybrid file's second table; strings pypdf would decrypt: pypdf reads these.
    if "/Root" not in trailer or "/XRefStm" in trailer or "/Encrypt" in trailer:
        raise _Unknown
    info = trailer.get("/Info")
    if info is None:
        if "/Prev" in trailer:  # an earlier trailer may still name one, which pypdf would take
            raise _Unknown
        return {}
    if not isinstance(info, IndirectObject):
        raise _Unknown
    kind, where, extra = locate(info.idnum)
    if kind == 1 and extra == info.generation:  # in the file at `where`, with that generation
        value = _object_at(handle, where, info.idnum, info.generation)
    elif kind == 2 and info.generation == 0:  # the `extra`th object of object stream `where`
        stream_kind, stream_at, stream_generation = locate(where)
        if stream_kind != 1:
            raise _Unknown
        value = _in_object_stream(_Stream(handle, stream_at), (where, stream_generation), info.idnum, extra)
    else:
        raise _Unknown
    if not isinstance(value, DictionaryObject):
        raise _Unknown
    return {key: str(value[key]) for key in ("/Creator", "/Producer") if key in value}


class _Unopened:
    """The document pypdf's object parser asks to make references in: nothing is read through it."""

    strict = True

    def get_object(self, reference):
        raise _Unknown  # a /Creator held as an indirect object: pypdf reads the whole file instead


def _parse(data: bytes):
    from pypdf.generic import read_object

    return read_object(io.BytesIO(data.lstrip(b"\0\t\n\f\r ")), _Unopened())  # type: ignore[arg-type]  # pypdf starts at the object itself


def _object_at(handle: BinaryIO, offset: int, number: int, generation: int):
    handle.seek(offset)
    chunk = handle.read(CHUNK)
    match = OBJECT.match(chunk)
    if not match or (int(match.group(1)), int(match.group(2))) != (number, generation):
        raise _Unknown
    return _parse(chunk[match.end():])


class _Stream:
    """The stream object at `offset`: its number and generation, its dictionary, and its first bytes decoded."""

    def __init__(self, handle: BinaryIO, offset: int):
        handle.seek(offset)
        chunk = handle.read(CHUNK)
        match = OBJECT.match(chunk)
        body = STREAM.search(chunk, match.end()) if match else None
        if not match or not body:
            raise _Unknown
        self.handle, self.number, self.generation = handle, int(match.group(1)), int(match.group(2))
        self.dictionary = _parse(chunk[match.end():body.start() + 2])
        length, self.filters = self.dictionary.get("/Length"), self.dictionary.get("/Filter")
        if not isinstance(length, int) or not 0 <= length <= MAX_TABLE or "/DecodeParms" in self.dictionary or self.filters not in (None, "/FlateDecode"):
            raise _Unknown
        self.start, self.length = offset + body.end(), length
        self.decoded = b""

    def head(self, count: int) -> bytes:
        """The first `count` decoded bytes (fewer where the stream ends), each stream decoded at most as far as asked."""
        if not 0 < count <= MAX_TABLE:  # zlib's max_length 0 would mean no limit at all
            raise _Unknown
        if len(self.decoded) < count:
            self.handle.seek(self.start)
            raw = self.handle.read(self.length)
            self.decoded = raw[:count] if self.filters is None else zlib.decompressobj().decompress(raw, count)
        return self.decoded[:count]


def _xref_rows(xref: _Stream):
    """Where object n is, from a cross-reference stream: (kind, offset or object stream, generation or index)."""
    widths = [int(w) for w in xref.dictionary["/W"]]
    index = [int(i) for i in xref.dictionary.get("/Index", [0, xref.dictionary["/Size"]])]
    if len(widths) != 3 or not all(0 <= width <= 8 for width in widths) or len(index) % 2 or min(index, default=0) < 0:
        raise _Unknown
    row = sum(widths)
    if not row:
        raise _Unknown

    def locate(number: int) -> tuple[int, int, int]:
        skipped = 0
        for first, count in zip(index[::2], index[1::2]):
            if first <= number < first + count:
                at = (skipped + number - first) * row
                data = xref.head(at + row)[at:]
                if len(data) < row:
                    raise _Unknown
                fields, position = [], 0
                for default, width in zip((1, 0, 0), widths):
                    fields.append(int.from_bytes(data[position:position + width], "big") if width else default)
                    position += width
                return fields[0], fields[1], fields[2]
            skipped += count
        raise _Unknown  # not in this section: it would take the /Prev chain

    return locate


def _classic_section(handle: BinaryIO, position: int):
    """A `xref` table: its subsections are skipped by their fixed 20-byte entries to reach the trailer."""
    subsections = []
    for _ in range(10_000):
        handle.seek(position)
        match = SUBSECTION.match(handle.read(256))
        if not match:
            break
        first, count = int(match.group(1)), int(match.group(2))
        subsections.append((first, count, position + match.end()))
        position += match.end() + 20 * count
    handle.seek(position)
    stripped = handle.read(CHUNK).lstrip()
    if not stripped.startswith(b"trailer"):  # entries of another width, or no table: the skip did not land
        raise _Unknown
    trailer = _parse(stripped[len(b"trailer"):])

    def locate(number: int) -> tuple[int, int, int]:
        for first, count, entries in subsections:
            if first <= number < first + count:
                handle.seek(entries + 20 * (number - first))
                entry = handle.read(20).split()
                if len(entry) != 3 or entry[2] not in (b"n", b"f"):
                    raise _Unknown
                return (1 if entry[2] == b"n" else 0), int(entry[0]), int(entry[1])
        raise _Unknown

    return trailer, locate


def _in_object_stream(stream: _Stream, named: tuple[int, int], number: int, slot: int):
    """Object `number`, the `slot`th of the object stream named (number, generation) by the table."""
    if stream.dictionary.get("/Type") != "/ObjStm" or (stream.number, stream.generation) != named:
        raise _Unknown
    first, count = int(stream.dictionary["/First"]), int(stream.dictionary["/N"])
    if not (0 < first <= MAX_INDEX and 0 <= slot < count <= 65_536):
        raise _Unknown
    pairs = [int(word) for word in stream.head(first)[:first].split(None, 2 * count)[:2 * count]]
    numbers, offsets = pairs[::2], pairs[1::2]
    if len(offsets) != count or numbers[slot] != number or numbers.count(number) != 1 or min(offsets) < 0:
        raise _Unknown  # pypdf would take the last of two objects with one number
    start = first + offsets[slot]
    return _parse(stream.head(start + CHUNK)[start:])
