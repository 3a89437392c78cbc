#!/usr/bin/env python
"""Measure the activation memory of one transformer layer and compare it with the formula.

The layer is a plain pre-LayerNorm GPT block written out op by op so every saved
tensor is visible: LayerNorm -> Q, K, V projections -> softmax(QK^T/sqrt(d)) ->
dropout -> attention x V -> output projection -> dropout -> residual ->
LayerNorm -> Linear(h, ffn) -> GeLU -> Linear(ffn, h) -> dropout -> residual.

"Activation memory" here means the tensors autograd keeps from the forward pass
for the backward pass, parameters excluded. The script measures it two ways:

* everywhere: a `torch.autograd.graph.saved_tensors_hooks` pack hook sees every
  tensor autograd saves; the script sums the bytes of the distinct storages
  behind them (a tensor saved by three ops, or saved as several views, counts once);
* on a CUDA GPU also: `torch.cuda.memory_allocated()` after the forward pass minus
  before it, minus the layer's output, and the peak from `torch.cuda.max_memory_allocated()`.

and prints next to it the analytic count of Korthikanti et al., "Reducing
Activation Recomputation in Large Transformer Models" (https://arxiv.org/abs/2205.05198):
with 2-byte activations, 1-byte dropout masks and ffn = 4h one layer keeps
s*b*h*(34 + 5*a*s/h) bytes. The script evaluates the itemised version of that
count for the dtype, ffn size and dropout you choose.

Sizes are in MiB (2**20 bytes). Example, seconds on a CPU:

    python activation_memory_per_layer.py --batch 2 --seq 128 --hidden 256 --heads 4
"""
from __future__ import annotations

import argparse
import math
import sys

DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32"}
MIB = 2**20


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1), got {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"dropout must be in [0, 1), got {value}")
    return value


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Activation memory of one transformer layer: measured (saved-tensor hooks, "
        "and CUDA allocator counters on a GPU) next to the analytic formula. Sizes in MiB (2**20 bytes).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument("--batch", "-b", type=positive_int, default=2, help="micro-batch size b")
    parser.add_argument("--seq", "-s", type=positive_int, default=128, help="sequence length s")
    parser.add_argument("--hidden", type=positive_int, default=256, help="hidden size h")
    parser.add_argument("--heads", "-a", type=positive_int, default=4, help="attention heads a")
    parser.add_argument("--ffn", type=positive_int, default=None, help="MLP intermediate size (default 4*h)")
    parser.add_argument("--dropout", type=probability, default=0.1,
                        help="dropout probability; 0 removes the dropout layers and their masks")
    parser.add_argument("--dtype", choices=sorted(DTYPES), default="bf16", help="parameter and activation dtype")
    parser.add_argument("--attention", choices=["eager", "sdpa"], default="eager",
                        help="eager: softmax(QK^T)V written out (the formula's assumption); "
                        "sdpa: torch.nn.functional.scaled_dot_product_attention (fused kernels keep no s x s tensors)")
    parser.add_argument("--device", default=None, help="cpu or cuda (default: cuda when available)")
    parser.add_argument("--breakdown", action="store_true", help="also list every distinct saved storage")
    args = parser.parse_args(argv)
    if args.hidden % args.heads:
        parser.error(f"--hidden ({args.hidden}) must be divisible by --heads ({args.heads})")
    if args.ffn is None:
        args.ffn = 4 * args.hidden
    return args


def build_layer(hidden: int, heads: int, ffn: int, dropout: float, attention: str):
    import torch
    from torch import nn
    import torch.nn.functional as F

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1 = nn.LayerNorm(hidden)
            self.q = nn.Linear(hidden, hidden)
            self.k = nn.Linear(hidden, hidden)
            self.v = nn.Linear(hidden, hidden)
            self.proj = nn.Linear(hidden, hidden)
            self.ln2 = nn.LayerNorm(hidden)
            self.fc1 = nn.Linear(hidden, ffn)
            self.fc2 = nn.Linear(ffn, hidden)

        def drop(self, t):
            return F.dropout(t, dropout, self.training) if dropout > 0 else t

        def forward(self, x):
            b, s, h = x.shape
            d = h // heads
            y = self.ln1(x)
            q = self.q(y).view(b, s, heads, d).transpose(1, 2)
            k = self.k(y).view(b, s, heads, d).transpose(1, 2)
            v = self.v(y).view(b, s, heads, d).transpose(1, 2)
            if attention == "sdpa":
                ctx = F.scaled_dot_product_attention(q, k, v, dropout_p=dropout if self.training else 0.0)
            else:
                scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(d))
                probs = self.drop(torch.softmax(scores, dim=-1))
                ctx = torch.matmul(probs, v)
            ctx = ctx.transpose(1, 2).reshape(b, s, h)
            x = x + self.drop(self.proj(ctx))
            return x + self.drop(self.fc2(F.gelu(self.fc1(self.ln2(x)))))

    return Block()


def analytic(b: int, s: int, h: int, a: int, f: int, p: int, dropout: bool, attention: str, m: int = 1):
    """Itemised bytes kept for backward, after Korthikanti et al. 2022 (arXiv:2205.05198), Section 4.1.

    p is bytes per activation element, m bytes per dropout-mask element (1 in the paper).
    """
    sbh, sbf, as2b = s * b * h, s * b * f, a * s * s * b
    rows = [
        ("LayerNorm 1 input", p * sbh),
        ("Q, K, V projections' input (LayerNorm 1 output)", p * sbh),
        ("Q and K (for QK^T)", 2 * p * sbh),
    ]
    if attention == "eager":
        rows.append(("softmax output (a x s x s per sample)", p * as2b))
        if dropout:
            rows.append(("attention dropout mask", m * as2b))
            rows.append(("attention dropout output (for x V)", p * as2b))
    rows += [
        ("V", p * sbh),
        ("output projection input", p * sbh),
    ]
    if dropout:
        rows.append(("dropout mask after the attention", m * sbh))
    rows += [
        ("LayerNorm 2 input", p * sbh),
        ("Linear(h, ffn) input", p * sbh),
        ("GeLU input", p * sbf),
        ("Linear(ffn, h) input (GeLU output)", p * sbf),
    ]
    if dropout:
        rows.append(("dropout mask after the MLP", m * sbh))
    return rows


def dropout_mask_bytes(device: str, dtype) -> int:
    """Bytes per element of the mask PyTorch's dropout keeps for backward on this device and dtype.

    CUDA's fused kernel keeps a 1-byte bool mask; the CPU path multiplies by a
    noise tensor of the input's dtype and keeps that (2 bytes in bf16).
    """
    import torch
    import torch.nn.functional as F

    t = torch.ones(64, device=device, dtype=dtype, requires_grad=True)
    sizes = []

    def pack(saved):
        if saved is not t:
            sizes.append(saved.element_size())
        return saved

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda saved: saved):
        F.dropout(t, 0.5, True)
    return max(sizes) if sizes else 1


def measure_saved(layer, x):
    """Run forward under a pack hook; return the distinct non-parameter storages autograd saved."""
    import torch

    param_ptrs = {p.untyped_storage().data_ptr() for p in layer.parameters()}
    storages: dict[int, tuple[int, str, tuple]] = {}

    def pack(t):
        storage = t.untyped_storage()
        ptr = storage.data_ptr()
        if ptr not in param_ptrs and ptr not in storages:
            storages[ptr] = (storage.nbytes(), str(t.dtype).replace("torch.", ""), tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = layer(x)
    return out, storages


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import torch
    except ImportError:
        print("error: this script needs PyTorch (pip install torch)", file=sys.stderr)
        return 2

    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device.startswith("cuda") and not torch.cuda.is_available():
        print(f"error: --device {device} was asked for but CUDA is not available", file=sys.stderr)
        return 2
    dtype = getattr(torch, DTYPES[args.dtype])
    b, s, h, a, f = args.batch, args.seq, args.hidden, args.heads, args.ffn
    torch.manual_seed(0)
    layer = build_layer(h, a, f, args.dropout, args.attention).to(device=device, dtype=dtype).train()
    x = torch.randn(b, s, h, device=device, dtype=dtype, requires_grad=True)

    # warm-up: the first pass allocates library workspaces (cuBLAS) we do not want to count
    layer(x).sum().backward()
    layer.zero_grad(set_to_none=True)
    x.grad = None

    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
    out, storages = measure_saved(layer, x)
    if cuda:
        torch.cuda.synchronize()
        after = torch.cuda.memory_allocated()
        peak = torch.cuda.max_memory_allocated()
    out_bytes = out.untyped_storage().nbytes()
    # the output is the next layer's input, not a saved activation of this one
    saved_total = sum(n for ptr, (n, _, _) in storages.items() if ptr != out.untyped_storage().data_ptr())

    p = torch.empty((), dtype=dtype).element_size()
    m = dropout_mask_bytes(device, dtype) if args.dropout > 0 else 1
    rows = analytic(b, s, h, a, f, p, args.dropout > 0, args.attention, m)
    formula_total = sum(n for _, n in rows)
    paper_total = sum(n for _, n in analytic(b, s, h, a, f, p, args.dropout > 0, args.attention, 1))

    print(f"torch {torch.__version__} on {device}; b={b} s={s} h={h} a={a} ffn={f} dtype={args.dtype} "
          f"dropout={args.dropout} attention={args.attention}; MiB = 2**20 bytes")
    print()
    print("## analytic count (Korthikanti et al. 2022, arXiv:2205.05198)")
    print()
    if args.dropout > 0:
        print(f"dropout masks counted at {m} byte(s) per element: what PyTorch's dropout keeps on {device} "
              f"in {args.dtype} (the paper assumes 1)")
        print()
    if args.attention == "sdpa":
        print("fused attention keeps no a x s x s tensors: the softmax and attention-dropout rows are gone; "
              "the kernel's own small extras (such as a per-row log-sum-exp) are not itemised")
        print()
    print("| tensor kept for backward | MiB |")
    print("|:---|---:|")
    for name, nbytes in rows:
        print(f"| {name} | {nbytes / MIB:.3f} |")
    print(f"| **total** | **{formula_total / MIB:.3f}** |")
    if p == 2 and f == 4 * h and args.dropout > 0 and args.attention == "eager":
        closed = s * b * h * (34 + 5 * a * s / h)
        print()
        print(f"closed form s*b*h*(34 + 5*a*s/h) = {s}*{b}*{h}*(34 + 5*{a}*{s}/{h}) bytes = {closed / MIB:.3f} MiB")

    if args.breakdown:
        print()
        print("## distinct storages saved by autograd (parameters excluded)")
        print()
        print("| shape | dtype | MiB |")
        print("|:---|:---|---:|")
        for ptr, (nbytes, dt, shape) in storages.items():
            if ptr == out.untyped_storage().data_ptr():
                continue
            print(f"| {list(shape)} | {dt} | {nbytes / MIB:.3f} |")

    print()
    print("## measured vs analytic")
    print()
    print("| method | MiB | vs itemised analytic |")
    print("|:---|---:|---:|")
    if paper_total != formula_total:
        print(f"| analytic, 1-byte masks (as in the paper) | {paper_total / MIB:.3f} | "
              f"{paper_total / formula_total:.3f} |")
    print(f"| analytic, itemised for this device | {formula_total / MIB:.3f} | 1.000 |")
    print(f"| saved_tensors_hooks ({len(storages)} distinct storages) | {saved_total / MIB:.3f} | "
          f"{saved_total / formula_total:.3f} |")
    if cuda:
        kept = after - before - out_bytes
        print(f"| torch.cuda.memory_allocated after - before - output | {kept / MIB:.3f} | "
              f"{kept / formula_total:.3f} |")
        print(f"| torch.cuda.max_memory_allocated during forward - before | {(peak - before) / MIB:.3f} | "
              f"{(peak - before) / formula_total:.3f} |")
    else:
        print()
        print("(no CUDA device: the allocator measurement with torch.cuda.max_memory_allocated is skipped)")
    diff = saved_total - formula_total
    print()
    print(f"difference hooks - formula: {diff / MIB:+.3f} MiB ({diff:+,d} bytes); the formula leaves out "
          "small tensors such as LayerNorm's per-token mean and 1/std")
    out.sum().backward()  # the graph is complete and usable
    return 0


if __name__ == "__main__":
    sys.exit(main())
