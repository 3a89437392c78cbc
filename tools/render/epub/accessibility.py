"""The EPUB's accessibility metadata (schema.org, as EPUB Accessibility 1.1 asks), worked out from the chapters'
XHTML as written, so that it says only what is true of this book: `alternativeText` and a textual
`accessModeSufficient` only where every image has a text alternative, `MathML` only where a chapter holds math, the
visual access mode only where there is something to see. An image with an empty `alt` (`![](x.png)`) is one a
reader of text alone misses; the summary says how many there are.

And the package element's language: ebooklib writes `<dc:language>` but no `xml:lang` on `<package>`, which DAISY
Ace reports (`epub-lang`); `LangWriter` adds it as the OPF is written."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_IMG = re.compile(r"<img\b[^>]*>", re.IGNORECASE)
_ALT = re.compile(r"""\salt\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.IGNORECASE)
_FIGURE_SVG = re.compile(r"<svg\b(?![^>]*\baria-hidden=\"true\")[^>]*>", re.IGNORECASE)  # an alert's icon is hidden: decoration
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


@dataclass
class Pictures:
    """What the chapters show besides text."""

    images: int = 0  # <img> elements
    without_alt: int = 0  # of them, those whose alt text is missing or blank
    drawings: int = 0  # inline SVG that is not decoration (diagrams)
    math: bool = False


def pictures_of(bodies: Iterable[str]) -> Pictures:
    found = Pictures()
    for body in bodies:
        for tag in _IMG.findall(body):
            found.images += 1
            alt = _ALT.search(tag)
            if alt is None or not (alt.group(1) or alt.group(2) or "").strip():
                found.without_alt += 1
        found.drawings += len(_FIGURE_SVG.findall(body))
        found.math = found.math or "<math" in body
    return found


def accessibility_metadata(pictures: Pictures) -> list[tuple[str, str]]:
    """(value, property) of each `<meta property="schema:...">` the package gets."""
    visual = pictures.images > 0 or pictures.drawings > 0
    described = pictures.without_alt == 0
    entries = [("textual", "schema:accessMode")]
    if visual:
        entries.append(("visual", "schema:accessMode"))
    if described:
        entries.append(("textual", "schema:accessModeSufficient"))
    if visual:
        entries.append(("textual,visual", "schema:accessModeSufficient"))
    entries += [("structuralNavigation", "schema:accessibilityFeature"), ("tableOfContents", "schema:accessibilityFeature"),
                ("readingOrder", "schema:accessibilityFeature")]
    if pictures.images and described:
        entries.append(("alternativeText", "schema:accessibilityFeature"))
    if pictures.math:
        entries.append(("MathML", "schema:accessibilityFeature"))
    entries += [("none", "schema:accessibilityHazard"), (_summary(pictures), "schema:accessibilitySummary")]
    return entries


def _summary(pictures: Pictures) -> str:
    said = ["Text with headings for structural navigation and a table of contents; code is text, not pictures."]
    if pictures.math:
        said.append("Math is MathML.")
    if pictures.images and not pictures.without_alt:
        said.append("Every image has alternative text.")
    elif pictures.without_alt:
        verb = "has" if pictures.without_alt == 1 else "have"
        said.append(f"{pictures.without_alt} of its {pictures.images} images {verb} no alternative text: what they show may be missed without sight.")
    if pictures.drawings:
        said.append("Diagrams are drawn as SVG from their source text.")
    return " ".join(said)


# Formats that are compressed already: deflating them again costs CPU (a third of an EPUB build of a book with 89
# images) and saves nothing, so they are stored as they are, as the EPUB container allows for any member.
STORED = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".avif", ".woff", ".woff2", ".mp3", ".mp4", ".m4a", ".ogg", ".webm")


def lang_writer():
    """ebooklib's writer, whose package element also carries `xml:lang` (the book's language), and which stores
    already-compressed members (`STORED`) instead of deflating them."""
    import zipfile

    from ebooklib import epub

    class LangWriter(epub.EpubWriter):
        def _write_opf_file(self, root):
            root.set(XML_LANG, self.book.language)
            super()._write_opf_file(root)

        def _write_items(self):
            out = self.out
            deflating = out.writestr

            def writestr(name, data, compress_type=None, compresslevel=None):
                if compress_type is None and str(name).lower().endswith(STORED):
                    compress_type = zipfile.ZIP_STORED
                return deflating(name, data, compress_type=compress_type, compresslevel=compresslevel)

            out.writestr = writestr
            try:
                super()._write_items()
            finally:
                del out.writestr  # the instance's own goes; the class's method is back

    return LangWriter
