"""Examples for the chapter "Testing numerical code" (numerics.md), as pytest tests.

Run the tests:      python -m pytest -q -p no:cacheprovider numerics_examples.py
Print the tables:   python numerics_examples.py
Rewrite the golden file after an intended change:
                    UPDATE_GOLDEN=1 python -m pytest -q -p no:cacheprovider numerics_examples.py -k golden

Everything runs on a CPU in a few seconds; nothing is downloaded.
"""
from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import pytest
import torch
from torch.utils.data.distributed import DistributedSampler

try:  # hypothesis is optional: the property-based tests are skipped without it
    from hypothesis import given, settings
    from hypothesis import strategies as st
    HAVE_HYPOTHESIS = True
except ImportError:  # pragma: no cover
    HAVE_HYPOTHESIS = False

GOLDEN = Path(__file__).with_name("numerics_golden.json")


# ------------------------------------------------------------------ tolerances
def unit_roundoff(dtype: torch.dtype) -> float:
    """u = eps / 2: the largest relative error of one rounding to nearest."""
    return torch.finfo(dtype).eps / 2


def derived_rtol(out_dtype: torch.dtype, n: int, acc_dtype: torch.dtype = torch.float32,
                 safety: float = 4.0) -> float:
    """Relative tolerance for a length-n reduction accumulated in acc_dtype and stored in out_dtype.

    Typical (not worst-case) error: sqrt(n) roundings in the accumulator plus one rounding of the
    output, times a safety factor. The error is relative to the sum of |terms|, not to the result.
    """
    return safety * (math.sqrt(n) * unit_roundoff(acc_dtype) + unit_roundoff(out_dtype))


def matmul_error_table(sizes=(64, 1024, 16384), trials: int = 8) -> list[tuple[int, float, float, float]]:
    """Largest measured error of fp32 dot products against fp64, relative to sum |x_i y_i|."""
    gen = torch.Generator().manual_seed(0)
    rows = []
    u = unit_roundoff(torch.float32)
    for n in sizes:
        x = torch.randn(trials, n, generator=gen, dtype=torch.float64)
        y = torch.randn(n, trials, generator=gen, dtype=torch.float64)
        approx = (x.float() @ y.float()).double()
        # compare against the exact product of the fp32-rounded inputs, so only accumulation is measured
        exact = x.float().double() @ y.float().double()
        scale = x.float().double().abs() @ y.float().double().abs()
        worst = ((approx - exact).abs() / scale).max().item()
        rows.append((n, worst, math.sqrt(n) * u, n * u))
    return rows


# ------------------------------------------------------- a kernel and its reference
def attention_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Plain softmax(q k^T / sqrt(d)) v, computed in float64 whatever the input dtype."""
    q, k, v = q.double(), k.double(), v.double()
    scores = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
    return torch.softmax(scores, dim=-1) @ v


def attention_chunked(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, chunk: int = 16) -> torch.Tensor:
    """The 'optimized' version: keys in chunks with an online softmax (running max and sum, fp32)."""
    out_dtype = q.dtype
    q, k, v = q.float(), k.float(), v.float()
    scale = 1.0 / math.sqrt(q.shape[-1])
    running_max = torch.full(q.shape[:-1] + (1,), -math.inf)
    running_sum = torch.zeros(q.shape[:-1] + (1,))
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],))
    for start in range(0, k.shape[-2], chunk):
        scores = q @ k[..., start:start + chunk, :].transpose(-1, -2) * scale
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        correction = torch.exp(running_max - new_max)
        weights = torch.exp(scores - new_max)
        running_sum = running_sum * correction + weights.sum(dim=-1, keepdim=True)
        acc = acc * correction + weights @ v[..., start:start + chunk, :]
        running_max = new_max
    return (acc / running_sum).to(out_dtype)


def attention_chunked_buggy(q, k, v, chunk: int = 16):
    """Same, but forgets to rescale the accumulator when the running max changes."""
    out_dtype = q.dtype
    q, k, v = q.float(), k.float(), v.float()
    scale = 1.0 / math.sqrt(q.shape[-1])
    running_max = torch.full(q.shape[:-1] + (1,), -math.inf)
    running_sum = torch.zeros(q.shape[:-1] + (1,))
    acc = torch.zeros(q.shape[:-1] + (v.shape[-1],))
    for start in range(0, k.shape[-2], chunk):
        scores = q @ k[..., start:start + chunk, :].transpose(-1, -2) * scale
        new_max = torch.maximum(running_max, scores.amax(dim=-1, keepdim=True))
        correction = torch.exp(running_max - new_max)
        weights = torch.exp(scores - new_max)
        running_sum = running_sum * correction + weights.sum(dim=-1, keepdim=True)
        acc = acc + weights @ v[..., start:start + chunk, :]  # BUG: acc is not multiplied by correction
        running_max = new_max
    return (acc / running_sum).to(out_dtype)


def qkv(batch: int, length: int, dim: int, dtype: torch.dtype, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, length, dim, generator=gen).to(dtype) for _ in range(3)]


def attention_tolerances(dtype: torch.dtype, length: int) -> dict[str, float]:
    """The output is a weighted mean of values of size about 1, so rtol also serves as atol."""
    rtol = derived_rtol(dtype, length)
    return {"rtol": rtol, "atol": rtol}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_chunked_attention_matches_fp64_reference(dtype: torch.dtype) -> None:
    q, k, v = qkv(2, 100, 32, dtype)
    expected = attention_reference(q, k, v)  # reference sees the same rounded inputs
    actual = attention_chunked(q, k, v)
    assert actual.dtype == dtype
    torch.testing.assert_close(actual.double(), expected, **attention_tolerances(dtype, 100))


def test_buggy_kernel_is_caught_even_in_bf16() -> None:
    q, k, v = qkv(2, 100, 32, torch.bfloat16)
    with pytest.raises(AssertionError, match="not close"):
        torch.testing.assert_close(attention_chunked_buggy(q, k, v).double(), attention_reference(q, k, v),
                                   **attention_tolerances(torch.bfloat16, 100))


def test_default_tolerances_follow_the_dtype() -> None:
    one = torch.ones(1)
    for dtype, step in [(torch.float32, 1e-6), (torch.bfloat16, 0.0078125), (torch.float16, 0.0009765625)]:
        torch.testing.assert_close((one + step).to(dtype), one.to(dtype))  # within the defaults
    with pytest.raises(AssertionError):
        torch.testing.assert_close(100 * (one + 1e-5), 100 * one)  # 1e-5 relative is too much for fp32
    fp8 = torch.tensor([1.0, 2.0]).to(torch.float8_e4m3fn)
    with pytest.raises(AssertionError, match="not 'equal'"):  # no default tolerance: exact
        torch.testing.assert_close(fp8, (fp8.float() + 0.125).to(torch.float8_e4m3fn))


def test_fp32_accumulation_error_is_near_sqrt_n_u() -> None:
    for n, worst, typical, bound in matmul_error_table():
        assert worst <= bound  # the proven worst case always holds
        assert worst <= 8 * typical  # and in practice the error is near the sqrt(n) estimate


# ------------------------------------------------------------------ gradients
class RMSNorm(torch.autograd.Function):
    """y = x / sqrt(mean(x^2) + eps) * w, with a hand-written backward."""

    @staticmethod
    def forward(ctx, x, w, eps=1e-6):
        inv = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
        ctx.save_for_backward(x, w, inv)
        return x * inv * w

    @staticmethod
    def backward(ctx, grad_out):
        x, w, inv = ctx.saved_tensors
        xhat = x * inv
        g = grad_out * w
        grad_x = inv * (g - xhat * (g * xhat).mean(-1, keepdim=True))
        grad_w = (grad_out * xhat).reshape(-1, x.shape[-1]).sum(0)
        return grad_x, grad_w, None


def rmsnorm_backward_wrong(ctx, grad_out):
    x, w, inv = ctx.saved_tensors
    return inv * grad_out * w, (grad_out * x * inv).reshape(-1, x.shape[-1]).sum(0), None  # ignores d(inv)/dx


def test_gradcheck_in_float64() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(8, generator=gen, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(RMSNorm.apply, (x, w))


def test_gradcheck_catches_a_wrong_backward(monkeypatch) -> None:
    monkeypatch.setattr(RMSNorm, "backward", staticmethod(rmsnorm_backward_wrong))
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(3, 8, generator=gen, dtype=torch.float64, requires_grad=True)
    w = torch.randn(8, generator=gen, dtype=torch.float64, requires_grad=True)
    assert not torch.autograd.gradcheck(RMSNorm.apply, (x, w), raise_exception=False)


def central_difference_error(dtype: torch.dtype, h: float) -> float:
    """Error of (f(x + h d) - f(x - h d)) / 2h against the exact directional derivative of RMSNorm."""
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(3, 8, generator=gen, dtype=torch.float64)
    w = torch.randn(8, generator=gen, dtype=torch.float64)
    d = torch.randn(3, 8, generator=gen, dtype=torch.float64)
    xr = x.clone().requires_grad_(True)
    (RMSNorm.apply(xr, w).sum()).backward()
    exact = (xr.grad * d).sum().item()
    xs, ws, ds = x.to(dtype), w.to(dtype), d.to(dtype)
    plus = RMSNorm.apply(xs + h * ds, ws).sum().double()
    minus = RMSNorm.apply(xs - h * ds, ws).sum().double()
    return abs(((plus - minus) / (2 * h)).item() - exact)


def test_finite_differences_need_float64() -> None:
    assert central_difference_error(torch.float64, 1e-6) < 1e-6
    best_fp32 = min(central_difference_error(torch.float32, h) for h in (1e-2, 1e-3, 1e-4, 1e-5))
    assert best_fp32 > 100 * central_difference_error(torch.float64, 1e-6)


# --------------------------------------------------------------- golden outputs
def tiny_model_output() -> torch.Tensor:
    """A two-layer MLP whose weights come from a formula, not from a random generator."""
    torch.manual_seed(0)  # unused by the model; keeps any hidden randomness fixed
    w1 = torch.sin(torch.arange(16 * 8, dtype=torch.float32)).reshape(16, 8) / 4
    w2 = torch.cos(torch.arange(4 * 16, dtype=torch.float32)).reshape(4, 16) / 4
    x = torch.linspace(-1, 1, 3 * 8).reshape(3, 8)
    return torch.nn.functional.gelu(x @ w1.T) @ w2.T


def test_golden_output() -> None:
    actual = tiny_model_output()
    if os.environ.get("UPDATE_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps({
            "torch": torch.__version__.split("+")[0], "dtype": str(actual.dtype),
            "shape": list(actual.shape), "values": [round(v, 7) for v in actual.flatten().tolist()],
        }, indent=1) + "\n")
        pytest.skip(f"rewrote {GOLDEN.name}; review the diff and commit it")
    if not GOLDEN.exists():
        pytest.fail(f"{GOLDEN.name} is missing; create it with UPDATE_GOLDEN=1")
    golden = json.loads(GOLDEN.read_text())
    expected = torch.tensor(golden["values"], dtype=torch.float32).reshape(golden["shape"])
    torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-5,
                               msg=lambda m: f"{m}\ngolden file written with torch {golden['torch']}")


# ------------------------------------------------------- sharded == unsharded
def column_parallel(x: torch.Tensor, w: torch.Tensor, world: int) -> torch.Tensor:
    """Each 'rank' holds a block of output rows of w; outputs are concatenated (an all-gather)."""
    return torch.cat([x @ shard.T for shard in w.chunk(world, dim=0)], dim=-1)


def row_parallel(x: torch.Tensor, w: torch.Tensor, world: int) -> torch.Tensor:
    """Each 'rank' holds a block of input columns; partial products are summed (an all-reduce)."""
    partials = [xs @ ws.T for xs, ws in zip(x.chunk(world, dim=-1), w.chunk(world, dim=1))]
    return torch.stack(partials).sum(0)


def test_tensor_parallel_linear_equals_unsharded() -> None:
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(4, 256, generator=gen)
    w = torch.randn(64, 256, generator=gen)
    full = x @ w.T
    scale = (x.abs() @ w.abs().T).max().item()  # size of the terms, see the chapter
    for world in (2, 4):
        torch.testing.assert_close(column_parallel(x, w, world), full, rtol=0, atol=0)  # same sums, same order
        tol = derived_rtol(torch.float32, 256)
        torch.testing.assert_close(row_parallel(x, w, world), full, rtol=tol, atol=tol * scale)


# ----------------------------------------------------- property-based (shapes)
if HAVE_HYPOTHESIS:
    @settings(max_examples=25, deadline=None, database=None)
    @given(batch=st.integers(1, 3), length=st.integers(1, 70), dim=st.sampled_from([1, 4, 16]),
           chunk=st.integers(1, 32), seed=st.integers(0, 2**16))
    def test_chunked_attention_any_shape(batch, length, dim, chunk, seed) -> None:
        q, k, v = qkv(batch, length, dim, torch.float32, seed)
        actual = attention_chunked(q, k, v, chunk=chunk)
        assert actual.shape == (batch, length, dim)
        torch.testing.assert_close(actual.double(), attention_reference(q, k, v),
                                   **attention_tolerances(torch.float32, length))

    @settings(max_examples=25, deadline=None, database=None)
    @given(world=st.integers(1, 8), blocks=st.integers(1, 6), rows=st.integers(1, 5))
    def test_row_parallel_any_world_size(world, blocks, rows) -> None:
        gen = torch.Generator().manual_seed(world * 100 + blocks)
        x = torch.randn(rows, world * blocks, generator=gen)
        w = torch.randn(3, world * blocks, generator=gen)
        tol = derived_rtol(torch.float32, world * blocks)
        torch.testing.assert_close(row_parallel(x, w, world), x @ w.T, rtol=tol,
                                   atol=tol * (x.abs() @ w.abs().T).max().item())


# ------------------------------------------------------------- data pipelines
def sampler_indices(n: int, world: int, epoch: int, drop_last: bool, set_epoch: bool = True) -> list[list[int]]:
    out = []
    for rank in range(world):
        sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=True, seed=0,
                                     drop_last=drop_last)
        if set_epoch:
            sampler.set_epoch(epoch)
        out.append(list(sampler))
    return out


def test_distributed_sampler_pads_or_drops() -> None:
    n, world = 10, 4
    padded = [i for rank in sampler_indices(n, world, 0, drop_last=False) for i in rank]
    assert len(padded) == 12 and set(padded) == set(range(n))  # 2 samples seen twice
    dropped = [i for rank in sampler_indices(n, world, 0, drop_last=True) for i in rank]
    assert len(dropped) == len(set(dropped)) == 8  # 2 samples not seen this epoch


def test_set_epoch_changes_the_order() -> None:
    assert sampler_indices(12, 2, 0, True) != sampler_indices(12, 2, 1, True)
    assert sampler_indices(12, 2, 0, True, set_epoch=False) == sampler_indices(12, 2, 1, True, set_epoch=False)


def shard(n: int, world: int, rank: int, epoch: int, seed: int = 0) -> list[int]:
    """Exactly-once sharding: ranks get a strided slice of one permutation; lengths differ by at most one."""
    order = torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()
    return order[rank::world]


if HAVE_HYPOTHESIS:
    @settings(max_examples=50, deadline=None, database=None)
    @given(n=st.integers(0, 200), world=st.integers(1, 16), epoch=st.integers(0, 5))
    def test_every_sample_exactly_once_per_epoch(n, world, epoch) -> None:
        seen = [i for rank in range(world) for i in shard(n, world, rank, epoch)]
        assert sorted(seen) == list(range(n))
        lengths = [len(shard(n, world, rank, epoch)) for rank in range(world)]
        assert max(lengths) - min(lengths) <= 1


# ------------------------------------------------------------------- script
def main() -> int:
    print(f"torch {torch.__version__}, {sys.platform}")
    print("\nmachine epsilon and unit roundoff (torch.finfo)")
    for dtype in (torch.float64, torch.float32, torch.bfloat16, torch.float16,
                  torch.float8_e4m3fn, torch.float8_e5m2):
        print(f"  {str(dtype):22} eps={torch.finfo(dtype).eps:<12.4g} u=eps/2={unit_roundoff(dtype):.4g}")
    print("\nfp32 dot products vs fp64: worst error / sum|x*y| over 8 trials")
    print(f"  {'n':>6} {'measured':>10} {'sqrt(n)*u':>10} {'n*u':>10}")
    for n, worst, typical, bound in matmul_error_table():
        print(f"  {n:>6} {worst:>10.3g} {typical:>10.3g} {bound:>10.3g}")
    print("\nchunked attention (length 100) vs fp64 reference: max abs error and derived tolerance")
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        q, k, v = qkv(2, 100, 32, dtype)
        err = (attention_chunked(q, k, v).double() - attention_reference(q, k, v)).abs().max().item()
        bug = (attention_chunked_buggy(q, k, v).double() - attention_reference(q, k, v)).abs().max().item()
        print(f"  {str(dtype):15} error={err:.3g}  tolerance={derived_rtol(dtype, 100):.3g}  buggy kernel error={bug:.3g}")
    print("\ncentral difference error for RMSNorm (directional derivative)")
    for dtype, hs in ((torch.float64, (1e-4, 1e-6, 1e-8)), (torch.float32, (1e-2, 1e-3, 1e-4))):
        print("  " + str(dtype).ljust(15) + "  ".join(f"h={h:g}: {central_difference_error(dtype, h):.2g}"
                                                      for h in hs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
