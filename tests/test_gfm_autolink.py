"""GitHub's autolinks and strikethrough (tools/markdown/gfm_autolink.py, tools/markdown/gfm_autolink_scan.py, tools/markdown/gfm_strikethrough.py): the HTML github.com's
parser (cmark-gfm with GitHub's extensions, recorded here) gives for each case, the positions the link model needs,
and no hang on long runs of the characters the rules look at (the spec suites themselves run in tests/conformance)."""
from __future__ import annotations

import signal
import sys
from contextlib import contextmanager

import pytest
from hypothesis import given, settings, strategies as st

from tools.book.model import parse_text
from tools.markdown import gfm_autolink
from tools.markdown.gfm_autolink_scan import email_links, trimmed_end
from tools.markdown.parser import create_markdown

MD = create_markdown(())

# (markdown, what github.com's parser gives): recorded from cmarkgfm (cmark-gfm 0.29.0.gfm.13 with GitHub's extensions)
GITHUB = [
    ("www.example.dev", '<p><a href="http://www.example.dev">www.example.dev</a></p>'),
    ("jane@example.dev", '<p><a href="mailto:jane@example.dev">jane@example.dev</a></p>'),
    ("foo@bar.baz", '<p><a href="mailto:foo@bar.baz">foo@bar.baz</a></p>'),
    ("HBM@3.35TBps of memory", '<p><a href="mailto:HBM@3.35TBps">HBM@3.35TBps</a> of memory</p>'),
    ("Visit www.commonmark.org/a.b.", '<p>Visit <a href="http://www.commonmark.org/a.b">www.commonmark.org/a.b</a>.</p>'),
    ("(www.google.com/search?q=Markup+(business))", '<p>(<a href="http://www.google.com/search?q=Markup+(business)">www.google.com/search?q=Markup+(business)</a>)</p>'),
    ("www.google.com/search?q=commonmark&hl;", '<p><a href="http://www.google.com/search?q=commonmark">www.google.com/search?q=commonmark</a>&amp;hl;</p>'),
    ("www.commonmark.org/he<lp", '<p><a href="http://www.commonmark.org/he">www.commonmark.org/he</a>&lt;lp</p>'),
    ("Anonymous FTP is available at ftp://foo.bar.baz.", '<p>Anonymous FTP is available at <a href="ftp://foo.bar.baz">ftp://foo.bar.baz</a>.</p>'),
    ("mailto:foo@bar.baz", '<p><a href="mailto:foo@bar.baz">mailto:foo@bar.baz</a></p>'),
    ("xmpp:foo@bar.baz/txt", '<p><a href="xmpp:foo@bar.baz/txt">xmpp:foo@bar.baz/txt</a></p>'),
    ("a.b-c_d@a.b.", '<p><a href="mailto:a.b-c_d@a.b">a.b-c_d@a.b</a>.</p>'),
    ("a.b-c_d@a.b-", "<p>a.b-c_d@a.b-</p>"),
    ("~~http://google.com~~", '<p><del><a href="http://google.com">http://google.com</a></del></p>'),
    ("~~www.google.com~~", '<p><del><a href="http://www.google.com">www.google.com</a></del></p>'),
    ("[x www.a.com]", "<p>[x www.a.com]</p>"),
    ("[ www.a.com", "<p>[ www.a.com</p>"),
    ("[x](y) www.a.com", '<p><a href="y">x</a> <a href="http://www.a.com">www.a.com</a></p>'),
    ("**www.a.com**", '<p><strong><a href="http://www.a.com">www.a.com</a></strong></p>'),
    ("_a@b.com_", '<p><em><a href="mailto:a@b.com">a@b.com</a></em></p>'),
    ("a_b@c.com", '<p><a href="mailto:a_b@c.com">a_b@c.com</a></p>'),
    ("xhttp://x.com", "<p>xhttp://x.com</p>"),
    ("1http://a.com", '<p>1<a href="http://a.com">http://a.com</a></p>'),
    ("www.a.b_c", "<p>www.a.b_c</p>"),
    ("www._a.b", "<p>www._a.b</p>"),
    ("http://a_b.c.d", '<p><a href="http://a_b.c.d">http://a_b.c.d</a></p>'),
    ("a@b.c@d", '<p>a@<a href="mailto:b.c@d">b.c@d</a></p>'),
    ("x/a@b.com", '<p>x/<a href="mailto:a@b.com">a@b.com</a></p>'),
    ("train.py and SKILL.md", "<p>train.py and SKILL.md</p>"),
    ("http://a.com/(b)c)", '<p><a href="http://a.com/(b)c">http://a.com/(b)c</a>)</p>'),
    ("<foo\\+@bar.example.com>", '<p>&lt;<a href="mailto:foo+@bar.example.com">foo+@bar.example.com</a>&gt;</p>'),
    # strikethrough: one or two tildes, never three, widths must agree
    ("~one~ ~~two~~ ~~~three~~~", "<p><del>one</del> <del>two</del> ~~~three~~~</p>"),
    ("This is not ~~~~~one~~~~~ huge strikethrough.", "<p>This is not ~~~~~one~~~~~ huge strikethrough.</p>"),
    ("No ~mismatch~~", "<p>No ~mismatch~~</p>"),
    ("~~a ~b~~", "<p>~~a ~b~~</p>"),
    ("~a *b~ c*", "<p><del>a *b</del> c*</p>"),
    ("~a~~~b~", "<p><del>a~~~b</del></p>"),
    ("a~b~c", "<p>a<del>b</del>c</p>"),
    # emphasis next to tildes: cmark-gfm reads past them for the flanking rules
    ("alpha *~ ~*", "<p>alpha *~ ~*</p>"),
    ("*x ~*", "<p>*x ~*</p>"),
    ("_~ x_", "<p>_~ x_</p>"),
    ("**~ ~**", "<p>**~ ~**</p>"),
    ("*~a~*", "<p><em><del>a</del></em></p>"),
    ("*x ~.*", "<p><em>x ~.</em></p>"),
    ("*x ~*~", "<p>*x <del>*</del></p>"),
]


@pytest.mark.parametrize("markdown,expected", GITHUB, ids=[case[0][:40] for case in GITHUB])
def test_as_githubs_parser_gives_it(markdown, expected):
    assert MD.render(markdown).strip() == expected


def _autolinks(text: str):
    tokens, _, found = parse_text("c.md", text, MD)
    inline = [token for token in tokens if token.type == "inline"]
    links = []
    for block in inline:
        for index, child in enumerate(block.children or []):
            if child.type == "link_open" and child.markup == "linkify":
                links.append((block.content, child.meta["dest"], block.children[index + 1].content, child.attrs["href"]))
    return links, found


def test_each_autolink_records_where_its_text_sits():
    text = "Intro www.a.com/x, then\n> quoted jane@example.dev and `www.code.com` and\n> https://b.org/y (z)\n\n| www.cell.com | mailto:a@b.cd |\n| - | - |\n"
    links, found = _autolinks(text)
    shown = [(content[start:end], shown) for content, (start, end), shown, _href in links]
    assert [s for s, _ in shown] == ["www.a.com/x", "jane@example.dev", "https://b.org/y", "www.cell.com", "mailto:a@b.cd"]
    assert all(raw == text_ for raw, text_ in shown)
    located = {link.raw: (link.line, link.col) for link in found.links}
    assert located == {"www.a.com/x": (1, 7), "jane@example.dev": (2, 10), "https://b.org/y": (3, 3), "www.cell.com": (5, 3), "mailto:a@b.cd": (5, 18)}
    for link in found.links:
        assert text[link.offset : link.offset + len(link.raw)] == link.raw


def test_an_escaped_address_is_linked_with_its_text_unescaped():
    links, found = _autolinks("write to foo\\+bar@example.com today")
    ((content, (start, end), shown, href),) = links
    assert content[start:end] == "foo\\+bar@example.com" and shown == "foo+bar@example.com" and href == "mailto:foo+bar@example.com"
    assert found.links[0].col == 10


def test_trailing_entity_and_parentheses():
    src = "www.a.com/(x))&amp;"
    assert src[: trimmed_end(src, 0, len(src))] == "www.a.com/(x)"
    assert email_links("x a.b@c.de. y") == {2: (10, "mailto:a.b@c.de")}


_ALPHABET = st.sampled_from(list("wW.:/@_~*()[]<>&;!?`\\ \nabcmxt-+") + ["www.", "http://", "https://", "mailto:", "xmpp:", "a@b.c", "~~", "**", "&hl;"])


@settings(max_examples=300, deadline=None)
@given(st.lists(_ALPHABET, max_size=60).map("".join))
def test_any_text_parses_and_every_autolink_is_its_own_text(text):
    links, found = _autolinks(text)
    for content, (start, end), shown, href in links:
        raw = content[start:end]
        assert shown == raw or "\\" in raw
        assert not any(char.isspace() for char in shown) and "<" not in raw
        assert href.startswith(("http://", "https://", "ftp://", "mailto:", "xmpp:")) or "@" in shown, href
    assert all(link.offset is None or text[link.offset : link.offset + len(link.raw)] == link.raw for link in found.links)


@contextmanager
def _hang_guard(seconds: int):
    """A parse that takes longer than this is a hang (linear ones take well under a second)."""
    def stop(*_):
        raise TimeoutError(f"parsing took over {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


class _Counting:
    """A compiled pattern that adds how many characters each `search` reads to `counter` (its work happens in C,
    where a line count does not see it)."""

    def __init__(self, pattern, counter: list[int]) -> None:
        self.pattern, self.counter = pattern, counter

    def search(self, string, pos=0, *rest):
        found = self.pattern.search(string, pos, *rest)
        self.counter[0] += (found.start() if found else len(string)) - pos
        return found


def _operations(text: str, monkeypatch) -> int:
    """How much work a parse of `text` does: the lines of Python it runs plus the characters the text rule's and the
    autolink rule's patterns read. An operation count, not a time."""
    count = [0]

    def tracer(frame, event, arg):
        if event == "line":
            count[0] += 1
        return tracer

    with monkeypatch.context() as patch:
        patch.setattr(MD.inline, "terminator_re", _Counting(MD.inline.terminator_re, count))
        patch.setattr(gfm_autolink, "_LINK_END", _Counting(gfm_autolink._LINK_END, count))
        sys.settrace(tracer)
        try:
            MD.parse(text, {})
        finally:
            sys.settrace(None)
    return count[0]


PATHOLOGICAL = {
    "www": lambda n: "www." * (n // 4),
    "tildes": lambda n: "~" * n,
    "paren-www": lambda n: "(www." * (n // 5),
    "at-signs": lambda n: "a@" * (n // 2),
    "dotted-at": lambda n: "a@b." * (n // 4),
    "schemes": lambda n: "http://" * (n // 7),
    "open-bracket": lambda n: "[" + "www.a " * (n // 6),
    "underscores": lambda n: "_" * n + "@a.bc",
    "close-parens": lambda n: "www.a" + ")" * n,
    "entities": lambda n: "www.a" + "&a;" * (n // 3),
    "mailto": lambda n: "mailto:" * (n // 7) + "a@b.cd",
    "escapes": lambda n: "\\_" * (n // 2) + "a@b.cd",
    "tilde-words": lambda n: "~a " * (n // 3),
    "www-links": lambda n: " ".join(f"www.e{i}.com" for i in range(n // 12)),
    "url-links": lambda n: " ".join(f"https://e{i}.org/x" for i in range(n // 18)),
    "email-links": lambda n: " ".join(f"a{i}@b{i}.cd" for i in range(n // 12)),
}


@pytest.mark.parametrize("name", PATHOLOGICAL)
def test_long_runs_parse_in_linear_time(name, monkeypatch):
    make = PATHOLOGICAL[name]
    small, large = _operations(make(4_000), monkeypatch), _operations(make(8_000), monkeypatch)
    assert large < 2.6 * small, f"{name}: {small} operations for 4,000 characters, {large} for 8,000"
    with _hang_guard(60):
        MD.parse(make(50_000), {})
