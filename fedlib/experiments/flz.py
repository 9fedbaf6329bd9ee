"""Chapter "Contribution model" (seed 004): FLZ, unlearning by dropping a client's contribution.

Reproduces Tables 4.1-4.6 (the partitions, the sanity check, the temperature grids) and Figs. 4.1-4.6 (entanglement
with and without the regulariser; FLAvg, FLAvg(subset), FLZ, FLZ(unlearn) and local learning on the homogeneous,
fully heterogeneous and slightly heterogeneous splits; z_dim; seeds) on real MNIST and Fashion-MNIST, with the
thesis's settings and, side by side, the likely released code's settings with its bugs fixed.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import torch

from fedlib.data import load_dataset
from fedlib.data.partition import by_counts
from fedlib.experiments.common import fresh_model
from fedlib.fl.batched import BatchedClients, stack_clients
from fedlib.fl.params import get_flat
from fedlib.results import Results
from fedlib.rng import make_generator
from fedlib.unlearning.flz import PRESETS, FLZRun, LocalAdam, centralised, flavg, flz, local_only
from fedlib.unlearning.stage import Federation
from fedlib.unlearning.verify import verify

#: Table 4.1: the classes each agent holds (50 images each) in the sanity-check split
SANITY = ({0, 2, 4, 5, 7, 9}, {1, 2, 3, 4, 6, 8}, {0, 2, 6, 7, 8, 9}, {1, 3, 4, 5, 8, 9}, {0, 1, 3, 5, 6, 7})
#: Table 4.3: complete heterogeneity, agent k holds classes 2k and 2k+1
HET = ((316, 284), (308, 292), (314, 286), (295, 305), (292, 308))
#: Table 4.2 (MNIST, sanity split)
T42 = {"FL": 0.8451, "local learning": 0.5467, "centralised learning": 0.9907}
#: Tables 4.5 (FLZ) and 4.6 (FLZ(unlearn)): (t1, t2) -> (mean, std), MNIST, slightly heterogeneous, unlearn 4
T45 = {(0, 0): (0.7599, 0.0562), (0, 0.5): (0.5645, 0.0028), (0, 1): (0.5697, 0.0164), (0.5, 0): (0.7052, 0.0528),
       (0.5, 0.5): (0.7480, 0.0883), (0.5, 1): (0.6860, 0.0359), (1, 0): (0.7003, 0.0705), (1, 0.5): (0.7322, 0.0403),
       (1, 1): (0.7743, 0.0399)}
T46 = {(0, 0): (0.7888, 0.0295), (0, 0.5): (0.8133, 0.0207), (0, 1): (0.8125, 0.0163), (0.5, 0): (0.7990, 0.0189),
       (0.5, 0.5): (0.8259, 0.0216), (0.5, 1): (0.8088, 0.0187), (1, 0): (0.7763, 0.0410), (1, 0.5): (0.7480, 0.0501),
       (1, 1): (0.7807, 0.0425)}
#: what Figs. 4.2-4.4 show (read off the bars; no numbers printed): split -> framework -> text
PAPER_FIGS = {"iid": {"FLAvg": "≈ 0.76", "FLAvg(subset)": "≈ 0.76", "FLZ": "high, slight spread",
                      "FLZ(unlearn)": "clearly lower, large spread", "ll": "lowest"},
              "het": {k: "0.20-0.25" for k in ("FLAvg", "FLAvg(subset)", "FLZ", "FLZ(unlearn)", "ll")},
              "uneven": {"FLAvg": "≈ 0.8", "FLAvg(subset)": "≈ 0.8 (above FLAvg)", "FLZ": "≈ FLAvg",
                         "FLZ(unlearn)": "≈ FLAvg(subset), above FLZ", "ll": "lowest"}}
F46_SEEDS = (235, 172, 51, 179, 184)


def split_counts(split: str) -> list[list[int]]:
    """Per-agent, per-class image counts of the thesis's splits (Tables 4.1, 4.3, 4.4; §4.6 for iid)."""
    if split == "sanity":
        return [[50 if c in cls else 0 for c in range(10)] for cls in SANITY]
    if split == "uneven":
        return [[50 if c in cls else 10 for c in range(10)] for cls in SANITY]
    if split == "iid":
        return [[30] * 10 for _ in SANITY]
    if split == "het":
        return [[pair[c - 2 * k] if c // 2 == k else 0 for c in range(10)] for k, pair in enumerate(HET)]
    raise ValueError(f"split must be 'sanity', 'uneven', 'iid' or 'het', got {split!r}")


@dataclass(frozen=True)
class FLZConfig:
    """FULL: the thesis's schedule (100 rounds × 200 local epochs; CL and ll 200 epochs; contribution model K = 50
    Adam steps per round on all past rounds). QUICK (spec card §8.1, with half its K to fit 3 minutes on 2 cores):
    20 rounds × 20 epochs, K = 15; grids, z_dim and seeds: 10 rounds, K = 10, three of Fig. 4.6's five seeds."""

    datasets: tuple[str, ...] = ("mnist", "fashion_mnist")
    rounds: int = 20
    local: LocalAdam = LocalAdam(20)
    steps: int = 30
    isolated_epochs: int = 200
    sweep_rounds: int = 10
    sweep_steps: int = 20
    temperatures: tuple[float, ...] = (0.0, 0.5, 1.0)
    z_dims: tuple[int, ...] = (2, 5, 10)
    seeds: tuple[int, ...] = F46_SEEDS
    forget: tuple[int, ...] = (4,)
    test_per_class: int = 60


QUICK = FLZConfig(steps=15, sweep_steps=10, seeds=F46_SEEDS[:3])
FULL = FLZConfig(rounds=100, local=LocalAdam(200), steps=50, sweep_rounds=100, sweep_steps=50)


def _federation(dataset: str, split: str, seed: int) -> tuple[Federation, tuple, torch.Tensor]:
    """The thesis's split of ``dataset`` (disjoint, redrawn per seed), a linear model, and 60 test images per class
    from the official test split (spec card A14)."""
    train = load_dataset(dataset, train=True)
    test = load_dataset(dataset, train=False)
    clients = by_counts(train.y, split_counts(split), generator=make_generator(seed, "partition", dataset, split))
    test_idx = by_counts(test.y, [[60] * 10], generator=make_generator(seed, "test", dataset))[0]
    x, y = stack_clients(train, clients)
    model = fresh_model("logreg", seed)
    return Federation(BatchedClients(model), x, y, seed), (test.x[test_idx], test.y[test_idx]), get_flat(model)


def _frameworks(cfg: FLZConfig, dataset: str, split: str, seed: int, progress: bool) -> tuple[dict, dict]:
    """The five frameworks on one split: final accuracies, and the runs."""
    fed, test, init = _federation(dataset, split, seed)
    preset = dataclasses.replace(PRESETS["thesis"], steps=cfg.steps)
    keep = [k for k in range(fed.num_clients) if k not in cfg.forget]
    runs = {"FLAvg": flavg(fed, init, cfg.rounds, cfg.local, test, progress=progress),
            "FLAvg(subset)": flavg(fed, init, cfg.rounds, cfg.local, test, clients=keep, progress=progress),
            "FLZ": flz(fed, init, cfg.rounds, cfg.local, preset, test, forget=cfg.forget, progress=progress)}
    if split == "het":  # where FLZ(unlearn) must forget whole classes: our variant without dead contributions too
        runs["FLZ softplus"] = flz(fed, init, cfg.rounds, cfg.local, dataclasses.replace(preset, zhat_act="softplus"),
                                   test, forget=cfg.forget, progress=progress)
    acc = {"FLAvg": runs["FLAvg"].accuracy[-1], "FLAvg(subset)": runs["FLAvg(subset)"].accuracy[-1],
           "FLZ": runs["FLZ"].accuracy[-1], "FLZ(unlearn)": runs["FLZ"].unlearn_accuracy[-1],
           "ll": local_only(fed, init, cfg.isolated_epochs, cfg.local, test)}
    models = {"FLAvg": runs["FLAvg"].params, "FLAvg(subset)": runs["FLAvg(subset)"].params,
              "FLZ": runs["FLZ"].params, "FLZ(unlearn)": runs["FLZ"].unlearned}
    if "FLZ softplus" in runs:
        acc["FLZ softplus (ours)"] = runs["FLZ softplus"].accuracy[-1]
        acc["FLZ(unlearn) softplus (ours)"] = runs["FLZ softplus"].unlearn_accuracy[-1]
        models["FLZ softplus (ours)"] = runs["FLZ softplus"].params
        models["FLZ(unlearn) softplus (ours)"] = runs["FLZ softplus"].unlearned
    retrained = runs["FLAvg(subset)"].params
    checks = {k: verify(fed, p, cfg.forget, keep, retrained=retrained) for k, p in models.items()}
    x_f, y_f = fed.x[list(cfg.forget)].flatten(0, 1), fed.y[list(cfg.forget)].flatten()
    forgotten = {k: {"acc_forgotten_client": v.accuracy_forgotten, "loss_forgotten_client":
                     float(fed.trainer.losses(models[k], x_f, y_f).mean()), "dist_to_subset": v.relative_distance}
                 for k, v in checks.items()}
    flz_runs = {"FLZ": runs["FLZ"], **({"FLZ softplus (ours)": runs["FLZ softplus"]} if "FLZ softplus" in runs else {})}
    shares = {k: r.shares[-1][cfg.forget[0]] for k, r in flz_runs.items()}
    dead = {k: ", ".join(f"agent {a}: {len(v)}" for a, v in sorted(r.dead_rounds.items())) or "none"
            for k, r in flz_runs.items()}
    return {"acc": acc, "forgotten": forgotten, "shares": shares, "dead": dead}, runs


def run(config: FLZConfig = QUICK, *, mode: str = "quick", seed: int = 0, progress: bool = False) -> Results:
    """Run the chapter and return its :class:`~fedlib.results.Results`."""
    began = time.perf_counter()
    cfg = config
    res = Results("flz", mode, seed, dataclasses.asdict(cfg))
    first = cfg.datasets[0]
    counts = {s: split_counts(s) for s in ("sanity", "het", "uneven")}
    res.add_table("T4.1", "Table 4.1: classes each agent holds in the sanity-check split (50 images each)", [
        {"agent": k, "paper": "".join("✓" if c in SANITY[k] else "✗" for c in range(10)),
         "ours": "".join("✓" if n else "✗" for n in counts["sanity"][k])} for k in range(5)])
    res.add_table("T4.3", "Table 4.3: complete heterogeneity, images per agent and class (ours: drawn)", [
        {"agent": k, "paper": str(HET[k]), "ours": str(tuple(n for n in counts["het"][k] if n))} for k in range(5)])
    res.add_table("T4.4", "Table 4.4: slight heterogeneity, images per agent and class (ours: drawn)", [
        {"agent": k, "paper": " ".join(str(50 if c in SANITY[k] else 10) for c in range(10)),
         "ours": " ".join(map(str, counts["uneven"][k]))} for k in range(5)])

    # T4.2: the sanity check (MNIST, sanity split)
    fed, test, init = _federation(first, "sanity", seed)
    fl = flavg(fed, init, cfg.rounds, cfg.local, test, progress=progress)
    t42 = {"FL": fl.accuracy[-1], "local learning": local_only(fed, init, cfg.isolated_epochs, cfg.local, test),
           "centralised learning": centralised(fed, init, cfg.isolated_epochs, cfg.local, test)}
    res.add_table("T4.2", f"Table 4.2: sanity check, {first}, sanity split, {cfg.rounds} rounds × {cfg.local.epochs} "
                  f"epochs (paper: 100 × 200)", [{"framework": k, "paper": T42[k], "ours": v} for k, v in t42.items()])

    # F4.1: entanglement with and without the regulariser
    ent = {}
    for t in (0.0, 1.0):
        preset = dataclasses.replace(PRESETS["thesis"], steps=cfg.steps, t1=t, t2=t)
        r = flz(fed, init, cfg.rounds, cfg.local, preset, test, forget=cfg.forget, progress=progress)
        ent[t] = r.entanglement
        res.add_series(f"F4.1/t={t:g}", list(range(1, cfg.rounds + 1)), r.entanglement,
                       label="no regularisation" if t == 0 else "t1 = t2 = 1")

    # F4.2-F4.4 on every dataset; presets side by side on the slightly heterogeneous split
    figs = {}
    for ds in cfg.datasets:
        for split, fig in (("iid", "F4.2"), ("het", "F4.3"), ("uneven", "F4.4")):
            if split == "het" and ds != first:
                continue
            out, runs = _frameworks(cfg, ds, split, seed, progress)
            figs[(ds, split)] = out
            for name, acc in out["acc"].items():
                figs.setdefault(fig, []).append({
                    "dataset": ds, "split": split, "framework": name, "paper": PAPER_FIGS[split].get(name, "(ours)"),
                    "ours": acc, "last_share": out["shares"].get(name), "rounds_with_dead_pi": out["dead"].get(name),
                    **out["forgotten"].get(name, {})})
            if split == "uneven" and ds == first:
                thesis_run = runs["FLZ"]
                shares = runs["FLZ"].shares
                for k in range(5):
                    res.add_series(f"shares/agent {k}", list(range(1, cfg.rounds + 1)), [s[k] for s in shares],
                                   label=f"agent {k}")
                res.add_series("rec_error", list(range(1, cfg.rounds + 1)), runs["FLZ"].rec_error,
                               label="‖θ − θ̂‖²/‖θ‖²")
    for fig, title in (("F4.2", "homogeneous split"), ("F4.3", "complete heterogeneity"),
                       ("F4.4", "slight heterogeneity")):
        res.add_table(fig, f"Fig. {fig[1:]}: final test accuracy, {title}, unlearning agent {cfg.forget[0]}; then, on "
                      "the agent's own training samples, accuracy and mean loss, and the distance to FLAvg(subset) "
                      "relative to its norm; last_share: the agent's π share in the last round; rounds in which "
                      "an agent's π was 0 (ReLU, spec card A24)",
                      figs[fig])

    grid = _sweeps(res, cfg, first, seed, progress)
    _presets(res, cfg, first, seed, progress, thesis_run)
    _claims(res, cfg, figs, t42, ent, grid)
    res.elapsed_s = time.perf_counter() - began
    return res


def _sweeps(res: Results, cfg: FLZConfig, ds: str, seed: int, progress: bool) -> dict:
    """T4.5/T4.6 (temperatures), F4.5 (z_dim) and F4.6 (seeds) on the slightly heterogeneous split; returns the
    grid's mean FLZ(unlearn) accuracy and FLAvg(subset)'s, for the claims."""
    fed, test, init = _federation(ds, "uneven", seed)
    base = dataclasses.replace(PRESETS["thesis"], steps=cfg.sweep_steps)
    sweep = dataclasses.replace(cfg, rounds=cfg.sweep_rounds)

    def one(preset, federation=fed, start=init, evaluation=test) -> FLZRun:
        return flz(federation, start, sweep.rounds, cfg.local, preset, evaluation, forget=cfg.forget,
                   progress=progress)

    grid = {}
    for t1 in cfg.temperatures:
        for t2 in cfg.temperatures:
            grid[(t1, t2)] = one(dataclasses.replace(base, t1=t1, t2=t2))
    for tid, paper, key in (("T4.5", T45, "accuracy"), ("T4.6", T46, "unlearn_accuracy")):
        rows = []
        for (t1, t2), r in grid.items():
            p = paper.get((t1, t2), (None, None))
            rows.append({"t1": t1, "t2": t2, "paper": p[0], "paper_std": p[1], "ours": getattr(r, key)[-1]})
        res.add_table(tid, f"Table {tid[1:]}: {'FLZ' if tid == 'T4.5' else 'FLZ(unlearn)'} accuracy over the "
                      f"temperatures (t1 = Reg θ rows, t2 = Reg t columns), {ds}, slight heterogeneity, "
                      f"{sweep.rounds} rounds; paper: mean (std) of 5 runs, ours: one run", rows)
    subset = flavg(fed, init, sweep.rounds, cfg.local, test, clients=[k for k in range(5) if k not in cfg.forget])
    full = flavg(fed, init, sweep.rounds, cfg.local, test)
    xs = list(range(1, sweep.rounds + 1))
    res.add_series("F4.5/FLAvg", xs, full.accuracy, label="FLAvg")
    res.add_series("F4.5/FLAvg(subset)", xs, subset.accuracy, label="FLAvg(subset)")
    for d in cfg.z_dims:
        r = one(dataclasses.replace(base, z_dim=d))
        res.add_series(f"F4.5/z={d}/FLZ", xs, r.accuracy, label=f"FLZ, d = {d}")
        res.add_series(f"F4.5/z={d}/FLZ(unlearn)", xs, r.unlearn_accuracy, label=f"FLZ(unlearn), d = {d}")
    for s in cfg.seeds:
        f, t, i = _federation(ds, "uneven", s)
        r = one(base, f, i, t)
        res.add_series(f"F4.6/seed {s}/FLZ", xs, r.accuracy, label=f"seed {s}")
        res.add_series(f"F4.6/seed {s}/FLZ(unlearn)", xs, r.unlearn_accuracy, label=f"seed {s}")
    unlearned = [r.unlearn_accuracy[-1] for r in grid.values()]
    return {"unlearn_mean": sum(unlearned) / len(unlearned), "subset": subset.accuracy[-1], "cells": len(unlearned)}


def _presets(res: Results, cfg: FLZConfig, ds: str, seed: int, progress: bool, thesis_run: FLZRun) -> None:
    """The thesis's settings (the run of Fig. 4.4) and the released code's (bugs fixed) on the slightly
    heterogeneous split."""
    fed, test, init = _federation(ds, "uneven", seed)
    rows = []
    for name in ("thesis", "ltu_code"):
        preset = PRESETS[name] if name == "ltu_code" else dataclasses.replace(PRESETS[name], steps=cfg.steps)
        r = thesis_run if name == "thesis" else flz(fed, init, cfg.rounds, cfg.local, preset, test,
                                                     forget=cfg.forget, progress=progress)
        rows.append({"preset": name, "paper": "thesis §4.5" if name == "thesis" else "released code (bugs fixed)",
                     "ours": r.accuracy[-1], "unlearn": r.unlearn_accuracy[-1], "rec_error": r.rec_error[-1],
                     "z_dim": preset.z_dim, "hidden": preset.hidden, "steps_per_round": preset.steps,
                     "memory": preset.memory or "all"})
    res.add_table("presets", f"FLZ and FLZ(unlearn) accuracy with the two presets, {ds}, slight heterogeneity", rows)


def _claims(res: Results, cfg: FLZConfig, figs: dict, t42: dict, ent: dict, grid: dict) -> None:
    first = cfg.datasets[0]
    cl, fl, ll = t42["centralised learning"], t42["FL"], t42["local learning"]
    res.add_claim("sanity_order", f"T4.2: FL reaches centralised learning (within 0.02) and beats local learning by "
                  f"more than 0.2, which cannot pass 0.62 (6 of 10 classes per agent) ({first}, sanity split)",
                  cl >= fl - 0.02 and fl > ll + 0.2 and ll <= 0.62, ", ".join(f"{k} {v:.3f}" for k, v in t42.items()))
    res.add_claim("regulariser_disentangles", "F4.1: the regulariser lowers the mean cosine between the latents t_k "
                  "(final round)", ent[1.0][-1] < ent[0.0][-1],
                  f"with {ent[1.0][-1]:.3f}, without {ent[0.0][-1]:.3f} (paper: ≈ 0.6 without)")
    for ds in cfg.datasets:
        acc = figs[(ds, "uneven")]["acc"]
        res.add_claim(f"{ds}_flz_close_to_flavg", f"{ds}, slight heterogeneity: FLZ's accuracy is within 0.05 of "
                      "FLAvg's", abs(acc["FLZ"] - acc["FLAvg"]) <= 0.05,
                      f"FLZ {acc['FLZ']:.3f}, FLAvg {acc['FLAvg']:.3f}")
        on = figs[(ds, "uneven")]["forgotten"]
        loss = {k: on[k]["loss_forgotten_client"] for k in ("FLZ", "FLZ(unlearn)", "FLAvg(subset)")}
        res.add_claim(f"{ds}_unlearn_moves_toward_retraining", f"{ds}, slight heterogeneity: on agent "
                      f"{cfg.forget[0]}'s own samples, FLZ(unlearn)'s loss is closer to FLAvg(subset)'s than FLZ's is",
                      abs(loss["FLZ(unlearn)"] - loss["FLAvg(subset)"]) < abs(loss["FLZ"] - loss["FLAvg(subset)"]),
                      ", ".join(f"{k}: loss {v:.3f}, acc {on[k]['acc_forgotten_client']:.3f}" for k, v in loss.items()))
        res.add_claim(f"{ds}_unlearn_close_to_subset", f"{ds}, slight heterogeneity: FLZ(unlearn) is within 0.05 of "
                      "FLAvg(subset), the retrained model", abs(acc["FLZ(unlearn)"] - acc["FLAvg(subset)"]) <= 0.05,
                      f"FLZ(unlearn) {acc['FLZ(unlearn)']:.3f}, FLAvg(subset) {acc['FLAvg(subset)']:.3f}")
    for ds in cfg.datasets:
        acc = figs[(ds, "iid")]["acc"]
        res.add_claim(f"{ds}_iid_subset_matches", f"{ds}, homogeneous split: retraining without agent "
                      f"{cfg.forget[0]} changes little (|FLAvg − FLAvg(subset)| ≤ 0.03) and ll < FLAvg",
                      abs(acc["FLAvg"] - acc["FLAvg(subset)"]) <= 0.03 and acc["ll"] < acc["FLAvg"],
                      f"FLAvg {acc['FLAvg']:.3f}, FLAvg(subset) {acc['FLAvg(subset)']:.3f}, ll {acc['ll']:.3f}")
    het, uneven = figs[(first, "het")]["acc"], figs[(first, "uneven")]["acc"]
    frameworks = ("FLAvg", "FLAvg(subset)", "FLZ", "FLZ(unlearn)")
    res.add_claim("het_is_hard", f"{first}, complete heterogeneity: ll ≈ 0.2 (two classes each; ± 0.03) and every "
                  "federated framework falls below its value on the slightly heterogeneous split",
                  abs(het["ll"] - 0.2) <= 0.03 and all(het[k] < uneven[k] for k in frameworks),
                  f"ll {het['ll']:.3f}; " + ", ".join(f"{k} {het[k]:.3f} (uneven {uneven[k]:.3f})"
                                                      for k in frameworks))
    res.add_claim("grid_unlearn_close_to_subset", "T4.6: FLZ(unlearn)'s mean over the temperature grid is within "
                  "0.1 of FLAvg(subset) (same rounds)", abs(grid["unlearn_mean"] - grid["subset"]) <= 0.1,
                  f"mean {grid['unlearn_mean']:.3f} over {grid['cells']} cells, FLAvg(subset) {grid['subset']:.3f}")
