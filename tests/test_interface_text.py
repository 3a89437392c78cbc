"""The interface in seven languages and search that finds Chinese: the words of every language (all keys, none
empty, placeholders kept), a Chinese book's site, PDF and search as a reader meets them, a French book's interface
without any translation, and the search text of Chinese and spaced languages (hypothesis)."""
from __future__ import annotations

import re
import string
from pathlib import Path
from types import SimpleNamespace

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings, strategies as st

from conftest import require_tool, run_tools, write_book
from tools.book.interface_text import ENGLISH, LANGUAGE_NAMES, TRANSLATIONS, interface_text, language_name
from tools.book.model import parse_text
from tools.render.site.search import sections

LANGUAGES = ("zh", "ja", "ko", "es", "fr", "de")
PLACEHOLDER = re.compile(r"\{(\w+)\}")

# A Chinese book: 模型 is written across a line break in chapter one (still two adjacent characters in the text) and
# appears nowhere in chapter two; 推理 is only in chapter two.
CHINESE_BOOK = {
    "book.toml": '[book]\ntitle = "机器学习工程"\nlanguage = "zh"\n',
    "chapters-md.txt": "training.md\nserving.md\n",
    "training.md": "# 训练\n\n本章讲如何训练大型模\n型，以及怎样保存**检查点**。\n\n## 数据\n\n先准备数据。\n\n```bash\n$ python train.py\n```\n",
    "serving.md": "# 推理\n\n本章讲推理服务和批处理。\n\n## 延迟\n\n延迟越低越好。\n",
}


def test_every_language_has_every_key_with_its_placeholders():
    assert set(LANGUAGES) <= set(TRANSLATIONS) and set(TRANSLATIONS) <= set(LANGUAGE_NAMES)
    for language, words in TRANSLATIONS.items():
        assert set(words) == set(ENGLISH), (language, set(ENGLISH) ^ set(words))
        for key, text in words.items():
            assert text.strip() == text and text, (language, key)
            assert sorted(PLACEHOLDER.findall(text)) == sorted(PLACEHOLDER.findall(ENGLISH[key])), (language, key, text)
            if language in ("zh", "ja", "ko"):
                assert text != ENGLISH[key] and not re.search(r"[A-Za-z]{4,}", PLACEHOLDER.sub("", text).replace("Ctrl+C", "")), (language, key, text)


def test_a_language_tag_finds_its_words_and_english_fills_the_rest():
    assert interface_text("zh-Hans-CN")["previous"] == TRANSLATIONS["zh"]["previous"]
    assert interface_text("FR")["next"] == "Suivant"
    assert interface_text("pt-BR") == ENGLISH
    assert language_name("ja-JP") == "日本語" and language_name("pt") == "pt"


@pytest.fixture(scope="module")
def chinese_book(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("zh")
    root = write_book(tmp / "book", CHINESE_BOOK)
    result = run_tools(tmp, "build", "all", "--book", str(root), "--out", str(tmp / "out"))
    assert result.returncode == 0 and "0 warnings" in result.stdout, result.stdout + result.stderr
    return tmp / "out"


def _page(out: Path, name: str) -> BeautifulSoup:
    return BeautifulSoup((out / "html" / name).read_text(encoding="utf-8"), "html.parser")


def _english_left(html: str) -> list[str]:
    """The English interface texts (those without placeholders) a page still shows."""
    return [text for text in ENGLISH.values() if "{" not in text and text in html]


def test_a_chinese_book_shows_a_chinese_interface(chinese_book):
    zh = TRANSLATIONS["zh"]
    first, second = _page(chinese_book, "training.html"), _page(chinese_book, "serving.html")
    for soup in (first, second):
        html = soup.find("html")
        assert html is not None and html["lang"] == "zh"
        assert soup.select_one(".skip-link").get_text() == "跳到正文"
        search = soup.select_one("#search-input")
        assert search is not None and search["placeholder"] == "搜索"
        assert soup.select_one("label[for=search-input]").get_text() == "搜索本书"
        assert soup.select_one("#sidebar")["aria-label"] == zh["chapters"]
        assert soup.body["data-text-search-none"] == zh["search_none"] and soup.body["data-text-copied"] == "已复制"
        assert not _english_left(str(soup)), _english_left(str(soup))
    assert first.select_one("a.next span").get_text() == "下一章"
    assert second.select_one("a.prev span").get_text() == "上一章"
    assert first.select_one(".page-toc-title").get_text() == "本页内容"
    footer = first.select_one(".page-footer").get_text()
    assert "构建于" in footer and "修订版" not in footer  # outside git: no revision
    front = _page(chinese_book, "index.html")
    assert front.select_one("h2#contents").get_text() == "目录" and "开始阅读：训练" in front.get_text()
    assert "构建" in front.select_one(".front-meta").get_text() and front.select_one(".front-meta code") is None and not _english_left(str(front))
    missing = _page(chinese_book, "404.html")
    assert missing.find("h1").get_text() == "找不到页面" and missing.find("em").get_text() == "机器学习工程"
    assert missing.find("a").get_text() == "前往首页" and not _english_left(str(missing))


def test_a_chinese_book_prints_its_contents_title_in_chinese(chinese_book):
    text = run_pdftotext(chinese_book / "book.pdf")
    assert "目录" in text and "Contents" not in text and "Built" not in text


def run_pdftotext(pdf: Path) -> str:
    import subprocess

    return subprocess.run([require_tool("pdftotext"), str(pdf), "-"], capture_output=True, text=True, check=True).stdout


def test_a_french_book_without_translations_shows_a_french_interface(tmp_path):
    root = write_book(tmp_path / "book", {"book.toml": '[book]\ntitle = "Livre"\nlanguage = "fr"\n', "a.md": "# Un\n\n## Deux\n\nTexte.\n", "b.md": "# Trois\n\nTexte.\n"})
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "site"))
    assert result.returncode == 0, result.stderr
    page = BeautifulSoup((tmp_path / "site" / "a.html").read_text(encoding="utf-8"), "html.parser")
    assert page.find("html")["lang"] == "fr" and page.select_one("a.next span").get_text() == "Suivant"
    assert page.select_one(".page-toc-title").get_text() == "Sur cette page"
    assert not _english_left(str(page)), _english_left(str(page))


def _search(page, query: str) -> list[str]:
    """The pages of the results the search box shows for `query` (or, with no result, its message)."""
    page.locator("#search-input").fill(query)
    page.locator("#search-results:not([aria-busy]) li").first.wait_for()
    return page.locator("#search-results li").evaluate_all("items => items.map(li => { const a = li.querySelector('a'); return a ? a.getAttribute('href') : li.textContent; })")


@pytest.mark.xdist_group("browser")
def test_two_chinese_characters_find_the_chapter_holding_them(chinese_book, browser):
    context = browser.new_context()
    errors: list[str] = []
    page = context.new_page()
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto((chinese_book / "html" / "serving.html").as_uri())
    assert [href.split("#")[0] for href in _search(page, "模型")] == ["training.html"]
    snippet = page.locator("#search-results .search-snippet").first.inner_text()
    assert "模型" in snippet, snippet
    assert [href.split("#")[0] for href in _search(page, "推理")] == ["serving.html"]
    assert [href.split("#")[0] for href in _search(page, "训练 检查点")] == ["training.html"]
    assert _search(page, "深度") == ["没有找到提到“深度”的小节。"]
    page.goto((chinese_book / "html" / "training.html").as_uri())
    page.locator("#search-input").focus()
    assert page.locator(".copy-code").first.inner_text() == "复制"
    context.close()
    assert not errors, errors


def _chinese_section_text(markdown: str) -> str:
    tokens, _, _ = parse_text("a.md", markdown)
    return " ".join(s["x"] for s in sections(SimpleNamespace(title="t"), tokens))  # type: ignore[arg-type]


HAN = st.text(alphabet=st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF), min_size=2, max_size=40)


@settings(max_examples=60, deadline=None)
@given(HAN, st.lists(st.integers(min_value=1, max_value=39), max_size=5), st.sampled_from(["\n", "**", "*", "`", "\n  "]))
def test_chinese_text_stays_adjacent_however_its_lines_are_wrapped(text, cuts, mark):
    """Any two adjacent characters of a paragraph are adjacent in its search text, whatever line breaks or marks the
    source puts between them."""
    pieces, last = [], 0
    for cut in sorted({c for c in cuts if c < len(text)}):
        pieces.append(text[last:cut])
        last = cut
    pieces.append(text[last:])
    if mark in ("**", "*", "`"):
        source = "".join(f"{mark}{p}{mark}" if i % 2 else p for i, p in enumerate(pieces))
    else:
        source = mark.join(pieces)
    assert text in _chinese_section_text("# 标题\n\n" + source + "\n")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(alphabet=string.ascii_letters, min_size=1, max_size=8), min_size=1, max_size=8), st.sampled_from(["\n", " ", " **x** "]))
def test_words_of_a_spaced_language_keep_their_spaces(words, separator):
    found = _chinese_section_text("# Title\n\n" + separator.join(words) + "\n")
    expected = (" x " if "x" in separator else " ").join(words)
    assert found == expected, (found, expected)
