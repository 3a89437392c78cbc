"""Math as GitHub writes it: inline `$...$` and `` $`...`$ ``, display `$$...$$` and ```` ```math ```` fences.

The dollar syntax is mdit-py-plugins' `dollarmath`, set to GitHub's rules: no space inside the dollars, no digit
right after the closing one (`$5 and $10` is money), `\\$` escaped, nothing inside code spans. `` $`...`$ `` is a
small inline rule that reads the backtick run the way markdown-it's own code-span rule does. Each inline math token
notes where it starts in its block's text (`meta["span"]`), so a LaTeX error is reported at its own line.

`to_mathml` is the one conversion of LaTeX (latex2mathml): `collect` calls it to report errors, the renderers to
show the math.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

    from markdown_it import MarkdownIt
    from markdown_it.rules_inline import StateInline
    from markdown_it.token import Token

    from tools.core.errors import Diagnostics

INLINE_TYPES = ("math_inline", "math_inline_double")  # the second is `$$...$$` inside a paragraph: display math
MATH_FENCE = "math"  # ```math fences hold display math
# latex2mathml keeps a command it does not know as text (`<mi>\foo</mi>`); GitHub's MathJax shows it in red.
_UNKNOWN_COMMAND = re.compile(r">(\\[A-Za-z]+)<")


_ERRORS = {  # latex2mathml's exception names, as a reader would say them
    "NoAvailableTokensError": "it ends before a group or a command is complete",
    "MissingSuperScriptOrSubscriptError": "a ^ or _ has nothing after it",
    "ExtraLeftOrMissingRightError": "a \\left has no \\right",
    "MissingEndError": "a \\begin has no \\end",
    "DoubleSuperscriptsError": "two superscripts on one base",
    "DoubleSubscriptsError": "two subscripts on one base",
    "DenominatorNotFoundError": "a fraction has no denominator",
    "NumeratorNotFoundError": "a fraction has no numerator",
    "InvalidStyleForGenfracError": "a \\genfrac style is not valid",
    "InvalidWidthError": "a width is not valid",
    "InvalidAlignmentError": "an alignment is not valid",
}


class MathError(ValueError):
    """LaTeX that cannot be shown as math; the message is a sentence fragment ("an unknown command \\foo")."""


def math_plugin(md: MarkdownIt) -> None:
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    dollarmath_plugin(md, allow_labels=False, allow_space=False, allow_digits=False, allow_blank_lines=False, double_inline=True)
    md.inline.ruler.before("math_inline", "math_inline_backticks", _backtick_math)
    rule = next(r.fn for r in md.inline.ruler.__rules__ if r.name == "math_inline")
    md.inline.ruler.at("math_inline", _noting_start(rule))


def _noting_start(rule):
    """Wrap dollarmath's inline rule: no formula reaches past the inline range being parsed (a link's label) or
    closes inside a code span (`` `$x$` `` stays code); each token notes its start for the error's line."""

    def wrapped(state: StateInline, silent: bool) -> bool:
        start = state.pos
        if not rule(state, True):
            return False
        end, state.pos = state.pos, start
        if end > state.posMax or "`" in state.src[start:end]:
            return False
        if silent:
            state.pos = end
            return True
        first_token = len(state.tokens)
        if not rule(state, False):
            return False
        if len(state.tokens) > first_token:
            state.tokens[-1].meta["span"] = (start, state.pos)
        return True

    return wrapped


def _backtick_math(state: StateInline, silent: bool) -> bool:
    """`` $`...`$ ``: a code span's backtick run between dollars; the code span's content is the LaTeX."""
    src, start = state.src, state.pos
    if not src.startswith("$`", start):
        return False
    run_end = start + 1
    while run_end < state.posMax and src[run_end] == "`":
        run_end += 1
    size = run_end - start - 1
    close, scan = _closing_run(state, size, run_end)
    if close < 0:
        return False
    after = scan
    if after >= state.posMax or src[after] != "$":
        return False
    if not silent:
        token = state.push("math_inline", "math", 0)
        token.content = src[run_end:close].replace("\n", " ")
        token.markup = "$" + "`" * size
        token.meta["span"] = (start, after + 1)
    state.pos = after + 1
    return True


def _closing_run(state: StateInline, size: int, start: int) -> tuple[int, int]:
    """(start, end) of the next backtick run of `size` at or after `start`, as markdown-it's code spans close, or
    (-1, -1). The answer is kept on the state per size, so a line of many `$` and backticks stays linear."""
    runs: dict[tuple[int, int], tuple[int, int]] = state.__dict__.setdefault("_math_backtick_runs", {})
    known = runs.get((size, state.posMax))
    if known is not None and (known[0] >= start or known[0] < 0):
        return known
    scan = start
    while True:
        close = state.src.find("`", scan, state.posMax)
        if close < 0:
            runs[(size, state.posMax)] = (-1, -1)
            return -1, -1
        scan = close
        while scan < state.posMax and state.src[scan] == "`":
            scan += 1
        if scan - close == size:
            runs[(size, state.posMax)] = (close, scan)
            return close, scan


def is_math_fence(token: Token) -> bool:
    return token.type == "fence" and token.info.strip().lower() == MATH_FENCE


_DISPLAY_MATH = re.compile(r"\$\$|^[ \t>]{0,8}(?:`{3,}|~{3,})[ \t]*math\b", re.M)  # `$$` or a ```math fence


def load_converter(sources: Iterable[str]) -> None:
    """Import latex2mathml (about 55 ms, most of it the standard library's `xml.sax.saxutils` importing
    `urllib.request`) when one of the markdown `sources` holds display math. The chapter pool calls it before forking,
    so its workers, whose parse checks every formula (`collect`), share it instead of each importing it."""
    if any(_DISPLAY_MATH.search(text) for text in sources):
        import latex2mathml.converter  # noqa: F401


@lru_cache(maxsize=4096)
def to_mathml(latex: str, display: bool) -> str:
    """MathML of the LaTeX, or `MathError`."""
    from latex2mathml.converter import convert

    try:
        mathml = convert(converter_latex(latex), display="block" if display else "inline")
    except Exception as exc:  # noqa: BLE001 - latex2mathml raises its own kinds and IndexError/KeyError on bad input
        name = type(exc).__name__
        kind = _ERRORS.get(name) or re.sub(r"(?<!^)(?=[A-Z])", " ", name).lower().removesuffix(" error")
        detail = " ".join(str(exc).split())[:120]
        raise MathError(f"{kind}{': ' + detail if detail else ''}") from None
    unknown = _UNKNOWN_COMMAND.search(mathml)
    if unknown:
        raise MathError(f"an unknown command {unknown.group(1)}")
    if not _well_formed(mathml):  # latex2mathml passes some constructs through as text, e.g. a bare `&`
        raise MathError("LaTeX the converter cannot lay out (an unsupported environment or alignment)")
    return mathml


# Environments GitHub's MathJax knows and latex2mathml does not (it leaves their `&` as text, which is not even
# XML), rewritten to ones it lays out the same way: aligned rows become `align*`, centred rows a centred array.
_ENVIRONMENT = re.compile(r"\\(begin|end)\{(aligned|alignedat|gathered|gather\*?|multline\*?|eqnarray\*?)\}(\{\d+\}|\[[tcb]\])?")
_REPLACEMENT = {"aligned": "align*", "alignedat": "align*", "eqnarray": "array}{rcl"}
_ROW_SPACING = re.compile(r"(\\\\)\s*\[[^\]]{0,20}\]")  # `\\[1ex]`: the spacing is dropped, the row break kept


def converter_latex(latex: str) -> str:
    """The LaTeX as latex2mathml (and ziamath, which uses it) should get it."""
    def environment(match: re.Match) -> str:
        name = match.group(2).rstrip("*")
        new = _REPLACEMENT.get(name, "array}{c")
        return f"\\begin{{{new}}}" if match.group(1) == "begin" else f"\\end{{{new.split('}')[0]}}}"

    return _ROW_SPACING.sub(r"\1", _ENVIRONMENT.sub(environment, latex.strip()))


def _well_formed(mathml: str) -> bool:
    from xml.etree import ElementTree

    try:
        ElementTree.fromstring(mathml)
    except ElementTree.ParseError:
        return False
    return True


def math_sources(tokens: list[Token]) -> Iterator[tuple[int, str, bool]]:
    """(1-based line, LaTeX, display) of every formula of a chapter, in order."""
    for token in tokens:
        if token.type == "math_block" or is_math_fence(token):
            yield (token.map[0] + 1 if token.map else 0), token.content, True
        elif token.type == "inline" and token.map and token.children:
            for child in token.children:
                if child.type in INLINE_TYPES:
                    start = child.meta.get("span", (0, 0))[0]
                    yield token.map[0] + token.content.count("\n", 0, start) + 1, child.content, child.type != "math_inline"


def math_problems(tokens: list[Token]) -> list[tuple[int, str, str]]:
    """(line, LaTeX, what is wrong) for each formula that cannot be shown as math."""
    problems = []
    for line, latex, display in math_sources(tokens):
        try:
            to_mathml(latex, display)
        except MathError as exc:
            problems.append((line, latex, str(exc)))
    return problems


def report_math_errors(diagnostics: Diagnostics, path: str, errors: list[tuple[int, str, str]]) -> None:
    """A warning at `path:line` for each formula shown as code."""
    for line, latex, problem in errors:
        shown = " ".join(latex.split())
        diagnostics.warning(path, line, f"this math cannot be shown ({problem}), so its LaTeX is shown as code: `{shown[:80]}{'...' if len(shown) > 80 else ''}`.",
                            suggestion="Fix the LaTeX (GitHub renders it with MathJax), or escape the dollar signs as \\$ if it is not math.", code="math-error")
