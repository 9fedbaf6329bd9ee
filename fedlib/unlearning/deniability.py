"""Federated unlearning under plausible deniability (Varshney and Torra, ACML 2024): perturbed k-IPfedAvg,
Proofs of Deniability, rollback and replay, the privacy calculator, and the retrain-trigger simulator.

Every round the server clusters the active clients' models into ⌊N/k⌋ clusters of k to 2k similar models
(constrained k-means on the rows of the distance matrix, as the authors' code), draws one representative per
cluster, perturbs it with N(0, (σ Δ_c)² I) where Δ_c is the cluster's spread, and aggregates the representatives
with the clusters' data weights (Alg. 1, eqs. 11-12). It stores only the clusters' member lists L_t and the global
models G_t. On a request the client's id is deleted from every stored cluster: if each keeps ≥ x members the
server hands out a Proof of Deniability (PoD) and changes nothing; otherwise it rolls back to the first violating
round t0 and replays rounds t0..r−1 without the client (from G_{t0−1}; the authors' code's reload of G_{t0} at
every replay step is kept as a literal variant).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from torch import Tensor

from fedlib import checkpoint as checkpoint_io
from fedlib.fl.batched import client_sizes
from fedlib.privacy.clipping import clip_rows
from fedlib.rng import make_generator
from fedlib.unlearning.baselines import UpdateStore, federaser_calibrate
from fedlib.unlearning.stage import Federation, RoundRecord

Metric = Literal["cosine", "rowwise_l2"]


# --- distances and clustering ---------------------------------------------------------------------------------

def distance_matrix(models: Tensor, metric: Metric = "cosine", shapes: Sequence[torch.Size] | None = None) -> Tensor:
    """Pairwise distances between flat models (N, d), float64.

    ``"cosine"``: 1 − cos(w_i, w_j) on all weights and biases (the source's "cosine distance measure").
    ``"rowwise_l2"``: the authors' code's "avg" distance — the mean, over every row of every weight tensor (last
    dimension) and every bias vector, of ‖a − b + 1e-6‖₂; needs the parameter ``shapes``.
    """
    models = models.double()
    if metric == "cosine":
        unit = models / torch.linalg.vector_norm(models, dim=1, keepdim=True).clamp_min(1e-12)
        return (1.0 - unit @ unit.T).clamp_min(0.0).fill_diagonal_(0.0)
    if metric != "rowwise_l2":
        raise ValueError(f"metric must be 'cosine' or 'rowwise_l2', got {metric!r}")
    if shapes is None:
        raise ValueError("the rowwise_l2 distance needs the parameter shapes")
    n = len(models)
    total, count = torch.zeros(n, n, dtype=torch.float64), 0
    for part, shape in zip(torch.split(models, [math.prod(s) for s in shapes], dim=1), shapes):
        rows = part.reshape(n, -1, shape[-1]) if len(shape) >= 2 else part.reshape(n, 1, -1)  # (n, R, c)
        sq, sums = rows.pow(2).sum(2).T, rows.sum(2).T  # (R, n)
        # ‖a − b + ε‖² = ‖a‖² + ‖b‖² − 2⟨a, b⟩ + 2ε Σ(a − b) + c ε², for every row r and pair (i, j) at once
        d2 = (sq[:, :, None] + sq[:, None, :] - 2 * torch.einsum("irc,jrc->rij", rows, rows)
              + 2e-6 * (sums[:, :, None] - sums[:, None, :]) + rows.shape[2] * 1e-12)
        total += d2.clamp_min(0.0).sqrt().sum(0)
        count += rows.shape[1]
    return (total / count).fill_diagonal_(0.0)


def constrained_clusters(distances: Tensor, k: int, *, generator: torch.Generator, iterations: int = 20
                         ) -> list[tuple[int, ...]]:
    """m = ⌊N/k⌋ clusters of k to 2k points (the code's KMeansConstrained(size_min=k, size_max=2k)).

    Each point is represented by its row of ``distances``; Lloyd iterations alternate a size-constrained
    assignment (an optimal transport onto k mandatory and k optional slots per centroid, by
    ``scipy.optimize.linear_sum_assignment``) and centroid updates, from ``m`` seeded random points.
    """
    n = len(distances)
    if not isinstance(k, int) or not 1 <= k <= n:
        raise ValueError(f"k must be an int in [1, N = {n}], got {k!r}")
    m = n // k
    feats = distances.double().numpy()
    centroids = feats[torch.randperm(n, generator=generator)[:m].numpy()]
    big = 1e6 * (1.0 + float(np.abs(feats).max()))
    labels = None
    for _ in range(iterations):
        cost = ((feats[:, None, :] - centroids[None]) ** 2).sum(-1)  # (n, m)
        slots = np.concatenate([cost - big, cost], axis=1)  # k mandatory, then k optional slots per centroid
        slots = np.repeat(slots.reshape(n, 2, m), k, axis=1).reshape(n, 2 * k * m)
        rows, cols = linear_sum_assignment(slots)
        new = np.empty(n, dtype=int)
        new[rows] = (cols % (k * m)) // k
        if labels is not None and np.array_equal(new, labels):
            break
        labels = new
        centroids = np.stack([feats[labels == c].mean(0) for c in range(m)])
    return [tuple(int(i) for i in np.nonzero(labels == c)[0]) for c in range(m)]


# --- one perturbed k-IPfedAvg round -----------------------------------------------------------------------------

class DivergedError(FloatingPointError):
    """The clients' models hold non-finite parameters: training diverged and the round cannot be clustered."""


@dataclass
class ClusterRound:
    """What one aggregation did: the clusters (client ids), their spreads Δ_c and weights p_c, the new model."""

    clusters: list[tuple[int, ...]]
    spreads: list[float]
    weights: list[float]
    params: Tensor
    representatives: list[int] | None = None  # only with record_representatives=True (tests; A24)


def kip_aggregate(models: Tensor, clients: Sequence[int], sizes: Sequence[int], *, k: int, noise_multiplier: float,
                  metric: Metric, generator: torch.Generator, shapes: Sequence[torch.Size] | None = None,
                  strict_delta: float | None = None, center: Tensor | None = None,
                  record_representatives: bool = False) -> ClusterRound:
    """Perturbed k-IPfedAvg's server step (Alg. 1, eqs. 11-12): cluster, draw r_c uniformly in each cluster,
    add N(0, (σ Δ_c)² I) with Δ_c the cluster's largest pairwise distance, aggregate Σ_c p_c w̃_{r_c} with
    p_c = Σ_{l∈C_c} n_l / Σ_{A_t} n_l. ``noise_multiplier`` = σ (the code: 1).

    ``strict_delta`` = Δ fixed a priori (a "strict" mode; ours): every model is first
    projected onto the L2 ball of radius Δ/2 around ``center`` (the round's broadcast model, which is public), so
    any two members lie within Δ of each other in L2, and the noise is N(0, (σΔ)² I) whatever the measured Δ_c.
    A cluster's release then has L2 sensitivity Δ, noise/sensitivity z = σ (:func:`eps_rdp`), given the clusters.
    """
    if not noise_multiplier >= 0:
        raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}")
    if not bool(torch.isfinite(models).all()):
        bad = sorted(clients[i] for i in torch.nonzero(~torch.isfinite(models).all(1)).flatten().tolist())
        raise DivergedError(f"the models of clients {bad} hold non-finite parameters (local training diverged); "
                            "their distances, and so the clusters, are undefined")
    if len(models) != len(clients) or len(sizes) != len(clients):
        raise ValueError(f"models, clients and sizes disagree: {len(models)}, {len(clients)}, {len(sizes)}")
    if strict_delta is not None:
        if not strict_delta > 0:
            raise ValueError(f"strict_delta must be > 0 or None, got {strict_delta!r}")
        if center is None:
            raise ValueError("strict_delta needs the round's broadcast model as center")
        models = center + clip_rows(models - center, strict_delta / 2)
    dist = distance_matrix(models, metric, shapes)
    groups = constrained_clusters(dist, k, generator=generator)
    total = float(sum(sizes))
    new = torch.zeros_like(models[0])
    spreads, weights, reps = [], [], []
    for group in groups:
        idx = list(group)
        spread = float(dist[idx][:, idx].max())
        weight = sum(sizes[i] for i in idx) / total
        rep = idx[int(torch.randint(len(idx), (1,), generator=generator))]
        scale = spread if strict_delta is None else strict_delta
        noise = torch.randn(models.shape[1], generator=generator, dtype=models.dtype) * (noise_multiplier * scale)
        new += weight * (models[rep] + noise)
        spreads.append(spread)
        weights.append(weight)
        reps.append(clients[rep])
    clusters = [tuple(sorted(clients[i] for i in g)) for g in groups]
    return ClusterRound(clusters, spreads, weights, new, reps if record_representatives else None)


# --- the authors' non-iid split -----------------------------------------------------------------------------------

#: client sizes of the authors' non-iid experiments (their ``device records.p``; sum 59,374): quantity skew only
NONIID_SIZES = (475, 1292, 894, 948, 1738, 1579, 1415, 1768, 1990, 1403, 1198, 1747, 1654, 1664, 1206, 972, 1358,
                1349, 1867, 1496, 1256, 1465, 478, 1580, 933, 977, 1666, 996, 709, 605, 1246, 1889, 491, 1978, 785,
                1457, 584, 411, 1019, 1390, 600, 1117, 594, 1871, 518, 825, 1219, 1505, 742, 455)


def noniid_sizes(total: int, num_clients: int = 50) -> list[int]:
    """Client sizes for ``total`` training samples: the authors' list with the last client absorbing the remainder
    (their code, MNIST's 60,000), or scaled to ``total`` with the last client fixing the sum when the list holds
    more (our proposal for 50,000-image datasets)."""
    if num_clients != len(NONIID_SIZES):
        raise ValueError(f"the authors' sizes are for {len(NONIID_SIZES)} clients, got num_clients={num_clients}")
    sizes = list(NONIID_SIZES)
    if total < sum(sizes):
        sizes = [max(1, round(s * total / sum(NONIID_SIZES))) for s in sizes]
    sizes[-1] += total - sum(sizes)
    if sizes[-1] < 1:
        raise ValueError(f"total={total} is too small for {num_clients} clients")
    return sizes


# --- training with requests, PoD, rollback -------------------------------------------------------------------------

@dataclass(frozen=True)
class LocalWork:
    """E epochs of mini-batch SGD of size B, run as E·⌈n/B⌉ steps on fresh random batches (vectorised clients)."""

    epochs: int = 3
    batch_size: int = 128
    lr: float = 0.02

    def steps(self, n: int) -> int:
        return self.epochs * math.ceil(n / self.batch_size)

    def client_steps(self, sizes: Tensor, ratio: float = 1.0) -> int | list[int]:
        """Each client's step count max(1, ⌈ratio·E⌈n_i/B⌉⌉); one int when every client has the same n."""
        counts = [max(1, math.ceil(ratio * self.steps(int(n)))) for n in sizes]
        return counts[0] if bool((sizes == sizes[0]).all()) else counts


def request_schedule(num_clients: int, rounds: int, probability: float, *, generator: torch.Generator,
                     first_round: int = 2) -> dict[int, int]:
    """round → client asking to be unlearned at the start of that round: from ``first_round`` on, with
    ``probability`` per round, one client drawn uniformly from those still active (the authors' code, A13)."""
    if not 0 <= probability <= 1:
        raise ValueError(f"probability must be in [0, 1], got {probability!r}")
    active = list(range(num_clients))
    out = {}
    for r in range(first_round, rounds):
        if len(active) > 2 and float(torch.rand((), generator=generator, dtype=torch.float64)) < probability:
            out[r] = active.pop(int(torch.randint(len(active), (1,), generator=generator)))
    return out


@dataclass
class Unlearning:
    """One served request: who, when, whether it was denied (PoD) or retrained from t0, and its cost."""

    round: int
    client: int
    rollback: int | None
    replayed_rounds: int
    seconds: float

    @property
    def denied(self) -> bool:
        return self.rollback is None


@dataclass
class DeniabilityRun:
    """A training run with requests: the stored history (test accuracy, G_t, L_t and Δ_c of every round, as
    rewritten by replays), what was served round by round, and the requests.

    ``served_accuracy[r]`` is the test accuracy of the model in service after round r as it ran (a later replay
    does not rewrite it); ``served_distance[r]`` its L2 distance to the reference model of round r, if given."""

    method: str
    accuracy: list[float] = field(default_factory=list)
    models: list[Tensor] = field(default_factory=list)  # G_t, the global model after round t
    clusters: list[list[tuple[int, ...]]] = field(default_factory=list)  # L_t
    spreads: list[list[float]] = field(default_factory=list)
    requests: list[Unlearning] = field(default_factory=list)
    served_accuracy: list[float] = field(default_factory=list)
    served_distance: list[float] = field(default_factory=list)
    stored_bytes: int = 0
    diverged: int | None = None  # the round whose clients' models first went non-finite (see train_with_requests)

    @property
    def params(self) -> Tensor:
        return self.models[-1]


def pod_violation(clusters: Sequence[Sequence[tuple[int, ...]]], client: int, x: int) -> tuple[
        list[list[tuple[int, ...]]], int | None]:
    """Delete ``client`` from every stored cluster; return the new lists and the first round t0 where a cluster
    that held it keeps fewer than x members (None: all keep ≥ x, the server can plausibly deny)."""
    out, t0 = [], None
    for t, round_clusters in enumerate(clusters):
        kept = []
        for c in round_clusters:
            if client in c:
                c = tuple(i for i in c if i != client)
                if len(c) < x and t0 is None:
                    t0 = t
            kept.append(c)
        out.append(kept)
    return out, t0


def proof_of_deniability(clusters: Sequence[Sequence[tuple[int, ...]]], client: int, x: int) -> bool:
    """PoD(c*) is valid iff c* is in no stored cluster and every stored cluster has ≥ x members (§3.1, A23)."""
    return all(client not in c and len(c) >= x for round_clusters in clusters for c in round_clusters)


#: (round t, model before the round, active clients) -> (model after, clusters, spreads)
RoundFn = Callable[[int, Tensor, list[int]], tuple[Tensor, list[tuple[int, ...]], list[float]]]


def _local_models(fed: Federation, work: LocalWork, t: int, theta: Tensor, active: list[int]) -> Tensor:
    gens = [make_generator(fed.seed, "train", t, c) for c in active]
    return fed.trainer.train(theta, fed.x[active], fed.y[active], steps=work.client_steps(client_sizes(fed.y[active])),
                             batch_size=work.batch_size, lr=work.lr, generators=gens)


def kip_round(fed: Federation, work: LocalWork, *, k: int, noise_multiplier: float = 1.0, metric: Metric = "cosine",
              strict_delta: float | None = None) -> RoundFn:
    """Round t of perturbed k-IPfedAvg with every active client training (streams keyed by t and client, so a
    replay without a client is an independent run without it); ``strict_delta``: see :func:`kip_aggregate`."""
    shapes = fed.trainer.shapes

    def step(t: int, theta: Tensor, active: list[int]) -> tuple[Tensor, list[tuple[int, ...]], list[float]]:
        local = _local_models(fed, work, t, theta, active)
        out = kip_aggregate(local, active, client_sizes(fed.y[active]).tolist(), k=k,
                            noise_multiplier=noise_multiplier, metric=metric,
                            generator=make_generator(fed.seed, "server", t), shapes=shapes,
                            strict_delta=strict_delta, center=theta)
        return out.params, out.clusters, out.spreads

    return step


def fedavg_round(fed: Federation, work: LocalWork, store: UpdateStore | None = None) -> RoundFn:
    """Round t of FedAvg with full participation, w ← Σ_l p_l w_l with p_l = n_l / Σ n (A1; equal client sizes:
    the plain mean); ``store`` keeps the clients' updates for FedEraser."""
    def step(t: int, theta: Tensor, active: list[int]) -> tuple[Tensor, list[tuple[int, ...]], list[float]]:
        local = _local_models(fed, work, t, theta, active)
        sizes = client_sizes(fed.y[active])
        if bool((sizes == sizes[0]).all()):
            new = theta + (local - theta).mean(0)
        else:
            new = theta + ((sizes / sizes.sum()).to(local.dtype).unsqueeze(1) * (local - theta)).sum(0)
        if store is not None:
            store(RoundRecord(0, t, theta, tuple(active), local, new))
        return new, [], []

    return step


def fedavg_reference(fed: Federation, work: LocalWork, init: Tensor, rounds: int, members: Sequence[int],
                     progress: bool = False) -> list[Tensor]:
    """G_0..G_{T−1} of FedAvg from w_0 on ``members`` alone: fedAvg_retrain's stored history once every request
    is served (its last retrain replays every earlier round without all forgotten clients), the reference of
    Fig. 17 and the "retrained" model of the verification."""
    round_fn, theta, out = fedavg_round(fed, work), init.clone(), []
    steps: Iterable[int] = range(rounds)
    if progress:
        from fedlib.progress import progress_bar
        steps = progress_bar(steps, desc="FedAvg reference", leave=False)
    for t in steps:
        theta = round_fn(t, theta, list(members))[0]
        out.append(theta)
    return out


def _accuracy(fed: Federation, params: Tensor, test: tuple[Tensor, Tensor]) -> float:
    """Test accuracy of ``params``; a model with non-finite parameters classifies nothing, so 0 (its NaN logits
    would otherwise all be read as the first class)."""
    if not bool(torch.isfinite(params).all()):
        return 0.0
    return float(fed.trainer.accuracy(params, test[0].unsqueeze(0), test[1].unsqueeze(0))[0])


def _distance(a: Tensor, b: Tensor) -> float:
    return float(torch.linalg.vector_norm((a - b).double()))


def train_with_requests(fed: Federation, round_fn: RoundFn, init: Tensor, rounds: int, schedule: dict[int, int],
                        test: tuple[Tensor, Tensor], *, method: str, x: int | None = None,
                        unlearn: Literal["pod", "retrain", "federaser"] = "pod",
                        rollback: Literal["replay", "reload"] = "replay",
                        federaser: tuple[UpdateStore, LocalWork, float] | None = None,
                        reference: Sequence[Tensor] | None = None, checkpoint: tuple[Path, dict] | None = None,
                        checkpoint_every_s: float = 300.0, progress: bool = False) -> DeniabilityRun:
    """Train from ``init`` (w_0) for ``rounds`` rounds, serving ``schedule``'s requests at the start of their rounds.

    ``unlearn="pod"`` (k-IPfedAvg, A3): PoD if every stored cluster keeps ≥ ``x`` members, else roll back to the
    first violating round and replay. ``"retrain"`` (fedAvg_retrain, B1): replay every round from w_0 without
    the client. ``"federaser"`` (B2): FedEraser's calibration from the stored updates (``federaser``: the store,
    the local work and the calibration ratio), then training goes on. ``rollback`` (with ``"pod"``): ``"replay"``
    replays rounds t0..r−1 from G_{t0−1} (§3.1) and rewrites their G_t, L_t and accuracies; ``"reload"`` is the
    authors' public code, kept as a literal variant (spec A6): every one of rounds t0..r−1 restarts from the stored
    G_{t0}, the model after round t0 (which may still hold the client), its clusters overwrite L_t, the stored G_t
    and their accuracies stay as they were (the code writes the replayed models under another file name), and the
    last one's model goes into service. ``reference``: models to measure
    ``served_distance`` against. ``checkpoint``: (path, identity) to save the state to after a round once
    ``checkpoint_every_s`` seconds have passed since the last save (FedEraser's state holds every client model of
    every round), and to resume from (:mod:`fedlib.checkpoint`); the resumed run reaches the same numbers. A request's
    replay (up to every round so far, from w_0 for fedAvg_retrain) is saved the same way after each replayed round,
    and a resumed run goes on with the replay where it stopped.

    A run whose clients' models go non-finite in round r (:class:`DivergedError`, e.g. strict mode's noise σΔ per
    coordinate compounding round after round) stops there: ``diverged`` = r, and G_r..G_{T−1} are the non-finite
    model (every later client model trained from it would be), with accuracy 0 and no clusters; requests from
    round r on are not served. If it is round t of request r's replay (``"replay"`` rollback) that diverges, the
    rewritten history G_t..G_{r−1} is non-finite too, while ``served_accuracy`` keeps what was served before r.
    """
    if unlearn == "pod" and (x is None or x < 1):
        raise ValueError(f"unlearn='pod' needs x >= 1, got x={x!r}")
    if rollback not in ("replay", "reload"):
        raise ValueError(f"rollback must be 'replay' or 'reload', got {rollback!r}")
    if rollback == "reload" and unlearn != "pod":
        raise ValueError(f"rollback='reload' (the authors' code) applies to unlearn='pod' only, got {unlearn!r}")
    if unlearn == "federaser" and federaser is None:
        raise ValueError("unlearn='federaser' needs federaser=(store, local work, calibration ratio)")
    theta = init.clone()
    run = DeniabilityRun(method)
    active = list(range(fed.num_clients))
    removed: list[int] = []
    first = 0
    state = checkpoint_io.load(*checkpoint) if checkpoint is not None else None
    replay = None  # a request's replay cut short by a stop: {"t0", "next", "seconds"}
    if state is not None:
        first, theta, active, removed = state["round"], state["theta"], state["active"], state["removed"]
        for name in ("accuracy", "models", "clusters", "spreads", "served_accuracy", "served_distance"):
            setattr(run, name, state[name])
        run.requests = [Unlearning(r, c, None if t0 < 0 else t0, n, sec) for r, c, t0, n, sec in state["requests"]]
        if federaser is not None:
            federaser[0].rounds[:] = state["store"]
        replay = state.get("replay")
    bar = range(first, rounds)
    if progress:
        from fedlib.progress import progress_bar
        bar = progress_bar(bar, desc=method, leave=False)
    w0 = init.clone()
    clock = checkpoint_io.Clock(state)
    saved = time.perf_counter()

    def save(next_round: int, in_replay: dict | None = None) -> None:
        """Write the state once ``checkpoint_every_s`` has passed: after round ``next_round`` − 1, or inside the
        replay of round ``next_round``'s request (``in_replay``; the client is already removed)."""
        nonlocal saved
        if checkpoint is None or time.perf_counter() - saved < checkpoint_every_s:
            return
        saved = time.perf_counter()
        checkpoint_io.save(checkpoint[0], checkpoint[1], {
            "round": next_round, "theta": theta, "active": active, "removed": removed, "accuracy": run.accuracy,
            "models": run.models, "clusters": run.clusters, "spreads": run.spreads,
            "served_accuracy": run.served_accuracy, "served_distance": run.served_distance,
            "requests": [[q.round, q.client, -1 if q.rollback is None else q.rollback, q.replayed_rounds,
                          q.seconds] for q in run.requests],
            "store": federaser[0].rounds if federaser is not None else [], "elapsed_s": clock.total(),
            **({"replay": in_replay} if in_replay is not None else {})})

    replaying = None  # the replayed round being computed, if any
    for r in bar:
        try:
            if r in schedule:
                client = schedule[r]
                began = time.perf_counter()
                if replay is not None:  # resumed inside this request's replay: the client is out, t0 is known
                    t0, start, spent = replay["t0"], replay["next"], replay["seconds"]
                    replay = None
                else:
                    active.remove(client)
                    removed.append(client)
                    t0, spent = None, 0.0
                    if unlearn == "pod":
                        run.clusters, t0 = pod_violation(run.clusters, client, x)
                    elif unlearn == "retrain":
                        t0 = 0
                    start = t0
                replayed = 0
                if unlearn == "federaser":
                    store, work, ratio = federaser
                    theta, replayed, _ = federaser_calibrate(
                        fed, w0, store, removed, steps=work.client_steps(client_sizes(fed.y), ratio),
                        batch_size=work.batch_size, lr=work.lr, momentum=0.0, stream=f"federaser{r}")
                elif t0 is not None:
                    if start == t0:
                        theta = run.models[t0 - 1] if t0 > 0 else w0
                    for t in range(start, r):
                        replaying = t
                        start_from = run.models[t0] if rollback == "reload" else theta
                        theta, run.clusters[t], run.spreads[t] = round_fn(t, start_from, active)
                        if rollback == "replay":  # "reload" keeps the stored G_t and its accuracy
                            run.models[t] = theta
                            run.accuracy[t] = _accuracy(fed, theta, test)
                        if t + 1 < r:
                            save(r, {"t0": t0, "next": t + 1, "seconds": spent + time.perf_counter() - began})
                    replayed, replaying = r - t0, None
                run.requests.append(Unlearning(r, client, t0 if unlearn != "federaser" else 0, replayed,
                                               spent + time.perf_counter() - began))
            theta, clusters, spreads = round_fn(r, theta, active)
            run.models.append(theta)
            run.clusters.append(clusters)
            run.spreads.append(spreads)
            run.accuracy.append(_accuracy(fed, theta, test))
            run.served_accuracy.append(run.accuracy[-1])
            if reference is not None:
                run.served_distance.append(_distance(theta, reference[r]))
        except DivergedError:
            run.diverged = r
            break
        save(r + 1)
    if run.diverged is not None:
        theta = torch.full_like(init, math.nan)
        if replaying is not None and rollback == "replay":
            for t in range(replaying, run.diverged):
                run.models[t], run.clusters[t], run.spreads[t], run.accuracy[t] = theta, [], [], 0.0
        del run.accuracy[run.diverged:], run.served_accuracy[run.diverged:], run.models[run.diverged:]
        del run.clusters[run.diverged:], run.spreads[run.diverged:], run.served_distance[run.diverged:]
        for _ in range(run.diverged, rounds):
            run.models.append(theta)
            run.clusters.append([])
            run.spreads.append([])
            run.accuracy.append(_accuracy(fed, theta, test))
            run.served_accuracy.append(run.accuracy[-1])
    model_bytes = sum(g.numel() * g.element_size() for g in run.models)
    ids = sum(len(c) for cl in run.clusters for c in cl) * 8
    run.stored_bytes = model_bytes + ids + (federaser[0].stored_bytes if federaser is not None else 0)
    if unlearn == "retrain":
        run.stored_bytes = w0.numel() * w0.element_size()
    return run


# --- privacy calculator (Theorem 3.1) and the retrain simulator ------------------------------------------------

def sigma_paper(rounds: int, epsilon: float, delta: float) -> float:
    """σ_min from Theorem 3.1 as printed: σ² ≥ T(1 + 8 log(1/δ))/(7ε²) (eq. 16)."""
    _check_privacy(epsilon, delta)
    return math.sqrt(rounds * (1 + 8 * math.log(1 / delta)) / (7 * epsilon**2))


def sigma_corrected(rounds: int, epsilon: float, delta: float) -> float:
    """σ_min with the algebra of Theorem 3.1 redone (ours): with α = 1 + 8 log(1/δ)/ε, eq. 15 holds
    iff σ² ≥ T(ε + 8 log(1/δ))/(7ε²); equal to the printed bound only at ε = 1."""
    _check_privacy(epsilon, delta)
    return math.sqrt(rounds * (epsilon + 8 * math.log(1 / delta)) / (7 * epsilon**2))


def eq15_epsilon(sigma: float, rounds: int, epsilon: float, delta: float) -> float:
    """The right side of eq. 15, Tα/(8σ²) + log(1/δ)/(α − 1), at the theorem's α = 1 + 8 log(1/δ)/ε."""
    _check_privacy(epsilon, delta)
    alpha = 1 + 8 * math.log(1 / delta) / epsilon
    return rounds * alpha / (8 * sigma**2) + math.log(1 / delta) / (alpha - 1)


def eps_rdp(z: float, rounds: int, delta: float) -> float:
    """ε of T Gaussian rounds with noise/sensitivity z at the optimal Rényi order: ρ = T/(2z²),
    ε = ρ + 2√(ρ log(1/δ)) (RDP of the Gaussian mechanism, Mironov 2017; the source's convention is z = 2σ)."""
    if not z > 0:
        raise ValueError(f"z must be > 0, got {z!r}")
    _check_privacy(1.0, delta)
    rho = rounds / (2 * z**2)
    return rho + 2 * math.sqrt(rho * math.log(1 / delta))


def _check_privacy(epsilon: float, delta: float) -> None:
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


def simulate_retrains(num_clients: int, rounds: int, k: int, x: int, probability: float, *, trials: int,
                      generator: torch.Generator, first_round: int = 2) -> dict[str, float]:
    """Our retrain-trigger model: each round a random balanced partition of the active clients
    into ⌊N/k⌋ clusters; requests as :func:`request_schedule`; a retrain rebuilds the clusters from t0 on.

    Returns E[#retrains], E[retrained rounds], P(any retrain) and E[#requests].
    """
    retrains = replayed = anyone = requests = 0
    for _ in range(trials):
        schedule = request_schedule(num_clients, rounds, probability, generator=generator, first_round=first_round)
        active = list(range(num_clients))
        history: list[list[tuple[int, ...]]] = []
        n_re = 0

        def partition(members: list[int]) -> list[tuple[int, ...]]:
            perm = [members[i] for i in torch.randperm(len(members), generator=generator).tolist()]
            m = len(perm) // k
            return [tuple(perm[c::m]) for c in range(m)]

        for r in range(rounds):
            if r in schedule:
                active.remove(schedule[r])
                history, t0 = pod_violation(history, schedule[r], x)
                requests += 1
                if t0 is not None:
                    n_re += 1
                    replayed += r - t0
                    history = history[:t0] + [partition(active) for _ in range(t0, r)]
            history.append(partition(active))
        retrains += n_re
        anyone += n_re > 0
    return {"retrains": retrains / trials, "retrained_rounds": replayed / trials, "p_any": anyone / trials,
            "requests": requests / trials}
