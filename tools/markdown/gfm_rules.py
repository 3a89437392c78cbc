"""Two places where markdown-it-py and its plugins read a chapter differently from the GFM spec (0.29), set right:

- An inline HTML comment is what GFM 0.29 calls one: `<!--`, then text that does not start with `>` or `->`, does
  not end with `-` and holds no `--`, then `-->` (`<!---->` too). markdown-it-py follows CommonMark 0.31, where
  `<!-->` and `<!-- a -- b -->` are comments; under 0.29 they are text and show.
- A file that begins with a `---` line holds front matter only when the lines up to the closing `---` (or `...`)
  are a YAML mapping, which is when GitHub shows them as a table: `---`, `Foo`, `---` is a thematic break and a
  setext heading, `---`, `---` two thematic breaks (mdit-py-plugins' rule takes any such block).
"""
from __future__ import annotations

from markdown_it import MarkdownIt
from markdown_it.rules_block import StateBlock
from markdown_it.rules_inline import StateInline


def comment_029(text: str) -> bool:
    """Whether `text` (a whole `<!--...-->`) is an HTML comment by GFM 0.29's rule."""
    if text == "<!---->":
        return True
    if len(text) < 7 or not text.startswith("<!--") or not text.endswith("-->"):
        return False
    inner = text[4:-3]
    return not inner.startswith((">", "->")) and not inner.endswith("-") and "--" not in inner


def _comments_029(rule):
    def wrapped(state: StateInline, silent: bool) -> bool:
        if not state.src.startswith("<!--", state.pos):
            return rule(state, silent)
        start = state.pos
        if not rule(state, True):
            return False
        end, state.pos = state.pos, start
        return comment_029(state.src[start:end]) and rule(state, silent)

    return wrapped


def yaml_mapping(text: str) -> bool:
    """Whether `text` parses as a YAML mapping (PyYAML's safe loader, C-accelerated where built)."""
    import yaml  # only for a chapter that begins with `---`

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return isinstance(yaml.load(text, Loader=loader), dict)
    except (yaml.YAMLError, RecursionError, ValueError):
        return False


def _mapping_only(rule):
    def wrapped(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
        if silent:
            return False  # front matter only opens a file; it never interrupts a block
        first, line = len(state.tokens), state.line
        if not rule(state, start_line, end_line, silent):
            return False
        if yaml_mapping(state.tokens[-1].content):
            return True
        del state.tokens[first:]
        state.line = line
        return False

    return wrapped


def gfm_rules_plugin(md: MarkdownIt) -> None:
    md.inline.ruler.at("html_inline", _comments_029(_rule(md.inline.ruler, "html_inline")))
    if any(rule.name == "front_matter" for rule in md.block.ruler.__rules__):
        md.block.ruler.at("front_matter", _mapping_only(_rule(md.block.ruler, "front_matter")), _alt(md.block.ruler, "front_matter"))


def _rule(ruler, name: str):
    return next(rule.fn for rule in ruler.__rules__ if rule.name == name)


def _alt(ruler, name: str):
    return {"alt": next(list(rule.alt) for rule in ruler.__rules__ if rule.name == name)}
