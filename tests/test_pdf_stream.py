"""The merged PDF's file written object by object as the parts come (tools/render/pdf/stream.py): objects put in any
order, numbers reserved before their values are known, thousands of objects over several object streams; read back by
qpdf --check and pypdf as a reader's tools would."""
from __future__ import annotations

import pytest
from hypothesis import given, strategies as st
from pypdf import PdfReader

from pdf_check import qpdf_problems
from tools.render.pdf.stream import BATCH, PdfStream


def test_objects_put_in_any_order_make_one_sound_pdf(tmp_path):
    path = tmp_path / "streamed.pdf"
    with open(path, "wb") as handle:
        pdf = PdfStream(handle)
        catalog, tree = pdf.reserve(), pdf.reserve()  # known only at the end, as the merge's catalog and page tree are
        content = pdf.add(b"<</Length 30>>", b"BT /F1 12 Tf 72 700 Td ET\n    ")
        pages = [pdf.reserve() for _ in range(3)]
        for number in reversed(pages):  # out of order
            pdf.put(number, b"<</Type /Page /Parent %d 0 R /MediaBox [0 0 612 792] /Contents %d 0 R>>" % (tree, content))
        fillers = [pdf.add(b"<</Filler %d>>" % n) for n in range(2 * BATCH + 5)]  # three object streams
        pdf.put(tree, b"<</Type /Pages /Count 3 /Kids [%s]>>" % b" ".join(b"%d 0 R" % n for n in pages))
        pdf.put(catalog, b"<</Type /Catalog /Pages %d 0 R>>" % tree)
        pdf.finish(catalog, None)
    assert qpdf_problems(path) == ""
    reader = PdfReader(path)
    assert len(reader.pages) == 3
    assert reader.get_object(fillers[-1])["/Filler"] == 2 * BATCH + 4
    assert reader.get_object(fillers[0])["/Filler"] == 0


def test_a_reserved_object_never_put_is_refused(tmp_path):
    with open(tmp_path / "broken.pdf", "wb") as handle:
        pdf = PdfStream(handle)
        catalog, forgotten = pdf.reserve(), pdf.reserve()
        pdf.put(catalog, b"<</Type /Catalog>>")
        with pytest.raises(RuntimeError, match=rf"lacks objects \[{forgotten}\]"):
            pdf.finish(catalog, None)


@given(rows=st.lists(st.tuples(st.integers(0, 2), st.integers(0, 2**64 - 1), st.integers(0, 65535)), max_size=60), wide=st.integers(1, 8))
def test_the_cross_reference_rows_are_each_objects_fields_big_endian(rows, wide):
    """`stream._rows` lays the table out by slices: each row is the kind, the low `wide` bytes of the offset (or object
    stream) and the 2-byte index, most significant byte first, as a loop over the objects would write them."""
    from array import array

    from tools.render.pdf.stream import _rows

    kinds, where, slots = array("B", [r[0] for r in rows]), array("Q", [r[1] for r in rows]), array("H", [r[2] for r in rows])
    expected = b"".join(kind.to_bytes(1, "big") + (offset % 256**wide).to_bytes(wide, "big") + slot.to_bytes(2, "big") for kind, offset, slot in rows)
    assert _rows(kinds, where, slots, wide) == expected
