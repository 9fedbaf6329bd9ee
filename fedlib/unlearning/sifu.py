"""IFU and SIFU (the SIFU paper): informed federated unlearning from the bounded sensitivity Ψ, and its sequential
version with a branching history and an oracle of branch nodes.

On a request to forget clients W, the server rolls back to the last round T at which every client of W had
Ψ ≤ Ψ* = εσ/c_δ (eqs. 13-14), perturbs θ^T with N(0, σ² I) — (ε, δ)-unlearning by Theorem 2 — and retrains on
the remaining clients. SIFU (Alg. 3) picks the branch to roll back on with the oracle O(r) (eqs. 17-19).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor

from fedlib.privacy.mechanisms import analytic_gaussian_ratio, gaussian_noise
from fedlib.rng import make_generator
from fedlib.unlearning.stage import Federation, Stage, StageConfig, run_stage

Calibration = Literal["classical", "analytic"]
Node = tuple[int, int]


def c_delta(delta: float) -> float:
    """c_δ = √(2 ln(1.25/δ)) (eq. 12; 3.107511 for δ = 0.01)."""
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return math.sqrt(2.0 * math.log(1.25 / delta))


def _check_epsilon(epsilon: float) -> None:
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")


def noise_std(psi: float, epsilon: float, delta: float) -> float:
    """σ(n, c) = c_δ Ψ(n, c)/ε, the noise that unlearns c from θ^n (eq. 12, Theorem 2)."""
    _check_epsilon(epsilon)
    if not psi >= 0:
        raise ValueError(f"psi must be >= 0, got {psi!r}")
    return c_delta(delta) * psi / epsilon


def psi_star(sigma: float, epsilon: float, delta: float, calibration: Calibration = "classical") -> float:
    """Ψ* = εσ/c_δ, the largest sensitivity noise σ unlearns (eq. 13).

    ``calibration="analytic"`` (ours): Ψ* = r·σ with r the largest Δ/σ for which the Gaussian
    mechanism is truly (ε, δ)-DP; the paper's c_δ bound is proved only for ε < 1 and at ε = 10, δ = 0.01 gives
    δ ≈ 0.041 (see :func:`fedlib.privacy.mechanisms.gaussian_delta`).
    """
    _check_epsilon(epsilon)
    if not sigma >= 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    if calibration == "classical":
        return epsilon * sigma / c_delta(delta)
    if calibration == "analytic":
        return analytic_gaussian_ratio(epsilon, delta) * sigma
    raise ValueError(f"calibration must be 'classical' or 'analytic', got {calibration!r}")


def restart_index(psi: Tensor, threshold: float, *, upto: int | None = None) -> int:
    """T = argmax_n {Ψ(n) ≤ Ψ*} (eq. 14, eq. 18), computed as the first exceedance minus one,
    or the last round if Ψ never exceeds Ψ*. ``psi`` is Ψ(n, ·) of one client or the max over a set (n = 0..N);
    ``upto`` limits the search to n ≤ upto (a cut oracle node)."""
    column = psi if upto is None else psi[: upto + 1]
    over = torch.nonzero(column > threshold).flatten()
    if len(over) == 0:
        return len(column) - 1
    return max(int(over[0]) - 1, 0)


def set_psi(stage: Stage, clients: Sequence[int]) -> Tensor:
    """Ψ(n, W) = max_{i∈W} Ψ(n, i) for n = 0..N (eq. 16)."""
    return stage.psi[:, list(clients)].max(1).values


def branch_point(oracle: Sequence[Node], stages: Sequence[Stage], forgotten: Sequence[int], threshold: float
                 ) -> tuple[int, int, list[Node]]:
    """(ζ_r, T_r, O(r)) for request W_r = ``forgotten`` (eqs. 17-19).

    ζ_r is the branch of the first node (s, n) of O(r−1), in order, with Ψ_s(n, W_r) > Ψ*, else r − 1 (the
    latest branch, ``len(stages) − 1``); T_r is the last round of branch ζ_r before W_r exceeds Ψ*;
    O(r) keeps the nodes of branches before ζ_r and appends (ζ_r, T_r).
    """
    zeta, upto = len(stages) - 1, None
    for s, n in oracle:
        if float(set_psi(stages[s], forgotten)[n]) > threshold:
            zeta, upto = s, n
            break
    t = restart_index(set_psi(stages[zeta], forgotten), threshold, upto=upto)
    return zeta, t, [(s, n) for s, n in oracle if s < zeta] + [(zeta, t)]


@dataclass
class Request:
    """What serving one request cost and produced.

    Attributes:
        forgotten: W_r; members: I_r; stage: the retraining (its rounds are N_r).
        branch, restart: ζ_r and T_r (SIFU), or what the scheme started from.
        noise: the std of the restart perturbation.
    """

    forgotten: tuple[int, ...]
    stage: Stage
    branch: int | None = None
    restart: int | None = None
    noise: float = 0.0
    extra_rounds: int = 0  # rounds spent before the retraining stage (FedEraser's calibration)

    @property
    def rounds(self) -> int:
        return self.stage.rounds + self.extra_rounds


@dataclass
class UnlearningRun:
    """A scheme's history: the training stage, then one entry per request."""

    scheme: str
    training: Stage
    requests: list[Request] = field(default_factory=list)
    oracle: list[Node] = field(default_factory=list)

    @property
    def stages(self) -> list[Stage]:
        return [self.training] + [r.stage for r in self.requests]

    @property
    def params(self) -> Tensor:
        return self.stages[-1].params


def perturb(params: Tensor, std: float, generator: torch.Generator) -> Tensor:
    """θ̃ = θ + ν, ν ~ N(0, σ² I) on every parameter (Theorem 2's Gaussian mechanism, Alg. 2 line 'noise')."""
    if std == 0:
        return params.clone()
    return params + gaussian_noise(params.shape, std, generator=generator, dtype=params.dtype)


def check_requests(requests: Sequence[Sequence[int]], members: Sequence[int]) -> list[tuple[int, ...]]:
    """Validated request sets: non-empty, clients still present, at least 2 left after all requests."""
    remaining = set(members)
    out = []
    for r, w in enumerate(requests, 1):
        w = tuple(sorted(int(i) for i in w))
        if not w:
            raise ValueError(f"request {r} is empty")
        gone = [i for i in w if i not in remaining]
        if gone:
            raise ValueError(f"request {r} asks to forget clients {gone} that are not (or no longer) trained on")
        remaining -= set(w)
        out.append(w)
    if len(remaining) < 2:
        raise ValueError(f"after the requests only {len(remaining)} clients remain; at least 2 are needed")
    return out


def serve(training: Stage, requests: Sequence[Sequence[int]]) -> Iterator[tuple[int, tuple[int, ...], list[int]]]:
    """(r, W_r, I_r) for each validated request, r from 1."""
    members = set(training.members)
    for r, w in enumerate(check_requests(requests, training.members), 1):
        members -= set(w)
        yield r, w, sorted(members)


def sifu(fed: Federation, cfg: StageConfig, training: Stage, requests: Sequence[Sequence[int]], *, sigma: float,
         epsilon: float, delta: float, calibration: Calibration = "classical", noise: bool = True,
         progress: bool = False) -> UnlearningRun:
    """SIFU (Alg. 3; IFU, Alg. 2, for one request) on a training stage tracked with threshold Ψ*.

    Each retraining stage tracks Ψ afresh on I_r (eq. 15) with the same threshold, and the request's restart
    perturbation is drawn from the (seed, "restart", r) stream. ``noise=False`` skips the perturbation (a
    check, not unlearning).
    """
    threshold = psi_star(sigma, epsilon, delta, calibration)
    run = UnlearningRun("SIFU", training)
    for r, w, members in serve(training, requests):
        zeta, t, run.oracle = branch_point(run.oracle, run.stages, w, threshold)
        start = perturb(run.stages[zeta].model(t), sigma if noise else 0.0, make_generator(fed.seed, "restart", r))
        stage = run_stage(fed, cfg, start, members, index=r, thresholds=(threshold,), progress=progress)
        run.requests.append(Request(w, stage, zeta, t, sigma if noise else 0.0))
    return run
