"""The tool as a real package: a wheel installed (not editable) into a fresh virtual environment builds any book from
any folder (its templates, assets and LinkChecker settings are package data), `tools init` makes a book that builds
and checks clean, and `tools --version` prints the installed version."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from importlib.metadata import version
from pathlib import Path

import pytest

from conftest import REPO
from pdf_check import assert_valid_pdf

PACKAGED = ("pyproject.toml", "README.md", "LICENSE")
INIT_FILES = {"chapters-md.txt", "book.toml", "README.md", "getting-started.md", "images/book.svg"}


def _clean_env(**extra) -> dict:
    """No PYTHONPATH: the commands must import the installed package, never the checkout."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env.update(extra)
    return env


def _run(command: list, cwd: Path, timeout: float = 300, env: dict | None = None) -> subprocess.CompletedProcess:
    done = subprocess.run([str(c) for c in command], cwd=cwd, env=env or _clean_env(), capture_output=True, text=True, timeout=timeout)
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel built from this checkout installed, not editable.

    The wheel is built from a copy of the sources, so the build leaves nothing in the checkout. The new environment
    sees the dependencies through a .pth line naming the test interpreter's site-packages: a path line adds that
    folder only, without running the .pth files in it, so the checkout's editable finder never loads there.
    """
    work = tmp_path_factory.mktemp("package")
    source = work / "source"
    source.mkdir()
    for name in PACKAGED:
        shutil.copyfile(REPO / name, source / name)
    shutil.copytree(REPO / "tools", source / "tools", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    wheels = work / "wheels"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--disable-pip-version-check", "-q", "-w", wheels, source], work)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("mlbook_tools-*.whl")
    venv = work / "venv"
    made = _run([sys.executable, "-m", "venv", venv], work)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    purelib = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], work).stdout.strip())
    dependencies = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    (purelib / "test-dependencies.pth").write_text("".join(f"{folder}\n" for folder in sorted(dependencies)), encoding="utf-8")
    done = _run([python, "-m", "pip", "install", "--no-deps", "--no-index", "--disable-pip-version-check", "-q", wheel], work)
    assert done.returncode == 0, done.stderr
    return venv


@pytest.mark.slow
def test_the_installed_wheel_builds_a_new_book_from_any_folder(installed, tmp_path):
    tools = installed / "bin" / "tools"
    where = _run([installed / "bin" / "python", "-c", "import tools; print(tools.__file__)"], tmp_path)
    assert Path(where.stdout.strip()).resolve().is_relative_to(installed.resolve()), where.stdout
    assert not Path(where.stdout.strip()).resolve().is_relative_to(REPO.resolve())

    shown = _run([tools, "--version"], tmp_path)
    assert shown.returncode == 0 and version("mlbook-tools") in shown.stdout, shown.stdout

    book, elsewhere = tmp_path / "newbook", tmp_path / "elsewhere"
    elsewhere.mkdir()
    made = _run([tools, "init", book], elsewhere)
    assert made.returncode == 0, made.stderr
    assert str(book) in made.stdout and "tools build all" in made.stdout and "tools check-links" in made.stdout
    assert {p.relative_to(book).as_posix() for p in book.rglob("*") if p.is_file()} == INIT_FILES

    out = tmp_path / "out"
    built = _run([tools, "build", "all", "--book", book, "--out", out], elsewhere)
    assert built.returncode == 0, built.stdout + built.stderr
    page = (out / "html" / "README.html").read_text(encoding="utf-8")
    assert 'href="getting-started.html#writing-a-chapter"' in page and "images/book.svg" in page and "highlight" in page
    for asset in ("style.css", "search.js", "theme.js"):
        assert (out / "html" / "assets" / asset).stat().st_size > 0
    assert (out / "book.pdf").stat().st_size > 0 and (out / "book.epub").stat().st_size > 0
    assert_valid_pdf(out / "book.pdf")

    checked = _run([tools, "check-links", "--book", book], elsewhere)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    styled = _run([tools, "check-style", book], elsewhere)
    assert styled.returncode == 0, styled.stdout + styled.stderr


@pytest.mark.slow
@pytest.mark.corpus
def test_the_installed_wheel_builds_the_shared_corpus(installed, corpus_root, tmp_path):
    out = tmp_path / "site"
    built = _run([installed / "bin" / "tools", "build", "html", "--book", corpus_root, "--out", out], tmp_path, timeout=600)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (out / "index.html").is_file() and (out / "assets" / "style.css").is_file()


def _tools_here(*args, cwd: Path) -> subprocess.CompletedProcess:
    return _run([sys.executable, "-m", "tools", *args], cwd, timeout=60, env=_clean_env(PYTHONPATH=str(REPO)))


def test_init_refuses_to_overwrite_and_writes_nothing(tmp_path):
    book = tmp_path / "book"
    book.mkdir()
    (book / "README.md").write_text("# Mine\n", encoding="utf-8")
    done = _tools_here("init", str(book), cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "README.md" in done.stderr and "already exists" in done.stderr
    assert sorted(p.name for p in book.iterdir()) == ["README.md"]
    assert (book / "README.md").read_text(encoding="utf-8") == "# Mine\n"


def test_init_refuses_a_folder_that_is_a_file(tmp_path):
    target = tmp_path / "book"
    target.write_text("not a folder", encoding="utf-8")
    done = _tools_here("init", str(target), cwd=tmp_path)
    assert done.returncode == 2 and "not a folder" in done.stderr
    assert target.read_text(encoding="utf-8") == "not a folder"


def test_init_defaults_to_the_current_folder_and_titles_it(tmp_path):
    book = tmp_path / "my-first_book"
    book.mkdir()
    done = _tools_here("init", cwd=book)
    assert done.returncode == 0, done.stderr
    assert 'title = "My first book"' in (book / "book.toml").read_text(encoding="utf-8")
    assert {p.relative_to(book).as_posix() for p in book.rglob("*") if p.is_file()} == INIT_FILES


def test_version_is_the_installed_distributions(tmp_path):
    done = _tools_here("--version", cwd=tmp_path)
    assert done.returncode == 0
    assert done.stdout.strip() == f"tools, version {version('mlbook-tools')}"
