"""GitHub's emoji shortcodes (`:rocket:`, `:+1:`) as the emoji characters GitHub shows, from the `emoji` package's
table of GitHub and Slack aliases. An unknown `:name:` stays text, as on GitHub; code spans, code blocks and link
destinations never reach this rule, and a bare URL's text is left alone."""
from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline

_SHORTCODE = re.compile(r":([a-z0-9_+-]+):")
_URL_WINDOW = 500  # how far back a bare URL's start is looked for: bounded, so a line of shortcodes stays linear


@lru_cache(maxsize=1)
def shortcodes() -> dict[str, str]:
    """`name` -> emoji for every name `emoji.emojize(language="alias")` knows (English names and GitHub's aliases)."""
    import emoji  # a large table: loaded when a chapter first holds something like `:name:`

    table: dict[str, str] = {}
    for char, data in emoji.EMOJI_DATA.items():
        for name in (data.get("en"), *data.get("alias", ())):
            if name and name.startswith(":") and name.endswith(":"):
                table.setdefault(name[1:-1], char)
    return table


def _in_url(src: str, pos: int) -> bool:
    """Whether `pos` is inside a bare URL (`https://x/:a:`, `www.x.org/:a:`), whose text GitHub keeps as written."""
    low = max(0, pos - _URL_WINDOW)
    start = max(src.rfind(char, low, pos) for char in " \t\n(<[") + 1
    word = src[max(start, low) : pos].lower()
    return "://" in word or word.startswith("www.")


def _emoji_rule(state: StateInline, silent: bool) -> bool:
    if state.src[state.pos] != ":":
        return False
    match = _SHORTCODE.match(state.src, state.pos, state.posMax)
    if match is None:
        return False
    char = shortcodes().get(match.group(1))
    if char is None or _in_url(state.src, state.pos):
        return False
    if not silent:
        token = state.push("text", "", 0)  # plain text: every format shows it, and heading ids see it as GitHub does
        token.content = char
        token.markup = match.group(0)
    state.pos = match.end()
    return True


def emoji_plugin(md: MarkdownIt) -> None:
    md.inline.ruler.push("emoji", _emoji_rule)
