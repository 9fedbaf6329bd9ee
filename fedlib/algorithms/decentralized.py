"""The ADPDFL training loop (Alg. 5.1): M distributed clients, each with its own model, no central server.

Each round m_tcs DCs are drawn uniformly from those with rounds left, train locally (the engine's
:class:`~fedlib.fl.LocalTrainer`, per-client random streams), privatise their update (eqs. 5.2-5.4) and
exchange it by gossip (A5.2) or through a temporary leader (A5.3). Models live in one (M, d) tensor; every
DC's model is evaluated in batches with ``torch.func``; the run checkpoints and resumes like
:func:`fedlib.fl.run_federated`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import torch
from torch import Tensor, nn

from fedlib import checkpoint as checkpoint_io
from fedlib.algorithms.adpdfl import PROTOCOLS, choose_leader, gossip_graph, mixing_matrix, privatize
from fedlib.data.datasets import Split
from fedlib.fl import LocalSGD, LocalTrainer, get_flat, sample_clients
from fedlib.fl.engine import CORRECT, RunSummary, pack_correct
from fedlib.rng import make_generator


@dataclass(frozen=True)
class DecentralizedConfig:
    """One ADPDFL (or non-private DFL) run.

    Attributes:
        protocol: ``"gossip"`` (A5.2) or ``"pseudo_central"`` (A5.3).
        rounds: T.
        training_clients: m_tcs, DCs drawn per round.
        exchange: m_e, receivers of each gossip sender (gossip only).
        local: local SGD (E, B).
        lr: γ, the local learning rate.
        bound: C, the clipping bound (eq. 5.2); None: no clipping (the non-private baselines, B5.1).
        sigma: σ, the noise multiplier of std σ·2C/n_i (eq. 5.3); 0: no noise.
        noise_denominator: None: each DC's n_i, std σ·2C/n_i (eqs. 5.3-5.4); an int m: std σ·2C/m, Theorem 8's
            wording "at least N(0, 4C²σ²/m²)" with m the anonymity factor (m = M in the chapter).
        sync: pseudo-central DCs start each round from the latest leader model; False: the
            literal Alg. 5.1, each DC trains from the model it last received.
        include_self: a gossip DC averages its own noisy update with the m_e it receives (§7.5).
        max_rounds_per_client: a DC stops volunteering after this many rounds (A5.1; default T, never binding).
        seed: the seed of every random stream.
    """

    protocol: Literal["gossip", "pseudo_central"]
    rounds: int
    training_clients: int
    exchange: int | None = None
    local: LocalSGD = LocalSGD(1, 50)
    lr: float = 0.001
    bound: float | None = 1.0
    sigma: float = 0.0
    noise_denominator: int | None = None
    sync: bool = True
    include_self: bool = True
    max_rounds_per_client: int | None = None
    seed: int = 0

    def __post_init__(self) -> None:
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {PROTOCOLS}, got {self.protocol!r}")
        for name in ("rounds", "training_clients"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.protocol == "gossip" and (self.exchange is None or not 1 <= self.exchange < self.training_clients):
            raise ValueError(f"gossip needs exchange (m_e) in [1, training_clients - 1 = "
                             f"{self.training_clients - 1}], got {self.exchange!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if self.bound is not None and not self.bound > 0:
            raise ValueError(f"bound must be > 0 or None, got {self.bound!r}")
        if not self.sigma >= 0:
            raise ValueError(f"sigma must be >= 0, got {self.sigma!r}")
        if self.sigma > 0 and self.bound is None:
            raise ValueError("sigma > 0 needs a clipping bound (the sensitivity 2C/n_i is unknown without one)")
        if self.noise_denominator is not None and (isinstance(self.noise_denominator, bool)
                                                   or not isinstance(self.noise_denominator, int)
                                                   or self.noise_denominator < 1):
            raise ValueError(f"noise_denominator must be None (each DC's n_i) or a positive int m, "
                             f"got {self.noise_denominator!r}")


@dataclass
class DecentralizedResult:
    """Outcome of :func:`run_decentralized`.

    Attributes:
        models: every DC's final model (M, d).
        leader_model: the latest leader model (pseudo-central) or the mean of the DCs' models (gossip).
        metrics: one dict per round: ``accuracy`` (the thesis's metric: the best test accuracy of any model
            of a training DC, before or after aggregation, §5.4.1), ``accuracy_<name>`` (the same metric on each
            test subset asked for), ``mean_after`` (mean over the training DCs after aggregation), ``leader``
            of the round (pseudo-central).
        rounds_completed: rounds run (fewer than T if too few DCs had rounds left).
        correct: which test images the model of the last evaluated round's ``accuracy`` classifies correctly
            (the first of the best, on the CPU; None without an evaluated round), for paired tests between runs.
    """

    models: Tensor
    leader_model: Tensor
    metrics: list[dict[str, float]]
    rounds_completed: int
    elapsed_s: float
    correct: Tensor | None = None

    @property
    def final_accuracy(self) -> float:
        return self.metrics[-1]["accuracy"] if self.metrics else float("nan")

    def series(self, key: str = "accuracy") -> tuple[list[int], list[float]]:
        rows = [m for m in self.metrics if key in m]
        return [int(m["round"]) for m in rows], [float(m[key]) for m in rows]

    def summary(self, **extra: float) -> RunSummary:
        """The run without its models (what a full-mode unit keeps), with ``extra`` numbers of the final models and
        the per-image correctness of the reported model (``extra[CORRECT]``)."""
        kept = {} if self.correct is None else {CORRECT: pack_correct(self.correct)}
        return RunSummary([dict(m) for m in self.metrics], self.rounds_completed, self.elapsed_s, False,
                          {**extra, **kept})


FINAL_MODELS = ("random", "average", "leader")


def final_model(result: DecentralizedResult, how: Literal["random", "average", "leader"],
                generator: torch.Generator | None = None) -> Tensor:
    """The model the server takes when training ends (Alg. 5.1 end).

    Gossip: ``"random"``, one DC's model drawn uniformly from all M (``generator`` needed), or ``"average"``, the
    mean of the M DCs' models. Pseudo-central: ``"leader"``, the last leader's model.
    """
    if how == "random":
        if generator is None:
            raise ValueError("how='random' needs a generator (the draw of the DC whose model is taken)")
        return result.models[int(torch.randint(len(result.models), (1,), generator=generator))]
    if how == "average":
        return result.models.mean(0)
    if how == "leader":
        return result.leader_model
    raise ValueError(f"how must be one of {FINAL_MODELS}, got {how!r}")


@torch.no_grad()
def evaluate_many(model: nn.Module, params: Tensor, x: Tensor, y: Tensor, *, models_per_batch: int | None = None,
                  samples_per_batch: int | None = None, channels_last: bool | None = None) -> Tensor:
    """Test accuracy of each row of ``params`` (k, d) (batching as in :func:`correct_many`)."""
    return _accuracy(correct_many(model, params, x, y, models_per_batch=models_per_batch,
                                  samples_per_batch=samples_per_batch, channels_last=channels_last))


def _accuracy(correct: Tensor) -> Tensor:
    """Accuracy of each row of a (k, N) correctness matrix."""
    return correct.sum(1).double() / correct.shape[1]


@torch.no_grad()
def correct_many(model: nn.Module, params: Tensor, x: Tensor, y: Tensor, *, models_per_batch: int | None = None,
                 samples_per_batch: int | None = None, channels_last: bool | None = None) -> Tensor:
    """Which test samples each row of ``params`` (k, d) classifies correctly: a (k, N) bool tensor.

    On a GPU (the defaults), ``models_per_batch`` = 32 models at once with ``torch.func.vmap`` on batches of
    ``samples_per_batch`` = 2,000 samples. On the CPU, one model at a time on batches of 250 images stored
    ``channels_last``: there the vmapped activations of 32 models leave the cache and NCHW max-pooling costs as
    much as the convolutions, and this is 1.1-1.4x (MNIST MLP) and 4.5x (the CIFAR-10 CNN) faster on a 2-core CPU,
    with the same predictions (benchmarks/evaluate_many.py)."""
    from torch.func import functional_call, vmap

    names = [n for n, _ in model.named_parameters()]
    shapes = [p.shape for _, p in model.named_parameters()]
    sizes = [p.numel() for _, p in model.named_parameters()]
    for name, value in (("models_per_batch", models_per_batch), ("samples_per_batch", samples_per_batch)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"{name} must be a positive int or None (the device's default), got {value!r}")
    models_per_batch = models_per_batch or (32 if params.is_cuda else 1)
    samples_per_batch = samples_per_batch or (2000 if params.is_cuda else 250)
    if (not params.is_cuda if channels_last is None else channels_last) and x.dim() == 4:
        x = x.contiguous(memory_format=torch.channels_last)
    model.eval()

    def logits(flat: Tensor, xb: Tensor) -> Tensor:
        parts = torch.split(flat, sizes)
        return functional_call(model, {n: p.view(s) for n, p, s in zip(names, parts, shapes)}, (xb,))

    batched = vmap(logits, in_dims=(0, None))
    correct = torch.zeros(len(params), len(y), dtype=torch.bool, device=params.device)
    for i in range(0, len(params), models_per_batch):
        chunk = params[i:i + models_per_batch]
        for s in range(0, len(y), samples_per_batch):
            xb = x[s:s + samples_per_batch]
            pred = (batched(chunk, xb) if len(chunk) > 1 else logits(chunk[0], xb)[None]).argmax(-1)
            correct[i:i + len(chunk), s:s + samples_per_batch] = pred == y[s:s + samples_per_batch]
    return correct


def _identity(config: DecentralizedConfig, model: nn.Module, init: Tensor, train: Split, clients: Sequence[Tensor],
              test: Split, subsets: Mapping[str, Tensor]) -> dict:
    """Everything that determines the run's numbers (see :mod:`fedlib.checkpoint`)."""
    extra = {"test_subsets": {k: v.cpu() for k, v in subsets.items()}} if subsets else {}
    return checkpoint_io.identity(config=config, architecture=repr(model), init=init.cpu(), clients=list(clients),
                                  train=checkpoint_io.data_digest(train.x, train.y),
                                  test=checkpoint_io.data_digest(test.x, test.y), **extra)


def run_decentralized(model: nn.Module, train: Split, clients: Sequence[Tensor], test: Split,
                      config: DecentralizedConfig, *, init: Tensor | None = None, checkpoint: str | Path | None = None,
                      progress: bool = False, device: str | torch.device | None = None,
                      test_subsets: Mapping[str, Tensor] | None = None, eval_every: int = 1,
                      channels_last: bool = False) -> DecentralizedResult:
    """Run ADPDFL FL-TRAINING (Alg. 5.1) with GOSSIPCOMM or FAKECENCOMM (Alg. 5.2).

    Args:
        model: the network; its parameters are W^0 (every DC starts from it) unless ``init`` is given.
        train, clients: training samples and each DC's indices into them.
        test: the global test set of the evaluation (§5.4.1).
        config: protocol, m_tcs, m_e, local training, C, σ.
        checkpoint: file to save the run to after every round; an existing one for the same configuration
            is resumed from (same numbers as an uninterrupted run).
        device: where models and data live (default: the CPU). The random streams stay on the CPU, so
            the sampled clients, graphs, leaders and batches do not depend on it.
        test_subsets: name -> boolean mask over ``test``: the §5.4.1 metric is also recorded on each subset
            (``accuracy_<name>``; e.g. CIFAR-10's test images with exact pixels), at no extra model evaluation.
        eval_every: compute the §5.4.1 metric every this many rounds and after round T (the other rounds' rows
            hold the round and leader only). Evaluation changes no model, so the evaluated rounds' numbers do not
            depend on it; it is most of a CIFAR-10 round's time on a CPU (every training DC's model on 10,000
            images). Needs ``max_rounds_per_client`` unset, so that round T is the last.
        channels_last: a CNN's DCs train channels-last (:class:`~fedlib.fl.client.LocalTrainer`; faster on a CPU,
            the same numbers to float32 rounding).
    """
    cfg = config
    num_clients = len(clients)
    if isinstance(eval_every, bool) or not isinstance(eval_every, int) or eval_every < 1:
        raise ValueError(f"eval_every must be a positive int, got {eval_every!r}")
    if eval_every > 1 and cfg.max_rounds_per_client is not None:
        raise ValueError(f"eval_every = {eval_every} needs max_rounds_per_client unset (training may stop before "
                         f"round T, which would then go unevaluated); got {cfg.max_rounds_per_client}")
    if cfg.training_clients > num_clients:
        raise ValueError(f"training_clients ({cfg.training_clients}) exceeds the number of DCs ({num_clients})")
    if any(len(c) == 0 for c in clients):
        raise ValueError("every DC needs at least one sample; got an empty one")
    subsets = dict(test_subsets or {})
    for name, mask in subsets.items():
        if mask.dtype != torch.bool or mask.shape != (len(test.y),) or not bool(mask.any()):
            raise ValueError(f"test_subsets[{name!r}] must be a non-empty boolean mask of shape ({len(test.y)},), "
                             f"got dtype {mask.dtype} and shape {tuple(mask.shape)}")
    device = torch.device(device or "cpu")
    model = model.to(device)
    x, y, tx, ty = train.x.to(device), train.y.to(device), test.x.to(device), test.y.to(device)
    trainer = LocalTrainer(model, channels_last=channels_last)
    w0 = (init if init is not None else get_flat(model)).detach().to(device)
    max_rounds = cfg.max_rounds_per_client or cfg.rounds
    state = {"round": 0, "models": w0.expand(num_clients, -1).clone(), "leader_model": w0.clone(),
             "leader": None, "counts": torch.zeros(num_clients, dtype=torch.long), "metrics": []}
    path = Path(checkpoint) if checkpoint is not None else None
    ident = _identity(cfg, model, w0, train, clients, test, subsets) if path is not None else None
    saved = checkpoint_io.load(path, ident, map_location=device) if path is not None else None
    if saved is not None:
        state = saved

    clock = checkpoint_io.Clock(saved)
    rounds = range(state["round"], cfg.rounds)
    if progress:
        from fedlib.progress import progress_bar
        rounds = progress_bar(rounds, initial=state["round"], total=cfg.rounds, desc=cfg.protocol, leave=False)
    for t in rounds:
        eligible = torch.nonzero(state["counts"] < max_rounds).flatten().tolist()
        if len(eligible) < cfg.training_clients:
            break  # A5.1: training stops when too few DCs have rounds left
        picks = sample_clients(len(eligible), cfg.training_clients, make_generator(cfg.seed, "sample", t))
        chosen = tuple(eligible[i] for i in picks)
        state["counts"][list(chosen)] += 1
        evaluate = (t + 1) % eval_every == 0 or t + 1 == cfg.rounds
        _round(t, chosen, state, cfg, trainer, x, y, clients, (tx, ty) if evaluate else None,
               {k: v.to(device) for k, v in subsets.items()})
        if path is not None:
            state["elapsed_s"] = clock.total()
            checkpoint_io.save(path, ident, state)
    return DecentralizedResult(state["models"], state["leader_model"], state["metrics"], len(state["metrics"]),
                               clock.total() - clock.earlier, state.get("correct"))


def _round(t: int, chosen: tuple[int, ...], state: dict, cfg: DecentralizedConfig, trainer: LocalTrainer,
           x: Tensor, y: Tensor, clients: Sequence[Tensor], test: tuple[Tensor, Tensor] | None,
           subsets: dict[str, Tensor]) -> None:
    """One round of Alg. 5.1 step 3 on ``state`` (models, leader model, previous leader, metrics), evaluated on
    ``test`` (None: not evaluated this round)."""
    models = state["models"]
    starts = (state["leader_model"].expand(len(chosen), -1) if cfg.protocol == "pseudo_central" and cfg.sync
              else models[list(chosen)])
    local = torch.empty_like(starts)
    noisy = torch.empty_like(starts)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # as run_federated: a DC's update is bitwise the same on any number of cores
    try:
        for j, c in enumerate(chosen):  # DC-COMPUTE (Alg. 5.1 lines 28-34)
            update, _ = trainer.train(starts[j], x, y, clients[c], lr=cfg.lr, opt=cfg.local,
                                      generator=make_generator(cfg.seed, "train", t, c))
            local[j] = starts[j] - update
            noisy[j] = privatize(update, bound=cfg.bound, sigma=cfg.sigma,
                                 num_samples=cfg.noise_denominator or len(clients[c]),
                                 generator=make_generator(cfg.seed, "ldp_noise", t, c))
    finally:
        torch.set_num_threads(threads)
    row: dict[str, float] = {"round": t + 1}
    if cfg.protocol == "gossip":  # GOSSIPCOMM: average own + received noisy updates, W_i ← W_i − ḡ_i
        receivers = gossip_graph(len(chosen), cfg.exchange, make_generator(cfg.seed, "graph", t))
        mix = mixing_matrix(receivers, include_self=cfg.include_self).to(noisy)
        after = starts - mix @ noisy
        models[list(chosen)] = after
        state["leader_model"] = models.mean(0)
    else:  # FAKECENCOMM: the leader averages all m_tcs noisy updates and broadcasts W^{t+1}
        leader = choose_leader(chosen, state["leader"], make_generator(cfg.seed, "leader", t))
        weights = torch.full((len(chosen),), 1.0 / len(chosen), dtype=torch.float64)
        base = state["leader_model"] if cfg.sync else models[leader]
        new = base - weights.to(noisy) @ noisy
        models[list(chosen)] = new
        state["leader_model"], state["leader"] = new, leader
        after = new[None]
        row["leader"] = leader
    if test is not None:
        correct = torch.cat([correct_many(trainer.model, local, *test), correct_many(trainer.model, after, *test)])
        acc = _accuracy(correct)
        acc_local, acc_after = acc[:len(local)], acc[len(local):]
        row.update(accuracy=float(acc.max()), mean_after=float(acc_after.mean()), mean_local=float(acc_local.mean()))
        state["correct"] = correct[int(acc.argmax())].cpu()  # the model the metric reads, for paired tests
        for name, mask in subsets.items():
            row[f"accuracy_{name}"] = float(_accuracy(correct[:, mask]).max())
    state["metrics"].append(row)
    state["round"] = t + 1
