#!/usr/bin/env python3
"""Expected interruptions and goodput of a synchronous training job, from its size and its recovery costs.

A first-principles model with four inputs:

* the job's size N in GPUs (--gpus, several values print one row each);
* the interruption rate per GPU-day r (--rate-per-gpu-day); the default, 4.736e-4,
  is derived from the Llama 3 report: 419 unexpected interruptions in 54 days on
  16,384 GPUs, 419 / (54 x 16,384);
* the checkpoint cadence: tau minutes of training between checkpoints
  (--interval, default: the interval that maximises goodput) and delta seconds
  during which training is blocked by each checkpoint (--checkpoint-seconds);
* the restart time R in minutes (--restart-minutes): from the failure to training
  again, i.e. detection, rescheduling, process start, loading the checkpoint, warm-up.

Failures are independent and arrive at the job's rate lambda = N x r (a Poisson process),
so the job's mean time between failures is M = 1 / lambda and the chance of a day
without any is exp(-24 h / M). A segment of w = tau + delta of work, restarted from its
beginning after every failure that strikes it (failures may also strike during a
restart), takes on average

    E[T] = M x exp(R / M) x (exp(w / M) - 1)

of wall time (the renewal argument used by Daly, 2006). Goodput is the fraction of
wall time that produces kept training progress, tau / E[T]. The script also prints
the first-order split of the lost time, delta / w + (w / 2 + R) / M (checkpointing,
recomputed work, restarts), and Young's interval sqrt(2 x delta x M) for comparison.

With --replica-groups G it adds a per-step recovery estimate in the style of torchft:
a failure takes only its own replica group (1/G of the GPUs) out for --heal-minutes
and throws away at most one step (--step-seconds) of that group's work, while the
other groups keep training, so goodput is about 1 - lambda x (heal + step) / G. The
job still writes occasional checkpoints for the failures this does not cover; they
are not counted.

    goodput_model.py --gpus 1024 16384 100000
    goodput_model.py --gpus 16384 --checkpoint-seconds 2 --restart-minutes 5
    goodput_model.py --gpus 16384 --replica-groups 32 --heal-minutes 5 --json

Everything is arithmetic on the inputs; no measurement is involved. Exit status 0,
or 2 for a usage error.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import asdict, dataclass

LLAMA3_RATE = 419 / (54 * 16384)  # unexpected interruptions per GPU-day, derived from the Llama 3 report


@dataclass
class Row:
    gpus: int
    interruptions_per_day: float
    mtbf_hours: float
    p_day_without_failure: float
    young_interval_min: float
    interval_min: float
    goodput: float
    first_order_checkpoint: float
    first_order_rework: float
    first_order_restart: float
    optimal_interval_min: float
    optimal_goodput: float
    replica_groups: int | None = None
    per_step_goodput: float | None = None


def expected_wall_time(work_h: float, mtbf_h: float, restart_h: float) -> float:
    """Mean wall time to finish `work_h` hours of uninterrupted work under Poisson failures with restarts."""
    return mtbf_h * math.exp(restart_h / mtbf_h) * math.expm1(work_h / mtbf_h)


def goodput(tau_h: float, delta_h: float, mtbf_h: float, restart_h: float) -> float:
    return tau_h / expected_wall_time(tau_h + delta_h, mtbf_h, restart_h)


def optimal_interval(delta_h: float, mtbf_h: float, restart_h: float) -> float:
    """The tau (hours) that maximises goodput: golden-section search on log(tau); goodput is unimodal in tau."""
    lo, hi = math.log(1e-4), math.log(max(10 * mtbf_h, 1e-3))
    inv_phi = (math.sqrt(5) - 1) / 2
    a, b = hi - inv_phi * (hi - lo), lo + inv_phi * (hi - lo)
    fa, fb = (goodput(math.exp(x), delta_h, mtbf_h, restart_h) for x in (a, b))
    for _ in range(200):
        if fa < fb:
            lo, a, fa = a, b, fb
            b = lo + inv_phi * (hi - lo)
            fb = goodput(math.exp(b), delta_h, mtbf_h, restart_h)
        else:
            hi, b, fb = b, a, fa
            a = hi - inv_phi * (hi - lo)
            fa = goodput(math.exp(a), delta_h, mtbf_h, restart_h)
    return math.exp((lo + hi) / 2)


def model(gpus: int, rate_per_gpu_day: float, delta_s: float, restart_min: float, interval_min: float | None,
          replica_groups: int | None = None, heal_min: float = 5.0, step_s: float = 5.0) -> Row:
    per_day = gpus * rate_per_gpu_day
    mtbf_h = 24.0 / per_day
    delta_h, restart_h = delta_s / 3600, restart_min / 60
    best_h = optimal_interval(delta_h, mtbf_h, restart_h)
    tau_h = best_h if interval_min is None else interval_min / 60
    w = tau_h + delta_h
    per_step = None
    if replica_groups:
        per_step = max(0.0, 1.0 - (per_day / 24) * (heal_min / 60 + step_s / 3600) / replica_groups)
    return Row(
        gpus=gpus, interruptions_per_day=per_day, mtbf_hours=mtbf_h,
        p_day_without_failure=math.exp(-per_day),
        young_interval_min=math.sqrt(2 * delta_h * mtbf_h) * 60,
        interval_min=tau_h * 60, goodput=goodput(tau_h, delta_h, mtbf_h, restart_h),
        first_order_checkpoint=delta_h / w, first_order_rework=w / 2 / mtbf_h,
        first_order_restart=restart_h / mtbf_h,
        optimal_interval_min=best_h * 60, optimal_goodput=goodput(best_h, delta_h, mtbf_h, restart_h),
        replica_groups=replica_groups, per_step_goodput=per_step)


def render(rows: list[Row], args) -> str:
    out = [f"rate {args.rate_per_gpu_day:.4g} interruptions per GPU-day, checkpoint blocks {args.checkpoint_seconds:g} s, "
           f"restart {args.restart_minutes:g} min, interval "
           + ("optimal" if args.interval is None else f"{args.interval:g} min"), ""]
    head = f"{'GPUs':>8} {'per day':>8} {'MTBF':>9} {'P(quiet day)':>12} {'interval':>9} {'goodput':>8} " \
           f"{'ckpt':>6} {'rework':>6} {'restart':>7}"
    if args.replica_groups:
        head += f" {'per-step':>9}"
    out.append(head)
    for r in rows:
        mtbf = f"{r.mtbf_hours:.2f} h" if r.mtbf_hours >= 1 else f"{r.mtbf_hours * 60:.1f} min"
        line = (f"{r.gpus:>8,} {r.interruptions_per_day:>8.2f} {mtbf:>9} {100 * r.p_day_without_failure:>11.1f}% "
                f"{r.interval_min:>5.1f} min {100 * r.goodput:>7.1f}% {100 * r.first_order_checkpoint:>5.1f}% "
                f"{100 * r.first_order_rework:>5.1f}% {100 * r.first_order_restart:>6.1f}%")
        if r.per_step_goodput is not None:
            line += f" {100 * r.per_step_goodput:>8.1f}%"
        out.append(line)
    out += ["", "goodput: exact under the model; ckpt, rework, restart: first-order shares of the wall time lost",
            "Young's interval sqrt(2 delta M): " + ", ".join(f"{r.young_interval_min:.1f} min" for r in rows)]
    if args.replica_groups:
        out.append(f"per-step: {args.replica_groups} replica groups, {args.heal_minutes:g} min to heal a group, "
                   f"{args.step_seconds:g} s lost step")
    return "\n".join(out) + "\n"


def _number(kind, minimum: float, strict: bool):
    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a valid number: {text!r}") from None
        if not math.isfinite(value) or value < minimum or (strict and value == minimum):
            raise argparse.ArgumentTypeError(f"must be {'>' if strict else '>='} {minimum:g}, got {text}")
        return value
    return parse


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", type=_number(int, 0, True), nargs="+", default=[16384],
                        help="GPUs in the job; several values print one row each (default 16384)")
    parser.add_argument("--rate-per-gpu-day", type=_number(float, 0, True), default=LLAMA3_RATE,
                        help=f"interruptions per GPU per day (default {LLAMA3_RATE:.4g}, from the Llama 3 report)")
    parser.add_argument("--checkpoint-seconds", type=_number(float, 0, False), default=60.0,
                        help="seconds training is blocked per checkpoint, delta (default 60)")
    parser.add_argument("--restart-minutes", type=_number(float, 0, False), default=10.0,
                        help="minutes from a failure to training again, R (default 10)")
    parser.add_argument("--interval", type=_number(float, 0, True), default=None, metavar="MINUTES",
                        help="minutes of training between checkpoints, tau (default: the optimum)")
    parser.add_argument("--replica-groups", type=_number(int, 1, False), default=None,
                        help="also estimate per-step recovery with this many replica groups")
    parser.add_argument("--heal-minutes", type=_number(float, 0, False), default=5.0,
                        help="minutes a failed replica group needs to rejoin (default 5)")
    parser.add_argument("--step-seconds", type=_number(float, 0, False), default=5.0,
                        help="seconds of one training step, lost by the failed group (default 5)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    rows = [model(n, args.rate_per_gpu_day, args.checkpoint_seconds, args.restart_minutes, args.interval,
                  args.replica_groups, args.heal_minutes, args.step_seconds) for n in args.gpus]
    if args.json:
        print(json.dumps([asdict(r) for r in rows], indent=1))
    else:
        sys.stdout.write(render(rows, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
