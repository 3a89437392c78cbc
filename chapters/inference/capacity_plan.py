#!/usr/bin/env python
"""Estimate how many accelerators an LLM serving deployment needs, and what limits it.

The model is a first-order planning model, not a simulator. For each tensor-parallel
degree t in --tp (each replica is t accelerators) it computes

* weights per accelerator: parameters x --weight-bytes / t (the parameter count comes
  from the dense decoder shape you give, or from --params);
* KV cache per token per accelerator: 2 x layers x kv_heads x head_dim x --kv-bytes,
  divided by min(t, kv_heads) (heads are not split further, they are replicated);
* cache budget per accelerator: --memory-gb x --memory-utilization - weights - --reserve-gb,
  and from it the concurrent sequences a replica can hold, each holding its whole
  context (prompt + output, mean lengths);
* decode step time at batch B, a roofline: the larger of the bytes read
  (weights + B x mean context x cache per token) over the bandwidth and the FLOPs
  (2 x params x B) over the compute, each scaled by its efficiency;
* prefill time of the mean prompt: (2 x params x P + 2 x layers x P^2 x heads x head_dim)
  FLOPs over the replica's compute (the second term is causal attention);
* a fluid model of one replica that is either decoding or prefilling: at batch B
  it completes B / (O x step(B) + B x prefill) requests per second, and each
  sequence sees a time per output token of step(B) + B x prefill / O;
* the largest B that both fits the cache and meets --tpot-ms, the request rate it
  carries, then --max-utilization of that as headroom;
* a time-to-first-token check that treats prefill as an M/M/1 queue: the wait at
  percentile p is ln(rho / (1 - p)) / (mu - lambda) when positive, plus the prefill
  of the --prompt-p-tokens prompt, and must stay under --ttft-ms;
* replicas = ceil(peak rate / planned rate per replica) + --spare-replicas, and
  accelerators = replicas x t.

It prints a row per degree and the cheapest one, with the factor that limits it.
Tensor-parallel communication, attention FLOPs in decode, scheduler gaps and
framework overheads beyond --reserve-gb are ignored, so treat the answer as a
lower bound to check with a benchmark. Everything is arithmetic on the numbers
you give; the standard library is enough and nothing is read from the network.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass


@dataclass
class Model:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    tied_embeddings: bool = False
    params: float = 0.0  # 0 means: count from the shape

    def param_count(self) -> float:
        if self.params:
            return self.params
        q_width = self.heads * self.head_dim
        kv_width = self.kv_heads * self.head_dim
        per_layer = (2 * self.hidden * q_width        # Q and O projections
                     + 2 * self.hidden * kv_width     # K and V projections
                     + 3 * self.hidden * self.intermediate  # gate, up, down
                     + 2 * self.hidden)                # two RMSNorm weights
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return float(self.layers * per_layer + embeddings + self.hidden)

    def kv_bytes_per_token(self, kv_bytes: float) -> float:
        return 2 * self.layers * self.kv_heads * self.head_dim * kv_bytes


@dataclass
class Accelerator:
    memory_gb: float
    bandwidth_tbs: float
    tflops: float
    memory_utilization: float = 0.9
    reserve_gb: float = 0.0
    bandwidth_efficiency: float = 1.0
    compute_efficiency: float = 1.0


@dataclass
class Traffic:
    rate: float                # mean requests per second
    prompt_tokens: float       # mean prompt length
    output_tokens: float       # mean output length
    prompt_p_tokens: float = 0.0  # prompt length at the TTFT percentile (0: the mean)
    peak_to_mean: float = 1.0


@dataclass
class Slo:
    ttft_ms: float
    tpot_ms: float
    percentile: float = 0.99


@dataclass
class Plan:
    tp: int
    fits: bool
    weights_gb_per_gpu: float
    kv_kib_per_token_per_gpu: float
    cache_tokens_per_replica: float
    max_seqs_memory: int
    max_seqs_tpot: int
    batch: int
    step_ms: float
    step_bound: str
    prefill_ms: float
    capacity_rps: float
    ttft_limit_rps: float
    planned_rps: float
    replicas: int
    gpus: int
    limit: str
    concurrency: float
    tpot_at_plan_ms: float


def prefill_seconds(model: Model, acc: Accelerator, tp: int, prompt: float) -> float:
    flops = 2 * model.param_count() * prompt + 2 * model.layers * prompt ** 2 * model.heads * model.head_dim
    return flops / (tp * acc.tflops * 1e12 * acc.compute_efficiency)


def mm1_wait_quantile(lam: float, service: float, p: float) -> float:
    """Waiting time (before service) at percentile p of an M/M/1 queue; inf when unstable."""
    mu = 1.0 / service
    if lam >= mu:
        return math.inf
    rho = lam / mu
    if rho <= 1 - p:
        return 0.0
    return math.log(rho / (1 - p)) / (mu - lam)


def plan_for_tp(model: Model, acc: Accelerator, traffic: Traffic, slo: Slo, tp: int,
                spare_replicas: int, max_utilization: float, kv_bytes: float, weight_bytes: float) -> Plan:
    n = model.param_count()
    weights = n * weight_bytes / tp
    kv_token = model.kv_bytes_per_token(kv_bytes) / min(tp, model.kv_heads)
    budget = acc.memory_gb * 1e9 * acc.memory_utilization - weights - acc.reserve_gb * 1e9
    bw = tp * acc.bandwidth_tbs * 1e12 * acc.bandwidth_efficiency   # bytes/s of the replica
    flops = tp * acc.tflops * 1e12 * acc.compute_efficiency         # FLOP/s of the replica
    p, o = traffic.prompt_tokens, traffic.output_tokens
    tokens = max(budget, 0.0) / kv_token  # cache tokens each GPU holds = tokens the replica holds
    seqs_mem = int(tokens // (p + o))
    a = n * weight_bytes / bw                                    # weight read per step, s
    b = (p + o / 2) * kv_token * tp / bw  # cache read per sequence per step, s (each GPU reads its share)
    c = 2 * n / flops                                            # compute per sequence per step, s
    t_pf = prefill_seconds(model, acc, tp, p)
    t_slo = slo.tpot_ms / 1e3
    stall = t_pf / o  # prefill time each decode token pays for, per sequence in the batch
    seqs_tpot = 0
    if t_slo > a + b + stall and t_slo > c + stall:
        seqs_tpot = int(min((t_slo - a) / (b + stall), t_slo / (c + stall)))
    batch = min(seqs_mem, seqs_tpot)

    def step(bsz: float) -> float:
        return max(a + b * bsz, c * bsz)

    def rate_at(bsz: float) -> float:
        return bsz / (o * step(bsz) + bsz * t_pf)

    fits = budget > 0 and seqs_mem >= 1
    prompt_p = traffic.prompt_p_tokens or p
    t_pf_p = prefill_seconds(model, acc, tp, prompt_p)
    ttft = slo.ttft_ms / 1e3
    # Largest rate whose TTFT at the percentile stays within the target (bisection; monotone in the rate).
    if t_pf_p >= ttft:
        ttft_rate = 0.0
    else:
        lo, hi = 0.0, 1.0 / t_pf
        for _ in range(200):
            mid = (lo + hi) / 2
            if mm1_wait_quantile(mid, t_pf, slo.percentile) + t_pf_p <= ttft:
                lo = mid
            else:
                hi = mid
        ttft_rate = lo
    capacity = rate_at(batch) if fits and batch >= 1 else 0.0
    planned = min(max_utilization * capacity, ttft_rate)
    if not fits:
        limit = "weights do not fit" if budget <= 0 else "KV cache cannot hold one sequence"
    elif seqs_tpot < 1:
        limit = "TPOT target unreachable at batch 1"
    elif ttft_rate <= 0:
        limit = "TTFT target below the prefill time"
    elif ttft_rate < max_utilization * capacity:
        limit = "TTFT (prefill queue)"
    elif seqs_mem <= seqs_tpot:
        limit = "KV cache memory"
    else:
        bound = "memory bandwidth" if a + b * batch >= c * batch else "compute"
        limit = f"TPOT (decode step, {bound}-bound)"
    peak = traffic.rate * traffic.peak_to_mean
    if planned > 0:
        replicas = max(1, math.ceil(peak / planned - 1e-9)) + spare_replicas
        gpus = replicas * tp
        # Load each replica actually sees at the peak, and its batch by Little's law (bisection on B).
        per_replica = peak / (replicas - spare_replicas)
        lo, hi = 0.0, float(batch)
        for _ in range(200):
            mid = (lo + hi) / 2
            if rate_at(mid) < per_replica:
                lo = mid
            else:
                hi = mid
        concurrency = hi
        tpot_plan = (step(hi) + hi * stall) * 1e3 if hi > 0 else 0.0
    else:
        replicas = gpus = 0
        concurrency = tpot_plan = 0.0
    step_b = step(batch) if batch >= 1 else step(1)
    return Plan(tp=tp, fits=fits and planned > 0, weights_gb_per_gpu=weights / 1e9,
                kv_kib_per_token_per_gpu=kv_token / 1024, cache_tokens_per_replica=tokens,
                max_seqs_memory=seqs_mem, max_seqs_tpot=seqs_tpot, batch=batch,
                step_ms=step_b * 1e3,
                step_bound="memory" if a + b * max(batch, 1) >= c * max(batch, 1) else "compute",
                prefill_ms=t_pf * 1e3, capacity_rps=capacity, ttft_limit_rps=ttft_rate,
                planned_rps=planned, replicas=replicas, gpus=gpus, limit=limit,
                concurrency=concurrency, tpot_at_plan_ms=tpot_plan)


def plan(model: Model, acc: Accelerator, traffic: Traffic, slo: Slo, tps: list[int], spare_replicas: int = 0,
         max_utilization: float = 0.8, kv_bytes: float = 2, weight_bytes: float = 2) -> tuple[list[Plan], Plan | None]:
    rows = [plan_for_tp(model, acc, traffic, slo, tp, spare_replicas, max_utilization, kv_bytes, weight_bytes)
            for tp in tps]
    feasible = [r for r in rows if r.fits]
    best = min(feasible, key=lambda r: (r.gpus, r.tp)) if feasible else None
    return rows, best


def positive(kind):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}") from None
        if not value > 0 or (kind is float and not math.isfinite(value)):
            raise argparse.ArgumentTypeError(f"expected a positive {kind.__name__}, got {text!r}")
        return value
    return parse


def non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}") from None
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}") from None
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}")
    return value


def tp_list(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}")
    return sorted(set(values))


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description="Estimate the accelerators an LLM serving deployment needs for a traffic and latency "
                    "targets, and the factor that limits each tensor-parallel degree.",
        epilog="Example (Llama 3 70B shape, H100 SXM vendor peaks): --layers 80 --hidden 8192 --heads 64 "
               "--kv-heads 8 --intermediate 28672 --vocab 128256 --memory-gb 80 --bandwidth-tbs 3.35 "
               "--tflops 989.5 --rate 10 --prompt-tokens 2000 --output-tokens 250 --ttft-ms 2000 --tpot-ms 50")
    m = ap.add_argument_group("model (dense decoder, values from its config.json)")
    m.add_argument("--layers", type=positive(int), required=True, help="num_hidden_layers")
    m.add_argument("--hidden", type=positive(int), required=True, help="hidden_size")
    m.add_argument("--heads", type=positive(int), required=True, help="num_attention_heads")
    m.add_argument("--kv-heads", type=positive(int), help="num_key_value_heads (default: --heads)")
    m.add_argument("--head-dim", type=positive(int), help="head_dim (default: hidden / heads)")
    m.add_argument("--intermediate", type=positive(int), help="intermediate_size (MLP width)")
    m.add_argument("--vocab", type=positive(int), help="vocab_size")
    m.add_argument("--tied-embeddings", action="store_true", help="input and output embeddings are shared")
    m.add_argument("--params", type=positive(float), help="parameter count, instead of counting from the shape")
    m.add_argument("--weight-bytes", type=positive(float), default=2.0, help="bytes per weight (2 BF16, 1 FP8)")
    m.add_argument("--kv-bytes", type=positive(float), default=2.0, help="bytes per cache element (2 BF16, 1 FP8)")
    a = ap.add_argument_group("accelerator (one device)")
    a.add_argument("--memory-gb", type=positive(float), required=True, help="memory per accelerator, GB (1e9 bytes)")
    a.add_argument("--bandwidth-tbs", type=positive(float), required=True, help="memory bandwidth, TB/s")
    a.add_argument("--tflops", type=positive(float), required=True, help="dense TFLOPS in the weights' data type")
    a.add_argument("--memory-utilization", type=fraction, default=0.9,
                   help="share of memory the server may use (vLLM's --gpu-memory-utilization, default 0.9)")
    a.add_argument("--reserve-gb", type=non_negative, default=0.0,
                   help="memory per accelerator kept for activations and the runtime, GB (default 0)")
    a.add_argument("--bandwidth-efficiency", type=fraction, default=1.0, help="achieved / peak bandwidth")
    a.add_argument("--compute-efficiency", type=fraction, default=1.0, help="achieved / peak FLOPS")
    a.add_argument("--tp", type=tp_list, default=[1, 2, 4, 8], help="tensor-parallel degrees to try (default 1,2,4,8)")
    t = ap.add_argument_group("traffic and targets")
    t.add_argument("--rate", type=positive(float), required=True, help="mean requests per second")
    t.add_argument("--peak-to-mean", type=positive(float), default=1.0, help="peak rate / mean rate (default 1)")
    t.add_argument("--prompt-tokens", type=positive(float), required=True, help="mean prompt length, tokens")
    t.add_argument("--output-tokens", type=positive(float), required=True, help="mean output length, tokens")
    t.add_argument("--prompt-p-tokens", type=positive(float),
                   help="prompt length at the TTFT percentile (default: the mean)")
    t.add_argument("--ttft-ms", type=positive(float), required=True, help="time-to-first-token target, ms")
    t.add_argument("--tpot-ms", type=positive(float), required=True, help="time-per-output-token target, ms")
    t.add_argument("--percentile", type=float, default=0.99, help="percentile of the TTFT target (default 0.99)")
    t.add_argument("--max-utilization", type=fraction, default=0.8,
                   help="share of a replica's capacity to plan for (default 0.8)")
    t.add_argument("--spare-replicas", type=int, default=0, help="replicas kept for failures and rollouts")
    ap.add_argument("--json", action="store_true", help="print the plan as JSON")
    return ap


def parse(argv: list[str] | None = None) -> tuple[Model, Accelerator, Traffic, Slo, argparse.Namespace]:
    ap = build_parser()
    args = ap.parse_args(argv)
    kv_heads = args.kv_heads or args.heads
    if args.heads % kv_heads:
        ap.error(f"--heads ({args.heads}) must be a multiple of --kv-heads ({kv_heads})")
    if args.head_dim is None and args.hidden % args.heads:
        ap.error(f"--hidden ({args.hidden}) is not a multiple of --heads ({args.heads}); give --head-dim")
    if args.params is None and (args.intermediate is None or args.vocab is None):
        ap.error("give --intermediate and --vocab to count the parameters, or --params")
    if not 0 < args.percentile < 1:
        ap.error(f"--percentile must be in (0, 1), got {args.percentile}")
    if args.spare_replicas < 0:
        ap.error(f"--spare-replicas must be >= 0, got {args.spare_replicas}")
    if args.prompt_p_tokens is not None and args.prompt_p_tokens < args.prompt_tokens:
        ap.error("--prompt-p-tokens is a high percentile of the prompt length; it cannot be below the mean")
    model = Model(layers=args.layers, hidden=args.hidden, heads=args.heads, kv_heads=kv_heads,
                  head_dim=args.head_dim or args.hidden // args.heads, intermediate=args.intermediate or 0,
                  vocab=args.vocab or 0, tied_embeddings=args.tied_embeddings, params=args.params or 0.0)
    acc = Accelerator(memory_gb=args.memory_gb, bandwidth_tbs=args.bandwidth_tbs, tflops=args.tflops,
                      memory_utilization=args.memory_utilization, reserve_gb=args.reserve_gb,
                      bandwidth_efficiency=args.bandwidth_efficiency, compute_efficiency=args.compute_efficiency)
    traffic = Traffic(rate=args.rate, prompt_tokens=args.prompt_tokens, output_tokens=args.output_tokens,
                      prompt_p_tokens=args.prompt_p_tokens or 0.0, peak_to_mean=args.peak_to_mean)
    slo = Slo(ttft_ms=args.ttft_ms, tpot_ms=args.tpot_ms, percentile=args.percentile)
    return model, acc, traffic, slo, args


def main(argv: list[str] | None = None) -> int:
    model, acc, traffic, slo, args = parse(argv)
    rows, best = plan(model, acc, traffic, slo, args.tp, args.spare_replicas, args.max_utilization,
                      args.kv_bytes, args.weight_bytes)
    if args.json:
        print(json.dumps({"params": model.param_count(),
                          "kv_bytes_per_token": model.kv_bytes_per_token(args.kv_bytes),
                          "peak_rate": traffic.rate * traffic.peak_to_mean,
                          "rows": [asdict(r) for r in rows],
                          "best": asdict(best) if best else None}, indent=2))
        return 0 if best else 1
    print(f"model: {model.param_count() / 1e9:.2f} B parameters, "
          f"{model.kv_bytes_per_token(args.kv_bytes) / 1024:.0f} KiB of KV cache per token")
    print(f"traffic: peak {traffic.rate * traffic.peak_to_mean:g} req/s, prompt {traffic.prompt_tokens:g}, "
          f"output {traffic.output_tokens:g} tokens; targets TTFT p{slo.percentile * 100:g} {slo.ttft_ms:g} ms, "
          f"TPOT {slo.tpot_ms:g} ms")
    head = (f"{'TP':>3} {'weights/GPU':>11} {'cache tok':>10} {'seq mem':>7} {'seq TPOT':>8} {'step ms':>7} "
            f"{'prefill ms':>10} {'cap rps':>8} {'TTFT rps':>8} {'plan rps':>8} {'replicas':>8} {'GPUs':>5}  limit")
    print(head)
    for r in rows:
        print(f"{r.tp:>3} {r.weights_gb_per_gpu:>8.1f} GB {r.cache_tokens_per_replica:>10,.0f} "
              f"{r.max_seqs_memory:>7} {r.max_seqs_tpot:>8} {r.step_ms:>7.1f} {r.prefill_ms:>10.1f} "
              f"{r.capacity_rps:>8.2f} {r.ttft_limit_rps:>8.2f} {r.planned_rps:>8.2f} {r.replicas:>8} "
              f"{r.gpus:>5}  {r.limit}")
    if best is None:
        print("no tensor-parallel degree meets the targets: raise --tp, use a larger accelerator, "
              "quantize, or relax the targets")
        return 1
    print(f"plan: {best.gpus} GPUs = {best.replicas} replicas x TP {best.tp}; limited by {best.limit}; "
          f"at the peak each replica holds about {best.concurrency:.0f} sequences at a TPOT of "
          f"{best.tpot_at_plan_ms:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
