"""The material scripts/gen_large_book.py builds a book from: sentences, headings, code and tables of our own chapters.

Only `chapters/` of this repository is read (not its translations): the text is ours to copy. Sentences carrying
markup that could break or add links (brackets, raw HTML, dollars, pipes, bare URLs) are left out, so every link in a
generated book is one the generator wrote. Also the bytes of the small PNG and SVG images a generated book shows.
"""
from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

CHAPTERS = Path(__file__).resolve().parent.parent / "chapters"
CODE_LANGUAGES = ("bash", "python", "yaml", "json", "toml", "console", "text", "ini", "c", "cpp")
UNSAFE = re.compile(r"[\[\]<>$|\\*_#~{}^@]|https?:|www\.|\.md\b|:[a-z_]+:")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`])")
LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
SAFE_HEADING = re.compile(r"^[A-Za-z][A-Za-z0-9 ,'()/+.-]{2,60}$")
# Code in languages our chapters rarely show, so a generated book has fences in several languages.
EXTRA_CODE = {
    "c": ["#include <stdio.h>\n\nint main(void) {\n    printf(\"%d\\n\", 42);\n    return 0;\n}"],
    "cpp": ["#include <cuda_runtime.h>\n\n__global__ void scale(float *x, float a, int n) {\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) x[i] *= a;\n}"],
    "json": ['{\n  "train_micro_batch_size_per_gpu": 4,\n  "gradient_accumulation_steps": 8,\n  "bf16": {"enabled": true}\n}'],
    "yaml": ["resources:\n  limits:\n    nvidia.com/gpu: 8\n  requests:\n    memory: 512Gi"],
}
MATH = ["$\\frac{a}{b}$", "$O(n^2)$", "$\\sqrt{2}$", "$2^{30}$", "$\\alpha \\cdot \\beta$"]
DISPLAY_MATH = ["\\text{throughput} = \\frac{\\text{tokens}}{\\text{seconds}}", "\\sum_{i=1}^{n} x_i^2",
                "M = 2 \\cdot P \\cdot \\left(1 + \\frac{1}{k}\\right)"]


@dataclass
class Corpus:
    sentences: list[str] = field(default_factory=list)
    headings: list[str] = field(default_factory=list)
    code: dict[str, list[str]] = field(default_factory=dict)
    tables: list[list[str]] = field(default_factory=list)


def _chapter_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.md") if "zh" not in p.relative_to(root).parts[:1])


def _is_prose(line: str) -> bool:
    stripped = line.lstrip()
    return bool(stripped) and stripped[0].isalpha() and not line.startswith("    ")


def _take_sentences(paragraph: str, out: list[str]) -> None:
    text = LINK.sub(lambda m: m.group(1), paragraph)
    for sentence in SENTENCE_END.split(text):
        sentence = sentence.strip()
        if 40 <= len(sentence) <= 280 and sentence[-1] in ".!?" and sentence.count("`") % 2 == 0 and not UNSAFE.search(sentence):
            out.append(sentence)


def _read_one(text: str, corpus: Corpus) -> None:
    lines = text.splitlines()
    paragraph: list[str] = []
    fence: str | None = None
    code: list[str] = []
    table: list[str] = []
    for line in lines + [""]:
        if fence is not None:
            if line.startswith("```"):
                if fence in CODE_LANGUAGES and 1 <= len(code) <= 20:
                    corpus.code.setdefault(fence, []).append("\n".join(code))
                fence = None
            else:
                code.append(line)
            continue
        if line.startswith("```"):
            fence, code = line[3:].strip(), []
            continue
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            if len(table) >= 3 and not any(UNSAFE.search(row.replace("|", "")) for row in table):
                corpus.tables.append(table)
            table = []
        heading = re.match(r"#{2,4} (.+)$", line)
        if heading and SAFE_HEADING.match(heading.group(1)):
            corpus.headings.append(heading.group(1).strip())
        if _is_prose(line) and not heading:
            paragraph.append(line.strip())
        elif paragraph:
            _take_sentences(" ".join(paragraph), corpus.sentences)
            paragraph = []


def load_corpus(root: Path = CHAPTERS) -> Corpus:
    """Everything the generator samples, in a fixed order (files sorted), so a seed gives the same book."""
    corpus = Corpus()
    for path in _chapter_files(root):
        _read_one(path.read_text(encoding="utf-8"), corpus)
    for language, blocks in EXTRA_CODE.items():
        corpus.code.setdefault(language, []).extend(blocks)
    corpus.sentences = sorted(set(corpus.sentences))
    corpus.headings = sorted(set(corpus.headings))
    if len(corpus.sentences) < 50 or len(corpus.headings) < 20:
        raise SystemExit(f"too little text in {root} to generate a book from: "
                         f"{len(corpus.sentences)} sentences, {len(corpus.headings)} headings")
    return corpus


def png_bytes(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A valid PNG of one colour (8-bit RGB, no filter), written with zlib: a few hundred bytes at most."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    row = b"\x00" + bytes(rgb) * width
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(row * height, 9)) + chunk(b"IEND", b"")


def svg_text(label: str, boxes: int) -> str:
    """A small diagram: a row of labelled boxes joined by arrows."""
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{boxes * 90 + 10}" height="60" viewBox="0 0 {boxes * 90 + 10} 60">']
    for i in range(boxes):
        x = 10 + i * 90
        parts.append(f'<rect x="{x}" y="10" width="70" height="40" rx="6" fill="#dbeafe" stroke="#1e40af"/>')
        parts.append(f'<text x="{x + 35}" y="35" font-size="11" text-anchor="middle">{label} {i + 1}</text>')
        if i:
            parts.append(f'<line x1="{x - 20}" y1="30" x2="{x}" y2="30" stroke="#1e40af"/>')
    return "\n".join(parts + ["</svg>", ""])
