"""A PDF's document information (`/Creator`, `/Producer`) read through its last cross-reference section only.

pypdf reads every cross-reference entry before it answers anything: on the PDF of a book ten times the upstream one
(30 MB, 630,000 objects) that took 1.1 s and 120 MiB, and pikepdf 3.3 s and 780 MiB, in every build that replaces it.
Here the file's end names the cross-reference section, the section the `/Info` object, and only that object (and the
object stream holding it) is read, each piece bounded; pypdf parses the dictionaries. Whatever this does not follow
(a `/Prev` chain it would need, predictors, an `/Info` it cannot find) returns None, and the caller asks pypdf."""
from __future__ import annotations

import io
import re
import zlib
from typing import BinaryIO

TAIL = 2048  # `startxref` and its offset are in the file's last bytes
CHUNK = 64 * 1024  # what one object's dictionary may take
MAX_TABLE = 64 * 1024 * 1024  # bytes of a cross-reference stream or object stream read or decoded at most
STARTXREF = re.compile(rb"startxref\s+(\d+)\s+%%EOF", re.S)
OBJECT = re.compile(rb"\s*(\d+)\s+(\d+)\s+obj\b")
STREAM = re.compile(rb">>\s*stream(?:\r\n|\n|\r)")
SUBSECTION = re.compile(rb"\s*(\d+)\s+(\d+)[ \t]*(?:\r\n|\n|\r)")


class _Unknown(Exception):
    """The file is not laid out the way this reader follows."""


def document_info(handle: BinaryIO, size: int) -> dict[str, str] | None:
    """`/Creator` and `/Producer` (those present) of the PDF open in `handle`, whose length is `size`; None when
    this reader cannot tell (ask pypdf)."""
    try:
        return _document_info(handle, size)
    except (_Unknown, ValueError, OSError, KeyError, TypeError, IndexError, AttributeError, zlib.error, RecursionError):
        return None
    except Exception:  # noqa: BLE001 - pypdf's parse of a broken dictionary: pypdf decides instead
        return None


def _document_info(handle: BinaryIO, size: int) -> dict[str, str]:
    from pypdf.generic import DictionaryObject, IndirectObject

    handle.seek(max(0, size - TAIL))
    found = list(STARTXREF.finditer(handle.read(TAIL)))
    if not found or int(found[-1].group(1)) >= size:
        raise _Unknown
    section = int(found[-1].group(1))
    handle.seek(section)
    head = handle.read(CHUNK)
    if head.lstrip().startswith(b"xref"):
        trailer, locate = _classic_section(handle, section + head.index(b"xref") + 4)
    else:
        trailer, rows = _stream(handle, section)
        if trailer.get("/Type") != "/XRef":
            raise _Unknown
        locate = _xref_rows(trailer, rows)
    if "/Root" not in trailer or "/XRefStm" in trailer:  # a dictionary cut short; a hybrid file's second table
        raise _Unknown
    info = trailer.get("/Info")
    if info is None:
        if "/Prev" in trailer:  # an earlier trailer may still name one, which pypdf would take
            raise _Unknown
        return {}
    if not isinstance(info, IndirectObject):
        raise _Unknown
    kind, where, slot = locate(info.idnum)
    if kind == 1:
        value = _object_at(handle, where, info.idnum)
    elif kind == 2:
        kind_of_stream, stream_at, _ = locate(where)
        if kind_of_stream != 1:
            raise _Unknown
        value = _in_object_stream(handle, stream_at, where, info.idnum, slot)
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


def _object_at(handle: BinaryIO, offset: int, number: int):
    handle.seek(offset)
    chunk = handle.read(CHUNK)
    match = OBJECT.match(chunk)
    if not match or int(match.group(1)) != number:
        raise _Unknown
    return _parse(chunk[match.end():])


def _stream(handle: BinaryIO, offset: int, limit: int = MAX_TABLE):
    """The stream object at `offset`: its dictionary and a function giving its first n decoded bytes."""
    handle.seek(offset)
    chunk = handle.read(CHUNK)
    match = OBJECT.match(chunk)
    body = STREAM.search(chunk, match.end()) if match else None
    if not match or not body:
        raise _Unknown
    dictionary = _parse(chunk[match.end():body.start() + 2])
    length, filters = dictionary.get("/Length"), dictionary.get("/Filter")
    if not isinstance(length, int) or not 0 <= length <= MAX_TABLE or "/DecodeParms" in dictionary or filters not in (None, "/FlateDecode"):
        raise _Unknown
    start = offset + body.end()

    def decoded(count: int) -> bytes:
        if count > limit:
            raise _Unknown
        handle.seek(start)
        raw = handle.read(length)
        if filters is None:
            return raw[:count]
        return zlib.decompressobj().decompress(raw, count)

    return dictionary, decoded


def _xref_rows(trailer, decoded):
    """Where object n is, from a cross-reference stream: (kind, offset or object stream, index in it)."""
    widths = [int(w) for w in trailer["/W"]]
    index = [int(i) for i in trailer.get("/Index", [0, trailer["/Size"]])]
    if len(widths) != 3 or min(widths) < 0 or len(index) % 2:
        raise _Unknown
    row = sum(widths)

    def locate(number: int) -> tuple[int, int, int]:
        skipped = 0
        for first, count in zip(index[::2], index[1::2]):
            if first <= number < first + count:
                at = (skipped + number - first) * row
                data = decoded(at + row)[at:]
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
        chunk = handle.read(256)
        match = SUBSECTION.match(chunk)
        if not match:
            break
        first, count = int(match.group(1)), int(match.group(2))
        subsections.append((first, count, position + match.end()))
        position += match.end() + 20 * count
    handle.seek(position)
    stripped = handle.read(CHUNK).lstrip()
    if not stripped.startswith(b"trailer"):
        raise _Unknown
    trailer = _parse(stripped[len(b"trailer"):])

    def locate(number: int) -> tuple[int, int, int]:
        for first, count, entries in subsections:
            if first <= number < first + count:
                handle.seek(entries + 20 * (number - first))
                entry = handle.read(20).split()
                if len(entry) != 3 or entry[2] not in (b"n", b"f"):
                    raise _Unknown
                return (1 if entry[2] == b"n" else 0), int(entry[0]), 0
        raise _Unknown

    return trailer, locate


def _in_object_stream(handle: BinaryIO, offset: int, stream_number: int, number: int, slot: int):
    dictionary, decoded = _stream(handle, offset)
    if dictionary.get("/Type") != "/ObjStm" or _object_number(handle, offset) != stream_number:
        raise _Unknown
    first, count = int(dictionary["/First"]), int(dictionary["/N"])
    if not 0 <= slot < count:
        raise _Unknown
    pairs = decoded(first)[:first].split()
    if len(pairs) < 2 * (slot + 1) or int(pairs[2 * slot]) != number:
        raise _Unknown
    start = first + int(pairs[2 * slot + 1])
    return _parse(decoded(start + CHUNK)[start:])


def _object_number(handle: BinaryIO, offset: int) -> int:
    handle.seek(offset)
    match = OBJECT.match(handle.read(64))
    if not match:
        raise _Unknown
    return int(match.group(1))
