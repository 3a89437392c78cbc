"""Fixtures of the browser tests: one Chromium per test session, the fixture book's site and our book's site, each
served on 127.0.0.1 and opened from file://, and `open_page`, which fails a test on any console error, any request
that leaves the local server and any failed load."""
from __future__ import annotations

import struct
import zlib

import pytest

from conftest import CORPUS, REPO, require, write_book

from .support import DESKTOP, Watch, axe_source, build, new_context, serve

FILLER = (
    "This paragraph is filler that makes the page long enough to scroll, so that a link to a section has to move "
    "the page for the reader to see the heading. It talks about nodes, links, batches and checkpoints in general terms."
)


def _long(n: int) -> str:
    return "\n\n".join(f"{FILLER} Paragraph {i}." for i in range(n))


# A small book with what the browser tests look for: nested folders, a folder README, a cross-chapter link with a
# fragment far down its target page, a word found in one section of one chapter only, a table and code.
FIXTURE_BOOK = {
    "book.toml": '[book]\ntitle = "Fixture Book"\nauthors = ["Test Author"]\nlanguage = "en"\ndescription = "A book for the browser tests."\n',
    "chapters-md.txt": "README.md\nintro/README.md\nintro/setup.md\nintro/deep/nested.md\nother/notes.md\n",
    "README.md": "# Fixture Book\n\nStart with [installing the tools](intro/setup.md#install-the-tools--quickly), or read the [notes](other/notes.md).\n\n## How to read it\n\nIn order.\n",
    "intro/README.md": "# Introduction\n\nThe introduction. Then [setup](setup.md).\n\n## Scope\n\nWhat the book covers.\n\n## Scope\n\nA second heading with the same text gets another id.\n",
    "intro/setup.md": (
        "# Setup\n\n## Before you start\n\n" + _long(25) + "\n\n## Install the tools — quickly\n\nRun the installer.\n\n"
        "| Tool | Version | Notes |\n| --- | ---: | --- |\n| Python | 3.11 | from the distribution |\n| Chromium | 156 | for the browser tests |\n\n"
        "```python\nimport torch\nprint(torch.cuda.is_available())  # True on a GPU node\n```\n\n" + _long(15) + "\n\n### After installing\n\nCheck it works.\n"
    ),
    "intro/deep/nested.md": "# Nested chapter\n\n## Über Straße\n\nA heading with non-ASCII letters.\n\nBack to [setup](../setup.md#before-you-start).\n",
    "other/notes.md": "# Notes\n\n## General notes\n\n" + _long(20) + "\n\n## Rare animals\n\nThe quagmireblossom appears in this section only.\n\n" + _long(10) + "\n",
}


@pytest.fixture(scope="session")
def axe() -> str:
    return axe_source()


@pytest.fixture(scope="session")
def fixture_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("fixture-site")
    root = write_book(base / "book", FIXTURE_BOOK)
    site = build(root, base / "html", "fixture")
    assert site.extra["exit_code"] == 0, site.extra["build_output"]
    site.server = serve(site.out)
    yield site
    site.server.close()


@pytest.fixture(scope="session")
def book_site(tmp_path_factory):
    """Our own book: its chapters are still being written, so these tests check structure, not content."""
    site = build(REPO / "chapters", tmp_path_factory.mktemp("book-site") / "html", "book")
    site.server = serve(site.out)
    yield site
    site.server.close()


# Every template of the site once, and what the validators look at in it: a translation, a moved chapter (a redirect
# page), a folder link without a README (a listing page), display math wider than the column, a table whose header
# cells hold only math, an alert, an image with its alt text and one without (empty alt: decoration on the web).


def _png(width: int = 8, height: int = 8) -> bytes:
    """A small grey PNG."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    rows = b"".join(b"\x00" + b"\x80\x80\x80" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


PIXEL_PNG = _png()
WIDE_MATH = "$$\n" + " + ".join(f"a_{{{i}}} b_{{{i}}} c_{{{i}}}" for i in range(40)) + "\n$$"
TEMPLATES_BOOK = {
    "book.toml": '[book]\ntitle = "Templates Book"\nauthors = ["Test Author"]\nlanguage = "en"\n\n[translations.zh]\nfolder = "zh"\ntitle = "模板之书"\n\n[redirects]\n"old/start.md" = "guide/start.md"\n',
    "chapters-md.txt": "README.md\nguide/start.md\nguide/math.md\n",
    "README.md": "# Templates Book\n\nRead [the start](guide/start.md), browse [the data folder](data/), or the [math](guide/math.md).\n",
    "guide/start.md": "# Start\n\n## First\n\n> [!NOTE]\n> Notes matter.\n\n> [!WARNING]\n> So do warnings.\n\n![A one-pixel chart](pixel.png)\n\n![](pixel.png)\n\n## Second\n\n"
                      + "\n\n".join(f"### Step {i}\n\nDo step {i}." for i in range(12)) + "\n",
    "guide/pixel.png": PIXEL_PNG,
    "guide/math.md": f"# Math\n\nInline $a^2 + b^2 = c^2$ and a long one:\n\n{WIDE_MATH}\n\n| $x$ | $x^2$ | note |\n| --- | --- | --- |\n| 1 | 1 | one |\n| 2 | 4 | two |\n",
    "data/numbers.csv": "a,b\n1,2\n",
    "zh/README.md": "# 模板之书\n\n阅读[开始](guide/start.md)。\n",
    "zh/guide/start.md": "# 开始\n\n## 第一\n\n内容。\n",
}


@pytest.fixture(scope="session")
def templates_site(tmp_path_factory):
    base = tmp_path_factory.mktemp("templates-site")
    root = write_book(base / "book", TEMPLATES_BOOK)
    site = build(root, base / "html", "templates")
    site.server = serve(site.out)
    yield site
    site.server.close()


@pytest.fixture(scope="session")
def corpus_sites(tmp_path_factory):
    """The shared corpus's books (real books by others), each built as a site: name -> Site."""
    books = sorted(path for path in CORPUS.parent.iterdir() if (path / "chapters-md.txt").is_file()) if CORPUS.parent.is_dir() else []
    require(bool(books), f"the shared corpus is not at {CORPUS.parent}")
    sites = {}
    for book in books:
        site = build(book, tmp_path_factory.mktemp(f"corpus-{book.name}") / "html", book.name)
        site.server = serve(site.out)
        sites[book.name] = site
    yield sites
    for site in sites.values():
        site.server.close()


@pytest.fixture(params=["fixture", "book"])
def site(request):
    return request.getfixturevalue(f"{request.param}_site")


@pytest.fixture
def open_page(browser):
    """`open_page(site, scheme, url=..., **context_options)` -> (page, watch); the test fails on what `watch` saw."""
    opened = []

    def opener(site, scheme="http", page="index.html", **options):
        watch = Watch()
        options.setdefault("viewport", DESKTOP)
        context = new_context(browser, site, scheme, watch, **options)
        tab = context.new_page()
        tab.set_default_timeout(10_000)
        opened.append((context, watch))
        if page is not None:
            tab.goto(site.url(page, scheme))
        return tab, watch

    yield opener
    problems = []
    for context, watch in opened:
        context.close()
        problems.extend(watch.problems())
    assert not problems, "\n".join(problems)
