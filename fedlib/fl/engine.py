"""The round loop: sample clients → local training → client transforms → aggregation → server update
→ evaluation, with per-client random streams, optional history, metrics, progress and checkpoints.
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import logging
import math
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from queue import Empty, SimpleQueue
from typing import Any, Literal

import numpy as np
import torch
from torch import Tensor, nn

from fedlib import checkpoint as checkpoint_io
from fedlib.data.datasets import Split
from fedlib.fl.aggregators import Aggregator, WeightedMean
from fedlib.fl.backprop import mlp_linears
from fedlib.fl.batched import BatchedLocalTrainer
from fedlib.fl.client import LocalSGD, LocalTrainer, Loss, Penalty, evaluate, evaluate_per_sample
from fedlib.fl.component import Component, RoundContext
from fedlib.fl.params import get_flat, layer_slices
from fedlib.fl.server import ServerOptimizer
from fedlib.fl.transforms import ClientMessage, ClientTransform
from fedlib.rng import make_generator

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class FLConfig:
    """Configuration of a federated run (validated on construction).

    Attributes:
        rounds: T, the number of communication rounds.
        clients_per_round: m, sampled uniformly without replacement each round.
        local: local training (E, B, momentum).
        lr: γ, the local learning rate in round 0.
        lr_decay: per-round factor; γ_t = γ · lr_decay^min(t, lr_decay_rounds).
        lr_decay_rounds: rounds over which the decay applies (None: all). The thesis uses
            0.96 for the first 20 rounds, then a fixed rate.
        weighting: aggregation weights p_i ∝ n_i (``"samples"``) or 1/m (``"uniform"``).
        eval_every: evaluate the global model every this many rounds (and after the last).
        seed: the seed of every random stream of the run.
    """

    rounds: int
    clients_per_round: int
    local: LocalSGD = LocalSGD()
    lr: float = 0.1
    lr_decay: float = 1.0
    lr_decay_rounds: int | None = None
    weighting: Literal["samples", "uniform"] = "samples"
    eval_every: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("rounds", "clients_per_round", "eval_every"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not 0 < self.lr_decay <= 1:
            raise ValueError(f"lr_decay must be in (0, 1], got {self.lr_decay!r}")
        if self.lr_decay_rounds is not None and self.lr_decay_rounds < 0:
            raise ValueError(f"lr_decay_rounds must be >= 0 or None, got {self.lr_decay_rounds!r}")
        if self.weighting not in ("samples", "uniform"):
            raise ValueError(f"weighting must be 'samples' or 'uniform', got {self.weighting!r}")

    def lr_at(self, t: int) -> float:
        """γ_t, the local learning rate of round t (from 0)."""
        k = t if self.lr_decay_rounds is None else min(t, self.lr_decay_rounds)
        return self.lr * self.lr_decay**k


@dataclass
class Algorithm:
    """A federated algorithm as a composition of parts (client transforms run in list order).

    The parts keep state across rounds (accountants, momentum): use a fresh Algorithm per run.
    """

    transforms: Sequence[ClientTransform] = ()
    aggregator: Aggregator = field(default_factory=WeightedMean)
    server: ServerOptimizer = field(default_factory=ServerOptimizer)
    loss: Loss | None = None
    penalty: Penalty | None = None

    def components(self) -> list[Component]:
        return [*self.transforms, self.aggregator, self.server]

    def allows_round(self, ctx: RoundContext) -> bool:
        """Whether every part lets round ``ctx.round`` run (a privacy budget may stop training before it)."""
        return all(comp.allows_round(ctx) for comp in self.components())

    def server_update(self, params: Tensor, uploads: Tensor, weights: Tensor, ctx: RoundContext) -> Tensor:
        """W^{t+1} from W^t and the round's uploads (m, d) with weights p_i: aggregate, then the server step."""
        return self.aggregator.after_server_step(self.server.step(params, self.aggregator(uploads, weights, ctx)))

    def metrics(self) -> dict[str, float]:
        """Every part's numbers after a round (ε spent, clipping bound, upload size, ...)."""
        row: dict[str, float] = {}
        for comp in self.components():
            row.update(comp.metrics())
        return row


@dataclass
class History:
    """What unlearning needs: W^t before every round, who took part, and what each client uploaded."""

    models: list[Tensor] = field(default_factory=list)
    participants: list[tuple[int, ...]] = field(default_factory=list)
    updates: list[dict[int, Tensor]] = field(default_factory=list)
    keep_updates: bool = True


class _Metrics:
    """Read access to a run's per-round metrics (shared by :class:`RunResult` and :class:`RunSummary`)."""

    metrics: list[dict[str, float]]

    @property
    def final_accuracy(self) -> float:
        return self.metrics[-1]["accuracy"] if self.metrics else float("nan")

    @property
    def best_accuracy(self) -> float:
        return max((m["accuracy"] for m in self.metrics if "accuracy" in m), default=float("nan"))

    def series(self, key: str) -> tuple[list[int], list[float]]:
        """(rounds, values) of one metric, for plotting."""
        rows = [m for m in self.metrics if key in m]
        return [int(m["round"]) for m in rows], [float(m[key]) for m in rows]


#: ``RunSummary.extra`` keys of the per-image correctness of the model whose final accuracy the run reports, and
#: of the model of its best accuracy
CORRECT, CORRECT_BEST = "correct", "correct_best"


def pack_correct(correct: Tensor) -> dict[str, Any]:
    """A (N,) bool vector (which test images a model classifies correctly) as a unit file keeps it: N and the bits
    packed eight to a byte, base64 (1,668 characters for 10,000 images). :func:`unpack_correct` inverts it."""
    if correct.dtype != torch.bool or correct.dim() != 1:
        raise ValueError(f"correct must be a 1-D bool tensor, got dtype {correct.dtype} and shape "
                         f"{tuple(correct.shape)}")
    bits = correct.cpu().numpy()
    return {"images": int(bits.size), "packed_bits": base64.b64encode(np.packbits(bits).tobytes()).decode("ascii")}


def unpack_correct(packed: dict[str, Any]) -> Tensor:
    """The (N,) bool vector that :func:`pack_correct` packed."""
    raw = np.frombuffer(base64.b64decode(packed["packed_bits"]), dtype=np.uint8)
    return torch.from_numpy(np.unpackbits(raw, count=packed["images"]).astype(bool))


def disagreement(a: Tensor | None, b: Tensor | None) -> float | None:
    """The share of test images exactly one of two models classifies correctly, from their per-image results
    (None where either run did not keep them): what a paired test of their accuracies' difference needs."""
    return mean_square((1.0, -1.0), (a, b))


def mean_square(weights: Sequence[float], correct: Sequence[Tensor | None]) -> float | None:
    """The mean over the test images of (Σₖ wₖ·cₖ)², cₖ model k's per-image results (None where any run did not keep
    them): with the combination's value, the exact test-set SE of Σₖ wₖ·accₖ
    (:func:`fedlib.ledger.combination_halfwidth`); for weights (1, −1) the two models' disagreement."""
    if len(weights) != len(correct):
        raise ValueError(f"weights must give one weight per model ({len(correct)}), got {list(weights)!r}")
    if any(c is None for c in correct):
        return None
    shapes = {tuple(c.shape) for c in correct}
    if len(shapes) != 1:
        raise ValueError(f"per-image results of different test sets: {sorted(shapes)}")
    combined = sum(w * c.double() for w, c in zip(weights, correct))
    return float((combined * combined).mean())


@dataclass
class RunSummary(_Metrics):
    """What a finished run leaves in a unit file: its metrics and outcome, without the parameters. ``extra``
    holds numbers a chapter computed on the final model inside the unit (e.g. accuracy on a test subset) and,
    where the chapter keeps it, the final model's per-image correctness (``extra[CORRECT]``, :meth:`correct`)."""

    metrics: list[dict[str, float]]
    rounds_completed: int
    elapsed_s: float
    diverged: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunSummary:
        return cls(**data)

    def correct(self, best: bool = False) -> Tensor | None:
        """Which test images the model of the final accuracy (``best``: of ``best_accuracy``) classifies correctly
        (None if the run did not keep them)."""
        packed = self.extra.get(CORRECT_BEST if best else CORRECT)
        return None if packed is None else unpack_correct(packed)


@dataclass
class RunResult(_Metrics):
    """Outcome of :func:`run_federated`.

    Attributes:
        params: the final global parameters (flat).
        metrics: one dict per evaluated round (round = rounds completed, accuracy, loss, ...).
        history: recorded models and updates, if asked for.
        rounds_completed: rounds actually run (fewer than configured if a budget stopped training).
        elapsed_s: wall time of this call (not counting earlier calls before a resume).
        diverged: training stopped because client updates became non-finite.
        correct, correct_best: which test samples the last evaluated model and the best one (the first round of
            ``best_accuracy``) classify correctly, for paired tests between runs (None: not evaluated, diverged, or
            resumed from a checkpoint that did not keep them).
    """

    params: Tensor
    metrics: list[dict[str, float]]
    history: History | None
    rounds_completed: int
    elapsed_s: float
    diverged: bool = False
    correct: Tensor | None = None
    correct_best: Tensor | None = None

    def summary(self, **extra: Any) -> RunSummary:
        """The run without its parameters and history (what a unit file keeps), with ``extra`` numbers and the
        per-image results of the last and the best evaluated model (``extra[CORRECT]``, ``extra[CORRECT_BEST]``)."""
        kept = {key: pack_correct(bits) for key, bits in ((CORRECT, self.correct), (CORRECT_BEST, self.correct_best))
                if bits is not None}
        return RunSummary([dict(m) for m in self.metrics], self.rounds_completed, self.elapsed_s, self.diverged,
                          {**extra, **kept})


def sample_clients(num_clients: int, m: int, generator: torch.Generator,
                   exclude: frozenset[int] = frozenset()) -> tuple[int, ...]:
    """m distinct clients drawn uniformly without replacement from those not in ``exclude``, sorted."""
    if not exclude:
        return tuple(sorted(torch.randperm(num_clients, generator=generator)[:m].tolist()))
    remaining = [c for c in range(num_clients) if c not in exclude]
    return tuple(sorted(remaining[i] for i in torch.randperm(len(remaining), generator=generator)[:m].tolist()))


def round_context(config: FLConfig, num_clients: int, slices: list[slice], t: int,
                  dropped: frozenset[int] = frozenset()) -> RoundContext:
    """Round t's context: its participants are drawn from the run's (seed, "sample", t) stream, leaving out the
    clients in ``dropped`` (drop-out, thesis Alg. 3.2)."""
    chosen = sample_clients(num_clients, config.clients_per_round, make_generator(config.seed, "sample", t),
                            dropped)
    return RoundContext(t, num_clients, config.clients_per_round, chosen, slices, config.seed)


def round_weights(sizes: Tensor, weighting: Literal["samples", "uniform"]) -> Tensor:
    """The aggregation weights p_i of the round's participants with n_i = ``sizes`` (float64, summing to 1)."""
    weights = sizes.to(torch.float64) if weighting == "samples" else torch.ones(len(sizes), dtype=torch.float64)
    return weights / weights.sum()


def train_client(trainer: LocalTrainer, params: Tensor, train: Split, indices: Tensor, client: int, lr: float,
                 opt: LocalSGD, ctx: RoundContext) -> tuple[Tensor, float]:
    """Client ``client``'s local training from W^t on its samples ``indices``, with its own (seed, "train", t,
    client) stream: the update ∇W_i and the training loss."""
    return trainer.train(params, train.x, train.y, indices, lr=lr, opt=opt, generator=ctx.generator("train", client))


def client_message(transforms: Sequence[ClientTransform], client: int, num_samples: int, update: Tensor,
                   ctx: RoundContext) -> ClientMessage:
    """What client ``client`` uploads: its update after the client transforms, in list order."""
    msg = ClientMessage(client, num_samples, update)
    for transform in transforms:
        transform(msg, ctx)
    return msg


def evaluation_row(model: nn.Module, params: Tensor, test: Split, algorithm: Algorithm, completed: int,
                   train_loss: float, lr: float) -> tuple[dict[str, float], Tensor]:
    """The log row of an evaluated round (test accuracy and loss, training loss, γ_t and every part's metrics) and
    which test samples the model classifies correctly (on the CPU)."""
    correct, test_loss = evaluate_per_sample(model, params, test.x, test.y)
    return ({"round": completed, "accuracy": int(correct.sum()) / len(test.y), "loss": test_loss,
             "train_loss": train_loss, "lr": lr, **algorithm.metrics()}, correct.cpu())


class _ClientPool:
    """Trains the sampled clients of a round on ``workers`` threads, each with its own model replica.

    A job is one client, or with ``client_batch`` = k > 1 up to k clients of equal sample count trained together
    (:class:`~fedlib.fl.batched.BatchedLocalTrainer`; which clients share a job depends only on the round's
    sample). Workers take the next job from a shared queue, so a worker slowed by a busy core leaves its share to
    the others. Client training always runs with one torch thread, and each client has its own random stream, so a
    client's update is bitwise the same whatever the number of workers, the order in which jobs are taken, or the
    machine's core count. Parallel threads pay off because GEMMs release the GIL; on 2 cores, 2 workers train a
    50-client MNIST-MLP round 1.6-1.8x faster than one worker (benchmarks/fl_round.py).
    """

    def __init__(self, model: nn.Module, algorithm: Algorithm, workers: int, client_batch: int,
                 channels_last: bool = False) -> None:
        replicas = [model] + [copy.deepcopy(model) for _ in range(workers - 1)]
        if client_batch > 1:
            if algorithm.loss is not None or algorithm.penalty is not None:
                raise ValueError("client_batch > 1 trains with the default cross-entropy only; this algorithm sets "
                                 "a loss or a penalty (use client_batch=1)")
            self.trainers = [BatchedLocalTrainer(m) for m in replicas]
        else:
            self.trainers = [LocalTrainer(m, algorithm.loss, algorithm.penalty, channels_last=channels_last)
                             for m in replicas]
        self.client_batch = client_batch
        self.executor = ThreadPoolExecutor(workers) if workers > 1 else None

    def _jobs(self, clients: Sequence[Tensor], chosen: tuple[int, ...]) -> list[list[int]]:
        """Positions in ``chosen`` trained together: single clients, or runs of up to ``client_batch`` clients of
        equal size."""
        if self.client_batch == 1:
            return [[j] for j in range(len(chosen))]
        by_size: dict[int, list[int]] = {}
        for j, c in enumerate(chosen):
            by_size.setdefault(len(clients[c]), []).append(j)
        return [group[s:s + self.client_batch] for group in by_size.values()
                for s in range(0, len(group), self.client_batch)]

    def train(self, params: Tensor, train: Split, clients: Sequence[Tensor], chosen: tuple[int, ...], lr: float,
              opt: LocalSGD, ctx: RoundContext) -> list[tuple[Tensor, float]]:
        jobs: SimpleQueue[list[int]] = SimpleQueue()
        for job in self._jobs(clients, chosen):
            jobs.put(job)
        done: list[tuple[Tensor, float] | None] = [None] * len(chosen)

        def work(w: int) -> None:
            trainer = self.trainers[w]
            while True:
                try:
                    job = jobs.get_nowait()
                except Empty:
                    return
                if isinstance(trainer, BatchedLocalTrainer):
                    out = trainer.train(params, train.x, train.y, [clients[chosen[j]] for j in job], lr=lr, opt=opt,
                                        generators=[ctx.generator("train", chosen[j]) for j in job])
                else:
                    c = chosen[job[0]]
                    out = [train_client(trainer, params, train, clients[c], c, lr, opt, ctx)]
                for j, result in zip(job, out):
                    done[j] = result

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            if self.executor is None:
                work(0)
            else:
                list(self.executor.map(work, range(len(self.trainers))))
        finally:
            torch.set_num_threads(threads)
        return done

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown()


def _client_uploads(pool: _ClientPool, algorithm: Algorithm, params: Tensor, train: Split,
                    clients: Sequence[Tensor], lr: float, opt: LocalSGD, ctx: RoundContext) -> tuple[Tensor, float]:
    """Train the round's clients and run their transforms: the uploads (m, d) and the mean training loss."""
    chosen = ctx.participants
    uploads = torch.empty(len(chosen), params.numel(), dtype=params.dtype)
    train_loss = 0.0
    for j, (client, (update, loss)) in enumerate(zip(chosen, pool.train(params, train, clients, chosen, lr, opt, ctx))):
        uploads[j] = client_message(algorithm.transforms, client, len(clients[client]), update, ctx).update
        train_loss += loss / len(chosen)
    return uploads, train_loss


def _identity(config: FLConfig, algorithm: Algorithm, model: nn.Module, init: Tensor, train: Split,
              clients: Sequence[Tensor], test: Split | None, history: str) -> dict:
    """Everything that determines a run's numbers (see :mod:`fedlib.checkpoint`): the configuration, the algorithm
    with every part's parameters, the architecture and W^0, the partition and the data."""
    return checkpoint_io.identity(
        config=config, algorithm=algorithm, architecture=repr(model), init=init, clients=list(clients),
        train=checkpoint_io.data_digest(train.x, train.y),
        test=None if test is None else checkpoint_io.data_digest(test.x, test.y), history=history)


def default_client_batch(model: nn.Module, algorithm: Algorithm, config: FLConfig, device: torch.device) -> int:
    """``run_federated``'s default ``client_batch``: 1 on the CPU (there batching pays only for many tiny clients);
    on a GPU all of a round's clients where :class:`~fedlib.fl.batched.BatchedLocalTrainer` applies (an MLP with
    the default loss and no penalty), else 1."""
    if device.type == "cpu" or algorithm.loss is not None or algorithm.penalty is not None:
        return 1
    batchable = mlp_linears(model) is not None and all(p.requires_grad for p in model.parameters())
    return config.clients_per_round if batchable else 1


def _all_finite(x: Tensor) -> bool:
    """Whether every entry is finite: min and max are (NaN propagates through both); 20x faster than
    ``isfinite(x).all()`` on a round's uploads."""
    lo, hi = torch.aminmax(x)
    return math.isfinite(lo) and math.isfinite(hi)


def _history_state(record: History | None) -> dict | None:
    if record is None:
        return None
    return {"models": record.models, "participants": [list(p) for p in record.participants],
            "updates": record.updates, "keep_updates": record.keep_updates}


def _history_from(state: dict | None) -> History | None:
    if state is None:
        return None
    return History(state["models"], [tuple(p) for p in state["participants"]], state["updates"],
                   state["keep_updates"])


def _on_device(model: nn.Module, train: Split, test: Split | None, device: torch.device
               ) -> tuple[nn.Module, Split, Split | None]:
    """The working model and the data on ``device``: the caller's model and splits where they already are there,
    otherwise copies (the caller's model stays where it was)."""
    if next(model.parameters()).device != device:
        model = copy.deepcopy(model).to(device)

    def moved(split: Split) -> Split:
        return split if split.x.device == device else dataclasses.replace(split, x=split.x.to(device),
                                                                          y=split.y.to(device))
    return model, moved(train), None if test is None else moved(test)


def run_federated(model: nn.Module, train: Split, clients: Sequence[Tensor], test: Split | None,
                  config: FLConfig, algorithm: Algorithm | None = None, *, init: Tensor | None = None,
                  history: Literal["none", "models", "updates"] = "none",
                  checkpoint: str | Path | None = None, checkpoint_every: int = 1, progress: bool = False,
                  callback: Callable[[int, dict[str, float]], None] | None = None,
                  workers: int | None = None, client_batch: int | None = None,
                  device: str | torch.device | None = None, channels_last: bool = False) -> RunResult:
    """Run federated training.

    Client training and evaluation run on ``device``; the server side (client transforms such as clipping and
    noise, aggregation, accounting) runs on the CPU, so the noise a run draws is the same on every device and the
    returned parameters, history and checkpoints are CPU tensors.

    Args:
        model: the network; its current parameters are W^0 unless ``init`` is given. It is used as
            the one persistent working model for all clients (a copy of it on ``device`` when it lies elsewhere).
        train: training samples; ``clients[i]`` are client i's indices into it.
        clients: the partition (see :mod:`fedlib.data.partition`).
        test: evaluation split (None: no evaluation).
        config: rounds, sampling, local training, learning rate, seed.
        algorithm: transforms, aggregator and server optimizer (default: plain FedAvg).
        init: flat initial parameters W^0.
        history: record nothing, the global models, or models and client uploads.
        checkpoint: file to save the run's state to every ``checkpoint_every`` rounds; if it exists
            and was written for the same run (configuration, algorithm and its parameters, W^0, partition,
            data: :mod:`fedlib.checkpoint`), the run resumes from it and reaches the same numbers as an
            uninterrupted run; if it was written for another run, :class:`~fedlib.checkpoint.CheckpointMismatch`
            is raised, naming what differs.
        progress: show a tqdm progress bar.
        callback: called as ``callback(round, metrics)`` after every evaluated round.
        workers: clients trained in parallel (threads, one torch thread each); default: torch's thread
            count. The numbers do not depend on it.
        client_batch: clients trained together, one batched matrix product per layer (MLPs with the default
            loss): 1 trains one client at a time; k > 1 trains up to k clients of equal sample count at
            once, 1.2-1.4x faster on a 2-core CPU at k = 5 (benchmarks/fl_round.py). Results then agree with
            k = 1 up to float32 rounding, not bitwise (other summation order), and do not depend on ``workers``.
            None (default): 1 on the CPU; on a GPU all of a round's clients where the model and loss allow it
            (:func:`default_client_batch`).
        device: where clients train and the global model is evaluated (default: the CPU). On a GPU the clients
            train one job at a time (``workers`` is ignored); the numbers agree with the CPU's up to float32
            rounding, not bitwise.
        channels_last: clients of a CNN train channels-last (:class:`~fedlib.fl.client.LocalTrainer`; faster on a
            CPU, the same numbers to float32 rounding; full mode's choice).
    """
    algorithm = algorithm or Algorithm()
    device = torch.device(device or "cpu")
    num_clients = len(clients)
    if config.clients_per_round > num_clients:
        raise ValueError(f"clients_per_round ({config.clients_per_round}) exceeds the number of clients "
                         f"({num_clients})")
    if any(len(c) == 0 for c in clients):
        raise ValueError("every client needs at least one sample; got an empty client")
    if history not in ("none", "models", "updates"):
        raise ValueError(f"history must be 'none', 'models' or 'updates', got {history!r}")
    if not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise ValueError(f"checkpoint_every must be a positive int, got {checkpoint_every!r}")

    workers = torch.get_num_threads() if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    if client_batch is None:
        client_batch = default_client_batch(model, algorithm, config, device)
    if isinstance(client_batch, bool) or not isinstance(client_batch, int) or client_batch < 1:
        raise ValueError(f"client_batch must be a positive int or None, got {client_batch!r}")
    slices = layer_slices(model)
    params = (init if init is not None else get_flat(model)).detach().cpu().clone()
    sizes = torch.tensor([len(c) for c in clients], dtype=torch.float64)
    record = History(keep_updates=history == "updates") if history != "none" else None
    metrics: list[dict[str, float]] = []
    start_round = 0
    ckpt_path = Path(checkpoint) if checkpoint is not None else None
    ident = _identity(config, algorithm, model, params, train, clients, test, history) if ckpt_path else None
    model, train, test = _on_device(model, train, test, device)
    pool = _ClientPool(model, algorithm, 1 if device.type != "cpu" else min(workers, config.clients_per_round),
                       client_batch, channels_last)
    state = checkpoint_io.load(ckpt_path, ident) if ckpt_path is not None else None
    kept: dict[str, Any] = {}  # per-image results of the best and the last evaluated model
    if state is not None:
        params, metrics, start_round = state["params"], state["metrics"], state["round"]
        kept = state.get("correct", {}) if metrics else {}  # a checkpoint written before 2026-12-02 has none
        record = _history_from(state["history"])
        for comp, comp_state in zip(algorithm.components(), state["components"]):
            comp.load_state_dict(comp_state)
    else:
        for comp in algorithm.components():
            comp.reset()

    clock = checkpoint_io.Clock(state)
    rounds = range(start_round, config.rounds)
    if progress:
        from fedlib.progress import progress_bar
        rounds = progress_bar(rounds, initial=start_round, total=config.rounds, desc="rounds", leave=False)
    completed = start_round
    diverged = False
    try:
        for t in rounds:
            dropped = frozenset().union(*(comp.dropped_out(num_clients) for comp in algorithm.components()))
            if num_clients - len(dropped) < config.clients_per_round:
                break  # too few clients with budget left (thesis Alg. 3.2, lines 4-6)
            ctx = round_context(config, num_clients, slices, t, dropped)
            chosen = ctx.participants
            if not algorithm.allows_round(ctx):
                break
            lr = config.lr_at(t)
            uploads, train_loss = _client_uploads(pool, algorithm, params, train, clients, lr, config.local, ctx)
            if not _all_finite(uploads):
                diverged = True  # local training blew up: report it and stop instead of aggregating NaNs
                logger.warning("round %d: non-finite client updates; training stopped (diverged)", t)
                acc, test_loss = evaluate(model, params, test.x, test.y) if test is not None else (math.nan, math.nan)
                metrics.append({"round": t + 1, "accuracy": acc, "loss": test_loss, "diverged": 1.0})
                break
            weights = round_weights(sizes[list(chosen)], config.weighting)
            if record is not None:
                record.models.append(params.clone())
                record.participants.append(chosen)
                if record.keep_updates:
                    record.updates.append({c: uploads[j].clone() for j, c in enumerate(chosen)})
            params = algorithm.server_update(params, uploads, weights, ctx)
            completed = t + 1
            row = None
            if test is not None and (completed % config.eval_every == 0 or completed == config.rounds):
                row, correct = evaluation_row(model, params, test, algorithm, completed, train_loss, lr)
                if "best" not in kept or row["accuracy"] > kept["best_accuracy"]:
                    kept.update(best=correct, best_accuracy=row["accuracy"])
                kept["final"] = correct
                metrics.append(row)
            if ckpt_path is not None and (completed % checkpoint_every == 0 or completed == config.rounds):
                checkpoint_io.save(ckpt_path, ident, {
                    "round": completed, "params": params, "metrics": metrics, "history": _history_state(record),
                    "components": [c.state_dict() for c in algorithm.components()], "correct": kept,
                    "elapsed_s": clock.total(),
                })
            if callback is not None and row is not None:
                callback(completed, row)
    finally:
        pool.close()
    if record is not None:
        record.models.append(params.clone())
    out = RunResult(params, metrics, record, completed, clock.total() - clock.earlier, diverged)
    if "final" in kept and metrics and metrics[-1].get("diverged") is None:
        out.correct = kept["final"]
        if kept["best_accuracy"] == out.best_accuracy:  # a resumed run may not know an earlier best round's
            out.correct_best = kept["best"]
    return out
