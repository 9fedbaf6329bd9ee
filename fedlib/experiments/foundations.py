"""Chapter "Foundations" (Weng's thesis, ch. 2): FedAvg, clipping and the Gaussian mechanism, ε over
rounds, and local vs central DP — plus the accountant checked against the thesis's own budgets.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import torch

from fedlib.algorithms.dpfl import moments_budget, rounds_within_budget
from fedlib.experiments.audit import add_audit_table, chapter_audit
from fedlib.experiments.common import device, first_round_updates, fresh_model, make_federation, train_unit
from fedlib.fl import Algorithm, CentralGaussian, ClipUpdate, FLConfig, GaussianNoise, LocalSGD, run_federated
from fedlib.ledger import Claim
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
from fedlib.units import Units


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


LEDGER = [
    Claim("fedavg_iid", "FedAvg trains the MLP 784-200-200-10 to 97 % test accuracy on IID MNIST (100 clients, "
          "every client every round, 380 rounds)", "Table 3.3 (FedAvg row, quoted from the literature)",
          "best test accuracy of FedAvg, IID − 0.97", "≈", modes=("full",),
          note="quick mode runs 30 rounds with 10 clients per round, which cannot reach the paper's number"),
    Claim("noniid_slower", "Clients with label-skewed (non-IID) data slow FedAvg down relative to IID data",
          "§2.1.2", "best accuracy, IID − 2 label shards per client (same rounds)", ">", central=True),
    Claim("budget_52_rounds", "At σ = 8 the LDP-FL budget (ε, δ) = (0.5, 1e-6) with q = 1/M and 50 clients a round "
          "allows 52 rounds", "Table 3.1, §3.2.2", "rounds the moments accountant allows − 52", "≈", unit="count"),
    Claim("ldp_worse_than_cdp", "At equal σ and clipping bound, local DP (noise √m times larger on the average) "
          "costs far more accuracy than central DP", "§2.2.3", "final accuracy, central DP − local DP", ">"),
]

#: Deliberate defects for the falsification test: each must flip the central claim's verdict.
DEFECTS = {"iid_shards": "the 'label-skewed' federation is drawn IID (the skew the claim is about is removed)"}

#: The smallest configuration whose central claim the defect test flips.
TINY = FoundationsConfig(rounds=8, curve_rounds=10, noise_draws=1000, dp_repeat=1, dp_num_clients=100,
                         dp_clients_per_round=10, dp_rounds=1)


def _train(units: Units, unit_id: str, cfg: FoundationsConfig, fed, fl: FLConfig, algorithm: Algorithm,
           spec: dict, seed: int, progress: bool):
    """One training run of the chapter as a unit."""
    return train_unit(units, unit_id, {**spec, "fl": fl, "algorithm": algorithm, "model": cfg.model},
                      lambda: run_federated(fresh_model(cfg.model, seed), fed.train, fed.clients, fed.test, fl,
                                            algorithm, progress=progress, device=device()).summary())


def run(config: FoundationsConfig = QUICK, *, mode: str = "quick", seed: int = 0, progress: bool = False,
        units: Units | None = None, defect: str | None = None) -> Results:
    """Run the chapter and return its :class:`~fedlib.results.Results` (full mode: as units)."""
    if defect is not None and defect not in DEFECTS:
        raise ValueError(f"defect must be one of {sorted(DEFECTS)} or None, got {defect!r}")
    began = time.perf_counter()
    cfg = config
    units = units or Units("foundations", mode, seed)
    res = Results("foundations", mode, seed, dataclasses.asdict(cfg))

    # 1. FedAvg on IID vs label-shard partitions
    accs = {}
    for method in ("iid", "shards"):
        drawn = "iid" if defect == "iid_shards" else method
        fed = make_federation(cfg.dataset, drawn, cfg.num_clients, seed=seed, subset=mode)
        out = _train(units, f"fedavg-{method}", cfg, fed, _fedavg_config(cfg, seed, cfg.rounds, cfg.clients_per_round),
                     Algorithm(), {"dataset": cfg.dataset, "partition": drawn, "subset": mode}, seed, progress)
        label = "FedAvg, IID" if method == "iid" else "FedAvg, 2 shards/client"
        if out is not None:
            res.add_series(f"fedavg_{method}", *out.series("accuracy"), label=label)
        accs[method] = out
    best = {k: None if v is None else v.best_accuracy for k, v in accs.items()}
    res.add_table("T3.3", "FedAvg on MNIST with the MLP 784-200-200-10 (paper: literature FedAvg row)", [
        {"setting": f"IID, {cfg.num_clients} clients, SR {cfg.clients_per_round / cfg.num_clients:g}",
         "rounds_paper": 380, "rounds_ours": cfg.rounds, "paper": 0.97, "ours": best["iid"]},
        {"setting": "2 label shards per client", "rounds_paper": None, "rounds_ours": cfg.rounds,
         "paper": None, "ours": best["shards"]},
    ])

    # 2. Clipping and the Gaussian mechanism
    fed = make_federation(cfg.dataset, "iid", cfg.num_clients, seed=seed, subset=mode)
    norms = units.run("update-norms", {"model": cfg.model, "dataset": cfg.dataset, "subset": mode, "lr": cfg.lr,
                                       "local": (cfg.local_epochs, cfg.batch_size), "clients": cfg.num_clients},
                      lambda: {"norms": _update_norms(cfg, fed, seed).tolist()})
    if norms is not None:
        norms = torch.tensor(norms["norms"])
        median = float(norms.median())  # Geyer et al.'s bound (thesis eq. 2.27): half the clients get clipped
        clipped = torch.linalg.vector_norm(clip_rows(norms.reshape(-1, 1), median), dim=1)
        res.add_series("update_norms", list(range(len(norms))), sorted(norms.tolist()), label="client update norm")
    target_std = cfg.noise_multiplier * cfg.clip
    draws = gaussian_noise((cfg.noise_draws,), target_std, generator=make_generator(seed, "noise_demo"))
    res.add_table("mechanisms", "Clipping and noise calibration", [
        {"quantity": "median client update norm (round 0)", "paper": None, "ours": None if norms is None else median},
        {"quantity": "max norm after clipping at the median (eq. 2.27)", "paper": None if norms is None else median,
         "ours": None if norms is None else float(clipped.max())},
        {"quantity": "clients clipped (fraction)", "paper": 0.5,
         "ours": None if norms is None else float((norms > median).float().mean())},
        {"quantity": f"empirical std of N(0, (sigma C)^2), sigma={cfg.noise_multiplier}", "paper": target_std,
         "ours": float(draws.std())},
        {"quantity": "classic Gaussian std for (0.5, 1e-5), sensitivity 1",
         "paper": math.sqrt(2 * math.log(1.25e5)) / 0.5,
         "ours": classic_gaussian_std(1.0, 0.5, 1e-5)},
    ])

    # 3. epsilon over rounds for a few sigma (client-level sampling q = m / M)
    q = cfg.dp_clients_per_round / cfg.dp_num_clients
    for sigma in cfg.curve_sigmas:
        eps = epsilon_curve(noise_multiplier=sigma, sample_rate=q, steps=cfg.curve_rounds, delta=cfg.delta)
        res.add_series(f"eps_sigma_{sigma:g}", list(range(1, cfg.curve_rounds + 1)), eps.tolist(),
                       label=f"σ = {sigma:g}")
    accountant = accountant_rows()
    res.add_table("accountant", "RDP accountant vs the thesis's privacy budgets and Opacus's reference", accountant)

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
        key = name.split(" ")[0].lower()
        out = _train(units, f"dp-{key}", cfg, fed, dp_cfg, algorithm,
                     {"dataset": cfg.dataset, "partition": "iid", "repeat": cfg.dp_repeat, "subset": mode},
                     seed, progress)
        dp_final[key] = None if out is None else out.final_accuracy
        eps = None
        if out is not None:
            res.add_series(f"dp_{key}", *out.series("accuracy"), label=name)
            last = out.metrics[-1]
            eps = last.get("epsilon_cdp", last.get("epsilon_ldp", 0.0))
            if key != "fedavg":
                res.add_series(f"eps_{key}", *out.series("epsilon_cdp" if key == "central" else "epsilon_ldp"),
                               label=name)
        std = 0.0 if key == "fedavg" else aggregate_noise_std(cfg.noise_multiplier, cfg.clip,
                                                             cfg.dp_clients_per_round, local=key == "local")
        dp_rows.append({"variant": name, "sigma": 0.0 if key == "fedavg" else cfg.noise_multiplier,
                        "noise_std_on_mean": std, "epsilon": eps, "paper": None, "ours": dp_final[key]})
    res.add_table("ldp_vs_cdp", f"Local vs central DP, {cfg.dp_num_clients} clients, "
                  f"{cfg.dp_clients_per_round}/round, {cfg.dp_rounds} rounds, C={cfg.clip}, delta={cfg.delta:g}",
                  dp_rows)
    audit = units.run("audit", {"sigma": cfg.noise_multiplier, "names": ("local", "central_constant")},
                      lambda: {"rows": chapter_audit([("local", cfg.noise_multiplier),
                                                      ("central_constant", cfg.noise_multiplier)], seed=seed)})
    if audit is not None:
        add_audit_table(res, audit["rows"])
    _measure(res, cfg, best, dp_final, accountant, len(fed.test.y))
    res.evaluate(LEDGER)
    res.elapsed_s = time.perf_counter() - began
    return res


def _measure(res: Results, cfg: FoundationsConfig, best: dict, dp_final: dict, accountant: list[dict],
             test_images: int) -> None:
    """This run's value of every claim of :data:`LEDGER` (``test_images``: what the accuracies were measured on, for
    full mode's test-set sampling bound)."""
    claim = {c.id: c for c in LEDGER}
    iid, shards = best["iid"], best["shards"]
    res.measure(claim["fedavg_iid"], None if iid is None else iid - 0.97,
                f"best accuracy {iid} after {cfg.rounds} rounds, {cfg.clients_per_round} clients per round",
                **({} if iid is None else {"test_images": test_images, "accuracies": (iid,)}))
    res.measure_difference(claim["noniid_slower"], iid, shards, f"best accuracy: IID {iid}, 2 shards per client "
                           f"{shards}", test_images=test_images)
    allowed = rounds_within_budget(noise_multiplier=8.0, sample_rate=0.01, steps_per_round=50,
                                   budget=moments_budget(0.5, 1e-6))
    fit, over = (accountant[i]["ours"] for i in (1, 2))
    res.measure(claim["budget_52_rounds"], allowed - 52,
                f"{allowed} rounds fit; ε after 52 rounds {fit:.4f}, after 53 rounds {over:.4f}")
    central, local = dp_final["central"], dp_final["local"]
    res.measure_difference(claim["ldp_worse_than_cdp"], central, local, f"final accuracy: no DP {dp_final['fedavg']}, "
                           f"central {central}, local {local}", test_images=test_images)
