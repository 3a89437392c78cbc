"""A Chinese book's PDF, laid out a chapter at a time and merged, embeds each Noto CJK face once (issue 17): one font
dictionary and one subset of the glyphs all chapters use, which draws each character with the face's own glyph and
whose ToUnicode map gives pdftotext the chapters' text back. Read as a reader would: pdffonts, pdftotext, qpdf, and
the embedded font programs compared with the installed faces by fontTools."""
from __future__ import annotations

import io
import re
import subprocess
from pathlib import Path

import pytest
from pypdf import PdfReader

from conftest import require_tool, run_tools, write_book
from pdf_check import assert_valid_pdf

CHAPTERS = {
    "one.md": ("第一章", ["机器学习工程需要可靠的工具。", "粗体的文字"]),
    "two.md": ("第二章", ["这是一个很长的句子，用来测试中文的换行。", "你好，世界"]),
    "three.md": ("第三章", ["数据并行与流水线并行都把模型分到多块显卡上。"]),
    "four.md": ("第四章", ["检查点让训练在故障之后继续进行。", "机器学习"]),
}
FILES = {
    "book.toml": '[book]\ntitle = "工程之书"\nlanguage = "zh"\n',
    "one.md": "# 第一章\n\n机器学习工程需要可靠的工具。\n\n## 小节\n\n**粗体的文字**和普通的文字。\n",
    "two.md": "# 第二章\n\n这是一个很长的句子，用来测试中文的换行。\n\n```python\nprint(\"你好，世界\")\n```\n",
    "three.md": "# 第三章\n\n数据并行与流水线并行都把模型分到多块显卡上。\n",
    "four.md": "# 第四章\n\n检查点让训练在故障之后继续进行。**机器学习**\n",
}
FACES = ["Noto-Serif-CJK-SC", "Noto-Sans-CJK-SC-Bold", "Noto-Sans-Mono-CJK-SC"]  # text, headings, code


@pytest.fixture(scope="module")
def merged(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("cjk-fonts")
    root = write_book(tmp / "book", FILES)
    out = tmp / "book.pdf"
    result = run_tools(tmp, "build", "pdf", "--book", str(root), "--out", str(out), "--jobs", "2", "--strict", "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def pdffonts_rows(pdf: Path) -> list[list[str]]:
    out = subprocess.run([require_tool("pdffonts"), str(pdf)], capture_output=True, text=True, check=True).stdout
    return [line.split() for line in out.splitlines()[2:] if line.strip()]


def test_each_face_is_listed_once_embedded_and_subset(merged):
    rows = pdffonts_rows(merged)
    names = [row[0].split("+", 1)[1] for row in rows]
    assert len(names) == len(set(names)), rows  # one font dictionary per face for the whole book
    for face in FACES:
        found = [row for row in rows if row[0].endswith("+" + face)]
        assert len(found) == 1, (face, rows)
        assert found[0][-5:-2] == ["yes", "yes", "yes"], found  # embedded, subset, with a ToUnicode map
    assert_valid_pdf(merged)


def test_every_chapters_text_comes_back(merged):
    text = subprocess.run([require_tool("pdftotext"), str(merged), "-"], capture_output=True, text=True, check=True).stdout
    joined = re.sub(r"\s+", "", text)
    for title, sentences in CHAPTERS.values():
        for sentence in [title, *sentences]:
            assert sentence in joined, (sentence, text)


def embedded_faces(pdf: Path) -> dict[str, tuple[bytes, dict[int, str]]]:
    """Each Noto CJK face -> its embedded CFF program and its ToUnicode map (glyph code -> text)."""
    faces = {}
    for page in PdfReader(pdf).pages:
        for font in page["/Resources"]["/Font"].values():
            font = font.get_object()
            descriptor = font["/DescendantFonts"][0].get_object()["/FontDescriptor"].get_object()
            name = str(descriptor["/FontName"]).split("+", 1)[1]
            if "CJK" in name:
                cmap = font["/ToUnicode"].get_object().get_data().decode("ascii")
                texts = {int(code, 16): bytes.fromhex(text).decode("utf-16-be")
                         for code, text in re.findall(r"<([0-9a-f]{4})> <([0-9a-f]*)>", cmap)}
                faces[name] = (descriptor["/FontFile3"].get_object().get_data(), texts)
    return faces


def test_each_character_is_drawn_with_its_own_glyph_and_nothing_else_is_kept(merged):
    from fontTools.cffLib import CFFFontSet
    from fontTools.pens.recordingPen import DecomposingRecordingPen
    from fontTools.ttLib import TTFont

    faces = embedded_faces(merged)
    assert set(faces) >= set(FACES), sorted(faces)
    for name, (program, texts) in faces.items():
        pattern = name.replace("-", " ").replace(" Bold", ":style=Bold")
        where = subprocess.run([require_tool("fc-match"), "-f", "%{file}\n%{index}", pattern], capture_output=True,
                               text=True, check=True).stdout.split("\n")
        installed = TTFont(where[0], fontNumber=int(where[1]))
        cmap, glyphs = installed.getBestCmap(), installed.getGlyphSet()
        cff = CFFFontSet()
        cff.decompile(io.BytesIO(program), None)
        embedded = cff[cff.fontNames[0]]
        kept = {0 if glyph == ".notdef" else int(glyph[3:]): glyph for glyph in embedded.CharStrings.keys()}
        assert set(kept) == {0, *texts}, name  # only the glyphs some chapter shows, under their CIDs
        for cid, text in texts.items():
            if cid == 0:
                continue  # .notdef, left empty as WeasyPrint's own subsets leave it
            if len(text) == 1 and ord(text) in cmap:
                assert installed.getGlyphID(cmap[ord(text)]) == cid, (name, text)
            ours, theirs = DecomposingRecordingPen(None), DecomposingRecordingPen(glyphs)
            embedded.CharStrings[kept[cid]].draw(ours)
            glyphs[installed.getGlyphOrder()[cid]].draw(theirs)
            assert ours.value == theirs.value, (name, cid, text)


def test_the_merged_pdf_holds_each_glyph_once(merged, tmp_path):
    """Each chapter built alone embeds the glyphs it uses; the merged book holds each glyph once, so its CJK font
    programs are shorter than those of the chapters built alone put together (they share 第, 章, 机器学习, ...), and
    each program is about as long as the glyphs it draws, however high their glyph ids."""
    def cjk_bytes(pdf: Path) -> int:
        return sum(len(program) for program, _ in embedded_faces(pdf).values())

    alone_size = alone_programs = 0
    for path in CHAPTERS:
        root = write_book(tmp_path / path, {"book.toml": FILES["book.toml"], path: FILES[path]})
        result = run_tools(tmp_path, "build", "pdf", "--book", str(root), "--out", str(tmp_path / f"{path}.pdf"), "--no-cache")
        assert result.returncode == 0, result.stdout + result.stderr
        alone_size += (tmp_path / f"{path}.pdf").stat().st_size
        alone_programs += cjk_bytes(tmp_path / f"{path}.pdf")
    assert merged.stat().st_size < alone_size, (merged.stat().st_size, alone_size)
    assert cjk_bytes(merged) < alone_programs, (cjk_bytes(merged), alone_programs)
    for name, (program, texts) in embedded_faces(merged).items():
        assert len(program) < 4096 + 1024 * len(texts), (name, len(program), len(texts))
