"""GitHub's strikethrough, as cmark-gfm's `extensions/strikethrough.c` finds it: `~one~` and `~~two~~` are struck,
a run of three or more tildes is never a delimiter (`~~~three~~~` stays text, `~~~~~one~~~~~` does not nest), an
opener and a closer of different lengths strike nothing (`~one~~`), and the text is a `<del>` element.

markdown-it-py's own rule does most of it with its `strikethrough_single_tilde` option (runs of one or two tildes,
three or more kept as text, widths compared). Two things are added here: each delimiter keeps its width as its
length, so the CommonMark "rule of 3" that cmark-gfm applies to every delimiter applies to tildes too (`~~a~b~` strikes
`b`), and the tokens' tag is `del`, GitHub's element.

cmark-gfm also registers the tilde as an emphasis character (`SKIP_CHARS` in `src/inlines.c`): whether a run of `*`
or `_` can open or close emphasis is decided by the characters beyond any tildes next to it, and tildes at the start
or end of the text count as a line's end. So `*~ x*` and `*x ~*` are no emphasis on GitHub (a space lies beyond the
tilde) while `*~a~*` is emphasis holding struck text; `_emphasis_past_tildes` makes markdown-it's emphasis rule
decide the same way.
"""
from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.common.utils import isMdAsciiPunct, isPunctChar, isWhiteSpace
from markdown_it.rules_inline import StateInline
from markdown_it.rules_inline.state_inline import Scanned

_TILDE = "~"


def _scan_past_tildes(state: StateInline, start: int, can_split_word: bool) -> Scanned:
    """markdown-it's `StateInline.scanDelims`, with the characters before and after the run read past tildes."""
    src, maximum = state.src, state.posMax
    marker = src[start]
    pos = start
    while pos < maximum and src[pos] == marker:
        pos += 1
    before = start - 1
    while before >= 0 and src[before] == _TILDE:
        before -= 1
    after = pos
    while after < maximum and src[after] == _TILDE:
        after += 1
    last = src[before] if before >= 0 else " "  # the start of the text counts as white space
    following = src[after] if after < maximum else " "
    last_punct = isMdAsciiPunct(ord(last)) or isPunctChar(last)
    next_punct = isMdAsciiPunct(ord(following)) or isPunctChar(following)
    last_space, next_space = isWhiteSpace(ord(last)), isWhiteSpace(ord(following))
    left = not (next_space or (next_punct and not (last_space or last_punct)))
    right = not (last_space or (last_punct and not (next_space or next_punct)))
    can_open = left and (can_split_word or not right or last_punct)
    can_close = right and (can_split_word or not left or next_punct)
    return Scanned(can_open, can_close, pos - start)


def _emphasis_past_tildes(tokenize):
    """Wrap the `emphasis` rule: next to a tilde, its run is scanned as cmark-gfm scans it."""

    def wrapped(state: StateInline, silent: bool) -> bool:
        pos = state.pos
        marker = state.src[pos]
        if marker not in "*_":
            return tokenize(state, silent)
        end = pos
        while end < state.posMax and state.src[end] == marker:
            end += 1
        if not ((pos > 0 and state.src[pos - 1] == _TILDE) or (end < state.posMax and state.src[end] == _TILDE)):
            return tokenize(state, silent)
        original = state.scanDelims
        state.scanDelims = lambda start, canSplitWord: _scan_past_tildes(state, start, canSplitWord)  # type: ignore[method-assign]
        try:
            return tokenize(state, silent)
        finally:
            state.scanDelims = original  # type: ignore[method-assign]

    return wrapped


def _with_lengths(tokenize):
    def wrapped(state: StateInline, silent: bool) -> bool:
        first = len(state.delimiters)
        if not tokenize(state, silent):
            return False
        for delimiter in state.delimiters[first:]:
            if delimiter.marker == 0x7E:  # ~
                delimiter.length = len(state.tokens[delimiter.token].content)
        return True

    return wrapped


def _as_del(post_process):
    def wrapped(state: StateInline) -> None:
        post_process(state)
        for token in state.tokens:
            if token.type in ("s_open", "s_close"):
                token.tag = "del"

    return wrapped


def gfm_strikethrough_plugin(md: MarkdownIt) -> None:
    md.enable("strikethrough")
    md.options["strikethrough_single_tilde"] = True
    md.inline.ruler.at("strikethrough", _with_lengths(_rule(md.inline.ruler, "strikethrough")))
    md.inline.ruler2.at("strikethrough", _as_del(_rule(md.inline.ruler2, "strikethrough")))
    md.inline.ruler.at("emphasis", _emphasis_past_tildes(_rule(md.inline.ruler, "emphasis")))


def _rule(ruler, name: str):
    return next(rule.fn for rule in ruler.__rules__ if rule.name == name)
