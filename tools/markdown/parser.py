"""The one MarkdownIt factory of the tool.

Besides the syntax (CommonMark, GFM tables, strikethrough, autolinks, task lists, footnotes, front matter, alerts,
emoji shortcodes), the parser notes where each link destination sits in its block's text: markdown-it does not keep
inline positions, and checking, reporting and moving links all need them. The notes are made by wrapping markdown-it's own rules and
helpers, so destinations are found by the same code that parses them, never by a second parser.
"""
from __future__ import annotations

import copy
import threading
from types import SimpleNamespace

from markdown_it import MarkdownIt, helpers as md_helpers
from markdown_it.common.utils import normalizeReference
from markdown_it.ruler import RuleOptionsType
from markdown_it.token import Token
from mdit_py_plugins.footnote import footnote_plugin
from mdit_py_plugins.front_matter import front_matter_plugin
from mdit_py_plugins.tasklists import tasklists_plugin

from tools.core.errors import BookError
from tools.core.extensions import MarkdownPlugin, active, plugin_failure
from tools.markdown.emoji import emoji_plugin
from tools.markdown.gfm_autolink import gfm_autolink_plugin
from tools.markdown.gfm_rules import gfm_rules_plugin
from tools.markdown.gfm_strikethrough import gfm_strikethrough_plugin
from tools.markdown.math import math_plugin

REF_DEFS = "mlbook_reference_definitions"  # env key: reference definitions in document order
TOO_DEEP = "mlbook_too_deep"  # env key: [(0-based line, sentence)] of blocks nested deeper than the parser goes

# markdown-it's commonmark preset stops at 20 levels and silently drops the rest of the document; GitHub shows far
# deeper nesting. A list level costs 2 levels (list and item), a quote 1. 100 levels keep every element of a page
# within what lxml parses without XML_PARSE_HUGE (256) and WeasyPrint lays out; deeper blocks are shown as text.
MAX_NESTING = 100
# Inline nesting (links in link labels) costs time per level on every `[`: 20, markdown-it's own, keeps 20,000
# brackets under a second. Past it, markdown-it keeps the characters as text, so nothing is lost.
INLINE_NESTING = 20


class _DestinationRecorder:
    """Stands in for markdown-it's helper and remembers every destination it parsed: (start, end, text)."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int, str]] = []

    def parseLinkDestination(self, string: str, pos: int, maximum: int):  # noqa: N802 (markdown-it's name)
        result = md_helpers.parseLinkDestination(string, pos, maximum)
        if result.ok:
            self.calls.append((pos, result.pos, string))
        return result


def _wrap_link_rule(rule, recorder: _DestinationRecorder, token_type: str):
    """Wrap the `link` or `image` rule: mark the token with where its destination sits in `state.src`."""

    def wrapped(state, silent):
        first_token, first_call, start = len(state.tokens), len(recorder.calls), state.pos
        if not rule(state, silent):
            return False
        if silent:
            return True
        token = next((t for t in state.tokens[first_token:] if t.type == token_type), None)
        if token is not None and "label" not in token.meta:
            # Destinations of links nested in the label were parsed too: each lies inside its own link's span. An
            # empty destination (`[![badge](b.png)]()`) parses none of its own, and must not take the image's.
            nested = [t.meta["span"] for t in state.tokens[first_token:] if t is not token and "span" in t.meta]
            ours = [c for c in recorder.calls[first_call:] if c[2] is state.src and start <= c[0] and c[1] <= state.pos
                    and not any(begin <= c[0] and c[1] <= end for begin, end in nested)]
            if ours:
                token.meta["dest"] = max(ours)[:2]
        if token is not None:
            token.meta["span"] = (start, state.pos)
        return True

    return wrapped


def _wrap_autolink_rule(rule):
    def wrapped(state, silent):
        first_token, start = len(state.tokens), state.pos
        if not rule(state, silent):
            return False
        if not silent:
            for token in state.tokens[first_token:]:
                if token.type == "link_open":
                    token.meta["dest"] = (start + 1, state.pos - 1)
                    break
        return True

    return wrapped


def _wrap_html_inline_rule(rule):
    def wrapped(state, silent):
        first_token, start = len(state.tokens), state.pos
        if not rule(state, silent):
            return False
        if not silent and len(state.tokens) > first_token:
            state.tokens[-1].meta["span"] = (start, state.pos)
        return True

    return wrapped


def _reference_label(string: str) -> str:
    """The label of a definition that markdown-it's reference rule accepted: the text up to the first unescaped ']'."""
    pos = 1
    while pos < len(string) and string[pos] != "]":
        pos += 2 if string[pos] == "\\" else 1
    return normalizeReference(string[1:pos])


def _wrap_reference_rule(rule, recorder: _DestinationRecorder):
    """Wrap the block `reference` rule: keep every definition with its line and destination, duplicates too."""

    def wrapped(state, start_line, end_line, silent):
        first_call = len(recorder.calls)
        if not rule(state, start_line, end_line, silent):
            return False
        if not silent and len(recorder.calls) > first_call:
            dest_start, dest_end, string = recorder.calls[first_call]
            state.env.setdefault(REF_DEFS, []).append(
                {"line": start_line, "text": string, "dest": (dest_start, dest_end), "label": _reference_label(string)}
            )
        return True

    return wrapped


def _top_level_alerts(rule):
    """Wrap the blockquote rule: GitHub's alerts cannot be nested in another element (a list, a quote), so there
    `> [!NOTE]` stays a quote that shows its marker, as on GitHub."""

    def wrapped(state, start_line, end_line, silent):
        if state.level == 0:
            return rule(state, start_line, end_line, silent)
        options, saved = state.md.options, state.md.options.get("alerts", False)
        options["alerts"] = False
        try:
            return rule(state, start_line, end_line, silent)
        finally:
            options["alerts"] = saved

    return wrapped


def _shallow_tokenize(tokenize):
    """Wrap the block tokenizer: at the nesting limit, show the rest of the block as one plain paragraph and note
    its line, where markdown-it would drop every line up to the end of the document."""

    def wrapped(state, start_line: int, end_line: int, *args) -> None:
        if state.level < state.md.options["maxNesting"]:
            return tokenize(state, start_line, end_line, *args)
        first = state.skipEmptyLines(start_line)
        end = first
        while end < end_line and (state.isEmpty(end) or state.sCount[end] >= state.blkIndent):
            end += 1
        while end > first and state.isEmpty(end - 1):
            end -= 1
        if first < end:
            state.env.setdefault(TOO_DEEP, []).append((first, state.md.options["maxNesting"]))
            state.push("paragraph_open", "p", 1).map = [first, end]
            inline = state.push("inline", "", 0)
            inline.content, inline.map, inline.children = state.getLines(first, end, state.blkIndent, False).strip(), [first, end], []
            state.push("paragraph_close", "p", -1)
        state.line = max(end, first)
        return None

    return wrapped


def _inline_nesting(parse, options):
    def wrapped(*args, **kwargs):
        limit, options["maxNesting"] = options["maxNesting"], min(INLINE_NESTING, options["maxNesting"])
        try:
            return parse(*args, **kwargs)
        finally:
            options["maxNesting"] = limit

    return wrapped


class GitHubMarkdown(MarkdownIt):
    """A parse that runs out of Python stack is tried again with a lower nesting limit, and at last shown as text:
    a chapter never ends the command with a RecursionError. A book's plugin that raises is a sentence naming it."""

    book_plugins: tuple[MarkdownPlugin, ...] = ()

    def validateLink(self, url: str) -> bool:  # noqa: N802 (markdown-it's name)
        """markdown-it drops `file:` links and images as unsafe and leaves their text; GitHub keeps them as links.
        Kept, they reach the link model, which reports them (they point at the author's computer)."""
        return super().validateLink(url) or url.strip().lower().startswith("file:")

    def parse(self, src: str, env=None):
        env = {} if env is None else env
        limit, saved = self.options["maxNesting"], copy.deepcopy(env)
        try:
            for nesting in (limit, 20):
                self.options["maxNesting"] = nesting
                try:
                    return super().parse(src, env)
                except RecursionError:
                    env.clear()
                    env.update(copy.deepcopy(saved))
                except Exception as exc:
                    if self.book_plugins:
                        raise plugin_failure(self.book_plugins, exc) from None
                    raise
            env.setdefault(TOO_DEEP, []).append((0, 0))
            return _as_text(src)
        finally:
            self.options["maxNesting"] = limit


def _as_text(src: str) -> list[Token]:
    block = Token("code_block", "code", 0, content=src, map=[0, src.count("\n") + 1], block=True)
    return [block]


def too_deep_messages(env: dict) -> list[tuple[int, str]]:
    """(1-based line, sentence) for each place where the nesting limit turned structure into plain text."""
    found = []
    for line, limit in env.get(TOO_DEEP, []):
        if limit:
            found.append((line + 1, f"this block is nested too deeply (more than {limit // 2} lists or {limit} quotes inside one another); the rest of it is shown as plain text."))
        else:
            found.append((line + 1, "this chapter is nested too deeply to parse; it is shown as plain text."))
    return found


def create_markdown(plugins: tuple[MarkdownPlugin, ...] | None = None) -> MarkdownIt:
    """A parser for GitHub-flavoured markdown whose tokens carry the positions the link model needs, with the book's
    markdown-it plugins (book.toml `[markdown] plugins`; by default those of the active book, tools/core/extensions.py)
    applied last, so their rules sit among ours and our position-recording wrappers stay in place."""
    md = GitHubMarkdown("commonmark", {"html": True, "store_labels": True, "maxNesting": MAX_NESTING})
    md.block.tokenize = _shallow_tokenize(md.block.tokenize)  # type: ignore[method-assign]  # nested rules call state.md.block.tokenize
    md.inline.parse = _inline_nesting(md.inline.parse, md.options)  # type: ignore[method-assign]
    md.enable("table")
    md.options["alerts"] = True  # GitHub's `> [!NOTE]` alerts (markdown-it-py 4.1+); tools/render/alerts.py draws them
    md.use(front_matter_plugin).use(footnote_plugin).use(tasklists_plugin, enabled=False).use(emoji_plugin).use(math_plugin)
    md.use(gfm_strikethrough_plugin).use(gfm_autolink_plugin).use(gfm_rules_plugin)
    recorder = _DestinationRecorder()
    md.helpers = SimpleNamespace(  # type: ignore[assignment]  # duck-typed: the rules call only these three
        parseLinkLabel=md_helpers.parseLinkLabel,
        parseLinkDestination=recorder.parseLinkDestination,
        parseLinkTitle=md_helpers.parseLinkTitle,
    )
    md.inline.ruler.at("link", _wrap_link_rule(_rule(md.inline.ruler, "link"), recorder, "link_open"))
    md.inline.ruler.at("image", _wrap_link_rule(_rule(md.inline.ruler, "image"), recorder, "image"))
    md.inline.ruler.at("autolink", _wrap_autolink_rule(_rule(md.inline.ruler, "autolink")))
    md.inline.ruler.at("html_inline", _wrap_html_inline_rule(_rule(md.inline.ruler, "html_inline")))
    # `at` replaces a rule's `alt` list too: keep the rules it may interrupt (a quote inside a quote's paragraph)
    md.block.ruler.at("reference", _wrap_reference_rule(_rule(md.block.ruler, "reference"), recorder), _alt(md.block.ruler, "reference"))
    md.block.ruler.at("blockquote", _top_level_alerts(_rule(md.block.ruler, "blockquote")), _alt(md.block.ruler, "blockquote"))
    # GitHub's autolinks (tools/markdown/gfm_autolink.py) record their positions themselves.
    md.book_plugins = active().plugins if plugins is None else plugins
    for plugin in md.book_plugins:
        md.use(plugin.function, **plugin.options)
    return md


_TRIAL = "# Title\n\nSome *text*, a [link](other.md#part), `code`, ![image](a.png).\n\n- item\n\n> quote\n\n```python\nx = 1\n```\n"


def check_plugins(plugins: tuple[MarkdownPlugin, ...]) -> None:
    """Apply each plugin to a parser and parse a small chapter, so a plugin that fails on being applied is an
    exit-2 sentence at its book.toml line before anything is built."""
    md = create_markdown(())
    for plugin in plugins:
        try:
            md.use(plugin.function, **plugin.options)
            md.parse(_TRIAL, {})
        except Exception as exc:  # noqa: BLE001 - the plugin's own code: a sentence, not a traceback
            message = " ".join(str(exc).split())[:300].rstrip(".") or "(no message)"
            raise BookError(f"{plugin.where}: the markdown plugin '{plugin.spec}' failed when applied to the parser: {type(exc).__name__}: {message}; check its options or remove it.") from None


def _alt(ruler, name: str) -> RuleOptionsType:
    """The options that keep a rule's `alt` chains (the rules it may interrupt) when `Ruler.at` replaces it."""
    return {"alt": next(list(rule.alt) for rule in ruler.__rules__ if rule.name == name)}


def _rule(ruler, name: str):
    for rule in ruler.__rules__:
        if rule.name == name:
            return rule.fn
    raise LookupError(f"markdown-it has no rule named {name!r}")


_SHARED = threading.local()  # per thread: a parse keeps state in the parser's destination recorder


def shared_markdown() -> MarkdownIt:
    """`create_markdown()` made once per thread and per activation of a book's extensions (tools/core/extensions.py):
    making a parser costs about what parsing a chapter does, so callers that parse one chapter at a time share it."""
    current = active()
    made = getattr(_SHARED, "made", None)
    if made is None or made[0] is not current:
        made = _SHARED.made = (current, create_markdown())
    return made[1]
