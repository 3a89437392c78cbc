"""`tools check-links` on destinations that are easy to get wrong: empty ones whatever the link's text, a missing
path whose fragment is an anchor of the linking file, and `www.` autolinks, which are web addresses."""
from __future__ import annotations

import json

from bs4 import BeautifulSoup

from conftest import run_tools
from tools.book.link_model import Link, LinkKind, TargetKind
from tools.book.resolve import FileIndex, resolve_link


def findings(tmp_path, root) -> list[dict]:
    result = run_tools(tmp_path, "check-links", "--book", str(root), "--format", "json", "--no-cache")
    assert result.returncode in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


EMPTY = """# Empty

[![badge](img.png)]()

[text]()

[](<>)

![alt]()

[![badge](img.png)](<>)

[Reference][empty]

[empty]: <>

[![fine](img.png)](README.md)
"""


def test_every_empty_destination_is_reported_at_its_parentheses(tmp_book, tmp_path):
    root = tmp_book({"README.md": EMPTY, "img.png": b"\x89PNG\r\n\x1a\n"})
    found = findings(tmp_path, root)
    assert [(f["line"], f["col"], f["code"]) for f in found] == [(3, 21, "empty-link"), (5, 8, "empty-link"), (7, 4, "empty-link"), (9, 8, "empty-link"),
                                                                  (11, 21, "empty-link"), (15, 10, "empty-link")], found
    assert found[3]["message"] == "the image has an empty destination."
    assert all(f["message"] == "the link has an empty destination." for f in found if f["line"] != 9)


def test_a_badge_in_an_empty_link_keeps_its_own_image_and_the_link_goes_nowhere(tmp_book, tmp_path):
    root = tmp_book({"README.md": "# A\n\n[![badge](img.png)]() and [![ok](img.png)](README.md)\n", "img.png": b"\x89PNG\r\n\x1a\n"})
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "site"))
    assert result.returncode == 1 and "README.md:3:21: error: the link has an empty destination." in result.stderr, result.stderr
    soup = BeautifulSoup((tmp_path / "site" / "README.html").read_text(encoding="utf-8"), "html.parser")
    anchors = soup.find("article").find_all("a", href=lambda h: h is not None and not h.startswith("#"))
    assert [a["href"] for a in anchors] == ["", "README.html"]  # as GitHub: the badge's link is empty, not its image
    assert [a.img["src"] for a in anchors] == ["img.png", "img.png"]


def test_a_missing_path_whose_fragment_is_here_suggests_the_fragment(tmp_book, tmp_path):
    chapter = "# Prompt engineering fundamentals\n\n## Learning sandbox\n\nSee [the sandbox](./04-prompt-engineering-fundamentals#learning-sandbox).\n"
    readme = "# Book\n\n## Sec\n\nGo to [sec](missing.md#sec), to [the sandbox](./04-prompt-engineering-fundamentals#learning-sandbox), [nowhere](missing.md#nope).\n"
    root = tmp_book({"README.md": readme, "04-prompt-engineering-fundamentals.md": chapter})
    found = {(f["file"], f["line"], f["col"]): f for f in findings(tmp_path, root)}
    assert set(found) == {("04-prompt-engineering-fundamentals.md", 5, 19), ("README.md", 5, 13), ("README.md", 5, 47), ("README.md", 5, 113)}, found
    assert found[("04-prompt-engineering-fundamentals.md", 5, 19)]["suggestion"] == "Did you mean '#learning-sandbox'? It is an anchor of this file."
    assert found[("README.md", 5, 13)]["suggestion"] == "Did you mean '#sec'? It is an anchor of this file."
    assert found[("README.md", 5, 47)]["suggestion"] == "Did you mean '04-prompt-engineering-fundamentals.md#learning-sandbox'?"
    assert found[("README.md", 5, 113)]["suggestion"] == ""  # `#nope` is nowhere
    assert all(f["code"] == "missing-file" for f in found.values())


def test_a_www_autolink_is_an_external_url(tmp_book, tmp_path):
    root = tmp_book({"README.md": "# A\n\nSee www.example.com/docs, or [this](www.example.org).\n"})
    result = run_tools(tmp_path, "check-links", "--book", str(root), "--format", "json", "--no-cache")
    data = json.loads(result.stdout)
    assert data["summary"]["external_links"] == 1, data
    assert [(f["col"], f["code"], f["suggestion"]) for f in data["findings"]] == [
        (37, "missing-file", "Did you mean 'https://www.example.org'? Without a scheme, GitHub reads it as a file of the book.")]
    run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "site"))
    soup = BeautifulSoup((tmp_path / "site" / "README.html").read_text(encoding="utf-8"), "html.parser")
    assert soup.find("article").find("a", string="www.example.com/docs")["href"] == "http://www.example.com/docs"


def test_a_www_autolink_without_a_scheme_from_the_parser_resolves_as_github_links_it():
    """Whichever way the parser hands a `www.` autolink over (with `http://` put before it or not), it is the same URL."""
    index = FileIndex(frozenset({"README.md"}), frozenset(), frozenset({"README.md"}))
    for href in ("www.example.com/a", "WWW.example.com/a", "http://www.example.com/a"):
        target = resolve_link("README.md", Link("README.md", 1, 1, LinkKind.AUTOLINK, href), index)
        assert target.kind is TargetKind.EXTERNAL and target.url.lower() == "http://www.example.com/a", (href, target)
    written = resolve_link("README.md", Link("README.md", 1, 1, LinkKind.INLINE, "www.example.com"), index)
    assert written.kind is TargetKind.BROKEN  # `[text](www.example.com)` is a relative path, on GitHub too
