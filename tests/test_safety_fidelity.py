"""Nothing is lost and nothing hangs: deep nesting, colliding page names, empty chapters, pathological markdown.

Every case runs the real CLI in a subprocess under a deadline and reads the outputs as a reader would: the site's
pages with bs4, the EPUB's XHTML with an XML parser, the PDF's text with pypdf. No timings are asserted: the
pathological sizes are ones where a quadratic algorithm takes minutes and a linear one seconds.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest
from bs4 import BeautifulSoup

from tests.pdf_check import assert_valid_pdf
from tests.test_epub import epubcheck

REPO = Path(__file__).resolve().parent.parent
DEADLINE = 60


def tools(*args: str, timeout: int = DEADLINE) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    done = subprocess.run([sys.executable, "-m", "tools", *args], capture_output=True, text=True, timeout=timeout, env=env)
    assert "Traceback" not in done.stdout + done.stderr, done.stderr
    return done


def build(fmt: str, root: Path, out: Path, *extra: str) -> subprocess.CompletedProcess:
    done = tools("build", fmt, "--book", str(root), "--out", str(out), *extra)
    assert done.returncode in (0, 1), done.stderr
    assert out.exists(), done.stderr
    return done


def site_text(page: Path) -> str:
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").get_text(" ")


def epub_texts(epub: Path) -> dict[str, str]:
    """{member: text} of every XHTML document; each must be well-formed XML."""
    texts = {}
    with zipfile.ZipFile(epub) as archive:
        for name in archive.namelist():
            if name.endswith(".xhtml"):
                root = ElementTree.fromstring(archive.read(name))
                texts[name] = " ".join(root.itertext())
    return texts


def pdf_text(pdf: Path) -> str:
    from pypdf import PdfReader

    assert_valid_pdf(pdf)
    return "\n".join(page.extract_text() or "" for page in PdfReader(str(pdf)).pages)


def squeeze(text: str) -> str:
    return re.sub(r"\s+", "", text)


# ---------------------------------------------------------------------------------------------------- nesting


def nested_list(depth: int) -> str:
    return "\n".join("  " * i + f"- item{i + 1}" for i in range(depth)) + f"\n\nParagraph after {depth} levels.\n"


NESTING = {
    "list-12": (nested_list(12), "item12", False),
    "list-32": (nested_list(32), "item32", False),
    "list-60": (nested_list(60), "item60", True),
    "quote-50": (">" * 50 + " deepest quote\n\nParagraph after 50 levels.\n", "deepest quote", False),
    "quote-150": (">" * 150 + " deepest quote\n\nParagraph after 150 levels.\n", "deepest quote", True),
    "mix-40": ("".join("> " if i % 2 == 0 else "- " for i in range(40)) + "deepest mix\n\nParagraph after 40 levels.\n", "deepest mix", False),
    "mix-100": ("".join("> " if i % 2 == 0 else "- " for i in range(100)) + "deepest mix\n\nParagraph after 100 levels.\n", "deepest mix", True),
}


@pytest.mark.parametrize("case", sorted(NESTING))
def test_deep_nesting_is_shown_in_every_format(tmp_book, tmp_path, case):
    text, deepest, over_limit = NESTING[case]
    after = re.search(r"Paragraph after \d+ levels\.", text).group(0)
    root = tmp_book({"deep.md": "# Deep\n\n" + text})
    site = build("html", root, tmp_path / "site")
    assert deepest in site_text(tmp_path / "site" / "deep.html")
    assert after in site_text(tmp_path / "site" / "deep.html")
    if over_limit:  # shown as text, and said so at the line where the structure stops
        assert re.search(r"deep\.md:\d+: warning: this block is nested too deeply", site.stderr), site.stderr
    else:
        assert "nested too deeply" not in site.stderr
    build("epub", root, tmp_path / "book.epub")
    chapter = epub_texts(tmp_path / "book.epub")["EPUB/deep.xhtml"]
    assert deepest in chapter and after in chapter
    build("pdf", root, tmp_path / "book.pdf")
    printed = squeeze(pdf_text(tmp_path / "book.pdf"))
    assert squeeze(deepest) in printed and squeeze(after) in printed


def test_a_list_nested_12_levels_keeps_its_structure(tmp_book, tmp_path):
    root = tmp_book({"deep.md": "# Deep\n\n" + nested_list(12)})
    build("html", root, tmp_path / "site")
    page = BeautifulSoup((tmp_path / "site" / "deep.html").read_text(encoding="utf-8"), "html.parser")
    deepest = page.find(string=re.compile("item12"))
    assert len(deepest.find_parents("ul")) == 12


@pytest.mark.parametrize("text,kept", [
    ("[" * 5000 + "x" + "](y)" * 5000, "x"),
    ("*" * 5000 + "word" + "*" * 5000, "word"),
    ("_a " * 3000 + "b_ " * 3000, "b"),
    ("[a](" * 3000 + "tail", "tail"),
    ("<a " * 3000 + "tail", "tail"),
    ("a " + "`" * 3000 + "tail", "tail"),  # at the start of a line, a fence
], ids=["nested-links", "stars", "underscores", "link-openers", "html-openers", "backticks"])
def test_inline_nesting_keeps_every_character(tmp_book, tmp_path, text, kept):
    root = tmp_book({"a.md": "# A\n\n" + text + "\n\nThe paragraph after.\n"})
    build("html", root, tmp_path / "site")
    shown = site_text(tmp_path / "site" / "a.html")
    assert kept in shown and "The paragraph after." in shown
    if text.startswith("[[["):  # the innermost link is a link; every other bracket is shown as text
        assert shown.count("[") == 4999 and shown.count("](y)") == 4999


@pytest.mark.parametrize("case", ["raw-html", "emphasis"])
def test_deep_inline_and_raw_html_print_and_stay_in_the_epub(tmp_book, tmp_path, case):
    """WeasyPrint runs out of stack near 135 nested elements and lxml (EPUB) drops what is nested past 255: the
    PDF and the EPUB show deeper raw HTML as text and deeper emphasis without its tags, and say so."""
    deep = "<div>" * 3000 + "deepest text" + "</div>" * 3000 if case == "raw-html" else "*" * 3000 + "deepest text" + "*" * 3000
    root = tmp_book({"a.md": "# A\n\nBefore.\n\n" + deep + "\n\nThe paragraph after.\n", "b.md": "# B\n\nChapter b.\n"})
    done = build("epub", root, tmp_path / "book.epub")
    assert re.search(r"a\.md:5: warning: .* nest", done.stderr), done.stderr
    chapter = epub_texts(tmp_path / "book.epub")["EPUB/a.xhtml"]
    assert "deepest text" in chapter and "The paragraph after." in chapter
    build("pdf", root, tmp_path / "book.pdf")
    printed = pdf_text(tmp_path / "book.pdf")
    assert "deepest text" in printed and "The paragraph after." in printed and "Chapter b." in printed


def test_running_out_of_stack_never_escapes():
    """A parse deeper than the interpreter's stack is parsed again with less nesting, then shown as text."""
    from tools.markdown.parser import create_markdown, too_deep_messages

    md = create_markdown()
    env: dict = {}
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + 60)  # room for the test, not for 90 nested quotes
    try:
        tokens = md.parse(">" * 90 + " deep\n\nafter\n", env)
    finally:
        sys.setrecursionlimit(limit)
    html = md.renderer.render(tokens, md.options, env)
    assert "deep" in html and "after" in html
    assert too_deep_messages(env)


# ---------------------------------------------------------------------------------------------------- page names


COLLIDING = {
    "a.md": "# A md\n\nMARK-a-md\n",
    "a.markdown": "# A markdown\n\nMARK-a-markdown\n",
    "A.md": "# Upper A\n\nMARK-upper-a\n",
    "x/README.md": "# X readme\n\nMARK-x-readme-md [a](../a.md) [up](../A.md) [md](../a.markdown)\n",
    "x/README.markdown": "# X readme markdown\n\nMARK-x-readme-markdown\n",
    "404.md": "# Four oh four\n\nMARK-404\n",
    "index.md": "# Index\n\nMARK-index\n",
    "front.md": "# Front\n\nMARK-front\n",
    "assets/style.md": "# Style\n\nMARK-assets-style\n",
    "search.md": "# Search\n\nMARK-search\n",
    "nav.md": "# Nav\n\nMARK-nav\n",
    "cover.md": "# Cover\n\nMARK-cover\n",
    "contents.md": "# Contents\n\nMARK-contents\n",
    "a/b.md": "# A slash b\n\nMARK-a-slash-b\n",
    "a-b.md": "# A dash b\n\nMARK-a-dash-b\n",
}


def colliding_book(tmp_book):
    files = dict(COLLIDING)
    files["chapters-md.txt"] = "\n".join(COLLIDING) + "\n"
    return tmp_book(files)


def marks(text: str) -> set[str]:
    return set(re.findall(r"MARK-[a-z0-9-]+", text))


def test_site_pages_never_overwrite_one_another(tmp_book, tmp_path):
    root = colliding_book(tmp_book)
    build("html", root, tmp_path / "site")
    pages = [p for p in (tmp_path / "site").rglob("*.html")]
    assert len({p.relative_to(tmp_path / "site").as_posix().casefold() for p in pages}) == len(pages)
    found: dict[str, list[str]] = {}
    for page in pages:
        body = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").find(class_="chapter")
        for mark in marks(body.get_text(" ") if body else ""):
            found.setdefault(mark, []).append(page.relative_to(tmp_path / "site").as_posix())
    assert sorted(found) == sorted(marks("".join(COLLIDING.values()))), found
    assert all(len(where) == 1 for where in found.values()), found  # every chapter in its own page, once
    assert "Page not found" in (tmp_path / "site" / "404.html").read_text(encoding="utf-8")
    assert (tmp_path / "site" / "assets" / "style.css").is_file()
    assert marks((tmp_path / "site" / "A.html").read_text(encoding="utf-8")) >= {"MARK-upper-a"}  # sorted first
    front = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "MARK-index" in front  # index.md keeps index.html; the book's front page goes elsewhere
    readme = BeautifulSoup((tmp_path / "site" / "x" / "README.html").read_text(encoding="utf-8"), "html.parser")
    targets = {a.get_text(): a["href"] for a in readme.find(class_="chapter").find_all("a") if a.get_text() in ("a", "up", "md")}
    opened = {name: marks((tmp_path / "site" / "x" / href).resolve().read_text(encoding="utf-8")) for name, href in targets.items()}
    assert "MARK-a-md" in opened["a"] and "MARK-upper-a" in opened["up"] and "MARK-a-markdown" in opened["md"]


def test_epub_members_never_overwrite_one_another(tmp_book, tmp_path):
    root = colliding_book(tmp_book)
    build("epub", root, tmp_path / "book.epub")
    with zipfile.ZipFile(tmp_path / "book.epub") as archive:
        names = archive.namelist()
    assert len({n.casefold() for n in names}) == len(names)
    texts = epub_texts(tmp_path / "book.epub")
    found: dict[str, list[str]] = {}
    for name, text in texts.items():
        for mark in marks(text):
            found.setdefault(mark, []).append(name)
    assert sorted(found) == sorted(marks("".join(COLLIDING.values())))
    assert all(len(where) == 1 for where in found.values()), found
    assert "EPUB/nav.xhtml" in texts and "EPUB/cover.xhtml" in texts


def test_pdf_prefixes_are_unique():
    from tools.render.pdf.document import chapter_prefix

    assert chapter_prefix("a/b.md") == chapter_prefix("a-b.md")  # the reason for the de-duplication
    assert "--" not in chapter_prefix("a--b.md") and "--" not in chapter_prefix("x/-/y.md")


def test_print_document_gives_each_chapter_its_own_section(tmp_book):
    from tools.book.load import load_book
    from tools.core.errors import Diagnostics
    from tools.render.pdf.document import SingleDocumentPolicy, print_document

    files = dict(COLLIDING, **{"a--b.md": "# Two dashes\n\nMARK-two-dashes\n", "a/-b.md": "# Dash b\n\nMARK-dash-b\n"})
    files["chapters-md.txt"] = "\n".join(k for k in files if k != "chapters-md.txt") + "\n"
    book = load_book(tmp_book(files))
    policy = SingleDocumentPolicy(book, Diagnostics())
    prefixes = list(policy.prefixes.values())
    assert len(set(prefixes)) == len(prefixes) and not {"cover", "contents"} & set(prefixes)
    assert all("--" not in prefix for prefix in prefixes)
    page = BeautifulSoup(print_document(book, Diagnostics()), "html.parser")
    ids = [tag["id"] for tag in page.find_all(id=True)]
    assert len(ids) == len(set(ids)), [i for i in ids if ids.count(i) > 1]
    for chapter in book.chapters:
        section = page.find("section", id=policy.prefixes[chapter.path])
        assert marks(section.get_text(" ")) == marks(chapter.text), chapter.path


def test_a_copied_file_never_replaces_a_page(tmp_book, tmp_path):
    root = tmp_book({"x.md": "# X\n\nMARK-x-page [raw](x.html) [style](assets/style.css)\n", "x.html": "<p>MARK-raw-file</p>\n", "assets/style.css": "body { color: red }\n"})
    done = build("html", root, tmp_path / "site", "--local")
    assert "MARK-x-page" in (tmp_path / "site" / "x.html").read_text(encoding="utf-8")
    assert "color: red" not in (tmp_path / "site" / "assets" / "style.css").read_text(encoding="utf-8")
    assert re.search(r"x\.md:3(:\d+)?: error: 'x\.html' has the name of a page", done.stderr), done.stderr
    assert re.search(r"x\.md:3(:\d+)?: error: 'assets/style\.css' has the name of a file", done.stderr), done.stderr


# ---------------------------------------------------------------------------------------------------- empty chapters


EMPTY = {
    "zero.md": "",
    "blank.md": "  \n\n\t\n",
    "front-matter.md": "---\ntitle: Only front matter\n---\n",
    "comment.md": "<!-- -->\n",
    "heading.md": "# Only a heading\n",
    "full.md": "# Full\n\nSome text.\n",
}


def test_empty_chapters_are_valid_in_every_format(tmp_book, tmp_path):
    root = tmp_book(dict(EMPTY))
    build("html", root, tmp_path / "site")
    for chapter in EMPTY:
        assert (tmp_path / "site" / chapter.replace(".md", ".html")).is_file()
    build("epub", root, tmp_path / "book.epub")
    texts = epub_texts(tmp_path / "book.epub")  # every XHTML file parses
    assert {f"EPUB/{c.replace('.md', '.xhtml')}" for c in EMPTY} <= set(texts)
    assert "Messages: 0 fatals / 0 errors" in epubcheck(tmp_path / "book.epub")
    build("pdf", root, tmp_path / "book.pdf")
    assert "Some text." in pdf_text(tmp_path / "book.pdf")


# ---------------------------------------------------------------------------------------------------- linear time


def test_twenty_thousand_www_links_are_all_checked(tmp_book):
    links = " ".join(f"www.example{i}.com" for i in range(20_000))
    root = tmp_book({"a.md": "# A\n\n" + links + "\n"})
    done = tools("check-links", "--book", str(root))
    assert done.returncode == 0, done.stderr
    assert "20000 links" in done.stdout + done.stderr


def test_twenty_thousand_www_links_are_all_rendered(tmp_book, tmp_path):
    links = " ".join(f"www.example{i}.com" for i in range(20_000))
    root = tmp_book({"a.md": "# A\n\n" + links + "\n"})
    build("html", root, tmp_path / "site")
    page = BeautifulSoup((tmp_path / "site" / "a.html").read_text(encoding="utf-8"), "html.parser")
    hrefs = [a["href"] for a in page.find(class_="chapter").find_all("a", href=re.compile("example"))]
    assert len(hrefs) == 20_000 and hrefs[-1] == "http://www.example19999.com"


def test_a_word_of_100000_letters_prints(tmp_book, tmp_path):
    root = tmp_book({"a.md": "# Long\n\nBefore " + "x" * 100_000 + " after.\n\n`" + "y" * 3000 + "`\n"})
    build("pdf", root, tmp_path / "book.pdf")
    text = pdf_text(tmp_path / "book.pdf")
    assert text.count("x") == 100_000 and text.count("y") == 3000 and "after." in text


def test_ten_thousand_identical_headings_get_distinct_ids(tmp_book, tmp_path):
    root = tmp_book({"a.md": "# Same\n\n" * 10_000})
    build("html", root, tmp_path / "site")
    page = BeautifulSoup((tmp_path / "site" / "a.html").read_text(encoding="utf-8"), "html.parser")
    ids = [h["id"] for h in page.find_all("h1", id=True)]
    assert ids[:3] == ["same", "same-1", "same-2"] and ids[-1] == "same-9999" and len(set(ids)) == 10_000


def test_thousands_of_footnotes_and_definitions(tmp_book, tmp_path):
    n = 3000
    text = "".join(f"Text{i}[^{i}] and [r{i}].\n\n" for i in range(n))
    text += "".join(f"[^{i}]: Note{i}.\n" for i in range(n)) + "".join(f"[r{i}]: https://e.com/{i}\n" for i in range(n))
    root = tmp_book({"a.md": "# Notes\n\n" + text})
    build("html", root, tmp_path / "site")
    page = (tmp_path / "site" / "a.html").read_text(encoding="utf-8")
    assert page.count('href="https://e.com/') == n and f"Note{n - 1}." in page and "Note0." in page


def test_brackets_and_runs_under_a_deadline(tmp_book, tmp_path):
    text = "[" * 20_000 + "\n\n" + "[a](" * 10_000 + "\n\n" + "*a " * 20_000 + "\n\n" + "<a " * 20_000 + "\n\n" + "`a " * 20_000 + "\n\nEnd.\n"
    root = tmp_book({"a.md": "# Runs\n\n" + text})
    done = tools("check-links", "--book", str(root))
    assert done.returncode in (0, 1)
    build("html", root, tmp_path / "site")
    shown = site_text(tmp_path / "site" / "a.html")
    assert shown.count("[") == 30_000 and "End." in shown


def test_a_large_table(tmp_book, tmp_path):
    row = "| " + " | ".join(f"cell {c} with some words" for c in range(8)) + " |\n"
    rows = 5000
    root = tmp_book({"a.md": "# Table\n\n| " + " | ".join(f"h{c}" for c in range(8)) + " |\n|" + "---|" * 8 + "\n" + row * rows + "\nEnd.\n"})
    build("html", root, tmp_path / "site")
    page = (tmp_path / "site" / "a.html").read_text(encoding="utf-8")
    assert page.count("<tr>") == rows + 1 and "End." in page


ODD_NAMES = {
    "one.md": "# One\n\nMARK-one [two](my%20notes.md) [three](sub%20dir/caf%C3%A9.md) [four](a%23b.md) [five](50%25.md)\n",
    "my notes.md": "# Two\n\nMARK-two [back](one.md)\n",
    "sub dir/café.md": "# Three\n\nMARK-three [back](../one.md)\n",
    "a#b.md": "# Four\n\nMARK-four\n",
    "50%.md": "# Five\n\nMARK-five\n",
    "a-b.md": "# Six\n\nMARK-six\n",
}


def test_odd_file_names_link_and_validate(tmp_book, tmp_path):
    """Spaces, `#`, `%` and accents in chapter names: every link of the site lands, the EPUB passes epubcheck."""
    from tests.site_check import dangling_links

    root = tmp_book(dict(ODD_NAMES, **{"chapters-md.txt": "\n".join(ODD_NAMES) + "\n"}))
    done = build("html", root, tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert dangling_links(tmp_path / "site") == []
    one = BeautifulSoup((tmp_path / "site" / "one.html").read_text(encoding="utf-8"), "html.parser").find(class_="chapter")
    assert len([a for a in one.find_all("a") if a.get_text() in ("two", "three", "four", "five")]) == 4
    build("epub", root, tmp_path / "book.epub")
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in epubcheck(tmp_path / "book.epub")
    found = {mark for text in epub_texts(tmp_path / "book.epub").values() for mark in marks(text)}
    assert found == marks("".join(ODD_NAMES.values()))
