"""Translations (issue 17): `[translations.<tag>]` in book.toml, every language built and checked, read as a reader
would: the sites' pages parsed and their language links followed, the PDFs through pdftotext, the EPUBs unzipped
and through epubcheck, every message through the CLI."""
from __future__ import annotations

import posixpath
import re
import zipfile
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings, strategies as st
from test_epub import epubcheck

from conftest import require_tool, run_tools, write_book
from pdf_check import PdfReport
from site_check import dangling_links, parse
from tools.book.interface_text import interface_text
from tools.book.link_model import TargetKind
from tools.book.resolve import FileIndex, resolve

NOTICE = interface_text("zh")["not_translated"]
ZH_LOGO = '<svg xmlns="http://www.w3.org/2000/svg" width="12" height="12"><circle cx="6" cy="6" r="5"/></svg>\n'

BOOK = {
    "book.toml": '[book]\ntitle = "Test Book"\nlanguage = "en"\n\n[translations.zh]\nfolder = "zh"\ntitle = "测试书"\n',
    "chapters-md.txt": "README.md\nguide/install.md\nguide/usage.md\nfaq.md\n",
    "README.md": "# Test Book\n\nRead [the install guide](guide/install.md#requirements) and the [FAQ](faq.md).\n\n![logo](img/logo.svg)\n",
    "guide/install.md": "# Install\n\n## Requirements\n\nYou need Python. See [usage](usage.md#running).\n",
    "guide/usage.md": "# Usage\n\n## Running\n\nRun it, as [install](install.md) says.\n",
    "faq.md": "# FAQ\n\n## Why\n\nBecause. See [the start](README.md).\n",
    "img/logo.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n',
    # the translation: two of the four chapters, its own logo; its README still links to the English heading id
    "zh/README.md": "# 测试书\n\n阅读[安装指南](guide/install.md#requirements)和[常见问题](faq.md)。\n\n![标志](img/logo.svg)\n",
    "zh/guide/install.md": "# 安装\n\n## Requirements 要求\n\n你需要 Python。参见[用法](usage.md#running)。\n",
    "zh/img/logo.svg": ZH_LOGO,
}
SITE_PAGES = ["README.html", "guide/install.html", "guide/usage.html", "faq.html"]
TRANSLATED = {"README.html", "guide/install.html"}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("translated")
    root = write_book(tmp / "book", BOOK)
    result = run_tools(tmp, "build", "all", "--book", str(root), "--out", str(tmp / "out"))
    return root, tmp / "out", result


def test_build_all_writes_every_language_and_names_each_output(built):
    _, out, result = built
    assert result.returncode == 1, result.stdout + result.stderr  # the English heading id in the translation
    for path in ("html/index.html", "html/zh/index.html", "book.pdf", "book.zh.pdf", "book.epub", "book.zh.epub"):
        assert (out / path).is_file(), path
        assert str(out / path) in result.stdout, result.stdout
    assert len(result.stdout.strip().splitlines()) == 6, result.stdout
    assert "Built html (zh)" in result.stdout and "Built pdf (en)" in result.stdout


def test_wrong_anchor_in_a_translation_names_its_file_and_suggests(built):
    root, _, result = built
    line = next(n for n, text in enumerate(BOOK["zh/README.md"].splitlines(), 1) if "#requirements" in text)
    found = [message for message in result.stderr.splitlines() if message.startswith(f"zh/README.md:{line}:")]
    assert len(found) == 1, result.stderr
    assert "#requirements" in found[0] and "zh/guide/install.md" in found[0] and "Did you mean '#requirements-要求'?" in found[0]
    assert not [message for message in result.stderr.splitlines() if message.startswith(("README.md", "guide/"))], result.stderr
    checked = run_tools(root, "check-links", "--book", str(root), "--no-cache")
    assert checked.returncode == 1 and f"zh/README.md:{line}:" in checked.stdout + checked.stderr
    assert run_tools(root, "check-links", "--book", str(root), "--lang", "en", "--no-cache").returncode == 0


def test_untranslated_chapter_linking_a_translated_heading_is_explained(tmp_path):
    files = dict(BOOK, **{"guide/usage.md": "# Usage\n\n## Running\n\nBack to [the requirements](install.md#requirements).\n"})
    root = write_book(tmp_path / "book", files)
    result = run_tools(root, "check-links", "--book", str(root), "--lang", "zh", "--no-cache")
    found = [line for line in (result.stdout + result.stderr).splitlines() if line.startswith("guide/usage.md:5:")]
    assert len(found) == 1 and "zh translation" in found[0] and "zh/guide/install.md" in found[0], result.stdout + result.stderr


def test_every_local_link_of_both_sites_lands(built):
    _, out, _ = built
    # the one that does not is the translation's link to the English heading id, reported above
    assert dangling_links(out / "html", ("404.html", "zh/404.html")) == ["zh/README.html: guide/install.html#requirements (no id 'requirements')"]


def _site_and_page(out: Path, page: Path) -> tuple[str, str]:
    rel = page.relative_to(out / "html").as_posix()
    return ("zh", rel[3:]) if rel.startswith("zh/") else ("en", rel)


@pytest.mark.parametrize("language", ["en", "zh"])
def test_switcher_and_alternates_lead_to_the_same_chapter_in_every_language(built, language):
    _, out, _ = built
    base = out / "html" / ("zh" if language == "zh" else "")
    for name in [*SITE_PAGES, "index.html"]:
        page = base / name
        soup = parse(page)
        assert soup.html["lang"] == language, name
        entries = soup.select("nav.language-switcher a")
        assert [a["hreflang"] for a in entries] == ["en", "zh"], name
        assert [a.get_text() for a in entries] == ["English", "中文"]
        assert [a["hreflang"] for a in entries if a.get("aria-current")] == [language]
        for link in entries:
            target = (page.parent / link["href"]).resolve()
            assert target.is_file(), (name, link["href"])
            assert _site_and_page(out, target) == (link["hreflang"], name), (name, link["href"])
            assert parse(target).html["lang"] == link["hreflang"]
        alternates = {tag["hreflang"]: tag["href"] for tag in soup.select('link[rel="alternate"][hreflang]')}
        assert set(alternates) == {"en", "zh", "x-default"}, name
        assert alternates["x-default"] == alternates["en"] == entries[0]["href"]


def test_untranslated_chapters_say_so_in_their_own_language(built):
    _, out, _ = built
    for name in SITE_PAGES:
        english, chinese = parse(out / "html" / name), parse(out / "html/zh" / name)
        assert english.select(".not-translated") == [] and english.select_one("article.chapter").get("lang") is None
        notice = chinese.select(".not-translated")
        if name in TRANSLATED:
            assert notice == [] and chinese.select_one("article.chapter").get("lang") is None, name
        else:
            assert [n.get_text(strip=True) for n in notice] == [NOTICE], name
            assert chinese.select_one("article.chapter")["lang"] == "en", name
    assert parse(out / "html/zh/guide/install.html").h1.get_text(strip=True).startswith("安装")
    assert parse(out / "html/zh/guide/usage.html").h1.get_text(strip=True).startswith("Usage")


def test_links_of_a_translation_land_on_its_pages_and_its_files(built):
    _, out, _ = built
    page = out / "html/zh/README.html"
    soup = parse(page)
    hrefs = {a.get_text(): a["href"] for a in soup.select("article a[href]") if not a["href"].startswith("#")}
    assert (page.parent / hrefs["安装指南"].partition("#")[0]).resolve() == (out / "html/zh/guide/install.html").resolve()
    assert (page.parent / hrefs["常见问题"]).resolve() == (out / "html/zh/faq.html").resolve()  # the fallback page of the zh site
    logo = (page.parent / soup.select_one("article img")["src"]).resolve()
    assert logo.read_text(encoding="utf-8") == ZH_LOGO  # the translation's own image
    english_logo = (out / "html/README.html").parent / parse(out / "html/README.html").select_one("article img")["src"]
    assert english_logo.read_text(encoding="utf-8") == BOOK["img/logo.svg"]
    sidebar = [a.get_text(strip=True) for a in parse(out / "html/zh/faq.html").select("#sidebar a")]
    assert sidebar == ["测试书", "安装", "Usage", "FAQ"]  # nested as the original, not under a "zh" folder


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_pdf_of_the_translation_marks_untranslated_chapters(built):
    require_tool("pdftotext")
    _, out, _ = built
    assert _flat(PdfReport(out / "book.zh.pdf").text(layout=False)).count(_flat(NOTICE)) == 2
    assert _flat(NOTICE) not in _flat(PdfReport(out / "book.pdf").text(layout=False))


def _epub(path: Path) -> dict[str, BeautifulSoup]:
    with zipfile.ZipFile(path) as archive:
        return {name: BeautifulSoup(archive.read(name), "lxml-xml") for name in archive.namelist() if name.endswith((".xhtml", ".opf"))}


def test_epub_of_the_translation_has_its_language_title_and_notices(built):
    _, out, _ = built
    members = _epub(out / "book.zh.epub")
    opf = next(soup for name, soup in members.items() if name.endswith(".opf"))
    assert opf.find("dc:language").get_text() == "zh" and opf.find("dc:title").get_text() == "测试书"
    english_opf = next(soup for name, soup in _epub(out / "book.epub").items() if name.endswith(".opf"))
    assert opf.find("dc:identifier").get_text() != english_opf.find("dc:identifier").get_text()
    chapters = {posixpath.basename(name): soup for name, soup in members.items() if name.endswith(("usage.xhtml", "install.xhtml"))}
    assert chapters["usage.xhtml"].html["lang"] == "en" and [p.get_text() for p in chapters["usage.xhtml"].select("p.not-translated")] == [NOTICE]
    assert chapters["install.xhtml"].html["lang"] == "zh" and chapters["install.xhtml"].select("p.not-translated") == []


@pytest.mark.parametrize("name", ["book.epub", "book.zh.epub"])
def test_both_epubs_pass_epubcheck(built, name):
    report = epubcheck(built[1] / name)
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in report, report


def test_lang_builds_one_language_and_keeps_the_others_site(built, tmp_path):
    root, _, _ = built
    out = tmp_path / "out"
    result = run_tools(tmp_path, "build", "all", "--book", str(root), "--out", str(out), "--lang", "zh")
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == ["book.zh.epub", "book.zh.pdf", "html"], result.stderr
    assert (out / "html/zh/index.html").is_file() and not (out / "html/index.html").exists()
    again = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(out / "html"), "--lang", "en")
    assert again.returncode == 0, again.stderr
    assert (out / "html/index.html").is_file() and (out / "html/zh/guide/install.html").is_file()  # the zh site stays
    unknown = run_tools(tmp_path, "build", "html", "--book", str(root), "--lang", "fr")
    assert unknown.returncode == 2 and "en, zh" in unknown.stderr and "Traceback" not in unknown.stderr


CONFIG_ERRORS = {
    "missing folder": ('[translations.zh]\nfolder = "nope"\n', 2, "does not exist"),
    "outside the root": ('[translations.zh]\nfolder = "../elsewhere"\n', 2, "inside the book's root"),
    "unknown key": ('[translations.zh]\nfolder = "zh"\ncolour = "red"\n', 3, "unknown key 'colour'"),
    "bad tag": ('[translations."zh_CN!"]\nfolder = "zh"\n', 1, "does not name a language"),
    "the book's own language": ('[translations.EN]\nfolder = "zh"\n', 1, "the book's own language"),
    "no folder": ('[translations.zh]\ntitle = "x"\n', 1, "has no 'folder'"),
    "folder not a string": ('[translations.zh]\nfolder = 3\n', 2, "must be a string"),
}


@pytest.mark.parametrize("case", sorted(CONFIG_ERRORS))
def test_config_errors_are_sentences_at_their_line(tmp_path, case):
    toml, line, words = CONFIG_ERRORS[case]
    root = write_book(tmp_path / "book", {"README.md": "# A\n", "zh/README.md": "# 甲\n", "book.toml": '[book]\nlanguage = "en"\n' + toml})
    (tmp_path / "elsewhere").mkdir()
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 2, result.stderr
    assert f"book.toml:{line + 2}: " in result.stderr and words in result.stderr, result.stderr


def test_serve_builds_every_language_and_rebuilds_on_a_change_in_the_translation(tmp_path):
    from tools.serve.server import Builder

    root = write_book(tmp_path / "book", BOOK)
    out = tmp_path / "serve"
    builder = Builder(root, out, log=lambda text: None)
    builder.build()
    assert builder.errors and (out / "zh/guide/install.html").is_file() and (out / "index.html").is_file()
    changed = root / "zh/guide/usage.md"
    assert builder.is_source(None, str(changed.resolve()))  # type: ignore[arg-type]
    changed.write_text("# 用法\n\n## Running\n\n运行。\n", encoding="utf-8")
    builder.build()
    assert parse(out / "zh/guide/usage.html").h1.get_text(strip=True).startswith("用法")
    assert parse(out / "zh/guide/usage.html").select(".not-translated") == []


# --- the overlay: a link followed from its chapter's logical place lands on the translated file when there is one

_NAMES = st.sampled_from(["a", "b", "c", "guide", "img"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=3).map(lambda parts: "/".join(parts) + ".md")


@settings(max_examples=200, deadline=None)
@given(originals=st.sets(_PATHS, min_size=1, max_size=8), data=st.data())
def test_overlay_resolution_lands_on_the_translation_else_the_original(originals, data):
    translated = data.draw(st.sets(st.sampled_from(sorted(originals)), max_size=len(originals)))
    only_translated = data.draw(st.sets(_PATHS.filter(lambda path: path not in originals), max_size=2))
    files = set(originals) | {f"zh/{path}" for path in translated | only_translated}
    dirs = {"/".join(path.split("/")[:n]) for path in files for n in range(1, path.count("/") + 1)}
    logical = set(originals) | only_translated
    real = {path: f"zh/{path}" if path in translated | only_translated else path for path in logical}
    index = FileIndex(frozenset(files), frozenset(dirs), frozenset(real.values()), folder="zh")
    source = data.draw(st.sampled_from(sorted(logical)))
    target = data.draw(st.sampled_from(sorted(logical)))
    href = posixpath.relpath(target, posixpath.dirname(source) or ".") + "#x"
    found = resolve(real[source], href, index)
    assert (found.kind, found.path, found.fragment) == (TargetKind.CHAPTER, real[target], "x")
    leaving = resolve(real[source], "../" * (source.count("/") + 1) + "out.md", index)
    assert leaving.kind is TargetKind.BROKEN


def test_translation_with_its_own_chapter_list(tmp_path):
    files = dict(BOOK, **{"zh/chapters-md.txt": "README.md\nguide/install.md\n"})
    root = write_book(tmp_path / "book", files)
    out = tmp_path / "site"
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(out))
    assert "Built html (zh): 2 chapters" in result.stdout, result.stdout + result.stderr
    assert not (out / "zh/faq.html").exists() and (out / "zh/guide/install.html").is_file()
    faq = out / "faq.html"
    switcher = {a["hreflang"]: a["href"] for a in parse(faq).select("nav.language-switcher a")}
    assert (faq.parent / switcher["zh"]).resolve() == (out / "zh/index.html").resolve()  # no zh FAQ: its front page
    wrong = write_book(tmp_path / "wrong", dict(files, **{"zh/chapters-md.txt": "README.md\nnowhere.md\n"}))
    broken = run_tools(tmp_path, "build", "html", "--book", str(wrong), "--out", str(tmp_path / "wrong-site"))
    assert broken.returncode == 1 and "zh/chapters-md.txt:2: error: the chapter 'nowhere.md' does not exist." in broken.stderr, broken.stderr


@pytest.mark.xdist_group("browser")
def test_a_reader_switches_language_in_chromium_and_sees_the_fallback_notice(built, browser):
    """From file://, as a reader opens the built site: the switcher on the English install page leads to the
    Chinese one (its interface in Chinese, `<html lang="zh">`); from there the next chapter, not translated, shows
    the notice above its English text; the switcher leads back to the same chapter in English."""
    _, out, _ = built
    page = browser.new_context().new_page()
    errors: list[str] = []
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto((out / "html" / "guide" / "install.html").as_uri())
    page.locator(".language-switcher a[hreflang='zh']").click()
    page.wait_for_load_state()
    assert page.url.endswith("/html/zh/guide/install.html"), page.url
    assert page.locator("html").get_attribute("lang") == "zh"
    assert page.locator("article h1").inner_text().startswith("安装")  # and its permalink
    assert not page.locator(".not-translated").count()
    page.locator("a.next").click()
    page.wait_for_load_state()
    assert page.url.endswith("/html/zh/guide/usage.html"), page.url
    notice = page.locator(".not-translated")
    assert notice.is_visible() and notice.inner_text().strip() == NOTICE
    assert page.locator("article").get_attribute("lang") == "en" and page.locator("article h1").inner_text().startswith("Usage")
    page.locator(".language-switcher a[hreflang='en']").click()
    page.wait_for_load_state()
    assert page.url.endswith("/html/guide/usage.html") and page.locator("html").get_attribute("lang") == "en", page.url
    assert not page.locator(".not-translated").count() and errors == [], errors
    page.context.close()
