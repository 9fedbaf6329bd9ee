"""Unlearning verification shared by the SIFU, plausible-deniability and contribution-model chapters.

Did the unlearned model forget? Accuracy on the forgotten clients' data beside the remaining clients', the
watermark protocol of seed 002 §5.3 (forgotten clients' samples carry a fixed pixel pattern, so high accuracy on
them means memorisation), a loss-threshold membership-inference attack on the forgotten samples, and the
distance to a model retrained from scratch. What did it cost? Rounds, client trainings, stored bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import torch
from torch import Tensor

from fedlib.unlearning.stage import Federation


def watermark_positions(group: int, shape: Sequence[int], count: int = 10, *, seed: int = 42) -> Tensor:
    """The ``count`` array entries (flat indices into one image of ``shape``) of watermark group ``group``,
    drawn from the (seed + group) stream as in the authors' code (spec card §4, A19: one pattern per i mod 10)."""
    numel = 1
    for s in shape:
        numel *= int(s)
    if not 1 <= count <= numel:
        raise ValueError(f"count must be in [1, {numel}], got {count!r}")
    gen = torch.Generator().manual_seed(seed + int(group))
    return torch.randperm(numel, generator=gen)[:count]


def add_watermark(images: Tensor, positions: Tensor) -> Tensor:
    """Images (N, C, H, W) with the entries at ``positions`` set to each image's maximum (seed 002 §5.3;
    labels unchanged). Apply to raw pixels, before normalisation."""
    flat = images.reshape(len(images), -1).clone()
    flat[:, positions] = flat.max(1, keepdim=True).values
    return flat.reshape(images.shape)


def membership_auc(member_losses: Tensor, nonmember_losses: Tensor) -> float:
    """AUC of the loss-threshold membership-inference attack (Yeom et al. 2018): P(loss of a non-member >
    loss of a member), ties counted half. 0.5: the model treats the forgotten samples like unseen ones."""
    if len(member_losses) == 0 or len(nonmember_losses) == 0:
        raise ValueError("membership_auc needs at least one member and one non-member loss")
    a = member_losses.double().reshape(-1, 1)
    b = nonmember_losses.double().reshape(1, -1)
    return float(((b > a).double() + 0.5 * (b == a).double()).mean())


def matched_nonmembers(member_labels: Tensor, pool_labels: Tensor, generator: torch.Generator) -> Tensor:
    """Indices into ``pool_labels`` (held-out samples) with the members' label histogram, drawn without
    replacement where the pool allows, so the attack compares like with like."""
    out = []
    for c in torch.unique(member_labels).tolist():
        need = int((member_labels == c).sum())
        pool = torch.nonzero(pool_labels == c).flatten()
        if len(pool) == 0:
            raise ValueError(f"no held-out sample of class {c} to match the members with")
        pick = torch.randperm(len(pool), generator=generator)[:need]
        if need > len(pool):
            pick = torch.cat([pick, torch.randint(len(pool), (need - len(pool),), generator=generator)])
        out.append(pool[pick])
    return torch.cat(out)


@dataclass
class Verification:
    """One unlearned model checked against the request (accuracies in [0, 1]; distances in parameter L2)."""

    accuracy_forgotten: float
    accuracy_remaining: float
    mia_auc: float | None = None
    distance_to_retrained: float | None = None
    relative_distance: float | None = None

    def as_dict(self) -> dict[str, float | None]:
        return asdict(self)


def verify(fed: Federation, params: Tensor, forgotten: Sequence[int], remaining: Sequence[int], *,
           heldout: tuple[Tensor, Tensor] | None = None, retrained: Tensor | None = None,
           generator: torch.Generator | None = None) -> Verification:
    """Check ``params`` after forgetting ``forgotten``: accuracy on their samples and on the remaining clients',
    the membership AUC of their samples against label-matched ``heldout`` (x, y) samples, and the L2 distance to
    the ``retrained`` model (absolute, and relative to ‖retrained‖)."""
    forgotten, remaining = list(forgotten), list(remaining)
    if not forgotten or not remaining:
        raise ValueError("verify needs at least one forgotten and one remaining client")
    acc_f = float(fed.client_accuracy(params, forgotten).mean())
    acc_r = float(fed.client_accuracy(params, remaining).mean())
    out = Verification(acc_f, acc_r)
    if heldout is not None:
        x_m = fed.x[forgotten].reshape(-1, *fed.x.shape[2:])
        y_m = fed.y[forgotten].reshape(-1)
        idx = matched_nonmembers(y_m, heldout[1], generator or torch.Generator().manual_seed(0))
        out.mia_auc = membership_auc(fed.trainer.losses(params, x_m, y_m),
                                     fed.trainer.losses(params, heldout[0][idx], heldout[1][idx]))
    if retrained is not None:
        dist = float(torch.linalg.vector_norm((params - retrained).double()))
        out.distance_to_retrained = dist
        out.relative_distance = dist / max(float(torch.linalg.vector_norm(retrained.double())), 1e-12)
    return out


@dataclass(frozen=True)
class Cost:
    """What serving requests cost: aggregation rounds, client trainings, and server memory for unlearning."""

    rounds: int
    client_trainings: int
    stored_bytes: int
