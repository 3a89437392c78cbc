#!/usr/bin/env python
"""Compare the flight recorder dumps of all ranks and name the collective some ranks never joined.

    python fr_compare.py report fr/                   # dumps named <prefix><rank>, e.g. fr/rank_0, fr/rank_1
    python fr_compare.py demo --out fr --ranks 3      # make a hang over gloo, dump every rank, then report

Every rank's flight recorder keeps its last collectives in a ring buffer, each with a
sequence number per process group, the operation, the tensor sizes and the Python stack
that issued it. The n-th collective of a group on one rank pairs with the n-th on every
other rank, so the report lines the dumps up by sequence number and prints, per group,
the last number each rank reached, the first number that not every rank issued (or that
ranks issued with different operations or sizes), and the stacks on both sides of it.

The dumps are the pickles that PyTorch writes on a watchdog timeout with
TORCH_NCCL_DUMP_ON_TIMEOUT=1 (NCCL) or that torch._C._distributed_c10d._dump_fr_trace()
returns (any backend; a private function, checked with torch 2.13). `demo` uses the second:
gloo has no dump-on-timeout, so each rank writes its own dump when its collective fails.
Reading the dumps needs neither torch nor the job's code.
"""
from __future__ import annotations

import argparse
import os
import pickle
import re
import socket
import subprocess
import sys
import time
from collections import defaultdict
from datetime import timedelta
from pathlib import Path

INTERNAL = re.compile(r"[/\\]torch[/\\](distributed|nn[/\\]parallel|_dynamo|utils)[/\\]")


def rank_from_name(path: Path, prefix: str) -> int | None:
    name = path.name
    if prefix and not name.startswith(prefix):
        return None
    m = re.search(r"(\d+)$", name[len(prefix):])
    return int(m[1]) if m else None


def load_dumps(folder: Path, prefix: str) -> dict[int, dict]:
    dumps: dict[int, dict] = {}
    for path in sorted(folder.iterdir()):
        rank = rank_from_name(path, prefix)
        if rank is None or not path.is_file():
            continue
        try:
            data = pickle.loads(path.read_bytes())  # your own job's dumps: pickle runs code, so never load others'
        except Exception as exc:  # noqa: BLE001 - report and go on with the other ranks
            print(f"skipped {path}: not a flight recorder pickle ({type(exc).__name__})", file=sys.stderr)
            continue
        if isinstance(data, dict) and "entries" in data:
            dumps[rank] = data
    return dumps


def user_frames(entry: dict, limit: int = 4) -> list[str]:
    """The innermost frames of the issuing stack that are not PyTorch's own plumbing."""
    frames = [f for f in entry.get("frames", []) if not INTERNAL.search(f.get("filename", ""))]
    return [f"{f['name']} ({Path(f['filename']).name}:{f['line']})" for f in frames[:limit]]


def describe(entry: dict) -> str:
    sizes = entry.get("input_sizes")
    dtypes = ",".join(entry.get("input_dtypes") or [])
    return f"{entry.get('profiling_name', '?')} sizes {sizes} {dtypes}".rstrip()


def signature(entry: dict) -> tuple:
    return entry.get("profiling_name"), str(entry.get("input_sizes")), str(entry.get("input_dtypes"))


def group_members(dumps: dict[int, dict], group: str) -> set[int] | None:
    """The global ranks of a process group, from any dump's pg_config, when it names the group."""
    for data in dumps.values():
        config = data.get("pg_config", {}).get(group)
        if config and "ranks" in config:
            return {int(r) for r in re.findall(r"\d+", str(config["ranks"]))}
    return None


def analyse(dumps: dict[int, dict]) -> list[str]:
    lines = [f"{len(dumps)} dumps: ranks {sorted(dumps)}"]
    by_group: dict[str, dict[int, dict[int, dict]]] = defaultdict(lambda: defaultdict(dict))
    desc: dict[str, str] = {}
    for rank, data in dumps.items():
        for entry in data["entries"]:
            if entry.get("is_p2p"):
                continue
            name, description = (list(entry.get("process_group", ("?", "?"))) + ["?"])[:2]
            desc[name] = description
            by_group[name][rank][entry["collective_seq_id"]] = entry
    if not by_group:
        return lines + ["no collectives recorded (is the flight recorder on? TORCH_FR_BUFFER_SIZE > 0)"]
    for group in sorted(by_group):
        seqs = by_group[group]
        members = group_members(dumps, group) or set(seqs)
        lines.append(f"\nprocess group {group} ({desc[group]}), ranks {sorted(members)}")
        no_dump = sorted(members - set(dumps))
        if no_dump:
            lines.append(f"  no dump from ranks {no_dump}: they crashed, or their files are elsewhere")
        last = {r: max(seqs[r]) if seqs.get(r) else 0 for r in members if r in dumps}
        first = max(min(seqs[r]) for r in seqs if seqs[r])  # older entries may have left some ring buffers
        for r in sorted(last):
            entry = seqs.get(r, {}).get(last[r])
            lines.append(f"  rank {r}: last collective #{last[r]}" + (f" {describe(entry)}" if entry else ""))
        problem = None
        for seq in range(first, max(last.values()) + 1):
            have = {r for r in last if seq in seqs.get(r, {})}
            kinds = {signature(seqs[r][seq]) for r in have}
            if have != set(last) or len(kinds) > 1:
                problem = seq, have
                break
        if problem is None:
            lines.append(f"  all ranks issued the same collectives #{first}..#{max(last.values())}: no mismatch here")
            continue
        seq, have = problem
        missing = sorted(set(last) - have)
        sample = seqs[min(have)][seq]
        if missing:
            lines.append(f"  FIRST MISMATCH #{seq}: {describe(sample)} issued by ranks {sorted(have)}, "
                         f"never by ranks {missing}")
            lines.append(f"    ranks {sorted(have)} issued it at: " + " <- ".join(user_frames(sample)))
            for r in missing:
                prev = seqs.get(r, {}).get(last[r])
                where = " <- ".join(user_frames(prev)) if prev else "no collective recorded"
                lines.append(f"    rank {r} stopped after #{last[r]}, issued at: {where}")
            lines.append(f"  so: find out why ranks {missing} did not reach the line above after their last "
                         f"collective (a branch, an exception, a slow step); py-spy shows where they are now")
        else:
            lines.append(f"  FIRST MISMATCH #{seq}: the ranks issued different collectives:")
            for r in sorted(have):
                lines.append(f"    rank {r}: {describe(seqs[r][seq])} at " + " <- ".join(user_frames(seqs[r][seq])))
    return lines


# ---------------------------------------------------------------------------------------------- demo
def save_checkpoint(seconds: float) -> None:
    """The straggler's detour: rank --skip-rank writes a checkpoint while the others go on."""
    time.sleep(seconds)


def demo_rank(args: argparse.Namespace) -> int:
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    code = 0
    try:
        for step in range(args.steps):
            grads = torch.ones(256 * (step % 2 + 1))  # two bucket sizes, as gradient buckets would have
            dist.all_reduce(grads)
        if rank == args.skip_rank:
            save_checkpoint(args.timeout * 2)
        else:
            metric = torch.tensor([float(rank)])
            dist.all_reduce(metric)  # the others report a metric; the skipping rank never joins
    except RuntimeError as exc:
        print(f"[rank {rank}] {str(exc).splitlines()[0][:120]}", flush=True)
        code = 1
    blob = torch._C._distributed_c10d._dump_fr_trace()
    (args.out / f"{args.prefix}{rank}").write_bytes(blob)
    sys.stdout.flush()
    os._exit(code)  # after a timed-out collective the group is broken: skip its teardown, which can wait


def run_demo(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob(f"{args.prefix}*"):
        old.unlink()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = dict(os.environ, WORLD_SIZE=str(args.ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
               OMP_NUM_THREADS="1")
    cmd = [sys.executable, __file__, "_rank", "--out", str(args.out), "--prefix", args.prefix,
           "--ranks", str(args.ranks), "--steps", str(args.steps), "--skip-rank", str(args.skip_rank),
           "--timeout", str(args.timeout)]
    procs = [subprocess.Popen(cmd, env={**env, "RANK": str(r), "LOCAL_RANK": str(r)}) for r in range(args.ranks)]
    codes = [p.wait(timeout=args.timeout * 10 + 60) for p in procs]
    print(f"demo: ranks exited with {codes}; dumps in {args.out}\n", flush=True)
    print("\n".join(analyse(load_dumps(args.out, args.prefix))))
    return 0


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="fr_compare.py", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    rep = sub.add_parser("report", help="compare the dumps in a folder")
    rep.add_argument("folder", type=Path)
    rep.add_argument("--prefix", default="", help="file name prefix before the rank number (default: any)")
    for name in ("demo", "_rank"):
        demo = sub.add_parser(name, help="make a hang over gloo, dump every rank, report" if name == "demo" else None)
        demo.add_argument("--out", type=Path, default=Path("fr"), help="folder for the dumps (default: fr)")
        demo.add_argument("--prefix", default="rank_", help="dump file prefix (default: rank_)")
        demo.add_argument("--ranks", type=int, default=3, help="number of ranks, 2 to 8 (default: 3)")
        demo.add_argument("--steps", type=int, default=4, help="all-reduces every rank makes first (default: 4)")
        demo.add_argument("--skip-rank", type=int, default=1, help="the rank that misses the last one (default: 1)")
        demo.add_argument("--timeout", type=float, default=3.0, help="collective timeout in seconds (default: 3)")
    args = parser.parse_args(argv)
    if args.mode == "report" and not args.folder.is_dir():
        parser.error(f"{args.folder}: no such folder")
    if args.mode in ("demo", "_rank"):
        if not 2 <= args.ranks <= 8:
            parser.error("--ranks must be between 2 and 8")
        if not 0 <= args.skip_rank < args.ranks:
            parser.error(f"--skip-rank must be between 0 and {args.ranks - 1}")
        if args.steps < 0 or args.timeout <= 0:
            parser.error("--steps must be >= 0 and --timeout > 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.mode == "_rank":
        return demo_rank(args)
    if args.mode == "demo":
        return run_demo(args)
    dumps = load_dumps(args.folder, args.prefix)
    if not dumps:
        print(f"error: no flight recorder dump in {args.folder} (prefix {args.prefix!r})", file=sys.stderr)
        return 1
    print("\n".join(analyse(dumps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
