"""Bad inputs of the other commands: check-links (every --format), mv, mv-links, fix-tables, check-style and
check-programs. (serve and check-links --external need servers: they are in test_bad_input.py.)

Exit codes: a bad command-line value (an option, a path that does not exist, a destination mv must refuse) is a
usage error, exit 2, and mv/mv-links change nothing; a problem found in a file (a broken link, a file that is not
UTF-8, a table that cannot be fixed, a script that fails) is exit 1 at file:line. A file the command must refuse to
read (a FIFO, a symlink out of the book) is reported naming it: exit 1 as a problem of that file, or 2 when it was
named on the command line; either way it is never read, never written, and nothing hangs.
"""
from __future__ import annotations

import json
import os

from bad_input_cases_build import _fifo, _symlink
from bad_input_cases_common import Case

LINKS = ("check-links", "--book", "{book}")
BOOK = "{book}"
IN_BOOK = {"cwd": BOOK}


def _chapter(text: str | bytes, name: str = "bad.md") -> dict:
    return {name: text}


def _json_names(rel: str):
    def check(bench, result) -> None:
        data = json.loads(result.stdout)
        assert rel in json.dumps(data), f"MESSAGE: the JSON report does not name {rel}\n{result.shown()}"
    return check


NOT_UTF8 = _chapter(b"# Bad\n\nfine\n\n[x](nope.md) caf\xe9\n")
CHECK_LINKS = [
    Case("links-not-utf8-text", LINKS, 1, names=("bad.md:5",), files=NOT_UTF8, outputs=()),
    Case("links-not-utf8-json", LINKS + ("--format", "json"), 1, files=NOT_UTF8, outputs=(), check=_json_names("bad.md")),
    Case("links-not-utf8-sarif", LINKS + ("--format", "sarif"), 1, files=NOT_UTF8, outputs=(), check=_json_names("bad.md")),
    Case("links-not-utf8-github", LINKS + ("--format", "github"), 1, names=("file=bad.md,line=5",), files=NOT_UTF8, outputs=()),
    Case("links-format-unknown", LINKS + ("--format", "xml"), 2, names=("--format",), outputs=()),
    Case("links-fifo-chapter-json", LINKS + ("--format", "json"), (1, 2), names=("pipe.md",), chapters=["intro.md", "next.md", "pipe.md"], setup=_fifo("pipe.md"), outputs=()),
    Case("links-symlink-outside-sarif", LINKS + ("--format", "sarif"), (1, 2), names=("evil.md",), chapters=["intro.md", "next.md", "evil.md"], setup=_symlink("evil.md", "../secret.md"), outputs=()),
    Case("links-autolinks-20000", LINKS, (0, 1), files=_chapter("# Links\n\n" + " ".join(f"www.example{i}.com" for i in range(20000)) + "\n"), outputs=()),
    Case("links-10000-dotdot-json", LINKS + ("--format", "json"), 1, files=_chapter("# Up\n\n[up](" + "../" * 10000 + "x.md)\n"), outputs=(), check=_json_names("bad.md")),
    Case("links-output-is-chapter", LINKS + ("--output", "{book}/intro.md"), 2, names=("intro.md",), outputs=()),
    Case("links-output-empty", LINKS + ("--output", ""), 2, outputs=()),
    Case("links-output-is-folder", LINKS + ("--output", "{work}"), 2, outputs=()),
    Case("links-jobs-zero", LINKS + ("--jobs", "0"), 2, names=("--jobs",), outputs=()),
    Case("links-exclude-bad-regex", LINKS + ("--external", "--exclude", "["), 2, names=("[",), outputs=()),
    Case("links-changed-since-no-git", LINKS + ("--changed-since", "no-such-rev"), 2, names=("no-such-rev",), outputs=()),
    Case("links-book-is-file", ("check-links", "--book", "{book}/intro.md"), 2, names=("intro.md",), outputs=()),
    Case("links-toml-bad-type", LINKS, 2, names=("book.toml:2",), files={"book.toml": "[links]\nhost_delay = \"soon\"\n"}, outputs=()),
]

# mv and mv-links run in the book folder with relative paths, as an author types them.
MV = [
    Case("mv-dst-outside-root", ("mv", "next.md", "../moved.md"), 2, names=("../moved.md",), outputs=(), cwd=BOOK),
    Case("mv-dst-exists", ("mv", "next.md", "intro.md"), 2, names=("intro.md",), outputs=(), cwd=BOOK),
    Case("mv-dst-inside-src", ("mv", "part", "part/deeper"), 2, names=("part",), files={"part/a.md": "# A\n"}, outputs=(), cwd=BOOK),
    Case("mv-dst-equals-src", ("mv", "next.md", "next.md"), 2, names=("next.md",), outputs=(), cwd=BOOK),
    Case("mv-src-missing", ("mv", "nope.md", "other.md"), 2, names=("nope.md",), outputs=(), cwd=BOOK),
    Case("mv-src-outside-root", ("mv", "../secret.md", "stolen.md"), 2, names=("secret.md",), outputs=(), cwd=BOOK),
    Case("mv-src-is-root", ("mv", ".", "sub"), 2, outputs=(), cwd=BOOK),
    Case("mv-dst-parent-is-file", ("mv", "next.md", "intro.md/next.md"), 2, names=("intro.md",), outputs=(), cwd=BOOK),
    # Read-only: the file and its folder (a read-only file in a writable folder can be replaced by a rename).
    Case("mv-readonly-file-halfway", ("mv", "next.md", "moved/next.md"), (1, 2), names=("c.md",), files={"b.md": "# B\n\n[n](next.md)\n", "locked/c.md": "# C\n\n[n](../next.md#details)\n"}, setup=lambda b: _lock(b, "locked/c.md"), outputs=(), changes=(BOOK,), cwd=BOOK),
    Case("mv-readonly-folder", ("mv", "next.md", "ro/next.md"), (1, 2), names=("ro",), files={"ro/x.txt": "x"}, setup=lambda b: b.readonly(b.book / "ro"), outputs=(), changes=(BOOK,), cwd=BOOK),
    Case("mv-linking-chapter-not-utf8", ("mv", "next.md", "moved.md"), (1, 2), names=("bad.md:3",), files=_chapter(b"# Bad\n\n[n](next.md) caf\xe9\n"), outputs=(), changes=(BOOK,), cwd=BOOK),
    Case("mv-linking-chapter-symlink-outside", ("mv", "next.md", "moved.md"), (0, 1, 2), chapters=["intro.md", "next.md", "evil.md"], setup=lambda b: _outside_linker(b), outputs=(), changes=(BOOK,), cwd=BOOK),
    Case("mv-linking-chapter-fifo", ("mv", "next.md", "moved.md"), (0, 1, 2), chapters=["intro.md", "next.md", "pipe.md"], setup=_fifo("pipe.md"), outputs=(), changes=(BOOK,), cwd=BOOK),
    Case("mv-name-leading-dash", ("mv", "--", "-x.md", "y.md"), 0, files={"-x.md": "# X\n\n[i](intro.md)\n"}, outputs=(), changes=(BOOK,), cwd=BOOK),
    Case("mv-links-nothing-exists", ("mv-links", "nope.md", "gone.md"), 2, names=("gone.md",), outputs=(), cwd=BOOK),
    Case("mv-links-dst-outside-root", ("mv-links", "next.md", "../secret.md"), 2, names=("secret.md",), outputs=(), cwd=BOOK, setup=lambda b: os.unlink(b.book / "next.md")),
    Case("mv-links-src-still-there", ("mv-links", "intro.md", "next.md"), 2, names=("intro.md",), outputs=(), cwd=BOOK),
    Case("mv-links-bad-toml", ("mv-links", "next.md", "moved.md"), 2, names=("book.toml:1",), files={"book.toml": "[book\n"}, outputs=(), cwd=BOOK, setup=lambda b: os.rename(b.book / "next.md", b.book / "moved.md")),
]


def _lock(bench, rel: str) -> None:
    bench.readonly(bench.book / rel)
    bench.readonly((bench.book / rel).parent)


def _outside_linker(bench) -> None:
    """A chapter that is a symlink to a file outside the book that links to next.md: mv must not rewrite it."""
    bench.secret("outside.md", "# Outside\n\n[n](book/next.md) [m](next.md)")
    os.symlink("../outside.md", bench.book / "evil.md")


TABLE = "| a | b |\n|---|---|\n| 1 | 2 |\n"
BROKEN_TABLE = "# T\n\ntext\n| a |\n|---|\n| 1 |\n"
FIX = ("fix-tables",)
STYLE = ("check-style",)
FIX_STYLE = [
    Case("fix-tables-fifo-path", FIX + ("{book}/pipe.md",), (1, 2), names=("pipe.md",), setup=_fifo("pipe.md"), outputs=()),
    Case("fix-tables-fifo-in-folder", FIX + ("{book}",), (0, 1, 2), setup=_fifo("pipe.md"), outputs=(), changes=(BOOK,)),
    Case("fix-tables-symlink-outside", FIX + ("{book}",), (0, 1, 2), setup=lambda b: _outside_table(b), outputs=(), changes=(BOOK,)),
    Case("fix-tables-not-utf8", FIX + ("{book}/bad.md",), 1, names=("bad.md:3",), files=_chapter(b"# T\n\n| caf\xe9 | b |\n|---|---|\n"), outputs=()),
    Case("fix-tables-readonly-file", FIX + ("{book}/locked/bad.md",), (1, 2), names=("bad.md",), files=_chapter(BROKEN_TABLE, "locked/bad.md"), setup=lambda b: _lock(b, "locked/bad.md"), outputs=()),
    Case("fix-tables-huge-file", FIX + ("{book}/huge.md",), (1, 2), names=("huge.md",), setup=lambda b: _huge(b.book / "huge.md"), outputs=()),
    Case("fix-tables-width-negative", FIX + ("--width", "-1", "{book}"), 2, names=("--width",), outputs=()),
    Case("fix-tables-missing-path", FIX + ("{book}/nope.md",), 2, names=("nope.md",), outputs=()),
    Case("fix-tables-5000-rows", FIX + ("--check", "{book}/bad.md"), (0, 1), files=_chapter("# T\n\n" + "| a | b |\n|---|---|\n" + "| 1 | 2 |\n" * 5000), outputs=()),
    Case("fix-tables-tree-1200-deep", FIX + ("--check", "{book}"), (0, 1), setup=lambda b: b.deep_tree("deep", 1200), outputs=()),
    Case("check-style-tree-1200-deep", STYLE + ("{book}",), (0, 1), setup=lambda b: b.deep_tree("deep", 1200), outputs=()),
    Case("fix-tables-folder-symlink-loop", FIX + ("--check", "{book}"), (0, 1), setup=_symlink("loop", "."), outputs=()),
    Case("fix-tables-crlf-bom", FIX + ("{book}/bad.md",), (0, 1), files=_chapter("\ufeff# T\r\n\r\ntext\r\n" + TABLE.replace("\n", "\r\n")), outputs=(), changes=(BOOK,), check=lambda b, r: _keeps_crlf(b)),
    Case("check-style-fifo-path", STYLE + ("{book}/pipe.md",), (1, 2), names=("pipe.md",), setup=_fifo("pipe.md"), outputs=()),
    Case("check-style-fifo-in-folder", STYLE + ("{book}",), (0, 1, 2), setup=_fifo("pipe.md"), outputs=()),
    Case("check-style-not-utf8", STYLE + ("{book}/bad.md",), 1, names=("bad.md:3",), files=_chapter(b"# S\n\ncaf\xe9\n"), outputs=()),
    Case("check-style-huge-file", STYLE + ("{book}/huge.md",), (1, 2), names=("huge.md",), setup=lambda b: _huge(b.book / "huge.md"), outputs=()),
    Case("check-style-folder-symlink-loop", STYLE + ("{book}",), (0, 1), setup=_symlink("loop", "."), outputs=()),
    Case("check-style-long-word", STYLE + ("{book}/bad.md",), (0, 1), files=_chapter("# W\n\n" + "abcdefghij" * 10000 + "\n" + "[" * 20000 + "\n"), outputs=()),
    Case("check-style-symlink-outside", STYLE + ("{book}",), (0, 1, 2), setup=lambda b: _outside_table(b), outputs=()),
]


def _outside_table(bench) -> None:
    bench.secret("outside.md", f"# Outside\n\nwrapped\nline\n{BROKEN_TABLE}")
    os.symlink("../outside.md", bench.book / "evil.md")


def _huge(path) -> None:
    with open(path, "wb") as handle:
        handle.write(b"# Huge\n\n")
        while handle.tell() < 40 << 20:
            handle.write(b"| a | b |\n" * 1000)


def _keeps_crlf(bench) -> None:
    data = (bench.book / "bad.md").read_bytes()
    assert data.count(b"\r\n") >= data.count(b"\n") - 1 and data.startswith(b"\xef\xbb\xbf"), f"LOSS: fix-tables dropped the BOM or the CRLF line ends: {data[:80]!r}"


PROGRAMS = ("check-programs", "--book", "{book}", "--no-shellcheck", "--timeout", "3")
HANGS = "#!/usr/bin/env python3\nimport signal, time\nif __name__ == '__main__':\n    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n    time.sleep(300)\n"
GRANDCHILD = "#!/usr/bin/env python3\nimport subprocess\nif __name__ == '__main__':\n    subprocess.Popen(['sleep', '300'])\n    print('usage: tool')\n"
CHECK_PROGRAMS = [
    Case("programs-script-hangs", PROGRAMS, 1, names=("hang.py",), files={**_chapter("# P\n\n[run](hang.py)\n"), "hang.py": HANGS}, outputs=(), deadline=40),
    Case("programs-grandchild-holds-stdout", PROGRAMS, (0, 1), files={**_chapter("# P\n\n[run](tool.py)\n"), "tool.py": GRANDCHILD}, outputs=(), deadline=40),
    Case("programs-script-symlink-outside", PROGRAMS, (1, 2), names=("run.py",), files=_chapter("# P\n\n[run](run.py)\n"), setup=_symlink("run.py", "../secret.py"), outputs=()),
    Case("programs-script-outside-link", PROGRAMS, 1, names=("bad.md:3",), files=_chapter("# P\n\n[run](../secret.py)\n"), outputs=()),
    Case("programs-script-fifo", PROGRAMS, (1, 2), names=("tool.sh",), files=_chapter("# P\n\n[run](tool.sh)\n"), setup=_fifo("tool.sh"), outputs=()),
    Case("programs-script-not-utf8", PROGRAMS, (0, 1), files={**_chapter("# P\n\n[run](odd.py)\n"), "odd.py": b"#!/usr/bin/env python3\n# caf\xe9\nif __name__ == '__main__':\n    print('usage')\n"}, outputs=()),
    Case("programs-python-missing", PROGRAMS + ("--python", "/nonexistent/python"), 2, names=("/nonexistent/python",), files={**_chapter("# P\n\n[run](ok.py)\n"), "ok.py": "print('hi')\n"}, outputs=()),
    Case("programs-timeout-zero", ("check-programs", "--book", "{book}", "--timeout", "0"), 2, names=("--timeout",), outputs=()),
    Case("programs-jobs-zero", ("check-programs", "--book", "{book}", "--jobs", "0"), 2, names=("--jobs",), outputs=()),
    Case("programs-10000-dotdot", PROGRAMS, 1, names=("bad.md:3",), files=_chapter("# P\n\n[run](" + "../" * 10000 + "x.py)\n"), outputs=()),
    Case("programs-format-unknown", PROGRAMS + ("--format", "yaml"), 2, names=("--format",), outputs=()),
]

CASES = CHECK_LINKS + MV + FIX_STYLE + CHECK_PROGRAMS
