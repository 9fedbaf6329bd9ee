"""Run every benchmark and print one table: ``python -m benchmarks`` (add ``flower`` to include Flower's
simulation engine, which needs ``pip install -r benchmarks/requirements-flower.txt``). ``python -m benchmarks
flower_forms`` times one algorithm as fedlib's engine, Flower simulation and Flower deployment and writes
``results/flower.json`` (see :mod:`benchmarks.flower_forms`).

Set ``FEDLIB_DATA`` to the data root; the thread count comes from ``FEDLIB_NUM_THREADS`` (default 2). Every row
checks that the compared implementations give the same result before it prints a time.
"""

from __future__ import annotations

import math
import platform
import sys

import torch

from benchmarks import attacks, dpsgd_step, fl_round, gpu_round, unlearning_round
from fedlib.experiments.common import set_threads

ROWS = [fl_round, attacks, dpsgd_step, unlearning_round, gpu_round]


def main(argv: list[str]) -> int:
    if argv[:1] == ["flower_forms"]:
        from benchmarks import flower_forms

        set_threads()
        return flower_forms.main()
    rows = list(ROWS)
    if "flower" in argv:
        from benchmarks import flower_round

        rows.insert(1, flower_round)
    threads = set_threads()
    print(f"machine: {platform.machine()}, {platform.processor() or 'cpu'}, {torch.get_num_threads()} threads; "
          f"torch {torch.__version__}" + (f"; {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""))
    print(f"{'benchmark':52s} {'s/step':>9s} {'ratio':>8s} {'% GEMM peak':>12s}  (step: round / iteration)")
    for module in rows:
        for row in module.run():
            if row.get("skipped"):
                print(row["row"])
            elif "gflops" in row:
                print(f"{row['row']:52s} {row['gflops']:9.1f} GFLOP/s ({threads} threads)")
            else:
                peak = f"{row['peak_pct']:11.0f}%" if "peak_pct" in row else ""
                ratio = "" if math.isnan(row["ratio"]) else f"{row['ratio']:7.2f}x"
                print(f"{row['row']:52s} {row['s_per_round']:9.4f} {ratio:>8s} {peak}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
