"""Our book's Chinese translation (chapters/zh/) keeps the structure of the English original it translates: the same
headings per level, the same code and math, the same link destinations, and it is mostly Chinese text. Links are
read through the one parser (`parse_text`), never a second way."""
from __future__ import annotations

import json
import subprocess
import unicodedata
from collections import Counter
from pathlib import Path

import pytest
from test_epub import epubcheck

from conftest import REPO, require_tool, run_tools
from tools.book.model import parse_text
from validators import ace_violations, pdfua_errors, ua_claimed

BOOK = REPO / "chapters"
TRANSLATION = BOOK / "zh"
TRANSLATED = sorted(path.relative_to(TRANSLATION).as_posix() for path in TRANSLATION.rglob("*.md"))
# Prose letters that are Han characters; the rest are product names, commands and units kept in Latin script.
MIN_HAN_SHARE = 0.6


def _parsed(path: Path):
    tokens, _env, collected = parse_text(path.name, path.read_text(encoding="utf-8"))
    return tokens, collected


def _code_and_math(tokens) -> Counter:
    found: Counter = Counter()
    for token in tokens:
        if token.type in {"fence", "code_block", "math_block", "math_block_label"}:
            found[(token.type, token.info, token.content)] += 1
        for child in token.children or []:
            if child.type in {"code_inline", "math_inline"}:
                found[(child.type, child.content)] += 1
    return found


def _prose(tokens) -> str:
    return "".join(child.content for token in tokens for child in token.children or [] if child.type == "text")


def test_there_is_a_readme_and_at_least_three_chapters():
    assert "README.md" in TRANSLATED
    assert len(TRANSLATED) >= 4, TRANSLATED


@pytest.mark.parametrize("rel", TRANSLATED)
def test_a_translation_keeps_its_originals_structure(rel):
    original = BOOK / rel
    assert original.is_file(), f"zh/{rel} translates no English chapter: chapters/{rel} is missing"
    zh_tokens, zh = _parsed(TRANSLATION / rel)
    en_tokens, en = _parsed(original)
    assert Counter(h.level for h in zh.headings) == Counter(h.level for h in en.headings)
    assert _code_and_math(zh_tokens) == _code_and_math(en_tokens)
    # A fragment may change (a translated heading has a Chinese id); the file a link lands on may not.
    assert sorted((link.kind, link.href.partition("#")[0]) for link in zh.links) == sorted((link.kind, link.href.partition("#")[0]) for link in en.links)


@pytest.mark.parametrize("rel", TRANSLATED)
def test_a_translation_is_mostly_chinese(rel):
    tokens, _ = _parsed(TRANSLATION / rel)
    letters = [char for char in _prose(tokens) if unicodedata.category(char).startswith("L")]
    han = [char for char in letters if unicodedata.name(char, "").startswith("CJK UNIFIED IDEOGRAPH")]
    assert len(han) / len(letters) >= MIN_HAN_SHARE, f"zh/{rel}: {len(han)} Han characters among {len(letters)} letters"


def test_every_link_of_a_translation_lands_on_the_book_it_would_be_read_in(tmp_path):
    """`check-links` checks both languages of our book ([translations.zh] in chapters/book.toml): a fragment to a
    translated page names its Chinese heading (or an id kept beside it for the English chapters the zh site shows
    untranslated), one to a page left in English its English heading."""
    result = run_tools(tmp_path, "check-links", "--book", str(BOOK), "--format", "json")
    findings = json.loads(result.stdout)["findings"]
    assert findings == [], findings
    assert result.returncode == 0, result.stderr


def test_the_chinese_chapter_list_follows_the_original_with_translated_part_titles():
    """zh/chapters-md.txt exists only to give the parts Chinese titles: it lists the original's chapters, in its order,
    under as many parts, so a chapter added to the book must be added to both lists."""
    def read(path: Path) -> tuple[list[str], list[str]]:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").split("\n")]
        parts = [line[len("Part:"):].strip() for line in lines if line.lower().startswith("part:")]
        chapters = [line for line in lines if line and not line.startswith("#") and not line.lower().startswith("part:")]
        return parts, chapters

    english_parts, english_chapters = read(BOOK / "chapters-md.txt")
    chinese_parts, chinese_chapters = read(TRANSLATION / "chapters-md.txt")
    assert chinese_chapters == english_chapters
    assert len(chinese_parts) == len(english_parts)
    # Chinese words, with Chinese punctuation between them (附录：构建本书)
    chinese = ("CJK UNIFIED IDEOGRAPH", "FULLWIDTH COLON", "FULLWIDTH COMMA", "IDEOGRAPHIC COMMA")
    assert all(all(unicodedata.name(char, "").startswith(chinese) for char in title) for title in chinese_parts), chinese_parts
    assert all(any(unicodedata.name(char, "").startswith("CJK UNIFIED IDEOGRAPH") for char in title) for title in chinese_parts), chinese_parts


@pytest.mark.slow
def test_our_chinese_book_builds_in_every_format_with_chinese_text_and_fonts(tmp_path):
    """`tools build all --lang zh` of our book: no warning; the Chinese PDF's text extracts as Chinese, in an
    embedded Noto CJK font (no character without a glyph, which the build would report as an error); the EPUB
    passes epubcheck and DAISY Ace, the PDF pdfua; the site's front page is in Chinese."""
    require_tool("pdftotext")
    require_tool("pdffonts")
    out = tmp_path / "out"
    result = run_tools(tmp_path, "build", "all", "--book", str(BOOK), "--lang", "zh", "--out", str(out), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "warning:" not in result.stderr and "error:" not in result.stderr, result.stderr
    for name in ("html/zh/index.html", "book.zh.pdf", "book.zh.epub"):
        assert (out / name).is_file(), result.stdout
    text = subprocess.run(["pdftotext", "-l", "12", str(out / "book.zh.pdf"), "-"], capture_output=True, text=True, check=True).stdout
    han = [char for char in text if unicodedata.name(char, "").startswith("CJK UNIFIED IDEOGRAPH")]
    assert len(han) > 500 and "机器学习工程实践" in text, text[:500]
    fonts = subprocess.run(["pdffonts", str(out / "book.zh.pdf")], capture_output=True, text=True, check=True).stdout
    cjk = [line for line in fonts.splitlines() if "CJK" in line]
    assert cjk and all(line.split()[-5] == "yes" for line in cjk), fonts  # emb
    report = epubcheck(out / "book.zh.epub")
    assert "Messages: 0 fatals / 0 errors / 0 warnings" in report, report
    assert ace_violations(out / "book.zh.epub", tmp_path) == []  # DAISY Ace (tests/validators.py)
    assert pdfua_errors(out / "book.zh.pdf") == [] and ua_claimed(out / "book.zh.pdf")
    front = (out / "html" / "zh" / "index.html").read_text(encoding="utf-8")
    assert '<html lang="zh">' in front and "目录" in front
