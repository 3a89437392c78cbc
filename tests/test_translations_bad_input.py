"""Translated books nobody here wrote (issue 17 follow-up): unusual tags, folders that clash with the original's
site or chapters, links written from the translated file's real place, redirects and `tools mv` in a book with
translations. Each case runs the CLI and reads what a user sees: the message (file:line, a suggestion, the exit
code) or the pages."""
from __future__ import annotations

import posixpath

import pytest
from hypothesis import given, settings, strategies as st

from conftest import run_tools, write_book
from site_check import parse
from tools.book.link_model import TargetKind
from tools.book.resolve import FileIndex, resolve

BASE = {
    "chapters-md.txt": "README.md\nguide/install.md\nfaq.md\n",
    "README.md": "# Book\n\nSee [install](guide/install.md) and the [FAQ](faq.md).\n",
    "guide/install.md": "# Install\n\n## Requirements\n\nPython.\n",
    "faq.md": "# FAQ\n\nBecause.\n",
    "zh/README.md": "# 书\n\n见[安装](guide/install.md)。\n",
    "zh/faq.md": "# 常见问题\n\n因为。\n",
}


def _book(tmp_path, toml: str, **files: str):
    merged = {**BASE, "book.toml": '[book]\ntitle = "T"\nlanguage = "en"\n\n' + toml}
    merged.update({name.replace("__", "/"): text for name, text in files.items()})
    return write_book(tmp_path / "book", merged)


CLASHES = {  # book.toml's tables, the extra files, the line of the error, words of the sentence
    "an original folder named by the tag": ('[translations.de]\nfolder = "zh"\n', {"de__README.md": "# De\n"}, 5, "the book's own 'de' is published too"),
    "the same name in another case": ('[translations.de]\nfolder = "zh"\n', {"DE__notes.md": "# De\n"}, 5, "the book's own 'DE' is published too"),
    "an original file named by the tag": ('[translations.de]\nfolder = "zh"\n', {"de": "not a folder\n"}, 5, "'de/' folder of the book's site"),
    "original files beside a nested translation": ('[translations.zh]\nfolder = "zh/hans"\n', {"zh__hans__README.md": "# 书\n"}, 5, "the book's own 'zh'"),
    "a tag repeated in another case": ('[translations.zh]\nfolder = "zh"\n\n[translations.ZH]\nfolder = "zh2"\n', {"zh2__README.md": "# 书\n"}, 8, "is the language of [translations.zh] again"),
    "a tag naming the site's own folder": ('[translations.assets]\nfolder = "zh"\n', {}, 5, "the site's own 'assets/' folder"),
}


@pytest.mark.parametrize("case", sorted(CLASHES))
def test_a_translation_whose_site_would_overwrite_the_originals_is_refused_at_its_line(tmp_path, case):
    toml, files, line, words = CLASHES[case]
    root = _book(tmp_path, toml, **files)
    out = tmp_path / "out"
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(out))
    assert result.returncode == 2, result.stdout + result.stderr
    assert f"book.toml:{line}: " in result.stderr and words in result.stderr, result.stderr
    assert not out.exists()


def test_a_translation_folder_holding_only_the_way_to_a_nested_translation_is_fine(tmp_path):
    files = {name: text for name, text in BASE.items() if not name.startswith("zh/")}
    files.update({"book.toml": '[book]\nlanguage = "en"\n\n[translations.zh]\nfolder = "zh/hans"\n', "zh/hans/README.md": "# 书\n"})
    root = write_book(tmp_path / "book", files)
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert parse(tmp_path / "out/zh/README.html").h1.get_text(strip=True).startswith("书")


@pytest.mark.parametrize("tag", ["zh-CN", "zh-Hans", "pt-BR", "en-US"])
def test_region_and_script_tags_build_their_own_site(tmp_path, tag):
    root = _book(tmp_path, f'[translations.{tag}]\nfolder = "zh"\n')
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    page = parse(tmp_path / "out" / tag / "faq.html")
    assert page.html["lang"] == tag
    assert [a["hreflang"] for a in page.select("nav.language-switcher a")] == ["en", tag]


def test_a_translation_folder_holding_original_chapters_says_so_at_the_list_line(tmp_path):
    root = _book(tmp_path, '[translations.de]\nfolder = "guide"\n')
    result = run_tools(tmp_path, "check-links", "--book", str(root), "--lang", "en", "--no-cache")
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "chapters-md.txt:2: error: the chapter 'guide/install.md' lies in 'guide', which is the folder of the de translation" in output, output
    assert "README.md:3:" in output and "does not exist" not in output, output


def test_a_link_from_the_original_into_a_translation_names_the_translation(tmp_path):
    root = _book(tmp_path, '[translations.zh]\nfolder = "zh"\n', **{"faq.md": "# FAQ\n\n[中文](zh/faq.md)\n"})
    result = run_tools(tmp_path, "check-links", "--book", str(root), "--format", "json", "--no-cache")
    assert result.returncode == 1
    assert "faq.md" in result.stdout and "the folder of the zh translation" in result.stdout and "language switcher" in result.stdout, result.stdout


def test_links_written_from_the_translated_files_real_place_land_on_its_pages(tmp_path):
    text = ("# 书\n\n[a](../zh/faq.md) [b](../faq.md) [c][ref] <a href=\"../zh/faq.md\">d</a> [e](../guide/install.md#requirements)"
            " [f](../zh/)\n\n[ref]: ../zh/faq.md\n")
    root = _book(tmp_path, '[translations.zh]\nfolder = "zh"\n', **{"zh__README.md": text, "zh__guide__install.md": "# 安装\n\n## Requirements\n"})
    out = tmp_path / "out"
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    page = out / "zh/README.html"
    hrefs = {a.get_text(): a["href"] for a in parse(page).select("article a[href]") if not a["href"].startswith("#")}
    landed = {name: (page.parent / href.partition("#")[0]).resolve() for name, href in hrefs.items()}
    for name in "abcd":
        assert landed[name] == (out / "zh/faq.html").resolve(), (name, hrefs)
    assert landed["e"] == (out / "zh/guide/install.html").resolve() and hrefs["e"].endswith("#requirements")
    assert (page.parent / hrefs["f"]).resolve() in {(out / "zh").resolve(), (out / "zh/README.html").resolve(), (out / "zh/index.html").resolve()}, hrefs["f"]


def test_mv_notes_the_translated_copy_and_redirects_work_in_every_language(tmp_path):
    root = _book(tmp_path, '[translations.zh]\nfolder = "zh"\n', **{"zh__README.md": "# 书\n\n[常见](faq.md)\n"})
    moved = run_tools(root, "mv", "faq.md", "questions.md")
    assert moved.returncode == 0, moved.stderr
    assert "note: zh/faq.md, the zh translation of faq.md, does not move with it; move it too: tools mv zh/faq.md zh/questions.md" in moved.stderr
    assert (root / "zh/faq.md").is_file()
    again = run_tools(root, "mv", "zh/faq.md", "zh/questions.md")
    assert again.returncode == 0, again.stderr
    assert (root / "zh/README.md").read_text(encoding="utf-8") == "# 书\n\n[常见](questions.md)\n"
    checked = run_tools(root, "check-links", "--book", str(root), "--no-cache")
    assert checked.returncode == 0, checked.stdout + checked.stderr  # the redirect's target is the zh chapter in the zh view
    out = tmp_path / "out"
    assert run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(out)).returncode == 0
    for site, title in (("", "FAQ"), ("zh/", "常见问题")):
        old = out / f"{site}faq.html"
        target = (old.parent / parse(old).select_one("a[href]")["href"]).resolve()
        assert target == (out / f"{site}questions.html").resolve() and parse(target).h1.get_text(strip=True).startswith(title)


def test_mv_of_a_translation_folder_notes_book_toml(tmp_path):
    root = _book(tmp_path, '[translations.zh]\nfolder = "zh"\n')
    moved = run_tools(root, "mv", "zh", "zh-hans")
    assert moved.returncode == 0 and "book.toml: [translations.zh] still says folder = \"zh\"" in moved.stderr, moved.stderr


_NAMES = st.sampled_from(["a", "b", "guide"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=3).map(lambda parts: "/".join(parts) + ".md")


@settings(max_examples=200, deadline=None)
@given(originals=st.sets(_PATHS, min_size=1, max_size=6), data=st.data())
def test_a_link_climbing_out_of_the_translation_lands_where_its_logical_twin_does(originals, data):
    translated = data.draw(st.sets(st.sampled_from(sorted(originals)), min_size=1))
    files = set(originals) | {f"zh/{path}" for path in translated}
    dirs = {"/".join(path.split("/")[:n]) for path in files for n in range(1, path.count("/") + 1)}
    real = {path: f"zh/{path}" if path in translated else path for path in originals}
    index = FileIndex(frozenset(files), frozenset(dirs), frozenset(real.values()), folder="zh")
    source = data.draw(st.sampled_from(sorted(translated)))
    target = data.draw(st.sampled_from(sorted(originals)))
    logical_href = posixpath.relpath(target, posixpath.dirname(source) or ".")
    for href in (posixpath.relpath(f"zh/{target}", posixpath.dirname(f"zh/{source}")), posixpath.relpath(target, posixpath.dirname(f"zh/{source}"))):
        found, twin = resolve(f"zh/{source}", href, index), resolve(f"zh/{source}", logical_href, index)
        assert (found.kind, found.path) == (twin.kind, twin.path) == (TargetKind.CHAPTER, real[target]), href


def test_the_originals_site_never_replaces_a_folder_of_other_sites(tmp_path):
    """`build html --out docs` where docs/ holds a site the tool built under another name (not a translation's
    folder): refused, and that site is kept; docs/ holding only the zh site (from `--lang zh`) may take the original."""
    root = _book(tmp_path, '[translations.zh]\nfolder = "zh"\n')
    other = tmp_path / "docs" / "mysite"
    assert run_tools(tmp_path, "build", "html", "--book", str(root), "--lang", "en", "--out", str(other)).returncode == 0
    refused = run_tools(tmp_path, "build", "html", "--book", str(root), "--lang", "en", "--out", str(tmp_path / "docs"))
    assert refused.returncode == 2 and "did not make" in refused.stderr, refused.stderr
    assert (other / "index.html").is_file()
    site = tmp_path / "site"
    assert run_tools(tmp_path, "build", "html", "--book", str(root), "--lang", "zh", "--out", str(site)).returncode == 0
    assert (site / "zh" / "index.html").is_file() and not (site / "index.html").exists()
    done = run_tools(tmp_path, "build", "html", "--book", str(root), "--lang", "en", "--out", str(site))
    assert done.returncode == 0, done.stderr
    assert (site / "index.html").is_file() and (site / "zh" / "index.html").is_file()


@pytest.mark.parametrize("old", ["zh/old.md", "ZH/old.md", "assets/old.md"])
def test_a_redirect_into_a_translations_site_folder_is_refused_at_its_line(tmp_path, old):
    """Its page would be written inside html/zh/ (or the assets), where it would replace or lose the zh site."""
    root = _book(tmp_path, f'[translations.zh]\nfolder = "zh"\n\n[redirects]\n"{old}" = "faq.md"\n')
    result = run_tools(tmp_path, "build", "html", "--book", str(root), "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "book.toml:9:" in result.stderr and f"'{old}'" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
