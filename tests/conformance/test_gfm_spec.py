"""Every example of GitHub's own suites, rendered by the tool as a chapter of a book, as github.com shows it.

`gfm/spec.txt` (the GFM spec 0.29: CommonMark and GitHub's extensions), `gfm/extensions.txt` and `gfm/regression.txt`
(cmark-gfm's own cases) from ../shared/conformance: each example is one test, through the site's code path for a
chapter body (tests/conformance/render.py), compared after the normalisation of tests/conformance/normalize.py,
which lists what the tool adds on purpose and is ignored (heading ids and permalinks, highlighting spans, wrappers,
`class` and `aria-*` attributes, footnote id spelling, alignment as a style). `scripts/conformance_report.py`
prints the counts per section and per file.

Three lists say where an example's reference is not simply the spec's HTML, each with its reason:
- GITHUB_OUTPUT: github.com's parser has extensions the spec's plain CommonMark examples do not (the tag filter,
  autolinks in text), so the reference is what cmark-gfm with GitHub's extensions gives;
- SPEC_TEXT: cmark-gfm today differs from the spec for another reason; the spec (GFM 0.29) stays the reference;
- DIFFERENCES: what the tool renders differently on purpose, as the substitutions that turn its output into
  GitHub's (each must apply), also listed in chapters/building/README.md, "How close to GitHub".
KNOWN_BUGS lists the examples the tool renders wrongly for now, each with its reason: they are expected to fail.
"""
from __future__ import annotations

import re

import pytest

from conftest import REPO, require

from .harness import SLUGGER, Difference, github_differs, verdict
from .render import cmark_available, render_book
from .suites import available, gfm_examples, slugger_headings

_MISSING = "the conformance suites are not at ../shared/conformance (or TOOLS_SHARED_DIR)"
_NO_CMARK = "cmarkgfm, github.com's parser, is not installed (pip install -e '.[dev]')"

_TAGFILTER = "GitHub's tag filter (always on for github.com) escapes <{}>; the spec's plain CommonMark example keeps it"
_AUTOLINK = "GitHub's autolink extension (always on for github.com) links {} in text; plain CommonMark does not"
GITHUB_OUTPUT = {
    "spec-140": _TAGFILTER.format("script"),
    "spec-141": _TAGFILTER.format("style"),
    "spec-142": _TAGFILTER.format("style"),
    "spec-145": _TAGFILTER.format("style"),
    "spec-147": _TAGFILTER.format("script"),
    "spec-610": _AUTOLINK.format("http://foo.bar/baz inside `<...bim>`"),
    "spec-614": _AUTOLINK.format("an e-mail address inside `<...>` with an escape"),
    "spec-616": _AUTOLINK.format("http://foo.bar inside `< ... >`"),
    "spec-619": _AUTOLINK.format("http://example.com"),
    "spec-620": _AUTOLINK.format("foo@bar.example.com"),
    "regression-13": "cmark-gfm now gives a second reference to one footnote its own id (fnref1-2) and back link; the old test repeated fnref1",
    "regression-17": _TAGFILTER.format("/script> and </style"),
}

SPEC_TEXT = {
    "spec-645": "cmark-gfm today follows CommonMark 0.31, where `<!-- a -- b -->` is a comment; GFM 0.29, the reference, shows it as text",
    "extensions-23": "cmark-gfm today names footnote ids after their labels (fn-footnote); the spec's cmark-gfm and the tool number them (fn2)",
}

_UNKNOWN = ("the tool shows a tag that is no HTML element as text, with an html-escaped warning (an author's "
            "`<jobid>` placeholder would vanish on GitHub); github.com's sanitiser removes the tag")
DIFFERENCES = {
    "spec-120": Difference(_UNKNOWN + " (<foo>)", (("&lt;foo&gt;", ""),)),
    "spec-133": Difference(_UNKNOWN + " (<Warning>)", (("&lt;Warning&gt; ", ""), (" &lt;/Warning&gt;", ""))),
    "spec-170": Difference(_UNKNOWN + " (<bar>)", (("&lt;bar&gt;", ""),)),
    "spec-500": Difference(_UNKNOWN + " (<foo bar>, across a line)", (("&lt;foo bar&gt;", ""),)),
    "spec-532": Difference(_UNKNOWN + " (<bar attr=...>)", ((" &lt;bar attr=&quot;](baz)&quot;&gt;", ""),)),
    "spec-544": Difference(_UNKNOWN + " (<bar attr=...>)", ((" &lt;bar attr=&quot;][ref]&quot;&gt;", ""),)),
    "spec-632": Difference(_UNKNOWN + " (<bab>, <c2c>)", (("&lt;bab&gt;&lt;c2c&gt;", ""),)),
    "spec-633": Difference(_UNKNOWN + " (<b2/>)", (("&lt;b2/&gt;", ""),)),
    "spec-634": Difference(_UNKNOWN + " (<b2 data=...>)", (("&lt;b2 data=&quot;foo&quot; &gt;", ""),)),
    "spec-636": Difference(_UNKNOWN + " (<responsive-image>)", ((" &lt;responsive-image src=&quot;foo.jpg&quot; /&gt;", ""),)),
    "spec-642": Difference(_UNKNOWN + " (</foo >)", (("&lt;/foo &gt;", ""),)),
    "extensions-22": Difference(_UNKNOWN + " (<random />, <thing>, <totally>: the tag filter's example says other tags pass)",
                                (("&lt;random /&gt; &lt;thing&gt; ", ""), ("&lt;/thing&gt;", ""), ("&lt;totally&gt;", ""), ("&lt;/totally&gt;", ""))),
    "regression-6": Difference(_UNKNOWN + " (<st>)", (("&lt;st&gt;", ""),)),
}
CORE_LIMIT = 15  # CommonMark examples the tool may render differently on purpose

# Not as on GitHub, and not on purpose: a bug of the tool, each test expected to fail until it is fixed (strict, so a
# fix shows as an unexpected pass and the entry goes).
KNOWN_BUGS: dict[str, str] = {}  # none today (spec 606, 607 and 609 were, until the second sanitizer kept every scheme the first keeps)

EXAMPLES = gfm_examples() if available() else ()
HEADINGS = slugger_headings() if available() else ()


@pytest.fixture(scope="module")
def rendered():
    """Every example and github-slugger's headings, rendered once as the chapters of one book."""
    require(available(), _MISSING)
    documents = {example.id: example.markdown for example in EXAMPLES}
    documents[SLUGGER] = "".join(f"{heading['markdown']}\n\n" for heading in HEADINGS)
    return render_book(documents)


@pytest.mark.parametrize("example", EXAMPLES or [None], ids=lambda example: example.id if example else "suites-missing")
def test_example_shows_as_on_github(example, rendered, request):
    require(example is not None, _MISSING)
    if example.id in KNOWN_BUGS:
        request.applymarker(pytest.mark.xfail(reason=KNOWN_BUGS[example.id], strict=True))
    if example.id in GITHUB_OUTPUT:
        require(cmark_available(), _NO_CMARK)
    result = verdict(example, rendered[example.id].html, GITHUB_OUTPUT, DIFFERENCES)
    assert result.passed, result.message()


@pytest.mark.parametrize("index", range(len(HEADINGS)) if HEADINGS else [None],
                         ids=[f"slugger-{i + 1}-{h['name']}"[:80] for i, h in enumerate(HEADINGS)] or ["suites-missing"])
def test_heading_id_matches_github_slugger(index, rendered):
    """github-slugger's fixtures, in order (repeats get -1, -2), as one chapter: the id every format, `check-links`
    and `mv` know (the chapter's anchors) and the id the site's heading carries."""
    require(index is not None, _MISSING)
    heading = HEADINGS[index]
    chapter = rendered[SLUGGER]
    shown = re.findall(r'<h1(?: id="([^"]*)")?>', chapter.html)
    where = f"github-slugger/headings.json entry {index + 1} ({heading['name']!r}): {heading['markdown']!r}"
    assert chapter.anchors[index] == heading["expected"], where
    assert (shown[index] or "") == heading["expected"], where


def test_the_references_are_the_listed_ones():
    """cmark-gfm (with GitHub's extensions) gives other HTML than the spec exactly for the listed examples."""
    require(available(), _MISSING)
    require(cmark_available(), _NO_CMARK)
    differ = {example.id for example in EXAMPLES if github_differs(example)}
    assert differ == set(GITHUB_OUTPUT) | set(SPEC_TEXT)
    assert not set(GITHUB_OUTPUT) & set(DIFFERENCES)


def test_documented_differences_are_few_and_in_the_book():
    """At most 15 CommonMark examples differ on purpose, and the book's "How close to GitHub" names each one."""
    require(available(), _MISSING)
    known = {example.id: example for example in EXAMPLES}
    assert set(DIFFERENCES) <= set(known)
    core = [name for name in DIFFERENCES if known[name].suite == "core"]
    assert len(core) <= CORE_LIMIT
    text = (REPO / "chapters" / "building" / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## How close to GitHub") :]
    section = section[: section.find("\n## ", 1) if "\n## " in section[1:] else len(section)]
    for name in DIFFERENCES:
        file, number = name.rsplit("-", 1)
        assert re.search(rf"\b{file}\.txt\b[^\n]*\b{number}\b", section, re.IGNORECASE), f"{name} is not in the book's 'How close to GitHub'"
