"""Where the FL round of :mod:`benchmarks.fl_round` spends its time: ``python -m benchmarks.profile_round``.

One worker on one thread, under the torch profiler: each op's own time, grouped (matrix products; element-wise
work of the forward and backward passes; the optimiser's parameter updates; data gathers; parameter copies between
the flat vector and the model, and the divergence check), and Python = wall time − time inside ops. Then the same
round, unprofiled, on 1 and 2 workers: what the second worker adds beyond halving the time is lost to hand-offs
between the threads (the GIL, taken and released around every op) and to the shared caches and memory bus.
"""

from __future__ import annotations

import torch

from benchmarks.fl_round import BATCH, CLIENT_BATCH, CLIENTS, EPOCHS, LR, PER_ROUND, executed_gflop
from benchmarks.timing import Breakdown, gemm_peak_gflops, interleaved, op_breakdown, print_breakdown, thread_report
from fedlib.experiments.common import fresh_model, make_federation, set_threads
from fedlib.fl import FLConfig, LocalSGD, run_federated

GROUPS = {
    "matrix products": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"),
    "optimiser updates": ("aten::_foreach_add_", "aten::_foreach_mul_"),
    "data gathers (batch order)": ("aten::index_select", "aten::randperm", "aten::stack"),
    "parameter copies, divergence check": ("aten::copy_", "aten::cat", "aten::sub", "aten::clone", "aten::aminmax",
                                           "aten::repeat"),
}
OTHERS = "element-wise (activations, softmax, masks, sums)"


def breakdown(client_batch: int) -> Breakdown:
    """Profiled wall time of one round (1 worker, 1 thread) and seconds per group of ops."""
    fed = make_federation("mnist", "iid", CLIENTS, seed=0)
    config = FLConfig(rounds=1, clients_per_round=PER_ROUND, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=0)

    def round_() -> None:
        run_federated(fresh_model("mlp", 0), fed.train, fed.clients, None, config, workers=1,
                      client_batch=client_batch)

    return op_breakdown(round_, GROUPS, OTHERS, foreach="optimiser updates")


def main() -> None:
    threads = set_threads()
    print(thread_report())
    torch.set_num_threads(1)
    fed = make_federation("mnist", "iid", CLIENTS, seed=0)
    work = executed_gflop(PER_ROUND * len(fed.clients[0]) * EPOCHS)
    peak1 = gemm_peak_gflops()
    print(f"1-thread GEMM peak {peak1:.0f} GFLOP/s; the round executes {work:.1f} GFLOP = {work / peak1:.3f} s at "
          "that rate")
    for k in (1, CLIENT_BATCH):
        print_breakdown(f"client_batch={k}, 1 worker, 1 thread, profiled", breakdown(k))
    torch.set_num_threads(threads)
    config = FLConfig(rounds=1, clients_per_round=PER_ROUND, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=0)
    fns = {(w, k): (lambda w=w, k=k: run_federated(fresh_model("mlp", 0), fed.train, fed.clients, None, config,
                                                   workers=w, client_batch=k))
           for w in (1, threads) for k in (1, CLIENT_BATCH)}
    times = interleaved(fns)
    print(f"\nunprofiled, median [min-max] of 5 interleaved rounds ({threads} torch threads in the main process):")
    for (w, k), t in times.items():
        print(f"  {w} worker(s), client_batch={k}: {t.median:.3f} s [{t.min:.3f}-{t.max:.3f}]")
    for k in (1, CLIENT_BATCH):
        one, many = times[(1, k)].median, times[(threads, k)].median
        print(f"  client_batch={k}: {threads} workers reach {one / many:.2f}x of 1 worker; "
              f"{1 - one / threads / many:.0%} of their time is lost beyond perfect scaling")


if __name__ == "__main__":
    main()
