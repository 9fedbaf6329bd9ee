"""The federations, schemes and units of the SIFU chapter (:mod:`fedlib.experiments.sifu`): the configuration
classes, the reduced datasets as federations (class partition, Dir(α) classes, the paper's watermark), one trained
federation shared by the figures of one dataset and seed, every scheme of the paper served on it, the verification of
the unlearned models with the controls (:mod:`fedlib.unlearning.verify`), one function per unit of the chapter's
full mode, and the unlearning explorer's lab.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from fedlib.data import load_dataset, pixel_source
from fedlib.data.datasets import DATASETS, Split
from fedlib.data.partition import partition
from fedlib.experiments.common import device, fresh_model
from fedlib.fl.batched import BatchedClients, stack_clients
from fedlib.fl.params import get_flat
from fedlib.results import Results
from fedlib.rng import make_generator
from fedlib.unlearning import bounds
from fedlib.unlearning.baselines import (
    FedAccum,
    UpdateStore,
    dp,
    dp_sigma,
    dp_training,
    fedaccum,
    federaser,
    fine_tune,
    last,
    scratch,
)
from fedlib.unlearning.sifu import UnlearningRun, psi_star, set_psi, sifu
from fedlib.unlearning.stage import Federation, Stage, StageConfig, run_stage
from fedlib.unlearning.verify import (
    Controls,
    Trigger,
    add_watermark,
    forgotten_samples,
    matched_nonmembers,
    plant_backdoor,
    verify_with_controls,
    watermark_positions,
)

#: what each scheme does in the paper's Fig. 2 (no numbers are printed)
PAPER_F2 = {"SCRATCH": "reference: low accuracy on F_r, most rounds",
            "SIFU": "accuracy ≈ SCRATCH (slightly above), about half of SCRATCH's rounds",
            "SIFU (σ ours)": "(our σ for quick mode)", "SIFU (Ψ realised)": "(ours: Ψ with the sampled clients' weights)",
            "FINE-TUNING": "few rounds, high accuracy on F_r",
            "FEDACCUM (prose)": "few rounds, high accuracy on F_r",
            "FEDACCUM (code)": "few rounds, high accuracy on F_r",
            "DP": "few rounds, high accuracy on F_r", "LAST": "never reaches a* within 10,000 rounds",
            "LAST (code)": "never reaches a* within 10,000 rounds", "FEDERASER": "(not in this preprint)"}
#: the negative control retrains at seed + CONTROL_OFFSET (another θ^0, other batches and client samples)
CONTROL_OFFSET = 1000


@dataclass(frozen=True)
class Setup:
    """One dataset's federation and Table-1 hyper-parameters.

    Attributes:
        sigma: Table 1's σ (the paper's); ``sigma_ours``: a second σ for quick mode, chosen after seeing results
            (registered as its own setting of the SIFU claims), or None.
        alpha: client classes ~ Dir(α) (CIFAR: 0.1); None: client i holds class i mod 10 (MNIST, Fashion-MNIST).
        model_args: keyword arguments of the model (CIFAR-100: ``(("fc", 256), ("num_classes", 100))``).
        watermark_target: a* of the watermark experiment (Figs. 3-4).
    """

    dataset: str
    model: str
    num_clients: int = 100
    samples: int = 100
    clients_per_round: int = 10
    local_steps: int = 10
    batch_size: int = 100
    lr: float = 0.01
    sigma: float = 0.05
    sigma_ours: float | None = None
    bound: float = 0.5
    target: float = 0.93
    alpha: float | None = None
    model_args: tuple[tuple[str, Any], ...] = ()
    watermark_target: float = 0.999

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ValueError(f"dataset must be one of {sorted(DATASETS)}, got {self.dataset!r}")
        if self.num_clients % 10 or self.num_clients < 20:
            raise ValueError(f"num_clients must be a multiple of 10 and >= 20 (requests are {{10i + k}}), "
                             f"got {self.num_clients!r}")


@dataclass(frozen=True)
class TheoryConfig:
    """Least squares for Theorem 1 / Corollary 1 (M clients of n samples in d dimensions, full participation,
    gradient descent with η = ``lr_factor``/L) and over-parameterised linear regression for Appendix A."""

    clients: int = 5
    samples: int = 10
    dim: int = 20
    rounds: int = 300
    local_steps: tuple[int, ...] = (1, 5)
    lam: float = 0.05
    lr_factor: float = 0.5
    a_samples: int = 10
    a_dim: int = 30
    a_steps: int = 200
    a_finetune: tuple[int, ...] = (10, 30, 100, 300, 1000)
    a_lr: float = 0.01


@dataclass(frozen=True)
class SIFUConfig:
    """The chapter's configuration. ``seeds``: seeds averaged (the paper: 10, for Figs. 2-6 alike); ``figures``:
    which of Figs. 3-6 to run; ``theory``: None skips Theorem 1 / App. A."""

    setups: tuple[Setup, ...]
    epsilon: float = 10.0
    delta: float = 0.01
    momentum: float = 0.9
    min_rounds: int = 50
    max_rounds: int = 10_000
    requests: int = 3
    seeds: int = 1
    dp_bounds: tuple[float, ...] = (0.1, 0.2, 0.5, 1.0)
    sigma_sweep: tuple[float, ...] = tuple(round(m * 10.0**e, 6) for e in range(-4, 1) for m in (1, 2, 5))
    f6_classes: tuple[int, ...] = tuple(range(10))
    figures: tuple[str, ...] = ("F3", "F5", "F6")
    watermark_alpha: float = 1.0
    watermark_pixels: int = 10
    backdoor_fraction: float = 0.25
    backdoor_target: int = 0
    backdoor_size: int = 4
    federaser_interval: int = 10
    federaser_ratio: float = 0.5
    theory: TheoryConfig | None = field(default_factory=TheoryConfig)


# --- data and federations ----------------------------------------------------------------------------------------

@dataclass
class Data:
    """One dataset's raw splits (pixels in [0, 1]) and which test images hold exact pixels (CIFAR-10's offline test
    split is partly decoded from a JPEG export; the verification uses only the exact ones)."""

    train: Split
    test: Split
    exact: Tensor


def load(setup: Setup, mode: str) -> Data:
    """The dataset as the mode needs it (quick: the fixed quick subsets; full: the official splits, or
    :class:`~fedlib.data.datasets.DatasetIncompleteError`)."""
    train = load_dataset(setup.dataset, train=True, normalize=False, subset=mode)
    test = load_dataset(setup.dataset, train=False, normalize=False, subset=mode)
    exact = pixel_source(setup.dataset, subset=mode) == 1 if setup.dataset == "cifar10" else torch.ones(
        len(test.y), dtype=torch.bool)
    return Data(train, test, exact)


def _normalise(x: Tensor, dataset: str) -> Tensor:
    info = DATASETS[dataset]
    shape = (1,) * (x.dim() - 3) + (-1, 1, 1)
    return (x - torch.tensor(info.mean).view(shape)) / torch.tensor(info.std).view(shape)


def _watermarked(x: Tensor, groups: Sequence[int], pixels: int) -> Tensor:
    """Each image (N, C, H, W) with its group's pattern (raw pixels)."""
    out = x.clone()
    for g in sorted(set(groups)):
        sel = torch.tensor([k == g for k in groups])
        out[sel] = add_watermark(x[sel], watermark_positions(g, x.shape[1:], pixels))
    return out


def _model(setup: Setup, seed: int):
    return fresh_model(setup.model, seed, **dict(setup.model_args))


def federation(setup: Setup, data: Data, seed: int, *, alpha: float | None = None, watermark: int = 0
               ) -> Federation:
    """M × n disjoint real samples (client i: class i mod 10, or Dir(α) classes), normalised; with ``watermark``
    pixels, client i's samples carry group (i mod 10)'s pattern (the SIFU paper §5.3, applied to raw pixels)."""
    clients = partition("fixed_size", data.train.y, setup.num_clients, samples_per_client=setup.samples,
                        alpha=alpha, generator=make_generator(0, "partition", setup.dataset, str(alpha)))
    x, y = stack_clients(data.train, clients)
    if watermark:
        x = torch.stack([_watermarked(x[i], [i % 10] * x.shape[1], watermark) for i in range(len(x))])
    return Federation(BatchedClients(_model(setup, seed), device=device()), _normalise(x, setup.dataset), y, seed)


def stage_config(setup: Setup, cfg: SIFUConfig, target: float | None = None) -> StageConfig:
    return StageConfig(setup.clients_per_round, setup.local_steps, setup.batch_size, setup.lr,
                       target or setup.target, momentum=cfg.momentum, min_rounds=cfg.min_rounds,
                       max_rounds=cfg.max_rounds)


def requests_of(setup: Setup, count: int, first: int = 0) -> list[list[int]]:
    """W_r = {10i + k}: the clients of class k in the class partition (the authors' code)."""
    return [[10 * i + k for i in range(setup.num_clients // 10)] for k in range(first, first + count)]


def tracked_sigmas(setup: Setup, cfg: SIFUConfig) -> list[float]:
    """Every σ whose Ψ* the training tracks (Table 1's, ours, and Fig. 5's sweep)."""
    extra = {setup.sigma} | ({setup.sigma_ours} if setup.sigma_ours else set())
    return sorted(set(cfg.sigma_sweep) | extra) if "F5" in cfg.figures else sorted(extra)


@dataclass
class Trained:
    """A federation's training stage with what observed it (FedAccum's accumulators, FedEraser's store), shared by
    the units of one dataset and seed, and the schemes already served on it (a schedule's first requests serve a
    shorter schedule with the same first requests)."""

    setup: Setup
    fed: Federation
    test: Split
    scfg: StageConfig
    training: Stage
    accum: FedAccum
    accum_code: FedAccum
    store: UpdateStore
    runs: dict[tuple[str, tuple[tuple[int, ...], ...]], UnlearningRun] = field(default_factory=dict)

    def serve(self, name: str, requests: Sequence[Sequence[int]], compute: Callable[[], UnlearningRun]
              ) -> UnlearningRun:
        """Scheme ``name`` on ``requests``: computed once, or the first requests of a longer schedule."""
        key = (name, tuple(tuple(w) for w in requests))
        if key not in self.runs:
            longer = [r for (n, reqs), r in self.runs.items() if n == name and reqs[:len(key[1])] == key[1]]
            if longer:
                run = longer[0]
                self.runs[key] = UnlearningRun(run.scheme, run.training, run.requests[:len(key[1])])
            else:
                self.runs[key] = compute()
        return self.runs[key]


def train(cfg: SIFUConfig, setup: Setup, data: Data, seed: int, *, alpha: float | None = None, watermark: int = 0,
          target: float | None = None, federation_: Federation | None = None, progress: bool = False) -> Trained:
    """The training stage (stage 0) on every client, tracking Ψ* of every σ the figures use."""
    fed = federation_ or federation(setup, data, seed, alpha=alpha, watermark=watermark)
    scfg = stage_config(setup, cfg, target)
    reqs = requests_of(setup, cfg.requests)
    init = get_flat(fed.trainer.model)
    accum, accum_code = FedAccum(init, reqs), FedAccum(init, reqs, mode="code")
    store = UpdateStore(cfg.federaser_interval)
    thresholds = [psi_star(s, cfg.epsilon, cfg.delta) for s in tracked_sigmas(setup, cfg)]
    training = run_stage(fed, scfg, init, range(setup.num_clients), index=0, thresholds=thresholds,
                         observers=[accum, accum_code, store], progress=progress)
    test = Split(_normalise(data.test.x[data.exact], setup.dataset), data.test.y[data.exact], data.test.num_classes)
    return Trained(setup, fed, test, scfg, training, accum, accum_code, store)


class Cache:
    """The training stages of the dataset and seed being worked on (one at a time), so that the units of Figs. 2,
    5 and 6 train once per run; a unit read back from its file trains nothing."""

    def __init__(self, cfg: SIFUConfig, data: dict[str, Data], progress: bool) -> None:
        self.cfg, self.data, self.progress = cfg, data, progress
        self.key: tuple[str, int] | None = None
        self.trained: Trained | None = None

    def __call__(self, setup: Setup, seed: int) -> Trained:
        if self.key != (setup.dataset, seed):
            self.key, self.trained = (setup.dataset, seed), train(self.cfg, setup, self.data[setup.dataset], seed,
                                                                   alpha=setup.alpha, progress=self.progress)
        return self.trained


# --- the schemes ---------------------------------------------------------------------------------------------------

def _sifu(t: Trained, cfg: SIFUConfig, requests: list[list[int]], sigma: float, defect: str | None) -> UnlearningRun:
    """SIFU at ``sigma`` (with the ``no_unlearning`` defect: restart from the final model, no noise)."""
    if defect == "no_unlearning":
        return t.serve(f"SIFU σ={sigma} defect", requests, lambda: sifu(
            t.fed, t.scfg, t.training, requests, sigma=math.inf, epsilon=cfg.epsilon, delta=cfg.delta, noise=False))
    return t.serve(f"SIFU σ={sigma}", requests, lambda: sifu(t.fed, t.scfg, t.training, requests, sigma=sigma,
                                                              epsilon=cfg.epsilon, delta=cfg.delta))


def _scratch(t: Trained, requests: list[list[int]]) -> UnlearningRun:
    return t.serve("SCRATCH", requests, lambda: scratch(t.fed, t.scfg, t.training, requests))


def _fine_tune(t: Trained, requests: list[list[int]]) -> UnlearningRun:
    return t.serve("FINE-TUNING", requests, lambda: fine_tune(t.fed, t.scfg, t.training, requests))


def _dp_sweep(t: Trained, cfg: SIFUConfig, bounds_: Sequence[float]) -> tuple[list[dict], float, Stage]:
    """The DP baseline's training for each clipping bound C; the fastest to reach a* is kept (the SIFU paper App. D)."""
    m = t.setup.num_clients
    trained = [(b, dp_training(t.fed, t.scfg, t.training.start, range(m), bound=b,
                               sigma=dp_sigma(b, m, cfg.epsilon, 1 / m))) for b in bounds_]
    _, bound, stage = min(((s.rounds if s.reached_target else math.inf), b, s) for b, s in trained)
    rows = [{"C": b, "sigma_dp": dp_sigma(b, m, cfg.epsilon, 1 / m), "rounds": s.rounds,
             "reached_target": s.reached_target, "chosen": b == bound} for b, s in trained]
    return rows, bound, stage


def _schemes(t: Trained, cfg: SIFUConfig, requests: list[list[int]], *, dp_bounds: Sequence[float],
             defect: str | None) -> tuple[dict[str, UnlearningRun], list[dict], dict[str, int]]:
    """Every scheme of Fig. 2 on ``requests``; also the DP sweep's rows and each scheme's extra stored bytes."""
    s, eps, delta, fed = t.setup, cfg.epsilon, cfg.delta, t.fed
    runs = {"SCRATCH": _scratch(t, requests), "SIFU": _sifu(t, cfg, requests, s.sigma, defect)}
    if s.sigma_ours:
        runs["SIFU (σ ours)"] = _sifu(t, cfg, requests, s.sigma_ours, defect)
    runs["FINE-TUNING"] = _fine_tune(t, requests)
    runs["FEDACCUM (prose)"] = fedaccum(fed, t.scfg, t.training, requests, t.accum)
    runs["FEDACCUM (code)"] = fedaccum(fed, t.scfg, t.training, requests, t.accum_code)
    sweep, bound, dp_train = _dp_sweep(t, cfg, dp_bounds)
    runs["DP"] = dp(fed, t.scfg, dp_train, requests, bound=bound, sigma=dp_sigma(bound, s.num_clients, eps,
                                                                                 1 / s.num_clients))
    runs["LAST"] = last(fed, t.scfg, t.training, requests, epsilon=eps, delta=delta)
    runs["LAST (code)"] = last(fed, t.scfg, t.training, requests, epsilon=eps, delta=delta, sensitivity="all")
    runs["FEDERASER"] = federaser(fed, t.scfg, t.training, requests, t.store, calibration_ratio=cfg.federaser_ratio)
    for name, run in runs.items():
        run.scheme = name
    extra = {"FEDACCUM (prose)": t.accum.stored_bytes, "FEDACCUM (code)": t.accum_code.stored_bytes,
             "FEDERASER": t.store.stored_bytes}
    return runs, sweep, extra


def _accuracy(fed: Federation, params: Tensor, clients: Sequence[int], keep: Tensor | None) -> float:
    """Mean accuracy on the clients' samples (only the ``keep`` (M, n) ones, e.g. those without a backdoor)."""
    if keep is None:
        return float(fed.client_accuracy(params, clients).mean())
    x, y = forgotten_samples(fed, clients, keep)
    return float(fed.trainer.accuracy(params, x[None], y[None])[0])


def _rows(run: UnlearningRun, fed: Federation, *, extra_bytes: int = 0, keep: Tensor | None = None) -> list[dict]:
    """One row per request: rounds, restart, accuracy on all forgotten clients F_r and on the remaining ones."""
    rows, forgotten, cumulative = [], set(), 0
    stored = run.training.stored_bytes + sum(s.stored_bytes for s in run.stages[1:]) + extra_bytes
    for r, req in enumerate(run.requests, 1):
        forgotten |= set(req.forgotten)
        cumulative += req.rounds
        rows.append({"scheme": run.scheme, "request": r, "paper": PAPER_F2.get(run.scheme, ""), "ours": req.rounds,
                     "total_rounds": cumulative, "reached_target": req.stage.reached_target,
                     "restart": None if req.restart is None else f"({req.branch}, {req.restart})",
                     "noise_std": req.noise, "acc_forgotten": _accuracy(fed, req.stage.params, sorted(forgotten), keep),
                     "acc_remaining": float(fed.client_accuracy(req.stage.params, req.stage.members).mean()),
                     "client_trainings": req.stage.client_updates, "stored_MB": stored / 2**20})
    return rows


def control_model(t: Trained, members: Sequence[int], index: int) -> Tensor:
    """The negative control: retrained on ``members`` from another seed's θ^0, with another seed's batches and
    client samples (the same data)."""
    seed = t.fed.seed + CONTROL_OFFSET
    fed = dataclasses.replace(t.fed, seed=seed)
    return run_stage(fed, t.scfg, get_flat(_model(t.setup, seed)), members, index=index).params


def _verification(t: Trained, runs: dict[str, UnlearningRun], *, nonmembers: tuple[Tensor, Tensor] | None = None,
                  members: tuple[Tensor, Tensor] | None = None, trigger: Trigger | None = None) -> list[dict]:
    """Every scheme's model after the last request beside the controls (trained with F; retrained without F at
    another seed), the distances measured to SCRATCH's model; held-out data: the test images with exact pixels."""
    last_req = runs["SCRATCH"].requests[-1]
    remaining = list(last_req.stage.members)
    forgotten = sorted(set(t.training.members) - set(remaining))
    controls = Controls(remembers=t.training.params, forgot=control_model(t, remaining, len(runs["SCRATCH"].requests)),
                        retrained=last_req.stage.params)
    return verify_with_controls(t.fed, {n: r.params for n, r in runs.items()}, forgotten, remaining, controls,
                                heldout=(t.test.x, t.test.y), members=members, nonmembers=nonmembers, trigger=trigger,
                                generator=make_generator(t.fed.seed, "verify", t.setup.dataset))


def _invariant(run: UnlearningRun, threshold: float) -> int:
    """Theorem 3's invariant on the final oracle: forgotten clients above Ψ* at a node of a branch they were on."""
    forgotten = [j for req in run.requests for j in req.forgotten]
    return sum(int(float(run.stages[s].psi[n, j]) > threshold) for s, n in run.oracle for j in forgotten
               if j in run.stages[s].members)


def _figure1(run: UnlearningRun, threshold: float) -> dict:
    """Ψ_s(n, W_r) of every request on every branch of SIFU's history, and the oracle (Fig. 1 from a real run)."""
    psi = {f"branch {s}/W_{r}": set_psi(stage, req.forgotten).tolist() for s, stage in enumerate(run.stages)
           for r, req in enumerate(run.requests, 1) if s < r and set(req.forgotten) <= set(stage.members)}
    rows = [{"request": r, "paper": "ζ_r, T_r by eqs. 17-18", "ours": f"(ζ = {q.branch}, T = {q.restart})",
             "branch_rounds": q.stage.rounds, "psi_star": threshold} for r, q in enumerate(run.requests, 1)]
    return {"psi": psi, "rows": rows + [{"request": "O(R)", "paper": "eq. 19", "ours": str(run.oracle)}]}


# --- the units -----------------------------------------------------------------------------------------------------

def f2_unit(t: Trained, cfg: SIFUConfig, *, defect: str | None, figure1: bool) -> dict:
    """Fig. 2 on one dataset and seed: every scheme on the sequential requests, the DP sweep, the verification of
    the final models with the controls, Theorem 3's invariant, and (``figure1``) SIFU's history."""
    reqs = requests_of(t.setup, cfg.requests)
    runs, sweep, extra = _schemes(t, cfg, reqs, dp_bounds=cfg.dp_bounds, defect=defect)
    rows = [row for name, run in runs.items() for row in _rows(run, t.fed, extra_bytes=extra.get(name, 0))]
    sigma1 = t.setup.sigma_ours or t.setup.sigma
    out = {"rows": rows, "dp_sweep": sweep, "verification": _verification(t, runs), "N_0": t.training.rounds,
           "invariant": sum(_invariant(runs[n], psi_star(s, cfg.epsilon, cfg.delta))
                            for n, s in (("SIFU", t.setup.sigma), ("SIFU (σ ours)", t.setup.sigma_ours)) if n in runs)}
    if figure1:
        out["F1"] = _figure1(runs["SIFU (σ ours)" if t.setup.sigma_ours else "SIFU"],
                             psi_star(sigma1, cfg.epsilon, cfg.delta))
    return out


def f5_unit(t: Trained, cfg: SIFUConfig, *, defect: str | None) -> dict:
    """Fig. 5: one request (the class-0 clients) served by SIFU for every σ of the sweep, beside SCRATCH."""
    w = requests_of(t.setup, 1)
    base = _scratch(t, w).requests[0]
    rows = [{"sigma": 0.0, "scheme": "SCRATCH", "paper": "reference", "ours": base.rounds, "T": 0,
             "acc_forgotten": float(t.fed.client_accuracy(base.stage.params, w[0]).mean())}]
    for s in sorted(cfg.sigma_sweep):
        q = _sifu(t, cfg, w, s, defect).requests[0]
        rows.append({"sigma": s, "scheme": "SIFU", "paper": "small σ: like SCRATCH; large σ: from the final model, "
                     "like LAST", "ours": q.rounds, "T": q.restart, "N_0": t.training.rounds,
                     "psi_star": psi_star(s, cfg.epsilon, cfg.delta),
                     "acc_forgotten": float(t.fed.client_accuracy(q.stage.params, w[0]).mean())})
    return {"rows": rows}


def f6_unit(t: Trained, cfg: SIFUConfig, *, defect: str | None) -> dict:
    """Fig. 6: a single request, the clients of class k, for each k of the config (SCRATCH, SIFU, FINE-TUNING)."""
    rows = []
    for k in cfg.f6_classes:
        w = [[10 * i + k for i in range(t.setup.num_clients // 10)]]
        for name, run in (("SCRATCH", _scratch(t, w)), ("SIFU", _sifu(t, cfg, w, t.setup.sigma, defect)),
                          ("FINE-TUNING", _fine_tune(t, w))):
            q = run.requests[0]
            rows.append({"class": k, "scheme": name, "paper": PAPER_F2[name], "ours": q.rounds,
                         "acc_forgotten": float(t.fed.client_accuracy(q.stage.params, w[0]).mean())})
    return {"rows": rows}


def trigger_of(setup: Setup, cfg: SIFUConfig) -> Trigger:
    """The backdoor the forgotten clients of Figs. 3-4 carry: a white patch relabelled to ``backdoor_target``."""
    white = float(_normalise(torch.ones(1, len(DATASETS[setup.dataset].mean), 1, 1), setup.dataset).max())
    return Trigger(cfg.backdoor_target, cfg.backdoor_size, white)


def _realised(t: Trained, cfg: SIFUConfig) -> Trained:
    """The same training (the same trajectory) with Ψ's increments weighted by the realised 1/(``|S_n|`` − 1) of the
    sampled clients instead of the paper's 1/(``|I_r|`` − 1) (``StageConfig.sampling_aware``; eqs. 7-8 assume full
    participation; ours)."""
    scfg = dataclasses.replace(t.scfg, sampling_aware=True)
    training = run_stage(t.fed, scfg, t.training.start, t.training.members, index=0,
                         thresholds=[psi_star(s, cfg.epsilon, cfg.delta) for s in tracked_sigmas(t.setup, cfg)])
    return dataclasses.replace(t, scfg=scfg, training=training, runs={})


def f3_unit(cfg: SIFUConfig, setup: Setup, data: Data, seed: int, *, defect: str | None) -> dict:
    """Figs. 3-4: Dir(α) clients whose samples carry their group's watermark (labels unchanged, the SIFU paper §5.3);
    the forgotten clients also carry a backdoor (ours). Accuracy on F_r is measured on their watermarked samples
    without the backdoor; the verification adds the backdoor's success and a membership attack whose non-members
    carry the members' watermarks."""
    fed = federation(setup, data, seed, alpha=cfg.watermark_alpha, watermark=cfg.watermark_pixels)
    reqs = requests_of(setup, cfg.requests)
    forgotten = sorted({c for w in reqs for c in w})
    trigger = trigger_of(setup, cfg)
    fed.x, fed.y, poisoned = plant_backdoor(fed.x, fed.y, forgotten, trigger, cfg.backdoor_fraction,
                                            generator=make_generator(seed, "backdoor", setup.dataset))
    t = train(cfg, setup, data, seed, watermark=cfg.watermark_pixels, target=setup.watermark_target,
              federation_=fed)
    runs = {"SCRATCH": _scratch(t, reqs), "SIFU": _sifu(t, cfg, reqs, setup.sigma, defect)}
    if setup.sigma_ours:
        runs["SIFU (σ ours)"] = _sifu(t, cfg, reqs, setup.sigma_ours, defect)
    runs["SIFU (Ψ realised)"] = _sifu(_realised(t, cfg), cfg, reqs, setup.sigma, defect)
    runs |= {"FINE-TUNING": _fine_tune(t, reqs), "FEDACCUM (prose)": fedaccum(fed, t.scfg, t.training, reqs, t.accum),
             "FEDACCUM (code)": fedaccum(fed, t.scfg, t.training, reqs, t.accum_code)}
    dp_train = dp_training(fed, t.scfg, t.training.start, range(setup.num_clients), bound=setup.bound,
                           sigma=dp_sigma(setup.bound, setup.num_clients, cfg.epsilon, 1 / setup.num_clients))
    runs["DP"] = dp(fed, t.scfg, dp_train, reqs, bound=setup.bound,
                    sigma=dp_sigma(setup.bound, setup.num_clients, cfg.epsilon, 1 / setup.num_clients))
    for name, run in runs.items():
        run.scheme = name
    keep = ~poisoned
    members = forgotten_samples(fed, forgotten, keep)
    groups = [c % 10 for c in forgotten for _ in range(int(keep[c].sum()))]
    x_test, y_test = data.test.x[data.exact], data.test.y[data.exact]
    idx = matched_nonmembers(members[1], y_test, make_generator(seed, "nonmembers", setup.dataset))
    order = torch.argsort(members[1], stable=True)  # matched_nonmembers returns the classes in sorted order
    nonmembers = (_normalise(_watermarked(x_test[idx], [groups[i] for i in order.tolist()], cfg.watermark_pixels),
                             setup.dataset), y_test[idx])
    return {"rows": [row for run in runs.values() for row in _rows(run, fed, keep=keep)],
            "verification": _verification(t, runs, members=members, nonmembers=nonmembers, trigger=trigger),
            "N_0": t.training.rounds}


def theory_unit(tc: TheoryConfig, seed: int) -> dict:
    """Theorem 1 and Corollary 1 on least squares, the identical-clients case, and Appendix A."""
    gen = make_generator(seed, "theory")
    x, y = bounds.least_squares_clients(tc.clients, tc.samples, tc.dim, generator=gen)
    theta0 = torch.randn(tc.dim, generator=gen, dtype=torch.float64)
    rows, series = [], {}
    for k in tc.local_steps:
        row: dict[str, Any] = {"K": k}
        for lam, label in ((0.0, "theorem1"), (tc.lam, "corollary1")):
            mu, big = bounds.curvature(x, lam)
            lr = tc.lr_factor / big
            kw = {"steps": k, "lr": lr, "lam": lam}
            traj = bounds.fedavg_trajectory(x, y, range(tc.clients), theta0, rounds=tc.rounds, **kw)
            psi = bounds.bounded_sensitivity(x, y, traj, **kw)
            dec = bounds.bounded_sensitivity(x, y, traj, **kw, decay=1 - lr * (lam + mu))
            alpha = torch.stack([bounds.model_sensitivity(traj, bounds.fedavg_trajectory(
                x, y, [i for i in range(tc.clients) if i != c], theta0, rounds=tc.rounds, **kw))
                for c in range(tc.clients)], 1)
            bound = psi if label == "theorem1" else dec
            row[f"{label}_violations"] = int((alpha > bound * (1 + 1e-9) + 1e-12).sum())  # float64 round-off
            row[f"{label}_max_ratio"] = float((alpha[1:] / bound[1:]).max())
            if label == "corollary1":
                half = tc.rounds // 2
                row["tighter"] = float(1 - (dec[-1] / psi[-1]).mean())
                row["growth_ratio"] = float(((dec[-1] - dec[half]) / (psi[-1] - psi[half])).mean())
                series[f"K = {k}, λ = {lam:g}: Ψ_dec"] = dec[:, 0].tolist()
            series[f"K = {k}, λ = {lam:g}: α"] = alpha[:, 0].tolist()
            series[f"K = {k}, λ = {lam:g}: Ψ"] = psi[:, 0].tolist()
        rows.append(row)
    same = bounds.fedavg_trajectory(x[:1].repeat(tc.clients, 1, 1), y[:1].repeat(tc.clients, 1), range(tc.clients),
                                    theta0, rounds=20, steps=2, lr=tc.lr_factor / bounds.curvature(x)[1])
    identical = float(bounds.bounded_sensitivity(x[:1].repeat(tc.clients, 1, 1), y[:1].repeat(tc.clients, 1), same,
                                                 steps=2, lr=tc.lr_factor / bounds.curvature(x)[1]).max())
    xa = torch.randn(tc.a_samples, tc.a_dim, generator=gen, dtype=torch.float64)
    ya = torch.randn(tc.a_samples, generator=gen, dtype=torch.float64)
    t0 = torch.randn(tc.a_dim, generator=gen, dtype=torch.float64)
    gaps = [{"finetune_steps": n, **bounds.finetune_gap(xa, ya, t0, drop=0, steps=tc.a_steps, finetune_steps=n,
                                                         lr=tc.a_lr)} for n in tc.a_finetune]
    return {"rows": rows, "series": series, "identical": identical, "appendix_a": gaps}


class UnlearningLab:
    """One trained federation of the chapter (the first setup of its config) that serves single requests on demand,
    for the unlearning explorer: SCRATCH, SIFU, FINE-TUNING, LAST and FedEraser forget the same clients from the
    same trained model, each read beside the two controls. Training happens once, in the constructor."""

    SCHEMES = ("SCRATCH", "SIFU", "FINE-TUNING", "LAST", "FEDERASER")

    def __init__(self, config: SIFUConfig, *, seed: int = 0, mode: str = "quick", progress: bool = False
                 ) -> None:
        self.cfg, self.setup = config, config.setups[0]
        self.trained = train(dataclasses.replace(config, figures=()), self.setup, load(self.setup, mode), seed,
                             alpha=self.setup.alpha, progress=progress)
        self.training = self.trained.training

    @classmethod
    def from_results(cls, results: Results, *, progress: bool = False) -> UnlearningLab:
        """The lab of a SIFU chapter run: same configuration, mode and seed."""
        if results.chapter != "sifu":
            raise ValueError(f"results must come from the sifu chapter, got {results.chapter!r}")
        c = {k: tuple(v) if isinstance(v, list) else v for k, v in results.config.items() if k != "theory"}
        setups = tuple(Setup(**{**s, "model_args": tuple(tuple(a) for a in s.get("model_args", ()))})
                       for s in c.pop("setups"))
        cfg = SIFUConfig(setups=setups, theory=None, **c)
        return cls(cfg, seed=results.seed, mode=results.mode, progress=progress)

    def forget(self, clients: list[int], schemes: tuple[str, ...] = SCHEMES) -> list[dict]:
        """Serve one request W = ``clients`` with each scheme. One row per scheme, then one per control (trained
        with W; retrained without W at another seed): rounds after the request, the round it restarted from,
        accuracy on the forgotten and on the remaining clients' data, and the KL of its outputs to SCRATCH's
        relative to the second control's."""
        unknown = [s for s in schemes if s not in self.SCHEMES]
        if unknown or not schemes:
            raise ValueError(f"schemes must be a non-empty subset of {self.SCHEMES}, got {schemes!r}")
        cfg, t, req = self.cfg, self.trained, [list(clients)]
        ref = scratch(t.fed, t.scfg, t.training, req)  # validates the request
        serve = {"SIFU": lambda: sifu(t.fed, t.scfg, t.training, req, sigma=self.setup.sigma, epsilon=cfg.epsilon,
                                      delta=cfg.delta),
                 "FINE-TUNING": lambda: fine_tune(t.fed, t.scfg, t.training, req),
                 "LAST": lambda: last(t.fed, t.scfg, t.training, req, epsilon=cfg.epsilon, delta=cfg.delta),
                 "FEDERASER": lambda: federaser(t.fed, t.scfg, t.training, req, t.store,
                                                calibration_ratio=cfg.federaser_ratio)}
        runs = {name: ref if name == "SCRATCH" else serve[name]() for name in schemes}
        checks = _verification(t, {"SCRATCH": ref} | runs)
        rows = []
        for check in checks:
            name = check["model"]
            if name not in runs and name in self.SCHEMES:
                continue  # SCRATCH is the distances' reference even when it was not asked for
            q = runs[name].requests[0] if name in runs else None
            rows.append({"scheme": name, "rounds": None if q is None else q.rounds,
                         "restart_round": None if q is None else q.restart,
                         "acc_forgotten": check["accuracy_forgotten"], "acc_remaining": check["accuracy_remaining"],
                         "relative_kl": check["relative_kl"]})
        return rows[2:] + rows[:2]
