#!/usr/bin/env python3
"""Summarise fio's JSON output: one line or one table row per job and direction.

fio's `--output-format=json` output holds hundreds of numbers per job. This
script pulls out the ones you usually compare: the access pattern, block size,
queue depth and job count, and for each direction (read, write, trim) that did
any I/O the IOPS, the bandwidth in MB/s (1 MB = 1e6 bytes) and the mean total
latency and the 50th and 99th percentile completion latency in microseconds (µs).

    fio --name=t --filename=/mnt/scratch/t.dat --size=1g --rw=randread --bs=4k \\
        --iodepth=16 --ioengine=libaio --direct=1 --runtime=10 --time_based \\
        --output-format=json --output=randread-4k.json
    python fio-json-extract.py randread-4k.json
    python fio-json-extract.py results/json/*.json --format markdown
    python fio-json-extract.py - < out.json            # read standard input

Non-JSON notes that fio sometimes prints before the JSON object are skipped.
"""
from __future__ import annotations

import argparse
import json
import sys


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Extract IOPS, MB/s (1e6 bytes) and latency (µs) from fio --output-format=json files.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("files", nargs="+", help="fio JSON output files ('-' reads standard input)")
    parser.add_argument("--format", choices=["line", "markdown", "csv"], default="line",
                        help="one sentence per job, a markdown table, or CSV")
    return parser.parse_args(argv)


def load(path: str) -> dict:
    try:
        if path == "-":
            text = sys.stdin.read()
        else:
            with open(path, encoding="utf-8", errors="replace") as fh:
                text = fh.read()
    except OSError as exc:
        raise SystemExit(f"error: cannot read {path}: {exc.strerror}") from None
    start = text.find("{")
    if start < 0:
        raise SystemExit(f"error: {path} holds no JSON object; was fio run with --output-format=json?")
    try:
        data = json.loads(text[start:])
    except json.JSONDecodeError as exc:
        raise SystemExit(f"error: {path} is not valid JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, dict) or not data.get("jobs"):
        raise SystemExit(f"error: {path} has no 'jobs' list; is it fio's JSON output?")
    return data


def percentile(side: dict, wanted: float):
    pct = side.get("clat_ns", {}).get("percentile", {})
    for key, value in pct.items():
        if abs(float(key) - wanted) < 1e-9:
            return value / 1e3
    return None


def rows_of(data: dict, source: str) -> list[dict]:
    global_opts = data.get("global options", {})
    rows = []
    for job in data["jobs"]:
        opts = {**global_opts, **job.get("job options", {})}
        for direction in ("read", "write", "trim"):
            side = job.get(direction)
            if not side or not side.get("io_bytes"):
                continue
            rows.append({
                "source": source,
                "job": job.get("jobname", "?"),
                "rw": opts.get("rw", opts.get("readwrite", "read")),
                "direction": direction,
                "bs": opts.get("bs", opts.get("blocksize", "4k")),
                "iodepth": opts.get("iodepth", "1"),
                "numjobs": opts.get("numjobs", "1"),
                "iops": side["iops"],
                "mb_s": side["bw_bytes"] / 1e6,
                "lat_us": side.get("lat_ns", {}).get("mean", float("nan")) / 1e3,
                "p50_us": percentile(side, 50.0),
                "p99_us": percentile(side, 99.0),
                "error": job.get("error", 0),
            })
    return rows


def fmt(value, digits=1) -> str:
    return "n/a" if value is None else f"{value:,.{digits}f}"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows = []
    version = None
    for path in args.files:
        data = load(path)
        version = version or data.get("fio version")
        rows += rows_of(data, path)
    if not rows:
        print("error: no job in the input did any I/O", file=sys.stderr)
        return 1

    if args.format == "csv":
        print("source,job,rw,direction,bs,iodepth,numjobs,iops,MB_per_s,mean_lat_us,p50_clat_us,p99_clat_us")
        for r in rows:
            print(",".join(str(x) for x in (
                r["source"], r["job"], r["rw"], r["direction"], r["bs"], r["iodepth"], r["numjobs"],
                f"{r['iops']:.1f}", f"{r['mb_s']:.3f}", f"{r['lat_us']:.2f}",
                "" if r["p50_us"] is None else f"{r['p50_us']:.2f}",
                "" if r["p99_us"] is None else f"{r['p99_us']:.2f}")))
    elif args.format == "markdown":
        print(f"{version or 'fio'}; MB/s with 1 MB = 1e6 bytes; latencies in µs (mean = total latency, "
              "p50/p99 = completion latency percentiles)")
        print()
        print("| job | rw | dir | bs | iodepth | numjobs | IOPS | MB/s | mean lat (µs) | p50 clat (µs) | p99 clat (µs) |")
        print("|:---|:---|:---|---:|---:|---:|---:|---:|---:|---:|---:|")
        for r in rows:
            print(f"| {r['job']} | {r['rw']} | {r['direction']} | {r['bs']} | {r['iodepth']} | {r['numjobs']} | "
                  f"{r['iops']:,.0f} | {r['mb_s']:,.1f} | {fmt(r['lat_us'])} | {fmt(r['p50_us'])} | "
                  f"{fmt(r['p99_us'])} |")
    else:
        for r in rows:
            err = f" (fio reported error {r['error']})" if r["error"] else ""
            print(f"{r['job']}: {r['rw']} {r['direction']} bs={r['bs']} iodepth={r['iodepth']} "
                  f"numjobs={r['numjobs']}: {r['iops']:,.0f} IOPS, {r['mb_s']:,.1f} MB/s, "
                  f"lat mean {fmt(r['lat_us'])} µs, clat p50 {fmt(r['p50_us'])} µs, "
                  f"p99 {fmt(r['p99_us'])} µs{err}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
