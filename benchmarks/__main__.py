"""Run every benchmark and print one table: ``python -m benchmarks``.

Set ``FEDLIB_DATA`` to the data root; the thread count comes from ``FEDLIB_NUM_THREADS`` (default 2).
"""

from __future__ import annotations

import platform

import torch

from benchmarks import attacks, fl_round, unlearning_round
from fedlib.experiments.common import set_threads

ROWS = [fl_round, attacks, unlearning_round]


def main() -> int:
    threads = set_threads()
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}; torch {torch.__version__}, "
          f"{threads} threads")
    print(f"{'benchmark':32s} {'s/step':>9s} {'ratio':>7s} {'% GEMM peak':>12s}  (step: FL round / attack iteration)")
    for module in ROWS:
        for row in module.run():
            if "gflops" in row:
                print(f"{row['row']:32s} {row['gflops']:9.1f} GFLOP/s")
                continue
            peak = f"{row['peak_pct']:11.0f}%" if "peak_pct" in row else ""
            print(f"{row['row']:32s} {row['s_per_round']:9.4f} {row['ratio']:6.2f}x {peak}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
