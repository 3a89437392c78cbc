"""What the benchmark scripts share: running a command as a fresh process and measuring its wall time, CPU time and
the memory of its whole process tree (workers included), and an edit that keeps a chapter's length.

Memory is sampled with psutil: RSS every 50 ms, PSS every 0.5 s from /proc/PID/smaps_rollup (a full smaps walk would
cost the sampler real CPU time on a two-core machine). RSS summed over the tree counts pages shared by forked workers
once per process, so it overstates; PSS splits shared pages between the processes that share them, so the PSS sum is
the tree's real footprint.
"""
from __future__ import annotations

import json
import os
import posixpath
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    wall: float  # seconds
    cpu: float  # user + system seconds of the process and its children
    rss_mib: float  # peak of the summed RSS of the process tree
    pss_mib: float  # peak of the summed PSS of the process tree
    largest_mib: float  # peak RSS of the largest single process
    load: float  # 1-minute load average just before the run
    output: str = ""
    idle: float = 0.0  # estimated wall time on an otherwise idle machine with `cores` cores (see `idle_estimate`)


def _pss(process) -> int:
    """The process's PSS in bytes: from smaps_rollup (one line, cheap), else psutil's walk of smaps (costly)."""
    try:
        with open(f"/proc/{process.pid}/smaps_rollup", "rb") as handle:
            for line in handle:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return getattr(process.memory_full_info(), "pss", 0)


def measure(command: list[str], cwd: Path | None, env: dict | None = None) -> Run:
    import psutil

    os.sync()  # what the previous run (ours or a peer's) wrote is on disk: no run pays for another's writeback
    load = os.getloadavg()[0]
    peaks = {"rss": 0, "pss": 0, "largest": 0}
    cpu_of: dict[int, float] = {}  # the last CPU time seen of every child process (its workers)
    done = threading.Event()
    out, err = tempfile.TemporaryFile(), tempfile.TemporaryFile()  # files, not pipes: a chatty child never blocks
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=err, env=env)

    def sample() -> None:
        try:
            root = psutil.Process(process.pid)
        except psutil.NoSuchProcess:
            return
        tick = 0
        while not done.is_set():
            full = tick % 10 == 0  # PSS (reading smaps) costs far more than RSS: every 0.5 s, RSS every 50 ms
            rss = pss = largest = 0
            try:
                members = [root] + root.children(recursive=True)
            except psutil.NoSuchProcess:
                break
            for member in members:
                try:
                    info = member.memory_info()
                    pss_of = _pss(member) if full else 0
                    if member.pid != process.pid:
                        times = member.cpu_times()
                        cpu_of[member.pid] = times.user + times.system
                except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                    continue
                rss += info.rss
                pss += pss_of
                largest = max(largest, info.rss)
            peaks["rss"], peaks["largest"] = max(peaks["rss"], rss), max(peaks["largest"], largest)
            if full:
                peaks["pss"] = max(peaks["pss"], pss)
            tick += 1
            done.wait(0.05)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    done.set()
    sampler.join()
    out.seek(0)
    err.seek(0)
    output, errors = out.read().decode(), err.read().decode(errors="replace")
    out.close()
    err.close()
    process.returncode = code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(command[:4])} ... failed ({code}):\n{errors[-3000:]}")
    mib = 1024 * 1024
    cpu = usage.ru_utime + usage.ru_stime  # on Linux this includes the workers the process waited for
    found = Run(wall, cpu, peaks["rss"] / mib, peaks["pss"] / mib, max(peaks["largest"] / mib, usage.ru_maxrss / 1024), load, output.strip())
    found.idle = idle_estimate(cpu, sorted(cpu_of.values(), reverse=True), CORES)
    return found


CORES = 2


def idle_estimate(total: float, children: list[float], cores: int) -> float:
    """The wall time the run would take alone on `cores` cores, from CPU times: the longest chain (the main process's
    own work, then its busiest worker) or the total spread evenly over the cores, whichever is longer. The `cores`
    busiest children are the PDF workers; the others (the parsers of `load_book`) run side by side before them.
    Sampling every 50 ms misses up to 50 ms of each child: a slight underestimate."""
    workers, others = children[:cores], children[cores:]
    own = total - sum(children)
    chain = own + (max(workers) if workers else 0.0) + sum(others) / max(1, cores)
    return max(chain, total / cores)


def least(runs: list[Run]) -> Run:
    return Run(min(r.wall for r in runs), min(r.cpu for r in runs), min(r.rss_mib for r in runs), min(r.pss_mib for r in runs),
               min(r.largest_mib for r in runs), min(r.load for r in runs), runs[-1].output, min(r.idle for r in runs))


def median(runs: list[Run]) -> Run:
    """Each measure's median over the rounds (the brief of issue 19: medians of alternating runs)."""
    def mid(values):
        return statistics.median(values)

    return Run(mid(r.wall for r in runs), mid(r.cpu for r in runs), mid(r.rss_mib for r in runs), mid(r.pss_mib for r in runs),
               mid(r.largest_mib for r in runs), mid(r.load for r in runs), runs[-1].output, mid(r.idle for r in runs))


def row(job: str, ours: Run, peer: str, theirs: Run, target: float | None, *, memory: bool = False, **extra) -> dict:
    """One row of the `--json` contract of scripts/bench.py: our time (or peak PSS with `memory`) against a peer's,
    their ratio and whether it is at most `target` (None: no target, only shown)."""
    ours_value, peer_value = (ours.pss_mib, theirs.pss_mib) if memory else (ours.wall, theirs.wall)
    ratio = ours_value / peer_value if peer_value else None
    found = {"job": job, "ours_s": round(ours.wall, 4), "peer": peer, "peer_s": round(theirs.wall, 4),
             "ratio": round(ratio, 4) if ratio is not None else None, "target": target,
             "met": None if target is None or ratio is None else ratio <= target,
             "ours_cpu_s": round(ours.cpu, 4), "peer_cpu_s": round(theirs.cpu, 4), "ours_idle_s": round(ours.idle, 4), "peer_idle_s": round(theirs.idle, 4),
             "ours_mib": round(ours.pss_mib, 1), "peer_mib": round(theirs.pss_mib, 1), "measure": "peak PSS" if memory else "wall time"}
    found.update(extra)
    return found


def write_rows(path: Path | None, rows: list[dict]) -> None:
    """The `--json PATH` file every sub-benchmark of scripts/bench.py writes: {"rows": [...]}, written whole."""
    if path is None:
        return
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(json.dumps({"rows": rows}, indent=1))
    os.replace(temp, path)


def swap_a_word(book: Path, rng: random.Random) -> Path:
    """Edit a chapter in the middle: one word swapped for another of the same length (its pages should stay)."""
    chapters = chapters_of(book)
    path = book / chapters[len(chapters) // 2]
    text = path.read_text()
    pairs = [("node", "rank"), ("rank", "node"), ("shard", "queue"), ("queue", "shard"), ("layer", "cache"), ("cache", "layer"),
             ("this", "that"), ("that", "this"), ("with", "from"), ("from", "with")]
    for old, new in rng.sample(pairs, len(pairs)):
        spots = [m.start() for m in re.finditer(rf"\b{old}\b", text)]
        if spots:
            at = rng.choice(spots)
            path.write_text(text[:at] + new + text[at + len(old):])
            return path
    word = re.search(r"\b[a-z]{6,}\b", text)  # none of those words: two letters of a long word swapped
    if word:
        at = word.start() + 2
        text = text[:at] + text[at + 1] + text[at] + text[at + 2:]
    path.write_text(text)
    return path


REPO = Path(__file__).resolve().parent.parent

PRINT_HTML = """
import sys
from pathlib import Path
from tools.book.load import load_book
from tools.checks.links.local import check_book
from tools.render.pdf.document import print_document
book = load_book(Path(sys.argv[1]))
Path(sys.argv[2]).write_text(print_document(book, check_book(book)), encoding="utf-8")
"""

CHAPTER_DOCUMENTS = """
import json, sys, tempfile
from pathlib import Path
from tools.book.load import load_book
from tools.checks.links.local import check_book
from tools.render.pdf.job import Job
from tools.render.pdf.parts import PrintPieces
book = load_book(Path(sys.argv[1]))
pieces = PrintPieces(book, check_book(book))
out = Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
listed = []
with tempfile.TemporaryDirectory() as temp:
    job = Job(book, pieces, Path(temp), None)
    for index, chapter in enumerate(book.chapters):
        name = "%04d.html" % index
        (out / name).write_text(job.part_html(index)[0], encoding="utf-8")
        listed.append([name, chapter.path])
(out / "chapters.json").write_text(json.dumps(listed), encoding="utf-8")
"""

PLAIN_PDF = "import sys; from weasyprint import HTML; HTML(filename=sys.argv[1], base_url=sys.argv[2] + '/').write_pdf(sys.argv[3])"


BENCH_VENV = Path(os.environ.get("BENCH_VENV") or REPO / ".cache" / "bench-venv")  # the baselines, installed for the benchmark only


def baseline_program(name: str) -> str:
    """A baseline's program: from the benchmark's virtual environment (scripts/bench.py makes it), else the PATH."""
    for candidate in (BENCH_VENV / "bin" / name, shutil.which(name)):
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    raise SystemExit(f"{name} is missing: run 'make bench' (it installs the baselines into {BENCH_VENV}; pandoc from Debian)"
                     f" or install {name} and put it on the PATH.")


def chapters_of(book: Path, list_name: str = "chapters-md.txt") -> list[str]:
    lines = (book / list_name).read_text(encoding="utf-8-sig").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#") and not line.strip().lower().startswith("part:")]


REAL_BOOK = Path(os.environ.get("BENCH_REAL_BOOK") or REPO.parent / "shared" / "corpus" / "ml-engineering")  # issue 37: the benchmark
COPY_FOLDER = "copy-{n}"  # where copy n (2, 3, ...) of a book goes in `copy_book`


def exit_on_term() -> None:
    """SIGTERM (scripts/bench.py's timeout, a reader's `kill`) ends a benchmark script as an error would: its
    `finally` blocks run and its temporary folders (books copied ten times: hundreds of megabytes) go."""
    import signal

    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))


def require_book(book: Path) -> Path:
    """`book`, absolute, or one sentence saying what is missing and how to point the benchmark elsewhere."""
    if not (book / "chapters-md.txt").is_file():
        raise SystemExit(f"{book}: no book there (no chapters-md.txt); the benchmark's real book is the upstream ML Engineering book in"
                         f" ../shared/corpus/ml-engineering beside the repository: put it there, or name another with --book or BENCH_REAL_BOOK.")
    return book.resolve()


def copy_tree(source: Path, out: Path, skip: frozenset[str] = frozenset({".git"})) -> int:
    """Every file under `source` copied to `out` (made writable whatever the source's modes: the corpus is
    read-only), symbolic links kept as links; names in `skip` left out at any depth. Returns the files copied."""
    count = 0
    for folder, dirs, files in os.walk(source):
        dirs[:] = sorted(name for name in dirs if name not in skip and not os.path.islink(os.path.join(folder, name)))
        here = Path(folder)
        target = out / here.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        links = [name for name in os.listdir(here) if os.path.islink(here / name) and name not in skip]
        for name in sorted(set(files) | set(links)):
            if name in skip:
                continue
            if os.path.islink(here / name):
                os.symlink(os.readlink(here / name), target / name)
            else:
                shutil.copyfile(here / name, target / name)
            count += 1
    return count


def copied_list(text: str, folder: str, copy: int) -> str:
    """The chapter list of copy `copy` of a book placed in `folder`: every chapter path under it, every part
    title marked with the copy's number, comments and blank lines as they are."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tools.book.parts import is_chapter_line, part_title

    lines = []
    for line in text.splitlines():
        entry = line.strip()
        title = part_title(entry)
        if title is not None:
            lines.append(f"Part: {title} (copy {copy})")
        elif is_chapter_line(entry):
            lines.append(posixpath.join(folder, entry[2:] if entry.startswith("./") else entry))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def copy_book(source: Path, out: Path, times: int = 1, *, git: bool = True) -> str:
    """`times` copies of the book at `source` in one book at `out`: the first as it is at the root, copy n (2, 3, ...)
    whole in the folder `copy-n/` (chapters, images and every other file, at the same places relative to each other,
    so every relative link of a copy resolves within it); one chapter list, the copies' lists concatenated in order
    (part titles marked with the copy's number); book.toml, when there is one, is the first copy's. Committed to a
    git repository of its own when `git`, as `generate_book` does (the site's dates come from git). Returns a label:
    the book's name, the copies, chapters, megabytes of markdown and images."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tools.book.config import load_config

    source = require_book(source)
    if times < 1:
        raise ValueError(f"copy_book: times must be at least 1, not {times}")
    list_name = load_config(source).chapters or "chapters-md.txt"
    clash = [COPY_FOLDER.format(n=n) for n in range(2, times + 1) if (source / COPY_FOLDER.format(n=n)).exists()]
    if clash:
        raise SystemExit(f"{source}: the book already has {clash[0]}/, where copy_book puts a copy")
    if out.exists():
        shutil.rmtree(out)
    copy_tree(source, out)
    original = (source / list_name).read_text(encoding="utf-8-sig")
    lists = [original if original.endswith("\n") else original + "\n"]
    for n in range(2, times + 1):
        folder = COPY_FOLDER.format(n=n)
        copy_tree(source, out / folder)
        lists.append(copied_list(original, folder, n))
    (out / list_name).write_text("\n".join(lists), encoding="utf-8")
    if git:
        commit_book(out, f"{times} copies of {source.name}")
    chapters = chapters_of(out, list_name)
    size_mb = sum((out / chapter).stat().st_size for chapter in chapters) / 1e6
    images = sum(1 for path in out.rglob("*") if path.suffix.lower() in IMAGE_SUFFIXES)
    return f"{source.name} {times}x, {len(chapters)} chapters, {size_mb:.2f} MB, {images} images"


IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp"})


def commit_book(out: Path, message: str) -> None:
    """The book at `out` committed to a repository of its own (when git is installed), as a real book is."""
    if not shutil.which("git"):
        return
    env = dict(os.environ, GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@example.com", GIT_COMMITTER_NAME="bench",
               GIT_COMMITTER_EMAIL="bench@example.com")
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "--no-gpg-sign", "-m", message]):
        subprocess.run(["git", "-C", str(out), *command], check=True, env=env, stdout=subprocess.DEVNULL)


def short_label(label: str) -> str:
    """The book as the table of BENCHMARKS.md names it: a label's name and copies ("ml-engineering 1x")."""
    return label.split(",")[0]


def generate_book(out: Path, scale: float, *, git: bool = True) -> str:
    """A book `scale` times the upstream one from scripts/gen_large_book.py (its `--scale`, or, in a checkout whose
    generator has none, 47 chapters of 8 sections per 1x), committed to a repository of its own when `git`, as a real
    book is (the site's dates come from git). Returns a label: chapters and megabytes of markdown."""
    generator = Path(__file__).resolve().parent / "gen_large_book.py"
    size = ["--scale", str(scale)] if '"--scale"' in generator.read_text() else ["--chapters", str(max(1, round(47 * scale))), "--sections", "8"]
    subprocess.run([sys.executable, str(generator), str(out), *size], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    if git:
        commit_book(out, "generated book")
    chapters = chapters_of(out)
    size_mb = sum((out / chapter).stat().st_size for chapter in chapters) / 1e6
    return f"generated {scale:g}x, {len(chapters)} chapters, {size_mb:.2f} MB"


def save_print_document(book: Path, html: Path) -> None:
    """The print document `tools build pdf` lays out, saved (untimed) for the plain WeasyPrint baseline."""
    subprocess.run([sys.executable, "-c", PRINT_HTML, str(book), str(html)], check=True, cwd=REPO)


def save_chapter_documents(book: Path, folder: Path) -> None:
    """Each chapter's own print document, as the PDF route lays it out (`tools.render.pdf.job.Job.part_html`), saved
    (untimed) into `folder` with a `chapters.json` of (file, chapter) pairs, for scripts/pdf_floor.py."""
    subprocess.run([sys.executable, "-c", CHAPTER_DOCUMENTS, str(book), str(folder)], check=True, cwd=REPO)


def plain_pdf_command(html: Path, book: Path, out: Path) -> list[str]:
    """One plain WeasyPrint render of the saved print document, images resolved against the book."""
    return [sys.executable, "-c", PLAIN_PDF, str(html), str(book), str(out)]


def pdf_pages(path: Path) -> int:
    from pypdf import PdfReader

    return len(PdfReader(str(path)).pages)


def verdict(value: float, limit: float) -> str:
    return f"{value:.2f}x ({'met' if value <= limit else 'NOT met'}: at most {limit}x)"
