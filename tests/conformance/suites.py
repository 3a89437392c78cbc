"""The reference suites of ../shared/conformance: GFM spec examples and github-slugger's headings.

An example of `spec.txt`, `extensions.txt` or `regression.txt` sits between a line of 32 backticks followed by
` example` (and the extension's name) and a line of 32 backticks; a line holding only `.` separates the markdown
from the HTML; `→` stands for a tab. The last heading before an example is its section.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

# `../shared` beside the repository, as tests/conftest.py reads the corpus; a worktree elsewhere names it in
# TOOLS_SHARED_DIR.
SHARED_ROOT = Path(os.environ.get("TOOLS_SHARED_DIR") or Path(__file__).resolve().parents[3] / "shared")
SHARED = SHARED_ROOT / "conformance"
GFM_FILES = ("spec.txt", "extensions.txt", "regression.txt")
_FENCE = "`" * 32
_HEADING = re.compile(r"#+ +(.*?)\s*$")


@dataclass(frozen=True)
class Example:
    file: str  # spec.txt, extensions.txt, regression.txt
    number: int  # 1-based within its file
    line: int  # 1-based line of its opening fence
    section: str
    extension: str  # the word after `example` ('' for none)
    markdown: str
    html: str

    @property
    def id(self) -> str:
        return f"{self.file.removesuffix('.txt')}-{self.number}"

    @property
    def suite(self) -> str:
        """'core' (CommonMark), 'extensions' (GFM's extension sections and extensions.txt) or 'regression'."""
        if self.file == "regression.txt":
            return "regression"
        if self.file == "extensions.txt" or self.section.endswith("(extension)"):
            return "extensions"
        return "core"

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line} (example {self.number}, section {self.section!r})"


def available() -> bool:
    return all((SHARED / "gfm" / name).is_file() for name in GFM_FILES) and (SHARED / "github-slugger" / "headings.json").is_file()


def parse_examples(text: str, file: str) -> list[Example]:
    examples: list[Example] = []
    section, state, start, markdown, html, extension = "", 0, 0, [], [], ""
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        stripped = line.rstrip("\n")
        if state == 0:
            if stripped.startswith(_FENCE + " example"):
                state, start, markdown, html = 1, number, [], []
                extension = stripped[len(_FENCE) + len(" example"):].strip()
            elif (match := _HEADING.match(stripped)) is not None:
                section = match.group(1)
        elif stripped == _FENCE:
            examples.append(Example(file, len(examples) + 1, start, section, extension,
                                    "".join(markdown).replace("→", "\t"), "".join(html).replace("→", "\t")))
            state = 0
        elif state == 1 and stripped == ".":
            state = 2
        else:
            (markdown if state == 1 else html).append(line)
    return examples


@lru_cache(maxsize=1)
def gfm_examples() -> tuple[Example, ...]:
    found: list[Example] = []
    for name in GFM_FILES:
        found.extend(parse_examples((SHARED / "gfm" / name).read_text(encoding="utf-8"), name))
    return tuple(found)


@lru_cache(maxsize=1)
def slugger_headings() -> tuple[dict, ...]:
    """github-slugger's 78 cases in order: `name`, the `markdown` heading sent to github.com, the `expected` id."""
    return tuple(json.loads((SHARED / "github-slugger" / "headings.json").read_text(encoding="utf-8")))
