"""One pipeline, one parse per chapter: `tools build all` parses each chapter exactly once, serially or in forked
workers, with or without the cache; formats come from one registry, which a format of one's own joins.

Parses are counted through TOOLS_PARSE_LOG: the one parse function (`tools.book.load.parse_text`) appends the process id
and the chapter's path to that file, from forked workers too. The builds run the real CLI in a subprocess."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from conftest import REPO, require_tool
from tools.build import chapter_pool
from tools.cli import main
from tools.render import registry as formats

CHAPTERS = 10  # more than parallel.MIN_ITEMS, so that -j 2 parses in workers


@pytest.fixture(scope="module")
def book(tmp_path_factory) -> Path:
    sys.path.insert(0, str(REPO / "scripts"))
    from gen_large_book import generate

    root = tmp_path_factory.mktemp("pipeline") / "book"
    generate(root, chapters=CHAPTERS, sections=2)
    return root


def chapter_paths(root: Path) -> list[str]:
    return [line for line in (root / "chapters-md.txt").read_text().splitlines() if line.strip()]


def build(root: Path, out: Path, *args: str, cache: Path, fmt: str = "all") -> tuple[str, Counter, set[str]]:
    """Run `tools build FORMAT`; returns its process id, how often each chapter was parsed, and by which processes."""
    log = out.parent / f"{out.name}.parses"
    env = dict(os.environ, TOOLS_PARSE_LOG=str(log), BOOK_CACHE_DIR=str(cache), PYTHONPATH=str(REPO), SOURCE_DATE_EPOCH="1700000000")
    with subprocess.Popen([sys.executable, "-m", "tools", "build", fmt, "--book", str(root), "--out", str(out), *args],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=out.parent) as run:
        output, _ = run.communicate(timeout=600)
    assert run.returncode == 0, output
    lines = [line.split(" ", 1) for line in log.read_text().splitlines()] if log.exists() else []
    return str(run.pid), Counter(path for _, path in lines), {pid for pid, _ in lines}


def pdf_text(path: Path) -> str:
    return subprocess.run([require_tool("pdftotext"), str(path), "-"], capture_output=True, text=True, check=True).stdout


def outputs(out: Path) -> dict[str, object]:
    """What a reader gets from `build all`, without the build's time: site pages, EPUB chapters, the PDF's text."""
    site = {p.relative_to(out / "html").as_posix(): re.sub(r"[Bb]uilt \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", p.read_text(errors="replace"))
            for p in (out / "html").rglob("*") if p.is_file()}
    with zipfile.ZipFile(out / "book.epub") as archive:
        epub = {name: archive.read(name) for name in archive.namelist() if name.endswith(".xhtml")}
    return {"site": site, "epub": epub, "pdf": pdf_text(out / "book.pdf")}


def test_build_all_parses_each_chapter_once_serial_and_in_workers(book, tmp_path):
    require_tool("pdftotext")
    serial, parses, pids = build(book, tmp_path / "serial", "-j", "1", "--no-cache", cache=tmp_path / "cache")
    assert parses == Counter(chapter_paths(book))
    assert pids == {serial}  # -j 1: parsed in the command's own process
    parallel, parses, pids = build(book, tmp_path / "parallel", "-j", "2", "--no-cache", cache=tmp_path / "cache")
    assert parses == Counter(chapter_paths(book))
    assert parallel not in pids and len(pids) == 2  # each worker parsed its share, the main process none
    assert outputs(tmp_path / "serial") == outputs(tmp_path / "parallel")


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_cached_chapters_are_parsed_only_when_a_format_needs_their_tokens(book, tmp_path, jobs):
    cache = tmp_path / "cache"
    _, parses, _ = build(book, tmp_path / "html", "-j", jobs, cache=cache, fmt="html")
    assert parses == Counter(chapter_paths(book))
    # The chapters come from the cache; the PDF's and EPUB's bodies do not: each chapter is parsed once for both.
    run, parses, pids = build(book, tmp_path / "cold", "-j", jobs, cache=cache)
    assert parses == Counter(chapter_paths(book))
    assert (run not in pids) if jobs == "2" else (pids == {run})
    # Everything cached: nothing is parsed at all.
    _, parses, _ = build(book, tmp_path / "warm", "-j", jobs, cache=cache)
    assert parses == Counter()
    # One chapter edited: that one alone is parsed, once.
    edited = chapter_paths(book)[3]
    source = (book / edited).read_text()
    try:
        (book / edited).write_text(source + "\nOne more sentence.\n")
        _, parses, _ = build(book, tmp_path / "edited", "-j", jobs, cache=cache)
    finally:
        (book / edited).write_text(source)
    assert parses == Counter([edited])
    assert "One more sentence." in pdf_text(tmp_path / "edited" / "book.pdf")
    assert outputs(tmp_path / "cold") == outputs(tmp_path / "warm")


class WordCount:
    """A format of one's own: the words of each chapter, counted in the process that holds its tokens."""

    name = "words"
    default_output = "words.txt"
    cache_namespace = "test-words"

    def prepare(self, book, diagnostics, options):
        return formats.Prepared([chapter.title for chapter in book.chapters], [None] * len(book.chapters))

    def render_chapter(self, chapter, tokens, context):
        words = sum(len(token.content.split()) for token in tokens if token.type == "inline")
        return f"{context}: {words} words, parsed in {os.getpid()}"

    def finish(self, book, prepared, results, out, diagnostics, options):
        out.write_text("\n".join(results) + "\n", encoding="utf-8")
        return formats.Built(out, f"{len(results)} lines")


def test_a_registered_format_is_offered_and_built_where_the_chapters_were_parsed(book, tmp_path, monkeypatch):
    monkeypatch.setattr(formats, "_REGISTRY", dict(formats._REGISTRY))  # the registration ends with the test
    formats.register(WordCount())
    help_text = CliRunner().invoke(main, ["build", "--help"]).output
    assert "FORMAT is one of: html, pdf, epub, words, all." in " ".join(help_text.split())
    out = tmp_path / "words.txt"
    result = CliRunner().invoke(main, ["build", "words", "-j", "2", "--no-cache", "--book", str(book), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert re.search(rf"Built words: {CHAPTERS} chapters, {CHAPTERS} lines, .* -> {re.escape(str(out))}", result.output)
    lines = out.read_text().splitlines()
    assert len(lines) == CHAPTERS and all(re.fullmatch(r".+: \d+ words, parsed in \d+", line) for line in lines)
    assert str(os.getpid()) not in {line.rsplit(" ", 1)[1] for line in lines}  # rendered by the workers that parsed


class Waiting(WordCount):
    """A format whose `meanwhile` notes the process it runs in and the workers alive then (or fails, when told to)."""

    name = "waiting"

    def __init__(self, fail: bool = False):
        self.fail = fail
        self.calls: list[tuple[int, int]] = []

    def meanwhile(self, markdown_bytes):
        import psutil

        self.calls.append((os.getpid(), len(psutil.Process().children()), markdown_bytes))
        if self.fail:
            raise RuntimeError("cannot import what finish needs")


@pytest.mark.parametrize("fail", [False, True])
def test_a_formats_meanwhile_runs_here_once_the_workers_parse(book, tmp_path, monkeypatch, fail):
    """`meanwhile` runs once, in the main process, after the workers were forked (they do not inherit what it loads);
    a failure there is left for `finish` to meet and report."""
    monkeypatch.setattr(formats, "_REGISTRY", dict(formats._REGISTRY))
    waiting = Waiting(fail)
    formats.register(waiting)
    out = tmp_path / "waiting.txt"
    result = CliRunner().invoke(main, ["build", "waiting", "-j", "2", "--no-cache", "--book", str(book), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert len(out.read_text().splitlines()) == CHAPTERS
    assert len(waiting.calls) == 1 and waiting.calls[0][0] == os.getpid() and waiting.calls[0][1] >= 2, waiting.calls
    assert waiting.calls[0][2] == sum((book / path).stat().st_size for path in chapter_paths(book))
    result = CliRunner().invoke(main, ["build", "waiting", "-j", "1", "--no-cache", "--book", str(book), "--out", str(tmp_path / "serial.txt")])
    assert result.exit_code == 0 and len(waiting.calls) == 1  # no workers: nothing to overlap, so nothing is called


def test_the_pdf_imports_weasyprint_early_only_for_a_book_whose_parse_is_short():
    """Past EARLY_IMPORT_LIMIT the imports would add to the parse's peak memory: they wait for the PDF's own step."""
    code = ("import sys; from tools.render.builtin import EARLY_IMPORT_LIMIT, PdfFormat; fmt = PdfFormat(); "
            "fmt.meanwhile(EARLY_IMPORT_LIMIT + 1); print('weasyprint' in sys.modules); "
            "fmt.meanwhile(EARLY_IMPORT_LIMIT); print('weasyprint' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_a_format_without_the_protocol_is_refused():
    with pytest.raises(TypeError, match="not an output format"):
        formats.register(object())  # type: ignore[arg-type]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_book_past_the_tokens_kept_is_still_parsed_once_and_built_the_same(book, tmp_path, monkeypatch, jobs):
    def site(out: Path) -> dict[str, str]:
        result = CliRunner().invoke(main, ["build", "html", "-j", jobs, "--no-cache", "--book", str(book), "--out", str(out)])
        assert result.exit_code == 0, result.output
        return {p.relative_to(out).as_posix(): re.sub(r"[Bb]uilt \d{4}-\d\d-\d\d \d\d:\d\d UTC", "", p.read_text(errors="replace"))
                for p in out.rglob("*") if p.is_file()}

    kept = site(tmp_path / "kept")
    log = tmp_path / "parses"
    monkeypatch.setenv("TOOLS_PARSE_LOG", str(log))
    monkeypatch.setattr(chapter_pool, "TOKENS_KEPT", len((book / chapter_paths(book)[0]).read_text()))  # the forks inherit it
    assert site(tmp_path / "packed") == kept
    parses = Counter(line.split(" ", 1)[1] for line in log.read_text().splitlines())
    assert set(parses) == set(chapter_paths(book)) and set(parses.values()) == {1}  # the rest were packed, not parsed again


def test_the_workers_write_what_they_parse_and_render_to_the_cache_after_their_replies(book, tmp_path, monkeypatch):
    """With workers, each chapter's model and page body go to the cache from the worker that made them, held until
    its reply is sent (`Cache.hold`); the main process writes neither, and a second build takes both from the cache."""
    from tools.core.cache import Cache

    log = tmp_path / "puts"
    real_put = Cache.put

    def put(self, namespace, key, value):
        with open(log, "a", encoding="utf-8") as handle:  # appended from every process
            handle.write(f"{os.getpid()} {namespace} {'held' if self.held is not None else 'written'}\n")
        real_put(self, namespace, key, value)

    monkeypatch.setattr(Cache, "put", put)
    monkeypatch.setenv("BOOK_CACHE_DIR", str(tmp_path / "cache"))
    args = ["build", "html", "-j", "2", "--book", str(book), "--out", str(tmp_path / "site")]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    puts = [line.split() for line in log.read_text().splitlines()]
    mine = str(os.getpid())
    for namespace in ("chapter", "site"):
        assert not [p for p in puts if p[0] == mine and p[1] == namespace]
        held = Counter(pid for pid, ns, state in puts if ns == namespace and state == "held")
        written = Counter(pid for pid, ns, state in puts if ns == namespace and state == "written")
        assert held == written and sum(written.values()) == CHAPTERS and len(written) == 2
    assert len(list((tmp_path / "cache" / "site").glob("*/*"))) == CHAPTERS
    log.unlink()
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    again = log.read_text().splitlines() if log.exists() else []
    assert not [line for line in again if line.split()[1] in ("chapter", "site")]
