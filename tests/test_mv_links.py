"""`tools mv` and `tools mv-links`: links rewritten at their recorded spans only, in their own style; all files
written or none; moving back gives every byte back (the shared corpus, our own book, generated trees)."""
from __future__ import annotations

import os
import posixpath
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import REPO, require_tool
from tools.book.collect import collect
from tools.book.load import load_book
from tools.checks.links.local import check_book
from tools.cli import main
from tools.edit import move as move_module
from tools.edit.move import MoveError, apply_move, plan_move, remap
from tools.markdown.parser import create_markdown


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.relative_to(root).parts}


def findings(root: Path, src: str = "", dst: str = "") -> Counter:
    """(file, line, code) of every finding, with paths mapped back through the move when given."""
    diagnostics = check_book(load_book(root))
    out = Counter()
    for d in diagnostics.items:
        file = remap(d.file, dst, src) if src else d.file
        out[(file, d.line, d.code)] += 1
    return out


def cli(*args: str):
    return CliRunner().invoke(main, [*args, "--no-cache"])


STYLES = {
    "book.toml": '[book]\nrepository_path = ""\n',
    "chapters-md.txt": "README.md\nslurm/README.md\nslurm/admin.md\nnetwork/x.md\n",
    "README.md": (
        "# Home\n\n"
        "Inline [admin](slurm/admin.md#jobs \"Admin\") and [folder](./slurm/) and [brackets](<slurm/my notes.md>).\n"
        "An ![image](slurm/images/p.png) and <a href=\"slurm/admin.md#jobs\">html</a> <img src=\"./slurm/images/p.png\" alt=\"p\">.\n"
        "Rooted [abs](/slurm/admin.md) and encoded [pct](slurm/my%20notes.md#top) and a [use][ref] of a definition.\n"
        "External [ext](https://example.com/slurm/admin.md), [self](#home) and `[code](slurm/admin.md)` stay.\n\n"
        "```markdown\n[fenced](slurm/admin.md)\n```\n\n"
        "[ref]: slurm/admin.md#jobs 'Definition title'\n"
    ),
    "slurm/README.md": "# Slurm\n\nSee [admin](admin.md) and [home](../README.md#home) and [net](../network/x.md).\n",
    "slurm/admin.md": "# Admin\n\n## Jobs\n\nBack to [the folder](./) and [the top](../) and [notes](<my notes.md#top>).\n<a href=\"../network/x.md\">net</a>\n",
    "slurm/my notes.md": "# Top\n",
    "slurm/images/p.png": b"\x89PNG\r\n\x1a\n",
    "network/x.md": "# X\n\nUp to [slurm](../slurm/README.md) and [admin](../slurm/admin.md#jobs) and [images](../slurm/images/).\n",
}

EXPECTED_README = (
    "# Home\n\n"
    "Inline [admin](orchestration/slurm/admin.md#jobs \"Admin\") and [folder](./orchestration/slurm/) and [brackets](<orchestration/slurm/my notes.md>).\n"
    "An ![image](orchestration/slurm/images/p.png) and <a href=\"orchestration/slurm/admin.md#jobs\">html</a> <img src=\"./orchestration/slurm/images/p.png\" alt=\"p\">.\n"
    "Rooted [abs](/orchestration/slurm/admin.md) and encoded [pct](orchestration/slurm/my%20notes.md#top) and a [use][ref] of a definition.\n"
    "External [ext](https://example.com/slurm/admin.md), [self](#home) and `[code](slurm/admin.md)` stay.\n\n"
    "```markdown\n[fenced](slurm/admin.md)\n```\n\n"
    "[ref]: orchestration/slurm/admin.md#jobs 'Definition title'\n"
)


@pytest.fixture
def styled(tmp_book):
    return tmp_book(STYLES)


def test_every_style_is_kept(styled):
    before, found = snapshot(styled), findings(styled)
    assert set(code for _, _, code in found) == {"not-a-chapter"}  # 'my notes.md' is not a chapter
    result = cli("mv", "--book", str(styled), str(styled / "slurm"), str(styled / "orchestration" / "slurm"))
    assert result.exit_code == 0, result.output
    assert "rewrote 16 links in 4 files; updated chapters-md.txt" in result.output
    assert (styled / "README.md").read_text() == EXPECTED_README
    assert (styled / "orchestration/slurm/README.md").read_text() == "# Slurm\n\nSee [admin](admin.md) and [home](../../README.md#home) and [net](../../network/x.md).\n"
    assert (styled / "orchestration/slurm/admin.md").read_text() == "# Admin\n\n## Jobs\n\nBack to [the folder](./) and [the top](../../) and [notes](<my notes.md#top>).\n<a href=\"../../network/x.md\">net</a>\n"
    assert (styled / "network/x.md").read_text() == "# X\n\nUp to [slurm](../orchestration/slurm/README.md) and [admin](../orchestration/slurm/admin.md#jobs) and [images](../orchestration/slurm/images/).\n"
    assert (styled / "chapters-md.txt").read_text() == "README.md\norchestration/slurm/README.md\norchestration/slurm/admin.md\nnetwork/x.md\n"
    assert not (styled / "slurm").exists()
    assert findings(styled, "slurm", "orchestration/slurm") == found
    back = cli("mv", "--book", str(styled), str(styled / "orchestration" / "slurm"), str(styled / "slurm"))
    assert back.exit_code == 0, back.output
    assert snapshot(styled) == before
    assert not (styled / "orchestration").exists()  # the folder the first move created is gone again


def test_dry_run_prints_a_diff_and_writes_nothing(styled):
    before = snapshot(styled)
    result = cli("mv", "--dry-run", "--book", str(styled), str(styled / "slurm"), str(styled / "orchestration" / "slurm"))
    assert result.exit_code == 0, result.output
    assert snapshot(styled) == before
    out = result.stdout
    assert out.startswith("# move slurm/ -> orchestration/slurm/ (4 files)\n")
    assert "--- a/slurm/admin.md\n+++ b/orchestration/slurm/admin.md\n" in out
    assert "-[ref]: slurm/admin.md#jobs 'Definition title'\n+[ref]: orchestration/slurm/admin.md#jobs 'Definition title'\n" in out
    assert "--- a/chapters-md.txt\n+++ b/chapters-md.txt\n" in out
    assert "+Inline [admin](orchestration/slurm/admin.md#jobs \"Admin\")" in out


def test_mv_links_after_a_move_by_hand_gives_the_same_result(styled, tmp_book):
    twin = tmp_book(STYLES, name="twin")
    assert cli("mv", "--book", str(twin), str(twin / "slurm"), str(twin / "orchestration" / "slurm")).exit_code == 0
    (styled / "orchestration").mkdir()
    os.rename(styled / "slurm", styled / "orchestration" / "slurm")
    result = cli("mv-links", "--book", str(styled), str(styled / "slurm"), str(styled / "orchestration" / "slurm"))
    assert result.exit_code == 0, result.output
    assert snapshot(styled) == snapshot(twin)


@pytest.mark.parametrize("args, message", [
    (("slurm", "network"), "already exists; refusing to overwrite it"),
    (("slurm", "network/x.md"), "already exists"),
    (("slurm", "slurm/deeper"), "into itself"),
    (("nowhere", "elsewhere"), "does not exist"),
    (("slurm", "slurm"), "are the same"),
    (("/", "x"), "outside the book"),
])
def test_refusals_change_nothing(styled, args, message):
    before = snapshot(styled)
    src, dst = (a if a.startswith("/") else str(styled / a) for a in args)
    result = cli("mv", "--book", str(styled), src, dst)
    assert result.exit_code == 2 and message in result.output, result.output
    assert snapshot(styled) == before


def test_mv_links_refuses_when_nothing_moved(styled):
    result = cli("mv-links", "--book", str(styled), str(styled / "slurm"), str(styled / "elsewhere"))
    assert result.exit_code == 2 and "does not exist" in result.output
    (styled / "elsewhere").mkdir()
    result = cli("mv-links", "--book", str(styled), str(styled / "slurm"), str(styled / "elsewhere"))
    assert result.exit_code == 2 and "still exists" in result.output


def test_a_failed_write_changes_nothing(styled, monkeypatch):
    before = snapshot(styled)
    real = os.replace
    calls = []

    def flaky(a, b):
        calls.append(b)
        if len(calls) == 3:
            raise OSError("disk full (simulated)")
        return real(a, b)

    monkeypatch.setattr(move_module.os, "replace", flaky)
    plan = plan_move(styled, styled / "slurm", styled / "orchestration" / "slurm", config=None)
    with pytest.raises(OSError):
        apply_move(plan)
    assert snapshot(styled) == before  # the two files already replaced were restored, and the folder moved back
    assert not list(styled.rglob("*.tmp"))


def test_a_link_the_move_cannot_place_stops_everything(styled, monkeypatch):
    before = snapshot(styled)
    monkeypatch.setattr(move_module, "_is_destination", lambda text, link: "network" not in link.source)
    with pytest.raises(MoveError, match="place in the file is not known"):
        plan_move(styled, styled / "slurm", styled / "orchestration" / "slurm")
    assert snapshot(styled) == before


def test_moving_a_readme_out_of_its_folder_follows_the_chapter(tmp_book):
    root = tmp_book({
        "README.md": "# Home\n\n[guide](guide/) and [guide page](guide/README.md#guide)\n",
        "guide/README.md": "# Guide\n\n[home](../README.md)\n",
        "guide/tool.py": "print()\n",
    })
    result = cli("mv", "--book", str(root), str(root / "guide" / "README.md"), str(root / "manual.md"))
    assert result.exit_code == 0, result.output
    assert (root / "README.md").read_text() == "# Home\n\n[guide](manual.md) and [guide page](manual.md#guide)\n"
    assert (root / "manual.md").read_text() == "# Guide\n\n[home](README.md)\n"
    assert "opened the README of guide/" in result.stderr
    assert findings(root) == Counter()


def test_git_mv_inside_a_work_tree(styled, tmp_path):
    git = require_tool("git")
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", "HOME": str(tmp_path), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "start"]):
        subprocess.run([git, *args], cwd=styled, check=True, env=env)
    before = snapshot(styled)
    result = cli("mv", "--book", str(styled), str(styled / "slurm"), str(styled / "orchestration" / "slurm"))
    assert result.exit_code == 0 and "moved (git mv)" in result.output, result.output
    status = subprocess.run([git, "status", "--porcelain"], cwd=styled, capture_output=True, text=True, env=env).stdout
    assert "RM slurm/admin.md -> orchestration/slurm/admin.md" in status  # renamed in the index, links edited
    assert "R  slurm/images/p.png -> orchestration/slurm/images/p.png" in status
    assert cli("mv", "--book", str(styled), str(styled / "orchestration" / "slurm"), str(styled / "slurm")).exit_code == 0
    assert snapshot(styled) == before
    assert subprocess.run([git, "status", "--porcelain"], cwd=styled, capture_output=True, text=True, env=env).stdout == ""


def test_crlf_and_a_byte_order_mark_survive(tmp_book):
    root = tmp_book({"README.md": b"\xef\xbb\xbf# Home\r\n\r\nSee [a](a/x.md).\r\n", "a/x.md": "# X\n", "chapters-md.txt": "README.md\na/x.md\n"})
    assert cli("mv", "--book", str(root), str(root / "a"), str(root / "b")).exit_code == 0
    assert (root / "README.md").read_bytes() == b"\xef\xbb\xbf# Home\r\n\r\nSee [a](b/x.md).\r\n"


# --- the shared corpus and our own book ------------------------------------------------------------------------

def copy_book(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    for path in [target, *target.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)
    return target


def round_trip(root: Path, src: str, dst: str) -> None:
    before, found = snapshot(root), findings(root)
    plan = plan_move(root, root / src, root / dst)
    assert plan.edits, "the move should need link changes"
    apply_move(plan)
    assert findings(root, src, dst) == found  # nothing new, nothing lost
    edited = {e.file for e in plan.edits}
    for change in plan.changes.values():  # bytes outside the rewritten destinations never change
        unchanged_outside_spans(change)
    apply_move(plan_move(root, root / dst, root / src))
    assert snapshot(root) == before, f"{src} -> {dst} -> back is not byte-identical ({sorted(edited)[:3]})"


def outside_links(text: str) -> list[str]:
    """The text between the link destinations the parser finds: what a move must leave alone."""
    env: dict = {}
    links = collect("x.md", text, create_markdown().parse(text, env), env).links
    pieces, at = [], 0
    for start, raw in sorted((link.offset, link.raw) for link in links if link.offset is not None):
        pieces.append(text[at:start])
        at = start + len(raw)
    pieces.append(text[at:])
    return pieces


def unchanged_outside_spans(change) -> None:
    """Parsed again, the old and the new text differ only inside link destinations."""
    assert outside_links(change.before) == outside_links(change.after), f"{change.old_path}: a change outside the links"


@pytest.mark.corpus
@pytest.mark.parametrize("src, dst", [
    ("pytorch", "frameworks/pytorch"),  # a top-level folder into a new subfolder, and back
    ("compiled-programs/dl1", "unix/dl1"),  # a folder between folders
    ("methodology.md", "build/methodology.md"),  # a single markdown file between folders
])
def test_corpus_moves_and_back_are_byte_identical(corpus_root, tmp_path, src, dst):
    root = copy_book(corpus_root, tmp_path / "corpus")
    round_trip(root, src, dst)


@pytest.mark.corpus
def test_corpus_chapter_moved_between_folders_breaks_nothing(corpus_root, tmp_path):
    root = copy_book(corpus_root, tmp_path / "corpus")
    found = findings(root)
    result = cli("mv", "--book", str(root), str(root / "python" / "README.md"), str(root / "unix" / "python.md"))
    assert result.exit_code == 0, result.output
    assert findings(root, "python/README.md", "unix/python.md") == found
    assert "unix/python.md" in (root / "chapters-md.txt").read_text()


def test_our_book_slurm_moves_to_the_top_and_back(tmp_path):
    root = copy_book(REPO / "chapters", tmp_path / "ours")
    round_trip(root, "orchestration/slurm", "slurm")  # a subfolder to the top level, then back into orchestration/


def test_our_book_single_chapter_between_folders(tmp_path):
    root = copy_book(REPO / "chapters", tmp_path / "ours")
    round_trip(root, "orchestration/kubernetes.md", "compute/kubernetes.md")


# --- generated trees ---------------------------------------------------------------------------------------------

FOLDERS = ["", "a", "b", "a/c", "d e"]
NAMES = ["README.md", "x.md", "y.md", "img.png", "run.py"]


def _encode(path: str, how: str) -> str:
    return path.replace(" ", "%20") if how == "percent" else path


@st.composite
def trees(draw):
    """A book of a few folders, markdown files with links of every kind and style to every kind of target."""
    files = {"README.md"}
    for folder in FOLDERS[1:]:
        names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3, unique=True))
        files |= {f"{folder}/{name}" for name in names}
    files = sorted(files)
    dirs = sorted({posixpath.dirname(f) for f in files if "/" in f} | {a for f in files for a in _ancestors(f)})
    markdown = [f for f in files if f.endswith(".md")]
    targets = [(f, False) for f in files] + [(d, True) for d in dirs] + [("", True)]
    contents = {}
    for source in markdown:
        lines = [f"# {source}", "", "## Part", ""]
        definitions = []
        for number in range(draw(st.integers(1, 6))):
            target, is_dir = draw(st.sampled_from(targets))
            kind = draw(st.sampled_from(["inline", "title", "angle", "reference", "image", "href", "src"]))
            dot = draw(st.booleans())
            absolute = draw(st.booleans()) and not dot
            trailing = is_dir and draw(st.booleans())
            fragment = "#part" if target.endswith(".md") and draw(st.booleans()) else ""
            if absolute:
                path = "/" + target
            else:
                rel = posixpath.relpath(target or ".", posixpath.dirname(source) or ".")
                path = ("./" if dot else "") + ("" if rel == "." else rel)
                if path == "":
                    path = "./" if trailing else "."
            if trailing and not path.endswith("/"):
                path += "/"
            space_style = "angle" if kind == "angle" else ("raw" if kind in ("href", "src") else "percent")
            destination = _encode(path, space_style) + fragment
            if " " in destination and kind not in ("angle", "href", "src"):
                destination = path.replace(" ", "%20") + fragment
            text = {
                "inline": f"A [link {number}]({destination}) here.",
                "title": f'A [titled {number}]({destination} "Title {number}") here.',
                "angle": f"An [angled {number}](<{destination}>) here.",
                "reference": f"A [reference {number}][r{number}] here.",
                "image": f"An ![image {number}]({destination}) here.",
                "href": f'<a href="{destination}">html {number}</a>',
                "src": f'<img src="{destination}" alt="{number}">',
            }[kind]
            if kind == "reference":
                definitions.append(f"[r{number}]: {destination} 'T{number}'")
            lines += [text, ""]
        lines += ["`[code](x.md)` and [external](https://example.com/a/x.md).", "", "```", "[fenced](a/x.md)", "```", ""]
        lines += definitions
        contents[source] = "\n".join(lines) + "\n"
    return files, contents


def _ancestors(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


@st.composite
def moves(draw, files: list[str]):
    dirs = sorted({a for f in files for a in _ancestors(f)})
    # A lone README moved out of its folder turns folder links into file links (documented); a file alone in its
    # folder would leave folder links dangling. Neither is a round trip, so neither is drawn here.
    singles = [f for f in files if not f.endswith("README.md") and sum(1 for g in files if posixpath.dirname(g) == posixpath.dirname(f)) > 1]
    src = draw(st.sampled_from(dirs + singles))
    parents = [d for d in [""] + dirs if not (d == src or d.startswith(src + "/"))]
    parent = draw(st.sampled_from(parents))
    name = draw(st.sampled_from([posixpath.basename(src), "moved" + posixpath.splitext(src)[1], "n w" + posixpath.splitext(src)[1]]))
    dst = posixpath.join(parent, "deeper", name) if draw(st.booleans()) else posixpath.join(parent, name)
    existing = set(files) | set(dirs)
    if dst in existing or dst == src or dst.startswith(src + "/") or any(a in files for a in _ancestors(dst)):
        dst = posixpath.join(parent, "fresh", name)
    return src, dst


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
def test_generated_trees_round_trip(tmp_path_factory, data):
    files, contents = data.draw(trees())
    src, dst = data.draw(moves(files))
    root = tmp_path_factory.mktemp("tree")
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(contents.get(rel, f"content of {rel}\n"), encoding="utf-8")
    (root / "book.toml").write_text('[book]\nrepository_path = ""\n', encoding="utf-8")
    (root / "chapters-md.txt").write_text("\n".join(f for f in files if f.endswith(".md")) + "\n", encoding="utf-8")
    before = snapshot(root)
    assert findings(root) == Counter(), "the generated tree should have no finding"
    plan = plan_move(root, root / src, root / dst)
    apply_move(plan)
    assert findings(root, src, dst) == Counter(), plan.diff()
    for change in plan.changes.values():
        unchanged_outside_spans(change)
        assert "`[code](x.md)`" in change.after and "[fenced](a/x.md)" in change.after
    apply_move(plan_move(root, root / dst, root / src))
    after = snapshot(root)
    assert after == before, "\n".join(f"{k}: {before.get(k)!r} != {after.get(k)!r}" for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k))


def test_a_roundabout_link_is_kept_while_it_works_and_fixed_when_it_breaks(tmp_book):
    root = tmp_book({
        "a/x.md": "# X\n\n[y](../a/y.md) and [short](y.md)\n",
        "a/y.md": "# Y\n",
        "b/z.md": "# Z\n",
    })
    assert cli("mv", "--book", str(root), str(root / "a" / "x.md"), str(root / "b" / "x.md")).exit_code == 0
    assert (root / "b/x.md").read_text() == "# X\n\n[y](../a/y.md) and [short](../a/y.md)\n"  # the first still worked
    assert cli("mv", "--book", str(root), str(root / "a" / "y.md"), str(root / "c" / "y.md")).exit_code == 0
    assert (root / "b/x.md").read_text() == "# X\n\n[y](../c/y.md) and [short](../c/y.md)\n"
    assert findings(root) == Counter()
