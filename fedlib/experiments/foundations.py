"""Chapter "Foundations" (thesis 001, ch. 2): FedAvg, clipping and the Gaussian mechanism, ε over
rounds, and local vs central DP — plus the accountant checked against the thesis's own budgets.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import torch

from fedlib.experiments.audit import add_chapter_audit
from fedlib.experiments.common import first_round_updates, fresh_model, make_federation
from fedlib.fl import Algorithm, CentralGaussian, ClipUpdate, FLConfig, GaussianNoise, LocalSGD, run_federated
from fedlib.privacy import (
    DEFAULT_ORDERS,
    MOMENTS_ORDERS,
    aggregate_noise_std,
    classic_gaussian_std,
    clip_rows,
    compute_rdp,
    epsilon_curve,
    gaussian_noise,
    rdp_to_delta,
    rdp_to_epsilon,
)
from fedlib.results import Results
from fedlib.rng import make_generator


@dataclass(frozen=True)
class FoundationsConfig:
    """Everything the chapter runs; QUICK fits CI (2 cores), FULL is thesis Table 3.3's FedAvg setting."""

    dataset: str = "mnist"
    model: str = "mlp"
    # FedAvg, IID vs 2 label shards per client (thesis §2.1.2, §3.3 partition)
    num_clients: int = 100
    clients_per_round: int = 10
    rounds: int = 30
    local_epochs: int = 1
    batch_size: int = 50
    lr: float = 0.1
    # client-level DP: MNIST x10 gives 1,000 clients of 600 samples (thesis §3.2.2)
    dp_repeat: int = 10
    dp_num_clients: int = 1000
    dp_clients_per_round: int = 100
    dp_rounds: int = 10
    clip: float = 1.0
    noise_multiplier: float = 1.0
    delta: float = 1e-5
    # accountant curves
    curve_sigmas: tuple[float, ...] = (0.7, 1.0, 2.0, 4.0)
    curve_rounds: int = 300
    noise_draws: int = 200_000


QUICK = FoundationsConfig()
FULL = FoundationsConfig(clients_per_round=100, rounds=380, dp_rounds=100)

#: Thesis numbers this chapter checks (Table 3.1, Table 3.3, spec §3.P) and Opacus's published reference.
ACCOUNTANT_CASES = [
    dict(case="Opacus reference (accountants_test.py)", q=0.04, sigma=1.5, steps=2250, delta=1e-5,
         orders="rdp", conversion="improved", paper=7.32911117143, quantity="epsilon"),
    dict(case="T3.1 LDP-FL, 100 clients: 52 rounds x 50 clients fit (0.5, 1e-6)", q=0.01, sigma=8.0,
         steps=52 * 50, delta=1e-6, orders="moments", conversion="classic", paper=0.5, quantity="epsilon"),
    dict(case="T3.1 LDP-FL: a 53rd round would exceed 0.5", q=0.01, sigma=8.0, steps=53 * 50, delta=1e-6,
         orders="moments", conversion="classic", paper=0.5, quantity="epsilon"),
    dict(case="T3.3 plain DPFL: (0.27, 63)-RDP after 52 rounds", q=0.01, sigma=8.0, steps=52 * 50,
         delta=1e-6, orders="rdp", conversion="improved", paper=0.27, quantity="epsilon"),
    dict(case="T3.1 CDP-FL, 100 clients: 11 rounds, sigma 1.18", q=0.5, sigma=1.18, steps=11, delta=1e-3,
         orders="moments", conversion="classic", paper=8.0, quantity="epsilon"),
    dict(case="T3.1 CDP-FL, 1000 clients: 54 rounds, sigma 1.43", q=0.22, sigma=1.43, steps=54, delta=1e-5,
         orders="moments", conversion="classic", paper=8.0, quantity="epsilon"),
    dict(case="T3.1 LCDP-FL LDP part, 100 clients: delta at eps 8", q=0.01, sigma=2.0, steps=11 * 50,
         epsilon=8.0, orders="moments", conversion="classic", paper=1.07e-107, quantity="delta"),
]


def accountant_rows() -> list[dict]:
    """Our ε (or δ) for each :data:`ACCOUNTANT_CASES` entry, beside the paper's."""
    rows = []
    for c in ACCOUNTANT_CASES:
        orders = MOMENTS_ORDERS if c["orders"] == "moments" else DEFAULT_ORDERS
        rdp = compute_rdp(q=c["q"], noise_multiplier=c["sigma"], steps=c["steps"], orders=orders)
        if c["quantity"] == "epsilon":
            ours, order = rdp_to_epsilon(orders, rdp, c["delta"], c["conversion"])
        else:
            ours, order = rdp_to_delta(orders, rdp, c["epsilon"])
        rows.append({"case": c["case"], "q": c["q"], "sigma": c["sigma"], "steps": c["steps"],
                     "quantity": c["quantity"], "paper": c["paper"], "ours": ours, "order": order})
    return rows


def _fedavg_config(cfg: FoundationsConfig, seed: int, rounds: int, m: int, uniform: bool = False) -> FLConfig:
    return FLConfig(rounds=rounds, clients_per_round=m, local=LocalSGD(cfg.local_epochs, cfg.batch_size),
                    lr=cfg.lr, weighting="uniform" if uniform else "samples", seed=seed)


def _update_norms(cfg: FoundationsConfig, fed, seed: int) -> torch.Tensor:
    """L2 norms of every client's first-round update from W^0 (what clipping acts on)."""
    updates = first_round_updates(cfg.model, fed, range(cfg.num_clients), seed=seed, lr=cfg.lr,
                                  opt=LocalSGD(cfg.local_epochs, cfg.batch_size), stream="norms")
    return torch.stack([torch.linalg.vector_norm(u) for u in updates])


def run(config: FoundationsConfig = QUICK, *, mode: str = "quick", seed: int = 0,
        progress: bool = False) -> Results:
    """Run the chapter and return its :class:`~fedlib.results.Results`."""
    began = time.perf_counter()
    cfg = config
    res = Results("foundations", mode, seed, dataclasses.asdict(cfg))

    # 1. FedAvg on IID vs label-shard partitions
    accs = {}
    for method in ("iid", "shards"):
        fed = make_federation(cfg.dataset, method, cfg.num_clients, seed=seed, subset=mode)
        out = run_federated(fresh_model(cfg.model, seed), fed.train, fed.clients, fed.test,
                            _fedavg_config(cfg, seed, cfg.rounds, cfg.clients_per_round), progress=progress)
        x, y = out.series("accuracy")
        label = "FedAvg, IID" if method == "iid" else "FedAvg, 2 shards/client"
        res.add_series(f"fedavg_{method}", x, y, label=label)
        accs[method] = out
    res.add_table("T3.3", "FedAvg on MNIST with the MLP 784-200-200-10 (paper: literature FedAvg row)", [
        {"setting": f"IID, {cfg.num_clients} clients, SR {cfg.clients_per_round / cfg.num_clients:g}",
         "rounds_paper": 380, "rounds_ours": cfg.rounds, "paper": 0.97, "ours": accs["iid"].best_accuracy},
        {"setting": "2 label shards per client", "rounds_paper": None, "rounds_ours": cfg.rounds,
         "paper": None, "ours": accs["shards"].best_accuracy},
    ])

    # 2. Clipping and the Gaussian mechanism
    norms = _update_norms(cfg, make_federation(cfg.dataset, "iid", cfg.num_clients, seed=seed, subset=mode), seed)
    median = float(norms.median())  # Geyer et al.'s bound (thesis eq. 2.27): half the clients get clipped
    clipped = torch.linalg.vector_norm(clip_rows(norms.reshape(-1, 1), median), dim=1)
    target_std = cfg.noise_multiplier * cfg.clip
    draws = gaussian_noise((cfg.noise_draws,), target_std, generator=make_generator(seed, "noise_demo"))
    res.add_series("update_norms", list(range(len(norms))), sorted(norms.tolist()), label="client update norm")
    res.add_table("mechanisms", "Clipping and noise calibration", [
        {"quantity": "median client update norm (round 0)", "paper": None, "ours": median},
        {"quantity": "max norm after clipping at the median (eq. 2.27)", "paper": median, "ours": float(clipped.max())},
        {"quantity": "clients clipped (fraction)", "paper": 0.5, "ours": float((norms > median).float().mean())},
        {"quantity": f"empirical std of N(0, (sigma C)^2), sigma={cfg.noise_multiplier}", "paper": target_std,
         "ours": float(draws.std())},
        {"quantity": "classic Gaussian std for (0.5, 1e-5), sensitivity 1",
         "paper": math.sqrt(2 * math.log(1.25e5)) / 0.5,
         "ours": classic_gaussian_std(1.0, 0.5, 1e-5)},
    ])

    # 3. epsilon over rounds for a few sigma (client-level sampling q = m / M)
    q = cfg.dp_clients_per_round / cfg.dp_num_clients
    curves = {}
    for sigma in cfg.curve_sigmas:
        eps = epsilon_curve(noise_multiplier=sigma, sample_rate=q, steps=cfg.curve_rounds, delta=cfg.delta)
        curves[sigma] = eps
        res.add_series(f"eps_sigma_{sigma:g}", list(range(1, cfg.curve_rounds + 1)), eps.tolist(),
                       label=f"σ = {sigma:g}")
    res.add_table("accountant", "RDP accountant vs the thesis's privacy budgets and Opacus's reference",
                  accountant_rows())

    # 4. Local vs central DP at the same sigma and clipping bound
    fed = make_federation(cfg.dataset, "iid", cfg.dp_num_clients, seed=seed, repeat=cfg.dp_repeat, subset=mode)
    dp_cfg = _fedavg_config(cfg, seed, cfg.dp_rounds, cfg.dp_clients_per_round, uniform=True)
    variants = {
        "FedAvg (no DP)": Algorithm(),
        "central DP": Algorithm(aggregator=CentralGaussian(cfg.noise_multiplier, bound=cfg.clip, delta=cfg.delta)),
        "local DP": Algorithm(transforms=[ClipUpdate(cfg.clip), GaussianNoise(cfg.noise_multiplier, delta=cfg.delta)]),
    }
    dp_rows = []
    dp_final = {}
    for name, algorithm in variants.items():
        out = run_federated(fresh_model(cfg.model, seed), fed.train, fed.clients, fed.test, dp_cfg, algorithm,
                            progress=progress)
        key = name.split(" ")[0].lower()
        x, y = out.series("accuracy")
        res.add_series(f"dp_{key}", x, y, label=name)
        last = out.metrics[-1]
        eps = last.get("epsilon_cdp", last.get("epsilon_ldp", 0.0))
        if key != "fedavg":
            res.add_series(f"eps_{key}", *out.series("epsilon_cdp" if key == "central" else "epsilon_ldp"), label=name)
        local = key == "local"
        std = 0.0 if key == "fedavg" else aggregate_noise_std(cfg.noise_multiplier, cfg.clip,
                                                             cfg.dp_clients_per_round, local=local)
        dp_final[key] = out.final_accuracy
        dp_rows.append({"variant": name, "sigma": 0.0 if key == "fedavg" else cfg.noise_multiplier,
                        "noise_std_on_mean": std, "epsilon": eps, "paper": None, "ours": out.final_accuracy})
    res.add_table("ldp_vs_cdp", f"Local vs central DP, {cfg.dp_num_clients} clients, "
                  f"{cfg.dp_clients_per_round}/round, {cfg.dp_rounds} rounds, C={cfg.clip}, delta={cfg.delta:g}",
                  dp_rows)

    # claims
    iid, shards = accs["iid"].best_accuracy, accs["shards"].best_accuracy
    res.add_claim("fedavg_iid", "FedAvg trains the MLP on IID MNIST to high accuracy (paper: 97 % after 380 "
                  "rounds; quick mode asks >= 90 %)", iid >= 0.90, f"best accuracy {iid:.4f} after {cfg.rounds} rounds")
    res.add_claim("noniid_slower", "Label-skewed (2 shards) clients slow FedAvg down relative to IID",
                  shards <= iid, f"best accuracy IID {iid:.4f} vs shards {shards:.4f}")
    increasing = all(bool((curves[s][1:] >= curves[s][:-1] - 1e-12).all()) for s in curves)
    sig = sorted(curves)
    decreasing = all(curves[a][-1] > curves[b][-1] for a, b in zip(sig, sig[1:]))
    res.add_claim("eps_monotone", "ε grows with the number of rounds and shrinks as σ grows",
                  increasing and decreasing,
                  ", ".join(f"σ={s:g}: ε={curves[s][-1]:.2f}" for s in sig) + f" after {cfg.curve_rounds} rounds")
    acc_rows = {r["case"]: r for r in accountant_rows()}
    fit = acc_rows[ACCOUNTANT_CASES[1]["case"]]["ours"]
    over = acc_rows[ACCOUNTANT_CASES[2]["case"]]["ours"]
    res.add_claim("budget_52_rounds", "The thesis's LDP-FL budget (0.5, 1e-6) at σ = 8 allows exactly 52 rounds",
                  fit <= 0.5 < over, f"ε after 52 rounds {fit:.4f}, after 53 rounds {over:.4f}")
    res.add_claim("ldp_worse_than_cdp", "At equal σ and C, local DP (noise √m times larger on the average) "
                  "loses far more accuracy than central DP", dp_final["local"] < dp_final["central"],
                  f"final accuracy: no DP {dp_final['fedavg']:.4f}, central {dp_final['central']:.4f}, "
                  f"local {dp_final['local']:.4f}")
    add_chapter_audit(res, [("local", cfg.noise_multiplier), ("central_constant", cfg.noise_multiplier)], seed=seed)
    res.elapsed_s = time.perf_counter() - began
    return res
