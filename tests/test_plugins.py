"""What a book can add to the tool, tried as a user would: a markdown-it plugin named in book.toml shows in the site,
the PDF and the EPUB alike and in what the link checker sees; a theme folder replaces templates and assets in every
format; a package's entry point in the group `tools.render.registry` adds a format to `tools build`. Every mistake is a
sentence at its book.toml line (or naming the entry point) with exit status 2, never a traceback.

The plugin package is written by hand into a temporary folder with its `*.dist-info` (no network, no pip), and put
on PYTHONPATH, where importlib.metadata finds its entry points as it would an installed package's."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO, require_tool, write_book
from pdf_check import PdfReport
from site_check import dangling_links, parse

PLUGIN_MODULE = '''"""==text== becomes <mark>text</mark>; a few broken plugins beside it."""


def mark_plugin(md, tag="mark"):
    def rule(state, silent):
        src, start = state.src, state.pos
        end = src.find("==", start + 2) if src.startswith("==", start) else -1
        if end <= start + 2:
            return False
        if not silent:
            state.push("mark_open", tag, 1).markup = "=="
            state.push("text", "", 0).content = src[start + 2:end]
            state.push("mark_close", tag, -1).markup = "=="
        state.pos = end + 2
        return True

    md.inline.ruler.before("emphasis", "mark", rule)


def needs_option(md, *, colour):
    raise ValueError(f"unknown colour {colour!r}")


def fails_on_boom(md):
    def rule(state, silent):
        if state.src.startswith("!!boom", state.pos):
            raise RuntimeError("the plugin exploded")
        return False

    md.inline.ruler.before("emphasis", "boom", rule)


NOT_A_FUNCTION = 42
'''
FORMAT_MODULE = '''"""The book as plain text: a format for `tools build txt`."""


def build_text(book, folder, diagnostics, options):
    parts = [book.title]
    for chapter in book.chapters:
        parts += [f"== {chapter.title} ==", chapter.text]
    (folder / "book.txt").write_text("\\n".join(parts), encoding="utf-8")
    return f"{len(book.chapters)} chapters in book.txt"


def build_broken(book, folder, diagnostics, options):
    (folder / "half.txt").write_text("half", encoding="utf-8")
    raise ValueError("the text format broke")
'''
ENTRY_POINTS = """[tools.render.registry]
txt = bookmark_plugin.formats:build_text
broken = bookmark_plugin.formats:build_broken
missing = bookmark_plugin.nowhere:build
"""
CHAPTERS = 9  # more than tools/core/parallel.py's MIN_ITEMS: with -j 2 the chapters are parsed in forked workers


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory) -> Path:
    """A folder holding the package `bookmark_plugin` and its dist-info, as pip would have installed them."""
    site = tmp_path_factory.mktemp("site-packages")
    package = site / "bookmark_plugin"
    package.mkdir()
    (package / "__init__.py").write_text(PLUGIN_MODULE, encoding="utf-8")
    (package / "formats.py").write_text(FORMAT_MODULE, encoding="utf-8")
    info = site / "bookmark_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: bookmark-plugin\nVersion: 1.0\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(ENTRY_POINTS, encoding="utf-8")
    (info / "top_level.txt").write_text("bookmark_plugin\n", encoding="utf-8")
    return site


@pytest.fixture
def tools(plugin_path, tmp_path):
    """Run the CLI in a subprocess that sees the plugin package; no traceback, ever."""

    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), str(plugin_path)]), BOOK_CACHE_DIR=str(tmp_path / "cache"))
        done = subprocess.run([sys.executable, "-m", "tools", *args], capture_output=True, text=True, timeout=300, cwd=cwd or tmp_path, env=env, check=False)
        assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
        return done

    return run


def _book(root: Path, toml: str, extra: dict[str, str] | None = None) -> Path:
    files = {"book.toml": toml, "README.md": "# Intro\n\nThis is ==very important== text.\n\nTerm\n: Its definition\n\nSee [the next](c1.md).\n"}
    for number in range(1, CHAPTERS):
        files[f"c{number}.md"] = f"# Chapter {number}\n\nMore ==marked{number}== words and ==[hidden](missing.md)==.\n"
    files["chapters-md.txt"] = "README.md\n" + "".join(f"c{number}.md\n" for number in range(1, CHAPTERS))
    return write_book(root, {**files, **(extra or {})})


PLUGINS = """[book]
title = "Plugged"
theme = "theme"

[markdown]
plugins = [
  { use = "bookmark_plugin:mark_plugin", options = { tag = "mark" } },
  "mdit_py_plugins.deflist:deflist_plugin",
]
"""
CHAPTER_TEMPLATE = '{% extends "base.html" %}\n{% block main %}<article class="themed-chapter">{{ content }}</article>{% endblock %}\n'


def test_plugins_and_theme_show_in_every_format(tools, tmp_path):
    require_tool("pdftotext")
    root = _book(tmp_path / "book", PLUGINS, {
        "theme/chapter.html": CHAPTER_TEMPLATE,
        "theme/style.css": "/* the theme's site stylesheet */\n",
        "theme/print.css": (REPO / "tools/render/theme/print.css").read_text(encoding="utf-8") + '\n.chapter h1::before { content: "Themed: "; }\n',
        "theme/epub.css": "/* the theme's e-book stylesheet */\n",
        "theme/logo.svg": '<svg xmlns="http://www.w3.org/2000/svg"/>\n',
    })
    done = tools("build", "all", "--book", str(root), "--out", str(tmp_path / "out"), "-j", "2")
    assert done.returncode == 0, done.stderr + done.stdout

    site = tmp_path / "out" / "html"
    intro = parse(site / "README.html")
    assert intro.find("mark").get_text() == "very important"
    assert [dt.get_text(strip=True) for dt in intro.select("dl dt")] == ["Term"]
    for number in range(1, CHAPTERS):  # parsed in forked workers: they apply the same plugins
        page = parse(site / f"c{number}.html")
        assert [m.get_text() for m in page.find_all("mark")] == [f"marked{number}", "[hidden](missing.md)"]
        assert "==" not in page.select_one("article").get_text()
    assert intro.select_one("article.themed-chapter") is not None, "the theme's chapter.html renders chapters"
    assert parse(site / "index.html").select_one("article.themed-chapter") is None, "other pages keep the built-in templates"
    assert (site / "assets" / "style.css").read_text(encoding="utf-8") == "/* the theme's site stylesheet */\n"
    assert (site / "assets" / "logo.svg").is_file(), "a theme file that replaces nothing is copied with the assets"
    assert dangling_links(site) == []

    printed = PdfReport(tmp_path / "out" / "book.pdf").text(layout=False)
    assert "very important" in printed and "marked8" in printed and "==" not in printed
    assert "Themed: Intro" in printed and "Themed: Chapter 8" in printed, "the theme's print.css styles the PDF"

    with zipfile.ZipFile(tmp_path / "out" / "book.epub") as epub:
        names = epub.namelist()
        body = epub.read(next(n for n in names if n.endswith("README.xhtml"))).decode("utf-8")
        stylesheet = epub.read(next(n for n in names if n.endswith(".css"))).decode("utf-8")
    assert "<mark>very important</mark>" in body and "<dt>Term</dt>" in body
    assert stylesheet == "/* the theme's e-book stylesheet */\n"


def test_the_link_checker_sees_the_plugins_parse(tools, tmp_path):
    """Inside ==...== the plugin keeps `[hidden](missing.md)` as text: no link, nothing to report."""
    plain = _book(tmp_path / "plain", '[book]\ntitle = "Plain"\n')
    done = tools("check-links", "--book", str(plain))
    assert done.returncode == 1 and "missing.md" in done.stdout + done.stderr
    plugged = _book(tmp_path / "plugged", '[markdown]\nplugins = ["bookmark_plugin:mark_plugin"]\n')
    done = tools("check-links", "--book", str(plugged))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_changed_plugin_list_or_theme_is_never_served_from_the_cache(tools, tmp_path):
    root = _book(tmp_path / "book", '[book]\ntitle = "Cached"\n')
    out = tmp_path / "site"

    def build() -> None:
        done = tools("build", "html", "--book", str(root), "--out", str(out))
        assert done.returncode == 1, done.stderr  # the hidden links are broken without the plugin
    build()
    assert "==very important==" in parse(out / "README.html").get_text()
    (root / "book.toml").write_text('[book]\ntitle = "Cached"\ntheme = "theme"\n\n[markdown]\nplugins = ["bookmark_plugin:mark_plugin"]\n', encoding="utf-8")
    (root / "theme").mkdir()
    (root / "theme" / "chapter.html").write_text(CHAPTER_TEMPLATE, encoding="utf-8")
    done = tools("build", "html", "--book", str(root), "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert parse(out / "README.html").find("mark").get_text() == "very important"
    assert parse(out / "c3.html").select_one("article.themed-chapter mark").get_text() == "marked3"
    (root / "theme" / "chapter.html").write_text(CHAPTER_TEMPLATE.replace("themed-chapter", "retouched"), encoding="utf-8")
    assert tools("build", "html", "--book", str(root), "--out", str(out)).returncode == 0
    assert parse(out / "c3.html").select_one("article.retouched mark").get_text() == "marked3"


def test_a_package_adds_a_format(tools, tmp_path):
    root = _book(tmp_path / "book", '[book]\ntitle = "Text"\n')
    helped = tools("build", "--help")
    assert helped.returncode == 0 and "txt(bookmark-plugin1.0)" in "".join(helped.stdout.split()), helped.stdout  # wrapped anywhere
    for _attempt in range(2):  # the second build replaces the first: the output is stamped as the tool's
        done = tools("build", "txt", "--book", str(root))
        assert done.returncode == 1, done.stderr  # the book's broken links are still reported
        assert f"Built txt: {CHAPTERS} chapters, {CHAPTERS} chapters in book.txt" in done.stdout
    text = (tmp_path / "_build" / "txt" / "book.txt").read_text(encoding="utf-8")
    assert text.startswith("Text\n== Intro ==\n# Intro") and "== Chapter 8 ==" in text

    done = tools("build", "broken", "--book", str(root), "--out", str(tmp_path / "_build" / "txt"))
    assert done.returncode == 2
    assert "the format 'broken' (entry point 'broken = bookmark_plugin.formats:build_broken' in the group 'tools.render.registry' of the package 'bookmark-plugin' 1.0) failed: ValueError: the text format broke" in done.stderr
    assert (tmp_path / "_build" / "txt" / "book.txt").read_text(encoding="utf-8") == text, "the last good output stays"
    assert not (tmp_path / "_build" / "txt" / "half.txt").exists()
    done = tools("build", "missing", "--book", str(root))
    assert done.returncode == 2
    assert "entry point 'missing = bookmark_plugin.nowhere:build'" in done.stderr and "No module named 'bookmark_plugin.nowhere'" in done.stderr
    assert not (tmp_path / "_build" / "missing").exists()


BAD_CONFIGS = [
    ('[markdown]\nplugins = ["nosuch.module:plugin"]\n', 2, "cannot be imported: No module named 'nosuch'"),
    ('[markdown]\nplugins = [\n  "bookmark_plugin:nothing",\n]\n', 3, "has no 'nothing'"),
    ('[markdown]\nplugins = ["bookmark_plugin:NOT_A_FUNCTION"]\n', 2, "is not a function"),
    ('[markdown]\nplugins = ["just a name"]\n', 2, 'write "module:function"'),
    ('[markdown]\nplugins = "bookmark_plugin:mark_plugin"\n', 2, "'plugins' must be a list"),
    ('[markdown]\nextensions = []\n', 2, "unknown key 'extensions' in [markdown]"),
    ('[[markdown.plugins]]\nuse = "bookmark_plugin:needs_option"\noptions = { colour = "red" }\n', 2, "failed when applied to the parser: ValueError: unknown colour 'red'"),
    ('[[markdown.plugins]]\nuse = "bookmark_plugin:mark_plugin"\noption = 1\n', 2, "unknown key 'option'"),
    ('\n[markdown]\nplugins = ["bookmark_plugin:fails_on_boom"]\n', 3, "'bookmark_plugin:fails_on_boom' failed while parsing: RuntimeError: the plugin exploded"),
    ('[book]\ntheme = "../elsewhere"\n', 2, "name a folder inside the book's root folder"),
    ('[book]\ntheme = "nowhere"\n', 2, "the theme folder 'nowhere' does not exist"),
]


@pytest.mark.parametrize(("toml", "line", "words"), BAD_CONFIGS, ids=[words.split(":")[0][:40] for _, _, words in BAD_CONFIGS])
def test_a_bad_extension_is_a_sentence_at_its_line(tools, tmp_path, toml, line, words):
    root = _book(tmp_path / "book", toml, {"c4.md": "# Chapter 4\n\nThis !!boom breaks a plugin.\n"})
    done = tools("build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{root / 'book.toml'}:{line}: " in done.stderr and words in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("template", "words"), [
    ("{% if %}\n", "theme/chapter.html:1: the theme's template cannot be rendered: TemplateSyntaxError"),
    ("{{ nothing.here }}\n", "theme/chapter.html: the theme's template cannot be rendered: UndefinedError: 'nothing' is undefined"),
])
def test_a_broken_theme_template_is_a_sentence(tools, tmp_path, template, words):
    root = _book(tmp_path / "book", '[book]\ntheme = "theme"\n', {"theme/chapter.html": template})
    done = tools("build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert done.returncode == 2 and words in done.stderr, done.stderr
