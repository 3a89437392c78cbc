"""The site's full-text search index, built at build time: one entry per section of every chapter."""
from __future__ import annotations

import json

from markdown_it.token import Token

from ..book import Chapter
from ..math_syntax import is_math_fence

_TEXT_TOKENS = ("text", "code_inline")


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
            found[-1]["x"].append(" ".join(c.content for c in token.children or [] if c.type in _TEXT_TOKENS))
        elif token.type == "code_block" or (token.type == "fence" and not is_math_fence(token)):  # LaTeX is no text to find
            found[-1]["x"].append(token.content)
    for section in found:
        section["x"] = " ".join(" ".join(section["x"]).split())
    return found


def search_index_js(entries: list[dict]) -> str:
    """A script, not JSON, so that the index loads from file:// where fetch() is refused."""
    return "window.BOOK_SEARCH_INDEX = " + json.dumps(entries, ensure_ascii=False, separators=(",", ":")) + ";\n"
