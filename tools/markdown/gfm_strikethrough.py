"""GitHub's strikethrough, as cmark-gfm's `extensions/strikethrough.c` finds it: `~one~` and `~~two~~` are struck,
a run of three or more tildes is never a delimiter (`~~~three~~~` stays text, `~~~~~one~~~~~` does not nest), an
opener and a closer of different lengths strike nothing (`~one~~`), and the text is a `<del>` element.

markdown-it-py's own rule does most of it with its `strikethrough_single_tilde` option (runs of one or two tildes,
three or more kept as text, widths compared). Two things are added here: each delimiter keeps its width as its
length, so the CommonMark "rule of 3" that cmark-gfm applies to every delimiter applies to tildes too (`~~a~b~` strikes
`b`), and the tokens' tag is `del`, GitHub's element.
"""
from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_inline import StateInline


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


def _rule(ruler, name: str):
    return next(rule.fn for rule in ruler.__rules__ if rule.name == name)
