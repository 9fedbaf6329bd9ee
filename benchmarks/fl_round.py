"""One 50-client FedAvg round (MNIST, MLP 784-200-200-10, E = 1, B = 50): fedlib vs the seed-style loop.

Both run the same rounds from the same W^0 with the same client sampling and batch orders; their models
after one round must agree to 1e-5 before any time is printed. Reports seconds per round, the ratio, and the share of
this machine's measured GEMM peak (training FLOPs counted as 3 x forward FLOPs).
"""

from __future__ import annotations

import dataclasses
import time

import torch

from benchmarks.seed_style import seed_style_fedavg
from fedlib.experiments.common import fresh_model, make_federation
from fedlib.fl import FLConfig, LocalSGD, run_federated

ROUNDS, CLIENTS, PER_ROUND, EPOCHS, BATCH, LR = 5, 100, 50, 1, 50, 0.1


def gemm_peak_gflops(n: int = 2000, repeats: int = 10) -> float:
    """Best-of-``repeats`` float32 n x n matrix product rate at the current thread count."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    for _ in range(3):
        a @ b
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def mlp_round_gflop(samples: int, sizes=(784, 200, 200, 10)) -> float:
    """Training FLOPs of ``samples`` MLP samples: 3 x (2 x multiply-adds of the forward pass)."""
    forward = 2 * sum(a * b for a, b in zip(sizes, sizes[1:]))
    return 3 * forward * samples / 1e9


def run() -> list[dict]:
    fed = make_federation("mnist", "iid", CLIENTS, seed=0)
    config = FLConfig(rounds=ROUNDS, clients_per_round=PER_ROUND, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=0)
    kwargs = dict(clients_per_round=PER_ROUND, epochs=EPOCHS, batch_size=BATCH, lr=LR, seed=0)

    # Equal results first (one round; later rounds amplify float rounding through ReLU flips:
    # 1e-6 after one round, 1e-4 after five), which also warms both up.
    one = dataclasses.replace(config, rounds=1)
    ours = run_federated(fresh_model("mlp", 0), fed.train, fed.clients, None, one).params
    ref = seed_style_fedavg(fresh_model("mlp", 0), fed.train, fed.clients, rounds=1, **kwargs)
    diff = float((ours - ref).abs().max())
    if diff > 1e-5:
        raise AssertionError(f"fedlib and the seed-style loop disagree (max |diff| {diff:.2e}); no timing printed")

    began = time.perf_counter()
    run_federated(fresh_model("mlp", 0), fed.train, fed.clients, None, config)
    t_ours = (time.perf_counter() - began) / ROUNDS
    began = time.perf_counter()
    seed_style_fedavg(fresh_model("mlp", 0), fed.train, fed.clients, rounds=ROUNDS, **kwargs)
    t_ref = (time.perf_counter() - began) / ROUNDS

    scale = [_many_clients(n) for n in (100, 1000)]
    peak = gemm_peak_gflops()
    samples = sum(len(fed.clients[0]) for _ in range(PER_ROUND)) * EPOCHS
    gflop = mlp_round_gflop(samples)
    return [
        {"row": "FL round, seed-style loop", "s_per_round": t_ref, "ratio": 1.0,
         "peak_pct": 100 * gflop / t_ref / peak},
        {"row": "FL round, fedlib engine", "s_per_round": t_ours, "ratio": t_ref / t_ours,
         "peak_pct": 100 * gflop / t_ours / peak, "max_abs_diff": diff},
        *scale,
        {"row": "GEMM peak (2000^2 float32)", "gflops": peak},
    ]


def _many_clients(num_clients: int) -> dict:
    """Seconds per round of the engine with every one of ``num_clients`` IID MNIST clients taking part (one epoch
    of the 60,000 images in total, B = 50): what the round costs as the federation grows at fixed data."""
    fed = make_federation("mnist", "iid", num_clients, seed=0)
    config = FLConfig(rounds=2, clients_per_round=num_clients, local=LocalSGD(EPOCHS, BATCH), lr=LR, seed=0)
    began = time.perf_counter()
    run_federated(fresh_model("mlp", 0), fed.train, fed.clients, None, config)
    seconds = (time.perf_counter() - began) / config.rounds
    return {"row": f"FL round, fedlib, all {num_clients} clients", "s_per_round": seconds, "ratio": float("nan")}
