"""The build cache loads only entries this user's tool signed: a pickle planted in a repository's `.cache/build`
(where a build started from that repository looks first) never runs, and a planted FIFO never blocks a build."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

from conftest import REPO, write_book
from tools.core.cache import Cache, key_of


class _Planted:
    """Unpickling this writes a marker file: proof that the tool ran code from the cache."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.write_text, (self.marker, "pwned"))


def _chapter_key(root: Path, rel: str, line: int) -> str:
    return key_of("chapter", rel, line, (root / rel).read_bytes())


def _build(root: Path, out: Path, cache_dir: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, BOOK_CACHE_DIR=str(cache_dir), PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "tools", "build", "html", "--book", str(root), "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=120, stdin=subprocess.DEVNULL)


def test_a_planted_pickle_is_never_loaded(tmp_path):
    root = write_book(tmp_path / "book", {"a.md": "# A\n\nThe real text.\n", "b.md": "# B\n"})
    cache_dir = tmp_path / "repo-cache"
    marker = tmp_path / "marker.txt"
    cache = Cache(cache_dir)
    path = cache._path("chapter", _chapter_key(root, "a.md", 1))
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps(_Planted(marker)))
    result = _build(root, tmp_path / "site", cache_dir)
    assert result.returncode == 0, result.stderr
    assert not marker.exists(), "a pickle planted in the cache folder was loaded"
    assert "The real text." in (tmp_path / "site" / "a.html").read_text()


def test_signed_entries_are_used_and_tampered_ones_are_misses(tmp_path):
    cache = Cache(tmp_path / "c")
    cache.put("chapter", "k" * 64, {"value": 1})
    assert cache.get("chapter", "k" * 64) == {"value": 1}
    path = cache._path("chapter", "k" * 64)
    data = bytearray(path.read_bytes())
    data[-2] ^= 1
    path.write_bytes(bytes(data))
    assert cache.get("chapter", "k" * 64) is None
    cache.put("chapter", "j" * 64, {"value": 2})  # an entry copied under another key does not verify either
    os.replace(cache._path("chapter", "j" * 64), path)
    assert cache.get("chapter", "k" * 64) is None


def test_a_fifo_in_the_cache_is_a_miss_not_a_hang(tmp_path):
    root = write_book(tmp_path / "book", {"a.md": "# A\n\nText.\n"})
    cache_dir = tmp_path / "repo-cache"
    path = Cache(cache_dir)._path("chapter", _chapter_key(root, "a.md", 1))
    path.parent.mkdir(parents=True)
    os.mkfifo(path)
    result = _build(root, tmp_path / "site", cache_dir)
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_held_puts_reach_the_disk_only_when_flushed(tmp_path):
    """A worker holds its entries until its reply is sent (`Cache.hold`); `flush` writes them, then puts are direct."""
    cache = Cache(tmp_path)
    cache.hold()
    cache.put("chapter", "k1", {"model": 1})
    assert cache.get("chapter", "k1") is None and not (tmp_path / "chapter").exists()
    cache.flush()
    assert cache.get("chapter", "k1") == {"model": 1}
    cache.put("chapter", "k2", [2])
    assert cache.get("chapter", "k2") == [2]
    off = Cache(tmp_path / "off", enabled=False)
    off.hold()
    off.put("chapter", "k", 1)
    off.flush()
    assert not (tmp_path / "off").exists()
