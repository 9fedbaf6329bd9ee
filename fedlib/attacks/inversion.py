"""Gradient-inversion (reconstruction) attacks of thesis 001 §2.1.3 and ch. 4, batched with :mod:`torch.func`.

The attacker knows the model, the weights every shared gradient was computed at and the labels, and optimises
dummy images x so that their gradient matches the shared (clipped, noised) one:

* cosine (Geiping et al., "Inverting Gradients"): J(x) = 1 − ⟨g(x), G⟩ / (‖g(x)‖ ‖G‖) + α1 TV(x) (eq. 2.14),
* Euclidean (DLG family): J(x) = ‖g(x) − G‖_2 + α1 TV(x) (eq. 4.12),

with Adam on the sign of ∇_x J and the images projected onto the valid pixel box after every step (A4.3).
The all-round manner (§4.2.5) matches the sum of the shared gradients of rounds 1..t with the sum of the dummy
gradients at each round's starting weights. :func:`reconstruct` runs K independent attacks (images, noise
settings, restarts) as one vectorised computation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, grad_and_value, vmap

Params = dict[str, Tensor]


@dataclass(frozen=True)
class AttackConfig:
    """Attack hyper-parameters; defaults: the thesis's (2,500 iterations, lr 0.01, α1 = 0.01, signed Adam)."""

    objective: Literal["cosine", "euclidean"] = "cosine"
    iterations: int = 2500
    lr: float = 0.01
    tv: float = 0.01  # α1
    signed: bool = True
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8

    def __post_init__(self) -> None:
        if self.objective not in ("cosine", "euclidean"):
            raise ValueError(f"objective must be 'cosine' or 'euclidean', got {self.objective!r}")
        if not isinstance(self.iterations, int) or self.iterations < 1:
            raise ValueError(f"iterations must be a positive int, got {self.iterations!r}")
        if not self.lr > 0:
            raise ValueError(f"lr must be > 0, got {self.lr!r}")
        if not self.tv >= 0:
            raise ValueError(f"tv (α1) must be >= 0, got {self.tv!r}")


def total_variation(x: Tensor) -> Tensor:
    """Anisotropic TV of A4.3: mean|x[..., :, 1:] − x[..., :, :-1]| + mean|x[..., 1:, :] − x[..., :-1, :]|."""
    return (x[..., :, 1:] - x[..., :, :-1]).abs().mean() + (x[..., 1:, :] - x[..., :-1, :]).abs().mean()


def gradient_cosine_distance(g: Params, target: Params) -> Tensor:
    """1 − ⟨g, G⟩ / (‖g‖ ‖G‖) over all parameter tensors concatenated (eq. 2.14's gradient term)."""
    dot = sum((g[k] * target[k]).sum() for k in target)
    gn = sum(g[k].pow(2).sum() for k in target)
    tn = sum(target[k].pow(2).sum() for k in target)
    return 1 - dot / (gn.sqrt() * tn.sqrt())


def gradient_euclidean_distance(g: Params, target: Params) -> Tensor:
    """‖g − G‖_2 over all parameter tensors concatenated (eq. 4.12's gradient term)."""
    return sum((g[k] - target[k]).pow(2).sum() for k in target).sqrt()


def model_gradient(model: nn.Module, params: Params, x: Tensor, y: Tensor) -> Params:
    """∇_W of the mean cross-entropy of ``model`` with parameters ``params`` on the batch (x, y)."""
    def loss(p: Params) -> Tensor:
        return F.cross_entropy(functional_call(model, p, (x,)), y)
    return grad(loss)(params)


def attack_objective(model: nn.Module, rounds: Params, x: Tensor, y: Tensor, target: Params,
                     cfg: AttackConfig) -> Tensor:
    """J(x) for one attack. ``rounds`` holds the weights of every round to match, stacked on dim 0 (one round:
    the one-round manner; t rounds: the all-round manner, dummy gradients summed over the rounds)."""
    per_round = vmap(model_gradient, in_dims=(None, 0, None, None))(model, rounds, x, y)
    g = {k: v.sum(0) for k, v in per_round.items()}
    distance = gradient_cosine_distance if cfg.objective == "cosine" else gradient_euclidean_distance
    return distance(g, target) + cfg.tv * total_variation(x)


def reconstruct(model: nn.Module, rounds: Params, labels: Tensor, targets: Params, x0: Tensor, *,
                cfg: AttackConfig, box: tuple[Tensor | float, Tensor | float]) -> tuple[Tensor, Tensor]:
    """Run K attacks at once.

    Args:
        model: the architecture (its own parameters are not used).
        rounds: weights per attack and round, each tensor of shape (K, R, *param_shape); shared weights can be
            passed as ``t.expand(K, ...)`` views without copying.
        labels: (K, B) the labels of each attacked batch (known to the attacker).
        targets: the shared gradients, each tensor (K, *param_shape) (for all-round: the sum over rounds).
        x0: (K, B, C, H, W) the dummy images to start from.
        cfg: attack hyper-parameters.
        box: lower and upper pixel bounds (in the model's input space), broadcastable to (C, H, W).

    Returns:
        The reconstructions (K, B, C, H, W) and the final objective value of each attack (K,).
    """
    k = x0.shape[0]
    if labels.shape[:1] != (k,) or any(t.shape[0] != k for t in targets.values()) or any(
            w.shape[0] != k for w in rounds.values()):
        raise ValueError(f"x0, labels, targets and rounds must share the leading attack dimension K = {k}")
    step = vmap(grad_and_value(attack_objective, argnums=2), in_dims=(None, 0, 0, 0, 0, None))
    lo, hi = box
    x = x0.detach().clone()
    m, v = torch.zeros_like(x), torch.zeros_like(x)
    (b1, b2), value = cfg.betas, torch.full((k,), float("nan"))
    for t in range(1, cfg.iterations + 1):
        g, value = step(model, rounds, x, labels, targets, cfg)
        if cfg.signed:
            g = g.sign()
        # torch.optim.Adam's update, for all attacks at once
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / (1 - b2**t) ** 0.5).add_(cfg.eps)
        x.addcdiv_(m, denom, value=-cfg.lr / (1 - b1**t))
        x = torch.maximum(torch.minimum(x, torch.as_tensor(hi)), torch.as_tensor(lo))
    return x, value.detach()


def recover_label(last_weight_grad: Tensor) -> int:
    """iDLG (Zhao et al. 2020): for one sample, cross-entropy and non-negative inputs to the last layer, the
    gradient row of the true class is the only one with a negative sum."""
    if last_weight_grad.ndim != 2:
        raise ValueError(f"last_weight_grad must be the (classes, features) weight gradient, got shape "
                         f"{tuple(last_weight_grad.shape)}")
    return int(last_weight_grad.sum(1).argmin())
