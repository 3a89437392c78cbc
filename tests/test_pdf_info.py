"""The output guard's PDF metadata, read from the last cross-reference section only (`tools/core/pdf_info.py`): on every
layout it follows it answers what pypdf's whole parse answers, and on anything else (broken, cut, hostile) it answers
None, never an exception, and pypdf decides."""
from __future__ import annotations

import io
import logging
import re
import zlib
from pathlib import Path

import pypdf
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from pypdf.generic import NameObject, TextStringObject

from tools.core.outputs import written_by_tool
from tools.core.pdf_info import document_info
from tools.render.pdf.stream import PdfStream

logging.getLogger("pypdf").setLevel(logging.ERROR)  # the fuzzed files make pypdf warn


def ours(objects: int = 3000, creator: bytes = b"(mlbook tools)") -> bytes:
    """A PDF as the merge writes it (`PdfStream`): the /Info dictionary inside a compressed object stream."""
    handle = io.BytesIO()
    pdf = PdfStream(handle)
    catalog, pages = pdf.reserve(), pdf.reserve()
    page = pdf.add(b"<</Type /Page /Parent %d 0 R /MediaBox [0 0 200 200]>>" % pages)
    for number in range(objects):
        pdf.add(b"<</Filler %d>>" % number)
    pdf.put(pages, b"<</Type /Pages /Kids [%d 0 R] /Count 1>>" % page)
    pdf.put(catalog, b"<</Type /Catalog /Pages %d 0 R>>" % pages)
    info = pdf.add(b"<</Creator %s /Producer (WeasyPrint 70.0)>>" % creator)
    pdf.finish(catalog, info)
    return handle.getvalue()


def by_pypdf(metadata: dict, incremental: dict | None = None, indirect: bool = False) -> bytes:
    """A classic cross-reference table (pypdf's writer), optionally updated incrementally (a /Prev chain)."""
    writer = pypdf.PdfWriter()
    writer.add_blank_page(100, 100)
    writer.add_metadata(metadata)
    if indirect:  # /Creator held as an indirect object
        creator = writer._add_object(TextStringObject("mlbook tools"))
        writer._info.get_object()[NameObject("/Creator")] = creator
    out = io.BytesIO()
    writer.write(out)
    if incremental is None:
        return out.getvalue()
    updated = pypdf.PdfWriter(io.BytesIO(out.getvalue()), incremental=True)
    updated.add_metadata(incremental)
    again = io.BytesIO()
    updated.write(again)
    return again.getvalue()


def by_weasyprint(generator: str | None, uncompressed: bool) -> bytes:
    from weasyprint import HTML

    meta = f'<meta name="generator" content="{generator}">' if generator else ""
    return HTML(string=f"<html><head>{meta}<title>t</title></head><body><p>text</p></body></html>").write_pdf(uncompressed_pdf=uncompressed)


def pypdf_answer(data: bytes):
    try:
        info = pypdf.PdfReader(io.BytesIO(data)).metadata or {}
        return {key: str(info[key]) for key in ("/Creator", "/Producer") if key in info}
    except Exception:  # noqa: BLE001
        return "unreadable"


def fast(data: bytes):
    return document_info(io.BytesIO(data), len(data))


LAYOUTS = {
    "merge writer": lambda: ours(),
    "merge writer, UTF-16 creator": lambda: ours(creator=b"<FEFF006D006C0062006F006F006B00200074006F006F006C0073>"),
    "merge writer, escaped creator": lambda: ours(creator=rb"(mlbook \(tools\) \101)"),
    "weasyprint compressed": lambda: by_weasyprint("mlbook-tools 1.0", False),
    "weasyprint uncompressed": lambda: by_weasyprint("mlbook-tools 1.0", True),
    "weasyprint, no generator": lambda: by_weasyprint(None, False),
    "pypdf classic table": lambda: by_pypdf({"/Creator": "someone else", "/Producer": "pypdf"}),
    "pypdf unicode": lambda: by_pypdf({"/Creator": "книга 本", "/Producer": "x"}),
    "pypdf incremental update": lambda: by_pypdf({"/Creator": "someone"}, {"/Creator": "mlbook tools"}),
    "pypdf indirect creator": lambda: by_pypdf({"/Producer": "p"}, indirect=True),
}


@pytest.mark.parametrize("name", LAYOUTS)
def test_every_layout_gets_pypdfs_answer_or_none(name):
    data = LAYOUTS[name]()
    answer = fast(data)
    assert answer is None or answer == pypdf_answer(data), (name, answer, pypdf_answer(data))


def test_the_layouts_the_tool_writes_are_answered_without_pypdf():
    for name in ("merge writer", "merge writer, UTF-16 creator", "merge writer, escaped creator", "weasyprint compressed", "weasyprint uncompressed"):
        data = LAYOUTS[name]()
        assert fast(data) == pypdf_answer(data), name
    assert fast(ours())["/Creator"] == "mlbook tools"
    assert fast(LAYOUTS["pypdf incremental update"]()) == {"/Creator": "mlbook tools", "/Producer": "pypdf"}
    assert fast(LAYOUTS["pypdf classic table"]()) == {"/Creator": "someone else", "/Producer": "pypdf"}
    assert fast(LAYOUTS["merge writer, escaped creator"]())["/Creator"] == "mlbook (tools) A"


def test_a_large_pdf_of_the_tool_is_recognised_without_a_whole_parse(tmp_path, monkeypatch):
    path = tmp_path / "book.pdf"
    path.write_bytes(ours(objects=200_000))

    def refuse(*args, **kwargs):
        raise AssertionError("pypdf's whole parse was asked")

    monkeypatch.setattr(pypdf, "PdfReader", refuse)
    assert written_by_tool(path, "pdf")


def appended_section(data: bytes) -> bytes:
    """`data` with an incremental update that adds one object and leaves /Info where it was (an earlier section)."""
    trailer = pypdf.PdfReader(io.BytesIO(data)).trailer
    previous = int(data[data.rindex(b"startxref") + 10:].split()[0])
    size = int(trailer["/Size"])
    added = len(data)
    body = b"%d 0 obj\n<</Added true>>\nendobj\n" % size
    xref = added + len(body)
    table = b"xref\n%d 1\n%010d 00000 n \ntrailer\n<</Size %d /Root %d 0 R /Info %d 0 R /Prev %d>>\nstartxref\n%d\n%%%%EOF\n" % (
        size, added, size + 1, trailer.raw_get("/Root").idnum, trailer.raw_get("/Info").idnum, previous, xref)
    return data + body + table


def test_an_update_whose_trailer_names_no_info_is_left_to_pypdf():
    data = appended_section(by_pypdf({"/Creator": "mlbook tools"}))
    last = data.rindex(b"trailer")
    data = data[:last] + re.sub(rb" /Info \d+ 0 R", b"", data[last:])
    assert b"/Info" not in data[last:]
    assert fast(data) is None
    assert pypdf_answer(data)["/Creator"] == "mlbook tools"


def test_the_last_startxref_is_read_even_without_a_line_break_before_eof():
    """An update appended right after the original: both `startxref`s are in the file's last bytes."""
    original = by_pypdf({"/Creator": "someone else"})
    writer = pypdf.PdfWriter(io.BytesIO(original), incremental=True)
    writer.add_metadata({"/Creator": "mlbook tools"})
    out = io.BytesIO()
    writer.write(out)
    data = re.sub(rb"(startxref\s+\d+)\s+%%EOF\s*$", rb"\1%%EOF", out.getvalue())
    assert data.count(b"startxref") == 2 and pypdf_answer(data)["/Creator"] == "mlbook tools"
    assert fast(data) in (None, {"/Creator": "mlbook tools", "/Producer": pypdf_answer(data)["/Producer"]})


def edited_classic(edit) -> bytes:
    data = by_pypdf({"/Creator": "mlbook tools"})
    return edit(data)


def test_what_pypdf_would_read_otherwise_is_left_to_it():
    """A generation that differs from the table's, a free entry, an encrypted file: never this reader's answer."""
    info = int(re.search(rb"/Info (\d+) 0 R", by_pypdf({"/Creator": "mlbook tools"})).group(1))
    cases = {
        "generation": lambda data: data.replace(b"/Info %d 0 R" % info, b"/Info %d 1 R" % info),
        "free entry": lambda data: re.sub(rb"(xref\s+0 \d+\s+(?:\d{10} \d{5} [nf]\s+){%d}\d{10} \d{5} )n" % info, rb"\1f", data),
        "encrypted": lambda data: data.replace(b"/Info %d 0 R" % info, b"/Info %d 0 R /Encrypt %d 0 R" % (info, info)),
    }
    for name, edit in cases.items():
        data = edited_classic(edit)
        assert data != by_pypdf({"/Creator": "mlbook tools"}), name
        assert fast(data) is None, name


def test_an_info_in_an_earlier_section_is_left_to_pypdf(tmp_path):
    for creator in ("mlbook tools", "someone else"):
        data = appended_section(by_pypdf({"/Creator": creator}))
        assert fast(data) is None
        assert pypdf_answer(data)["/Creator"] == creator
        (tmp_path / "b.pdf").write_bytes(data)
        assert written_by_tool(tmp_path / "b.pdf", "pdf") == (creator == "mlbook tools")


def crafted_xref(data: bytes, dictionary: bytes, table: bytes) -> bytes:
    """`data` whose last cross-reference stream is replaced by one with `dictionary` and compressed `table`."""
    xref = int(data[data.rindex(b"startxref") + 10:].split()[0])
    number = int(data[xref:].split()[0])
    head = b"%d 0 obj\n<<%s /Length %d>>\nstream\n" % (number, dictionary, len(table))
    return data[:xref] + head + table + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % xref


@pytest.fixture
def bounded_inflation(monkeypatch):
    """Every decompression this reader starts is bounded: zlib's max_length 0 means no bound at all."""
    import tools.core.pdf_info

    asked = []
    original = zlib.decompressobj

    class Bounded:
        def __init__(self):
            self.inner = original()

        def decompress(self, data, max_length=0):
            asked.append(max_length)
            assert 0 < max_length <= tools.core.pdf_info.MAX_TABLE
            return self.inner.decompress(data, max_length)

    monkeypatch.setattr(tools.core.pdf_info.zlib, "decompressobj", Bounded)
    return asked


def test_a_decompression_bomb_is_not_decoded(bounded_inflation):
    """Tables that inflate far past what the /Info entry needs, or ask for everything, are read only that far."""
    bomb = zlib.compress(b"\0" * (200 * 1024 * 1024), 9)
    data = ours(objects=10)
    cases = [
        b"/Type /XRef /Size 999999999 /W [1 8 2] /Root 1 0 R /Info 999999990 0 R /Filter /FlateDecode",
        b"/Type /XRef /Size 999999999 /W [0 0 0] /Root 1 0 R /Info 5 0 R /Filter /FlateDecode",
        b"/Type /XRef /Size 9999999 /W [1 4 2] /Root 1 0 R /Info 4000000 0 R /Filter /FlateDecode",
    ]
    for dictionary in cases:
        assert fast(crafted_xref(data, dictionary, bomb)) is None
    assert bounded_inflation and max(bounded_inflation) <= 7 * 4_000_001  # the third read up to its entry only


def test_an_object_stream_asking_for_everything_is_not_decoded(bounded_inflation):
    data = ours(objects=10)
    for first in (b"0", b"-5", b"999999999"):
        assert fast(re.sub(rb"/Type /ObjStm /N (\d+) /First \d+", rb"/Type /ObjStm /N \1 /First " + first, data)) is None


SEEDS = [LAYOUTS[name]() for name in ("merge writer", "weasyprint uncompressed", "pypdf classic table")]
SEEDS[0] = ours(objects=20)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.sampled_from(range(len(SEEDS))), cut=st.integers(0, 10**6), edits=st.lists(
    st.tuples(st.integers(0, 10**6), st.binary(min_size=0, max_size=8)), max_size=4))
def test_broken_files_never_raise(seed, cut, edits):
    data = bytearray(SEEDS[seed])
    for at, replacement in edits:
        at %= len(data)
        data[at:at + len(replacement)] = replacement
    if cut % 3 == 0:
        data = data[:cut % (len(data) + 1)]
    answer, whole = fast(bytes(data)), pypdf_answer(bytes(data))
    # Where pypdf reads the file, the answer is its answer; where it cannot (a broken object elsewhere), the /Info
    # dictionary this reader found still tells who wrote the file.
    assert answer is None or answer == whole or whole == "unreadable"


def test_the_guard_reads_a_broken_pdf_as_not_the_tools(tmp_path):
    for number, data in enumerate([b"%PDF-1.7\nstartxref\n99999999\n%%EOF\n", b"%PDF-1.7\n" + b"x" * 10_000, ours()[:-40]]):
        path = tmp_path / f"{number}.pdf"
        path.write_bytes(data)
        assert written_by_tool(path, "pdf") is False


@pytest.mark.skipif(not Path("/usr/share/doc").is_dir(), reason="no system documents here")
def test_the_pdfs_this_machine_has_get_pypdfs_answer():
    found = [path for path in Path("/usr/share/doc").rglob("*.pdf") if path.is_file()][:20]
    for path in found:
        data = path.read_bytes()
        answer = fast(data)
        assert answer is None or answer == pypdf_answer(data), path


def test_a_large_pdf_only_a_whole_parse_could_read_is_not_parsed(tmp_path, monkeypatch):
    """Past WHOLE_PARSE_LIMIT a PDF the reader cannot tell is somebody else's: the guard does not read it all."""
    import tools.core.outputs

    path = tmp_path / "b.pdf"
    path.write_bytes(appended_section(by_pypdf({"/Creator": "mlbook tools"})))
    assert written_by_tool(path, "pdf")
    monkeypatch.setattr(tools.core.outputs, "WHOLE_PARSE_LIMIT", path.stat().st_size - 1)
    asked = []
    monkeypatch.setattr(pypdf, "PdfReader", lambda *args, **kwargs: asked.append(args))
    assert not written_by_tool(path, "pdf")
    assert not asked  # the guard's own `except` would hide an exception raised here
