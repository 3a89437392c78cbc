"""A page body rendered once with its links' URLs as marks, then filled in for a site (tools/render/html.py
`marked_urls`, `fill_urls`), is the body rendered with those URLs: for any chapter (hypothesis builds them from link
forms of every kind: markdown links and images, references, raw-HTML `href`, `src` and `srcset`, theme images,
fragments, URLs that need escaping) and for the chapters of the shared corpus and of our book. A translation's site
shows an untranslated chapter with the original's rendered body this way."""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from conftest import REPO, require
from tools.book.load import load_book
from tools.book.model import Chapter, parse_text, resolve_links
from tools.book.resolve import FileIndex
from tools.markdown.parser import create_markdown
from tools.render.html import LinkPolicy, fixed_urls, render_chapter_html
from tools.render.site.write import chapter_body, filled, marks

MD = create_markdown()
FILES = frozenset({"a.md", "b/c.md", "page.md", "img/x.png", "img/y y.png", "data/t.csv"})
INDEX = FileIndex(FILES, frozenset({"b", "img", "data"}), frozenset({"a.md", "b/c.md", "page.md"}))
LINKS = [
    "[a](a.md)", "[c](b/c.md#part-two)", "![x](img/x.png)", "![y](<img/y y.png> \"t\")", "[csv](data/t.csv#L3)",
    "[ref][r]\n\n[r]: b/c.md", "<a href=\"a.md#top\">raw</a>", "<img src=\"img/x.png\" alt=\"x\">",
    "<img srcset=\"img/x.png 1x, img/y%20y.png 2x\" src=\"img/x.png\">", "![dark](img/x.png#gh-dark-mode-only)", "<img src=\"img/x.png#gh-light-mode-only\" alt=\"light\">",
    "[ext](https://example.com/a?b=1&c=2)", "[broken](missing.md)", "<a href=\"javascript:alert(1)\">js</a>",
    "[self](#local)", "[amp](a.md#a&b\"c)", "`[code](a.md)`", "<picture><source srcset=\"img/x.png\" media=\"(prefers-color-scheme: dark)\"><img src=\"img/y%20y.png\"></picture>",
]
URLS = ["a.html", "../b/c.html#part-two", "../../img/x.png", "img/y%20y.png", "https://github.com/o/r/blob/main/data/t.csv#L3", "a.html#a&b\"c", "../x.png#frag"]


def _chapter(text: str) -> Chapter:
    tokens, env, found = parse_text("page.md", text, MD)
    chapter = Chapter("page.md", text, tokens, env, "page", found.headings, found.anchors, found.links, key="k")
    resolve_links(chapter, INDEX)
    return chapter


def _same(chapter: Chapter, urls: list[str | None]) -> None:
    direct = render_chapter_html(MD, chapter.parsed, chapter.links, LinkPolicy(url_for=fixed_urls(chapter.links, urls), id_for=lambda anchor: anchor), chapter.env)
    assert filled(chapter_body(MD, chapter, chapter.parsed, marks(chapter, urls)), urls)[0] == direct


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(LINKS), min_size=1, max_size=8), st.randoms(use_true_random=False))
def test_marked_and_filled_is_rendered_with_the_urls(parts, rng):
    chapter = _chapter("# c\n\n" + "\n\n".join(parts) + "\n")
    local = [link.target is not None and link.target.kind.name not in ("EXTERNAL", "BROKEN") for link in chapter.links]
    urls = [rng.choice(URLS) if own else link.href for link, own in zip(chapter.links, local)]
    _same(chapter, urls)


def test_a_link_to_the_book_is_a_mark_until_it_is_filled():
    chapter = _chapter("# c\n\n[a](a.md) <img src=\"img/x.png#gh-light-mode-only\" alt=\"l\"> [e](https://example.com)\n")
    urls = ["../a.html", "../../img/x.png#f", "https://example.com"]
    body = chapter_body(MD, chapter, chapter.parsed, marks(chapter, urls))[0]
    assert body.count("\ue000") == 2 and "https://example.com" in body
    assert 'src="../../img/x.png#gh-light-mode-only"' in filled((body, [], "", []), urls)[0]
    _same(chapter, urls)


def test_a_chapter_holding_a_marks_character_is_rendered_with_its_urls():
    chapter = _chapter("# c\n\nA private \ue000 character and [a](a.md).\n")
    body = chapter_body(MD, chapter, chapter.parsed, marks(chapter, ["a.html"]))[0]
    assert 'href="a.html"' in body
    _same(chapter, ["a.html"])


@pytest.mark.parametrize("book", [REPO / "chapters", REPO.parent / "shared" / "corpus" / "ml-engineering"])
def test_real_chapters_render_the_same(book: Path):
    require(book.is_dir(), f"the book {book} is not here")
    loaded = load_book(book)
    rng = random.Random(36)
    for chapter in rng.sample(loaded.chapters, min(12, len(loaded.chapters))):
        chapter.tokens  # noqa: B018 - parsed here, with its links resolved
        urls = [f"../{link.target.path}#x&y" if link.target is not None and link.target.kind.name not in ("EXTERNAL", "BROKEN") else link.href for link in chapter.links]
        _same(chapter, urls)
