"""Readers of the outputs, as a reader sees them: PDF text and images (pypdf), EPUB members and their XML, site text."""
from __future__ import annotations

import re
import zipfile
from pathlib import Path


def pdf_text(path: Path) -> str:
    from pypdf import PdfReader

    return "".join(page.extract_text() or "" for page in PdfReader(str(path)).pages)


def pdf_image_sizes(path: Path) -> list[tuple[int, int]]:
    """(width, height) of every image XObject of every page, without decoding any."""
    from pypdf import PdfReader

    sizes = []
    for page in PdfReader(str(path)).pages:
        stack = [page.get("/Resources")]
        seen = set()
        while stack:
            resources = stack.pop()
            if resources is None:
                continue
            resources = resources.get_object()
            objects = resources.get("/XObject")
            if objects is None:
                continue
            for ref in objects.get_object().values():
                obj = ref.get_object()
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
                if obj.get("/Subtype") == "/Image":
                    sizes.append((int(obj.get("/Width", 0)), int(obj.get("/Height", 0))))
                elif obj.get("/Subtype") == "/Form":
                    stack.append(obj.get("/Resources"))
    return sizes


def epub_members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def epub_not_wellformed(path: Path) -> list[str]:
    """Members of an EPUB that should be XML (xhtml, opf, ncx, xml) and do not parse, with lxml's reason."""
    from lxml import etree

    bad = []
    for name, data in epub_members(path).items():
        if name.lower().endswith((".xhtml", ".html", ".opf", ".ncx", ".xml")):
            try:
                etree.fromstring(data, etree.XMLParser(resolve_entities=False, no_network=True))
            except etree.XMLSyntaxError as exc:
                bad.append(f"{name}: {exc}")
    return bad


def site_text(folder: Path) -> str:
    """The text of every HTML page of a site folder, tags removed (what a reader can read)."""
    from bs4 import BeautifulSoup

    parts = []
    for page in sorted(folder.rglob("*.html")):
        parts.append(BeautifulSoup(page.read_text(encoding="utf-8", errors="replace"), "lxml").get_text(" "))
    return "\n".join(parts)


def _squash(text: str) -> str:
    return re.sub(r"\s+", "", text)
