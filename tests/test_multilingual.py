"""A course translated into three languages (issue 36), read as its readers and its authors meet it: the fixture
book `tests/fixtures/multilingual/` has lessons in folders with their images, Chinese, Japanese and Spanish
translations at the same relative paths (some lessons only as empty placeholders, one of front matter, one of a
comment), two lessons without a `#` title, translated part titles and a lesson moved once (`[redirects]`).

It is built in every format twice into one cache, first the original alone, then every language: the second build
must parse no chapter of the original again and lay out in the PDF only what a translation changes. Each site is
read with BeautifulSoup, each PDF with pdftotext, each EPUB with epubcheck; `tools mv` moves a lesson with its
translations and back, byte for byte."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from test_epub import epubcheck

from conftest import REPO, require_tool, run_tools
from pdf_check import PdfReport
from site_check import dangling_links, parse
from tools.book.interface_text import interface_text

FIXTURE = REPO / "tests" / "fixtures" / "multilingual"
LANGUAGES = ("en", "zh", "ja", "es")
TRANSLATED = {  # the lessons each translation has translated (its placeholders are not)
    "zh": {"README.md", "01-introduction/README.md", "03-images/README.md"},
    "ja": {"README.md", "01-introduction/README.md"},
    "es": {"README.md", "01-introduction/README.md", "03-images/README.md"},
}
LESSONS = ["README.md", "00-course-setup/README.md", "01-introduction/README.md", "02-prompts/README.md", "03-images/README.md",
           "04-evaluation/README.md", "05-safety/README.md"]
PARTS = {"en": ["Getting started", "Lessons"], "zh": ["入门", "课程"], "ja": ["はじめに", "レッスン"], "es": ["Primeros pasos", "Lecciones"]}


def _page(lesson: str) -> str:
    return lesson.removesuffix(".md") + ".html"


def _site(out: Path, language: str) -> Path:
    return out / "html" if language == "en" else out / "html" / language


def _tools(cwd: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "tools", *args], cwd=cwd, env=dict(os.environ, PYTHONPATH=str(REPO), **env),
                          capture_output=True, text=True, timeout=1200)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def _entries(cache: Path, namespace: str) -> set[str]:
    folder = cache / namespace
    return {path.name for path in folder.rglob("*") if path.is_file()} if folder.is_dir() else set()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(book, outputs, the full build's result, its parse log, the PDF bodies the original's build had, those after)."""
    tmp = tmp_path_factory.mktemp("multilingual")
    book = tmp / "book"
    shutil.copytree(FIXTURE, book)
    cache, log = tmp / "cache", tmp / "parsed.log"
    first = _tools(book, {"BOOK_CACHE_DIR": str(cache)}, "build", "all", "--book", str(book), "--out", str(tmp / "out"), "--lang", "en")
    assert first.returncode == 0, first.stdout + first.stderr
    bodies = _entries(cache, "pdf-body")
    result = _tools(book, {"BOOK_CACHE_DIR": str(cache), "TOOLS_PARSE_LOG": str(log)}, "build", "all", "--book", str(book), "--out", str(tmp / "out"))
    parsed = [line.split(" ", 1)[1] for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []
    return book, tmp / "out", result, parsed, bodies, _entries(cache, "pdf-body")


def test_every_language_is_built_in_every_format(built):
    _, out, result, _, _, _ = built
    assert result.returncode == 0, result.stdout + result.stderr
    for language in LANGUAGES:
        suffix = "" if language == "en" else f".{language}"
        for path in (_site(out, language) / "index.html", out / f"book{suffix}.pdf", out / f"book{suffix}.epub"):
            assert path.is_file() and str(path) in result.stdout, path


def test_each_problem_is_one_warning(built):
    _, _, result, _, _, _ = built
    lines = [line for line in result.stderr.splitlines() if ": warning: " in line]
    empty = [line for line in lines if "no text" in line]
    assert len(empty) == 2, lines  # one per language with placeholders: zh and ja
    assert any(line.startswith("translations/zh/02-prompts/README.md:1: ") and "1 file of the zh translation" in line for line in empty), empty
    assert any("2 files of the ja translation" in line and "translations/ja/02-prompts/README.md, translations/ja/04-evaluation/README.md" in line for line in empty), empty
    untitled = [line for line in lines if "has no '#' heading" in line]
    assert [line.split(":")[0] for line in untitled] == ["04-evaluation/README.md", "05-safety/README.md"], lines
    assert all("call it 'Introduction' (its first heading, on line 1)" in line for line in untitled), untitled
    same = [line for line in lines if "is that of" in line]
    assert len(same) == 1 and same[0].startswith("05-safety/README.md:1: ") and "04-evaluation/README.md" in same[0], lines
    assert len(lines) == 5, lines  # nothing else: part titles are translated, the moved lesson's redirect works


def test_check_links_reports_the_same_and_strict_fails(built):
    book, _, _, _, _, _ = built
    checked = run_tools(book, "check-links", "--book", str(book), "--no-cache")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    output = checked.stdout + checked.stderr
    assert output.count("no text") == 2 and output.count("has no '#' heading") == 2
    assert run_tools(book, "check-links", "--book", str(book), "--no-cache", "--strict").returncode == 1


@pytest.mark.parametrize("language", ["zh", "ja", "es"])
def test_a_placeholder_shows_the_original_with_the_notice(built, language):
    _, out, _, _, _, _ = built
    notice = interface_text(language)["not_translated"]
    site = _site(out, language)
    for lesson in LESSONS:
        soup = parse(site / _page(lesson))
        article = soup.select_one("article.chapter")
        shown = [p.get_text(strip=True) for p in soup.select(".not-translated")]
        if lesson in TRANSLATED[language]:
            assert shown == [] and article.get("lang") is None, (language, lesson)
        else:
            assert shown == [notice] and article.get("lang") == "en", (language, lesson)
            assert article.get_text(strip=True), (language, lesson)  # never a blank page
    prompts = parse(site / "02-prompts/README.html")
    assert "A prompt states the task" in prompts.select_one("article.chapter").get_text()
    titles = [a.get_text(strip=True) for a in parse(site / "index.html").select("#sidebar a")]
    assert "README" not in titles and "Prompts" in titles, titles


@pytest.mark.parametrize("language", LANGUAGES)
def test_part_titles_are_the_translations(built, language):
    _, out, _, _, _, _ = built
    parts = [part.get_text(strip=True) for part in parse(_site(out, language) / "index.html").select("#sidebar .part-title")]
    assert parts == PARTS[language]
    suffix = "" if language == "en" else f".{language}"
    with zipfile.ZipFile(out / f"book{suffix}.epub") as archive:
        nav = next(archive.read(name).decode("utf-8") for name in archive.namelist() if name.endswith("nav.xhtml"))
    assert all(title in nav for title in PARTS[language])


@pytest.mark.parametrize("language", ["zh", "ja", "es"])
def test_the_pdf_marks_each_chapter_shown_untranslated(built, language):
    require_tool("pdftotext")
    _, out, _, _, _, _ = built
    text = re.sub(r"\s+", "", PdfReport(out / f"book.{language}.pdf").text(layout=False))
    notice = re.sub(r"\s+", "", interface_text(language)["not_translated"])
    assert text.count(notice) == len(LESSONS) - len(TRANSLATED[language])
    assert "Apromptstatesthetask" in text and all(re.sub(r"\s+", "", title) in text for title in PARTS[language])


@pytest.mark.parametrize("language", ["zh", "ja", "es"])
def test_the_epub_keeps_the_fallbacks_language(built, language):
    _, out, _, _, _, _ = built
    with zipfile.ZipFile(out / f"book.{language}.epub") as archive:
        documents = {name: BeautifulSoup(archive.read(name), "lxml-xml") for name in archive.namelist() if name.endswith(".xhtml")}
    prompts = next(soup for name, soup in documents.items() if name.endswith("02-prompts/README.xhtml"))
    assert prompts.html["lang"] == "en" and [p.get_text() for p in prompts.select("p.not-translated")] == [interface_text(language)["not_translated"]]
    introduction = next(soup for name, soup in documents.items() if name.endswith("01-introduction/README.xhtml"))
    assert introduction.html["lang"] == language and introduction.select("p.not-translated") == []


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_epub_passes_epubcheck(built, language):
    _, out, _, _, _, _ = built
    report = epubcheck(out / f"book{'' if language == 'en' else '.' + language}.epub")
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in report, report


def test_every_site_links_to_the_originals_images_instead_of_copying_them(built):
    _, out, _, _, _, _ = built
    html = out / "html"
    assert dangling_links(html) == []
    originals = {path.relative_to(html).as_posix() for path in html.rglob("*.png") if path.relative_to(html).parts[0] not in LANGUAGES}
    assert len(originals) == 5
    for language in ("zh", "ja", "es"):
        site = _site(out, language)
        assert not list(site.rglob("*.png")), f"the {language} site copies images the original's site holds"
        shown = set()
        for lesson in LESSONS:
            page = site / _page(lesson)
            for image in parse(page).select("article img"):
                target = (page.parent / image["src"]).resolve()
                assert target.is_file() and target.is_relative_to(html.resolve()), (language, lesson, image["src"])
                shown.add(target.relative_to(html.resolve()).as_posix())
        assert shown <= originals | {"images/course-map.svg"}, shown


def test_the_moved_lesson_leads_to_its_page_in_every_language(built):
    _, out, _, _, _, _ = built
    for language in LANGUAGES:
        old = _site(out, language) / "03-old-images/README.html"
        target = (old.parent / parse(old).select_one("a[href]")["href"]).resolve()
        assert target == (_site(out, language) / "03-images/README.html").resolve(), language


def test_the_translations_reuse_the_originals_work(built):
    """After the original's build, building every language parses only the translated files, and lays out in the PDF
    only the chapters a translation changes: its own, and a part's first chapter under a translated part title."""
    _, _, _, parsed, before, after = built
    assert parsed and all(path.startswith("translations/") for path in parsed), parsed
    translated = sum(len(lessons) for lessons in TRANSLATED.values())
    opening = sum(1 for language in TRANSLATED if "00-course-setup/README.md" not in TRANSLATED[language])  # opens "Getting started"
    assert len(before) == len(LESSONS)
    assert len(after - before) == translated + opening, (len(after - before), translated, opening)


def test_mv_moves_a_lesson_with_its_translations_and_back(tmp_path):
    book = tmp_path / "book"
    shutil.copytree(FIXTURE, book)
    before = {path.relative_to(book).as_posix(): path.read_bytes() for path in sorted(book.rglob("*")) if path.is_file()}
    shown = run_tools(book, "mv", "--dry-run", "--no-cache", "01-introduction", "01-what-models-learn")
    assert shown.returncode == 0, shown.stderr
    for language in ("zh", "ja", "es"):
        assert f"# move translations/{language}/01-introduction/ -> translations/{language}/01-what-models-learn/" in shown.stdout
    assert before == {path.relative_to(book).as_posix(): path.read_bytes() for path in sorted(book.rglob("*")) if path.is_file() and ".cache" not in path.parts}
    moved = run_tools(book, "mv", "--no-cache", "01-introduction", "01-what-models-learn")
    assert moved.returncode == 0, moved.stderr
    assert not (book / "translations/zh/01-introduction").exists() and (book / "translations/zh/01-what-models-learn/README.md").is_file()
    assert '"01-introduction/README.md" = "01-what-models-learn/README.md"' in (book / "book.toml").read_text(encoding="utf-8")
    checked = run_tools(book, "check-links", "--book", str(book), "--no-cache")
    assert checked.returncode == 0 and ": error: " not in checked.stdout + checked.stderr and "0 errors, 5 warnings" in checked.stderr, checked.stdout + checked.stderr
    back = run_tools(book, "mv", "--no-cache", "01-what-models-learn", "01-introduction")
    assert back.returncode == 0, back.stderr
    after = {path.relative_to(book).as_posix(): path.read_bytes() for path in sorted(book.rglob("*")) if path.is_file() and ".cache" not in path.parts}
    assert after == before
