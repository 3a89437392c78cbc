"""What the parallel PDF route hooks into WeasyPrint (version 70): margin boxes held back, font programs
replaced by marks that the merge fills with one shared subset, and the version check that guards it."""
from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from pathlib import Path

TESTED_WEASYPRINT = ("70",)  # major versions whose internals the hooks below were checked against
SCALE = 0.75  # PDF points per CSS pixel (WeasyPrint's zoom 1)
FONT_MARK = b"mlbook-shared-font:"  # what a part holds instead of a font program: 4 bytes of the font, mark, sha256
_MARKER = "<!--mlbook-pdf-part-{}-->"
_TOC_COUNTER = re.compile(r"target-counter\(\s*attr\(\s*href\s*\)\s*,\s*page\s*\)")
_UNSUPPORTED_CSS = re.compile(
    r"@page[^{]*:(?:first|left|right|blank|recto|verso|nth)\b|counter\(\s*pages\s*\)|target-(?:counters?|text)\(",
    re.IGNORECASE,
)
_META = re.compile(r"\s*<meta\s+name=\"[^\"]*\"\s+content=\"[^\"]*\"\s*/?>|\s*<title>.*?</title>", re.DOTALL)
_RAW_URL = re.compile(r"""(?:url\(|\sdata=)\s*("[^"]*"|'[^']*'|[^\s)'">]+)""", re.IGNORECASE)  # CSS and <object> in raw HTML
_HREF = re.compile(r"""(<a\b[^>]*?\shref=")#([^"]+)(")""", re.IGNORECASE)


class _Unsupported(Exception):
    """This WeasyPrint or this stylesheet cannot be rendered a chapter at a time: use one render of the whole."""


# --- hooks into WeasyPrint (active only while a part is rendered in this process) -------------------------------

_HOOKS: dict = {}
# Per thread, so that a render in another thread of this process is left alone:
# `deferred`: margin boxes held back, as (context, page box, page state, page number in the part), or None;
# `sink`: the `_FontSink` that takes the fonts of the part being written, or None.
_ACTIVE = threading.local()


class _FontSink:
    """Collects the fonts a part uses; the part gets a placeholder, the font program is saved once for the merge."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.used: dict[str, list] = {}  # sha -> [set of glyph ids, whether some glyphs were missing]

    def take(self, font, to_unicode) -> None:
        data = font.file_content
        sha = hashlib.sha256(data).hexdigest()
        path = self.folder / sha
        if not path.exists():
            fd, temp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-")
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.replace(temp, path)
        entry = self.used.setdefault(sha, [set(), False])
        entry[0].update(int(gid) for gid in to_unicode)
        entry[1] = entry[1] or bool(font.missing)
        font.file_content = data[:4] + FONT_MARK + sha.encode()

    def result(self) -> dict[str, tuple[tuple[int, ...], bool]]:
        return {sha: (tuple(sorted(gids)), missing) for sha, (gids, missing) in self.used.items()}


def _shareable(font, to_unicode) -> bool:
    """Plain TrueType outlines: one subset with the glyph ids kept serves every part. Others keep WeasyPrint's subset."""
    data = font.file_content or b""
    return bool(to_unicode) and not font.bitmap and data[:4] in (b"\x00\x01\x00\x00", b"true") and font.index == 0 \
        and "glyf" in font.tables and "fvar" not in font.tables and not (font.png or font.svg or font.colr)


def _install_hooks() -> None:
    """Wrap WeasyPrint's margin-box layout and font cleaning; both wrappers do nothing unless a part is rendering."""
    if _HOOKS:
        return
    if _weasyprint_version().split(".")[0] not in TESTED_WEASYPRINT:
        raise _Unsupported(f"WeasyPrint {_weasyprint_version()}: this route hooks into the internals of {TESTED_WEASYPRINT}")
    try:
        import pydyf
        import weasyprint.layout as layout
        from weasyprint import DEFAULT_OPTIONS
        from weasyprint.layout.background import layout_box_backgrounds
        from weasyprint.pdf import fonts, generate_pdf
        original_margins = layout.make_margin_boxes
        original_clean = fonts.Font.clean
    except (ImportError, AttributeError) as exc:  # another WeasyPrint: its internals differ
        raise _Unsupported(str(exc)) from None

    def make_margin_boxes(context, page, state):
        deferred = getattr(_ACTIVE, "deferred", None)
        if deferred is None:
            return original_margins(context, page, state)
        deferred.append((context, page, state, context.current_page))
        return ()

    def clean(self, to_unicode, hinting):
        sink = getattr(_ACTIVE, "sink", None)
        if sink is not None and _shareable(self, to_unicode):
            return sink.take(self, to_unicode)
        return original_clean(self, to_unicode, hinting)

    layout.make_margin_boxes = make_margin_boxes
    fonts.Font.clean = clean
    _HOOKS.update(margins=original_margins, backgrounds=layout_box_backgrounds,
                  used=(pydyf.Dictionary, pydyf.Stream, pydyf.String, generate_pdf, DEFAULT_OPTIONS))


def _weasyprint_version() -> str:
    import weasyprint

    return weasyprint.__version__


# --- the print document, cut into parts ---------------------------------------------------------------------------
