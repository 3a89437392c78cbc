"""The merged PDF written to its file as its objects come (`PdfStream`): a stream object goes to the file at once, the
others into compressed object streams of a thousand, as WeasyPrint writes them; what stays in memory is one such
batch and the cross-reference table (three numbers per object, in arrays). Objects may come in any order: a number
reserved early (the catalog, a font dictionary the parts point at) is written when its value is known."""
from __future__ import annotations

import sys
import zlib
from array import array
from typing import BinaryIO

BATCH = 1000  # objects per object stream (at most 65,536: an index in one is 2 bytes)


class PdfStream:
    """Objects numbered from 1 as they are reserved, written to `handle` as they are put."""

    def __init__(self, handle: BinaryIO):
        self.handle = handle
        self.position = 0
        # cross-reference entries of objects 1..n: 0 reserved (not written yet), 1 at an offset, 2 in an object stream
        self.kinds = array("B")
        self.where = array("Q")  # the offset, or the object stream's number
        self.slots = array("H")  # the index in the object stream (under BATCH; the table's field is 2 bytes too)
        self.batch: list[tuple[int, bytes]] = []
        self._emit(b"%PDF-1.7\n%\xf0\x9f\x96\xa4\n")

    def _emit(self, data: bytes) -> None:
        self.handle.write(data)
        self.position += len(data)

    def reserve(self) -> int:
        self.kinds.append(0)
        self.where.append(0)
        self.slots.append(0)
        return len(self.kinds)

    def put(self, number: int, value: bytes, stream: bytes | None = None) -> None:
        """Object `number` (reserved) is `value`, a stream's dictionary when `stream` is its data."""
        if stream is None:
            self.batch.append((number, value))
            if len(self.batch) >= BATCH:
                self._flush()
            return
        self.kinds[number - 1], self.where[number - 1] = 1, self.position
        self._emit(b"%d 0 obj\n%s\nstream\n%s\nendstream\nendobj\n" % (number, value, stream))

    def add(self, value: bytes, stream: bytes | None = None) -> int:
        number = self.reserve()
        self.put(number, value, stream)
        return number

    def _flush(self) -> None:
        """The waiting objects as one compressed object stream."""
        if not self.batch:
            return
        number = self.reserve()
        index, body, offset = [], [], 0
        for slot, (packed, value) in enumerate(self.batch):
            index.append(b"%d %d" % (packed, offset))
            body.append(value)
            offset += len(value) + 1
            self.kinds[packed - 1], self.where[packed - 1], self.slots[packed - 1] = 2, number, slot
        head = b" ".join(index)
        content = zlib.compress(head + b"\n" + b"\n".join(body), 6)
        self.kinds[number - 1], self.where[number - 1] = 1, self.position
        self._emit(b"%d 0 obj\n<</Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d>>\nstream\n%s\nendstream\nendobj\n"
                   % (number, len(self.batch), len(head) + 1, len(content), content))
        self.batch = []

    def finish(self, root: int, info: int | None) -> None:
        """The last object stream and the cross-reference stream; every reserved number must have been put."""
        self._flush()
        missing = [number for number, kind in enumerate(self.kinds, 1) if kind == 0]
        if missing:
            raise RuntimeError(f"the merged PDF lacks objects {missing[:5]} that it refers to")
        number = self.reserve()
        self.kinds[number - 1], self.where[number - 1] = 1, self.position  # the cross-reference stream itself
        wide = max(1, (self.position.bit_length() + 7) // 8)
        table = zlib.compress(b"\0" + b"\0" * wide + b"\xff\xff" + _rows(self.kinds, self.where, self.slots, wide), 6)  # object 0: the free list's head
        trailer = b"<</Type /XRef /Size %d /W [1 %d 2] /Root %d 0 R%s /Filter /FlateDecode /Length %d>>" % (
            number + 1, wide, root, b" /Info %d 0 R" % info if info else b"", len(table))
        xref = self.position
        self._emit(b"%d 0 obj\n%s\nstream\n%s\nendstream\nendobj\n" % (number, trailer, table))
        self._emit(b"startxref\n%d\n%%%%EOF\n" % xref)


def _rows(kinds: array, where: array, slots: array, wide: int) -> bytes:
    """The cross-reference rows (kind, `wide` bytes of offset or stream number, 2 bytes of index; big-endian), laid
    out by slices of the arrays' bytes rather than a loop per object (630,000 objects at 10x the upstream book)."""
    size = 1 + wide + 2
    rows = bytearray(size * len(kinds))
    big_where, big_slots = array("Q", where), array("H", slots)
    if sys.byteorder == "little":
        big_where.byteswap()
        big_slots.byteswap()
    where_bytes, slot_bytes = big_where.tobytes(), big_slots.tobytes()
    rows[0::size] = kinds.tobytes()
    for byte in range(wide):  # the offset's low `wide` bytes, most significant first
        rows[1 + byte :: size] = where_bytes[8 - wide + byte :: 8]
    rows[1 + wide :: size] = slot_bytes[0::2]
    rows[2 + wide :: size] = slot_bytes[1::2]
    return bytes(rows)
