"""Every link of every kind is found once, at its exact line, column and source span; code is never a link."""
from __future__ import annotations

from tools.book.link_model import LinkKind
from tools.book.load import load_book

CHAPTER = """---
title: front matter is not rendered
---
# Positions

An [inline](two.md#a "title") link and ![an image](img/x.png) on one line.
A second line with [two](two.md) and [two](two.md) again.

> Quoted [link in a quote](two.md#b)
> and a lazy [continuation](two.md#c).

- item with [list link](./two.md)
  - nested [deeper](<two.md>)

| col | link |
| --- | --- |
| x | [in a table](two.md#t) |

[ref]: two.md#r "Reference"
[other]:
  <two.md>

Uses [ref], [text][ref] and [other][].

<https://example.com/auto> and https://example.org/bare and www.example.net.

<a href="two.md#html">html</a> <img src="img/x.png" alt="x">

<p align="center">
  <a href="./two.md">block html</a>
</p>

`[not a link](nope.md)` in code, and a fence:

```markdown
[not a link either](nope.md)
```

[![badge](img/x.png)](two.md#badge)

A footnote[^1].

[^1]: With a [link](two.md#fn).
"""


def test_every_link_is_located_exactly(tmp_book):
    root = tmp_book({"one.md": CHAPTER, "two.md": "# Two\n", "img/x.png": b"\x89PNG"})
    book = load_book(root)
    chapter = book.by_path["one.md"]
    lines = chapter.text.split("\n")
    seen = []
    for link in chapter.links:
        assert link.offset is not None, link
        assert chapter.text[link.offset : link.offset + len(link.raw)] == link.raw
        assert lines[link.line - 1][link.col - 1 :].startswith(link.raw)
        seen.append((link.line, link.kind, link.raw))
    assert all("nope.md" not in raw for _, _, raw in seen)
    expected = [
        (6, LinkKind.INLINE, "two.md#a"),
        (6, LinkKind.IMAGE, "img/x.png"),
        (7, LinkKind.INLINE, "two.md"),
        (7, LinkKind.INLINE, "two.md"),
        (9, LinkKind.INLINE, "two.md#b"),
        (10, LinkKind.INLINE, "two.md#c"),
        (12, LinkKind.INLINE, "./two.md"),
        (13, LinkKind.INLINE, "<two.md>"),
        (17, LinkKind.INLINE, "two.md#t"),
        (19, LinkKind.REFERENCE, "two.md#r"),
        (21, LinkKind.REFERENCE, "<two.md>"),
        (25, LinkKind.AUTOLINK, "https://example.com/auto"),
        (25, LinkKind.AUTOLINK, "https://example.org/bare"),
        (25, LinkKind.AUTOLINK, "www.example.net"),
        (27, LinkKind.HTML_HREF, "two.md#html"),
        (27, LinkKind.HTML_SRC, "img/x.png"),
        (30, LinkKind.HTML_HREF, "./two.md"),
        (39, LinkKind.INLINE, "two.md#badge"),
        (39, LinkKind.IMAGE, "img/x.png"),
        (43, LinkKind.INLINE, "two.md#fn"),
    ]
    assert sorted(seen, key=lambda s: (s[0], lines[s[0] - 1].find(s[2]))) == sorted(expected, key=lambda s: (s[0], lines[s[0] - 1].find(s[2])))
    # The two identical links on line 7 got two different columns.
    cols = sorted(link.col for link in chapter.links if link.line == 7)
    assert len(set(cols)) == 2


def test_reference_uses_share_their_definition(tmp_book):
    root = tmp_book({"one.md": CHAPTER, "two.md": "# Two\n", "img/x.png": b"\x89PNG"})
    chapter = load_book(root).by_path["one.md"]
    ref = next(link for link in chapter.links if link.kind is LinkKind.REFERENCE and link.raw == "two.md#r")
    assert len(ref.tokens) == 2  # [ref] and [text][ref]
    assert ref.line == 19


def test_crlf_files_are_located_too(tmp_book):
    root = tmp_book({"one.md": "# One\r\n\r\nSee [two](two.md#x) now.\r\n", "two.md": "# Two\r\n\r\n## X\r\n"})
    book = load_book(root)
    link = book.by_path["one.md"].links[0]
    assert (link.line, link.col, link.raw) == (3, 11, "two.md#x")
    assert "x" in book.by_path["two.md"].anchors
