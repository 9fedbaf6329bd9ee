"""Run every benchmark and print one table: ``python -m benchmarks`` (add ``flower`` to include Flower's
simulation engine, which needs ``pip install -r benchmarks/requirements-flower.txt``; without it that row says it
was skipped; add ``--out FILE.json`` to keep every repetition, the header and the targets as data). ``python -m
benchmarks flower_forms`` times one algorithm as fedlib's engine, Flower simulation and Flower deployment and writes
``results/flower.json`` (see :mod:`benchmarks.flower_forms`).

Set ``FEDLIB_DATA`` to the data root; the thread count comes from ``FEDLIB_NUM_THREADS`` (default 2). Every row
checks that the compared implementations give the same result (to a float32 bound) before it prints a time, and
every time is the median of 5 interleaved repetitions after a warm-up, with min and max (:mod:`benchmarks.timing`).
"""

from __future__ import annotations

import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import torch

from benchmarks import (attacks, batched_cnn, cnn_layout, dpsgd_step, evaluate_many, fl_round, gpu_round,
                        unlearning_round)
from benchmarks.timing import Timing, thread_report
from fedlib.experiments.common import set_threads

ROWS = [fl_round, attacks, dpsgd_step, unlearning_round, evaluate_many, cnn_layout, batched_cnn, gpu_round]


def _spread(t: Timing, unit: str = "", digits: int = 4) -> str:
    return f"{t.median:.{digits}f}{unit} [{t.min:.{digits}f}-{t.max:.{digits}f}]"


def main(argv: list[str]) -> int:
    if argv[:1] == ["flower_forms"]:
        from benchmarks import flower_forms

        set_threads()
        return flower_forms.main()
    rows = list(ROWS)
    if "flower" in argv:
        from benchmarks import flower_round

        rows.insert(1, flower_round)
    out = Path(argv[argv.index("--out") + 1]) if "--out" in argv else None
    set_threads()
    header = {"machine": f"{platform.machine()}, {platform.processor() or 'cpu'}; torch {torch.__version__}"
              + (f"; {torch.cuda.get_device_name()}" if torch.cuda.is_available() else ""),
              "date": time.strftime("%Y-%m-%d %H:%M"), "threads": thread_report()}
    print(f"machine: {header['machine']}; {header['date']}")
    print(f"threads: {header['threads']}")
    done: list[dict] = []
    print(f"{'benchmark':60s} {'s/step median [min-max]':>28s} {'speed-up [min-max]':>22s}  "
          f"{'% of GEMM peak':26s} target (step: round / iteration)")
    for module in rows:
        for row in module.run():
            done.append({k: (dataclasses.asdict(v) if isinstance(v, Timing) else v) for k, v in row.items()})
            if row.get("skipped"):
                print(row["row"])
            elif "gflops" in row:
                print(f"{row['row']:60s} {row['gflops']:9.1f} GFLOP/s")
            else:
                ratio = _spread(row["ratio"], "x", 2) if "ratio" in row else ""
                print(f"{row['row']:60s} {_spread(row['time']):>28s} {ratio:>22s}  {row.get('peak', ''):26s} "
                      f"{row.get('target', '')}")
                if "check" in row:
                    print(f"{'':60s}   {row['check']}")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({**header, "rows": done}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
