"""Helpers shared by the chapter experiments: building a federation and a fresh model, and reading the rounds a run
needs to reach another's accuracy."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn

from fedlib.data.datasets import Split, load_dataset
from fedlib.data.partition import partition
from fedlib.fl.client import LocalSGD, LocalTrainer
from fedlib.fl.engine import RunSummary
from fedlib.fl.params import get_flat
from fedlib.ledger import sampling_halfwidth
from fedlib.models import build_model
from fedlib.rng import make_generator
from fedlib.units import Units


@dataclass(frozen=True)
class Federation:
    """Training data, its partition across clients, and the test split."""

    train: Split
    test: Split
    clients: list[Tensor]


def make_federation(dataset: str, method: str, num_clients: int, *, seed: int, repeat: int = 1,
                    subset: str = "all", normalize: bool = True, **partition_kwargs) -> Federation:
    """Load ``dataset`` (``subset``: see :func:`fedlib.data.load_dataset`; a chapter passes its mode; ``normalize``:
    standardised inputs, else pixels in [0, 1]) and partition its training split with ``method`` (see
    :func:`fedlib.data.partition`)."""
    train = load_dataset(dataset, train=True, subset=subset, normalize=normalize)
    test = load_dataset(dataset, train=False, subset=subset, normalize=normalize)
    clients = partition(method, train.y, num_clients, generator=make_generator(seed, "partition", method),
                        repeat=repeat, **partition_kwargs)
    return Federation(train, test, clients)


def fresh_model(name: str, seed: int, **kwargs) -> nn.Module:
    """Model ``name`` with W^0 drawn from the run's ``init`` stream (equal seeds give equal W^0)."""
    return build_model(name, generator=make_generator(seed, "init", name), **kwargs)


def first_round_updates(model: str, fed: Federation, clients: Sequence[int], *, seed: int, lr: float,
                        opt: LocalSGD, stream: str) -> list[Tensor]:
    """The updates ∇W_i = W^0 − W_i of ``clients`` after one round of local training from W^0.

    Client i trains with the ``(seed, stream, i)`` random stream, so a chapter's numbers do not depend on
    which other clients it asks about.
    """
    trainer = LocalTrainer(fresh_model(model, seed))
    start = get_flat(trainer.model)
    return [trainer.train(start, fed.train.x, fed.train.y, fed.clients[i], lr=lr, opt=opt,
                          generator=make_generator(seed, stream, i))[0] for i in clients]


def one_sample_neighbours(model: str, fed: Federation, client: int, replacements: Sequence[int], *, seed: int,
                          lr: float, opt: LocalSGD, stream: str) -> tuple[Tensor, list[Tensor]]:
    """Client ``client``'s update after one round of local training from W^0, and its updates on neighbouring data
    sets (sample level): its first sample replaced by training sample r, for each r of ``replacements``. Every run
    uses the same (seed, stream, client) random stream, so the mini-batch order is the same and only the replaced
    sample differs."""
    trainer = LocalTrainer(fresh_model(model, seed))
    start = get_flat(trainer.model)
    indices = fed.clients[client]

    def update(idx: Tensor) -> Tensor:
        return trainer.train(start, fed.train.x, fed.train.y, idx, lr=lr, opt=opt,
                             generator=make_generator(seed, stream, client))[0]

    neighbours = []
    for r in replacements:
        swapped = indices.clone()
        swapped[0] = r
        neighbours.append(update(swapped))
    return update(indices), neighbours


def checkpoint_path(root: Path | None, chapter: str, seed: int, run: str) -> Path | None:
    """Where a chapter keeps the checkpoint of training run ``run`` under ``root`` (None: no checkpoints)."""
    if root is None:
        return None
    return root / f"{chapter}-seed{seed}" / (re.sub(r"[^A-Za-z0-9]+", "_", run).strip("_") + ".pt")


def set_threads(default: int = 2) -> int:
    """``torch.set_num_threads`` from ``$FEDLIB_NUM_THREADS`` (default 2); returns the count set.

    Two torch processes sharing two cores slow each other down badly: give each one thread.
    """
    text = os.environ.get("FEDLIB_NUM_THREADS", str(default))
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"FEDLIB_NUM_THREADS must be an integer >= 1 (torch threads per process), got {text!r}")
    torch.set_num_threads(n)
    return n


def train_unit(units: Units, unit_id: str, spec: Any, train: Callable[[], RunSummary]) -> RunSummary | None:
    """A training run as a unit (:mod:`fedlib.units`): ``train`` runs it and returns its :class:`RunSummary`
    (with any numbers computed on the final model in ``extra``); ``spec`` is everything that determines it.
    None when the unit has not run yet (budget spent, or planning only)."""
    out = units.run(unit_id, spec, lambda: train().to_dict())
    return None if out is None else RunSummary.from_dict(out)


def device() -> str:
    """Where models and client training run: ``$FEDLIB_DEVICE`` (cpu, cuda or auto; default auto = cuda when
    available). Results on either agree within the tolerances the tests state."""
    choice = os.environ.get("FEDLIB_DEVICE", "auto")
    if choice not in ("cpu", "cuda", "auto"):
        raise ValueError(f"FEDLIB_DEVICE must be cpu, cuda or auto, got {choice!r}")
    if choice == "cuda" and not torch.cuda.is_available():
        raise ValueError("FEDLIB_DEVICE=cuda but torch sees no CUDA device")
    return "cuda" if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()) else "cpu"


def rounds_to_reach(out: RunSummary, target: float) -> int | None:
    """The first round whose test accuracy is >= ``target`` (None if never)."""
    return next((int(m["round"]) for m in out.metrics if m["accuracy"] >= target - 1e-12), None)


def rounds_saved(variant: RunSummary | None, plain: RunSummary | None, test_images: int, budget: int | None = None,
                 *, reference: str = "plain DPFL") -> tuple[float | None, str, tuple[float, float] | None]:
    """1 − (rounds the variant needs to reach ``plain``'s best accuracy) / (rounds ``plain`` needs): the share of
    rounds saved (``reference``: what the detail calls ``plain``). A variant that has not reached it when its run
    ended counts as one round more than the longer of the two runs (censored: it might get there later); one that
    diverged never will, and gets −1 (−100 %), a floor that stands for "never", however few rounds it ran. So does
    one that ran all the ``budget`` rounds the privacy budget allows (Table 3.3: 52 at σ = 8) without reaching it:
    the budget gives it no round more.

    Whether the variant reached the target in a round is a difference of two models' accuracies on the
    ``test_images`` test images: the third element is the share saved with the variant's target raised and lowered
    by that difference's sampling bound (:func:`fedlib.ledger.sampling_halfwidth`, the widest any dependence allows:
    the units keep no per-image results of every round), for the verdict to hold at both ends."""
    if variant is None or plain is None:
        return None, "not run yet", None
    target = plain.best_accuracy
    own = rounds_to_reach(plain, target)
    spent = budget is not None and variant.rounds_completed >= budget

    def saved(goal: float) -> float:
        needed = rounds_to_reach(variant, goal)
        if needed is not None:
            return 1 - needed / own
        if variant.diverged or spent:
            return -1.0
        return 1 - (max(variant.rounds_completed, plain.rounds_completed) + 1) / own

    halfwidth = sampling_halfwidth(test_images, (target, target))
    interval = (saved(target + halfwidth), saved(target - halfwidth))
    reached = f"{reference} reaches {target:.4f} at round {own}"
    needed = rounds_to_reach(variant, target)
    bound = f"; the target ±{halfwidth * 100:.2f} pp ({test_images:,} test images, one-sided 99 %)"
    if needed is not None:
        return 1 - needed / own, f"{reached}; the variant at round {needed}{bound}", interval
    if variant.diverged:
        return -1.0, (f"{reached}; the variant diverged after {variant.rounds_completed} round(s) and never does "
                      "(counted as −100 %)"), interval
    if spent:
        return -1.0, (f"{reached}; the variant not within the {budget} rounds the privacy budget allows: never "
                      f"under the budget (counted as −100 %){bound}"), interval
    used = max(variant.rounds_completed, plain.rounds_completed) + 1
    return (saved(target), f"{reached}; the variant not within its {variant.rounds_completed} rounds (counted as "
            f"{used}){bound}", interval)
