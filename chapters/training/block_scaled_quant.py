#!/usr/bin/env python3
"""Simulate per-tensor and block-scaled low-precision formats (FP8, MXFP8, MXFP6, MXFP4, NVFP4) on a CPU and
report the quantization error each one gives a tensor.

This is fake quantization: every value is scaled, rounded to the nearest value the element format can hold
(ties to even, saturating at the format's largest finite value), then multiplied back, all in float64 with
numpy. The formats follow their public descriptions:

- fp8-tensor, fp8-e5m2-tensor: one FP32 scale per tensor, amax / (largest element value), as in
  Transformer Engine's current-scaling recipe;
- fp8-block128: one power-of-two scale per 128 consecutive values, chosen so the block's largest value never
  exceeds 448 (Transformer Engine's Float8BlockScaling with its default power-of-two scales);
- mxfp8, mxfp8-e5m2, mxfp6, mxfp6-e3m2, mxfp4: OCP Microscaling (MX) v1.0, 32 values share one E8M0
  (power-of-two) scale 2^(floor(log2(amax)) - emax_elem); --mx-scale rceil uses 2^ceil(log2(amax / max_elem))
  instead, which never clips;
- nvfp4: E2M1 values, 16 values share one FP8 E4M3 scale, and the tensor has one FP32 scale
  amax / (448 x 6);
- bf16 (round to nearest even) and e4m3-noscale (a plain cast with no scale) as references.

    python block_scaled_quant.py                               # 256 x 1024 normal values, default formats
    python block_scaled_quant.py --dist outliers               # 0.1% of the values 64x larger
    python block_scaled_quant.py --dist row-scales             # rows 2^0 to 2^-24: beyond one FP8 scale
    python block_scaled_quant.py --dist normal --std 1e-4      # gradient-sized values: why FP8 needs a scale
    python block_scaled_quant.py --grid e2m1                   # the representable values of FP4 E2M1
    python block_scaled_quant.py --values 5,-2.5,1.2,0.1,0.02  # one block, value by value

Output is deterministic for a given --seed (numpy's PCG64 generator); nothing is timed.
"""
from __future__ import annotations

import argparse
import math
import sys
from dataclasses import dataclass

import numpy as np


# ----------------------------------------------------------------------------- element formats

@dataclass(frozen=True)
class Element:
    name: str
    ebits: int
    mbits: int
    bias: int
    special: str  # "ieee": top exponent is inf/NaN; "fn": only S.1111.111 is NaN; "none": every code is finite

    @property
    def bits(self) -> int:
        return 1 + self.ebits + self.mbits

    def grid(self) -> np.ndarray:
        """The non-negative finite values in increasing order; the index of a value is its code's low bits."""
        values = []
        for e in range(2 ** self.ebits):
            if self.special == "ieee" and e == 2 ** self.ebits - 1:
                break
            for m in range(2 ** self.mbits):
                if self.special == "fn" and e == 2 ** self.ebits - 1 and m == 2 ** self.mbits - 1:
                    break
                if e == 0:
                    values.append(m / 2 ** self.mbits * 2.0 ** (1 - self.bias))
                else:
                    values.append((1 + m / 2 ** self.mbits) * 2.0 ** (e - self.bias))
        return np.array(values, dtype=np.float64)

    @property
    def max(self) -> float:
        return float(self.grid()[-1])

    @property
    def emax(self) -> int:
        """The exponent of the largest power of two the format holds: floor(log2(max))."""
        return math.frexp(self.max)[1] - 1


ELEMENTS = {
    "e4m3": Element("E4M3", 4, 3, 7, "fn"),
    "e5m2": Element("E5M2", 5, 2, 15, "ieee"),
    "e2m3": Element("E2M3", 2, 3, 1, "none"),
    "e3m2": Element("E3M2", 3, 2, 3, "none"),
    "e2m1": Element("E2M1", 2, 1, 1, "none"),
}
_GRIDS: dict[str, np.ndarray] = {}


def grid_of(elem: Element) -> np.ndarray:
    if elem.name not in _GRIDS:
        _GRIDS[elem.name] = elem.grid()
    return _GRIDS[elem.name]


def round_to_element(x: np.ndarray, elem: Element) -> np.ndarray:
    """Round to the nearest representable value, ties to the even code, saturating at +-max (no inf, no NaN)."""
    grid = grid_of(elem)
    a = np.minimum(np.abs(x), grid[-1])
    hi = np.clip(np.searchsorted(grid, a, side="left"), 0, len(grid) - 1)
    lo = np.maximum(hi - 1, 0)
    d_lo, d_hi = a - grid[lo], grid[hi] - a
    pick_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (hi % 2 == 0))
    return np.sign(x) * np.where(pick_hi, grid[hi], grid[lo])


def floor_log2(a: np.ndarray) -> np.ndarray:
    """floor(log2(a)) for a > 0, exactly (frexp, not a floating-point logarithm)."""
    _, e = np.frexp(a)
    return (e - 1).astype(np.int64)


def ceil_log2(a: np.ndarray) -> np.ndarray:
    """ceil(log2(a)) for a > 0, exactly."""
    m, e = np.frexp(a)
    return np.where(m == 0.5, e - 1, e).astype(np.int64)


def to_bf16(x: np.ndarray) -> np.ndarray:
    """Round float32 values to bfloat16 (round to nearest, ties to even) and return them as float64."""
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32).astype(np.float64)


# ----------------------------------------------------------------------------- scaled formats

@dataclass(frozen=True)
class Format:
    name: str
    element: str | None  # key of ELEMENTS, or None for bf16
    block: int  # values per scale; 0 = one scale for the whole tensor
    scale: str  # "none", "fp32", "pow2-ceil", "e8m0", "e4m3+fp32"
    description: str

    def bits_per_value(self) -> float:
        if self.element is None:
            return 16.0
        bits = ELEMENTS[self.element].bits
        per_block = {"e8m0": 8, "e4m3+fp32": 8, "pow2-ceil": 32}.get(self.scale, 0)
        return bits + (per_block / self.block if self.block else 0.0)


FORMATS = {f.name: f for f in (
    Format("bf16", None, 0, "none", "bfloat16, round to nearest even (reference)"),
    Format("e4m3-noscale", "e4m3", 0, "none", "FP8 E4M3 cast with no scale"),
    Format("fp8-tensor", "e4m3", 0, "fp32", "FP8 E4M3, one FP32 scale per tensor (current scaling)"),
    Format("fp8-e5m2-tensor", "e5m2", 0, "fp32", "FP8 E5M2, one FP32 scale per tensor"),
    Format("fp8-block128", "e4m3", 128, "pow2-ceil", "FP8 E4M3, power-of-two FP32 scale per 1x128 block"),
    Format("mxfp8", "e4m3", 32, "e8m0", "OCP MXFP8 (E4M3 elements)"),
    Format("mxfp8-e5m2", "e5m2", 32, "e8m0", "OCP MXFP8 (E5M2 elements)"),
    Format("mxfp6", "e2m3", 32, "e8m0", "OCP MXFP6 (E2M3 elements)"),
    Format("mxfp6-e3m2", "e3m2", 32, "e8m0", "OCP MXFP6 (E3M2 elements)"),
    Format("mxfp4", "e2m1", 32, "e8m0", "OCP MXFP4 (E2M1 elements)"),
    Format("nvfp4", "e2m1", 16, "e4m3+fp32", "NVFP4: E2M1, E4M3 scale per 16, FP32 per tensor"),
)}
DEFAULT_FORMATS = ("bf16", "fp8-tensor", "fp8-block128", "mxfp8", "mxfp6", "mxfp4", "nvfp4")


@dataclass
class Result:
    dequant: np.ndarray  # the fake-quantized tensor, same shape as the input
    scales: np.ndarray  # the decode scale of every block (one value for a per-tensor scale)
    clipped: int  # values whose scaled magnitude exceeded the element format's largest value


def quantize(x: np.ndarray, fmt: Format, mx_scale: str = "floor") -> Result:
    """Fake-quantize x (float64, 2-D) to fmt, with blocks of fmt.block values along the last dimension."""
    if fmt.element is None:
        return Result(to_bf16(x), np.array([1.0]), 0)
    elem = ELEMENTS[fmt.element]
    if fmt.scale == "none":
        return Result(round_to_element(x, elem), np.array([1.0]), int(np.sum(np.abs(x) > elem.max)))
    if fmt.scale == "fp32":
        amax = float(np.max(np.abs(x)))
        scale = float(np.float32(amax / elem.max)) if amax > 0 else 1.0
        y = x / scale
        return Result(round_to_element(y, elem) * scale, np.array([scale]), int(np.sum(np.abs(y) > elem.max)))

    rows, cols = x.shape
    if cols % fmt.block:
        raise ValueError(f"the last dimension {cols} is not a multiple of the block size {fmt.block}")
    blocks = x.reshape(rows, cols // fmt.block, fmt.block)
    amax = np.max(np.abs(blocks), axis=-1, keepdims=True)
    safe = np.where(amax > 0, amax, 1.0)
    if fmt.scale == "e8m0":
        if mx_scale == "floor":  # OCP MX v1.0: X = 2^(floor(log2(amax)) - emax_elem)
            exp = floor_log2(safe) - elem.emax
        else:  # rceil: the smallest power of two with amax / X <= max_elem
            exp = ceil_log2(safe / elem.max)
        exp = np.clip(exp, -127, 127)  # the E8M0 range; 0xFF (NaN) is never produced here
        scale = np.ldexp(1.0, exp)
    elif fmt.scale == "pow2-ceil":  # multiplier 448 / amax rounded down to a power of two
        scale = np.ldexp(1.0, -floor_log2(elem.max / safe))
    elif fmt.scale == "e4m3+fp32":
        tensor_amax = float(np.max(np.abs(x)))
        glob = float(np.float32(tensor_amax / (ELEMENTS["e4m3"].max * elem.max))) if tensor_amax > 0 else 1.0
        block_scale = round_to_element((safe / elem.max) / glob, ELEMENTS["e4m3"])  # stored in E4M3
        scale = np.where(block_scale > 0, block_scale * glob, 1.0)
    else:
        raise ValueError(f"unknown scale kind {fmt.scale}")
    y = blocks / scale
    q = round_to_element(y, elem) * scale
    return Result(q.reshape(rows, cols), scale.reshape(-1), int(np.sum(np.abs(y) > elem.max)))


def errors(x: np.ndarray, q: np.ndarray) -> dict:
    diff = q - x
    signal, noise = float(np.sum(x * x)), float(np.sum(diff * diff))
    nonzero = x != 0
    row_signal, row_noise = np.sum(x * x, axis=-1), np.sum(diff * diff, axis=-1)
    ok = row_signal > 0
    return {
        "rel_rms": math.sqrt(noise / signal) if signal else 0.0,
        "row_rel_rms": float(np.mean(np.sqrt(row_noise[ok] / row_signal[ok]))) if ok.any() else 0.0,
        "sqnr_db": 10 * math.log10(signal / noise) if noise else math.inf,
        "max_abs": float(np.max(np.abs(diff))),
        "flushed": float(np.mean((q == 0) & nonzero)) if x.size else 0.0,
    }


# ----------------------------------------------------------------------------- inputs

def make_tensor(dist: str, rows: int, cols: int, std: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if dist == "normal":
        x = rng.standard_normal((rows, cols))
    elif dist == "laplace":
        x = rng.laplace(0.0, 1.0 / math.sqrt(2), (rows, cols))  # unit variance
    elif dist == "outliers":
        x = rng.standard_normal((rows, cols))
        idx = rng.choice(x.size, size=max(1, x.size // 1000), replace=False)
        x.reshape(-1)[idx] *= 64.0
    elif dist == "row-scales":  # rows spread over 25 binades, more than one FP8 scale can cover
        x = rng.standard_normal((rows, cols)) * np.ldexp(1.0, -rng.integers(0, 25, size=(rows, 1)))
    else:
        raise ValueError(dist)
    # the input is a float32 tensor, as a BF16/FP32 training step would hold it
    return (x * std).astype(np.float32).astype(np.float64)


def run_table(x: np.ndarray, names: list[str], mx_scale: str) -> list[dict]:
    rows = []
    for name in names:
        fmt = FORMATS[name]
        res = quantize(x, fmt, mx_scale)
        rows.append({"format": name, "fmt": fmt, **errors(x, res.dequant), "clipped": res.clipped / x.size})
    return rows


# ----------------------------------------------------------------------------- command line

def parse_list(text: str, choices: dict | None, what: str) -> list[str]:
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise argparse.ArgumentTypeError(f"empty {what} list")
    if choices is not None:
        bad = [t for t in items if t not in choices]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {what}: {', '.join(bad)} (choose from {', '.join(choices)})")
    return items


def positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def positive_float(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not (v > 0 and math.isfinite(v)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text}")
    return v


def float_list(text: str) -> list[float]:
    try:
        values = [float(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values or not all(math.isfinite(v) for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated finite numbers, got {text!r}")
    if len(values) > 16:
        raise argparse.ArgumentTypeError("at most 16 values (one NVFP4 block)")
    return values


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("\n", " "),
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog="formats: " + "; ".join(f"{f.name} = {f.description}" for f in FORMATS.values()))
    p.add_argument("--formats", type=lambda t: parse_list(t, FORMATS, "format"), default=list(DEFAULT_FORMATS),
                   help="comma-separated formats (default: %s)" % ",".join(DEFAULT_FORMATS))
    p.add_argument("--dist", choices=("normal", "laplace", "outliers", "row-scales"), default="normal",
                   help="distribution of the test tensor: normal, laplace (unit variance), outliers (0.1%% of the "
                        "values x64), row-scales (row i times 2^-k, k uniform in 0..24) (default: normal)")
    p.add_argument("--std", type=positive_float, default=1.0, help="standard deviation of the tensor (default: 1)")
    p.add_argument("--rows", type=positive_int, default=256, help="rows of the tensor (default: 256)")
    p.add_argument("--cols", type=positive_int, default=1024,
                   help="columns, the blocked dimension; a multiple of 128 (default: 1024)")
    p.add_argument("--seed", type=int, default=0, help="seed of numpy's generator (default: 0)")
    p.add_argument("--mx-scale", choices=("floor", "rceil"), default="floor",
                   help="MX scale rule: floor (OCP MX v1.0) or rceil (never clips) (default: floor)")
    p.add_argument("--grid", choices=sorted(ELEMENTS), help="print the non-negative values of one element format")
    p.add_argument("--values", type=float_list,
                   help="quantize these values as one block (padded with zeros) and print them value by value")
    return p


def print_elements() -> None:
    print("## element formats (derived from the bit layouts)\n")
    print("| element | sign/exp/mantissa bits | bias | largest | emax | smallest normal | smallest subnormal "
          "| values >= 0 |")
    print("|:---|:---|---:|---:|---:|---:|---:|---:|")
    for key, e in ELEMENTS.items():
        g = grid_of(e)
        print(f"| {e.name} | 1/{e.ebits}/{e.mbits} | {e.bias} | {e.max:g} | {e.emax} | {2.0 ** (1 - e.bias):g} "
              f"| {g[1]:g} | {len(g)} |")
    print()


def print_grid(key: str) -> None:
    e = ELEMENTS[key]
    g = grid_of(e)
    print(f"{e.name}: {len(g)} non-negative values (and their negatives), bias {e.bias}, largest {e.max:g}")
    print(" ".join(f"{v:g}" for v in g))


def print_values(values: list[float], names: list[str], mx_scale: str) -> None:
    width = max(FORMATS[n].block for n in names if FORMATS[n].block) if any(FORMATS[n].block for n in names) else 16
    width = max(width, 16)
    x = np.zeros((1, width))
    x[0, :len(values)] = np.array(values, dtype=np.float32).astype(np.float64)
    print(f"one block: {', '.join(f'{v:g}' for v in values)} (padded with zeros to {width} values)\n")
    header = "| format | decode scale | " + " | ".join(f"{v:g}" for v in values) + " |"
    print(header)
    print("|:---|---:|" + "---:|" * len(values))
    for name in names:
        fmt = FORMATS[name]
        res = quantize(x, fmt, mx_scale)
        scale = float(res.scales[0])
        cells = " | ".join(f"{v:.6g}" for v in res.dequant[0, :len(values)])
        print(f"| {name} | {scale:.6g} | {cells} |")
    print("\ndecode scale: what each stored element is multiplied by (NVFP4: E4M3 block scale x FP32 tensor scale)")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.grid:
        print_grid(args.grid)
        return 0
    if args.values is not None:
        print_values(args.values, args.formats, args.mx_scale)
        return 0
    blocks = [FORMATS[n].block for n in args.formats if FORMATS[n].block]
    for b in blocks:
        if args.cols % b:
            build_parser().error(f"--cols {args.cols} is not a multiple of the block size {b}")
    x = make_tensor(args.dist, args.rows, args.cols, args.std, args.seed)
    print(f"tensor: {args.rows} x {args.cols} float32 values, {args.dist} distribution, std {args.std:g}, "
          f"seed {args.seed}; blocks run along the last dimension; MX scale rule: {args.mx_scale}\n")
    print_elements()
    print("## quantization error, fake-quantized in float64\n")
    print("| format | element | values per scale | scale format | bits per value | rel. RMS error | SQNR (dB) "
          "| mean row rel. error | flushed to 0 | clipped |")
    print("|:---|:---|---:|:---|---:|---:|---:|---:|---:|---:|")
    for r in run_table(x, args.formats, args.mx_scale):
        fmt = r["fmt"]
        elem = ELEMENTS[fmt.element].name if fmt.element else "BF16"
        block = str(fmt.block) if fmt.block else "tensor" if fmt.scale != "none" else "-"
        print(f"| {r['format']} | {elem} | {block} | {fmt.scale} | {fmt.bits_per_value():g} | {r['rel_rms']:.4f} "
              f"| {r['sqnr_db']:.1f} | {r['row_rel_rms']:.4f} | {100 * r['flushed']:.2f}% | {100 * r['clipped']:.2f}% |")
    print("\nrel. RMS error = ||q - x|| / ||x|| over the whole tensor; SQNR = 20 log10(1 / rel. RMS error);\n"
          "mean row rel. error: the same ratio per row, averaged over rows (small rows count as much as large ones);\n"
          "flushed: non-zero inputs that became 0; clipped: values whose scaled magnitude exceeded the element's "
          "largest value")
    return 0


if __name__ == "__main__":
    sys.exit(main())
