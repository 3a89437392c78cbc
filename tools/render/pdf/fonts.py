"""The fonts of the merged PDF: one subset of each shared font, of the union of the glyphs every part uses."""
from __future__ import annotations

import hashlib
import io

from ...cache import key_of
from .job import Job
from .schedule import Parts


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


class MissingFont(Exception):
    """A cached part uses a font whose program is neither in the cache nor written in this build."""


def shared_fonts(job: Job, parts: Parts) -> dict[str, bytes]:
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
                raise MissingFont(sha)
            data = _subset(full, gids, missing)
            if cache is not None:
                cache.put("pdf-font-subset", key, data)
        subsets[sha] = data
    return subsets
