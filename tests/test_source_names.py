"""One rule for a folder's README and one list of skipped folders, shared by links, navigation, scans and checks."""
from __future__ import annotations

import os
import subprocess
import sys

from bs4 import BeautifulSoup

from conftest import REPO, write_book

BOOK = {
    "README.md": "# Home\n\nSee [the guide](guide/), [other](other/) and [old](_build/old/x.md).\n",
    "guide/ReadMe.md": "# Guide\n\nhello\n",  # a README in any case, as on GitHub
    "other/index.md": "# Other index\n\nx\n",  # GitHub shows no index.md for its folder: not a README
    "_build/old/x.md": "# Old\n\nA line\nwrapped.\n",  # the default output folder is never a source
    "chapters-md.txt": "README.md\nguide/ReadMe.md\nother/index.md\n",
}


def _tools(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "tools", *args], env=env, capture_output=True, text=True, timeout=120, check=False)


def test_links_and_navigation_agree_on_a_folders_readme(tmp_path):
    root = write_book(tmp_path / "book", BOOK)
    out = tmp_path / "site"
    built = _tools("build", "html", "--book", str(root), "--out", str(out))
    page = BeautifulSoup((out / "README.html").read_text(encoding="utf-8"), "html.parser")
    links = {a.get_text(): a["href"] for a in page.select(".chapter a")}
    assert links["the guide"] == "guide/ReadMe.html"  # the folder link opens its README, as the sidebar does
    sidebar = page.select_one("#sidebar")
    assert sidebar is not None
    assert [a["href"] for a in sidebar.select(":scope > ul > li > a")] == ["README.html", "guide/ReadMe.html"]
    folder = sidebar.select_one(".folder")
    assert folder is not None and folder.get_text() == "Other"  # index.md nests under its folder
    assert "_build/old/x.md" in built.stderr and "does not exist" in built.stderr  # the skipped folder is not indexed


def test_style_checks_skip_the_same_folders(tmp_path):
    root = write_book(tmp_path / "book", BOOK)
    checked = _tools("check-style", str(root))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "_build" not in checked.stdout + checked.stderr
