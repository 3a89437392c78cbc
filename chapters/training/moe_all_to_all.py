#!/usr/bin/env python3
"""Estimate the all-to-all traffic and time of a mixture-of-experts layer under expert parallelism.

For one GPU of an expert-parallel (EP) group, the script prints, per MoE layer and per pass:

* the bytes the dispatch all-to-all sends (each routed token's hidden state, once per chosen
  expert) and the bytes the combine all-to-all sends back, split into the part that stays on the
  GPU, the part that crosses the intra-node links (NVLink, Infinity Fabric) and the part that
  leaves the node;
* the inter-node bytes when each token is sent at most once to every destination node and then
  forwarded inside that node, as DeepSeek-V3's dispatch kernels do;
* the time of both all-to-alls at the bandwidths given, per layer and per step;
* the FLOPs and time of the expert matrix multiplications at an achievable throughput, and the
  ratio of communication time to expert GEMM time.

The model assumes uniform routing: every token picks top-k distinct experts uniformly at random,
experts are spread evenly over the EP ranks, and an EP group larger than one node fills whole
nodes. Intra-node and inter-node transfers run at the same time, so an all-to-all takes the
longer of the two. In the one-copy-per-node variant, the extra intra-node hop that forwards a token
from the GPU that received it to the GPUs holding its experts is not added to the intra-node bytes. Real routers are not uniform; see the chapter moe-at-scale.md for what that
changes. Every number is an estimate derived from the inputs, not a measurement.

Examples:
    python moe_all_to_all.py --preset deepseek-v3 --tokens-per-gpu 4096 --ep 64
    python moe_all_to_all.py --preset deepseek-v3 --tokens-per-gpu 4096 --ep 64 --training --json
    python moe_all_to_all.py --hidden 4096 --experts 8 --top-k 2 --expert-ffn 14336 --moe-layers 32 \\
        --tokens-per-gpu 8192 --ep 8 --gpus-per-node 8 --dispatch-bytes 2 --combine-bytes 2
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass

# Model shapes the chapter uses. deepseek-v3: dim 7168, moe_inter_dim 2048, 256 routed experts,
# 8 activated, 61 layers of which the first 3 are dense (inference/configs/config_671B.json in
# github.com/deepseek-ai/DeepSeek-V3); FP8 dispatch and BF16 combine as in DeepEP's benchmarks.
# mixtral-8x7b: hidden 4096, FFN 14336, 8 experts, top-2, 32 layers (Megatron-LM's MoE example).
PRESETS = {
    "deepseek-v3": {"hidden": 7168, "experts": 256, "top_k": 8, "expert_ffn": 2048, "moe_layers": 58,
                    "dispatch_bytes": 1.0, "combine_bytes": 2.0},
    "mixtral-8x7b": {"hidden": 4096, "experts": 8, "top_k": 2, "expert_ffn": 14336, "moe_layers": 32,
                     "dispatch_bytes": 2.0, "combine_bytes": 2.0},
}
MODEL_FIELDS = ("hidden", "experts", "top_k", "expert_ffn", "moe_layers", "dispatch_bytes", "combine_bytes")
GB = 1e9


@dataclass(frozen=True)
class Setup:
    hidden: int
    experts: int
    top_k: int
    expert_ffn: int
    moe_layers: int
    dispatch_bytes: float
    combine_bytes: float
    tokens_per_gpu: int
    ep: int
    gpus_per_node: int
    intra_gbps: float
    inter_gbps: float
    tflops: float
    training: bool = False
    capacity_factor: float | None = None


def check(s: Setup) -> None:
    """Raise ValueError with a readable message for any impossible combination."""
    for name in ("hidden", "experts", "top_k", "expert_ffn", "moe_layers", "tokens_per_gpu", "ep", "gpus_per_node"):
        if getattr(s, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} must be at least 1")
    for name in ("dispatch_bytes", "combine_bytes", "intra_gbps", "inter_gbps", "tflops"):
        if not getattr(s, name) > 0:
            raise ValueError(f"--{name.replace('_', '-').replace('gbps', 'bw')} must be positive")
    if s.top_k > s.experts:
        raise ValueError(f"--top-k ({s.top_k}) cannot exceed --experts ({s.experts})")
    if s.experts % s.ep:
        raise ValueError(f"--experts ({s.experts}) must divide evenly over --ep ({s.ep}) ranks")
    if s.ep > s.gpus_per_node and s.ep % s.gpus_per_node:
        raise ValueError(f"an EP group larger than a node must fill whole nodes: --ep ({s.ep}) is not a multiple "
                         f"of --gpus-per-node ({s.gpus_per_node})")
    if s.capacity_factor is not None and s.capacity_factor < 1:
        raise ValueError("--capacity-factor must be at least 1 (below 1, tokens are dropped even when balanced)")


def prob_not_hit(experts: int, group: int, k: int) -> float:
    """Probability that none of k distinct experts drawn uniformly from `experts` falls in a set of `group`."""
    if experts - group < k:
        return 0.0
    return math.comb(experts - group, k) / math.comb(experts, k)


def estimate(s: Setup) -> dict:
    check(s)
    g = min(s.gpus_per_node, s.ep)            # EP ranks per node
    nodes = s.ep // g                         # nodes the EP group spans
    frac_self = 1 / s.ep
    frac_intra = (g - 1) / s.ep
    frac_inter = (s.ep - g) / s.ep
    pad = s.capacity_factor or 1.0            # padding every expert's input up to its capacity
    pairs = s.tokens_per_gpu * s.top_k        # (token, expert) pairs that start on this GPU

    def traffic(bytes_per_elem: float) -> dict:
        per_pair = s.hidden * bytes_per_elem
        total = pairs * per_pair * pad
        # One copy per (token, destination node), then forwarded inside that node.
        p_node_missed = prob_not_hit(s.experts, s.experts // nodes, s.top_k)
        remote_nodes_per_token = (nodes - 1) * (1 - p_node_missed)
        inter_dedup = s.tokens_per_gpu * remote_nodes_per_token * per_pair * pad
        d = {"bytes_per_pair": per_pair, "self": total * frac_self, "intra": total * frac_intra,
             "inter": total * frac_inter, "inter_one_copy_per_node": inter_dedup}
        d["sent"] = d["intra"] + d["inter"]
        d["time_s"] = max(d["intra"] / (s.intra_gbps * GB), d["inter"] / (s.inter_gbps * GB))
        d["time_one_copy_per_node_s"] = max(d["intra"] / (s.intra_gbps * GB), inter_dedup / (s.inter_gbps * GB))
        return d

    dispatch, combine = traffic(s.dispatch_bytes), traffic(s.combine_bytes)
    passes = 2 if s.training else 1           # the backward pass repeats both all-to-alls in reverse
    layer_comm = dispatch["time_s"] + combine["time_s"]
    layer_comm_dedup = dispatch["time_one_copy_per_node_s"] + combine["time_one_copy_per_node_s"]
    # SwiGLU expert: three h x f matrices, 2 FLOPs per multiply-add; uniform routing means each GPU
    # receives as many pairs as it sends. The backward pass costs twice the forward FLOPs.
    fwd_flops = pairs * 2 * 3 * s.hidden * s.expert_ffn
    flops = fwd_flops * (3 if s.training else 1)
    gemm_s = flops / (s.tflops * 1e12)
    comm_s = layer_comm * passes
    comm_dedup_s = layer_comm_dedup * passes
    return {
        "setup": asdict(s),
        "layout": {"ep_ranks_per_node": g, "nodes": nodes, "experts_per_gpu": s.experts // s.ep,
                   "fraction_self": frac_self, "fraction_intra_node": frac_intra, "fraction_inter_node": frac_inter,
                   "expected_remote_nodes_per_token": (nodes - 1) * (1 - prob_not_hit(s.experts, s.experts // nodes,
                                                                                        s.top_k)),
                   "tokens_per_expert_uniform": s.tokens_per_gpu * s.ep * s.top_k / s.experts},
        "dispatch": dispatch,
        "combine": combine,
        "per_layer": {"passes": passes, "comm_s": comm_s, "comm_one_copy_per_node_s": comm_dedup_s,
                      "expert_flops": flops, "expert_gemm_s": gemm_s,
                      "comm_to_gemm": comm_s / gemm_s, "comm_one_copy_per_node_to_gemm": comm_dedup_s / gemm_s},
        "per_step": {"moe_layers": s.moe_layers, "comm_s": comm_s * s.moe_layers,
                     "comm_one_copy_per_node_s": comm_dedup_s * s.moe_layers,
                     "expert_gemm_s": gemm_s * s.moe_layers},
    }


def mb(x: float) -> str:
    return f"{x / 1e6:12.3f}"


def ms(x: float) -> str:
    return f"{x * 1e3:10.3f}"


def report(r: dict) -> str:
    s, lay, d, c, pl, ps = r["setup"], r["layout"], r["dispatch"], r["combine"], r["per_layer"], r["per_step"]
    cap = "dropless" if s["capacity_factor"] is None else f"padded to capacity factor {s['capacity_factor']:g}"
    lines = [
        f"MoE all-to-all estimate: hidden {s['hidden']}, {s['experts']} experts, top-{s['top_k']}, expert FFN "
        f"{s['expert_ffn']}, {s['moe_layers']} MoE layers",
        f"EP {s['ep']} over {lay['nodes']} node(s) x {lay['ep_ranks_per_node']} GPU(s), {lay['experts_per_gpu']} "
        f"expert(s) per GPU, {s['tokens_per_gpu']} tokens per GPU, {cap}",
        f"bandwidth per GPU per direction: intra-node {s['intra_gbps']:g} GB/s, inter-node {s['inter_gbps']:g} GB/s; "
        f"expert GEMMs at {s['tflops']:g} TFLOPS",
        "assumptions: uniform routing, intra- and inter-node transfers overlap, 1 MB = 1e6 bytes",
        f"share of (token, expert) pairs: own GPU {lay['fraction_self']:.4f}, same node {lay['fraction_intra_node']:.4f}, "
        f"other nodes {lay['fraction_inter_node']:.4f}",
        f"tokens per expert (uniform): {lay['tokens_per_expert_uniform']:g}; distinct remote nodes per token: "
        f"{lay['expected_remote_nodes_per_token']:.4f}",
        "",
        "per GPU, per MoE layer, one pass      dispatch (MB)   combine (MB)",
        f"  bytes per (token, expert) pair     {d['bytes_per_pair']:12g}   {c['bytes_per_pair']:12g}",
        f"  stays on this GPU                  {mb(d['self'])}   {mb(c['self'])}",
        f"  intra-node                         {mb(d['intra'])}   {mb(c['intra'])}",
        f"  inter-node                         {mb(d['inter'])}   {mb(c['inter'])}",
        f"  inter-node, one copy per node      {mb(d['inter_one_copy_per_node'])}   {mb(c['inter_one_copy_per_node'])}",
        f"  time (ms)                          {ms(d['time_s'])}     {ms(c['time_s'])}",
        f"  time, one copy per node (ms)       {ms(d['time_one_copy_per_node_s'])}     "
        f"{ms(c['time_one_copy_per_node_s'])}",
        "",
        f"per MoE layer, {'forward + backward' if pl['passes'] == 2 else 'forward'}:",
        f"  all-to-all time (ms)               {ms(pl['comm_s'])}   one copy per node: {ms(pl['comm_one_copy_per_node_s'])}",
        f"  expert GEMM FLOPs                  {pl['expert_flops']:.4e}",
        f"  expert GEMM time (ms)              {ms(pl['expert_gemm_s'])}",
        f"  all-to-all / GEMM                  {pl['comm_to_gemm']:10.3f}   one copy per node: "
        f"{pl['comm_one_copy_per_node_to_gemm']:10.3f}",
        f"per step ({ps['moe_layers']} MoE layers):",
        f"  all-to-all time (ms)               {ms(ps['comm_s'])}   one copy per node: {ms(ps['comm_one_copy_per_node_s'])}",
        f"  expert GEMM time (ms)              {ms(ps['expert_gemm_s'])}",
    ]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog="Sizes are element counts; bytes and "
                                "bandwidths are decimal (1 GB/s = 1e9 bytes per second).")
    m = p.add_argument_group("model (or --preset)")
    m.add_argument("--preset", choices=sorted(PRESETS), help="fill the model fields from a known shape")
    m.add_argument("--hidden", type=int, help="hidden size h, the elements of one token's activation")
    m.add_argument("--experts", type=int, help="routed experts per MoE layer")
    m.add_argument("--top-k", type=int, help="experts each token is routed to")
    m.add_argument("--expert-ffn", type=int, help="intermediate size of one expert (SwiGLU: 3 h x f matrices)")
    m.add_argument("--moe-layers", type=int, help="number of MoE layers in the model")
    m.add_argument("--dispatch-bytes", type=float, help="bytes per element sent by dispatch (1 for FP8, 2 for BF16)")
    m.add_argument("--combine-bytes", type=float, help="bytes per element sent by combine")
    r = p.add_argument_group("run")
    r.add_argument("--tokens-per-gpu", type=int, required=True, help="tokens entering the MoE layer on one GPU per micro-batch")
    r.add_argument("--ep", type=int, required=True, help="expert-parallel group size, in GPUs")
    r.add_argument("--gpus-per-node", type=int, default=8, help="GPUs in one intra-node (NVLink) domain (default 8)")
    r.add_argument("--intra-bw", type=float, default=450.0, dest="intra_gbps",
                   help="achievable intra-node bandwidth per GPU per direction, GB/s (default 450, NVLink 4 line rate)")
    r.add_argument("--inter-bw", type=float, default=50.0, dest="inter_gbps",
                   help="achievable network bandwidth per GPU per direction, GB/s (default 50, one 400 Gb/s NIC)")
    r.add_argument("--tflops", type=float, default=400.0,
                   help="achievable expert GEMM throughput per GPU, TFLOPS (default 400, an assumption)")
    r.add_argument("--training", action="store_true", help="add the backward pass (2x the all-to-alls, 3x the FLOPs)")
    r.add_argument("--capacity-factor", type=float, help="pad every expert's input to this capacity factor (default: dropless)")
    r.add_argument("--json", action="store_true", help="print the numbers as JSON instead of a table")
    return p


def setup_from_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> Setup:
    fields = dict(PRESETS.get(args.preset, {}))
    for name in MODEL_FIELDS:
        value = getattr(args, name)
        if value is not None:
            fields[name] = value
    missing = [f"--{n.replace('_', '-')}" for n in MODEL_FIELDS if n not in fields]
    if missing:
        parser.error(f"missing model field(s) {', '.join(missing)}: give them or use --preset")
    s = Setup(**fields, tokens_per_gpu=args.tokens_per_gpu, ep=args.ep, gpus_per_node=args.gpus_per_node,
              intra_gbps=args.intra_gbps, inter_gbps=args.inter_gbps, tflops=args.tflops, training=args.training,
              capacity_factor=args.capacity_factor)
    try:
        check(s)
    except ValueError as exc:
        parser.error(str(exc))
    return s


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    result = estimate(setup_from_args(parser, args))
    print(json.dumps(result, indent=1, sort_keys=True) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
