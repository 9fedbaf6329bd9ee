"""One 50-client FedAvg round (MNIST, 50 of 100 IID clients × 600 samples, MLP 784-200-200-10, E = 1, B = 50):
the seed-style loop vs fedlib's engine, one client at a time (the default) and with ``client_batch=5``; then the
same round with a busy neighbour (another process multiplying matrices on 2 threads); then every one of 100 or
1,000 clients in a round (one MNIST epoch in total).

Every timed call is one round from the same W^0 with the same clients and batch orders. Before any time is printed
the three must agree to the float32 bound of :mod:`benchmarks.timing` (compared as updates W^0 − W^1: the longest
reduction is the 784 inputs, chained 3 passes × 3 layers × 12 steps). The share of this machine's GEMM peak counts
the FLOPs the round executes: forward, weight gradients and the input gradients of layers 2-3 (2.2 × the forward
pass, 26.4 GFLOP); the 3 × forward convention (35.8 GFLOP) is printed beside it.
"""

from __future__ import annotations

import functools
import itertools

import torch

from benchmarks.seed_style import seed_style_fedavg
from benchmarks.timing import busy_neighbour, check_close, float32_rtol, gemm_peak_gflops, interleaved, speedup, target
from fedlib.experiments.common import fresh_model, make_federation
from fedlib.fl import FLConfig, LocalSGD, get_flat, run_federated

CLIENTS, PER_ROUND, EPOCHS, BATCH, LR, CLIENT_BATCH, SIZES = 100, 50, 1, 50, 0.1, 5, (784, 200, 200, 10)


def executed_gflop(samples: int, sizes=SIZES) -> float:
    """FLOPs of ``samples`` training samples as the engine runs them: forward, weight gradients, and the input
    gradients of every layer but the first (2 per multiply-add)."""
    macs = [a * b for a, b in itertools.pairwise(sizes)]
    return 2 * (2 * sum(macs) + sum(macs[1:])) * samples / 1e9


def convention_gflop(samples: int, sizes=SIZES) -> float:
    """The usual training-FLOP convention: 3 × the forward pass."""
    return 3 * 2 * sum(a * b for a, b in itertools.pairwise(sizes)) * samples / 1e9


def run() -> list[dict]:
    fed = make_federation("mnist", "iid", CLIENTS, seed=0)
    config = FLConfig(rounds=1, clients_per_round=PER_ROUND, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=0)
    w0 = get_flat(fresh_model("mlp", 0))

    def seed_style() -> torch.Tensor:
        return seed_style_fedavg(fresh_model("mlp", 0), fed.train, fed.clients, rounds=1,
                                 clients_per_round=PER_ROUND, epochs=EPOCHS, batch_size=BATCH, lr=LR, seed=0)

    fns = {"seed": seed_style, "loop": functools.partial(_round, fed, config, 1),
           "batched": functools.partial(_round, fed, config, CLIENT_BATCH)}
    steps = -(-len(fed.clients[0]) // BATCH)
    rtol = float32_rtol(SIZES[0], chained=3 * (len(SIZES) - 1) * steps * EPOCHS)
    ref = fns["seed"]()
    diffs = {name: check_close(f"fedlib ({name}) and the seed-style loop", fns[name](), ref, rtol, origin=w0)
             for name in ("loop", "batched")}

    peak = gemm_peak_gflops()
    times = interleaved(fns)
    with busy_neighbour():
        loaded = interleaved(fns)
    peak = max(peak, gemm_peak_gflops())  # the least disturbed of two measurements
    samples = PER_ROUND * len(fed.clients[0]) * EPOCHS
    work, conv = executed_gflop(samples), convention_gflop(samples)

    def pct(t: float) -> str:
        return f"{100 * work / t / peak:.0f}% ({100 * conv / t / peak:.0f}% by 3x fwd)"

    names = {"seed": "FL round, seed-style loop", "loop": "FL round, fedlib (one client at a time)",
             "batched": f"FL round, fedlib client_batch={CLIENT_BATCH}"}
    rows = [{"row": names["seed"], "time": times["seed"], "peak": pct(times["seed"].median)}]
    for name in ("loop", "batched"):
        ratio, share = speedup(times["seed"], times[name]), 100 * work / times[name].median / peak
        rows.append({"row": names[name], "time": times[name], "ratio": ratio, "peak": pct(times[name].median),
                     "target": f"{target('x seed-style', ratio.median, 2)}; {target('% of peak', share, 50)}",
                     "check": f"updates agree to {diffs[name]:.1e} (bound {rtol:.1e})"})
    rows.append({"row": names["seed"] + ", busy neighbour", "time": loaded["seed"]})
    for name in ("loop", "batched"):
        rows.append({"row": names[name] + ", busy neighbour", "time": loaded[name],
                     "ratio": speedup(loaded["seed"], loaded[name])})
    rows += _many_clients()
    rows.append({"row": f"GEMM peak (2000^2 float32, {torch.get_num_threads()} threads)", "gflops": peak})
    return rows


def _round(fed, config: FLConfig, client_batch: int) -> torch.Tensor:
    """The engine's model after one round from W^0."""
    return run_federated(fresh_model("mlp", 0), fed.train, fed.clients, None, config,
                         client_batch=client_batch).params


def _many_clients() -> list[dict]:
    """Seconds per round with every one of 100 or 1,000 IID MNIST clients taking part (one epoch of the 60,000
    images in total, B = 50): what a round costs as the federation grows at fixed data, one client at a time and
    batched."""
    rows = []
    for num_clients in (100, 1000):
        fed = make_federation("mnist", "iid", num_clients, seed=0)
        config = FLConfig(rounds=1, clients_per_round=num_clients, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=0)
        fns = {k: functools.partial(_round, fed, config, k) for k in (1, CLIENT_BATCH)}
        times = interleaved(fns)
        rows.append({"row": f"FL round, all {num_clients} clients, fedlib one at a time", "time": times[1]})
        rows.append({"row": f"FL round, all {num_clients} clients, fedlib client_batch={CLIENT_BATCH}",
                     "time": times[CLIENT_BATCH], "ratio": speedup(times[1], times[CLIENT_BATCH])})
    return rows


if __name__ == "__main__":
    for row in run():
        print(row)
