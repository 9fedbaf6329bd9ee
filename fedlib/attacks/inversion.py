"""Gradient-inversion (reconstruction) attacks of Weng's thesis §2.1.3 and ch. 4, batched with :mod:`torch.func`.

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
from functools import partial
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, grad_and_value, vmap

from fedlib.fl.backprop import mlp_linears

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


def squared_norm(p: Params) -> Tensor:
    """‖G‖² over all parameter tensors concatenated. The attack's target is fixed, so :func:`reconstruct` computes
    it once instead of in every iteration (reading every target gradient once more per iteration took half of the
    batched attack's time)."""
    return sum(t.pow(2).sum() for t in p.values())


def gradient_cosine_distance(g: Params, target: Params, target_sq: Tensor | None = None) -> Tensor:
    """1 − ⟨g, G⟩ / (‖g‖ ‖G‖) over all parameter tensors concatenated (eq. 2.14's gradient term); ``target_sq``:
    ‖G‖² if already known (:func:`squared_norm`)."""
    dot = sum((g[k] * target[k]).sum() for k in target)
    gn = sum(g[k].pow(2).sum() for k in target)
    tn = squared_norm(target) if target_sq is None else target_sq
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
                     cfg: AttackConfig, target_sq: Tensor | None = None) -> Tensor:
    """J(x) for one attack. ``rounds`` holds the weights of every round to match, stacked on dim 0 (one round:
    the one-round manner; t rounds: the all-round manner, dummy gradients summed over the rounds); ``target_sq``:
    ‖G‖² if already known (used by the cosine objective)."""
    per_round = vmap(model_gradient, in_dims=(None, 0, None, None))(model, rounds, x, y)
    g = {k: v.sum(0) for k, v in per_round.items()}
    if cfg.objective == "cosine":
        return gradient_cosine_distance(g, target, target_sq) + cfg.tv * total_variation(x)
    return gradient_euclidean_distance(g, target) + cfg.tv * total_variation(x)


def mlp_layer_names(model: nn.Module) -> list[tuple[str, str]] | None:
    """(weight, bias) parameter names of every Linear layer if ``model`` is a ReLU MLP stack, else None."""
    linears = mlp_linears(model)
    if linears is None:
        return None
    names = {id(m): n for n, m in model.named_modules()}
    return [(f"{names[id(m)]}.weight", f"{names[id(m)]}.bias") for m in linears]


def mlp_attack_objective(layers: list[tuple[str, str]], rounds: Params, x: Tensor, y: Tensor, target: Params,
                         cfg: AttackConfig, target_sq: Tensor | None = None) -> Tensor:
    """:func:`attack_objective` for a ReLU MLP, without forming the dummy gradient.

    The dummy gradient of layer l is D_l^T A_l (eqs. 2.6-2.10: D the output gradients dz of the mean
    cross-entropy, A the layer inputs; all rounds' samples stacked), so ⟨g, G⟩ = Σ_l Σ(D_l ⊙ A_l T_l^T) and
    ‖g‖² = Σ_l Σ((D_l D_l^T) ⊙ (A_l A_l^T)) (the ghost-norm identity), plus the bias terms. Same value as the
    generic objective; the per-attack weight gradients (millions of entries for the thesis's MLP) are never
    materialised, which is what makes many attacks at once cheap. ``target_sq``: ‖G‖² if already known.
    """
    num_rounds = rounds[layers[0][0]].shape[0]
    num_classes = target[layers[-1][1]].shape[-1]
    onehot = (torch.arange(num_classes, device=y.device) == y[:, None]).to(x.dtype)
    inputs: list[list[Tensor]] = [[] for _ in layers]
    grads_out: list[list[Tensor]] = [[] for _ in layers]
    for r in range(num_rounds):
        a, pre = x.reshape(len(x), -1), []
        for i, (w, b) in enumerate(layers):
            inputs[i].append(a)
            pre.append(a @ rounds[w][r].T + rounds[b][r])
            a = torch.relu(pre[-1])
        dz = (torch.softmax(pre[-1], dim=1) - onehot) / len(y)  # (2.6), mean over the batch
        for i in range(len(layers) - 1, -1, -1):
            grads_out[i].append(dz)
            if i:
                dz = (dz @ rounds[layers[i][0]][r]) * (pre[i - 1] > 0)  # (2.10), (2.7)
    dot, sq = x.new_zeros(()), x.new_zeros(())
    for (w, b), a_list, d_list in zip(layers, inputs, grads_out):
        a, d = torch.cat(a_list), torch.cat(d_list)
        dot = dot + (d * (a @ target[w].T)).sum() + d.sum(0) @ target[b]
        sq = sq + ((d @ d.T) * (a @ a.T)).sum() + d.sum(0).pow(2).sum()
    tn = squared_norm(target) if target_sq is None else target_sq
    if cfg.objective == "cosine":
        distance = 1 - dot / (sq.sqrt() * tn.sqrt())
    else:
        distance = (sq - 2 * dot + tn).clamp_min(0).sqrt()
    return distance + cfg.tv * total_variation(x)


def reconstruct(model: nn.Module, rounds: Params, labels: Tensor, targets: Params, x0: Tensor, *,
                cfg: AttackConfig, box: tuple[Tensor | float, Tensor | float]) -> tuple[Tensor, Tensor]:
    """Run K attacks at once.

    Args:
        model: the architecture (its own parameters are not used).
        rounds: the weights of every round to match, each tensor of shape (R, ...) (R rounds, then the
            parameter's shape) when all attacks share them, or (K, R, ...).
        labels: (K, B) the labels of each attacked batch (known to the attacker).
        targets: the shared gradients, each tensor (K, ...) (for all-round: the sum over rounds).
        x0: (K, B, C, H, W) the dummy images to start from.
        cfg: attack hyper-parameters.
        box: lower and upper pixel bounds (in the model's input space), broadcastable to (C, H, W).

    Every tensor argument must live on one device (CPU or CUDA); the attacks run there.

    ReLU MLPs use :func:`mlp_attack_objective`, every other model the generic :func:`attack_objective`.

    Returns:
        The reconstructions (K, B, C, H, W) and the final objective value of each attack (K,).
    """
    k = x0.shape[0]
    extra = {rounds[n].ndim - p.ndim for n, p in model.named_parameters()}
    if extra not in ({1}, {2}):
        raise ValueError("rounds must hold every parameter as (R, *shape) (shared) or (K, R, *shape) (per attack)")
    shared = extra == {1}
    if labels.shape[:1] != (k,) or any(t.shape[0] != k for t in targets.values()) or (
            not shared and any(w.shape[0] != k for w in rounds.values())):
        raise ValueError(f"x0, labels, targets (and per-attack rounds) must share the leading dimension K = {k}")
    layers = mlp_layer_names(model)
    objective = partial(mlp_attack_objective, layers) if layers else partial(attack_objective, model)
    step = vmap(grad_and_value(objective, argnums=1), in_dims=(None if shared else 0, 0, 0, 0, None, 0))
    target_sq = vmap(squared_norm)(targets)  # the same sums the objective would form, once
    lo, hi = (torch.as_tensor(b, dtype=x0.dtype, device=x0.device) for b in box)
    x = x0.detach().clone()
    m, v = torch.zeros_like(x), torch.zeros_like(x)
    (b1, b2), value = cfg.betas, torch.full((k,), float("nan"), device=x0.device)
    for t in range(1, cfg.iterations + 1):
        g, value = step(rounds, x, labels, targets, cfg, target_sq)
        if cfg.signed:
            g = g.sign()
        # torch.optim.Adam's update, for all attacks at once
        m.mul_(b1).add_(g, alpha=1 - b1)
        v.mul_(b2).addcmul_(g, g, value=1 - b2)
        denom = (v.sqrt() / (1 - b2**t) ** 0.5).add_(cfg.eps)
        x.addcdiv_(m, denom, value=-cfg.lr / (1 - b1**t))
        x = torch.maximum(torch.minimum(x, hi), lo)
    return x, value.detach()


def recover_label(last_weight_grad: Tensor) -> int:
    """iDLG (Zhao et al. 2020): for one sample, cross-entropy and non-negative inputs to the last layer, the
    gradient row of the true class is the only one with a negative sum."""
    if last_weight_grad.ndim != 2:
        raise ValueError(f"last_weight_grad must be the (classes, features) weight gradient, got shape "
                         f"{tuple(last_weight_grad.shape)}")
    return int(last_weight_grad.sum(1).argmin())
