"""Command line: run a chapter without Jupyter, or use the DP calculator.

    python -m fedlib run CHAPTER --mode quick|full [--out DIR] [--seed N]
    python -m fedlib privacy epsilon --sigma S --q Q --steps T --delta D
    python -m fedlib privacy sigma --epsilon E --q Q --steps T --delta D
"""

from __future__ import annotations

import argparse
import sys


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from fedlib.experiments import CHAPTER_MODULES

    parser = argparse.ArgumentParser(prog="python -m fedlib", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a chapter's experiments and write its results file")
    run.add_argument("chapter", choices=sorted(CHAPTER_MODULES))
    run.add_argument("--mode", choices=("quick", "full"), default="quick")
    run.add_argument("--out", default=None, help="results root (default: $FEDLIB_RESULTS or ./results)")
    run.add_argument("--seed", type=int, default=0)
    run.add_argument("--checkpoints", default=None,
                     help="folder for per-run checkpoints: an interrupted chapter run resumes from them")

    privacy = sub.add_parser("privacy", help="DP calculator (RDP accountant of the sampled Gaussian mechanism)")
    psub = privacy.add_subparsers(dest="quantity", required=True)
    eps = psub.add_parser("epsilon", help="epsilon spent by T steps of the sampled Gaussian mechanism")
    eps.add_argument("--sigma", type=_positive_float, required=True, help="noise multiplier σ")
    sig = psub.add_parser("sigma", help="smallest noise multiplier that keeps T steps within (ε, δ)")
    sig.add_argument("--epsilon", type=_positive_float, required=True, help="target ε")
    for p in (eps, sig):
        p.add_argument("--q", type=_rate, required=True, help="sampling rate (clients per round / clients)")
        p.add_argument("--steps", type=_positive_int, required=True, help="number of steps (rounds)")
        p.add_argument("--delta", type=_open_unit, required=True, help="δ")
        p.add_argument("--conversion", choices=("improved", "classic"), default="improved",
                       help="RDP to (ε, δ) conversion (default: improved, as Opacus)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "privacy":
        from fedlib.privacy import RDPAccountant, calibrate_noise_multiplier

        if args.quantity == "epsilon":
            acc = RDPAccountant()
            acc.step(noise_multiplier=args.sigma, sample_rate=args.q, steps=args.steps)
            eps, order = acc.get_privacy_spent(args.delta, args.conversion)
            print(f"{eps:.6f}")
            print(f"(optimal Rényi order {order:g})", file=sys.stderr)
        else:
            sigma = calibrate_noise_multiplier(target_epsilon=args.epsilon, delta=args.delta, sample_rate=args.q,
                                               steps=args.steps, conversion=args.conversion)
            print(f"{sigma:.6f}")
        return 0

    from fedlib.experiments import run_chapter
    from fedlib.experiments.common import set_threads
    from fedlib.results import verdict

    set_threads()
    results = run_chapter(args.chapter, args.mode, seed=args.seed, out=args.out, progress=True,
                          checkpoints=args.checkpoints)
    print(f"wrote {results.path(args.out)} in {results.elapsed_s:.1f} s")
    for claim in results.claims:
        print(f"  [{verdict(claim)}] {claim['text']}: {claim['evidence']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
