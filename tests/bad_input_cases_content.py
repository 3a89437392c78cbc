"""Bad chapters and bad markdown for `tools build`: special files, links out of the root, broken encodings,
pathological markdown, odd file names.

Exit codes: a chapter the tool must refuse to read (a symlink out of the root, a FIFO, a socket, a folder, a
device, a link loop, a file over the size limit) is a problem in one file of the book: a diagnostic naming it,
exit 1; the chapter list names it too, so a list error at exit 2 is accepted. A reference out of the root
(image, raw HTML, CSS url(), a --local file) is a broken link: exit 1 at file:line. Markdown GitHub renders
(deep nesting, long words, many autolinks, headings or footnotes, BOM, CRLF, odd names) builds with exit 0 and
every word shown; where a limit is still hit, exit 1 naming file:line instead of dropping text.
"""
from __future__ import annotations

import os
import socket

from bad_input_cases_build import ALL, EPUB, HTML, PDF, _fifo, _symlink
from bad_input_cases_common import Case, both, epub_valid, shows

REFUSED = (1, 2)
PROBLEM = 1
FOUND_OR_NOT = (0, 1)


def _chapter(text: str | bytes, name: str = "bad.md") -> dict:
    return {name: text}


def _socket(rel: str):
    def make(bench):
        server = socket.socket(socket.AF_UNIX)
        cwd = os.getcwd()
        os.chdir(bench.book)  # a short relative name: AF_UNIX paths are limited to 108 bytes
        try:
            server.bind(rel)
        finally:
            os.chdir(cwd)
            server.close()
    return make


def _nested_list(depth: int) -> str:
    lines = [f"{'  ' * level}- level {level + 1}" for level in range(depth - 1)]
    lines.append(f"{'  ' * (depth - 1)}- DEEPESTITEM{depth}")
    return "# Deep\n\n" + "\n".join(lines) + f"\n\nAFTERPARAGRAPH{depth} follows the list.\n"


def _with_extra(name: str, text: str) -> dict:
    return {name: text}


UNREADABLE = [
    Case("chapter-symlink-outside", ALL, REFUSED, names=("evil.md",), chapters=["intro.md", "next.md", "evil.md"], setup=_symlink("evil.md", "../secret.md"), pdf=True),
    Case("chapter-symlink-outside-absolute", EPUB, REFUSED, names=("evil.md",), chapters=["intro.md", "next.md", "evil.md"], setup=lambda b: os.symlink(b.tmp / "secret.md", b.book / "evil.md")),
    Case("chapter-in-folder-symlink-outside", HTML, REFUSED, names=("part/inner.md",), chapters=["intro.md", "next.md", "part/inner.md"], setup=_symlink("part", "../secret_dir")),
    Case("chapter-symlink-dev-zero", HTML, REFUSED, names=("zero.md",), chapters=["intro.md", "next.md", "zero.md"], setup=_symlink("zero.md", "/dev/zero")),
    Case("chapter-symlink-etc-passwd", EPUB, REFUSED, names=("passwd.md",), chapters=["intro.md", "next.md", "passwd.md"], setup=_symlink("passwd.md", "/etc/passwd")),
    Case("chapter-fifo-html", HTML, REFUSED, names=("pipe.md",), chapters=["intro.md", "next.md", "pipe.md"], setup=_fifo("pipe.md")),
    Case("chapter-fifo-all", ALL, REFUSED, names=("pipe.md",), chapters=["intro.md", "next.md", "pipe.md"], setup=_fifo("pipe.md"), pdf=True),
    Case("chapter-fifo-unlisted", HTML, FOUND_OR_NOT, setup=_fifo("stray.md")),
    Case("chapter-socket", HTML, REFUSED, names=("sock.md",), chapters=["intro.md", "next.md", "sock.md"], setup=_socket("sock.md")),
    Case("chapter-symlink-loop", HTML, REFUSED, names=("loop.md",), chapters=["intro.md", "next.md", "loop.md"], setup=lambda b: (os.symlink("loop2.md", b.book / "loop.md"), os.symlink("loop.md", b.book / "loop2.md"))),
    Case("chapter-dangling-symlink", HTML, REFUSED, names=("gone.md",), chapters=["intro.md", "next.md", "gone.md"], setup=_symlink("gone.md", "nowhere.md")),
    # A folder tree deeper than Python's recursion limit (os.walk recurses per level on 3.11): found or not, never a crash.
    Case("folder-tree-1200-deep-html", HTML, FOUND_OR_NOT, setup=lambda b: b.deep_tree("deep", 1200)),
    Case("folder-tree-1200-deep-links", ("check-links", "--book", "{book}"), FOUND_OR_NOT, setup=lambda b: b.deep_tree("deep", 1200), outputs=()),
    Case("folder-symlink-loop", HTML, FOUND_OR_NOT, setup=_symlink("loop", ".")),
    Case("folder-symlink-to-parent", HTML, FOUND_OR_NOT, setup=_symlink("up", "..")),
    Case("chapter-huge", HTML, REFUSED, names=("huge.md",), chapters=["intro.md", "next.md", "huge.md"], setup=lambda b: _big(b.book / "huge.md", 40 << 20)),
    Case("chapter-not-utf8-middle", HTML, PROBLEM, names=("bad.md:5",), files=_chapter(b"# Bad\n\nline three\n\nfive \xff\xfe here\n\nseven\n")),
    Case("chapter-utf16", HTML, PROBLEM, names=("bad.md:1",), files=_chapter("# Wide\n\ntext\n".encode("utf-16"))),
    Case("chapter-encoded-surrogate", HTML, PROBLEM, names=("bad.md:3",), files=_chapter(b"# S\n\nlone \xed\xa0\x80 surrogate\n")),
    Case("chapter-latin1", EPUB, PROBLEM, names=("bad.md:3",), files=_chapter(b"# Caf\n\ncaf\xe9 au lait\n")),
]


def _big(path, size: int) -> None:
    with open(path, "wb") as handle:
        handle.write(b"# Huge\n\n")
        line = b"word " * 200 + b"\n\n"
        while handle.tell() < size:
            handle.write(line)


ENCODINGS = [
    Case("chapter-bom", HTML, 0, files=_chapter("\ufeff# Hello\n\nBOMTEXT\n"), check=lambda b, r: _has_id(b, "bad.html", "hello")),
    Case("chapter-crlf", EPUB, 0, files=_chapter("# Crlf\r\n\r\n- one\r\n- CRLFITEM\r\n\r\n```\r\ncode\r\n```\r\n"), check=both(epub_valid, shows("CRLFITEM", formats=("epub",)))),
    Case("chapter-cr-only", HTML, 0, files=_chapter("# Cr\r\rCRONLY\r")),
    Case("chapter-nul-bytes", EPUB, FOUND_OR_NOT, files=_chapter(b"# Nul\n\nbefore \x00 after NULTEXT\n"), check=epub_valid),
    Case("chapter-control-chars", EPUB, FOUND_OR_NOT, files=_chapter("# Ctl\n\nbell \x07 esc \x1b[31m back \x08 CTLTEXT\n"), check=epub_valid),
    Case("chapter-odd-unicode", EPUB, 0, files=_chapter("# Emoji 📘 \u202eRTL\u202c zero\u200bwidth\n\n## Ünïcödé ✓\n\nUNITEXT \ufeff inner BOM, \U0001F600, \u0301 combining\n"), check=both(epub_valid, shows("UNITEXT", formats=("epub",)))),
    Case("chapter-empty-all", ALL, 0, files=_chapter(b""), check=epub_valid, pdf=True),
    Case("chapter-empty-first-epub", EPUB, 0, files=_chapter(b""), chapters=["bad.md", "intro.md", "next.md"], check=epub_valid),
    Case("chapter-whitespace-only", EPUB, 0, files=_chapter("\n   \n\t\n"), check=epub_valid),
    Case("chapter-front-matter-only", EPUB, 0, files=_chapter("---\ntitle: x\n---\n"), check=epub_valid),
    Case("chapter-comment-only", EPUB, 0, files=_chapter("<!-- nothing here -->\n"), check=epub_valid),
]


def _has_id(bench, page: str, anchor: str) -> None:
    html = (bench.out / "html" / page).read_text(encoding="utf-8")
    assert f'id="{anchor}"' in html, f"MESSAGE: the BOM broke the first heading: no id=\"{anchor}\" in {page}"


PATHOLOGICAL = [
    Case("nesting-12-all", ALL, 0, files=_chapter(_nested_list(12)), check=shows("DEEPESTITEM12", "AFTERPARAGRAPH12", formats=("html", "pdf", "epub")), pdf=True),
    Case("nesting-50-html-epub", EPUB, (0, 1), files=_chapter(_nested_list(50)), check=shows("DEEPESTITEM50", "AFTERPARAGRAPH50", formats=("epub",), or_reported="bad.md:")),
    Case("nesting-50-site", HTML, (0, 1), files=_chapter(_nested_list(50)), check=shows("DEEPESTITEM50", "AFTERPARAGRAPH50", or_reported="bad.md:")),
    Case("blockquote-50", HTML, (0, 1), files=_chapter("# Q\n\n" + "> " * 50 + "DEEPQUOTE\n\nAFTERQUOTE\n"), check=shows("DEEPQUOTE", "AFTERQUOTE", or_reported="bad.md:")),
    Case("emphasis-nesting-deep", HTML, (0, 1), files=_chapter("# E\n\n" + "*a " * 3000 + "EMPHTEXT" + " a*" * 3000 + "\n"), check=shows("EMPHTEXT", or_reported="bad.md:")),
    Case("word-100k-pdf", PDF, 0, files=_chapter("# Long\n\n" + "abcdefghij" * 10000 + "\n\nAFTERWORD\n"), pdf=True, deadline=60),
    Case("word-100k-html", HTML, 0, files=_chapter("# Long\n\n" + "abcdefghij" * 10000 + "\n\nAFTERWORD\n"), check=shows("AFTERWORD")),
    Case("autolinks-20000-html", HTML, 0, files=_chapter("# Links\n\n" + " ".join(f"www.example{i}.com" for i in range(20000)) + "\n")),
    Case("brackets-50000", HTML, (0, 1), files=_chapter("# B\n\n" + "[" * 50000 + "x" + "]" * 50000 + "\n\nBRACKETEND\n"), check=shows("BRACKETEND")),
    Case("headings-10000-identical", HTML, 0, files=_chapter("# Same\n\n" + "## Same\n\n" * 10000), check=lambda b, r: _has_id(b, "bad.html", "same-10000")),
    Case("footnotes-5000", HTML, 0, files=_chapter("# F\n\n" + "".join(f"Text{i}[^{i}].\n\n" for i in range(5000)) + "".join(f"[^{i}]: NOTE{i}\n" for i in range(5000))), check=shows("NOTE4999")),
    Case("reference-definitions-loop", HTML, FOUND_OR_NOT, files=_chapter("# R\n\n" + "".join(f"[r{i}][r{i + 1}] " for i in range(3000)) + "\n\n" + "".join(f"[r{i}]: <#r{(i + 1) % 3000}>\n" for i in range(3000)))),
    Case("link-10000-dotdot", HTML, PROBLEM, names=("bad.md:3",), files=_chapter("# Up\n\n[up](" + "../" * 10000 + "secret.md)\n")),
    Case("link-javascript-url", HTML, FOUND_OR_NOT, files=_chapter("# J\n\n[click](javascript:alert(1)) [c2](JaVaScRiPt:alert(2)) <javascript:alert(3)> [r]\n\n[r]: javascript:alert(4)\n"), check=lambda b, r: _no_javascript_href(b)),
    Case("unclosed-code-fence", EPUB, 0, files=_chapter("# U\n\n```python\nFENCEDTEXT <b> & </i>\n"), check=both(epub_valid, shows("FENCEDTEXT", formats=("epub",)))),
    Case("unclosed-html-comment", EPUB, FOUND_OR_NOT, files=_chapter("# C\n\nbefore\n\n<!-- never closed\n\nhidden\n"), check=epub_valid),
    Case("unclosed-raw-html", EPUB, FOUND_OR_NOT, files=_chapter("# H\n\n<div><span><table><tr><td>RAWTEXT\n\nafter <b>bold\n"), check=epub_valid),
    Case("raw-html-script", EPUB, FOUND_OR_NOT, files=_chapter("# S\n\n<script>if (a < b && c) { alert('x') }</script>\n\nSCRIPTAFTER\n"), check=epub_valid),
    Case("table-10000-columns", HTML, (0, 1), files=_chapter("# T\n\n" + "|a" * 10000 + "|\n" + "|-" * 10000 + "|\n" + "|1" * 10000 + "|\n")),
    Case("line-of-backticks", HTML, 0, files=_chapter("# B\n\n" + "`a " * 30000 + "\n")),
]


def _no_javascript_href(bench) -> None:
    for page in (bench.out / "html").rglob("*.html"):
        text = page.read_text(encoding="utf-8").lower()
        assert 'href="javascript:' not in text, f"UNSAFE: {page.name} turns a markdown link into a javascript: URL (GitHub drops it)"


OUTSIDE = [
    Case("image-dotdot-secret-all", ALL, PROBLEM, names=("bad.md:3",), files=_chapter("# I\n\n![x](../secret.png)\n"), pdf=True),
    Case("raw-img-dotdot-secret-all", ALL, PROBLEM, names=("bad.md:3",), files=_chapter("# I\n\n<img src=\"../secret.png\">\n"), pdf=True),
    Case("raw-img-svg-secret-pdf", PDF, PROBLEM, names=("bad.md:3",), files=_chapter("# I\n\n<img src=\"../secret.svg\">\n"), pdf=True),
    Case("raw-img-etc-passwd-pdf", PDF, PROBLEM, names=("bad.md:3",), files=_chapter("# I\n\n<img src=\"/etc/passwd\">\n"), pdf=True),
    Case("raw-img-file-url-pdf", PDF, PROBLEM, names=("bad.md:3",), setup=lambda b: _write(b, "bad.md", f"# I\n\n<img src=\"file:///etc/passwd\"> and <img src=\"file://{b.tmp}/secret.png\">\n"), pdf=True),
    Case("image-file-url-epub", EPUB, PROBLEM, names=("bad.md:3",), setup=lambda b: _write(b, "bad.md", f"# I\n\n![x](file://{b.tmp}/secret.png)\n")),
    Case("image-symlink-outside-all", ALL, REFUSED, names=("img.png",), files=_chapter("# I\n\n![x](img.png)\n"), setup=_symlink("img.png", "../secret.png"), pdf=True),
    Case("css-url-style-attribute-pdf", PDF, PROBLEM, names=("bad.md:3",), files=_chapter("# C\n\n<div style=\"background-image: url('../secret.png'); width: 50px; height: 50px\">x</div>\n"), pdf=True),
    Case("css-import-raw-style-pdf", PDF, PROBLEM, names=("bad.md:3",), files=_chapter("# C\n\n<style>@import url(\"../secret.css\");</style>\n\nCSSTEXT\n"), pdf=True),
    Case("raw-link-stylesheet-pdf", PDF, PROBLEM, names=("bad.md:3",), files=_chapter("# C\n\n<link rel=\"stylesheet\" href=\"../secret.css\">\n\nCSSTEXT\n"), pdf=True),
    Case("raw-object-iframe-epub", EPUB, PROBLEM, names=("bad.md:3",), files=_chapter("# O\n\n<object data=\"../secret.svg\"></object><iframe src=\"../secret.md\"></iframe><embed src=\"../secret.txt\">\n")),
    Case("link-outside-local-copy", HTML + ("--local",), PROBLEM, names=("bad.md:3",), files=_chapter("# L\n\n[data](../secret.txt)\n")),
    Case("link-symlink-outside-local-copy", HTML + ("--local",), REFUSED, names=("data.txt",), files=_chapter("# L\n\n[data](data.txt)\n"), setup=_symlink("data.txt", "../secret.txt")),
    Case("link-folder-symlink-outside-local", HTML + ("--local",), REFUSED, names=("bad.md:3",), files=_chapter("# L\n\n[all](stuff/)\n"), setup=_symlink("stuff", "../secret_dir")),
    Case("image-absolute-path-in-book-epub", EPUB, (0, 1), setup=lambda b: _write(b, "bad.md", f"# I\n\n![x]({b.tmp}/secret.png)\n")),
]


def _write(bench, rel: str, text: str) -> None:
    (bench.book / rel).write_text(text, encoding="utf-8")
    listed = (bench.book / "chapters-md.txt").read_text(encoding="utf-8")
    if rel not in listed.split("\n"):
        (bench.book / "chapters-md.txt").write_text(listed + rel + "\n", encoding="utf-8")


def _distinct_or_reported(name: str, *texts: str, formats=("html",)):
    """Colliding page names: distinct pages that show every chapter (exit 0), or an error naming the file."""
    def check(bench, result) -> None:
        if result.rc == 0:
            shows(*texts, formats=formats)(bench, result)
            if "epub" in formats:
                epub_valid(bench, result)
        else:
            assert name in result.output, f"MESSAGE: a page-name collision reported without naming {name!r}\n{result.shown()}"
    return check


NAMES = [
    Case("names-odd-characters-html", HTML, 0, files={"my chapter.md": "# Space\n\nSPACETEXT [h](c%23.md) [q](<what%3F.md>)\n", "c#.md": "# Hash\n\nHASHTEXT\n", "100%.md": "# Pct\n\nPCTTEXT\n", "what?.md": "# Q\n\nQTEXT\n", "it's \"quoted\".md": "# Quote\n\nQUOTETEXT\n"}, check=shows("SPACETEXT", "HASHTEXT", "PCTTEXT", "QTEXT", "QUOTETEXT")),
    Case("names-odd-characters-epub", EPUB, 0, files={"my chapter.md": "# Space\n\nSPACETEXT\n", "c#.md": "# Hash\n\nHASHTEXT\n", "100%.md": "# Pct\n\nPCTTEXT\n", "what?.md": "# Q\n\nQTEXT\n", "a&b<c>.md": "# Amp\n\nAMPTEXT\n"}, check=both(epub_valid, shows("SPACETEXT", "HASHTEXT", "PCTTEXT", "QTEXT", "AMPTEXT", formats=("epub",)))),
    Case("name-emoji", EPUB, 0, files={"📘 book.md": "# Emoji\n\nEMOJITEXT\n"}, check=both(epub_valid, shows("EMOJITEXT", formats=("epub",)))),
    Case("name-newline-unlisted", HTML, FOUND_OR_NOT, files=_chapter("# N\n\n[odd](<a%0Ab.md>)\n"), setup=lambda b: (b.book / "a\nb.md").write_text("# odd\n")),
    Case("name-not-utf8-unlisted", HTML, FOUND_OR_NOT, setup=lambda b: open(os.path.join(os.fsencode(b.book), b"caf\xe9.md"), "wb").write(b"# x\n")),
    Case("name-very-long", HTML, (0, 1, 2), files={"x" * 250 + ".md": "# Long name\n\nLONGNAMETEXT\n"}, check=lambda b, r: r.rc != 0 or shows("LONGNAMETEXT")(b, r)),
    Case("pages-collide-md-markdown", HTML, (0, 1, 2), files={"a.md": "# A\n\nFIRSTPAGE\n", "a.markdown": "# A2\n\nSECONDPAGE\n"}, chapters=["intro.md", "a.md", "a.markdown"], check=_distinct_or_reported("a.m", "FIRSTPAGE", "SECONDPAGE")),
    Case("pages-collide-epub", EPUB, (0, 1, 2), files={"a.md": "# A\n\nFIRSTPAGE\n", "a.markdown": "# A2\n\nSECONDPAGE\n"}, chapters=["intro.md", "a.md", "a.markdown"], check=_distinct_or_reported("a.m", "FIRSTPAGE", "SECONDPAGE", formats=("epub",))),
    Case("chapter-named-404", HTML, (0, 1, 2), files={"404.md": "# Not found story\n\nCHAPTER404TEXT\n"}, check=_distinct_or_reported("404.md", "CHAPTER404TEXT")),
    Case("chapter-named-index", HTML, (0, 1, 2), files={"index.md": "# Index chapter\n\nCHAPTERINDEXTEXT\n"}, check=_distinct_or_reported("index.md", "CHAPTERINDEXTEXT")),
    Case("chapter-named-search", HTML, (0, 1, 2), files={"search.md": "# Search chapter\n\nCHAPTERSEARCHTEXT\n", "assets/style.md": "# Style\n\nSTYLECHAPTER\n"}, check=_distinct_or_reported(".md", "CHAPTERSEARCHTEXT", "STYLECHAPTER")),
]

CASES = UNREADABLE + ENCODINGS + PATHOLOGICAL + OUTSIDE + NAMES
