"""The unlearning baselines of the SIFU paper §5 and FedEraser (Liu et al. 2021).

Every scheme serves the same requests on the same training stage (except DP, which trains with DP from the
start) and then retrains on the remaining clients with the stopping rule of :func:`run_stage`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import torch
from torch import Tensor

from fedlib.privacy.clipping import clip_rows
from fedlib.privacy.mechanisms import gaussian_noise
from fedlib.rng import make_generator
from fedlib.unlearning.sifu import Request, UnlearningRun, c_delta, noise_std, perturb, serve, set_psi
from fedlib.unlearning.stage import Federation, RoundRecord, ServerStep, Stage, StageConfig, run_stage


def scratch(fed: Federation, cfg: StageConfig, training: Stage, requests: Sequence[Sequence[int]], *,
            progress: bool = False) -> UnlearningRun:
    """SCRATCH (A4): retrain on I_r from the training's initial model θ_0^0 at every request."""
    run = UnlearningRun("SCRATCH", training)
    for r, w, members in serve(training, requests):
        run.requests.append(Request(w, run_stage(fed, cfg, training.start, members, index=r,
                                                 progress=progress), restart=0))
    return run


def fine_tune(fed: Federation, cfg: StageConfig, training: Stage, requests: Sequence[Sequence[int]], *,
              progress: bool = False) -> UnlearningRun:
    """FINE-TUNING (A5): continue FedAvg on I_r from the current model, no rollback, no noise."""
    run = UnlearningRun("FINE-TUNING", training)
    for r, w, members in serve(training, requests):
        prev = run.stages[-1]
        run.requests.append(Request(w, run_stage(fed, cfg, prev.params, members, index=r,
                                                 progress=progress), r - 1, prev.rounds))
    return run


def last(fed: Federation, cfg: StageConfig, training: Stage, requests: Sequence[Sequence[int]], *, epsilon: float,
         delta: float, sensitivity: Literal["forgotten", "all"] = "forgotten", progress: bool = False
         ) -> UnlearningRun:
    """LAST (A6): perturb the current final model with std s_r = c_δ Ψ/ε (Theorem 2 at n = N), then retrain.

    ``sensitivity="forgotten"``: Ψ_{r−1}(N_{r−1}, W_r), the forgotten clients' bound (default);
    ``"all"``: the largest Ψ of any client and round of the previous stage (the authors' code).
    """
    if sensitivity not in ("forgotten", "all"):
        raise ValueError(f"sensitivity must be 'forgotten' or 'all', got {sensitivity!r}")
    run = UnlearningRun("LAST", training)
    for r, w, members in serve(training, requests):
        prev = run.stages[-1]
        psi = float(set_psi(prev, w)[-1]) if sensitivity == "forgotten" else float(prev.psi.max())
        std = noise_std(psi, epsilon, delta)
        start = perturb(prev.params, std, make_generator(fed.seed, "last", r))
        run.requests.append(Request(w, run_stage(fed, cfg, start, members, index=r, progress=progress),
                                    r - 1, prev.rounds, std))
    return run


def dp_sigma(bound: float, num_clients: int, epsilon: float, delta: float) -> float:
    """σ_DP = (2C/M) c_δ/ε, the DP baseline's per-round noise on the global model (authors' code;
    a per-round calibration with no composition over rounds, A10)."""
    if not bound > 0:
        raise ValueError(f"bound must be > 0, got {bound!r}")
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients!r}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    return 2.0 * bound / num_clients * c_delta(delta) / epsilon


def dp_step(bound: float, sigma: float) -> ServerStep:
    """DP-FedAvg's server step (A7): clip u_i = θ_i − θ^n to ‖u_i‖ ≤ C, average, add N(0, σ_DP² I).
    ``bound=inf`` and ``sigma=0`` give :func:`~fedlib.unlearning.stage.fedavg_step` bit for bit."""
    if not bound > 0:
        raise ValueError(f"bound must be > 0, got {bound!r}")
    if not sigma >= 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")

    def step(start: Tensor, local: Tensor, clients: tuple[int, ...], generator: torch.Generator) -> Tensor:
        updates = local - start
        if bound != float("inf"):
            updates = clip_rows(updates, bound)
        new = start + updates.mean(0)
        return new + gaussian_noise(new.shape, sigma, generator=generator) if sigma > 0 else new

    return step


def dp_training(fed: Federation, cfg: StageConfig, start: Tensor, members: Sequence[int], *, bound: float,
                sigma: float, progress: bool = False) -> Stage:
    """The DP baseline's own training from θ_0^0 on all clients, clipped and noised every round."""
    return run_stage(fed, cfg, start, members, index=0, server_step=dp_step(bound, sigma), progress=progress)


def dp(fed: Federation, cfg: StageConfig, training: Stage, requests: Sequence[Sequence[int]], *, bound: float,
       sigma: float, progress: bool = False) -> UnlearningRun:
    """DP (A7): drop W_r and continue the same DP training on I_r (``training`` from :func:`dp_training`)."""
    run = UnlearningRun("DP", training)
    for r, w, members in serve(training, requests):
        prev = run.stages[-1]
        run.requests.append(Request(w, run_stage(fed, cfg, prev.params, members, index=r,
                                                 server_step=dp_step(bound, sigma), progress=progress),
                                    r - 1, prev.rounds, sigma))
    return run


class FedAccum:
    """FedAccum's accumulators (A8), one per future request, updated by every round of every stage.

    The source's Appendix-D pseudo-code is missing; from its prose: ``mode="updates"`` (default) adds the mean
    update of the round's non-forgotten clients, A ← A + mean_{i∈S'} (θ_i − θ^n), so that with nothing
    forgotten A is the trained model; ``mode="code"`` follows the authors' code, A ← A + mean_{i∈S'} (θ_i − A),
    the mean of the last round's non-forgotten local models.
    """

    def __init__(self, start: Tensor, requests: Sequence[Sequence[int]], mode: Literal["updates", "code"] = "updates"
                 ) -> None:
        if mode not in ("updates", "code"):
            raise ValueError(f"mode must be 'updates' or 'code', got {mode!r}")
        self.mode = mode
        forgotten: set[int] = set()
        self.forgotten: list[set[int]] = []
        for w in requests:
            forgotten |= set(w)
            self.forgotten.append(set(forgotten))
        self.accumulators = [start.clone() for _ in requests]
        self.served = 0

    def __call__(self, rec: RoundRecord) -> None:
        for k in range(self.served, len(self.accumulators)):
            keep = [j for j, c in enumerate(rec.clients) if c not in self.forgotten[k]]
            if not keep:
                continue
            base = rec.start if self.mode == "updates" else self.accumulators[k]
            self.accumulators[k] = self.accumulators[k] + (rec.local_models[keep] - base).mean(0)

    @property
    def stored_bytes(self) -> int:
        return sum(a.numel() * a.element_size() for a in self.accumulators)


def fedaccum(fed: Federation, cfg: StageConfig, training: Stage, requests: Sequence[Sequence[int]],
             accumulator: FedAccum, *, progress: bool = False) -> UnlearningRun:
    """FEDACCUM (A8): at request r, restart from A_r and retrain on I_r (no guarantee). ``accumulator`` must have
    observed the training stage (``run_stage(..., observers=[accumulator])``)."""
    run = UnlearningRun("FEDACCUM", training)
    for r, w, members in serve(training, requests):
        start = accumulator.accumulators[r - 1]
        accumulator.served = r
        run.requests.append(Request(w, run_stage(fed, cfg, start, members, index=r,
                                                 observers=[accumulator], progress=progress)))
    return run


class UpdateStore:
    """FedEraser's server-side memory: the sampled clients' updates θ_i − θ^n of every ``interval``-th round."""

    def __init__(self, interval: int) -> None:
        if not isinstance(interval, int) or interval < 1:
            raise ValueError(f"interval must be a positive int, got {interval!r}")
        self.interval = interval
        self.rounds: list[tuple[tuple[int, ...], Tensor]] = []

    def __call__(self, rec: RoundRecord) -> None:
        if rec.stage == 0 and rec.round % self.interval == 0:
            self.rounds.append((rec.clients, rec.local_models - rec.start))

    @property
    def stored_bytes(self) -> int:
        return sum(u.numel() * u.element_size() for _, u in self.rounds)


def federaser_calibrate(fed: Federation, start: Tensor, store: UpdateStore, forgotten: Sequence[int], *,
                        steps: int | Sequence[int], batch_size: int, lr: float, momentum: float, stream: str
                        ) -> tuple[Tensor, int, int]:
    """FedEraser's reconstruction (Liu et al. 2021, Alg. 1, as in its public code): from θ_0^0, replay the retained
    rounds without the forgotten clients. The first retained round applies the stored mean update of its
    remaining clients as it is; at every later one they train ``calibration_ratio`` of the local steps from the
    calibrated model M̃, and each layer L moves by the stored update's norm in the new update's direction,
    M̃[L] ← M̃[L] + ‖U_old[L]‖₂ · U_new[L]/‖U_new[L]‖₂ (U: the mean update of the round's remaining clients).

    ``steps``: the calibration's local steps, one count for all, or one per client id (clients of unequal sizes).

    Returns:
        The calibrated model, the calibration rounds and the client trainings they cost.
    """
    layers = torch.split(torch.arange(start.numel()), fed.trainer.sizes)
    drop = set(forgotten)
    theta, rounds, trainings = start.clone(), 0, 0
    for n, (clients, updates) in enumerate(store.rounds):
        keep = [j for j, c in enumerate(clients) if c not in drop]
        if not keep:
            continue
        old = updates[keep].mean(0)
        if rounds == 0:
            theta = theta + old
        else:
            chosen = [clients[j] for j in keep]
            gens = [make_generator(fed.seed, stream, n, c) for c in chosen]
            local = fed.trainer.train(theta, fed.x[chosen], fed.y[chosen], batch_size=batch_size, lr=lr,
                                      steps=steps if isinstance(steps, int) else [steps[c] for c in chosen],
                                      momentum=momentum, generators=gens)
            new = local.mean(0) - theta
            step = torch.empty_like(new)
            for idx in layers:
                norm = torch.linalg.vector_norm(new[idx])
                step[idx] = new[idx] * (torch.linalg.vector_norm(old[idx]) / norm if norm > 0 else 0.0)
            theta = theta + step
            trainings += len(chosen)
        rounds += 1
    return theta, rounds, trainings


def federaser(fed: Federation, cfg: StageConfig, training: Stage, requests: Sequence[Sequence[int]],
              store: UpdateStore, *, calibration_ratio: float = 0.5, progress: bool = False) -> UnlearningRun:
    """FedEraser (Liu et al. 2021; not in the SIFU paper's experiments): at request r, rebuild a model without F_r
    from the training's stored updates (:func:`federaser_calibrate`), then retrain on I_r to the target.
    Sequential requests all calibrate against the original training history. ``store`` must have observed
    the training stage."""
    if not 0 < calibration_ratio <= 1:
        raise ValueError(f"calibration_ratio must be in (0, 1], got {calibration_ratio!r}")
    run = UnlearningRun("FEDERASER", training)
    for r, w, members in serve(training, requests):
        start, rounds, trainings = federaser_calibrate(
            fed, training.start, store, sorted(set(training.members) - set(members)),
            steps=max(1, math.ceil(calibration_ratio * cfg.local_steps)), batch_size=cfg.batch_size, lr=cfg.lr,
            momentum=cfg.momentum, stream=f"federaser{r}")
        stage = run_stage(fed, cfg, start, members, index=r, progress=progress)
        stage.client_updates += trainings
        run.requests.append(Request(w, stage, extra_rounds=rounds))
    return run
