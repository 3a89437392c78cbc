"""The files a site writes itself (`SITE_FILES`, `SITE_FOLDERS` in tools/render/policy.py): the registry is complete,
a chapter whose page would land on one gets a page of its own that links, the navigation and the search use, and a
book file of one's name is an error at its link, never copied over the site's file nor replaced by it."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

from conftest import run_tools, write_book
from tools.render.policy import SITE_FILES, SITE_FOLDERS

PNG = bytes.fromhex("89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de0000000c4944415408d763f8ffff3f0005fe02fea7d6a4d20000000049454e44ae426082")


def build(tmp_path: Path, root: Path, *extra: str) -> tuple[Path, str, int]:
    out = tmp_path / "site"
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(out), *extra)
    return out, result.stdout + result.stderr, result.returncode


def test_every_file_a_site_holds_is_a_page_a_copy_or_registered(tmp_path):
    """What a build with everything on writes: chapters, a front page, listing and redirect pages, the book's copied
    files, and otherwise only names of the registry (or a theme's own files beside the assets)."""
    theme = {"theme/logo.svg": "<svg xmlns='http://www.w3.org/2000/svg'/>"}
    root = write_book(tmp_path / "book", {
        "book.toml": '[book]\ntitle = "T"\nchapters = "chapters-md.txt"\nsite_url = "https://example.org/t/"\ncover = "cover.png"\ntheme = "theme"\n\n[redirects]\n"old.md" = "b.md"\n',
        "README.md": "# Home\n\n[b](b.md) [data](data/x.csv) [folder](scripts/)\n", "b.md": "# B\n\nText $x^2$.\n", "cover.png": PNG,
        "data/x.csv": "a,b\n", "scripts/run.sh": "echo hi\n", **theme, "chapters-md.txt": "README.md\nb.md\n",
    })
    out, output, code = build(tmp_path, root, "--local")
    assert code == 0, output
    files = sorted(str(path.relative_to(out)) for path in out.rglob("*") if path.is_file())
    unregistered = []
    for name in files:
        if name in SITE_FILES or name.startswith(SITE_FOLDERS) or name == "assets/logo.svg":
            continue
        if (root / name).is_file() and (root / name).read_bytes() == (out / name).read_bytes():
            continue  # a copy of the book's file
        if name.endswith(".html"):
            soup = BeautifulSoup((out / name).read_text(encoding="utf-8"), "html.parser")
            if soup.find("article", class_=["chapter", "front"]) or soup.find("meta", attrs={"http-equiv": "refresh"}):
                continue  # a chapter's, the front, a listing or a redirect page: the policy names each
        unregistered.append(name)
    assert unregistered == [], f"the site wrote files that policy.SITE_FILES does not name: {unregistered}"
    assert {"404.html", "robots.txt", "sitemap.xml", ".tools-output", "assets/card.png", "assets/search-index.js", "old.html"} <= set(files)


HTML_RESERVED = [name for name in SITE_FILES if name.endswith(".html")] + ["index.html"] + [folder + "d0.html" for folder in SITE_FOLDERS]


@pytest.mark.parametrize("page", HTML_RESERVED)
def test_a_chapter_whose_page_is_the_sites_own_gets_a_page_of_its_own(page, tmp_path):
    chapter = page[: -len(".html")] + ".md"
    root = write_book(tmp_path / "book", {
        "README.md": f"# Home\n\nRead [the other chapter]({chapter}).\n", chapter: "# The other chapter\n\nUnmistakable words.\n",
    })
    out, output, code = build(tmp_path, root)
    assert code == 0 and ": error:" not in output, output
    home = BeautifulSoup((out / "README.html").read_text(encoding="utf-8"), "html.parser")
    linked = home.find("article").find("a", string="the other chapter")["href"]
    own = out / linked
    assert own.is_file(), (linked, sorted(p.name for p in out.rglob("*.html")))
    if page == "index.html":  # the chapter keeps it; the front page moves aside
        assert linked == page and BeautifulSoup((out / "front.html").read_text(encoding="utf-8"), "html.parser").find("article", class_="front")
    else:
        assert linked != page
    assert "Unmistakable words." in own.read_text(encoding="utf-8")
    assert linked in [a["href"] for a in home.find("nav").find_all("a")]  # the navigation
    parts = "".join(path.read_text(encoding="utf-8") for path in (out / "assets" / "search").glob("d*.js"))
    assert json.dumps(linked)[1:-1] in parts  # the search index's sections point at it
    if (out / page).exists() and page != "index.html":  # the site's own file is still the site's
        assert "Unmistakable words." not in (out / page).read_text(encoding="utf-8")


COPIED_RESERVED = [name for name in SITE_FILES if not name.endswith(".html")] + [folder + "d0.js" for folder in SITE_FOLDERS]


@pytest.mark.parametrize("name", COPIED_RESERVED)
def test_a_book_file_with_the_name_of_a_site_file_is_an_error_at_its_link(name, tmp_path):
    mine = b"the author's own file\n"
    root = write_book(tmp_path / "book", {
        "book.toml": '[book]\ntitle = "T"\nchapters = "chapters-md.txt"\nsite_url = "https://example.org/t/"\ncover = "card.png"\n',
        "README.md": f"# Home\n\nSee [the file]({name}).\n", name: mine, "card.png": PNG, "chapters-md.txt": "README.md\n",
    })
    out, output, code = build(tmp_path, root, "--local")
    assert code == 1, output
    message = f"README.md:3:16: error: '{name}' has the name of a file the output writes itself; it was not copied. Rename the file."
    assert message in output, output
    written = out / name
    assert not written.exists() or written.read_bytes() != mine  # the site's own, or none: never the author's in its place
    assert re.search(r"1 error", output), output
