#!/usr/bin/env python
"""Turn a model size and a token count into FLOPs, accelerator-hours, days and money, and back.

The arithmetic is the one the planning chapter (planning-a-run.md) teaches, printed step by
step so that every number can be checked by hand:

* model FLOPs        C = 6 x N x D (plus an optional attention term 12 x L x d x T per token,
                     the PaLM count, when --layers, --d-model and --seq-len are given);
* useful rate        R = dense peak FLOP/s per accelerator x MFU;
* accelerator-hours  H = C / (R x 3600), the hours of productive steps;
* goodput            g, the share of the reserved wall-clock time spent in productive steps;
                     give it (--goodput) or let the script estimate it from a failure rate
                     (--failure-rate, interruptions per accelerator-hour), the blocking save
                     time of a checkpoint (--save-s), the restart time (--restart-min) and other
                     losses such as evaluation and data stalls (--other-loss), with the
                     checkpoint interval from Young's formula tau = sqrt(2 x save x MTBF);
* wall-clock         days = H / (accelerators x g) / 24;
* paid hours         P = H / g x (1 + extra), where --extra is the share of the main run spent
                     again on ablations, evaluation runs and scaling experiments;
* money              P x --price (per accelerator-hour), when a price is given.

Give the model with --params and --tokens (a forward plan), or give a budget instead of
--params and --tokens and a ratio of tokens per parameter (--tokens-per-param) and the script
solves for the largest model that fits: --budget money (needs --price) or --days (on
--gpus accelerators). Sizes take the suffixes K, M, B and T (70B = 7e10, 2T = 2e12).

The dense peaks built into --accelerator are vendor figures in TFLOP/s, dense (no structured
sparsity), from the accelerator comparison table of the book (compute/accelerator/README.md):
a100 312 and h100 989.5 (BF16), b200 2250 (BF16, HGX B200), mi300x 1307.4 (BF16). Give
--peak-tflops for anything else. Nothing is looked up; every output is arithmetic on the inputs.

Examples:

    python training_budget.py --params 70B --tokens 2T --accelerator h100 --mfu 0.40 --gpus 512 --price 2
    python training_budget.py --budget 1e6 --price 2 --tokens-per-param 20 --accelerator h100 \\
        --mfu 0.40 --gpus 512 --goodput 0.9
    python training_budget.py --params 8B --tokens 15T --accelerator h100 --mfu 0.40 --gpus 1024 \\
        --failure-rate 2e-5 --save-s 60 --restart-min 10 --other-loss 0.03
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys

SECONDS_PER_HOUR = 3600.0
HOURS_PER_DAY = 24.0
ACCELERATORS = {  # dense TFLOP/s at the precision training normally uses; see the module docstring
    "a100": 312.0,
    "h100": 989.5,
    "b200": 2250.0,
    "mi300x": 1307.4,
}
SUFFIXES = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMbBgGtT]?)\s*$")


def size(text: str) -> float:
    """A positive count such as 7e10, 70B or 1.5T."""
    match = SIZE.match(text)
    value = float(match[1]) * SUFFIXES[match[2].lower()] if match else float("nan")
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number such as 7e10, 70B or 2T, got {text!r}")
    return value


def positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value >= 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in (0, 1], got {text!r}")
    return value


def loss_fraction(text: str) -> float:
    value = non_negative(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"expected a fraction in [0, 1), got {text!r}")
    return value


def count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        epilog="The chapter chapters/insights/planning-a-run.md explains every step.",
    )
    model = ap.add_argument_group("the model (forward plan)")
    model.add_argument("--params", type=size, help="parameters N, e.g. 70B or 7e10")
    model.add_argument("--tokens", type=size, help="training tokens D, e.g. 2T or 2e12")
    model.add_argument("--layers", type=count, help="layers L, for the attention term (with --d-model, --seq-len)")
    model.add_argument("--d-model", type=count, help="model width d, for the attention term")
    model.add_argument("--seq-len", type=count, help="sequence length T, for the attention term")
    solve = ap.add_argument_group("a budget instead of --params/--tokens (solve for the model)")
    solve.add_argument("--budget", type=positive, help="money to spend on the main run (needs --price)")
    solve.add_argument("--days", type=positive, help="calendar days available for the main run")
    solve.add_argument("--tokens-per-param", type=positive, help="D / N of the model to solve for (e.g. 20)")
    hw = ap.add_argument_group("hardware and efficiency")
    hw.add_argument("--accelerator", choices=sorted(ACCELERATORS), help="use a built-in dense peak")
    hw.add_argument("--peak-tflops", type=positive, help="dense peak TFLOP/s per accelerator (instead of --accelerator)")
    hw.add_argument("--mfu", type=fraction, required=True, help="model FLOPs utilization, a fraction such as 0.40")
    hw.add_argument("--gpus", type=count, required=True, help="accelerators in the job")
    hw.add_argument("--price", type=positive, help="money per accelerator-hour (rented, or your owned cost)")
    gp = ap.add_argument_group("goodput: give it, or estimate it from failures")
    gp.add_argument("--goodput", type=fraction, help="share of wall-clock time in productive steps (default 1)")
    gp.add_argument("--failure-rate", type=positive, help="interruptions per accelerator-hour, e.g. 2e-5")
    gp.add_argument("--save-s", type=positive, default=60.0, help="blocking checkpoint save time in seconds (60)")
    gp.add_argument("--restart-min", type=non_negative, default=10.0,
                    help="minutes from an interruption to training again, excluding lost work (10)")
    gp.add_argument("--other-loss", type=loss_fraction, default=0.0,
                    help="share of time lost to evaluation, data stalls and the like (0)")
    ap.add_argument("--extra", type=non_negative, default=0.0,
                    help="ablations, evaluation and experiments as a share of the main run's paid hours (0)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of text")
    return ap


def check(ap: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if (args.accelerator is None) == (args.peak_tflops is None):
        ap.error("give exactly one of --accelerator and --peak-tflops")
    forward = args.params is not None or args.tokens is not None
    solving = args.budget is not None or args.days is not None
    if forward and solving:
        ap.error("give either --params and --tokens, or a budget (--budget or --days), not both")
    if forward and (args.params is None or args.tokens is None):
        ap.error("a forward plan needs both --params and --tokens")
    if not forward and not solving:
        ap.error("give --params and --tokens, or a budget with --budget or --days")
    if solving:
        if (args.budget is None) == (args.days is None):
            ap.error("give one budget: --budget or --days")
        if args.tokens_per_param is None:
            ap.error("solving for a model needs --tokens-per-param")
        if args.budget is not None and args.price is None:
            ap.error("--budget needs --price")
    elif args.tokens_per_param is not None:
        ap.error("--tokens-per-param is for solving from a budget; a forward plan has its own ratio")
    attention = (args.layers, args.d_model, args.seq_len)
    if any(a is not None for a in attention) and not all(a is not None for a in attention):
        ap.error("the attention term needs all of --layers, --d-model and --seq-len")
    if solving and any(a is not None for a in attention):
        ap.error("the attention term is for a forward plan; solving uses 6N FLOPs per token")
    if args.goodput is not None and args.failure_rate is not None:
        ap.error("give --goodput or --failure-rate, not both")


def estimate_goodput(gpus: int, failure_rate: float, save_s: float, restart_s: float, other: float) -> dict:
    """Goodput from independent interruptions, Young's checkpoint interval and a fixed other loss.

    Job MTBF M = 1 / (failure_rate x gpus). Per unit of wall-clock time the job loses save/tau to
    blocking saves, tau/(2M) to work redone after an interruption and restart/M to restarting.
    """
    mtbf_s = SECONDS_PER_HOUR / (failure_rate * gpus)
    tau = math.sqrt(2 * save_s * mtbf_s)
    save, redo, restart = save_s / tau, tau / (2 * mtbf_s), restart_s / mtbf_s
    goodput = (1 - other) * (1 - save - redo - restart)
    return {"job_mtbf_h": mtbf_s / SECONDS_PER_HOUR, "interval_min": tau / 60, "save_loss": save,
            "redo_loss": redo, "restart_loss": restart, "other_loss": other, "goodput": goodput}


def plan(args: argparse.Namespace) -> dict:
    peak = ACCELERATORS[args.accelerator] if args.accelerator else args.peak_tflops
    rate = peak * 1e12 * args.mfu
    out: dict = {"peak_tflops": peak, "mfu": args.mfu, "useful_tflops": rate / 1e12, "gpus": args.gpus}
    if args.failure_rate is not None:
        est = estimate_goodput(args.gpus, args.failure_rate, args.save_s, args.restart_min * 60, args.other_loss)
        if est["goodput"] <= 0:
            raise ValueError(f"the failure model leaves no productive time (goodput {est['goodput']:.3f}): "
                             "fewer accelerators, a faster restart or a faster save is needed")
        out["goodput_model"] = est
        goodput = est["goodput"]
    else:
        goodput = args.goodput if args.goodput is not None else 1.0
    out["goodput"] = goodput
    if args.params is not None:
        n, d = args.params, args.tokens
        attention = 0.0
        if args.layers is not None:
            attention = 12.0 * args.layers * args.d_model * args.seq_len
        per_token = 6 * n + attention
        flops = per_token * d
        hours = flops / (rate * SECONDS_PER_HOUR)
        out.update(mode="forward", params=n, tokens=d, attention_flops_per_token=attention)
    else:
        if args.budget is not None:
            paid = args.budget / args.price
            hours = paid * goodput / (1 + args.extra)
        else:
            hours = args.days * HOURS_PER_DAY * args.gpus * goodput / (1 + args.extra)
        flops = hours * SECONDS_PER_HOUR * rate
        n = math.sqrt(flops / (6 * args.tokens_per_param))
        d = args.tokens_per_param * n
        per_token = 6 * n
        out.update(mode="solve", params=n, tokens=d, attention_flops_per_token=0.0,
                   budget=args.budget, days_available=args.days)
    paid_hours = hours / goodput * (1 + args.extra)
    out.update(
        flops_per_token=per_token, flops=flops, tokens_per_param=d / n, productive_gpu_hours=hours,
        wall_days=hours / (args.gpus * goodput) / HOURS_PER_DAY, extra=args.extra, paid_gpu_hours=paid_hours,
        price=args.price, money=None if args.price is None else paid_hours * args.price,
        inference_flops_per_token=2 * n,
    )
    return out


def fmt(x: float) -> str:
    return f"{x:.4g}" if x < 1e4 else f"{x:.4e}"


def report(r: dict) -> str:
    g = r["goodput"]
    lines = ["Training budget (every number is arithmetic on the inputs)"]
    rate = (f"  useful rate R    = {r['peak_tflops']:.6g} TFLOP/s x MFU {r['mfu']:.4g} = {r['useful_tflops']:.6g}"
            " TFLOP/s per accelerator")
    if r["mode"] == "solve":
        lines.append(rate)
        lines.append("  solving for the largest model the budget allows, at the given tokens per parameter:")
        if r["budget"] is not None:
            lines.append(f"    paid hours      = {fmt(r['budget'])} / {fmt(r['price'])} = {fmt(r['paid_gpu_hours'])}")
        else:
            lines.append(f"    paid hours      = {fmt(r['days_available'])} days x 24 x {r['gpus']} accelerators"
                         f" = {fmt(r['paid_gpu_hours'])}")
        lines.append(f"    productive H    = paid x goodput / (1 + extra) = {fmt(r['paid_gpu_hours'])} x {g:.4g}"
                     f" / {1 + r['extra']:.4g} = {fmt(r['productive_gpu_hours'])} accelerator-hours")
        lines.append(f"    FLOPs C         = H x 3600 x R = {fmt(r['flops'])}")
        lines.append(f"    N = sqrt(C / (6 x D/N)) = sqrt({fmt(r['flops'])} / (6 x {r['tokens_per_param']:.4g}))"
                     f" = {fmt(r['params'])} parameters")
        lines.append(f"    D = D/N x N = {fmt(r['tokens'])} tokens")
    else:
        per = f"6 x {fmt(r['params'])}"
        if r["attention_flops_per_token"]:
            per += f" + 12 x L x d x T ({fmt(r['attention_flops_per_token'])})"
        lines.append(f"  FLOPs per token  = {per} = {fmt(r['flops_per_token'])}")
        lines.append(f"  model FLOPs C    = {fmt(r['flops_per_token'])} x {fmt(r['tokens'])} tokens = {fmt(r['flops'])}")
    if r["mode"] == "forward":
        lines.append(rate)
        lines.append(f"  productive H     = C / (R x 3600) = {fmt(r['productive_gpu_hours'])} accelerator-hours")
    gm = r.get("goodput_model")
    if gm:
        lines.append(f"  goodput estimate: job MTBF {gm['job_mtbf_h']:.4g} h, checkpoint every {gm['interval_min']:.4g} min"
                     " (Young)")
        lines.append(f"    losses: saves {100 * gm['save_loss']:.2f}%, redone work {100 * gm['redo_loss']:.2f}%,"
                     f" restarts {100 * gm['restart_loss']:.2f}%, other {100 * gm['other_loss']:.2f}%"
                     f" -> goodput {100 * g:.2f}%")
    lines.append(f"  wall-clock       = H / ({r['gpus']} x goodput {g:.4g}) / 24 = {r['wall_days']:.4g} days")
    lines.append(f"  paid hours       = H / goodput x (1 + extra {r['extra']:.4g}) = {fmt(r['paid_gpu_hours'])}"
                 " accelerator-hours")
    if r["money"] is not None:
        lines.append(f"  money            = {fmt(r['paid_gpu_hours'])} x {r['price']:.6g} = {r['money']:,.0f}")
    lines.append(f"  tokens/parameter = {r['tokens_per_param']:.4g} (compute-optimal is about 20, Hoffmann et al. 2022)")
    lines.append(f"  serving cost     = 2 x N = {fmt(r['inference_flops_per_token'])} FLOPs per generated token")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    check(ap, args)
    try:
        result = plan(args)
    except ValueError as exc:
        ap.error(str(exc))
    print(json.dumps(result, indent=1, sort_keys=True) if args.json else report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
