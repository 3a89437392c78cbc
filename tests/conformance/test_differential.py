"""github.com's parser as the oracle: every chapter of our book and of the shared corpora, and generated inline
markdown, rendered by the tool and by cmarkgfm (cmark-gfm with GitHub's extensions: autolink, strikethrough, table,
tagfilter, tasklist), compared element by element (tests/conformance/differential.py): links (address and text),
emphasis and the text a reader sees. A failure names the chapter and the first difference.

What github.com does beyond cmark-gfm is added to its side (emoji, alerts) and what both draw their own way is left
out of both (math, front matter); tags that are no HTML element are text on both sides (the tool's documented choice).
KNOWN lists each remaining difference with its reason.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, example, given, settings, strategies as st

from conftest import IN_CI, REPO, require
from tools.markdown.parser import create_markdown

from .differential import comparable, first_difference, pages
from .render import cmark_available, github_html, render_book
from .suites import SHARED_ROOT

_NO_CMARK = "cmarkgfm, github.com's parser, is not installed (pip install -e '.[dev]')"
_CORPUS = SHARED_ROOT / "corpus"
BOOK = sorted(path for path in (REPO / "chapters").rglob("*.md"))
CORPORA = sorted(path for path in _CORPUS.glob("*/**/*.md")) if _CORPUS.is_dir() else []

# file (relative to chapters/ or the corpus folder) -> (why, words the first difference must hold)
KNOWN = {
    "ml-engineering/inference/README.md": (
        "cmark-gfm's shortcut for backtick runs misses a code span after an unmatched longer run (``{\"name\": ` and "
        "`{\"age\": ` ... `ame\": `): CommonMark pairs the later single backticks, and so does the tool",
        "come up with ``{\"name\": and{\"age\": because"),
}
MD = create_markdown(())


def _name(path: Path) -> str:
    return str(path.relative_to(REPO / "chapters") if path.is_relative_to(REPO / "chapters") else path.relative_to(_CORPUS))


@pytest.fixture(scope="module")
def rendered():
    """Every chapter, as the site renders it with its links as written, and the text both sides are given."""
    require(cmark_available(), _NO_CMARK)
    texts = {_name(path): comparable(path.read_text(encoding="utf-8"), MD) for path in [*BOOK, *CORPORA]}
    return texts, render_book(texts, as_written=True)


def _compare(name: str, rendered) -> None:
    texts, html = rendered
    difference = first_difference(*pages(html[name].html, texts[name]))
    if name in KNOWN:
        reason, words = KNOWN[name]
        assert words in difference, f"{name}: the known difference ({reason}) is gone or changed: {difference or 'none'}"
        return
    assert not difference, f"{name}: {difference}"


@pytest.mark.parametrize("path", BOOK, ids=_name)
def test_our_chapter_reads_as_on_github(path, rendered):
    _compare(_name(path), rendered)


@pytest.mark.corpus
@pytest.mark.parametrize("path", CORPORA or [None], ids=lambda path: _name(path) if path else "corpus-missing")
def test_corpus_chapter_reads_as_on_github(path, rendered):
    require(path is not None, f"the shared corpora are not at {_CORPUS}")
    _compare(_name(path), rendered)


_WORD = st.sampled_from(["alpha", "beta", "x", "GPU", "naïve", "日本", "a_b", "snake_case", "2x", "foo-bar"])
_URL = st.sampled_from(["https://example.com", "http://a.b/c?d=e&f=g", "https://x.org/(y)", "www.example.dev", "www.a.co/p.q",
                        "jane@example.dev", "a.b+c@d-e.fg", "mailto:x@y.zz", "ftp://f.g/h", "HBM@3.35TBps"])
_ATOM = st.one_of(
    _WORD,
    _URL,
    st.sampled_from([" ", " ", " ", ". ", ", ", "! ", "? ", " (", ") ", ": ", "\n", "&amp;", "&copy;", "&#35;", "&lt;", "\\*", "\\_"]),
    st.builds(lambda w: f"`{w}`", _WORD),
    st.builds(lambda w, u: f"[{w}]({u})", _WORD, _URL),
    st.builds(lambda u: f"<{u}>", st.sampled_from(["https://example.com/a", "http://b.c", "me@d.ef"])),
)


def _wrapped(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.builds(lambda mark, text: f"{mark}{text}{mark}", st.sampled_from(["*", "_", "**", "__", "~", "~~"]), inner)


_INLINE = st.recursive(st.lists(_ATOM, min_size=1, max_size=6).map("".join),
                       lambda inner: st.lists(st.one_of(inner, _wrapped(inner), _ATOM), min_size=1, max_size=5).map(" ".join),
                       max_leaves=20)


# A documented difference (chapters/building/README.md, "How close to GitHub"): an e-mail address touching an `_`
# that opens or closes emphasis (`_jane@example.dev ... _`, `__x_ jane@example.dev_`): GitHub finds addresses after
# emphasis is paired, so the `_` stays markup; the tool finds them as it reads the text, so the `_` is read as part of
# the address (taken into it, or making it no address).
_UNDERSCORE_ADDRESS = re.compile(r"(?<![A-Za-z0-9.+_-])_[A-Za-z0-9.+_-]*@|@[A-Za-z0-9._-]*_(?![A-Za-z0-9])")


# In CI the same 400 cases every run (derandomized: a red build names a change, not a new draw); elsewhere new ones.
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=IN_CI)
@given(st.lists(_INLINE, min_size=1, max_size=3).map("\n\n".join))
@example("https://example.com[alpha](http://a.b/c?d=e&f=g)")  # a host the URL standard rejects, with an entity after it
def test_generated_inline_markdown_reads_as_on_github(markdown):
    require(cmark_available(), _NO_CMARK)
    assume(not _UNDERSCORE_ADDRESS.search(markdown))
    html = render_book({"generated": markdown}, as_written=True)["generated"].html
    difference = first_difference(*pages(html, markdown))
    assert not difference, f"{markdown!r}: {difference}\ngithub.com: {github_html(markdown)}"
