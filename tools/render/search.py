"""The site's full-text search index, built at build time: one entry per section of every chapter, and the site's
language, so that `search.js` splits a query as that language writes words."""
from __future__ import annotations

import json
import re

from markdown_it.token import Token

from ..book import Chapter
from ..math_syntax import is_math_fence

_TEXT_TOKENS = ("text", "code_inline")
# Scripts written without spaces between words: Han, kana, CJK punctuation, full-width forms (Hangul has spaces).
UNSPACED = "\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f"
_SPACE_IN_UNSPACED = re.compile(f"(?<=[{UNSPACED}])\\s+(?=[{UNSPACED}])")


def inline_text(children: list[Token]) -> str:
    """The words of an inline token as a reader sees them: emphasis and link marks join their text to the next
    (`模**型**` is one word), a line break, an image or a formula between words is a space."""
    return "".join(c.content if c.type in _TEXT_TOKENS else "" if c.type.endswith(("_open", "_close")) else " " for c in children)


def section_text(parts: list[str]) -> str:
    """One line of the section's text. A line break between two Chinese or Japanese characters is no space (the
    source wraps its lines anywhere), so two adjacent characters stay adjacent for search."""
    return _SPACE_IN_UNSPACED.sub("", " ".join(" ".join(parts).split()))


def sections(chapter: Chapter, tokens: list[Token] | None = None) -> list[dict]:
    """[{a: anchor, t: heading, x: text}] in order; text before the first heading belongs to the chapter title."""
    found: list[dict] = [{"a": "", "t": chapter.title, "x": []}]
    tokens = chapter.tokens if tokens is None else tokens
    for index, token in enumerate(tokens):
        if token.type == "heading_open" and "anchor" in token.meta:
            title = tokens[index + 1].content if index + 1 < len(tokens) else ""
            if found[-1]["a"] == "" and not found[-1]["x"] and len(found) == 1:
                found[-1] = {"a": token.meta["anchor"], "t": chapter.title, "x": []}
                if token.tag != "h1":
                    found[-1]["t"] = title
            else:
                found.append({"a": token.meta["anchor"], "t": title, "x": []})
            continue
        if token.type == "inline" and not (index > 0 and tokens[index - 1].type == "heading_open"):
            found[-1]["x"].append(inline_text(token.children or []))
        elif token.type == "code_block" or (token.type == "fence" and not is_math_fence(token)):  # LaTeX is no text to find
            found[-1]["x"].append(token.content)
    for section in found:
        section["x"] = section_text(section["x"])
    return found


def search_index_js(entries: list[dict], language: str) -> str:
    """A script, not JSON, so that the index loads from file:// where fetch() is refused."""
    index = {"language": language, "sections": entries}
    return "window.BOOK_SEARCH_INDEX = " + json.dumps(index, ensure_ascii=False, separators=(",", ":")) + ";\n"
