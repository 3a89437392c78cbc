#!/usr/bin/env python
"""Compare accelerator options by the cost of a useful FLOP, and find the break-even of a move.

Each option is one kind of accelerator at the terms you can get it on. The script
turns it into

* useful TFLOP/s per accelerator = dense peak TFLOP/s x the MFU you expect to reach
  on your workload with your software on that hardware;
* cost per accelerator-hour = rental price, or purchase price spread over the
  amortisation period, plus power (kW x PUE x price per kWh) plus the accelerator's
  share of the network and the rest of the cluster (a price per accelerator-hour);
* cost per useful PFLOP-hour (one PFLOP/s sustained for an hour, 3.6e18 FLOPs);
* for a FLOP budget (--flops) on --gpus accelerators: accelerator-hours, days and
  money, plus the value of the calendar time if you give one (--value-per-day);
* the break-even against a baseline (--baseline, default the first option): the
  FLOP budget above which the option's lower cost per FLOP has paid back its
  one-off migration cost (porting kernels, re-validating numerics, the runs that
  prove the new stack). Below it, staying is cheaper.

Two gates come before any of that, and an option that fails one is flagged:

* memory: with --params and --bytes-per-param the model state must fit in the
  --gpus accelerators' memory (memory_gb each);
* interconnect: with --need-domain, the option's scale-up domain (scale_up_domain,
  how many accelerators share the fast link) must be at least that large.

Options come from a JSON or TOML file (--options FILE, a list under "option") or
from --option name=...,peak_tflops=...,... on the command line. Fields:

    name, peak_tflops, mfu                       required
    rental_per_hour                              or: purchase_price, amortisation_years
    utilisation (share of owned hours used, default 1)
    power_kw, pue (default 1), price_per_kwh (default --price-per-kwh)
    overhead_per_hour (network and cluster share, default 0)
    migration_cost (one-off, default 0)
    memory_gb, scale_up_domain                   for the gates

Every number printed is arithmetic on the numbers you give; nothing is looked up.
With --plot FILE (SVG or PNG, needs matplotlib) it also draws each option's total
cost against the FLOP budget, with the break-evens marked.

Example:

    python upgrade_cost.py --flops 8.4e23 --gpus 512 \\
        --option name=H100,peak_tflops=989.5,mfu=0.40,rental_per_hour=2.0 \\
        --option name=B200,peak_tflops=2250,mfu=0.35,rental_per_hour=3.5,migration_cost=150000
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tomllib
from dataclasses import asdict, dataclass, fields
from pathlib import Path

HOURS_PER_YEAR = 8760.0
SECONDS_PER_HOUR = 3600.0
PFLOP_HOUR = 1e15 * SECONDS_PER_HOUR  # FLOPs in one PFLOP/s sustained for an hour


@dataclass
class Option:
    name: str
    peak_tflops: float
    mfu: float
    rental_per_hour: float | None = None
    purchase_price: float | None = None
    amortisation_years: float | None = None
    utilisation: float = 1.0
    power_kw: float = 0.0
    pue: float = 1.0
    price_per_kwh: float | None = None
    overhead_per_hour: float = 0.0
    migration_cost: float = 0.0
    memory_gb: float | None = None
    scale_up_domain: int | None = None

    def check(self) -> None:
        """Raise ValueError with a sentence a reader can act on."""
        where = f"option {self.name!r}"
        if self.peak_tflops <= 0:
            raise ValueError(f"{where}: peak_tflops must be > 0")
        if not 0 < self.mfu <= 1:
            raise ValueError(f"{where}: mfu is a fraction in (0, 1], got {self.mfu}")
        owned = self.purchase_price is not None or self.amortisation_years is not None
        if (self.rental_per_hour is None) == (not owned):
            raise ValueError(f"{where}: give either rental_per_hour or purchase_price with amortisation_years")
        if owned and (self.purchase_price is None or not self.amortisation_years or self.amortisation_years <= 0):
            raise ValueError(f"{where}: purchase_price needs amortisation_years > 0")
        if not 0 < self.utilisation <= 1:
            raise ValueError(f"{where}: utilisation is a fraction in (0, 1], got {self.utilisation}")
        for name in ("rental_per_hour", "purchase_price", "power_kw", "overhead_per_hour", "migration_cost"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{where}: {name} must not be negative")
        if self.pue < 1:
            raise ValueError(f"{where}: pue is at least 1 (facility power / IT power), got {self.pue}")


def parse_option(text: str) -> Option:
    """'name=H100,peak_tflops=989.5,...' -> Option."""
    known = {f.name: f for f in fields(Option)}
    values: dict[str, object] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or key not in known:
            raise ValueError(f"--option: {part.strip()!r} is not key=value with a key among {', '.join(known)}")
        values[key] = value.strip()
    return make_option(values)


def make_option(values: dict[str, object]) -> Option:
    known = {f.name for f in fields(Option)}
    unknown = set(values) - known
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
    if "name" not in values or "peak_tflops" not in values or "mfu" not in values:
        raise ValueError("every option needs name, peak_tflops and mfu")
    converted: dict[str, object] = {}
    for key, value in values.items():
        if key == "name":
            converted[key] = str(value)
        elif key == "scale_up_domain":
            converted[key] = int(value)  # type: ignore[arg-type]
        else:
            try:
                converted[key] = float(value)  # type: ignore[arg-type]
            except (TypeError, ValueError):
                raise ValueError(f"{key} must be a number, got {value!r}") from None
    option = Option(**converted)  # type: ignore[arg-type]
    option.check()
    return option


def load_options(path: Path) -> list[Option]:
    text = path.read_text(encoding="utf-8")
    data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    rows = data.get("option") if isinstance(data, dict) else data
    if not isinstance(rows, list) or not rows:
        raise ValueError(f"{path}: expected a list of options (a JSON list, or [[option]] tables in TOML)")
    return [make_option(dict(row)) for row in rows]


def useful_tflops(o: Option) -> float:
    return o.peak_tflops * o.mfu


def hourly_cost(o: Option, price_per_kwh: float) -> float:
    """Money per accelerator-hour actually used for training."""
    if o.rental_per_hour is not None:
        capital = o.rental_per_hour
    else:
        assert o.purchase_price is not None and o.amortisation_years is not None
        capital = o.purchase_price / (o.amortisation_years * HOURS_PER_YEAR * o.utilisation)
    kwh_price = o.price_per_kwh if o.price_per_kwh is not None else price_per_kwh
    return capital + o.power_kw * o.pue * kwh_price + o.overhead_per_hour


def cost_per_pflop_hour(o: Option, price_per_kwh: float) -> float:
    return hourly_cost(o, price_per_kwh) / (useful_tflops(o) / 1000.0)


def accelerator_hours(o: Option, flops: float) -> float:
    return flops / (useful_tflops(o) * 1e12 * SECONDS_PER_HOUR)


def rate_per_flop(o: Option, price_per_kwh: float, gpus: int, value_per_day: float) -> float:
    """Money per FLOP of budget, counting calendar time at value_per_day."""
    money = hourly_cost(o, price_per_kwh) / (useful_tflops(o) * 1e12 * SECONDS_PER_HOUR)
    days_per_flop = 1.0 / (useful_tflops(o) * 1e12 * SECONDS_PER_HOUR * gpus * 24.0)
    return money + value_per_day * days_per_flop


def break_even_flops(base: Option, new: Option, price_per_kwh: float, gpus: int, value_per_day: float) -> float | None:
    """FLOP budget at which new's migration cost is paid back; None if new never catches up."""
    saving = rate_per_flop(base, price_per_kwh, gpus, value_per_day) - rate_per_flop(new, price_per_kwh, gpus, value_per_day)
    extra = new.migration_cost - base.migration_cost
    if extra <= 0:
        return 0.0 if saving >= 0 else None
    if saving <= 0:
        return None
    return extra / saving


def min_accelerators(o: Option, params: float, bytes_per_param: float) -> int | None:
    if o.memory_gb is None or params <= 0:
        return None
    return math.ceil(params * bytes_per_param / (o.memory_gb * 1e9))


def evaluate(options: list[Option], args: argparse.Namespace) -> list[dict]:
    base = next((o for o in options if o.name == args.baseline), None) if args.baseline else options[0]
    if base is None:
        raise ValueError(f"--baseline {args.baseline!r} is not the name of any option")
    rows = []
    for o in options:
        hours = accelerator_hours(o, args.flops) if args.flops else None
        per_hour = hourly_cost(o, args.price_per_kwh)
        row: dict = {
            "name": o.name,
            "useful_tflops": useful_tflops(o),
            "cost_per_accelerator_hour": per_hour,
            "cost_per_useful_pflop_hour": cost_per_pflop_hour(o, args.price_per_kwh),
            "gates": [],
        }
        if hours is not None:
            days = hours / args.gpus / 24.0
            row.update(accelerator_hours=hours, days=days, money=hours * per_hour + o.migration_cost,
                       time_value=days * args.value_per_day)
            row["total"] = row["money"] + row["time_value"]
        if o is not base:
            flops = break_even_flops(base, o, args.price_per_kwh, args.gpus, args.value_per_day)
            row["break_even_flops"] = flops
        need = min_accelerators(o, args.params, args.bytes_per_param)
        row["min_accelerators_for_state"] = need
        if need is not None and need > args.gpus:
            row["gates"].append(f"memory: the model state needs at least {need} accelerators, --gpus is {args.gpus}")
        if args.need_domain and (o.scale_up_domain is None or o.scale_up_domain < args.need_domain):
            have = "unknown" if o.scale_up_domain is None else o.scale_up_domain
            row["gates"].append(f"interconnect: scale-up domain {have} < {args.need_domain} needed")
        rows.append(row)
    return rows


def fmt(value: float | None, spec: str = ",.2f") -> str:
    return "n/a" if value is None else format(value, spec)


def print_report(rows: list[dict], args: argparse.Namespace, base_name: str) -> None:
    print(f"baseline: {base_name}; power price {args.price_per_kwh} per kWh; {args.gpus} accelerators per run")
    header = f"{'option':<14}{'useful TFLOP/s':>16}{'cost/acc-h':>12}{'cost/PFLOP-h':>14}"
    if args.flops:
        header += f"{'acc-hours':>14}{'days':>9}{'money':>16}{'+time value':>16}"
    print(header)
    for r in rows:
        line = (f"{r['name']:<14}{r['useful_tflops']:>16,.1f}{r['cost_per_accelerator_hour']:>12,.3f}"
                f"{r['cost_per_useful_pflop_hour']:>14,.3f}")
        if args.flops:
            line += f"{r['accelerator_hours']:>14,.0f}{r['days']:>9,.1f}{r['money']:>16,.0f}{r['total']:>16,.0f}"
        print(line)
    for r in rows:
        if "break_even_flops" in r:
            flops = r["break_even_flops"]
            if flops is None:
                print(f"break-even {r['name']} vs {base_name}: never (no saving per FLOP to pay back the migration)")
            else:
                runs = f" = {flops / args.flops:.2f} x --flops" if args.flops else ""
                print(f"break-even {r['name']} vs {base_name}: {flops:.3e} FLOPs "
                      f"({flops / PFLOP_HOUR:,.0f} PFLOP-hours){runs}")
        for gate in r["gates"]:
            print(f"GATE {r['name']}: {gate}")


def plot(options: list[Option], args: argparse.Namespace, rows: list[dict], path: Path) -> None:
    """Total cost (money, migration and time value) against the FLOP budget, one line per option."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "upgrade_cost"  # stable ids: the same inputs give the same file
    import matplotlib.pyplot as plt

    crossings = [r["break_even_flops"] for r in rows if r.get("break_even_flops")]
    top = 2.0 * max([args.flops, *crossings]) if (args.flops or crossings) else 1e24
    budgets = [top * i / 200 for i in range(201)]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    for o in options:
        k = rate_per_flop(o, args.price_per_kwh, args.gpus, args.value_per_day)
        ax.plot([b / PFLOP_HOUR for b in budgets], [(o.migration_cost + k * b) / 1e6 for b in budgets], label=o.name)
    for r, o in zip(rows, options):
        flops = r.get("break_even_flops")
        if flops:
            k = rate_per_flop(o, args.price_per_kwh, args.gpus, args.value_per_day)
            y = (o.migration_cost + k * flops) / 1e6
            ax.plot([flops / PFLOP_HOUR], [y], "ko")
            ax.annotate(f"break-even {o.name}: {flops:.2e} FLOPs", (flops / PFLOP_HOUR, y),
                        textcoords="offset points", xytext=(8, -14))
    if args.flops:
        ax.axvline(args.flops / PFLOP_HOUR, color="grey", linestyle=":", label="planned budget (--flops)")
    extra = f", time valued at {args.value_per_day:,.0f} per day on {args.gpus} accelerators" if args.value_per_day else ""
    ax.set_title(f"Total cost against FLOP budget{extra}", fontsize=10)
    ax.set_xlabel("training budget (PFLOP-hours of useful work)")
    ax.set_ylabel("total cost (millions, money unit of the inputs)")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None} if path.suffix == ".svg" else None)
    plt.close(fig)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {value}")
    return value


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="Fields of an option: see the module docstring (python upgrade_cost.py --help shows this).")
    parser.add_argument("--options", type=Path, help="JSON or TOML file with the options")
    parser.add_argument("--option", action="append", default=[], metavar="K=V,...",
                        help="one option on the command line (repeatable), e.g. name=H100,peak_tflops=989.5,mfu=0.4,rental_per_hour=2")
    parser.add_argument("--flops", type=positive_float, default=0.0, help="training budget in FLOPs, e.g. 8.4e23")
    parser.add_argument("--gpus", type=positive_int, default=1, help="accelerators per run (default 1)")
    parser.add_argument("--price-per-kwh", type=positive_float, default=0.0,
                        help="electricity price for options that give power_kw but no price_per_kwh")
    parser.add_argument("--value-per-day", type=positive_float, default=0.0,
                        help="what finishing one day earlier is worth to you, in the same money unit")
    parser.add_argument("--baseline", help="name of the option you have now (default: the first)")
    parser.add_argument("--params", type=positive_float, default=0.0, help="model parameters, for the memory gate")
    parser.add_argument("--bytes-per-param", type=positive_float, default=16.0,
                        help="bytes of model state per parameter (16 for mixed-precision Adam; default 16)")
    parser.add_argument("--need-domain", type=positive_int, default=0,
                        help="smallest scale-up domain the parallelism plan needs, for the interconnect gate")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--plot", type=Path, metavar="FILE",
                        help="also draw total cost against FLOP budget for every option (SVG or PNG; needs matplotlib)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.options and not args.option:
        parser.error("give --options FILE or at least one --option")
    try:
        options = load_options(args.options) if args.options else []
        options += [parse_option(text) for text in args.option]
        names = [o.name for o in options]
        if len(set(names)) != len(names):
            raise ValueError(f"option names must be unique, got {names}")
        rows = evaluate(options, args)
    except (OSError, ValueError, tomllib.TOMLDecodeError) as exc:
        parser.error(str(exc))
    base_name = args.baseline or options[0].name
    if args.json:
        json.dump({"baseline": base_name, "options": [asdict(o) for o in options], "results": rows}, sys.stdout, indent=2)
        print()
    else:
        print_report(rows, args, base_name)
    if args.plot:
        try:
            plot(options, args, rows, args.plot)
        except ImportError:
            parser.error("--plot needs matplotlib (pip install matplotlib)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
