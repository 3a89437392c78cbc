"""ARCHITECTURE.md stays a map a newcomer can read in one sitting, and a true one: every path it names exists, and
it and BENCHMARKS.md keep within their limits (issue 34)."""
from __future__ import annotations

import re

import pytest

from conftest import REPO

ARCHITECTURE = REPO / "ARCHITECTURE.md"
# A path is a link's target, or a backticked name under one of the repository's folders (a bare `book.toml` names
# the file of any book, not one of ours).
_BACKTICKED = re.compile(r"`([^`\s]+)`")
_LINKED = re.compile(r"\]\(([^)\s#]+)")
_PATHLIKE = re.compile(r"^(?:tools|tests|scripts|chapters|build|\.github|\.ci)/(?:[\w.\-]+/?)*$")


def named_paths(text: str) -> set[str]:
    names = {name for name in _BACKTICKED.findall(text) if _PATHLIKE.match(name)}
    return names | {name for name in _LINKED.findall(text) if "://" not in name}


def test_every_named_path_exists():
    paths = named_paths(ARCHITECTURE.read_text(encoding="utf-8"))
    assert len(paths) > 50  # the code map names the packages and their main modules
    missing = sorted(path for path in paths if not (REPO / path).exists())
    assert missing == [], f"ARCHITECTURE.md names paths that do not exist: {missing}"


def test_the_path_finder_sees_a_wrong_path():
    assert named_paths("`tools/nowhere.py`, [x](tools/core/), [y](NOPE.md), `tools.book`, `book.toml`, `make lint`") == {"tools/nowhere.py", "tools/core/", "NOPE.md"}


def test_every_package_has_its_section():
    text = ARCHITECTURE.read_text(encoding="utf-8")
    packages = sorted(p.name for p in (REPO / "tools").iterdir() if p.is_dir() and (p / "__init__.py").exists())
    assert [name for name in packages if f"### `tools/{name}/`" not in text and f"`tools/{name}/`" not in text] == []


@pytest.mark.parametrize("name", ["ARCHITECTURE.md", "BENCHMARKS.md"])
def test_a_document_stays_readable_in_one_sitting(name):
    text = (REPO / name).read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= 30 * 1024, f"{name} is over 30 KB: move history and detail out"
    if name == "ARCHITECTURE.md":
        lines = text.splitlines()
        assert len(lines) <= 400
        assert [n for n, line in enumerate(lines, 1) if len(line) > 400] == []


def test_the_top_of_the_package_stays_small():
    entries = sorted(p.name for p in (REPO / "tools").iterdir() if p.name != "__pycache__")
    assert len(entries) <= 12, entries


def test_no_module_is_over_400_lines():
    long = {str(p.relative_to(REPO)): n for p in (REPO / "tools").rglob("*.py") if (n := len(p.read_text(encoding="utf-8").splitlines())) > 400}
    assert long == {}
