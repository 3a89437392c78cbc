"""Fonts that cover the text (issue 17, item 4): Chinese, Japanese and Korean print in their Noto CJK faces, a
Chinese word in an English chapter prints too, a character no font has is an error before layout (no PDF), and the
EPUB declares each chapter's language. Read as a reader would: pdftotext, pdffonts, the EPUB's XHTML, epubcheck."""
from __future__ import annotations

import re
import subprocess
import zipfile
from pathlib import Path

import pytest
from hypothesis import given, strategies as st
from test_epub import EPUB_GROUP, epubcheck

from conftest import require, require_tool, run_tools, write_book
from tools.render.pdf.coverage import printed_text, stylesheet_families
from tools.render.pdf.glyphs import Coverage, missing_glyphs, needs_glyph, script_errors
from tools.render.pdf.scripts import script_key

ZH_ONE = "机器学习工程需要可靠的工具。"
ZH_TWO = "这是一个很长的句子，用来测试中文的换行。"
BOOKS = {
    "zh": ({"book.toml": '[book]\ntitle = "工程之书"\nlanguage = "zh"\n',
            "one.md": f"# 第一章\n\n{ZH_ONE}\n\n| 名称 | 说明 |\n| --- | --- |\n| 模型 | 训练好的参数 |\n",
            "two.md": f"# 第二章\n\n{ZH_TWO}\n\n```python\nprint(\"你好，世界\")\n```\n"}, [ZH_ONE, ZH_TWO, "你好，世界"], "Noto-Serif-CJK-SC"),
    "ja": ({"book.toml": '[book]\ntitle = "本"\nlanguage = "ja"\n', "one.md": "# 第一章\n\n機械学習のエンジニアリングには信頼できる道具が必要です。\n"},
           ["機械学習のエンジニアリングには信頼できる道具が必要です。"], "Noto-Serif-CJK-JP"),
    "ko": ({"book.toml": '[book]\ntitle = "책"\nlanguage = "ko"\n', "one.md": "# 첫 번째 장\n\n기계 학습 공학에는 믿을 수 있는 도구가 필요합니다.\n"},
           ["기계 학습 공학에는 믿을 수 있는 도구가 필요합니다."], "Noto-Serif-CJK-KR"),
    "en-with-chinese": ({"one.md": "# Words\n\nThe word 模型 means model, and 训练 means training.\n"}, ["模型", "训练"], "Noto-Serif-CJK-SC"),
}


def pdf_fonts(pdf: Path) -> list[list[str]]:
    """pdffonts' rows: name, type words..., then emb, sub, uni, object id, generation."""
    out = subprocess.run([require_tool("pdffonts"), str(pdf)], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()[2:] if line.strip()]


@pytest.mark.parametrize("name", list(BOOKS))
def test_cjk_text_prints_in_a_noto_cjk_font(tmp_path, name):
    files, sentences, font = BOOKS[name]
    root = write_book(tmp_path / "book", files)
    result = run_tools(tmp_path, "build", "pdf", "--book", str(root), "--out", str(tmp_path / "book.pdf"), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    text = subprocess.run([require_tool("pdftotext"), str(tmp_path / "book.pdf"), "-"], capture_output=True, text=True, check=True).stdout
    for sentence in sentences:
        assert sentence in re.sub(r"\s+", "", text) or sentence in text, (sentence, text)
    rows = [row for row in pdf_fonts(tmp_path / "book.pdf") if row[0].endswith("+" + font)]
    assert rows, pdf_fonts(tmp_path / "book.pdf")
    assert all(row[-5:-2] == ["yes", "yes", "yes"] for row in rows), rows  # embedded, subset, with a ToUnicode map
    assert (tmp_path / "book.pdf").stat().st_size < 2_000_000  # the glyphs used, never the 20 MB font collections


def test_a_character_no_font_has_is_an_error_and_no_pdf(tmp_path):
    listed = subprocess.run([require_tool("fc-list"), ":charset=e000"], capture_output=True, text=True, check=True).stdout
    require(not listed.strip(), f"a font on this machine has U+E000, so it cannot stand for a missing glyph: {listed}")
    root = write_book(tmp_path / "book", {"one.md": "# One\n\nFine.\n", "two.md": "# Two\n\nText, then \ue000 and \ue000 again.\n\n中文也可以。\n"})
    result = run_tools(tmp_path, "build", "pdf", "--book", str(root), "--out", str(tmp_path / "book.pdf"))
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, result.stderr  # one per script, at the first place of its first character
    assert errors[0] == ("two.md:3:12: error: no installed font covers private-use characters, so book.pdf is not written: 1 character in 1 chapter, "
                         "the first '\\ue000' (U+E000 a private-use character) at two.md:3:12. "
                         "A private-use character prints only in the font made for it: name that font in the theme's print.css."), errors
    assert "not written" in result.stdout and not (tmp_path / "book.pdf").exists()


DEVANAGARI = "नमस्ते दुनिया"  # no font this machine's packages install (build/apt-packages.txt) has Devanagari


def require_no_devanagari_font() -> None:
    listed = subprocess.run([require_tool("fc-list"), ":charset=928"], capture_output=True, text=True, check=True).stdout
    require(not listed.strip(), f"a font on this machine has Devanagari, so it cannot stand for a missing font: {listed}")


def test_a_script_no_font_covers_is_one_error_for_the_pdf_only(tmp_path):
    """Every character of a script no font has is one error, naming the script, the count, the first place and the
    Debian package; it counts against the PDF of that language only: the sites and EPUBs say 0 errors."""
    require_no_devanagari_font()
    many = "".join(chr(code) for code in range(0x0915, 0x0939))  # 36 consonants
    root = write_book(tmp_path / "book", {
        "book.toml": '[book]\ntitle = "Book"\n\n[translations.hi]\nfolder = "hi"\n',
        "chapters-md.txt": "one.md\ntwo.md\n",
        "one.md": "# One\n\nPlain English.\n", "two.md": "# Two\n\nStill English.\n",
        "hi/one.md": f"# {DEVANAGARI}\n\n{many}\n", "hi/two.md": "# दो\n\nहिन्दी\n"})
    result = run_tools(tmp_path, "build", "all", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, result.stderr
    chars = len({char for char in DEVANAGARI + many + "दोहिन्दी" if not char.isspace()})  # vowel signs and the virama need glyphs too
    assert errors[0].startswith("hi/one.md:1:3: error: no installed font covers Devanagari, so book.hi.pdf is not written: "), errors
    assert "characters in 2 chapters, the first 'न' (U+0928 DEVANAGARI LETTER NA) at hi/one.md:1:3." in errors[0], errors
    assert errors[0].endswith("Install fonts-noto-core (Debian) or name a font that has them in the theme's print.css."), errors
    assert f"so book.hi.pdf is not written: {chars} different characters in 2 chapters" in errors[0], errors
    summary = {line.split(":")[0]: line for line in result.stdout.splitlines() if line.startswith("Built ")}
    assert "1 error, 0 warnings" in summary["Built pdf (hi)"] and "not written" in summary["Built pdf (hi)"], summary
    for name in ("Built html (hi)", "Built epub (hi)", "Built html (en)", "Built pdf (en)", "Built epub (en)"):
        assert "0 errors, 0 warnings" in summary[name], summary
    assert (tmp_path / "out" / "book.pdf").exists() and not (tmp_path / "out" / "book.hi.pdf").exists()


def test_a_character_no_font_has_in_the_cover_or_a_part_title_is_an_error_at_its_line(tmp_path):
    """The words no chapter holds (the title, authors and description from book.toml, the part titles from the
    chapter list) print on the cover, the contents and the part pages: checked too, at their own lines."""
    listed = subprocess.run([require_tool("fc-list"), ":charset=e001"], capture_output=True, text=True, check=True).stdout
    require(not listed.strip(), f"a font on this machine has U+E001, so it cannot stand for a missing glyph: {listed}")
    root = write_book(tmp_path / "book", {"book.toml": '[book]\ntitle = "Book"\nauthors = ["A \ue001"]\n', "chapters-md.txt": "Part: Start \ue001\none.md\n",
                                          "one.md": "# One\n\nFine.\n"})
    result = run_tools(tmp_path, "build", "pdf", "--book", str(root), "--out", str(tmp_path / "book.pdf"))
    assert result.returncode == 1, result.stdout + result.stderr
    errors = [line for line in result.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, errors  # one script: the first place is book.toml's, and the chapter list is counted
    assert errors[0].startswith("book.toml:3:15: error: no installed font covers private-use characters, so book.pdf is not written: "
                                "1 character in book.toml, chapters-md.txt, the first '\\ue001' (U+E001 a private-use character) at book.toml:3:15."), errors
    assert not (tmp_path / "book.pdf").exists()


@EPUB_GROUP
def test_epub_declares_each_chapters_language(tmp_path):
    files = BOOKS["zh"][0]
    root = write_book(tmp_path / "book", files)
    result = run_tools(tmp_path, "build", "epub", "--book", str(root), "--out", str(tmp_path / "book.epub"), "--strict")
    assert result.returncode == 0, result.stdout + result.stderr
    with zipfile.ZipFile(tmp_path / "book.epub") as epub:
        chapters = [name for name in epub.namelist() if name.endswith((".xhtml", ".html")) and "nav" not in name]
        assert len(chapters) >= 2, epub.namelist()
        for name in chapters:
            head = epub.read(name).decode("utf-8")
            if ZH_ONE in head or ZH_TWO in head:
                assert re.search(r'<html[^>]*\slang="zh"', head) and re.search(r'<html[^>]*\sxml:lang="zh"', head), head[:400]
        opf = next(epub.read(name).decode() for name in epub.namelist() if name.endswith(".opf"))
        assert "<dc:language>zh</dc:language>" in opf
    report = epubcheck(tmp_path / "book.epub")
    assert "No errors or warnings detected" in report, report


def test_the_stylesheet_names_cjk_faces_by_language():
    from tools.core.resources import template_bytes

    families = stylesheet_families(template_bytes("print.css").decode())
    for face in ("Noto Serif CJK SC", "Noto Serif CJK JP", "Noto Serif CJK KR", "Noto Serif CJK TC", "Noto Sans CJK SC", "Noto Sans Mono CJK SC"):
        assert face in families
    assert stylesheet_families('p { font: italic bold 10pt/1.2 "A B", C D, serif }') == ["A B", "C D", "serif"]


@given(st.text())
def test_stylesheet_families_take_any_text(css):
    assert all(isinstance(name, str) and name for name in stylesheet_families(css))


@given(st.text(), st.text())
def test_missing_glyphs_are_located_in_the_source(source, printed):
    covered = Coverage([(0x20, 0x7E), (0x4E00, 0x9FFF)])
    found = missing_glyphs("ch.md", source, printed, covered.__contains__)
    assert len({place.char for place in found}) == len(found)
    for place in found:
        assert place.char not in covered and needs_glyph(place.char)
        if place.line:
            assert source.split("\n")[place.line - 1][place.col - 1] == place.char
    errors = script_errors(found, "book.pdf")
    assert len(errors) == len({script_key(place.char) for place in found})  # one per script
    for error in errors:
        assert error.code == "missing-glyph" and error.severity.value == "error" and "so book.pdf is not written" in error.message


def test_each_script_is_named_with_its_debian_package():
    covered = Coverage([(0x20, 0x7E)])
    text = "机器 学习 ひらがな カタカナ 한국어 العربية עברית हिन्दी ไทย Ωμέγα Жизнь 🚀 ∑ \ue000"
    errors = script_errors(missing_glyphs("a.md", text, text, covered.__contains__), "book.pdf", "zh")
    named = {re.search(r"covers (.+?), so", error.message).group(1): error.suggestion for error in errors}
    assert list(named) == ["Chinese (Han)", "Japanese (Hiragana and Katakana)", "Korean (Hangul)", "Arabic", "Hebrew", "Devanagari", "Thai", "Greek",
                           "Cyrillic", "emoji", "math symbols", "private-use characters"], named
    packages = {name: re.search(r"Install (\S+) \(Debian\)", suggestion).group(1) for name, suggestion in named.items() if "Install " in suggestion}
    assert packages == {"Chinese (Han)": "fonts-noto-cjk", "Japanese (Hiragana and Katakana)": "fonts-noto-cjk", "Korean (Hangul)": "fonts-noto-cjk",
                        "Arabic": "fonts-noto-core", "Hebrew": "fonts-noto-core", "Devanagari": "fonts-noto-core", "Thai": "fonts-noto-core",
                        "Greek": "fonts-dejavu-core", "Cyrillic": "fonts-dejavu-core", "emoji": "fonts-noto-color-emoji", "math symbols": "fonts-stix"}
    first = errors[0]
    assert (first.file, first.line, first.col) == ("a.md", 1, 1) and "4 different characters in 1 chapter" in first.message
    assert "Japanese (Kanji)" in script_errors(missing_glyphs("a.md", "机", "机", covered.__contains__), "book.ja.pdf", "ja-JP")[0].message


def test_what_needs_no_glyph():
    assert not any(needs_glyph(char) for char in " \t\n\u00a0\u200b\u200d\u00ad\ufe0f\U000e0100\u3000")
    assert needs_glyph("中") and needs_glyph("\ue000") and needs_glyph("a")
    assert printed_text('<p title="\ue000">a<style>x{content:"\ue001"}</style>&#xe002;</p>') == "a\ue002"
