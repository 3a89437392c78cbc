"""The fonts of the merged PDF: one subset and one font dictionary of each shared face, of the union of the glyphs
every part uses."""
from __future__ import annotations

import hashlib
import io
import multiprocessing
import zlib
from dataclasses import dataclass

from tools.core.cache import key_of
from tools.core.parallel import pool_map
from tools.render.pdf.hooks import FontUse
from tools.render.pdf.job import Job

# Tables a PDF viewer never reads from an embedded TrueType font (the PDF places every glyph itself), removed before
# subsetting: the layout tables are the slow part of fontTools' subsetting, and `kern` is what `GPOS` replaces.
UNUSED_TABLES = ("BASE", "DSIG", "EBDT", "EBLC", "EBSC", "FFTM", "GPOS", "GSUB", "JSTF", "LTSH", "PCLT", "SVG ", "kern")
# How each kind of subset is embedded: the font program's stream entry, its descriptor key, the CID font's subtype.
EMBEDDING = {"TrueType": (b"/Length1 %d", "FontFile2", "/CIDFontType2"),
             "OpenType": (b"/Subtype /OpenType", "FontFile3", "/CIDFontType0"),
             "CIDFontType0C": (b"/Subtype /CIDFontType0C", "FontFile3", "/CIDFontType0")}


@dataclass
class SharedFace:
    program: bytes  # the subset, as embedded
    kind: str  # a key of EMBEDDING
    use: FontUse  # what all parts use of it


def cid_keyed(font) -> bool:
    """A CID-keyed CFF whose CIDs are its glyph ids (Noto CJK's are): its subset can drop the unused glyphs' slots,
    since a PDF viewer finds a CFF CIDFont's glyphs by CID through the font's charset, which keeps the CIDs."""
    if "CFF " not in font or not hasattr(font["CFF "].cff.topDictIndex[0], "ROS"):
        return False
    return all(name == f"cid{gid:05d}" for gid, name in enumerate(font.getGlyphOrder()) if gid)


def subset_font(data: bytes, index: int, gids: set[int]) -> tuple[bytes, str]:
    """One subset for every part, through fontTools' public subsetter, and its kind (a key of EMBEDDING).

    A CID-keyed CFF keeps only the glyphs used, under their CIDs, as a bare CFF. Others keep their glyph ids, in two
    passes as WeasyPrint subsets a font for one document: the first empties every glyph no part uses; the second
    keeps glyphs 0 to the highest used id and renumbers only the components that composite glyphs draw from beyond
    it (an accent), so the font is no longer than its last used glyph. `index`: the face in a collection."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    def options(retain_gids: bool) -> subset.Options:
        chosen = subset.Options(retain_gids=retain_gids, passthrough_tables=True, ignore_missing_glyphs=True,
                                hinting=False, desubroutinize=True, notdef_outline=False, glyph_names=False)
        chosen.drop_tables += list(UNUSED_TABLES)
        return chosen

    font = TTFont(io.BytesIO(data), fontNumber=index)
    for tag in UNUSED_TABLES:
        if tag in font:
            del font[tag]
    if cid_keyed(font):
        only = subset.Subsetter(options(retain_gids=False))
        only.populate(gids=sorted(gids))
        only.subset(font)
        return font["CFF "].compile(font), "CIDFontType0C"
    kept = subset.Subsetter(options(retain_gids=True))
    kept.populate(gids=sorted(gids))
    kept.subset(font)
    cut = subset.Subsetter(options(retain_gids=False))
    cut.populate(gids=range(max(gids, default=0) + 1))
    cut.subset(font)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue(), "OpenType" if "CFF " in font else "TrueType"


class MissingFont(Exception):
    """A cached part uses a font whose program is neither in the cache nor written in this build."""


def shared_fonts(job: Job, used: dict[str, FontUse], jobs: int = 1) -> dict[str, SharedFace]:
    """Each shared face (`FontSink`) -> its one subset and what all parts use of it (`used`, the union the merge
    gathered: a glyph's width and text are the first part's, as every part measures them from the same face, in
    thousandths of an em); subsets the cache lacks are made in `jobs` forked processes (fontTools takes a fraction
    of a second per font)."""
    cache = job.cache
    subsets: dict[str, tuple[bytes, str]] = {}
    todo: list[tuple[str, str, bytes, int, set[int]]] = []  # (face, cache key, font file, face index, glyph ids)
    for face, use in sorted(used.items()):
        use.gids = tuple(sorted(use.to_unicode))
        sha, _, number = face.partition("-")
        path = job.fonts / sha
        if cache is not None and path.exists() and cache.get("pdf-font-kept", sha) is None:
            cache.put("pdf-font", sha, path.read_bytes())  # for later builds that reuse parts using this font
            cache.put("pdf-font-kept", sha, True)
        key = key_of("pdf-font-subset", face, use.gids)
        data = cache.get("pdf-font-subset", key) if cache is not None else None
        if isinstance(data, tuple):
            subsets[face] = data
            continue
        full = path.read_bytes() if path.exists() else (cache.get("pdf-font", sha) if cache is not None else None)
        if not isinstance(full, bytes) or hashlib.sha256(full).hexdigest() != sha:
            raise MissingFont(sha)
        todo.append((face, key, full, int(number or 0), set(use.gids)))
    calls = [(full, index, gids) for _, _, full, index, gids in todo]
    if jobs > 1 and len(calls) > 1 and "fork" in multiprocessing.get_all_start_methods():
        made = pool_map(min(jobs, len(calls)), subset_font, calls)
    else:
        made = [subset_font(*call) for call in calls]
    for (face, key, _, _, _), data in zip(todo, made):
        if cache is not None:
            cache.put("pdf-font-subset", key, data)
        subsets[face] = data
    return {face: SharedFace(*subsets[face], used[face]) for face in sorted(subsets)}


def add_fonts(book, faces: dict[str, SharedFace], numbers: dict[str, int]) -> None:
    """Add each face's program, descriptor, CID font, ToUnicode map and font dictionary (as WeasyPrint writes them
    for one document, with the widths and texts of every part) to the merged PDF `book` (`stream.PdfStream`), the
    font dictionary under the number the parts point at (`numbers`: face -> that number, reserved by the merge)."""
    import pydyf

    for face, shared in faces.items():
        use = shared.use
        entry, file_key, cid_type = EMBEDDING[shared.kind]
        program = zlib.compress(shared.program, 6)
        head = (entry % len(shared.program)) if b"%d" in entry else entry
        stream = book.add(b"<<%s /Filter /FlateDecode /Length %d>>" % (head, len(program)), program)
        cmap = zlib.compress(b"\n".join(to_unicode_map(use.to_unicode)), 6)
        to_unicode = book.add(b"<</Filter /FlateDecode /Length %d>>" % len(cmap), cmap)
        widths = use.widths
        flags = use.flags + (1 if len(widths) > 1 and len(set(widths.values())) == 1 else 0)  # FixedPitch
        ascent, descent = use.ascent, use.descent
        descriptor = book.add(pydyf.Dictionary({
            "Type": "/FontDescriptor", "FontName": use.name, "FontFamily": pydyf.String(use.family), "Flags": flags,
            "FontBBox": pydyf.Array((0, descent, max(widths.values(), default=0), ascent)), "ItalicAngle": 0,
            "Ascent": ascent, "Descent": descent, "CapHeight": ascent, "StemV": 80, "StemH": 80,
            file_key: b"%d 0 R" % stream}).data)
        cid_font = pydyf.Dictionary({
            "Type": "/Font", "Subtype": cid_type, "BaseFont": use.name,
            "CIDSystemInfo": pydyf.Dictionary({"Registry": pydyf.String("Adobe"), "Ordering": pydyf.String("Identity"),
                                               "Supplement": 0}),
            "W": width_array(widths), "FontDescriptor": b"%d 0 R" % descriptor})
        if cid_type == "/CIDFontType2":
            cid_font["CIDToGIDMap"] = "/Identity"
        descendant = book.add(cid_font.data)
        book.put(numbers[face], pydyf.Dictionary({
            "Type": "/Font", "Subtype": "/Type0", "BaseFont": use.name, "ToUnicode": b"%d 0 R" % to_unicode,
            "Encoding": "/Identity-H", "DescendantFonts": pydyf.Array([b"%d 0 R" % descendant])}).data)


def width_array(widths: dict[int, int]):
    """/W: runs of consecutive glyph ids, each `first [w1 w2 ...]`."""
    import pydyf

    array = pydyf.Array()
    for gid in sorted(widths):
        if gid - 1 not in widths:
            run = pydyf.Array()
            array.extend([gid, run])
        run.append(widths[gid])
    return array


def to_unicode_map(texts: dict[int, str]) -> list[bytes]:
    """The lines of a ToUnicode CMap from glyph ids to text, in WeasyPrint's words."""
    lines = [b"/CIDInit /ProcSet findresource begin", b"12 dict begin", b"begincmap", b"/CIDSystemInfo",
             b"<< /Registry (Adobe)", b"/Ordering (UCS)", b"/Supplement 0", b">> def", b"/CMapName /Adobe-Identity-UCS def",
             b"/CMapType 2 def", b"1 begincodespacerange", b"<0000> <ffff>", b"endcodespacerange"]
    items = sorted(texts.items())
    for start in range(0, len(items), 100):
        batch = items[start:start + 100]
        lines.append(b"%d beginbfchar" % len(batch))
        lines += [b"<%04x> <%s>" % (gid, text.encode("utf-16-be").hex().encode()) for gid, text in batch]
        lines.append(b"endbfchar")
    return lines + [b"endcmap", b"CMapName currentdict /CMap defineresource pop", b"end", b"end"]
