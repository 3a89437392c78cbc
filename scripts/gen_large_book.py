#!/usr/bin/env python3
"""Generate a large synthetic book for benchmarks: many chapters in folders, code, tables, and cross-chapter links.

Every link it writes resolves (chapters, anchors, scripts, images), except the `--broken N` ones it plants on purpose,
so benchmarks of the checkers can compare findings. The text is generated from a seeded vocabulary: no real prose.
"""
from __future__ import annotations

import argparse
import random
from pathlib import Path

WORDS = ("gpu node rank tensor shard bandwidth latency kernel memory cache batch token layer gradient optimizer "
         "checkpoint cluster switch link throughput scheduler queue partition storage volume replica stream").split()


def sentence(rng: random.Random, n: int = 14) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def generate(root: Path, chapters: int = 60, sections: int = 12, seed: int = 0, broken: int = 0) -> dict:
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    paths = [f"part{i // 10:02d}/chapter{i:03d}.md" for i in range(chapters)]
    headings = {p: [f"Section {j} on {rng.choice(WORDS)} and {rng.choice(WORDS)}" for j in range(sections)] for p in paths}
    anchors = {p: [h.lower().replace(" ", "-") for h in hs] for p, hs in headings.items()}
    links = 0
    for index, path in enumerate(paths):
        folder = Path(path).parent
        (root / folder).mkdir(parents=True, exist_ok=True)
        (root / folder / "tool.py").write_text("print('tool')\n")
        (root / folder / "figure.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"/>\n')
        lines = [f"# Chapter {index}: {rng.choice(WORDS)} {rng.choice(WORDS)}", ""]
        for j, heading in enumerate(headings[path]):
            lines += [f"## {heading}", ""]
            for _ in range(5):
                other = rng.choice(paths)
                rel = Path(other).relative_to(folder) if Path(other).parent == folder else Path("..") / other
                target = f"{rel.as_posix()}#{rng.choice(anchors[other])}"
                lines.append(f"{sentence(rng, 40)} See [{rng.choice(WORDS)}]({target}) and {sentence(rng, 30)}")
                lines.append("")
                links += 1
            lines += [f"Run [the tool](tool.py) or read [above](#{anchors[path][0]}).", "", f"![figure {j}](figure.svg)", ""]
            links += 3
            lines += ["```python", "import torch", f"x = torch.ones({j + 1}, device='cpu')  # {rng.choice(WORDS)}", "print(x.sum())", "```", ""]
            lines += ["| metric | value | unit |", "| --- | --- | --- |"] + [f"| {rng.choice(WORDS)} | {rng.randint(1, 999)} | GB/s |" for _ in range(4)] + [""]
        (root / path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    for k in range(broken):
        path = paths[k % len(paths)]
        with (root / path).open("a", encoding="utf-8") as handle:
            handle.write(f"\nA planted [broken link](missing-{k}.md) and [bad anchor](#no-such-anchor-{k}).\n")
    (root / "chapters-md.txt").write_text("\n".join(paths) + "\n", encoding="utf-8")
    size = sum((root / p).stat().st_size for p in paths)
    return {"chapters": chapters, "bytes": size, "links": links, "broken": broken * 2}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the book into")
    parser.add_argument("--chapters", type=int, default=60)
    parser.add_argument("--sections", type=int, default=12)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--broken", type=int, default=0, help="plant N broken links and N broken anchors")
    args = parser.parse_args()
    if args.chapters < 1 or args.sections < 1:
        parser.error("--chapters and --sections must be at least 1")
    info = generate(args.out, args.chapters, args.sections, args.seed, args.broken)
    print(f"{info['chapters']} chapters, {info['bytes'] / 1e6:.2f} MB of markdown, {info['links']} links -> {args.out}")


if __name__ == "__main__":
    main()
