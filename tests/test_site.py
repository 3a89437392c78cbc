"""The HTML site as a reader gets it: parsed pages, working links and anchors, navigation, search, themes."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from click.testing import CliRunner

from site_check import dangling_links, ids_of, parse, search_sections
from tools.cli import main

FILES = {
    "book.toml": '[book]\ntitle = "Test Book"\nauthors = ["Ada Lovelace", "Alan Turing"]\nrepository = "https://github.com/example/book"\nbranch = "main"\nrepository_path = ""\n',
    "chapters-md.txt": "# order\nREADME.md\n\nintro/README.md\nintro/setup.md\nintro/deep/nested.md\nother/notes.md\n",
    "README.md": "# Test Book\n\nStart with [setup](intro/setup.md#install-the-tools--quickly) or the [intro](intro/).\n",
    "intro/README.md": "# Introduction\n\nRead [nested](deep/nested.md#über-straße).\n\n## Example\n\nOne.\n\n## Example\n\nTwo [second](#example-1).\n",
    "intro/setup.md": (
        "# Setup\n\n## Install the tools — quickly\n\nRun [the script](run.sh) and see the figure:\n\n![a diagram](img/d.svg)\n\n"
        "| GPU | memory |\n| --- | --- |\n| x | 80 GB |\n\nA claim with a footnote[^1].\n\n```python\nimport torch  # [not a link](nope.md)\nprint(torch.__version__)\n```\n\n"
        "Back to the [front](../README.md) and [notes](../other/notes.md#notes-on-c).\n\n[^1]: The source.\n"
    ),
    "intro/run.sh": "#!/bin/sh\necho hi\n",
    "intro/img/d.svg": '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>\n',
    "intro/deep/nested.md": "# Nested\n\n## Über Straße\n\nUniquezebraword lives here.\n\n<a name=\"manual-anchor\"></a>\nUp to [setup](../setup.md) and [manual](#manual-anchor).\n",
    "other/notes.md": "# Notes\n\n## Notes on C++\n\nText.\n",
}


@pytest.fixture
def built(tmp_book, tmp_path):
    root = tmp_book(FILES)
    out = tmp_path / "site"
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    return root, out, result


def test_every_local_link_and_fragment_lands(built):
    _, out, _ = built
    assert dangling_links(out) == []


def test_pages_mirror_the_chapters(built):
    _, out, result = built
    for page in ("README.html", "intro/README.html", "intro/setup.html", "intro/deep/nested.html", "other/notes.html", "index.html", "404.html"):
        assert (out / page).is_file(), page
    assert re.search(r"Built html: 5 chapters, .* -> .*index\.html", result.output)


def test_headings_have_github_ids_and_permalinks(built):
    _, out, _ = built
    setup = parse(out / "intro/setup.html")
    h2 = setup.find("h2", id="install-the-tools--quickly")
    assert h2 is not None and h2.find("a", class_="permalink")["href"] == "#install-the-tools--quickly"
    intro = parse(out / "intro/README.html")
    assert {"example", "example-1"} <= ids_of(intro)
    assert "über-straße" in ids_of(parse(out / "intro/deep/nested.html"))


def test_links_are_rewritten_for_the_site(built):
    _, out, _ = built
    front = parse(out / "README.html")
    hrefs = [a["href"] for a in front.select("article a")]
    assert "intro/setup.html#install-the-tools--quickly" in hrefs
    assert "intro/README.html" in hrefs  # a folder link opens its README page
    setup = parse(out / "intro/setup.html")
    assert setup.find("a", string="the script")["href"] == "https://github.com/example/book/blob/main/intro/run.sh"
    assert setup.find("img")["src"] == "img/d.svg" and (out / "intro/img/d.svg").is_file()
    assert not (out / "intro/run.sh").exists()  # publish mode links scripts to the repository


def test_local_mode_copies_linked_files(tmp_book, tmp_path):
    root = tmp_book(FILES)
    out = tmp_path / "local"
    result = CliRunner().invoke(main, ["build", "html", "--local", "--book", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert parse(out / "intro/setup.html").find("a", string="the script")["href"] == "run.sh"
    assert (out / "intro/run.sh").read_text() == FILES["intro/run.sh"]
    assert dangling_links(out) == []


def test_code_is_highlighted_and_never_rewritten(built):
    _, out, _ = built
    setup = parse(out / "intro/setup.html")
    pre = setup.find("pre", class_="highlight")
    assert pre is not None and pre.find("span") is not None  # pygments at build time
    assert "[not a link](nope.md)" in pre.get_text()
    assert not setup.find_all("script", src=re.compile("highlight|prism", re.I))


def test_table_footnote_and_image(built):
    _, out, _ = built
    setup = parse(out / "intro/setup.html")
    assert setup.find("table").find("td", string="80 GB")
    assert setup.find("section", class_="footnotes") is not None
    assert setup.find("img")["alt"] == "a diagram"


def test_sidebar_lists_chapters_in_book_order_and_marks_the_current(built):
    _, out, _ = built
    page = parse(out / "intro/setup.html")
    titles = [a.get_text(strip=True) for a in page.select("#sidebar a")]
    assert titles == ["Test Book", "Introduction", "Setup", "Nested", "Notes"]
    current = page.select("#sidebar [aria-current=page]")
    assert [a.get_text() for a in current] == ["Setup"]
    nested = page.select("#sidebar li li a")  # chapters nest under their folder's README
    assert "Setup" in [a.get_text() for a in nested]


def test_previous_next_and_in_page_toc(built):
    _, out, _ = built
    page = parse(out / "intro/setup.html")
    assert page.find("a", rel="prev")["href"] == "README.html"
    assert page.find("a", rel="next")["href"] == "deep/nested.html"
    assert page.select_one(".page-toc a")["href"] == "#install-the-tools--quickly"


def test_front_page_has_title_authors_date_and_revision(built):
    _, out, _ = built
    front = parse(out / "index.html")
    text = front.get_text(" ")
    assert "Test Book" in front.find("h1").get_text()
    assert "Ada Lovelace, Alan Turing" in text
    assert re.search(r"Built \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC\.", text)
    assert "revision" not in text  # the test's book is outside git (tests/test_site_meta.py builds one inside)


def test_search_index_finds_a_word_in_one_section(built):
    _, out, _ = built
    entries = search_sections(out)
    hits = [e for e in entries if "uniquezebraword" in e["x"].lower()]
    assert [(h["p"], h["a"]) for h in hits] == [("intro/deep/nested.html", "über-straße")]


def test_self_contained_no_remote_resources(built):
    _, out, _ = built
    for page in out.rglob("*.html"):
        soup = parse(page)
        for tag in soup.find_all(["script", "link", "img"]):
            ref = tag.get("src") or tag.get("href") or ""
            assert not re.match(r"^(https?:)?//", ref), f"{page}: {ref}"
    css = (out / "assets/style.css").read_text()
    assert "@import" not in css and "url(http" not in css
    assert "prefers-color-scheme" in (out / "index.html").read_text() or "matchMedia" in (out / "index.html").read_text()
    assert "@media print" in css


def test_broken_links_are_reported_with_file_and_line(tmp_book, tmp_path):
    files = dict(FILES)
    files["other/notes.md"] = "# Notes\n\nSee [gone](missing.md), [bad anchor](../intro/setup.md#instal) and ![pic](nope.png).\nAnd [escape](../../outside.md).\n"
    root = tmp_book(files)
    (root.parent / "outside.md").write_text("# secret\n")
    out = tmp_path / "site2"
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(out)])
    err = result.output
    assert "other/notes.md:3:12: error: the link 'missing.md' points at a file that does not exist" in err
    assert "other/notes.md:3:" in err and "#instal" in err and "Did you mean '#install-the-tools--quickly'?" in err
    assert "the image 'nope.png' points at a file that does not exist" in err
    assert "other/notes.md:4:" in err and "leaves the book's root folder" in err
    assert result.exit_code == 1
    assert not any(p.name == "outside.md" for p in out.rglob("*"))  # nothing outside the root is copied


def test_strict_fails_on_warnings_after_listing_them_all(tmp_book, tmp_path):
    files = dict(FILES)
    files["extra.md"] = "# Not a chapter\n"
    files["README.md"] = FILES["README.md"] + "\nSee [extra](extra.md) and [again](extra.md).\n"
    files["chapters-md.txt"] = FILES["chapters-md.txt"]
    root = tmp_book(files)
    lenient = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(tmp_path / "a")])
    strict = CliRunner().invoke(main, ["build", "html", "--strict", "--book", str(root), "--out", str(tmp_path / "b")])
    assert lenient.exit_code == 0 and strict.exit_code == 1
    assert strict.output.count("not in the chapter list") == 2
    assert (tmp_path / "b" / "index.html").is_file()  # output is still produced


def test_missing_chapter_names_the_list_line(tmp_book, tmp_path):
    files = dict(FILES)
    files["chapters-md.txt"] = FILES["chapters-md.txt"] + "intro/gone.md\n"
    root = tmp_book(files)
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(tmp_path / "s")])
    assert "chapters-md.txt:8: error: the chapter 'intro/gone.md' does not exist." in result.output
    assert result.exit_code == 1


def test_unknown_config_key_is_an_error_with_its_line(tmp_book, tmp_path):
    files = dict(FILES)
    files["book.toml"] = '[book]\ntitle = "x"\ncolour = "blue"\n'
    root = tmp_book(files)
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(tmp_path / "s")])
    assert result.exit_code == 2
    assert "book.toml:3: unknown key 'colour' in [book]" in result.output


@pytest.mark.parametrize(("value", "expected"), [
    ("art/gone.svg", "book.toml:3: 'favicon' names 'art/gone.svg', which does not exist; name a regular file inside the book's root folder"),
    ("../icon.svg", "book.toml:3: 'favicon' is '../icon.svg', outside the book's root folder"),
    ("README.md", "book.toml:3: 'favicon' is 'README.md', which is not an icon browsers show; use a .svg, .png, .ico file"),
])
def test_a_favicon_that_cannot_be_used_is_an_error_with_its_line(tmp_book, tmp_path, value, expected):
    files = dict(FILES)
    files["book.toml"] = f'[book]\ntitle = "x"\nfavicon = "{value}"\n'
    root = tmp_book(files)
    (tmp_path / "icon.svg").write_text("<svg/>")
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(tmp_path / "s")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert expected in result.output, result.output


def test_every_page_links_the_favicon_and_no_page_loads_the_search_index(built):
    _, out, _ = built
    assert (out / "assets" / "favicon.svg").read_bytes().startswith(b"<svg")
    for page in [*out.rglob("*.html")]:
        soup = parse(page)
        icon = soup.find("link", rel="icon")
        assert icon is not None, page
        # The built-in icon is small: inside each page, so no request of its own (the 404 page: at any depth).
        assert icon["href"].startswith("data:image/svg+xml;base64,") and icon["type"] == "image/svg+xml", page
        assert not any("search-index" in (script.get("src") or "") for script in soup.find_all("script")), page


def test_a_big_favicon_is_linked_to_its_copy_in_assets(tmp_book, tmp_path):
    files = dict(FILES)
    files["book.toml"] = '[book]\ntitle = "x"\nfavicon = "art/Icon.PNG"\n'
    files["art/Icon.PNG"] = b"\x89PNG\r\n\x1a\n" + bytes(20_000)  # over INLINE_ICON_LIMIT
    root = tmp_book(files)
    out = tmp_path / "s"
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert (out / "assets" / "favicon.png").read_bytes() == files["art/Icon.PNG"]
    icon = parse(out / "intro" / "deep" / "nested.html").find("link", rel="icon")
    assert icon["href"] == "../../assets/favicon.png" and icon["type"] == "image/png"
    assert parse(out / "404.html").find("link", rel="icon")["href"].startswith("data:image/png;base64,")


def test_not_utf8_is_reported_and_the_build_goes_on(tmp_book, tmp_path):
    files = dict(FILES)
    files["other/notes.md"] = b"# Notes\n\nLatin-1 caf\xe9 here.\n"
    root = tmp_book(files)
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(tmp_path / "s")])
    assert "other/notes.md:3:12: error: the file is not valid UTF-8" in result.output
    assert (tmp_path / "s" / "other/notes.html").is_file()


def test_a_failed_build_keeps_the_last_good_site(tmp_book, tmp_path, monkeypatch):
    root = tmp_book(FILES)
    out = tmp_path / "site"
    assert CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(out)]).exit_code == 0
    import tools.render.site.write as site

    def boom(*args, **kwargs):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(site._PendingSearch, "files", boom)  # when the pages are written, before the search index
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(out)])
    assert result.exit_code != 0
    assert (out / "index.html").is_file() and (out / "assets/search-index.js").is_file()
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".site")]


def test_cli_in_a_real_subprocess(tmp_book, tmp_path):
    root = tmp_book(FILES)
    out = tmp_path / "sub"
    done = subprocess.run([sys.executable, "-m", "tools", "build", "html", "--book", str(root), "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith(str(out / "index.html"))
    version = subprocess.run([sys.executable, "-m", "tools", "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("tools, version")
    helptext = subprocess.run([sys.executable, "-m", "tools", "--help"], capture_output=True, text=True).stdout
    assert "Exit codes" in helptext and "build" in helptext


def test_a_symlink_leaving_the_root_is_not_copied(tmp_book, tmp_path):
    root = tmp_book(FILES)
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG secret")
    (root / "intro" / "img" / "leak.png").symlink_to(secret)
    with open(root / "intro" / "setup.md", "a", encoding="utf-8") as handle:
        handle.write("\n![leak](img/leak.png)\n")
    out = tmp_path / "site"
    result = CliRunner().invoke(main, ["build", "html", "--book", str(root), "--out", str(out)])
    assert "is a symbolic link that leaves the book's root" in result.output
    assert not (out / "intro/img/leak.png").exists()
    assert result.exit_code == 1
