"""Command line: run a chapter without Jupyter, or use the DP calculator.

    python -m fedlib run CHAPTER --mode quick|full [--out DIR] [--seed N]
    python -m fedlib privacy epsilon --sigma S --q Q --steps T --delta D
    python -m fedlib privacy sigma --epsilon E --q Q --steps T --delta D
    python -m fedlib privacy adpdfl --epsilon E --delta D --rounds T --m-tcs M_TCS [--m-e M_E] [--clients M]
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "privacy":
        from fedlib.privacy import RDPAccountant, calibrate_noise_multiplier

        if args.quantity == "adpdfl":
            import math

            from fedlib.algorithms.adpdfl import theorem8_sigma2

            try:
                s2 = theorem8_sigma2(epsilon=args.epsilon, delta=args.delta, rounds=args.rounds, m_tcs=args.m_tcs,
                                     num_clients=args.clients, m_e=args.m_e,
                                     protocol="gossip" if args.m_e is not None else "pseudo_central")
            except ValueError as err:
                print(f"error: {err}", file=sys.stderr)
                return 2
            print(f"{s2:.6g}")
            print(f"(σ = {math.sqrt(s2):.6g}; per-coordinate noise std 2Cσ/n_i)", file=sys.stderr)
            return 0
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
