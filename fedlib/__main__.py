"""Command line: run a chapter without Jupyter, see how far full mode is, register verdicts, or use the DP calculator.

    python -m fedlib run CHAPTER [--mode quick|full] [--seed N] [--out DIR] [--checkpoints DIR]
                                 [--units N] [--budget MINUTES]
    python -m fedlib status [--out DIR]
    python -m fedlib sweep CHAPTER [--seeds 0,1,2,3,4] [--threads 1,2]
    python -m fedlib heldout --seed S [--chapters a,b] [--threads 1]
    python -m fedlib privacy epsilon --sigma S --q Q --steps T --delta D
    python -m fedlib privacy sigma --epsilon E --q Q --steps T --delta D
    python -m fedlib privacy adpdfl --epsilon E --delta D --rounds T --m-tcs M_TCS [--m-e M_E] [--clients M]

User errors exit with status 2 and one line naming the parameter, the value and what is allowed; Ctrl-C exits with
130 after saying where the finished work is kept.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


class UsageError(Exception):
    """A bad argument or environment variable: reported as one line, exit status 2."""


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return value


def _positive_float(text: str) -> float:
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value


def _rate(text: str) -> float:
    value = _positive_float(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def _open_unit(text: str) -> float:
    value = _positive_float(text)
    if value >= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1), got {text}")
    return value


def _int(text: str, low: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < low:
        raise argparse.ArgumentTypeError(f"must be >= {low}, got {text}")
    return value


def _positive_int(text: str) -> int:
    return _int(text, 1)


def _natural(text: str) -> int:
    return _int(text, 0)


def _int_list(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers >= 0, got {text!r}")
    return values


def _chapter_list(text: str) -> list[str]:
    from fedlib.results import CHAPTERS

    names = [v.strip() for v in text.split(",") if v.strip()]
    unknown = [n for n in names if n not in CHAPTERS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"expected comma-separated chapters of {', '.join(CHAPTERS)}, got {text!r}")
    return names


def build_parser() -> argparse.ArgumentParser:
    from fedlib.results import CHAPTERS, RESUMABLE

    parser = argparse.ArgumentParser(prog="python -m fedlib", description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    resumable = ", ".join(RESUMABLE)
    run = sub.add_parser("run", help="run a chapter's experiments and write its results file", description=(
        "Run a chapter and write <out>/<mode>/<chapter>.json. Quick mode (the book's) runs a scaled-down "
        "configuration in minutes; full mode runs the paper's configuration as units, one file each under "
        "<out>/full/<chapter>/units/: finished units are read back, so a full run can be built up over many runs "
        "(--units / --budget) and machines."))
    run.add_argument("chapter", choices=CHAPTERS)
    run.add_argument("--mode", choices=("quick", "full"), default="quick",
                     help="quick: the book's scaled-down run; full: the paper's configuration (default quick)")
    run.add_argument("--out", default=None, help="results root (default: $FEDLIB_RESULTS or the checkout's results/)")
    run.add_argument("--seed", type=_natural, default=0, help="the seed of every random stream (default 0)")
    run.add_argument("--checkpoints", default=None, help=(
        f"folder for per-training-run checkpoints, so an interrupted run resumes inside a unit (chapters that "
        f"resume: {resumable}); a checkpoint of another configuration stops the run with what differs"))
    run.add_argument("--units", type=_natural, default=None, help="full mode: run at most N missing units, then stop")
    run.add_argument("--budget", type=_positive_float, default=None,
                     help="full mode: start no new unit after this many minutes")
    run.add_argument("--only", action="append", default=None, metavar="PATTERN", help=(
        "full mode: compute only units whose id matches this shell pattern, e.g. 'attack/*/one-round/*' "
        "(repeatable; `python -m fedlib status --missing` lists the ids)"))

    status = sub.add_parser("status", help="full mode: units done / total per chapter and the time left")
    status.add_argument("--out", default=None, help="results root (default: $FEDLIB_RESULTS or results/)")
    status.add_argument("--missing", action="store_true", help="also list the ids of the units not run yet")

    sweep = sub.add_parser("sweep", help="register a chapter's quick-mode verdicts: seeds × torch threads")
    sweep.add_argument("chapter", choices=CHAPTERS)
    sweep.add_argument("--seeds", type=_int_list, default=[0, 1, 2, 3, 4], help="default 0,1,2,3,4")
    sweep.add_argument("--threads", type=_int_list, default=[1, 2], help="default 1,2")
    sweep.add_argument("--cores", type=_positive_int, default=os.cpu_count() or 1,
                       help="threads busy at once (default: the CPU count)")

    held = sub.add_parser("heldout", help="test the registered verdicts on a seed no sweep has seen")
    held.add_argument("--seed", type=_natural, required=True, help="a seed outside the sweeps (e.g. 5)")
    held.add_argument("--chapters", type=_chapter_list, default=list(CHAPTERS), help="default: every chapter")
    held.add_argument("--threads", type=_positive_int, default=1, help="torch threads per run (default 1)")
    held.add_argument("--cores", type=_positive_int, default=os.cpu_count() or 1,
                      help="runs side by side, threads counted (default: the CPUs)")
    held.add_argument("--out", default=None, help="results root (default: $FEDLIB_RESULTS or results/)")

    privacy = sub.add_parser("privacy", help="DP calculator (RDP accountant of the sampled Gaussian mechanism)")
    psub = privacy.add_subparsers(dest="quantity", required=True)
    eps = psub.add_parser("epsilon", help="epsilon spent by T steps of the sampled Gaussian mechanism")
    eps.add_argument("--sigma", type=_positive_float, required=True, help="noise multiplier σ")
    sig = psub.add_parser("sigma", help="smallest noise multiplier that keeps T steps within (ε, δ)")
    sig.add_argument("--epsilon", type=_positive_float, required=True, help="target ε")
    adp = psub.add_parser("adpdfl", help="ADPDFL's noise scale σ² of Theorem 8 (eq. 5.5), as claimed (m = M)")
    adp.add_argument("--epsilon", type=_positive_float, required=True, help="target ε (< 2 log(1/δ))")
    adp.add_argument("--delta", type=_open_unit, required=True, help="δ")
    adp.add_argument("--rounds", type=_positive_int, required=True, help="T, communication rounds")
    adp.add_argument("--m-tcs", type=_positive_int, required=True, help="training clients per round")
    adp.add_argument("--m-e", type=_positive_int, default=None, help="gossip receivers per sender (gossip only)")
    adp.add_argument("--clients", type=_positive_int, default=100, help="M, all clients (default 100)")
    for p in (eps, sig):
        p.add_argument("--q", type=_rate, required=True, help="sampling rate (clients per round / clients)")
        p.add_argument("--steps", type=_positive_int, required=True, help="number of steps (rounds)")
        p.add_argument("--delta", type=_open_unit, required=True, help="δ")
        p.add_argument("--conversion", choices=("improved", "classic"), default="improved",
                       help="RDP to (ε, δ) conversion (default: improved, as Opacus)")
    return parser


def _writable(option: str, folder: str | None) -> None:
    """Fail before any work if ``folder`` cannot be created or written."""
    if folder is None:
        return
    path = Path(folder)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".fedlib-write-test-{os.getpid()}"
        probe.write_text("")
        probe.unlink()
    except OSError as err:
        raise UsageError(f"{option}: {folder} is not a writable folder ({err.strerror or err})") from None


def _privacy(args: argparse.Namespace) -> int:
    from fedlib.privacy import RDPAccountant, calibrate_noise_multiplier

    if args.quantity == "adpdfl":
        import math

        from fedlib.algorithms.adpdfl import theorem8_sigma2

        s2 = theorem8_sigma2(epsilon=args.epsilon, delta=args.delta, rounds=args.rounds, m_tcs=args.m_tcs,
                             num_clients=args.clients, m_e=args.m_e,
                             protocol="gossip" if args.m_e is not None else "pseudo_central")
        print(f"{s2:.6g}")
        print(f"(σ = {math.sqrt(s2):.6g}; per-coordinate noise std 2Cσ/n_i)", file=sys.stderr)
        return 0
    if args.quantity == "epsilon":
        acc = RDPAccountant()
        acc.step(noise_multiplier=args.sigma, sample_rate=args.q, steps=args.steps)
        eps, order = acc.get_privacy_spent(args.delta, args.conversion)
        if eps == float("inf"):
            raise ValueError(f"--sigma {args.sigma:g}: the noise is negligible, ε is unbounded (no finite guarantee)")
        print(f"{eps:.6f}")
        edge = {max(acc.orders): "largest", min(acc.orders): "smallest"}.get(order)
        print(f"(optimal Rényi order {order:g}" + ("" if edge is None else
              f", the {edge} of the accountant's orders: ε is a valid upper bound, but an order beyond them might "
              "give a smaller one") + ")", file=sys.stderr)
    else:
        sigma = calibrate_noise_multiplier(target_epsilon=args.epsilon, delta=args.delta, sample_rate=args.q,
                                           steps=args.steps, conversion=args.conversion)
        print(f"{sigma:.6f}")
    return 0


def _status(args: argparse.Namespace) -> int:
    from fedlib.experiments import CHAPTER_MODULES, run_chapter, supports
    from fedlib.experiments.common import device
    from fedlib.data import DatasetNotFoundError
    from fedlib.units import estimate_left

    here = device()
    print(f"{'chapter':14} {'units done':>11}{'':19}  {f'est. left on {here} (from finished units like them)':>49}  blocked")
    unplanned, unfound = 0, 0
    for chapter in CHAPTER_MODULES:
        if not supports(chapter, "units"):
            print(f"{chapter:14} {'(not split into units yet)':>24}")
            continue
        try:  # planning reads the chapter's data (its partitions fix the units); one missing dataset spares the rest
            summary = run_chapter(chapter, "full", out=args.out, plan_only=True).units
        except DatasetNotFoundError as err:
            unplanned += 1
            print(f"{chapter:14} {'?':>10}  {'cannot plan without its data':>49}  {str(err).splitlines()[0]}")
            continue
        left_text = estimate_left(summary, here).text()
        blocked = "; ".join(f"{u}: {r.splitlines()[0]}" for u, r in summary["blocked"].items()) or "–"
        # a blocked group's units are not in the total: say so, or "0 / 3" reads as a chapter of three units
        n = len(summary["blocked"])
        groups = f" +{n} group{'s' * (n != 1)} blocked" if n else ""
        unfound += any(r.startswith("Dataset ") and " was not found under " in r for r in summary["blocked"].values())
        print(f"{chapter:14} {summary['done']:>4} / {summary['total']:<4}{groups:<19}  {left_text:>49}  {blocked}")
        if args.missing:
            print("".join(f"    {unit}\n" for unit in summary["missing"]), end="")
    if unfound:
        print(f"{unfound} chapter(s) have unit groups blocked by a dataset the data root lacks (the totals leave their "
              "units out): FEDLIB_DATA or internet access would unblock them")
    if unplanned:
        print(f"{unplanned} chapter(s) could not be planned: point FEDLIB_DATA at the data root (torchvision's layout; "
              "`bash scripts/setup.sh` uses ../shared/data when it exists) or run once with internet access")
    return 1 if unplanned else 0


def _run(args: argparse.Namespace) -> int:
    from fedlib.experiments import run_chapter, supports
    from fedlib.experiments.common import device
    from fedlib.ledger import format_value
    from fedlib.units import Budget, estimate_left

    if args.mode == "quick" and (args.units is not None or args.budget is not None or args.only is not None):
        raise UsageError("--units/--budget/--only: only full mode is split into units; quick mode runs whole")
    _writable("--out", args.out)
    _writable("--checkpoints", args.checkpoints)
    budget = None
    if args.units is not None or args.budget is not None or args.only is not None:
        budget = Budget(units=args.units, seconds=None if args.budget is None else args.budget * 60,
                        only=None if args.only is None else tuple(args.only))
    if args.mode == "full" and supports(args.chapter, "units"):
        plan = run_chapter(args.chapter, "full", seed=args.seed, out=args.out, plan_only=True).units
        here = device()
        left = estimate_left(plan, here)
        print(f"{args.chapter} full: {plan['done']}/{plan['total']} units done, {plan['not_run']} to run"
              + ("" if not left.estimated else f" (about {left.text()} on {here}, from the finished units like "
                                               f"them)")
              + "".join(f"\n  blocked: {u}: {r}" for u, r in plan["blocked"].items()))
    try:
        results = run_chapter(args.chapter, args.mode, seed=args.seed, out=args.out, progress=True,
                              checkpoints=args.checkpoints, budget=budget)
    except KeyboardInterrupt:
        where = f" and checkpoints in {Path(args.checkpoints) / args.mode}" if args.checkpoints else ""
        units = " finished units are kept" if args.mode == "full" else " nothing of this run was written"
        print(f"\ninterrupted:{units}{where}; run the same command again to resume", file=sys.stderr)
        return 130
    print(f"wrote {results.path(args.out)} in {results.elapsed_s:.1f} s")
    if results.units.get("total"):
        u = results.units
        print(f"units: {u['done']}/{u['total']} done ({u['computed']} computed now), {u['not_run']} not run yet, "
              f"{len(u['blocked'])} blocked")
    for c in results.claims:
        print(f"  [{c['outcome']}] {c['key']}: {format_value(c['value'], c['unit'])} ({c['metric']})")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "privacy":  # NumPy/SciPy only: answers in well under a second
        try:
            return _privacy(args)
        except ValueError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    from fedlib.data import DatasetNotFoundError

    try:
        from fedlib.experiments.common import set_threads

        set_threads()
        if args.command == "status":
            return _status(args)
        if args.command == "sweep":
            from fedlib.sweep import sweep

            sweep(args.chapter, seeds=args.seeds, threads=args.threads, cores=args.cores)
            return 0
        if args.command == "heldout":
            from fedlib.sweep import heldout

            record = heldout(args.chapters, args.seed, threads=args.threads, cores=args.cores, out=args.out)
            for chapter, entry in record["chapters"].items():
                print(f"{chapter}: {entry['decisive'] - len(entry['disagree'])} of {entry['decisive']} decisive "
                      f"verdicts hold at seed {args.seed}" + "".join(f"\n  {d}" for d in entry["disagree"]))
            return 0
        return _run(args)
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except (ValueError, DatasetNotFoundError) as err:  # a configuration, file or environment fedlib refuses
        print(f"error: {str(err).splitlines()[0]}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
