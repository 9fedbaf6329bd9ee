"""How every benchmark measures and checks (the field's method, e.g. pyperf / torch.utils.benchmark).

* **Repeated and interleaved.** After warm-up runs, the compared implementations run in turn A, B, C, A, B, C, ...
  (:func:`interleaved`), so a burst of load from another process slows both sides instead of one. Each row reports
  the median with its min and max; a speed-up is the median of the per-repetition ratios (paired, so slow drift of
  the machine cancels), again with min and max.
* **Peak and threads in the same process.** :func:`gemm_peak_gflops` measures this machine's float32 matrix
  product rate now; :func:`thread_report` prints every thread setting that changes a timing.
* **Equal results first, with a float32 tolerance.** Two implementations of the same computation differ by the
  order of their sums. A sum of k float32 terms is within γ_k = k·u / (1 − k·u) of the exact one, relative to the
  sum of the terms' magnitudes (u = 2^-24; Higham, *Accuracy and Stability of Numerical Algorithms*, 2002, eq.
  3.4), so two orders differ by at most 2·γ_k, and a chain of S such reductions (layers × passes × SGD steps) by
  2·S·γ_k to first order (:func:`float32_rtol`). This worst case is √k times the typical rounding error, so it
  holds on any CPU or GPU, while a real mistake (another batch order, another learning rate, a wrong layer) moves
  the result by far more.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch

UNIT_ROUNDOFF = 2.0**-24  # u of float32


@dataclass(frozen=True)
class Timing:
    """Repeated measurements of one quantity (seconds, or a ratio)."""

    samples: tuple[float, ...]

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)


def interleaved(fns: dict[str, Callable[[], object]], *, repeats: int = 5, warmup: int = 1,
                per: float = 1.0) -> dict[str, Timing]:
    """Seconds per call of each function (divided by ``per``): ``warmup`` untimed passes over all of them, then
    ``repeats`` timed passes, each running every function once in turn."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            began = time.perf_counter()
            fn()
            samples[name].append((time.perf_counter() - began) / per)
    return {name: Timing(tuple(s)) for name, s in samples.items()}


def speedup(baseline: Timing, other: Timing) -> Timing:
    """Per-repetition ratios baseline / other of two interleaved timings."""
    return Timing(tuple(b / o for b, o in zip(baseline.samples, other.samples)))


def target(what: str, value: float, goal: float) -> str:
    """A target of the benchmark output, e.g. ``>= 2x seed-style: met (2.31)``."""
    return f">= {goal:g}{what}: {'met' if value >= goal else 'MISSED'} ({value:.3g})"


def gemm_peak_gflops(n: int = 2000, repeats: int = 10) -> float:
    """Best-of-``repeats`` float32 n x n matrix product rate (GFLOP/s) at the current thread count."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - began)
    return 2 * n**3 / best / 1e9


def read_bandwidth_gbs(megabytes: int = 256, repeats: int = 5) -> float:
    """Best-of-``repeats`` rate (GB/s) at which the current threads read a float32 tensor far larger than the caches
    (a sum over it): the memory side of the machine, as :func:`gemm_peak_gflops` is its arithmetic side."""
    x = torch.ones(megabytes * 2**20 // 4)
    x.sum()
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        x.sum()
        best = min(best, time.perf_counter() - began)
    return x.numel() * 4 / best / 1e9


@dataclass(frozen=True)
class Breakdown:
    """One profiled call: its wall time, and per group of ops their own seconds and the GFLOP the profiler counts
    for them (matrix products only)."""

    wall: float
    seconds: dict[str, float]
    gflop: dict[str, float]


def op_breakdown(fn: Callable[[], object], groups: dict[str, tuple[str, ...]], other: str,
                 foreach: str | None = None, flops: bool = False) -> Breakdown:
    """Profile one call of ``fn`` (after an untimed one): every op's own time (torch profiler, CPU), summed per group
    of op names (ops named in no group: ``other``), and "Python (wall - ops)" for the rest. ``foreach``: the group
    whose ops run element-wise children one tensor at a time (torch's ``_foreach_*``); their children's time moves
    from ``other`` to it. ``flops``: count the matrix products' FLOP in one more call (counting slows the ops it
    counts several-fold, so that call is not timed)."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        began = time.perf_counter()
        fn()
        wall = time.perf_counter() - began
    seconds: Counter[str] = Counter()
    for event in prof.key_averages():
        group = next((g for g, ops in groups.items() if event.key in ops), other)
        seconds[group] += event.self_cpu_time_total / 1e6
        if group == foreach:
            children = (event.cpu_time_total - event.self_cpu_time_total) / 1e6
            seconds[group] += children
            seconds[other] -= children
    seconds["Python (wall - ops)"] = wall - sum(seconds.values())
    gflop: Counter[str] = Counter()
    if flops:
        with profile(activities=[ProfilerActivity.CPU], with_flops=True) as prof:
            fn()
        for event in prof.key_averages():
            gflop[next((g for g, ops in groups.items() if event.key in ops), other)] += (event.flops or 0) / 1e9
    return Breakdown(wall, dict(seconds), dict(gflop))


def print_breakdown(title: str, b: Breakdown) -> None:
    """One profiled call's groups, largest first, in seconds and % of its wall time."""
    print(f"\n{title}: {b.wall:.3f} s")
    for group, s in sorted(b.seconds.items(), key=lambda item: -item[1]):
        rate = f"  {b.gflop[group] / s:5.0f} GFLOP/s" if b.gflop.get(group) and s > 0 else ""
        print(f"  {group:45s} {s:7.3f} s  {100 * s / b.wall:4.0f}%{rate}")


def thread_report() -> str:
    """Every setting that decides how many threads a timing used."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    env = ", ".join(f"{k}={os.environ.get(k, 'unset')}"
                    for k in ("FEDLIB_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OMP_WAIT_POLICY"))
    return (f"{cores} cores usable; torch intra-op threads {torch.get_num_threads()}, inter-op threads "
            f"{torch.get_num_interop_threads()}; fedlib engine: {torch.get_num_threads()} client workers of 1 "
            f"thread each; {env}")


def float32_rtol(reduction: int, chained: int = 1) -> float:
    """2·S·γ_k: how far two float32 evaluations of the same quantity that sum in different orders can be apart,
    relative to its size, for reductions of length k = ``reduction`` chained S = ``chained`` times (module doc)."""
    gamma = reduction * UNIT_ROUNDOFF / (1 - reduction * UNIT_ROUNDOFF)
    return 2 * chained * gamma


def check_close(what: str, ours: torch.Tensor, ref: torch.Tensor, rtol: float,
                origin: torch.Tensor | None = None) -> float:
    """‖ours − ref‖ / ‖ref − origin‖ (origin: e.g. the start model, so that updates are compared, not weights);
    raises instead of letting a benchmark print a time for results that differ by more than ``rtol``."""
    scale = ref if origin is None else ref - origin
    rel = float((ours - ref).norm() / scale.norm())
    if not rel <= rtol:
        raise AssertionError(f"{what} disagree: relative difference {rel:.2e} > {rtol:.2e} (float32 bound); "
                             "no timing printed")
    return rel


_BUSY = """
import sys, time, torch
torch.set_num_threads({threads})
a = torch.randn(1500, 1500)
end = time.time() + {seconds}
while time.time() < end:
    a @ a
"""


@contextmanager
def busy_neighbour(threads: int = 2, seconds: float = 600.0) -> Iterator[None]:
    """Another process multiplying float32 matrices on ``threads`` threads for the duration of the block (it stops
    by itself after ``seconds`` should this process die)."""
    proc = subprocess.Popen([sys.executable, "-c", _BUSY.format(threads=threads, seconds=seconds)])
    try:
        time.sleep(2.0)  # let it import torch and start multiplying
        yield
    finally:
        proc.kill()
        proc.wait()
