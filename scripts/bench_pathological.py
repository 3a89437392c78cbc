"""Growth of parse+collect, site rendering and `tools check-links` on pathological markdown, at sizes n and 4n.

    python scripts/bench_pathological.py [--only FAMILY ...] [--factor 4]

Each family is one chapter made of a repeated pattern (20,000 `www.` links, a 100,000-letter word, 10,000 identical
headings, ...). A linear implementation takes about `factor` times as long for `factor` times the input; the verdict
flags a ratio above 1.5 x factor (6 for 4x) as superlinear, unless the larger run took under 0.3 s. Times are the
best of `--repeat` runs; check-links runs as the real click command (`tools check-links --book ...`) in this
process, with a cold cache.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.book.load import load_book  # noqa: E402
from tools.core.errors import Diagnostics  # noqa: E402
from tools.render.site.write import build_site  # noqa: E402


def _table(n: int) -> str:
    row = "| " + " | ".join(f"cell {c} with some words" for c in range(8)) + " |\n"
    return "| " + " | ".join(f"h{c}" for c in range(8)) + " |\n|" + "---|" * 8 + "\n" + row * n


# family -> (size n, pattern of size n); each pattern is linear in n
FAMILIES = {
    "long line": (50_000, lambda n: "word " * n + "\n"),
    "long word": (100_000, lambda n: "x" * n + "\n"),
    "www autolinks": (5_000, lambda n: " ".join(f"www.example{i}.com" for i in range(n)) + "\n"),
    "scheme autolinks": (5_000, lambda n: " ".join(f"https://e.com/{i}" for i in range(n)) + "\n"),
    "open brackets [": (20_000, lambda n: "[" * n + "\n"),
    "link openers ](": (10_000, lambda n: "[a](" * n + "\n"),
    "nested links [[..]]": (5_000, lambda n: "[" * n + "x" + "](y)" * n + "\n"),
    "emphasis *": (20_000, lambda n: "*" * n + "a\n"),
    "emphasis *a": (20_000, lambda n: "*a " * n + "\n"),
    "emphasis _a_": (20_000, lambda n: "_a " * n + "b_ " * n + "\n"),
    "backticks": (20_000, lambda n: "`a " * n + "\n"),
    "backtick runs": (5_000, lambda n: " ".join("`" * (i % 50 + 1) for i in range(n)) + "\n"),
    "html inline <": (20_000, lambda n: "<a " * n + "\n"),
    "nested quotes >": (20_000, lambda n: ">" * n + " deep\n"),
    "nested lists - - -": (20_000, lambda n: "- " * n + "deep\n\nAfter.\n"),
    "lists in quotes > - > -": (10_000, lambda n: "> - " * n + "deep\n\nAfter.\n"),
    "identical headings": (5_000, lambda n: "# Same\n\n" * n),
    "footnotes": (5_000, lambda n: "".join(f"Text[^{i}].\n\n" for i in range(n)) + "".join(f"[^{i}]: Note {i}.\n" for i in range(n))),
    "reference definitions": (5_000, lambda n: "".join(f"[r{i}]\n\n" for i in range(n)) + "".join(f"[r{i}]: https://e.com/{i}\n" for i in range(n))),
    "table": (10_000, _table),
}


def _book(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "a.md").write_text("# Chapter\n\n" + text, encoding="utf-8")
    (folder / "chapters-md.txt").write_text("a.md\n", encoding="utf-8")
    return folder


def _best(repeat: int, run) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def _cli(args: list[str], cwd: Path) -> None:
    """The real command (click parsing and all), in this process: a fresh interpreter's start would swamp the
    differences on a loaded machine. The cache is cold every time: it would hide the work."""
    from click.testing import CliRunner

    from tools.cli import main as cli

    result = CliRunner().invoke(cli, args, env={"BOOK_CACHE_DIR": tempfile.mkdtemp(dir=cwd)})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception


def measure(root: Path, repeat: int) -> dict[str, float]:
    times = {"parse+collect": _best(repeat, lambda: load_book(root))}
    book = load_book(root)
    times["site"] = _best(repeat, lambda: build_site(book, root.parent / f"{root.name}-site", Diagnostics()))
    times["check-links"] = _best(repeat, lambda: _cli(["check-links", "--book", str(root)], root.parent))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", nargs="*", help="families to run (default: all)")
    parser.add_argument("--factor", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    limit = 1.5 * options.factor
    with tempfile.TemporaryDirectory() as temp:
        base = Path(temp)
        print(f"{'family':24} {'phase':14} {'n':>8} {'t(n) s':>8} {'t(kn) s':>8} {'ratio':>6}  verdict")
        for name, (size, make) in FAMILIES.items():
            if options.only and name not in options.only:
                continue
            small = measure(_book(base / "small", make(size)), options.repeat)
            large = measure(_book(base / "large", make(size * options.factor)), options.repeat)
            for phase in small:
                a, b = small[phase], large[phase]
                ratio = b / max(a, 0.001)
                # Under a third of a second the machine's noise (and, for the CLI, its start) swamps the ratio.
                verdict = "linear" if ratio <= limit else "too quick to tell" if b < 0.3 else "SUPERLINEAR"
                print(f"{name:24} {phase:14} {size:>8} {a:8.3f} {b:8.3f} {ratio:6.1f}  {verdict}", flush=True)


if __name__ == "__main__":
    main()
