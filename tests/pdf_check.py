"""Reads a built PDF as a reader would (pypdf for structure, poppler's pdftotext for what is printed where), after
`qpdf --check` found its structure sound (every PDF a test reads through `PdfReport` or `assert_valid_pdf`).

Also holds the fixture book that tests/test_pdf.py and tests/test_epub.py both build: every feature the print and
e-book outputs must handle (links with and without fragments, folders, duplicate and non-ASCII headings, an image,
a wide table, a long code line, a footnote, a script linked to the repository, an external link).
"""
from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from xml.etree import ElementTree

from conftest import require_tool
from tools.book.load import load_book

MM = 72 / 25.4  # points per millimetre
# tools/render/theme/print.css: `@page { size: A4; margin: 22mm 18mm 22mm 18mm }`
PAGE_MARGIN_TOP = 22 * MM
PAGE_MARGIN_RIGHT = 18 * MM
PAGE_MARGIN_BOTTOM = 22 * MM

LONG_CODE_LINE = "settings = [" + ", ".join(f"option_{i:03d}" for i in range(70)) + "]"
LONG_CODE_WORD = "token = '" + "z" * 150 + "'"  # longer than a printed line: it has to be cut somewhere
WIDE_TABLE = "\n".join([
    "| " + " | ".join(f"Column {c}" for c in range(12)) + " |",
    "|" + " --- |" * 12,
    *("| " + " | ".join(f"row{r}cell{c}-with-long-unbroken-content" for c in range(12)) + " |" for r in range(3)),
])
DIAGRAM_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="240" height="90" viewBox="0 0 240 90">'
               '<rect width="240" height="90" fill="#8ab"/><text x="20" y="50" font-size="20">diagramlabel</text></svg>\n')

LONG_URL = ("https://example.org/an/address/that/is/far/too/long/to/fit/on/one/line/of/a/printed/page/"
            "without/breaking/somewhere/in/the/middle/of/it/index.html")

FIXTURE_FILES: dict[str, str] = {
    "book.toml": (
        '[book]\ntitle = "Fixture Book"\nauthors = ["Ada Lovelace", "Alan Turing"]\n'
        'description = "A small book that exercises every feature of the print and e-book outputs."\n'
        'subject = "Testing book outputs"\nlanguage = "en"\n'
        'repository = "https://github.com/example/fixture"\nbranch = "main"\n'
    ),
    "chapters-md.txt": "# reading order\nREADME.md\nguide/README.md\nguide/setup.md\nref/notes.md\n",
    "README.md": (
        "# Welcome to the Fixture\n\n"
        "Start with [the setup section](guide/setup.md#install-the-tools--quickly), the [guide folder](guide/) "
        "and the [notes](ref/notes.md).\n\n"
        "Read the [upstream documentation](https://example.org/docs/page) too.\n\n"
        f"A bare address that must wrap: {LONG_URL}\n"
    ),
    "guide/README.md": (
        "# The Guide\n\n## Example\n\nThe first example.\n\n## Example\n\n"
        "The second example; compare with [the first one](#example) and [this one](#example-1).\n\n"
        "### Details of the example\n\nMore details.\n"
    ),
    "guide/setup.md": (
        "# Setup\n\n## Install the tools — quickly\n\n"
        "Run [the install script](../scripts/install.sh) and look at the figure:\n\n"
        "![a small diagram](img/diagram.svg)\n\n"
        "A claim with a footnote[^source].\n\n"
        f"```python\n{LONG_CODE_LINE}\n{LONG_CODE_WORD}\n```\n\n"
        "## Über Straße und Größe\n\n"
        f"{WIDE_TABLE}\n\n"
        "Back to the [front page](../README.md) and on to the [notes on C++](../ref/notes.md#notes-on-c) "
        "and the [hand-made anchor](../ref/notes.md#manual-anchor).\n\n"
        "[^source]: The source of the claim.\n"
    ),
    "ref/notes.md": (
        "# Notes\n\n## Notes on C++\n\nText about C++.\n\n## Ünïcödé heading ✓\n\n"
        "See the [umlaut section](../guide/setup.md#über-straße-und-größe) and the [guide's README](../guide/README.md).\n\n"
        '<a name="manual-anchor"></a>\nA paragraph with a hand-made anchor; the [diagram file](../guide/img/diagram.svg) itself; '
        "[line 2 of the script](../scripts/install.sh#L2).\n"
    ),
    "scripts/install.sh": "#!/bin/sh\necho install\n",
    "guide/img/diagram.svg": DIAGRAM_SVG,
}
FIXTURE_TITLES = ["Welcome to the Fixture", "The Guide", "Setup", "Notes"]
FIXTURE_REPO = "https://github.com/example/fixture/blob/main"

# A book with the three kinds of bad input a build must survive: a missing image, a missing anchor (in another
# chapter and in the same one), a file that is not UTF-8. Every one is reported as file:line; the output is made.
BAD_FILES: dict[str, str | bytes] = {
    "chapters-md.txt": "a.md\nb.md\nc.md\n",
    "a.md": (
        "# Chapter A\n\nSee [chapter B](b.md#no-such-heading) and [here](#nowhere).\n\n![a lost figure](img/missing.png)\n\n"
        '<img src="img/also-missing.svg" alt="a lost raw figure">\n\n![a remote figure](https://example.org/figure.png)\n'
    ),
    "b.md": "# Chapter B\n\n## Real heading\n\nSome text.\n",
    "c.md": "# Chapter C\n\ncaf\xe9 au lait\n".encode("latin-1"),
}
BAD_LOCATIONS = {  # where the report must point (file:line:col, counted by hand) -> (severity, a word of its sentence)
    "a.md:3:17": ("error", "no-such-heading"),
    "a.md:3:50": ("error", "nowhere"),
    "a.md:5:18": ("error", "img/missing.png"),
    "a.md:7:11": ("error", "img/also-missing.svg"),
    "a.md:9:20": ("warning", "remote"),
    "c.md:3:4": ("error", "UTF-8"),
}
# Only a warning (a link to markdown that is not a chapter): the build succeeds unless --strict.
WARNING_FILES: dict[str, str] = {
    "chapters-md.txt": "a.md\n",
    "a.md": "# Only chapter\n\nA link to [a draft](draft.md).\n",
    "draft.md": "# Draft\n",
}


def qpdf_problems(path: Path) -> str:
    """What `qpdf --check` finds wrong with a PDF ('' when nothing): its cross-reference table and object streams,
    every object and stream decoded, the page tree. Skips without qpdf on a reader's machine, fails under CI=true."""
    qpdf = require_tool("qpdf")
    result = subprocess.run([qpdf, "--check", str(path)], capture_output=True, text=True, timeout=600, check=False)
    if result.returncode == 0:
        return ""
    return f"qpdf --check {path} exited {result.returncode}:\n{(result.stdout + result.stderr)[-3000:]}"


def assert_valid_pdf(path: Path) -> None:
    problems = qpdf_problems(path)
    assert not problems, problems


@dataclass
class OutlineItem:
    title: str
    page: int | None  # 0-based page index
    children: list[OutlineItem] = field(default_factory=list)


@dataclass
class LinkAnnotation:
    page: int  # 0-based index of the page the link sits on
    rect: tuple[float, float, float, float]
    uri: str = ""  # for external links
    dest: str = ""  # the named destination of an internal link ('' when explicit)
    dest_page: int | None = None  # 0-based page the internal link lands on; None when it lands nowhere
    dest_top: float | None = None  # PDF y (from the bottom) of the landing point

    @property
    def internal(self) -> bool:
        return not self.uri


@dataclass
class Word:
    page: int
    x_min: float
    y_min: float  # from the top of the page, as pdftotext reports
    x_max: float
    y_max: float
    text: str


class PdfReport:
    """One PDF, read once: outline, link annotations, metadata, printed words and page text."""

    def __init__(self, path: Path):
        from pypdf import PdfReader

        self.path = Path(path)
        assert_valid_pdf(self.path)
        self.reader = PdfReader(str(self.path))
        self.pages = len(self.reader.pages)
        self._page_index = {page.indirect_reference.idnum: i for i, page in enumerate(self.reader.pages)}

    # --- structure (pypdf) ---
    def _page_of(self, ref) -> int | None:
        if ref is None:
            return None
        idnum = getattr(ref, "idnum", None)
        if idnum is None and hasattr(ref, "indirect_reference") and ref.indirect_reference is not None:
            idnum = ref.indirect_reference.idnum
        return self._page_index.get(idnum)

    @cached_property
    def named_destinations(self) -> dict[str, tuple[int | None, float | None]]:
        found = {}
        for name, dest in self.reader.named_destinations.items():
            top = dest.get("/Top")
            found[str(name)] = (self._page_of(dest.get("/Page")), float(top) if top is not None else None)
        return found

    @cached_property
    def outline(self) -> list[OutlineItem]:
        def walk(entries) -> list[OutlineItem]:
            items: list[OutlineItem] = []
            for entry in entries:
                if isinstance(entry, list):
                    if items:
                        items[-1].children.extend(walk(entry))
                    continue
                items.append(OutlineItem(str(entry.title), self.reader.get_destination_page_number(entry)))
            return items

        return walk(self.reader.outline)

    @cached_property
    def links(self) -> list[LinkAnnotation]:
        found = []
        for index, page in enumerate(self.reader.pages):
            for ref in page.get("/Annots") or []:
                annot = ref.get_object()
                if annot.get("/Subtype") != "/Link":
                    continue
                rect = tuple(float(v) for v in annot["/Rect"])
                action = annot.get("/A")
                if action is not None:
                    action = action.get_object()
                    if action.get("/S") == "/URI":
                        found.append(LinkAnnotation(index, rect, uri=str(action["/URI"])))
                        continue
                    dest = action.get("/D")
                else:
                    dest = annot.get("/Dest")
                if dest is None:
                    found.append(LinkAnnotation(index, rect))
                    continue
                if isinstance(dest, (str, bytes)) or not hasattr(dest, "__getitem__"):
                    name = dest.decode() if isinstance(dest, bytes) else str(dest)
                    page_no, top = self.named_destinations.get(name, (None, None))
                    found.append(LinkAnnotation(index, rect, dest=name, dest_page=page_no, dest_top=top))
                else:  # an explicit destination: [page /XYZ left top zoom]
                    top = float(dest[3]) if len(dest) > 3 and dest[3] is not None else None
                    found.append(LinkAnnotation(index, rect, dest_page=self._page_of(dest[0]), dest_top=top))
        return found

    @cached_property
    def metadata(self) -> dict[str, str]:
        info = self.reader.metadata or {}
        return {str(k): str(v) for k, v in info.items()}

    @cached_property
    def language(self) -> str:
        return str(self.reader.trailer["/Root"].get("/Lang", ""))

    @cached_property
    def page_size(self) -> tuple[float, float]:
        box = self.reader.pages[0].mediabox
        return float(box.width), float(box.height)

    # --- what is printed (poppler) ---
    @cached_property
    def words(self) -> list[Word]:
        """Every word with its box, from `pdftotext -bbox` (y measured from the top of the page)."""
        xml = subprocess.run(["pdftotext", "-bbox", str(self.path), "-"], check=True, capture_output=True).stdout
        xml = re.sub(rb"<!DOCTYPE[^>]*>", b"", xml)
        root = ElementTree.fromstring(xml)
        words = []
        for index, page in enumerate(root.iter("{http://www.w3.org/1999/xhtml}page")):
            for word in page.iter("{http://www.w3.org/1999/xhtml}word"):
                words.append(Word(index, float(word.get("xMin")), float(word.get("yMin")), float(word.get("xMax")), float(word.get("yMax")), word.text or ""))
        return words

    def words_on(self, page: int) -> list[Word]:
        return [w for w in self.words if w.page == page]

    def text(self, page: int | None = None, layout: bool = True) -> str:
        """The printed text of one page (0-based) or of the whole document."""
        args = ["pdftotext", "-enc", "UTF-8"] + (["-layout"] if layout else [])
        if page is not None:
            args += ["-f", str(page + 1), "-l", str(page + 1)]
        return subprocess.run(args + [str(self.path), "-"], check=True, capture_output=True).stdout.decode("utf-8")

    def header(self, page: int) -> str:
        """The words printed in the top margin (the running header)."""
        return " ".join(w.text for w in self._sorted(self.words_on(page)) if w.y_max <= PAGE_MARGIN_TOP)

    def footer(self, page: int) -> str:
        height = self.page_size[1]
        return " ".join(w.text for w in self._sorted(self.words_on(page)) if w.y_min >= height - PAGE_MARGIN_BOTTOM)

    def body_text(self, page: int) -> str:
        height = self.page_size[1]
        return " ".join(w.text for w in self._sorted(self.words_on(page)) if PAGE_MARGIN_TOP < w.y_max and w.y_min < height - PAGE_MARGIN_BOTTOM)

    @staticmethod
    def _sorted(words: list[Word]) -> list[Word]:
        return sorted(words, key=lambda w: (round(w.y_min), w.x_min))

    def overflowing_words(self, tolerance: float = 0.5) -> list[Word]:
        """Words whose box ends to the right of the text area (page width minus the right margin)."""
        limit = self.page_size[0] - PAGE_MARGIN_RIGHT + tolerance
        return [w for w in self.words if w.x_max > limit]

    def toc(self) -> list[tuple[str, int]]:
        """(title, printed page number) of every entry of the printed table of contents ('Title ..... 12').

        A title too long for one line wraps; its first lines carry no leader and are joined to the line with one.
        """
        leader = re.compile(r"^\s*(.*?)\s*(?:\.\s*){3,}\s*(\d+)\s*$")
        page = next(i for i in range(self.pages) if self.body_text(i).startswith("Contents"))
        entries: list[tuple[str, int]] = []
        while page < self.pages:
            lines = [line for line in self.text(page).splitlines() if line.strip()]
            if not any(leader.match(line) for line in lines):
                break
            pending = ""
            for line in lines:
                match = leader.match(line)
                tail = None if match else re.match(r"^\s*(.*\S)\s+(\d+)\s*$", line)
                if tail and not (entries and entries[-1][1] <= int(tail.group(2)) <= self.pages):
                    tail = None  # a title that ends in a number, not a page number
                if match or tail:  # a wrapped title's last line may fill the line, leaving no room for a leader
                    found = match or tail
                    assert found is not None
                    entries.append(((pending + " " + found.group(1)).strip(), int(found.group(2))))
                    pending = ""
                elif line.strip() != "Contents" and not line.strip().isdigit():
                    pending = (pending + " " + line.strip()).strip()
            page += 1
        return entries

    def pages_printing(self, phrase: str) -> list[int]:
        """0-based pages whose body text (header and footer excluded) contains `phrase`, whitespace-normalized."""
        wanted = " ".join(phrase.split())
        return [i for i in range(self.pages) if wanted in self.body_text(i)]

    def phrase_box(self, page: int, phrase: str) -> Word | None:
        """The box of the first word where the words of `phrase` are printed in a row on `page`.

        Punctuation that pdftotext keeps on a word ('here.', 'section,') is ignored.
        """
        words = self._sorted(self.words_on(page))
        wanted = phrase.split()
        for i in range(len(words) - len(wanted) + 1):
            if [w.text.strip(".,;:!?()[]") for w in words[i:i + len(wanted)]] == wanted:
                return words[i]
        return None


def outline_titles(items: list[OutlineItem]) -> list[str]:
    return [item.title for item in items]


def tree(items: list[OutlineItem]) -> list:
    return [(item.title, tree(item.children)) for item in items]


class PartNode(tuple):
    """An outline entry that stands for a part of the book (equal to the plain (title, children) tuple)."""


def expected_outline(book_root: Path) -> list:
    """The outline a reader expects from the sources: each chapter, its h2s, and under them its h3s; a chapter in a
    part of the book under its part (`PartNode`)."""
    book = load_book(book_root)
    top: list = []
    part_of = {path: part for part in book.parts for path in part.chapters}
    for chapter in book.chapters:
        node = (chapter.title, [])
        part = part_of.get(chapter.path)
        if part is None:
            top.append(node)
        elif top and isinstance(top[-1], PartNode) and top[-1][0] == part.title:
            top[-1][1].append(node)
        else:
            top.append(PartNode((part.title, [node])))
        stack = [(1, node[1])]
        for heading in chapter.headings:
            if heading.level not in (2, 3):
                continue
            while stack[-1][0] >= heading.level:
                stack.pop()
            child = (" ".join(heading.text.split()), [])
            stack[-1][1].append(child)
            stack.append((heading.level, child[1]))
    return top


def link_at(report: PdfReport, page: int, phrase: str):
    """The link annotation a reader clicks on the printed words `phrase` of `page`."""
    word = report.phrase_box(page, phrase)
    assert word is not None, f"'{phrase}' is not printed on page {page + 1}"
    height = report.page_size[1]
    x, y = (word.x_min + word.x_max) / 2, height - (word.y_min + word.y_max) / 2
    for link in report.links:
        x0, y0, x1, y1 = link.rect
        if link.page == page and min(x0, x1) <= x <= max(x0, x1) and min(y0, y1) <= y <= max(y0, y1):
            return link
    raise AssertionError(f"no link on '{phrase}' on page {page + 1}")


def assert_lands_on_heading(report: PdfReport, link, heading: str) -> None:
    """The link opens the page where `heading` is printed, scrolled to it (within a line or two)."""
    pages = [p for p in report.pages_printing(heading) if report.phrase_box(p, heading) is not None]
    assert link.dest_page in pages, f"the link lands on page {link.dest_page}, '{heading}' is printed on {pages}"
    box = report.phrase_box(link.dest_page, heading)
    printed_top = report.page_size[1] - box.y_min
    assert link.dest_top is not None and abs(link.dest_top - printed_top) < 30, (link.dest_top, printed_top)


def chapter_items(items: list[OutlineItem], expected: list | None = None) -> list[OutlineItem]:
    """The outline's chapter entries: the top-level ones, with a part's (a `PartNode` of `expected`) replaced by its children."""
    if expected is None:
        return list(items)
    found: list[OutlineItem] = []
    for item, node in zip(items, expected):
        found += item.children if isinstance(node, PartNode) else [item]
    return found


def chapter_start_pages(report: PdfReport, expected: list | None = None) -> list[int]:
    return [item.page for item in chapter_items(report.outline, expected)]
