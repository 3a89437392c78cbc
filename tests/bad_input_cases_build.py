"""Bad inputs of `tools build`: output paths, the command line, book.toml, the chapter list.

Exit codes (the contract): 2 for a usage or configuration error (a command-line value, book.toml, an unusable
output path or book root), 1 for a problem found in the book that does not stop the build. A chapter-list entry
that is wrong (missing, outside the root, a folder) is a list error the issue wants at exit 2, while today's
tool reports it as a book problem at exit 1 and builds the rest: both are accepted, the file:line is required.
"""
from __future__ import annotations

import os

from bad_input_cases_common import Case, both, epub_valid, shows

HTML = ("build", "html", "--book", "{book}", "--out", "{out}/html")
PDF = ("build", "pdf", "--book", "{book}", "--out", "{out}/book.pdf")
EPUB = ("build", "epub", "--book", "{book}", "--out", "{out}/book.epub")
ALL = ("build", "all", "--book", "{book}", "--out", "{out}", "-j", "2")
LIST_ERROR = (1, 2)


def _readonly(rel: str):
    return lambda bench: bench.readonly(bench.tmp / rel)


def _fifo(rel: str):
    return lambda bench: os.mkfifo(bench.book / rel)


def _symlink(rel: str, target: str):
    def make(bench):
        (bench.book / rel).parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, bench.book / rel)
    return make


def _toml(text: str | bytes) -> dict:
    return {"book.toml": text}


# Output paths: the issue's first deliverable. Refusals are usage errors: exit 2, and nothing anywhere changes
# (the harness compares the whole temp folder, the current folder with the user's notes.txt included).
OUTPUTS = [
    Case("out-empty-html", ("build", "html", "--book", "{book}", "--out", ""), 2),
    Case("out-empty-pdf", ("build", "pdf", "--book", "{book}", "--out", ""), 2),
    Case("out-empty-epub", ("build", "epub", "--book", "{book}", "--out", ""), 2),
    Case("out-empty-all", ("build", "all", "--book", "{book}", "--out", ""), 2),
    Case("out-is-book-root-html", ("build", "html", "--book", "{book}", "--out", "{book}"), 2, names=("{book}",)),
    Case("out-is-book-root-all", ("build", "all", "--book", "{book}", "--out", "{book}"), 2, names=("{book}",)),
    Case("out-is-book-parent-html", ("build", "html", "--book", "{book}", "--out", "{tmp}"), 2, names=("{tmp}",)),
    Case("out-is-cwd-dot", ("build", "html", "--book", "{book}", "--out", "."), 2),
    Case("out-is-user-file-pdf", ("build", "pdf", "--book", "{book}", "--out", "{work}/notes.txt"), 2, names=("notes.txt",)),
    Case("out-is-user-file-html", ("build", "html", "--book", "{book}", "--out", "{work}/notes.txt"), 2, names=("notes.txt",)),
    Case("out-is-chapter-epub", ("build", "epub", "--book", "{book}", "--out", "{book}/intro.md"), 2, names=("intro.md",)),
    Case("out-is-user-folder", ("build", "html", "--book", "{book}", "--out", "{work}"), 2, names=("{work}",)),
    Case("out-symlink-to-outside-folder", ("build", "html", "--book", "{book}", "--out", "{book}/site"), 2, names=("site",), setup=_symlink("site", "../secret_dir")),
    Case("out-readonly-folder-html", HTML, 2, names=("out",), prebuild=(HTML,), setup=_readonly("out")),
    Case("out-readonly-folder-pdf", PDF, 2, names=("out",), prebuild=(PDF,), setup=_readonly("out"), pdf=True),
    Case("out-readonly-file-epub", EPUB, 2, names=("book.epub",), prebuild=(EPUB,), setup=lambda b: (b.readonly(b.out / "book.epub"), b.readonly(b.out))),
    # An output inside the book root is allowed and never read back as sources: a second build sees the same book.
    Case("out-inside-root-rebuilt", ("build", "html", "--book", "{book}", "--out", "{book}/_build/html"), 0,
         prebuild=(("build", "html", "--book", "{book}", "--out", "{book}/_build/html"),), outputs=("{book}/_build",),
         check=lambda b, r: _no_page_from_output(b)),
]


def _no_page_from_output(bench) -> None:
    pages = sorted(p.relative_to(bench.book / "_build/html").as_posix() for p in (bench.book / "_build/html").rglob("*.html"))
    assert not any(p.startswith("_build") for p in pages), f"LOSS: the previous output was read back as sources: {pages}"


# The command line: click's usage errors are exit 2 and name the option.
COMMAND_LINE = [
    Case("book-missing", ("build", "html", "--book", "{tmp}/nope", "--out", "{out}/html"), 2, names=("nope",)),
    Case("book-is-file", ("build", "html", "--book", "{book}/intro.md", "--out", "{out}/html"), 2, names=("intro.md",)),
    Case("book-empty-folder", ("build", "html", "--book", "{book}/empty", "--out", "{out}/html"), 2, names=("empty",), setup=lambda b: (b.book / "empty").mkdir()),
    Case("format-unknown", ("build", "docx", "--book", "{book}", "--out", "{out}/x"), 2, names=("docx",)),
    Case("jobs-zero", HTML + ("--jobs", "0"), 2, names=("--jobs",)),
    Case("jobs-negative", HTML + ("--jobs", "-1"), 2, names=("--jobs",)),
    Case("jobs-not-a-number", HTML + ("--jobs", "many"), 2, names=("--jobs",)),
    Case("jobs-huge", HTML + ("--jobs", "100000"), (0, 2)),  # capped (0) or refused (2), never 100,000 forks
    Case("option-unknown", HTML + ("--colour",), 2, names=("--colour",)),
]

# book.toml: a configuration error is exit 2 and names book.toml:line; BOM and CRLF are accepted (exit 0).
TOML = [
    Case("toml-syntax", HTML, 2, names=("book.toml:2",), files=_toml("[book]\ntitle = \n"), prebuild=(HTML,)),
    Case("toml-not-utf8", HTML, 2, names=("book.toml:2",), files=_toml(b"[book]\ntitle = \"caf\xe9\"\n"), prebuild=(HTML,)),
    Case("toml-nul-byte", HTML, 2, names=("book.toml:2",), files=_toml(b"[book]\ntitle = \"a\x00b\"\n")),
    Case("toml-bom", HTML, 0, files=_toml("\ufeff[book]\ntitle = \"Bommed Title\"\n"), check=shows("Bommed Title")),
    Case("toml-crlf", HTML, 0, files=_toml("[book]\r\ntitle = \"Crlf Title\"\r\n"), check=shows("Crlf Title")),
    Case("toml-unknown-table", HTML, 2, names=("book.toml:3",), files=_toml("[book]\ntitle = \"T\"\n[output]\nx = 1\n")),
    Case("toml-unknown-key", HTML, 2, names=("book.toml:3",), files=_toml("[book]\ntitle = \"T\"\ntitel = \"T\"\n")),
    Case("toml-title-number", HTML, 2, names=("book.toml:2",), files=_toml("[book]\ntitle = 5\n")),
    Case("toml-authors-numbers", EPUB, 2, names=("book.toml:2",), files=_toml("[book]\nauthors = [1, 2]\n")),
    Case("toml-authors-table", EPUB, 2, names=("book.toml:2",), files=_toml("[book]\nauthors = {name = \"x\"}\n")),
    Case("toml-language-list", EPUB, 2, names=("book.toml:2",), files=_toml("[book]\nlanguage = [\"en\"]\n")),
    Case("toml-title-control-chars", EPUB, (0, 2), files=_toml("[book]\ntitle = \"Bad\\u0007\\u001b[31mTitle\\u0000\"\n"), check=epub_valid),
    Case("toml-cover-missing", EPUB, 2, names=("book.toml:2",), files=_toml("[book]\ncover = \"images/nope.png\"\n")),
    Case("toml-cover-outside", EPUB, 2, names=("book.toml:2",), files=_toml("[book]\ncover = \"../secret.png\"\n")),
    Case("toml-cover-absolute", EPUB, 2, names=("book.toml:2",), files=_toml("[book]\ncover = \"/etc/passwd\"\n")),
    Case("toml-cover-symlink-outside", EPUB, (1, 2), names=("cover.png",), files=_toml("[book]\ncover = \"cover.png\"\n"), setup=_symlink("cover.png", "../secret.png")),
    Case("toml-cover-folder", EPUB, 2, names=("book.toml:2",), files={**_toml("[book]\ncover = \"images\"\n"), "images/a.txt": "x"}),
    Case("toml-cover-fifo", EPUB, (1, 2), names=("cover.png",), files=_toml("[book]\ncover = \"cover.png\"\n"), setup=_fifo("cover.png")),
    Case("toml-chapters-number", HTML, 2, names=("book.toml:2",), files=_toml("[book]\nchapters = 3\n")),
    Case("toml-chapters-outside", HTML, 2, names=("book.toml:2",), files=_toml("[book]\nchapters = \"../secret.md\"\n")),
    Case("toml-chapters-missing", HTML, 2, names=("nope.txt",), files=_toml("[book]\nchapters = \"nope.txt\"\n")),
    Case("toml-output-number", ("build", "html", "--book", "{book}"), 2, names=("book.toml:2",), files=_toml("[book]\noutput = 7\n")),
    Case("toml-links-timeout-string", HTML, 2, names=("book.toml:2",), files=_toml("[links]\ntimeout = \"fast\"\n")),
    Case("toml-links-timeout-negative", HTML, 2, names=("book.toml:2",), files=_toml("[links]\ntimeout = -1\n")),
    Case("toml-links-retries-float", HTML, 2, names=("book.toml:2",), files=_toml("[links]\nretries = 1.5\n")),
    Case("toml-links-exclude-bad-regex", HTML, 2, names=("book.toml:2",), files=_toml("[links]\nexclude = [\"[\"]\n")),
    Case("toml-links-exclude-numbers", HTML, 2, names=("book.toml:2",), files=_toml("[links]\nexclude = [1, 2]\n")),
    Case("toml-book-not-a-table", HTML, 2, names=("book.toml:1",), files=_toml("book = \"x\"\n")),
    Case("toml-huge", HTML, 2, names=("book.toml",), files=_toml("# " + "x" * 1000 + "\n") , setup=lambda b: _grow(b.book / "book.toml", 3 << 20)),
    Case("toml-fifo", HTML, 2, names=("book.toml",), setup=_fifo("book.toml")),
    Case("toml-folder", HTML, 2, names=("book.toml",), setup=lambda b: (b.book / "book.toml").mkdir()),
    Case("toml-symlink-outside", HTML, 2, names=("book.toml",), setup=_symlink("book.toml", "../secret.txt")),
    Case("toml-symlink-dev-zero", HTML, 2, names=("book.toml",), setup=_symlink("book.toml", "/dev/zero")),
]


def _grow(path, size: int) -> None:
    with open(path, "ab") as handle:
        line = b"# " + b"x" * 1021 + b"\n"
        while handle.tell() < size:
            handle.write(line)


# The chapter list: a list that cannot be read is exit 2 naming it; a bad entry names chapters-md.txt:line.
CHAPTER_LIST = [
    Case("list-not-utf8", HTML, 2, names=("chapters-md.txt:2",), files={"chapters-md.txt": b"intro.md\nn\xe9xt.md\n"}, prebuild=(HTML,)),
    Case("list-utf16", HTML, 2, names=("chapters-md.txt",), files={"chapters-md.txt": "intro.md\nnext.md\n".encode("utf-16")}),
    Case("list-bom", HTML, 0, files={"chapters-md.txt": "\ufeffintro.md\nnext.md\n"}, check=shows("Welcome.", "Some details.")),
    Case("list-crlf", HTML, 0, files={"chapters-md.txt": "intro.md\r\nnext.md\r\n"}, check=shows("Welcome.", "Some details.")),
    Case("list-absolute-path", HTML, LIST_ERROR, names=("chapters-md.txt:3",), chapters=["intro.md", "next.md", "/etc/passwd"]),
    Case("list-absolute-in-book", HTML, LIST_ERROR, names=("chapters-md.txt:3",), chapters=["intro.md", "next.md", "{book}/intro.md"]),
    Case("list-dotdot", HTML, LIST_ERROR, names=("chapters-md.txt:3",), chapters=["intro.md", "next.md", "../secret.md"]),
    Case("list-dotdot-hidden", HTML, LIST_ERROR, names=("chapters-md.txt:3",), chapters=["intro.md", "next.md", "sub/../../secret.md"], files={"sub/x.txt": "x"}),
    Case("list-folder-entry", HTML, LIST_ERROR, names=("chapters-md.txt:3",), chapters=["intro.md", "next.md", "part.md"], setup=lambda b: (b.book / "part.md").mkdir()),
    Case("list-duplicate", HTML, (0, 1, 2), names=("chapters-md.txt:3",), chapters=["intro.md", "next.md", "intro.md"]),
    Case("list-missing-entry", HTML, LIST_ERROR, names=("chapters-md.txt:2",), chapters=["intro.md", "nope.md", "next.md"]),
    Case("list-only-comments", HTML, 2, names=("chapters-md.txt",), chapters=["# nothing", ""]),
    Case("list-nul-in-entry", HTML, LIST_ERROR, names=("chapters-md.txt:2",), files={"chapters-md.txt": b"intro.md\nne\x00xt.md\n"}),
    Case("list-rtl-override-entry", HTML, LIST_ERROR, names=("chapters-md.txt:3",), chapters=["intro.md", "next.md", "\u202edm.live.md"]),
    Case("list-very-long-entry", HTML, LIST_ERROR, names=("chapters-md.txt:3",), chapters=["intro.md", "next.md", "x" * 5000 + ".md"]),
    Case("list-fifo", HTML, 2, names=("chapters-md.txt",), files={"chapters-md.txt": "intro.md\n"}, setup=lambda b: (os.unlink(b.book / "chapters-md.txt"), os.mkfifo(b.book / "chapters-md.txt"))),
    Case("list-symlink-outside", HTML, 2, names=("chapters-md.txt",), files={"chapters-md.txt": "intro.md\n"}, setup=lambda b: (os.unlink(b.book / "chapters-md.txt"), os.symlink("../secret.txt", b.book / "chapters-md.txt"))),
    Case("list-huge", HTML, 2, names=("chapters-md.txt",), setup=lambda b: _grow(b.book / "chapters-md.txt", 3 << 20)),
    Case("list-entry-leading-dash", HTML, 0, files={"-rf.md": "# Dash\n\nDASHTEXT\n"}, check=shows("DASHTEXT")),
    Case("list-config-error-keeps-pdf", PDF, 2, names=("book.toml:2",), prebuild=(PDF,), files=_toml("[book]\ntitle = \"a\" \"b\"\n"), pdf=True),
    Case("list-config-error-keeps-all", ALL, 2, names=("chapters-md.txt:1",), prebuild=(ALL,), files={"chapters-md.txt": b"\xff\xfe\n"}, pdf=True),
    Case("list-config-error-keeps-epub", EPUB, 2, names=("book.toml:2",), prebuild=(EPUB,), files=_toml("[book]\nauthors = [1]\n"), check=both()),
]

CASES = OUTPUTS + COMMAND_LINE + TOML + CHAPTER_LIST
