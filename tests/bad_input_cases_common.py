"""What the table cases share: the `Case` record, `run_case`, and the checks of what a reader sees in each format."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from bad_input_cases_readers import _squash, epub_members, epub_not_wellformed, pdf_text, site_text
from bad_input_harness import DEADLINE, Bench, Result

# ---- books ---------------------------------------------------------------------------------------------------------

GOOD = {
    "intro.md": "# Introduction\n\nWelcome. See [the next chapter](next.md#details).\n",
    "next.md": "# Next\n\n## Details\n\nSome details.\n",
}




@dataclass
class Case:
    """One kind of bad input: a good book (`base`), optionally built first (`prebuild`), then `files` and
    `setup` make it bad, then `tools ARGS` runs and is checked (see Bench.expect); `check` adds case checks.

    Strings in args, names, outputs and changes may use {book}, {out}, {work} and {tmp}.
    """

    id: str
    args: tuple[str, ...]
    code: int | tuple[int, ...]
    names: tuple[str, ...] = ()
    files: dict = field(default_factory=dict)
    chapters: list[str] | None = None  # the chapter list's lines (default: every .md of base and files)
    setup: object = None  # callable(bench)
    prebuild: tuple[tuple[str, ...], ...] = ()
    base: dict | None = None  # default: GOOD
    outputs: tuple[str, ...] = ("{out}",)
    changes: tuple[str, ...] = ()
    cwd: str = "{work}"
    deadline: float = DEADLINE
    check: object = None  # callable(bench, result)
    pdf: bool = False  # builds a PDF (slow: only where a PDF is the point)

    def __str__(self) -> str:
        return self.id


def run_case(bench: Bench, case: Case) -> Result:
    places = {"book": bench.book, "out": bench.out, "work": bench.work, "tmp": bench.tmp}
    fmt = lambda values: [str(v).format(**places) for v in values]  # noqa: E731
    base = GOOD if case.base is None else case.base
    bench.write(base)
    for args in case.prebuild:
        bench.good(*fmt(args))
    if case.files or case.chapters is not None:
        files = dict(case.files)
        if case.chapters is not None:
            files.setdefault("chapters-md.txt", "".join(f"{name}\n" for name in fmt(case.chapters)))
        elif "chapters-md.txt" not in files:
            names = [rel for rel in {**base, **files} if isinstance(rel, str) and rel.endswith(".md")]
            files["chapters-md.txt"] = "".join(f"{name}\n" for name in names)
        bench.write(files)
    if case.setup is not None:
        case.setup(bench)
    result = bench.expect(
        *fmt(case.args), code=case.code, names=fmt(case.names), outputs=[Path(p) for p in fmt(case.outputs)],
        changes=[Path(p) for p in fmt(case.changes)], cwd=Path(fmt([case.cwd])[0]), deadline=case.deadline,
        extra=case.check,
    )
    return result


# ---- what a reader sees in each format ----------------------------------------------------------------------------

def epub_text(path: Path) -> str:
    from bs4 import BeautifulSoup

    parts = []
    for name, data in sorted(epub_members(path).items()):
        if name.endswith((".xhtml", ".html")):
            parts.append(BeautifulSoup(data, "lxml").get_text(" "))
    return "\n".join(parts)


def format_text(bench: Bench, fmt: str) -> str:
    if fmt == "html":
        return site_text(bench.out / "html")
    if fmt == "pdf":
        return pdf_text(bench.out / "book.pdf")
    return epub_text(bench.out / "book.epub")


def shows(*texts: str, formats: tuple[str, ...] = ("html",), or_reported: str = ""):
    """A check: every text is readable in every format (LOSS otherwise), unless the command exited 1 and
    reported `or_reported` (a file:line): a limit hit is then reported instead of silently dropping text."""
    def check(bench: Bench, result: Result) -> None:
        if or_reported and result.rc == 1 and or_reported in result.output:
            return
        for fmt in formats:
            text = _squash(format_text(bench, fmt))
            missing = [t for t in texts if _squash(t) not in text]
            assert not missing, f"LOSS (content): the {fmt} output does not show {missing}\n{result.shown()}"
    return check


def epub_valid(bench: Bench, result: Result) -> None:
    """A check: every XML member of the EPUB is well formed."""
    path = bench.out / "book.epub"
    if result.rc in (0, 1):
        assert path.is_file(), f"EPUB: no EPUB at {path}\n{result.shown()}"
        bad = epub_not_wellformed(path)
        assert not bad, f"EPUB: members that are not well-formed XML: {bad[:5]}\n{result.shown()}"


def both(*checks):
    def check(bench: Bench, result: Result) -> None:
        for one in checks:
            one(bench, result)
    return check
