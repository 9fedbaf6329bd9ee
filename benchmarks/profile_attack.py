"""Where the attack row of :mod:`benchmarks.attacks` spends its time: ``python -m benchmarks.profile_attack``.

Both sides on one thread under the torch profiler (each op's own time, grouped; Python = wall − time inside ops),
then two floors for fedlib's batched attacks, from this machine's rates measured in the same process:

* **memory**: every attack has its own target gradient (3.8 MB for the benchmark's MLP), and each iteration must
  read it at least twice — once for ⟨g, G⟩ = Σ D ⊙ (A Gᵀ) and once in its backward pass, D G — at no more than the
  rate one thread reads memory (:func:`~benchmarks.timing.read_bandwidth_gbs`);
* **arithmetic**: the GFLOP the profiler counts for the matrix products, at the one-thread GEMM peak.

The larger floor bounds how fast any implementation of the same objective can be; the one-at-a-time loop's measured
time divided by it bounds the speed-up any batching can reach on this machine.
"""

from __future__ import annotations

import torch

from benchmarks.attacks import ITERATIONS, problem
from benchmarks.timing import gemm_peak_gflops, op_breakdown, print_breakdown, read_bandwidth_gbs, thread_report
from fedlib.experiments.common import set_threads

GROUPS = {
    "matrix products (mm, addmm, bmm, matmul)": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                                                 "aten::matmul"),
    "reductions (sum, norm, dot)": ("aten::sum", "aten::norm", "aten::linalg_vector_norm", "aten::dot"),
}
OTHERS = "element-wise (activations, softmax, masks, TV, Adam)"


def main() -> None:
    set_threads()
    torch.set_num_threads(1)
    print(thread_report())
    peak, bandwidth = gemm_peak_gflops(), read_bandwidth_gbs()
    pb = problem()
    attacks = len(pb.x0)
    weights = [n for n, t in pb.targets.items() if t.ndim == 3]
    target_mb = sum(pb.targets[n][0].numel() for n in weights) * 4 / 1e6
    print(f"1 thread: GEMM peak {peak:.0f} GFLOP/s, memory read {bandwidth:.1f} GB/s; {attacks} attacks x "
          f"{ITERATIONS} iterations; each attack's weight-gradient target {target_mb:.2f} MB")
    ours = op_breakdown(pb.batched, GROUPS, OTHERS, flops=True)
    ref = op_breakdown(pb.one_at_a_time, GROUPS, OTHERS)
    steps = attacks * ITERATIONS
    print_breakdown(f"fedlib batched, profiled ({1e3 * ours.wall / steps:.2f} ms per attack-iteration)", ours)
    print_breakdown(f"one at a time, profiled ({1e3 * ref.wall / steps:.2f} ms per attack-iteration)", ref)
    memory = 2 * target_mb * 1e6 / (bandwidth * 1e9)
    arithmetic = sum(ours.gflop.values()) / ITERATIONS / attacks / peak
    floor = max(memory, arithmetic)
    print(f"\nfloors per attack-iteration: memory (targets read twice) {1e3 * memory:.2f} ms, arithmetic "
          f"{1e3 * arithmetic:.2f} ms")
    print(f"fedlib batched: {1e3 * ours.wall / steps:.2f} ms = {ours.wall / steps / floor:.1f}x the floor; "
          f"one at a time / floor = {ref.wall / steps / floor:.1f}x: the most any batching of this objective "
          f"can gain here (profiled ratio {ref.wall / ours.wall:.2f}x)")


if __name__ == "__main__":
    main()
