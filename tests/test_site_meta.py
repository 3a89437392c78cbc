"""What the site says about its pages: edit links and last-changed dates from git, canonical URLs, the sitemap,
robots.txt, OpenGraph and Twitter cards, descriptions; no 'unversioned' anywhere; a site served under /<repo>/
(as GitHub Pages serves a project) has no broken link, its 404 page included."""
from __future__ import annotations

import functools
import http.server
import os
import re
import subprocess
import threading
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from urllib.parse import urljoin, urlsplit
from xml.etree import ElementTree

import pytest
from hypothesis import given, settings, strategies as st
from pypdf import PdfReader

from conftest import require_tool, run_tools, write_book
from site_check import parse

COMMITTED = "2021-03-04T05:06:07+02:00"
SITE_URL = "https://owner.github.io/name/"
SITEMAP = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
LONG = ("The first paragraph of this chapter runs on for a good while, with words about batches, checkpoints and "
        "learning rates, so that the description has to be cut somewhere before its end, at a word.")
CHAPTERS = {
    "README.md": f"# Home\n\n[![badge](https://img.shields.io/x.svg)](https://example.com)\n\n{LONG}\n\nSee [two](sub/two.md) and [data](data/table.csv).\n",
    "sub/two.md": "# Two\n\nShort *one* & <b>more</b>.\n\n## Later\n\nText.\n",
    "data/table.csv": "a,b\n1,2\n",
}


def _toml(**keys: str) -> str:
    return "[book]\ntitle = \"Meta Book\"\ndescription = \"A book about <things> & stuff.\"\n" + "".join(f'{key} = "{value}"\n' for key, value in keys.items())


def _git(cwd: Path, *args: str) -> None:
    git = require_tool("git")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_AUTHOR_DATE": COMMITTED, "GIT_COMMITTER_DATE": COMMITTED, "HOME": str(cwd), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    subprocess.run([git, *args], cwd=cwd, check=True, env=env, capture_output=True)


def _build(tmp_path: Path, root: Path, fmt: str = "html", *extra: str) -> Path:
    out = tmp_path / "out"
    result = run_tools(tmp_path, "build", fmt, "--book", str(root), "--out", str(out), *extra)
    assert result.returncode == 0, result.stdout + result.stderr
    return out


def _pages(out: Path) -> list[str]:
    return sorted(p.relative_to(out).as_posix() for p in out.rglob("*.html") if p.name != "404.html")


@pytest.fixture(scope="module")
def in_git(tmp_path_factory) -> Path:
    """A book in the folder `book/` of a git repository, committed at COMMITTED, built with a repository and site_url."""
    tmp = tmp_path_factory.mktemp("in-git")
    root = write_book(tmp / "repo" / "book", {"book.toml": _toml(repository="https://github.com/owner/name", branch="trunk", site_url=SITE_URL.rstrip("/")),
                                              "chapters-md.txt": "README.md\nsub/two.md\n", **CHAPTERS})
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        _git(root.parent, *args)
    return _build(tmp, root)


def test_each_chapter_links_to_its_edit_page_and_shows_its_last_commit(in_git):
    for page, source in (("README.html", "README.md"), ("sub/two.html", "sub/two.md")):
        footer = parse(in_git / page).find("footer")
        assert footer.find("a", string="Edit this page")["href"] == f"https://github.com/owner/name/edit/trunk/book/{source}"
        assert footer.find("time")["datetime"] == COMMITTED
        assert "2021-03-04" in footer.get_text()


def test_the_sitemap_lists_every_page_with_its_date(in_git):
    tree = ElementTree.parse(in_git / "sitemap.xml")
    assert tree.getroot().tag == f"{SITEMAP}urlset"
    entries = {url.findtext(f"{SITEMAP}loc"): url.findtext(f"{SITEMAP}lastmod") for url in tree.getroot()}
    for url in tree.getroot():  # the schema's shape: loc first, then lastmod, nothing else
        assert [child.tag for child in url] in ([f"{SITEMAP}loc"], [f"{SITEMAP}loc", f"{SITEMAP}lastmod"])
    assert sorted(entries) == sorted(SITE_URL if page == "index.html" else SITE_URL + page for page in _pages(in_git))
    assert entries[SITE_URL + "sub/two.html"] == COMMITTED
    assert (in_git / "robots.txt").read_text(encoding="utf-8") == f"User-agent: *\nAllow: /\nSitemap: {SITE_URL}sitemap.xml\n"


def test_every_page_has_its_canonical_url_and_card(in_git):
    for page in _pages(in_git):
        soup = parse(in_git / page)
        canonical = soup.find("link", rel="canonical")["href"]
        assert canonical == (SITE_URL if page == "index.html" else SITE_URL + page)
        meta = {tag.get("property") or tag.get("name"): tag["content"] for tag in soup.find_all("meta", content=True)}
        assert meta["og:url"] == canonical and meta["og:site_name"] == "Meta Book" and meta["og:locale"] == "en"
        assert meta["og:title"] == meta["twitter:title"] == soup.title.get_text().split(" · ")[0]
        assert meta["og:description"] == meta["twitter:description"] == meta["description"]
        assert meta["og:image"] == SITE_URL + "assets/social-card.png" and meta["twitter:card"] == "summary_large_image"
        assert (in_git / "assets" / "social-card.png").read_bytes().startswith(b"\x89PNG")
        assert meta["og:type"] == ("book" if page == "index.html" else "article")


def test_descriptions_come_from_the_first_paragraph_trimmed_at_a_word(in_git):
    front = parse(in_git / "index.html").find("meta", attrs={"name": "description"})["content"]
    assert front == "A book about <things> & stuff."
    assert parse(in_git / "sub/two.html").find("meta", attrs={"name": "description"})["content"] == "Short one & more."
    home = parse(in_git / "README.html").find("meta", attrs={"name": "description"})["content"]
    assert len(home) <= 160 and home.endswith("…") and LONG.startswith(home[:-1]) and LONG[len(home) - 1] == " "


def test_without_repository_or_site_url_there_is_no_edit_link_card_url_or_sitemap(tmp_path):
    root = write_book(tmp_path / "book", {"book.toml": _toml(), **CHAPTERS})
    out = _build(tmp_path, root)
    soup = parse(out / "README.html")
    assert soup.find("a", string="Edit this page") is None and soup.find("link", rel="canonical") is None
    assert soup.find("meta", property="og:image") is None and soup.find("meta", attrs={"name": "twitter:card"})["content"] == "summary"
    assert not (out / "sitemap.xml").exists()
    assert (out / "robots.txt").read_text(encoding="utf-8") == "User-agent: *\nAllow: /\n"


def test_the_card_shows_the_books_png_cover(tmp_path):
    import io

    from PIL import Image

    image = io.BytesIO()
    Image.new("RGB", (120, 63), (200, 30, 30)).save(image, "PNG")
    root = write_book(tmp_path / "book", {"book.toml": _toml(site_url=SITE_URL, cover="art/cover.png"), "art/cover.png": image.getvalue(), "README.md": "# Home\n\nText.\n"})
    out = _build(tmp_path, root)
    assert parse(out / "README.html").find("meta", property="og:image")["content"] == SITE_URL + "assets/card.png"
    assert (out / "assets" / "card.png").read_bytes() == image.getvalue()


@pytest.mark.parametrize(("repository", "edit"), [
    ("https://gitlab.com/group/name", "https://gitlab.com/group/name/-/edit/main/README.md"),
    ("https://git.example.org/owner/name", None),
])
def test_edit_links_only_where_the_host_has_such_a_page(tmp_path, repository, edit):
    root = write_book(tmp_path / "book", {"book.toml": _toml(repository=repository), "README.md": "# Home\n\nText.\n"})
    link = parse(_build(tmp_path, root) / "README.html").find("a", string="Edit this page")
    assert (link["href"] if link else None) == edit


def test_outside_git_no_date_and_no_revision_anywhere(tmp_path):
    git = require_tool("git")
    root = write_book(tmp_path / "book", {"book.toml": _toml(repository="https://github.com/owner/name"), **CHAPTERS})
    assert subprocess.run([git, "rev-parse"], cwd=root, capture_output=True, check=False).returncode != 0, "the test's folder is inside a git work tree"
    out = _build(tmp_path, root, "all")
    for page in (out / "html").rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        assert "unversioned" not in text and "revision" not in text, page
        assert parse(page).find("time") is None
    pdf = "\n".join(page.extract_text() for page in PdfReader(out / "book.pdf").pages)
    assert "Meta Book" in pdf and "unversioned" not in pdf and "revision" not in pdf
    with zipfile.ZipFile(out / "book.epub") as epub:
        text = "".join(epub.read(name).decode("utf-8") for name in epub.namelist() if name.endswith((".xhtml", ".opf", ".ncx")))
    assert "unversioned" not in text and "revision" not in text


@pytest.mark.parametrize("value", ["ftp://host/book/", "https://host/book/?page=1", "https://host/book/#top", "owner.github.io/name", "http://["])
def test_a_site_url_that_is_no_site_is_a_sentence_at_its_line(tmp_path, value):
    root = write_book(tmp_path / "book", {"book.toml": _toml(site_url=value), "README.md": "# Home\n"})
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 2
    assert re.search(r"book\.toml:4: 'site_url' is .* which is not the http\(s\) URL of the published site", result.stderr), result.stderr


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab é*`_[]()<>!\n-#&"), max_size=400))
def test_any_markdown_gives_a_short_plain_description(source):
    from tools.markdown.parser import create_markdown
    from tools.render.site.page_meta import DESCRIPTION_LIMIT, first_paragraph, trimmed

    description = trimmed(first_paragraph(create_markdown().parse(source)))
    assert len(description) <= DESCRIPTION_LIMIT and "\n" not in description and description == description.strip()


@given(st.lists(st.sampled_from(["a", "bb", "word", "x" * 200, "é"]), max_size=80))
def test_trimming_keeps_whole_words(words):
    from tools.render.site.page_meta import DESCRIPTION_LIMIT, trimmed

    text = " ".join(words)
    cut = trimmed(text)
    assert len(cut) <= DESCRIPTION_LIMIT
    if len(text) <= DESCRIPTION_LIMIT:
        assert cut == text
    else:
        assert cut.endswith("…") and text.startswith(cut[:-1])


# --- the site served under /<repo>/, as GitHub Pages serves a project site -------------------------------------------


class _Subpath(http.server.SimpleHTTPRequestHandler):
    """Serves the site under /name/ only; any other path answers the site's 404.html with status 404."""

    def log_message(self, format, *args):  # noqa: A002 - the base class's name
        pass

    def translate_path(self, path):
        route = urlsplit(path).path
        inner = route[len("/name/"):] if route.startswith("/name/") else "\0"
        return super().translate_path("/" + inner)

    def send_head(self):
        if not os.path.exists(self.translate_path(self.path)) or "\0" in self.translate_path(self.path):
            body = (Path(self.directory) / "404.html").read_bytes()
            self.send_response(404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            import io

            return io.BytesIO(body)
        return super().send_head()


@pytest.fixture
def subpath_server():
    servers = []

    def start(out: Path) -> str:
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Subpath, directory=str(out)))
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        servers.append(httpd)
        return f"http://127.0.0.1:{httpd.server_address[1]}/name/"

    yield start
    for httpd in servers:
        httpd.shutdown()
        httpd.server_close()


def _status(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, answer.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def test_a_site_served_under_a_subpath_has_no_broken_link(in_git, subpath_server):
    from bs4 import BeautifulSoup

    base = subpath_server(in_git)
    origin = base[: -len("/name/")]
    seen: set[str] = set()
    queue = [base]
    broken = []
    while queue:
        url = queue.pop()
        if url in seen:
            continue
        seen.add(url)
        status, body = _status(url)
        if status != 200:
            broken.append(url)
            continue
        if not url.endswith((".html", "/")):
            continue
        soup = BeautifulSoup(body, "lxml")
        refs = [tag["href"] for tag in soup.find_all(["a", "link"], href=True)] + [tag["src"] for tag in soup.find_all(["img", "script"], src=True)]
        for ref in refs:
            target = urljoin(url, ref).split("#")[0]
            if target.startswith(origin):
                queue.append(target)
    assert not broken, broken
    assert {base, base + "README.html", base + "sub/two.html", base + "assets/style.css"} <= seen
    status, body = _status(base + "no/such/page")
    assert status == 404 and b"Page not found" in body
    front = BeautifulSoup(body, "lxml").find("a", string="Go to the front page")["href"]
    assert front == "/name/" and _status(urljoin(base + "no/such/page", front))[0] == 200


def test_without_site_url_the_404_page_finds_the_front_page_under_a_subpath(tmp_path, subpath_server, browser):
    root = write_book(tmp_path / "book", {"book.toml": _toml(), **CHAPTERS})
    base = subpath_server(_build(tmp_path, root))
    page = browser.new_page()
    try:
        page.goto(base + "no/such/page")
        page.wait_for_function("document.getElementById('front-page').getAttribute('href') !== '/'")
        assert page.get_attribute("#front-page", "href") == "/name/"
        answer = page.goto(page.eval_on_selector("#front-page", "link => link.href"))
        assert answer is not None and answer.status == 200 and "Meta Book" in page.title()
    finally:
        page.close()


def test_a_repository_with_an_unclosed_bracket_is_a_sentence(tmp_path):
    root = write_book(tmp_path / "book", {"book.toml": _toml(repository="http://["), "README.md": "# Home\n"})
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "book.toml:4: 'repository' is 'http://[', which is not an http(s) URL" in result.stderr, result.stderr
