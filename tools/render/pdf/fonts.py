"""The fonts of the merged PDF: one subset of each shared font, of the union of the glyphs every part uses."""
from __future__ import annotations

import hashlib
import io
import multiprocessing

from ...cache import key_of
from ...parallel import pool_map
from .job import Job
from .schedule import Parts

# Tables a PDF viewer never reads from an embedded TrueType font (the PDF places every glyph itself), removed before
# subsetting: the layout tables are the slow part of fontTools' subsetting, and `kern` is what `GPOS` replaces.
UNUSED_TABLES = ("BASE", "DSIG", "EBDT", "EBLC", "EBSC", "FFTM", "GPOS", "GSUB", "JSTF", "LTSH", "PCLT", "SVG ", "kern")


def subset_font(data: bytes, gids: set[int], missing: bool) -> bytes:
    """One subset for every part: the glyphs they use, at their own glyph ids, through fontTools' public subsetter.

    Two passes, as WeasyPrint subsets a font for one document: the first keeps the glyph ids and empties every glyph
    no part uses; the second keeps glyphs 0 to the highest used id and renumbers only the components that composite
    glyphs draw from beyond it (an accent), so the font is no longer than its last used glyph. `missing`: some text
    had no glyph in this font, so `.notdef` keeps its outline (the box a reader sees)."""
    from fontTools import subset
    from fontTools.ttLib import TTFont

    def options(retain_gids: bool) -> subset.Options:
        chosen = subset.Options(retain_gids=retain_gids, passthrough_tables=True, ignore_missing_glyphs=True,
                                hinting=False, desubroutinize=True, notdef_outline=missing, glyph_names=False)
        chosen.drop_tables += list(UNUSED_TABLES)
        return chosen

    font = TTFont(io.BytesIO(data))
    for tag in UNUSED_TABLES:
        if tag in font:
            del font[tag]
    kept = subset.Subsetter(options(retain_gids=True))
    kept.populate(gids=sorted(gids))
    kept.subset(font)
    cut = subset.Subsetter(options(retain_gids=False))
    cut.populate(gids=range(max(gids, default=0) + 1))
    cut.subset(font)
    out = io.BytesIO()
    font.save(out)
    return out.getvalue()


class MissingFont(Exception):
    """A cached part uses a font whose program is neither in the cache nor written in this build."""


def shared_fonts(job: Job, parts: Parts, jobs: int = 1) -> dict[str, bytes]:
    """sha256 of each shared font -> its one subset for the merged PDF; subsets the cache lacks are made in `jobs`
    forked processes (fontTools takes a fraction of a second per font)."""
    used: dict[str, list] = {}
    for written in [parts.front, *parts.written]:
        for sha, (gids, missing) in written.fonts.items():
            entry = used.setdefault(sha, [set(), False])
            entry[0].update(gids)
            entry[1] = entry[1] or missing
    cache = job.cache
    subsets: dict[str, bytes] = {}
    todo: list[tuple[str, str, bytes, set[int], bool]] = []  # (sha, cache key, font program, glyph ids, missing)
    for sha, (gids, missing) in sorted(used.items()):
        path = job.fonts / sha
        if cache is not None and path.exists() and cache.get("pdf-font-kept", sha) is None:
            cache.put("pdf-font", sha, path.read_bytes())  # for later builds that reuse parts using this font
            cache.put("pdf-font-kept", sha, True)
        key = key_of("pdf-font-subset", sha, tuple(sorted(gids)), missing)
        data = cache.get("pdf-font-subset", key) if cache is not None else None
        if isinstance(data, bytes):
            subsets[sha] = data
            continue
        full = path.read_bytes() if path.exists() else (cache.get("pdf-font", sha) if cache is not None else None)
        if not isinstance(full, bytes) or hashlib.sha256(full).hexdigest() != sha:
            raise MissingFont(sha)
        todo.append((sha, key, full, gids, missing))
    calls = [(full, gids, missing) for _, _, full, gids, missing in todo]
    if jobs > 1 and len(calls) > 1 and "fork" in multiprocessing.get_all_start_methods():
        made = pool_map(min(jobs, len(calls)), subset_font, calls)
    else:
        made = [subset_font(*call) for call in calls]
    for (sha, key, _, _, _), data in zip(todo, made):
        if cache is not None:
            cache.put("pdf-font-subset", key, data)
        subsets[sha] = data
    return dict(sorted(subsets.items()))
