"""Distributed tests that run anywhere: two CPU ranks over gloo, a free port, and deadlines so a hang fails.

    python -m pytest -q test_distributed_example.py

Each test starts its ranks with torch.multiprocessing, gives the process group a short
timeout and the whole test a deadline, and turns what the ranks return into an assertion.
"""
from __future__ import annotations

import os
import random
import socket
import traceback
from datetime import timedelta

import pytest

torch = pytest.importorskip("torch")
dist = pytest.importorskip("torch.distributed")
mp = pytest.importorskip("torch.multiprocessing")

WORLD_SIZE = 2
DEADLINE_S = 120  # for a whole test: far above its normal time, far below "forever"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _worker(rank: int, body, port: int, results, collective_timeout_s: float) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    try:
        dist.init_process_group("gloo", rank=rank, world_size=WORLD_SIZE,
                                timeout=timedelta(seconds=collective_timeout_s))
        results.put((rank, "ok", body(rank)))
    except Exception:  # the parent turns it into the test's failure
        results.put((rank, "error", traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_ranks(body, collective_timeout_s: float = 20) -> dict[int, object]:
    """Run body(rank) on WORLD_SIZE ranks; return {rank: result} or fail with the ranks' tracebacks."""
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = free_port()  # one per call: tests running side by side never share a rendezvous
    procs = [ctx.Process(target=_worker, args=(r, body, port, results, collective_timeout_s))
             for r in range(WORLD_SIZE)]
    for proc in procs:
        proc.start()
    outcome: dict[int, tuple[str, object]] = {}
    try:
        for _ in procs:
            rank, status, value = results.get(timeout=DEADLINE_S)
            outcome[rank] = (status, value)
    except Exception:
        pytest.fail(f"ranks {sorted(set(range(WORLD_SIZE)) - set(outcome))} gave no result within {DEADLINE_S} s")
    finally:
        for proc in procs:
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
    errors = {r: v for r, (s, v) in outcome.items() if s == "error"}
    if errors:
        pytest.fail("\n".join(f"rank {r} failed:\n{tb}" for r, tb in sorted(errors.items())))
    return {r: v for r, (_, v) in outcome.items()}


@pytest.fixture
def seed(request) -> int:
    """A seed from TEST_SEED, or a fresh one that a failure report prints, so a flaky run can be replayed."""
    value = int(os.environ.get("TEST_SEED", random.randrange(2**31)))
    request.node.user_properties.append(("seed", value))
    print(f"TEST_SEED={value}")
    return value


# --- the bodies run in the ranks: module-level functions, so spawn can pickle them
def sum_of_ranks(rank: int) -> float:
    tensor = torch.tensor([float(rank + 1)])
    dist.all_reduce(tensor)
    return tensor.item()


def rank_1_skips_the_collective(rank: int) -> str:
    if rank == 0:
        dist.all_reduce(torch.ones(1))  # rank 1 never joins: the group's timeout must end this
    return "returned"


def same_random_batch(rank: int, seed: int = 0) -> list[float]:
    torch.manual_seed(seed)
    batch = torch.randn(3)
    gathered = [torch.empty(3) for _ in range(WORLD_SIZE)]
    dist.all_gather(gathered, batch)
    return [float((g - batch).abs().max()) for g in gathered]


def test_all_reduce_sums_over_ranks() -> None:
    assert run_ranks(sum_of_ranks) == {0: 3.0, 1: 3.0}  # 1 + 2 on every rank


def test_a_missing_rank_fails_instead_of_hanging() -> None:
    with pytest.raises(pytest.fail.Exception) as info:
        run_ranks(rank_1_skips_the_collective, collective_timeout_s=5)
    assert "rank 0 failed" in str(info.value)


def test_seeded_ranks_draw_the_same_batch(seed: int) -> None:
    from functools import partial

    results = run_ranks(partial(same_random_batch, seed=seed))
    assert all(max(diffs) == 0.0 for diffs in results.values()), results
