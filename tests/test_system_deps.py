"""`make book` on a fresh machine (issue 35, item 1): which Debian packages a book's outputs need (derived from the
book: its languages, the scripts of its text, its mermaid diagrams), and how scripts/install-book-deps.sh installs
the missing ones: as root, through passwordless sudo, or not at all, with one sentence naming the command to run.

apt-get, dpkg-query, sudo and id are fakes on a PATH of their own (a temporary folder), which log what they were
asked; nothing is installed."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run_tools, write_book

BASE = ["libpango-1.0-0", "libpangoft2-1.0-0", "libharfbuzz-subset0", "fontconfig", "fonts-dejavu-core"]
FAKES = {
    "dpkg-query": '#!/bin/bash\npkg=${@: -1}\nfor p in $FAKE_INSTALLED; do [ "$p" = "$pkg" ] && { printf "install ok installed"; exit 0; }; done\nexit 1\n',
    "apt-get": '#!/bin/bash\necho "uid=$(id -u) apt-get $*" >> "$FAKE_LOG"\n',
    "sudo": ('#!/bin/bash\n[ "$1" = -n ] || { echo "sudo: -n expected" >&2; exit 2; }\nshift\n'
             '[ "${FAKE_SUDO:-}" = nopass ] || { echo "sudo: a password is required" >&2; exit 1; }\n'
             'echo "sudo $*" >> "$FAKE_LOG"\nFAKE_UID=0 exec "$@"\n'),
    "id": '#!/bin/bash\necho "${FAKE_UID:-1000}"\n',
    "tools": f'#!/bin/bash\nPYTHONPATH={REPO} exec {sys.executable} -m tools "$@"\n',
}
UTILITIES = ("bash", "grep", "sed", "dirname", "env", "cat", "true")
MERMAID = "```mermaid\ngraph TD; A-->B\n```\n"


@pytest.fixture
def fake_path(tmp_path) -> Path:
    """A folder with the fakes and the few utilities the scripts use: the whole PATH of the scripts under test."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for name, text in FAKES.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o755)
    for name in UTILITIES:
        real = shutil.which(name, path="/usr/bin:/bin")
        assert real, name
        (folder / name).symlink_to(real)
    return folder


def install(fake_path: Path, book: Path, uid: int = 0, sudo: str = "", installed: str = "", **extra: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    log = fake_path.parent / "apt.log"
    log.unlink(missing_ok=True)
    env = {"PATH": str(fake_path), "TOOLS": str(fake_path / "tools"), "FAKE_LOG": str(log), "FAKE_UID": str(uid), "FAKE_SUDO": sudo,
           "FAKE_INSTALLED": installed, "HOME": str(fake_path.parent), "BOOK_CACHE_DIR": os.environ.get("BOOK_CACHE_DIR", ""), **extra}
    result = subprocess.run(["/bin/bash", str(REPO / "scripts" / "install-book-deps.sh"), str(book)], env=env, cwd=fake_path.parent, capture_output=True, text=True, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr
    return result, log.read_text().splitlines() if log.exists() else []


def packages(root: Path, path: str | None = None, **env: str) -> list[str]:
    old = {name: os.environ.get(name) for name in ("PATH", *env)}
    os.environ.update(env)
    if path is not None:
        os.environ["PATH"] = path
    try:
        result = run_tools(root, "system-packages", "--book", str(root), "--names")
    finally:
        for name, value in old.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.split()


@pytest.fixture
def zh_book(tmp_path) -> Path:
    """An English book with a Chinese translation and a mermaid diagram."""
    return write_book(tmp_path / "book", {"book.toml": '[book]\ntitle = "Book"\n\n[translations.zh]\nfolder = "zh"\n', "chapters-md.txt": "a.md\n",
                                          "a.md": f"# A\n\n{MERMAID}", "zh/a.md": "# 甲\n\n中文。\n"})


def test_an_english_book_needs_the_pdf_libraries_and_dejavu_only(tmp_path, fake_path):
    root = write_book(tmp_path / "book", {"a.md": "# A\n\nPlain text, an arrow → and math ∑.\n"})
    assert packages(root, path=str(fake_path)) == BASE


def test_the_packages_follow_the_languages_the_scripts_and_the_diagrams(tmp_path, fake_path, zh_book):
    assert packages(zh_book, path=str(fake_path), TOOLS_CHROMIUM="") == [*BASE, "fonts-noto-cjk", "chromium", "nodejs", "npm"]
    ja = write_book(tmp_path / "ja", {"book.toml": '[book]\nlanguage = "ja"\n', "a.md": "# A\n\nNo Japanese yet.\n"})
    assert packages(ja, path=str(fake_path)) == [*BASE, "fonts-noto-cjk"]  # the declared language is enough
    mixed = write_book(tmp_path / "mixed", {"a.md": "# A\n\nThe word 模型 means model :rocket:.\n", "b.md": "# B\n\nनमस्ते\n"})
    assert packages(mixed, path=str(fake_path)) == [*BASE, "fonts-noto-cjk", "fonts-noto-color-emoji", "fonts-noto-core"]
    (fake_path / "chromium").symlink_to(fake_path / "true")  # a browser on the PATH: none to install
    (fake_path / "npm").symlink_to(fake_path / "true")
    assert packages(zh_book, path=str(fake_path)) == [*BASE, "fonts-noto-cjk"]


def test_the_list_says_why_each_package_is_needed(zh_book, fake_path):
    old = os.environ["PATH"]
    os.environ["PATH"] = str(fake_path)
    try:
        result = run_tools(zh_book, "system-packages", "--book", str(zh_book))
    finally:
        os.environ["PATH"] = old
    lines = dict(line.split("\t") for line in result.stdout.splitlines())
    assert lines["fonts-noto-cjk"] == "the PDF: text in the book's language zh"
    assert lines["chromium"] == "mermaid diagrams (first in a.md): the browser that draws them"


def test_as_root_the_missing_packages_are_installed(zh_book, fake_path):
    result, log = install(fake_path, zh_book, uid=0, installed=" ".join(BASE))
    assert result.returncode == 0, result.stderr
    assert log == ["uid=0 apt-get update -qq", "uid=0 apt-get install -y -qq --no-install-recommends fonts-noto-cjk chromium nodejs npm"], log
    assert result.stderr == "make book: installing the Debian packages the book's outputs need: fonts-noto-cjk chromium nodejs npm\n"


def test_with_passwordless_sudo_they_are_installed_through_sudo(zh_book, fake_path):
    result, log = install(fake_path, zh_book, uid=1000, sudo="nopass", installed="fontconfig")
    assert result.returncode == 0, result.stderr
    missing = "libpango-1.0-0 libpangoft2-1.0-0 libharfbuzz-subset0 fonts-dejavu-core fonts-noto-cjk chromium nodejs npm"
    assert log == ["sudo true", "sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq", "uid=0 apt-get update -qq",
                   f"sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends {missing}",
                   f"uid=0 apt-get install -y -qq --no-install-recommends {missing}"], log


def test_without_root_or_sudo_it_stops_with_the_command_to_run(zh_book, fake_path):
    result, log = install(fake_path, zh_book, uid=1000, sudo="", installed=" ".join(BASE))
    assert result.returncode == 1 and log == [], (result.stderr, log)
    assert result.stderr == ("make book: the book's outputs need Debian packages that are missing, and installing them needs root: "
                             "run 'sudo apt-get install -y fonts-noto-cjk chromium nodejs npm' (or the same as root), then run make book again.\n")
    (fake_path / "sudo").unlink()  # no sudo at all: the same sentence
    again, log = install(fake_path, zh_book, uid=1000, installed=" ".join(BASE))
    assert again.returncode == 1 and again.stderr == result.stderr and log == []


def test_nothing_runs_when_everything_is_installed_or_installing_is_turned_off(zh_book, fake_path):
    everything = " ".join([*BASE, "fonts-noto-cjk", "chromium", "nodejs", "npm"])
    result, log = install(fake_path, zh_book, uid=1000, installed=everything)
    assert result.returncode == 0 and result.stderr == "" and log == [], (result.stderr, log)
    result, log = install(fake_path, zh_book, uid=0, installed=" ".join(BASE), SYSTEM_DEPS="no")
    assert result.returncode == 0 and log == [] and "SYSTEM_DEPS=no" in result.stderr and "fonts-noto-cjk chromium nodejs npm" in result.stderr


def test_a_failing_apt_get_is_one_sentence(zh_book, fake_path):
    (fake_path / "apt-get").write_text('#!/bin/bash\necho "E: Unable to locate package chromium" >&2\nexit 100\n')
    result, _ = install(fake_path, zh_book, uid=0, installed=" ".join(BASE))
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == ("make book: apt-get could not install fonts-noto-cjk chromium nodejs npm (its messages are above); "
                                              "fix that, or run 'sudo apt-get install -y fonts-noto-cjk chromium nodejs npm' by hand, then run make book again.")


def test_not_debian_is_told_what_to_install_and_goes_on(zh_book, fake_path):
    (fake_path / "dpkg-query").unlink()
    result, log = install(fake_path, zh_book, uid=1000)
    assert result.returncode == 0 and log == []
    assert result.stderr.startswith("make book: this is not a Debian or Ubuntu machine (no dpkg-query), so nothing is installed; the book's outputs need the equivalents of: libpango-1.0-0 ")


def test_a_broken_book_toml_stops_before_anything_is_installed(tmp_path, fake_path):
    root = write_book(tmp_path / "book", {"book.toml": "[book\n", "a.md": "# A\n"})
    result, log = install(fake_path, root, uid=0)
    assert result.returncode == 2 and log == [], result.stderr
    assert "book.toml:1" in result.stderr and "not valid TOML" in result.stderr


def test_our_book_needs_the_cjk_and_emoji_fonts(fake_path):
    listed = packages(REPO / "chapters", path=str(fake_path), TOOLS_CHROMIUM="")
    assert {"fonts-noto-cjk", "chromium", *BASE} <= set(listed), listed
