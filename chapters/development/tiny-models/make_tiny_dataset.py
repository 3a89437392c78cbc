#!/usr/bin/env python3
"""Write a tiny synthetic dataset as JSON lines, offline and reproducibly.

Two kinds of records, chosen with --format:

    text    {"id": 0, "text": "The busy switch drops a packet quietly.", "label": 2, "topic": "network"}
    tokens  {"id": 0, "input_ids": [17, 201, 5, ...]}

Text records are short sentences built from four small topic word lists, and
the label is the topic, so a tiny classifier can actually learn something from
them. Token records are random ids in [0, --vocab) with lengths between
--min-len and --max-len, ready for a tiny language model.

The same --seed always gives the same file, on any machine: the generator is
Python's `random.Random`, which does not depend on numpy or torch.

Examples:

    python make_tiny_dataset.py --rows 100 --out /tmp/tiny/train.jsonl
    python make_tiny_dataset.py --rows 8 --format tokens --vocab 256 --out -
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
from pathlib import Path
from typing import Iterator

__all__ = ["TOPICS", "text_records", "token_records", "write_jsonl"]

# Small hand-written vocabularies; each topic has its own nouns and verbs.
TOPICS: dict[str, dict[str, list[str]]] = {
    "compute": {
        "noun": ["GPU", "kernel", "tensor core", "matmul", "warp", "accelerator", "clock"],
        "verb": ["multiplies", "launches", "throttles", "schedules", "computes"],
        "object": ["a tile", "the batch", "half the heads", "a large matrix", "the kernel"],
    },
    "storage": {
        "noun": ["checkpoint", "disk", "file system", "object store", "shard", "cache"],
        "verb": ["writes", "reads", "flushes", "stores", "restores"],
        "object": ["the weights", "a shard", "every file", "the dataset", "an index"],
    },
    "network": {
        "noun": ["switch", "link", "NIC", "all-reduce", "ring", "packet"],
        "verb": ["drops", "forwards", "saturates", "routes", "carries"],
        "object": ["a packet", "the gradients", "every message", "the traffic", "a buffer"],
    },
    "training": {
        "noun": ["optimizer", "loss", "learning rate", "gradient", "batch", "scheduler"],
        "verb": ["updates", "diverges", "decays", "spikes", "converges"],
        "object": ["the weights", "the loss", "each step", "the momentum", "a parameter"],
    },
}
ADJECTIVES = ["busy", "idle", "slow", "fast", "new", "old", "tiny", "large", "noisy", "stable"]
ADVERBS = ["quietly", "again", "at night", "every step", "too often", "on time", "twice"]


def _sentence(rng: random.Random, words: dict[str, list[str]]) -> str:
    adj = rng.choice(ADJECTIVES)
    article = "An" if adj[0] in "aeiou" else "A" if rng.random() < 0.5 else "The"
    parts = [article, adj, rng.choice(words["noun"]), rng.choice(words["verb"]), rng.choice(words["object"])]
    if rng.random() < 0.6:
        parts.append(rng.choice(ADVERBS))
    return " ".join(parts) + "."


def text_records(rows: int, seed: int, max_sentences: int = 3) -> Iterator[dict]:
    """`rows` records with 1..max_sentences sentences about one topic each."""
    rng = random.Random(seed)
    names = list(TOPICS)
    for i in range(rows):
        label = rng.randrange(len(names))
        words = TOPICS[names[label]]
        text = " ".join(_sentence(rng, words) for _ in range(rng.randint(1, max_sentences)))
        yield {"id": i, "text": text, "label": label, "topic": names[label]}


def token_records(rows: int, seed: int, vocab: int, min_len: int, max_len: int) -> Iterator[dict]:
    """`rows` records of random token ids in [0, vocab)."""
    rng = random.Random(seed)
    for i in range(rows):
        n = rng.randint(min_len, max_len)
        yield {"id": i, "input_ids": [rng.randrange(vocab) for _ in range(n)]}


def write_jsonl(records: Iterator[dict], out: str) -> tuple[int, int]:
    """Write records to a path ('-' for stdout); return (rows, bytes written)."""
    rows = nbytes = 0
    if out == "-":
        stream, close = sys.stdout, False
    else:
        path = Path(out)
        path.parent.mkdir(parents=True, exist_ok=True)
        stream, close = open(path, "w", encoding="utf-8"), True
    try:
        for rec in records:
            line = json.dumps(rec, ensure_ascii=False) + "\n"
            stream.write(line)
            rows += 1
            nbytes += len(line.encode("utf-8"))
    finally:
        if close:
            stream.close()
        else:
            stream.flush()
    return rows, nbytes


def _int_at_least(minimum: int):
    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {value!r}") from None
        if number < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {value}")
        return number

    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate a tiny synthetic dataset as JSON lines from a seeded generator (no downloads)."
    )
    parser.add_argument("--rows", type=_int_at_least(0), default=100, help="number of records (default: 100)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    parser.add_argument("--out", required=True, help="output .jsonl file, or - for stdout")
    parser.add_argument("--format", choices=("text", "tokens"), default="text", help="record kind (default: text)")
    parser.add_argument("--max-sentences", type=_int_at_least(1), default=3, help="text: sentences per record, at most (default: 3)")
    parser.add_argument("--vocab", type=_int_at_least(1), default=256, help="tokens: vocabulary size (default: 256)")
    parser.add_argument("--min-len", type=_int_at_least(1), default=8, help="tokens: shortest record (default: 8)")
    parser.add_argument("--max-len", type=_int_at_least(1), default=32, help="tokens: longest record (default: 32)")
    args = parser.parse_args(argv)
    if args.min_len > args.max_len:
        parser.error(f"--min-len ({args.min_len}) must not exceed --max-len ({args.max_len})")
    if args.out != "-" and os.path.isdir(args.out):
        parser.error(f"--out {args.out} is a directory; give a file name such as {os.path.join(args.out, 'train.jsonl')}")

    if args.format == "text":
        records = text_records(args.rows, args.seed, args.max_sentences)
    else:
        records = token_records(args.rows, args.seed, args.vocab, args.min_len, args.max_len)
    rows, nbytes = write_jsonl(records, args.out)
    where = "stdout" if args.out == "-" else args.out
    # The summary goes to stderr so that `--out -` output stays pure JSON lines.
    print(f"wrote {rows} {args.format} records ({nbytes:,} bytes) to {where} (seed {args.seed})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
