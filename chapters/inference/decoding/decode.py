#!/usr/bin/env python
"""Decoding methods and a tiny constrained decoder, in plain PyTorch on CPU.

The "model" is a bigram language model counted from a few hundred generated JSON
records over a toy vocabulary of 60-odd pieces, small enough to read, real enough
that unconstrained sampling sometimes breaks the format. The samplers (greedy,
temperature, top-k, top-p, min-p, repetition, frequency and presence penalties,
beam search) work on any 1-D tensor of logits. The constrained decoder walks a
character automaton for the shape {"name": "[a-z]{1,8}", "age": [1-9][0-9]{0,2}}
and allows, at each step, only the tokens whose characters keep it alive.

    python decode.py --method sample --top-p 0.9 --samples 5
    python decode.py --method sample --samples 5 --constrained
    python decode.py --compare 200
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
from dataclasses import dataclass, field

import torch

EOS = "<eos>"
# Pieces that cross the grammar's boundaries ('", "', '", "age": ', 'a"') are there on
# purpose: a real tokenizer has them, and the mask must walk each one character by character.
PIECES = [EOS, '{"', '"name"', 'name', '": "', '", "', '", "age": ', 'age', '": ', '"}', '}', ' ', '"', ':', ',', '{',
          'ann', 'ada', 'bo', 'b', 'li', 'ne', 'ma', 'ri', 'a"', 'o"', 'e"', '10', '42', '7}', '0}', 'x']
PIECES += [c for c in "abcdefghijklmnopqrstuvwxyz0123456789" if c not in PIECES]
NAMES = ["ada", "ann", "bob", "lina", "mari", "noor", "kim", "eli", "zoe", "ian"]
SHAPE = re.compile(r'\{"name": "[a-z]{1,8}", "age": [1-9][0-9]{0,2}\}')


def tokenize(text: str) -> list[int]:
    """Greedy longest match over PIECES (single characters cover every string of the shape)."""
    ids, i = [], 0
    while i < len(text):
        piece = max((p for p in PIECES[1:] if text.startswith(p, i)), key=len)
        ids.append(PIECES.index(piece))
        i += len(piece)
    return ids


def detokenize(ids: list[int]) -> str:
    return "".join(PIECES[i] for i in ids if i != 0)


def bigram_logits(records: int = 300, smoothing: float = 0.05, seed: int = 0) -> torch.Tensor:
    """Log-probabilities of the next piece given the previous one, counted on generated records."""
    rng = random.Random(seed)
    counts = torch.full((len(PIECES), len(PIECES)), smoothing)
    for _ in range(records):
        text = json.dumps({"name": rng.choice(NAMES), "age": rng.randint(1, 99)})
        ids = [0, *tokenize(text), 0]  # <eos> doubles as the start token, as in GPT-2
        for prev, nxt in zip(ids, ids[1:]):
            counts[prev, nxt] += 1
    return torch.log(counts / counts.sum(dim=1, keepdim=True))


# ------------------------------------------------------------------ logits processors
def apply_repetition_penalty(logits: torch.Tensor, seen: list[int], penalty: float) -> torch.Tensor:
    """CTRL's penalty: a seen token's positive logit is divided by `penalty`, a negative one multiplied."""
    out = logits.clone()
    if penalty != 1.0 and seen:
        idx = torch.tensor(sorted(set(seen)))
        vals = out[idx]
        out[idx] = torch.where(vals > 0, vals / penalty, vals * penalty)
    return out


def apply_frequency_presence(logits: torch.Tensor, seen: list[int], frequency: float, presence: float) -> torch.Tensor:
    """Subtract frequency x count and presence x (count > 0) from each seen token's logit."""
    counts = torch.bincount(torch.tensor(seen, dtype=torch.long), minlength=logits.numel()).to(logits.dtype) \
        if seen else torch.zeros_like(logits)
    return logits - frequency * counts - presence * (counts > 0).to(logits.dtype)


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep exactly the k largest logits (ties broken by torch.topk), -inf elsewhere."""
    if k <= 0 or k >= logits.numel():
        return logits
    keep = torch.topk(logits, k).indices
    out = torch.full_like(logits, float("-inf"))
    out[keep] = logits[keep]
    return out


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Keep the smallest set of most likely tokens whose probabilities add up to at least p."""
    if p >= 1.0:
        return logits
    order = torch.argsort(logits, descending=True)
    cumulative = torch.cumsum(torch.softmax(logits[order], dim=-1), dim=-1)
    # a token stays when the mass before it is still below p, so the first one always stays
    before = cumulative - torch.softmax(logits[order], dim=-1)
    out = torch.full_like(logits, float("-inf"))
    kept = order[before < p]
    out[kept] = logits[kept]
    return out


def min_p_filter(logits: torch.Tensor, min_p: float) -> torch.Tensor:
    """Keep tokens whose probability is at least min_p times the most likely token's."""
    if min_p <= 0.0:
        return logits
    probs = torch.softmax(logits, dim=-1)
    return torch.where(probs >= min_p * probs.max(), logits, torch.full_like(logits, float("-inf")))


@dataclass
class Sampler:
    """One decoding configuration; temperature 0 means greedy."""
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    frequency_penalty: float = 0.0
    presence_penalty: float = 0.0
    name: str = field(default="", compare=False)

    def distribution(self, logits: torch.Tensor, seen: list[int]) -> torch.Tensor:
        """The probabilities the next token is drawn from, after every processor in order."""
        logits = apply_repetition_penalty(logits, seen, self.repetition_penalty)
        logits = apply_frequency_presence(logits, seen, self.frequency_penalty, self.presence_penalty)
        if self.temperature == 0:
            out = torch.zeros_like(logits)
            out[torch.argmax(logits)] = 1.0
            return out
        logits = logits / self.temperature
        logits = min_p_filter(top_p_filter(top_k_filter(logits, self.top_k), self.top_p), self.min_p)
        return torch.softmax(logits, dim=-1)

    def pick(self, logits: torch.Tensor, seen: list[int], generator: torch.Generator) -> int:
        probs = self.distribution(logits, seen)
        return int(torch.multinomial(probs, 1, generator=generator))


# ------------------------------------------------------------------ constrained decoding
# The shape as a list of pieces: a literal string, or a character class with a count range.
# Each class's characters differ from whatever may follow it, so the automaton below is
# deterministic without a subset construction (a general regex needs one).
SEGMENTS: list[tuple[str, int, int]] = [
    ('{"name": "', 0, 0), ("abcdefghijklmnopqrstuvwxyz", 1, 8), ('", "age": ', 0, 0),
    ("123456789", 1, 1), ("0123456789", 0, 2), ("}", 0, 0),
]
State = tuple[int, int]  # (segment, characters consumed in it)


def is_literal(segment: int) -> bool:
    return SEGMENTS[segment][1] == SEGMENTS[segment][2] == 0


def step(state: State, char: str) -> State | None:
    """The automaton's next state after `char`, or None when the shape can no longer match."""
    seg, count = state
    while seg < len(SEGMENTS):
        chars, low, high = SEGMENTS[seg]
        if is_literal(seg):
            if chars[count] != char:
                return None
            return (seg + 1, 0) if count + 1 == len(chars) else (seg, count + 1)
        if char in chars and count < high:
            return seg, count + 1
        if count < low:
            return None
        seg, count = seg + 1, 0  # this class is satisfied: try the character on the next piece
    return None


def accepting(state: State) -> bool:
    seg, count = state
    if seg < len(SEGMENTS) and (is_literal(seg) or count < SEGMENTS[seg][1]):
        return False
    return all(not is_literal(s) and SEGMENTS[s][1] == 0 for s in range(seg + 1, len(SEGMENTS)))


class TokenIndex:
    """For each automaton state, the tokens allowed next and the state each one leads to.

    Built lazily and cached, as Outlines' index is built ahead: the per-step cost is then
    a dictionary lookup, and only a new state pays for one pass over the vocabulary.
    """

    def __init__(self) -> None:
        self.cache: dict[State, dict[int, State | None]] = {}

    def allowed(self, state: State) -> dict[int, State | None]:
        if state not in self.cache:
            moves: dict[int, State | None] = {0: None} if accepting(state) else {}
            for token, piece in enumerate(PIECES[1:], start=1):
                current: State | None = state
                for char in piece:
                    current = step(current, char)
                    if current is None:
                        break
                if current is not None:
                    moves[token] = current
            self.cache[state] = moves
        return self.cache[state]

    def mask(self, state: State, vocab: int) -> torch.Tensor:
        out = torch.full((vocab,), float("-inf"))
        out[list(self.allowed(state))] = 0.0
        return out


def generate(table: torch.Tensor, sampler: Sampler, seed: int, max_tokens: int = 40,
             index: TokenIndex | None = None) -> str:
    return detokenize(generate_ids(table, sampler, seed, max_tokens, index))


def generate_ids(table: torch.Tensor, sampler: Sampler, seed: int, max_tokens: int = 40,
                 index: TokenIndex | None = None) -> list[int]:
    """Sample one sequence; with an index, every step's logits are masked to the allowed tokens."""
    generator = torch.Generator().manual_seed(seed)
    ids: list[int] = []
    state: State | None = (0, 0)
    prev = 0
    for _ in range(max_tokens):
        logits = table[prev]
        if index is not None:
            assert state is not None
            logits = logits + index.mask(state, logits.numel())  # the mask comes before any filter
        token = sampler.pick(logits, ids, generator)
        if token == 0:
            break
        ids.append(token)
        if index is not None:
            state = index.allowed(state)[token]  # type: ignore[index]
        prev = token
    return ids


def beam_search(table: torch.Tensor, width: int, max_tokens: int = 40, index: TokenIndex | None = None) -> str:
    return detokenize(beam_search_ids(table, width, max_tokens, index))


def beam_search_ids(table: torch.Tensor, width: int, max_tokens: int = 40,
                    index: TokenIndex | None = None) -> list[int]:
    """Keep the `width` most likely unfinished sequences; return the most likely finished one.

    A sequence that ends is set aside and the beam refilled, as in Hugging Face's
    implementation; the search stops when no unfinished sequence can beat the best
    finished one (log-probabilities only go down).
    """
    beams: list[tuple[float, list[int], State | None]] = [(0.0, [], (0, 0))]
    finished: list[tuple[float, list[int]]] = []
    for _ in range(max_tokens):
        candidates = []
        for score, ids, state in beams:
            logp = torch.log_softmax(table[ids[-1] if ids else 0], dim=-1)
            if index is not None and state is not None:
                logp = torch.log_softmax(logp + index.mask(state, logp.numel()), dim=-1)
            for token in torch.topk(logp, min(2 * width, logp.numel())).indices.tolist():
                if logp[token] == float("-inf"):
                    continue
                nxt = index.allowed(state)[token] if index is not None and state is not None else None
                candidates.append((score + float(logp[token]), ids + [token], nxt))
        candidates.sort(key=lambda c: c[0], reverse=True)
        beams = []
        for score, ids, state in candidates:
            if ids[-1] == 0:
                finished.append((score, ids[:-1]))
            elif len(beams) < width:
                beams.append((score, ids, state))
        if not beams or (finished and max(finished)[0] >= beams[0][0]):
            break
    best = max(finished or [(s, i) for s, i, _ in beams], key=lambda c: c[0])
    return best[1]


def log_probability(table: torch.Tensor, ids: list[int]) -> float:
    """The model's own log-probability of a sequence and its end, before any filter or mask."""
    path = [0, *ids, 0]
    return sum(float(torch.log_softmax(table[a], dim=-1)[b]) for a, b in zip(path, path[1:]))


def valid(text: str) -> bool:
    """The text is JSON of the shape: both the regular expression and json.loads agree."""
    if not SHAPE.fullmatch(text):
        return False
    record = json.loads(text)
    return isinstance(record.get("name"), str) and isinstance(record.get("age"), int)


COMPARED = [
    Sampler(temperature=0, name="greedy"),
    Sampler(temperature=1.0, name="temperature 1.0"),
    Sampler(temperature=1.5, name="temperature 1.5"),
    Sampler(top_k=3, name="top-k 3"),
    Sampler(top_p=0.9, name="top-p 0.9"),
    Sampler(min_p=0.1, name="min-p 0.1"),
    Sampler(temperature=1.5, min_p=0.1, name="temperature 1.5, min-p 0.1"),
    Sampler(repetition_penalty=1.3, name="repetition penalty 1.3"),
]


def compare(table: torch.Tensor, samples: int, seed: int, max_tokens: int) -> None:
    index = TokenIndex()
    print(f"{samples} samples per row (seeds {seed}..{seed + samples - 1}), max {max_tokens} tokens")
    print("| decoding | valid, free | valid, constrained | distinct texts, constrained |")
    print("| --- | --- | --- | --- |")
    for sampler in COMPARED:
        free = [generate(table, sampler, seed + i, max_tokens) for i in range(samples)]
        guided = [generate(table, sampler, seed + i, max_tokens, index) for i in range(samples)]
        print(f"| {sampler.name} | {sum(map(valid, free))} | {sum(map(valid, guided))} | {len(set(guided))} |")
    print(f"automaton states indexed: {len(index.cache)}, vocabulary: {len(PIECES)} pieces")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Sample from a tiny bigram model with the common decoding methods, "
                                                 "optionally constrained to a JSON shape.")
    parser.add_argument("--method", choices=["greedy", "sample", "beam"], default="sample")
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--top-k", type=int, default=0, help="0: off")
    parser.add_argument("--top-p", type=float, default=1.0, help="1.0: off")
    parser.add_argument("--min-p", type=float, default=0.0, help="0.0: off")
    parser.add_argument("--repetition-penalty", type=float, default=1.0, help="1.0: off")
    parser.add_argument("--frequency-penalty", type=float, default=0.0)
    parser.add_argument("--presence-penalty", type=float, default=0.0)
    parser.add_argument("--beam-width", type=int, default=4)
    parser.add_argument("--constrained", action="store_true", help='only texts of the shape {"name": ..., "age": ...}')
    parser.add_argument("--samples", type=int, default=1, help="how many texts, with seeds seed, seed+1, ...")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-tokens", type=int, default=40)
    parser.add_argument("--compare", type=int, metavar="N", help="print a table of validity for N seeds per method")
    args = parser.parse_args(argv)
    if args.temperature < 0:
        parser.error(f"--temperature must be 0 or more, got {args.temperature}")
    if not 0 < args.top_p <= 1 or not 0 <= args.min_p <= 1:
        parser.error("--top-p must be in (0, 1] and --min-p in [0, 1]")
    if args.repetition_penalty <= 0 or args.top_k < 0 or args.beam_width < 1 or args.max_tokens < 1:
        parser.error("--repetition-penalty must be positive; --top-k 0 or more; --beam-width and --max-tokens 1 or more")
    if args.samples < 1 or (args.compare is not None and args.compare < 1):
        parser.error("--samples and --compare must be 1 or more")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    table = bigram_logits()
    if args.compare:
        compare(table, args.compare, args.seed, args.max_tokens)
        return 0
    index = TokenIndex() if args.constrained else None
    sampler = Sampler(temperature=0 if args.method == "greedy" else args.temperature, top_k=args.top_k,
                      top_p=args.top_p, min_p=args.min_p, repetition_penalty=args.repetition_penalty,
                      frequency_penalty=args.frequency_penalty, presence_penalty=args.presence_penalty)
    ok = 0
    for i in range(args.samples):
        if args.method == "beam":
            ids = beam_search_ids(table, args.beam_width, args.max_tokens, index)
        else:
            ids = generate_ids(table, sampler, args.seed + i, args.max_tokens, index)
        text = detokenize(ids)
        ok += valid(text)
        print(f"{'valid  ' if valid(text) else 'INVALID'} logp {log_probability(table, ids):7.2f}  {text}")
    print(f"{ok}/{args.samples} valid", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
