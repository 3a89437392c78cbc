#!/usr/bin/env python3
"""Generate a book like the upstream ML Engineering one, N times its size, for benchmarks and scale tests.

    python scripts/gen_large_book.py OUT [--scale N] [--broken K] [--seed S] [--defects PATH]
    python scripts/gen_large_book.py OUT --chapters C [--sections S]     (the older way: C chapters of S sections)

`--scale 1` is the upstream book's size: 47 chapters, about 1.19 MB of markdown, about 1,604 links; N may be fractional
(0.1 gives 5 chapters). Laid out as on GitHub: a root README, topic folders with READMEs and nested subfolders,
`images/` and `scripts/` beside the chapters, and `chapters-md.txt` (no book.toml: the tool's defaults build it). The
prose is sentences, headings, code and tables of our own chapters (scripts/gen_book_corpus.py), recombined; chapters
have 2-4 heading levels, lists, tables, fences in several languages, quotes, GitHub alerts, math, PNG and SVG images,
and links to other chapters, their headings, headings of the same chapter, folders, scripts, images and a few
external hosts. Every link resolves except the `--broken K` defects: K of each kind in `DEFECT_KINDS`, whose places
(file, line, column of the destination, as `tools check-links` reports them) `generate` returns and `--defects`
writes as JSON. A reference-style link whose label has no definition is left in on purpose: GitHub shows its text,
so it is no defect. The same seed and the same `chapters/` give the same book.
"""
from __future__ import annotations

import argparse
import json
import posixpath
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from gen_book_corpus import DISPLAY_MATH, MATH, Corpus, load_corpus, png_bytes, svg_text  # noqa: E402
from tools.markdown.slug import Slugger  # noqa: E402

UPSTREAM_CHAPTERS, UPSTREAM_BYTES, UPSTREAM_LINKS = 47, 1_190_000, 1_604
SECTIONS = 12
BYTES_PER_SECTION = UPSTREAM_BYTES / UPSTREAM_CHAPTERS / SECTIONS
LINKS_PER_BYTE = UPSTREAM_LINKS / UPSTREAM_BYTES
OVERSHOOT = 520  # the last block of a subsection runs past its byte budget by about this much on average
TOPICS = ("insights", "compute", "storage", "network", "orchestration", "training", "inference", "development",
          "debug", "resources", "testing", "hardware")
SUBFOLDERS = ("benchmarks", "tools", "recipes", "performance", "launchers", "checkpoints")
STEMS = ("accelerators", "cpu-memory", "filesystems", "collectives", "inter-node", "intra-node", "nccl-debug", "kubernetes",
         "slurm-admin", "cheatsheet", "datasets", "dtypes", "instabilities", "model-parallelism", "reproducibility",
         "batching", "decoding", "kv-cache", "prefill-decode", "quantization", "serving", "speculative-decoding",
         "tiny-models", "fault-tolerance", "hyper-parameters", "checkpoint-write-time", "workloads", "emulate-multi-node")
EXTERNAL = ("https://github.com/pytorch/pytorch/issues/{n}", "https://pytorch.org/docs/stable/distributed.html",
            "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html", "https://arxiv.org/abs/2104.{n:05d}",
            "https://huggingface.co/docs/transformers/perf_train_gpu_many", "https://slurm.schedmd.com/sbatch.html")
LINK_PHRASES = ("See [{t}]({d}) for the details.", "This is covered in [{t}]({d}).", "Compare with [{t}]({d}).",
                "More on this in [{t}]({d}).", "The [{t}]({d}) notes explain why.")
ALERTS = ("NOTE", "TIP", "IMPORTANT", "WARNING", "CAUTION")
DEFECT_KINDS = ("missing-file", "missing-anchor-other", "missing-anchor-same", "missing-image", "outside-root",
                "wrong-case-file", "wrong-case-anchor", "folder-fragment")


def chapter_paths(count: int) -> list[str]:
    """A root README, then topic folders: README, three chapters, a subfolder with its README and two chapters."""
    paths, group = ["README.md"], 0
    stems = list(STEMS)
    while len(paths) < count:
        topic = TOPICS[group % len(TOPICS)] + (f"-{group // len(TOPICS) + 1}" if group >= len(TOPICS) else "")
        sub = f"{topic}/{SUBFOLDERS[group % len(SUBFOLDERS)]}"
        names = [stems[(group * 5 + i) % len(stems)] for i in range(5)]
        paths += [f"{topic}/README.md", *(f"{topic}/{n}.md" for n in names[:3]), f"{sub}/README.md",
                  *(f"{sub}/{n}.md" for n in names[3:])]
        group += 1
    return paths[:count]


def relative(source: str, target: str) -> str:
    return posixpath.relpath(target, posixpath.dirname(source) or ".")


def asset_base(path: str) -> str:
    folder, name = posixpath.split(path)
    stem = name[:-3].lower() if name.lower() != "readme.md" else (posixpath.basename(folder) or "book")
    return posixpath.join(folder, "{kind}", stem)


class Plan:
    """The chapters' headings and ids, decided before any text is written, so links can point forwards."""

    def __init__(self, paths: list[str], sections: int, corpus: Corpus, rng: random.Random) -> None:
        self.paths = paths
        self.headings: dict[str, list[tuple[int, str, str]]] = {}
        for path in paths:
            slugger, items = Slugger(), []
            title = rng.choice(corpus.headings) if path != "README.md" else "Machine Learning Engineering"
            items.append((1, title, slugger.slug(title)))
            for _ in range(sections):
                for level in [2] + [3] * rng.randint(0, 2) + [4] * (rng.random() < 0.2):
                    text = rng.choice(corpus.headings)
                    items.append((level, text, slugger.slug(text)))
            self.headings[path] = items

    def anchors(self, path: str) -> list[tuple[str, str]]:
        return [(text, slug) for level, text, slug in self.headings[path] if level > 1 and slug]


class ChapterWriter:
    def __init__(self, plan: Plan, path: str, corpus: Corpus, rng: random.Random, section_bytes: float) -> None:
        self.plan, self.path, self.corpus, self.rng, self.section_bytes = plan, path, corpus, rng, section_bytes
        self.blocks: list[str] = []
        self.size = 0
        self.links = 0
        self.images = 0
        self.references: list[str] = []

    def add(self, block: str) -> None:
        self.blocks.append(block)
        self.size += len(block.encode()) + 2

    def other(self) -> str:
        paths = self.plan.paths
        return self.rng.choice([p for p in paths if p != self.path] or paths)

    def destination(self) -> tuple[str, str]:
        rng, roll = self.rng, self.rng.random()
        if roll < 0.35:
            target = self.other()
            text, slug = rng.choice(self.plan.anchors(target))
            return text, f"{relative(self.path, target)}#{slug}"
        if roll < 0.5:
            target = self.other()
            return self.plan.headings[target][0][1], relative(self.path, target)
        if roll < 0.7:
            return rng.choice(self.plan.anchors(self.path))[0], "#" + rng.choice(self.plan.anchors(self.path))[1]
        if roll < 0.85:
            return "the upstream documentation", rng.choice(EXTERNAL).format(n=rng.randint(1000, 99999))
        if roll < 0.92:
            target = self.other()
            name = asset_base(target).format(kind="scripts") + (".py" if len(target) % 2 else ".sh")
            return "this script", relative(self.path, name)
        if roll < 0.96:
            target = self.other()
            return "the diagram", relative(self.path, asset_base(target).format(kind="images") + "-flow.svg")
        folder = relative(self.path, posixpath.dirname(self.other()) or ".")
        return "the folder's overview", "README.md" if folder == "." else folder + "/"

    def paragraph(self, links: int) -> str:
        sentences = [self.rng.choice(self.corpus.sentences) for _ in range(self.rng.randint(2, 6))]
        for _ in range(links):
            text, dest = self.destination()
            if self.rng.random() < 0.08:
                label = f"ref-{len(self.references) + 1}"
                self.references.append(f"[{label}]: {dest}")
                sentences.insert(self.rng.randint(0, len(sentences)), f"The [{text.lower()}][{label}] says the same.")
            else:
                sentences.insert(self.rng.randint(0, len(sentences)), self.rng.choice(LINK_PHRASES).format(t=text, d=dest))
            self.links += 1
        if self.rng.random() < 0.03:
            sentences.append("Inline math such as " + self.rng.choice(MATH) + " reads well here.")
        if self.rng.random() < 0.01:
            sentences.append("A [reference with no definition][nowhere] shows as text on GitHub.")
        return " ".join(sentences)

    def other_block(self) -> str:
        rng, corpus, roll = self.rng, self.corpus, self.rng.random()
        if roll < 0.3:
            bullet = "1." if rng.random() < 0.3 else "-"
            items = [f"{bullet} {rng.choice(corpus.sentences)}" for _ in range(rng.randint(3, 6))]
            if rng.random() < 0.3:
                items.insert(2, f"{'   ' if bullet == '1.' else '  '}- {rng.choice(corpus.sentences)}")
            return "\n".join(items)
        if roll < 0.55:
            language = rng.choice(sorted(corpus.code))
            return f"```{language}\n{rng.choice(corpus.code[language])}\n```"
        if roll < 0.7:
            return "\n".join(rng.choice(corpus.tables))
        if roll < 0.8:
            rows = ["| GPU | memory (GB) | bandwidth (TB/s) | TFLOPS (bf16) |", "| --- | ---: | ---: | ---: |"]
            rows += [f"| {rng.choice(('A100', 'H100', 'H200', 'MI300X', 'B200', 'Gaudi2'))} | {rng.choice((40, 80, 96, 141, 192))} "
                     f"| {rng.randint(15, 80) / 10} | {rng.randint(300, 2500)} |" for _ in range(rng.randint(3, 6))]
            return "\n".join(rows)
        if roll < 0.88:
            return "> " + rng.choice(corpus.sentences) + "\n> " + rng.choice(corpus.sentences)
        if roll < 0.93:
            return f"> [!{rng.choice(ALERTS)}]\n> {rng.choice(corpus.sentences)}"
        if roll < 0.95:
            return "```math\n" + rng.choice(DISPLAY_MATH) + "\n```"
        return self.image()

    def image(self) -> str:
        rng = self.rng
        kind = rng.choice(("-1.png", "-flow.svg"))
        self.links += 1
        self.images += 1
        image = relative(self.path, asset_base(self.path).format(kind="images") + kind)
        return f"![{rng.choice(self.corpus.headings).lower()}]({image})"

    def write(self) -> str:
        headings = self.plan.headings[self.path]
        self.add(f"# {headings[0][1]}")
        self.add(self.paragraph(0))
        sections = [i for i, h in enumerate(headings) if h[0] == 2] + [len(headings)]
        for start, end in zip(sections, sections[1:]):
            budget = self.size + self.section_bytes
            subheads = headings[start:end]
            for index, (level, text, _) in enumerate(subheads):
                self.add(f"{'#' * level} {text}")
                if level == 2 and self.rng.random() < 0.2:
                    self.add(self.image())
                goal = budget - (len(subheads) - index - 1) * self.section_bytes / len(subheads)
                first = True
                while first or self.size < goal - OVERSHOOT:
                    first = False
                    if self.rng.random() < 0.62:
                        owed = round((self.size + 400) * LINKS_PER_BYTE * 1.025 - self.links)
                        self.add(self.paragraph(max(0, min(owed, 4))))
                    else:
                        self.add(self.other_block())
            if self.references:
                self.add("\n".join(self.references))
                self.references = []
        return "\n\n".join(self.blocks) + "\n"


def plant(rng: random.Random, plan: Plan, kind: str, k: int) -> tuple[str, str]:
    """A chapter and a paragraph holding one defect of `kind`, as a reader could have written it."""
    path = plan.paths[rng.randrange(len(plan.paths))]
    others = [p for p in plan.paths if p != path] or plan.paths
    target = rng.choice(others)
    if kind == "missing-file":
        dest = relative(path, posixpath.join(posixpath.dirname(target), f"moved-chapter-{k}.md"))
    elif kind == "missing-anchor-other":
        dest = f"{relative(path, target)}#{plan.anchors(target)[0][1]}-{k}-gone"
    elif kind == "missing-anchor-same":
        dest = f"#{plan.anchors(path)[-1][1]}-{k}-old"
    elif kind == "missing-image":
        dest = relative(path, asset_base(path).format(kind="images") + f"-lost-{k}.png")
    elif kind == "outside-root":
        dest = "../" * (path.count("/") + 1) + f"shared/notes-{k}.md"
    elif kind == "wrong-case-file":
        named = [p for p in others if not p.lower().endswith("readme.md")] or [p for p in others if "/" in p] or others
        folder, name = posixpath.split(rng.choice(named))
        if name.lower() != "readme.md":
            name = name.capitalize()
        elif folder:
            folder = folder.title()
        else:
            name = "Readme.md"
        dest = relative(path, posixpath.join(folder, name))
    elif kind == "wrong-case-anchor":
        slug = next((s for _, s in plan.anchors(target) if s[0].isalpha()), None) or "x"
        dest = f"{relative(path, target)}#{slug.capitalize()}"
    elif kind == "folder-fragment":  # GitHub drops a fragment on a folder link
        folder = posixpath.dirname(target)
        dest = (relative(path, folder) + "/" if folder else "./") + f"#{plan.anchors(target)[0][1]}"
    else:
        raise ValueError(kind)
    image = "!" if kind == "missing-image" else ""
    return path, f"This paragraph holds a defect planted for the link benchmarks ({kind} {k}): {image}[planted {k}]({dest})."


def generate(root: Path, chapters: int = 60, sections: int = SECTIONS, seed: int = 0, broken: int = 0,
             scale: float | None = None) -> dict:
    """Write the book under `root`; returns its size and the planted defects (file, line, col, kind)."""
    if scale is not None:
        chapters = max(1, round(UPSTREAM_CHAPTERS * scale))
    corpus = load_corpus()
    rng = random.Random(seed)
    paths = chapter_paths(chapters)
    plan = Plan(paths, sections, corpus, rng)
    texts: dict[str, list[str]] = {}
    links = images = 0
    for path in paths:
        writer = ChapterWriter(plan, path, corpus, rng, BYTES_PER_SECTION)
        writer.write()
        texts[path] = writer.blocks
        links, images = links + writer.links, images + writer.images
    defects = []
    for kind in DEFECT_KINDS:
        for k in range(broken):
            path, block = plant(rng, plan, kind, k)
            texts[path].insert(rng.randint(2, len(texts[path])), block)
            defects.append({"kind": kind, "file": path, "block": block})
    size = _write(root, paths, texts)
    for defect in defects:
        block = defect.pop("block")
        blocks = texts[defect["file"]]
        at = blocks.index(block)
        defect["line"] = 1 + sum(b.count("\n") + 2 for b in blocks[:at])
        defect["col"] = block.index("](") + 3
    defects.sort(key=lambda d: (d["file"], d["line"]))
    return {"chapters": len(paths), "bytes": size, "links": links + len(defects), "images": images,
            "broken": len(defects), "defects": defects}


def _write(root: Path, paths: list[str], texts: dict[str, list[str]]) -> int:
    root.mkdir(parents=True, exist_ok=True)
    size = 0
    for number, path in enumerate(paths):
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        data = ("\n\n".join(texts[path]) + "\n").encode()
        (root / path).write_bytes(data)
        size += len(data)
        images = root / asset_base(path).format(kind="images")
        images.parent.mkdir(exist_ok=True)
        images.with_name(images.name + "-1.png").write_bytes(png_bytes(16, 8, (40 + number % 200, 90, 160)))
        images.with_name(images.name + "-flow.svg").write_text(svg_text("stage", 2 + number % 4), encoding="utf-8")
        script = root / asset_base(path).format(kind="scripts")
        script.parent.mkdir(exist_ok=True)
        script.with_name(script.name + ".py").write_text("import torch\n\nprint(torch.cuda.device_count())\n", encoding="utf-8")
        script.with_name(script.name + ".sh").write_text("#!/bin/bash\nnvidia-smi topo -m\n", encoding="utf-8")
    (root / "chapters-md.txt").write_text("\n".join(paths) + "\n", encoding="utf-8")
    return size


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="folder to write the book into")
    parser.add_argument("--scale", type=float, default=None, help="size as a multiple of the upstream book (default 1)")
    parser.add_argument("--chapters", type=int, default=None, help="exactly this many chapters instead of --scale")
    parser.add_argument("--sections", type=int, default=SECTIONS, help="h2 sections per chapter (the older way)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--broken", type=int, default=0, help=f"plant K defects of each of the {len(DEFECT_KINDS)} kinds")
    parser.add_argument("--defects", type=Path, default=None, help="write the planted defects here as JSON")
    args = parser.parse_args()
    if args.scale is not None and args.chapters is not None:
        parser.error("give --scale or --chapters, not both")
    if (args.scale is not None and args.scale <= 0) or (args.chapters is not None and args.chapters < 1) or args.sections < 1 or args.broken < 0:
        parser.error("--scale must be above 0, --chapters and --sections at least 1, --broken at least 0")
    scale = 1.0 if args.scale is None and args.chapters is None else args.scale
    info = generate(args.out, args.chapters or 1, args.sections, args.seed, args.broken, scale=scale)
    if args.defects:
        args.defects.write_text(json.dumps(info["defects"], indent=1) + "\n", encoding="utf-8")
    print(f"{info['chapters']} chapters, {info['bytes'] / 1e6:.2f} MB of markdown, {info['links']} links, "
          f"{info['images']} images, {info['broken']} planted defects -> {args.out}")


if __name__ == "__main__":
    main()
