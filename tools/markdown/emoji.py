"""GitHub's emoji shortcodes (`:rocket:`, `:+1:`) as the emoji characters GitHub shows, from the `emoji` package's
table of GitHub and Slack aliases. An unknown `:name:` stays text, as on GitHub; code spans, code blocks and link
destinations never reach this rule, and a bare URL's text is left alone.

Each shortcode is a text token of its own that keeps the shortcode as written (`meta["shortcode"]`): a heading's id
is made from the name, as github.com makes it (`## :rocket: Launch` is `#rocket-launch`). The rule pushes an `emoji`
token, which markdown-it's text merging leaves alone, and a core rule after the merging makes it a plain `text`
token, which every format shows and every reader of tokens reads as text."""
from __future__ import annotations

import re
from functools import lru_cache

from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

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
        token = state.push(EMOJI, "", 0)
        token.content = char
        token.markup = match.group(0)
        token.meta["shortcode"] = match.group(0)
    state.pos = match.end()
    return True


EMOJI = "emoji"


def _as_text(tokens: list[Token]) -> None:
    for token in tokens:
        if token.type == EMOJI:
            token.type = "text"
        elif token.children:  # an image's alt text
            _as_text(token.children)


def _emoji_as_text(state: StateCore) -> None:
    for token in state.tokens:
        if token.type == "inline" and token.children:
            _as_text(token.children)


def emoji_plugin(md: MarkdownIt) -> None:
    md.inline.ruler.push("emoji", _emoji_rule)
    md.core.ruler.after("text_join", "emoji_as_text", _emoji_as_text)
