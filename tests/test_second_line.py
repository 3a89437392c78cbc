"""The site's second line of defence (tools/render/site/second_line.py): nh3 over every chapter's page body.

It changes nothing on real books (byte for byte, drawn mermaid diagrams and math included), and it removes what a
broken first line (tools/markdown/html_sanitize.py, made a no-op here) would let through, with one sentence saying so.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from bs4 import BeautifulSoup
from hypothesis import given, settings, strategies as st
from test_mermaid import MERMAID_JS, require_drawing

from conftest import IN_CI, REPO, require, write_book
from tools.render.site.second_line import second_line

SHARED = REPO.parent / "shared" / "corpus"
HOSTILE = """# Hostile

Some text first.

<script>alert("pwned-script")</script>

Text <img src="x.png" onerror="alert(1)"> and <a href="javascript:alert(1)" onclick="alert(2)">bad</a>.

<a href="JaVa&#x09;ScRiPt:alert(3)">obfuscated</a> <a href="data:text/html,hi">data</a>

<math><mtext><table><mglyph><style><img src=x onerror=alert(5)></style></mglyph></table></mtext></math>
"""
# The first line made a no-op, then the CLI: what a user would see if html_sanitize.py had a bug (with --no-cache:
# the cache keys a body by the code, which the patch does not change).
NO_FIRST_LINE = """
import sys
import tools.render.html as html
html.clean_html = lambda text, xhtml=False, notes=None, style=False: text
from tools.__main__ import main
sys.argv = ["tools", *sys.argv[1:]]
main()
"""


def _dangerous(soup: BeautifulSoup) -> list[str]:
    found = [f"<{element.name}>" for element in soup.find_all(["script", "iframe", "object", "embed", "mglyph"])]
    for element in soup.find_all(True):
        found += [f"{name} on <{element.name}>" for name in element.attrs if name.lower().startswith("on")]
        for name in ("href", "src", "xlink:href", "action", "srcset"):
            value = re.sub(r"[\s\x00-\x1f]", "", str(element.get(name, ""))).lower()
            if value.startswith(("javascript:", "data:text", "vbscript:")):
                found.append(f"{name}={value} on <{element.name}>")
    return found


def test_nh3_removes_what_a_no_op_first_line_lets_through(tmp_path):
    root = write_book(tmp_path / "book", {"README.md": "# Book\n", "hostile.md": HOSTILE, "x.png": b"\x89PNG\r\n\x1a\n"})
    out = tmp_path / "site"
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-c", NO_FIRST_LINE, "build", "html", "--no-cache", "--book", str(root), "--out", str(out)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert "Traceback" not in output, output
    assert result.returncode == 1, output
    page = (out / "hostile.html").read_text(encoding="utf-8")
    article = page[page.index('<article class="chapter"') : page.index("</article>")]
    for parser in ("html.parser", "lxml"):  # two parsers, two readings of the same bytes: neither finds anything
        assert _dangerous(BeautifulSoup(article, parser)) == [], article
    assert "alert(1)" not in article and "pwned-script" not in article
    assert "Some text first." in article and ">bad</a>" in article  # the rest of the page stays
    lines = [line for line in output.splitlines() if "unsafe-html" in line or "second HTML sanitizer" in line]
    assert len(lines) == 1, output  # one sentence for the page, at the line of the first thing removed
    assert re.match(r"hostile\.md:5: error: the site's second HTML sanitizer \(nh3\) removed .*<script>.*onerror on <img>", lines[0]), lines[0]
    assert 'href="javascript:alert(1)" on <a>' in lines[0] and "report this" in lines[0]


def test_the_first_line_alone_leaves_nh3_nothing_to_remove(tmp_path):
    root = write_book(tmp_path / "book", {"README.md": "# Book\n", "hostile.md": HOSTILE, "x.png": b"\x89PNG\r\n\x1a\n"})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "tools", "build", "html", "--book", str(root), "--out", str(tmp_path / "site")], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert "second HTML sanitizer" not in output and "Traceback" not in output, output


# Every chapter of a book rendered for the site with and without the second line, compared byte for byte.
COMPARE = """
import json, sys
from pathlib import Path
from tools.book.config import load_config
from tools.book.load import load_chapters, open_book
from tools.book.translations import languages, view_config
from tools.core.errors import Diagnostics
from tools.markdown.parser import create_markdown
from tools.render.diagrams.stage import draw_diagrams
from tools.render.policy import MultiPagePolicy
from tools.render.site import write

md = create_markdown()
real = write.second_line
report = {"pages": 0, "bytes": 0, "changed": [], "removed": [], "svg": 0, "math": 0}
for root in sys.argv[1:]:
    config = load_config(Path(root))
    for language in languages(config):
        book, entries = open_book(view_config(config, language))
        load_chapters(book, entries)
        draw_diagrams(book, None, Diagnostics())
        policy = MultiPagePolicy(book, Diagnostics(), ".html")
        for chapter in book.chapters:
            urls = [policy.url_for(link) for link in chapter.links]
            body, _, _, removed = write.chapter_body(md, chapter, chapter.tokens, urls)
            write.second_line = lambda text: (text, [])
            try:
                plain = write.chapter_body(md, chapter, chapter.tokens, urls)[0]
            finally:
                write.second_line = real
            report["pages"] += 1
            report["bytes"] += len(plain.encode())
            report["svg"] += plain.count('<figure class="mermaid-diagram"')
            report["math"] += plain.count("<math")
            if body != plain:
                report["changed"].append(f"{root}: {chapter.path}")
            if removed:
                report["removed"].append(f"{root}: {chapter.path}: {removed}")
print(json.dumps(report))
"""


@pytest.mark.xdist_group("second-line-books")
@pytest.mark.parametrize("book", ["chapters", "ml-engineering", "the-art-of-debugging"])
def test_nh3_changes_nothing_on_real_books(book, tmp_path):
    root = REPO / "chapters" if book == "chapters" else SHARED / book
    require(root.is_dir(), f"the shared corpus is not at {root}")
    if book == "chapters" or IN_CI:  # our book's diagrams drawn, so their SVG goes through nh3 too
        require_drawing()
    env = dict(os.environ, PYTHONPATH=str(REPO), TOOLS_MERMAID_JS=str(MERMAID_JS))
    result = subprocess.run([sys.executable, "-c", COMPARE, str(root)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["pages"] > 5 and report["changed"] == [] and report["removed"] == [], report
    if book == "chapters":  # what the allowlist has to cover is there: drawn diagrams (SVG with <style>), MathML
        assert report["svg"] > 10 and report["math"] > 10, report


# Fragments an author (or a broken first line) could put into a body; the output never holds anything that runs.
PIECES = st.sampled_from([
    "<p>", "</p>", "<a href=\"https://example.com/\">", "<a href='javascript:alert(1)'>", "<a href=\"jav&#x09;ascript:x\">", "</a>", "<img src=x onerror=alert(1)>",
    "<img src=\"data:image/png;base64,AA\">", "<img srcset=\"javascript:x 1x\">", "<svg>", "</svg>", "<math>", "<mtext>", "<mglyph>", "<style>", "</style>",
    "<script>", "</script>", "<table>", "<td>", "<!--", "-->", "<iframe>", "<textarea>", "</textarea>", "<noscript>", "<template>", "<a/href='javascript:x'>",
    "<div style=\"background:url(https://evil.example/)\">", "<svg><a xlink:href=\"javascript:y\">", "\" onmouseover=\"x", "text", "&lt;b&gt;", "&#39;a=1&#39;", "\n", " ",
    "<details open>", "<summary>", "<input type=checkbox disabled>", "<form action=javascript:x>", "<button formaction=javascript:x>", "<object data=x>",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(PIECES, max_size=14))
def test_nothing_that_runs_survives_any_fragment(pieces):
    body = "".join(pieces)
    out, removed = second_line(body)
    assert out is body or removed  # either the bytes are kept, or what was removed is named
    for parser in ("html5lib", "lxml", "html.parser"):  # html5lib parses as browsers do (the HTML standard's algorithm)
        assert _dangerous(BeautifulSoup(out, parser)) == [], (parser, body, out)


def test_legitimate_markup_keeps_its_bytes():
    body = ('<h2 id="a">A<a class="permalink" href="#a" aria-label="Permalink to this section">#</a></h2>\n<pre class="highlight" data-lang="python"><code>'
            '<span class="nb">print</span>(<span class="s1">&#39;a=1&#39;</span>)</code></pre>\n<table>\n<thead>\n<tr>\n<th style="text-align:right">x</th>\n'
            '</tr>\n</thead>\n</table>\n<ul class="contains-task-list">\n<li class="task-list-item"><input type="checkbox" class="task-list-item-checkbox" '
            'disabled="disabled" checked="checked"> done</li>\n</ul>\n<div class="markdown-alert markdown-alert-note">\n<p class="markdown-alert-title">'
            '<svg xmlns="http://www.w3.org/2000/svg" class="octicon octicon-info" viewBox="0 0 16 16" width="16" height="16" fill="currentColor" '
            'aria-hidden="true"><path d="M0 8a8 8 0 1 1 16 0"></path></svg>Note</p>\n</div>\n<p><span class="math inline"><math xmlns="http://www.w3.org/1998/Math/MathML" '
            'display="inline"><mrow><msup><mi>x</mi><mn>2</mn></msup></mrow></math></span> <sup><a href="#fn-1" id="fnref-1" class="footnote-ref" '
            'data-footnote-ref="" aria-label="Footnote 1">1</a></sup> <img src="data:image/png;base64,AAAA" alt="dot"> <a href="tel:+1">call</a></p>\n'
            '<details open><summary>More</summary><picture><source media="(prefers-color-scheme: dark)" srcset="dark.png"><img src="light.png" alt="logo"></picture></details>\n')
    out, removed = second_line(body)
    assert out is body and removed == []


def test_any_scheme_the_first_line_keeps_nh3_keeps(tmp_path):
    """CommonMark autolinks of any scheme (spec examples 606, 607, 609) and a GFM autolink whose host a URL parser
    rejects keep their address on the page with no report; the schemes the first line refuses never reach it."""
    text = ("# Schemes\n\n<irc://foo.bar:2233/baz> <a+b+c:d> <made-up-scheme://foo,bar> <MAILTO:x@y.z>\n\n"
            '<a href="JavaScript:alert(1)">js</a>\n\nhttps://example.com[alpha](https://example.com)\n')
    root = write_book(tmp_path / "book", {"README.md": text})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    result = subprocess.run([sys.executable, "-m", "tools", "build", "html", "--no-cache", "--book", str(root), "--out", str(tmp_path / "site")], cwd=tmp_path,
                            env=env, capture_output=True, text=True, timeout=300)
    output = result.stdout + result.stderr
    assert "second HTML sanitizer" not in output and "Traceback" not in output, output
    page = BeautifulSoup((tmp_path / "site" / "README.html").read_text(encoding="utf-8"), "html.parser")
    hrefs = {a.get_text(): a.get("href") for a in page.select("article a") if "permalink" not in (a.get("class") or [])}
    assert hrefs["irc://foo.bar:2233/baz"] == "irc://foo.bar:2233/baz" and hrefs["a+b+c:d"] == "a+b+c:d"
    assert hrefs["made-up-scheme://foo,bar"] == "made-up-scheme://foo,bar" and hrefs["MAILTO:x@y.z"] == "MAILTO:x@y.z"
    assert not (hrefs.get("js") or "").lower().startswith("javascript")
    # an autolink GitHub makes whose host the URL standard rejects: inert, so kept as the first line keeps it
    assert hrefs["https://example.com[alpha](https://example.com)"] == "https://example.com%5Balpha%5D(https://example.com)"


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[A-Za-z][A-Za-z0-9+.\-]{0,12}", fullmatch=True), st.sampled_from(["javascript", "JaVaScRiPt", "vbscript", "file", "data"]))
def test_a_kept_scheme_never_lets_a_refused_one_through(scheme, refused):
    body = f'<p><a href="{scheme}:x">a</a> <a href="{refused}:alert(1)">b</a> <img src="{scheme}:y" alt=""></p>'
    cleaned, _ = second_line(body)
    assert _dangerous(BeautifulSoup(cleaned, "html.parser")) == [] and f"{refused}:" not in cleaned
    if scheme.lower() not in ("javascript", "vbscript", "file", "data"):
        assert f'href="{scheme}:x"' in cleaned
