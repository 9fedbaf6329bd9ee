"""One reconstruction attack written the way the reference code (inversefed, Geiping et al.) writes it: autograd
with ``create_graph=True``, ``torch.optim.Adam`` on the sign of the image gradient, one attack at a time. The slow,
obviously-correct reference for :func:`fedlib.attacks.reconstruct`."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedlib.attacks import AttackConfig, total_variation


def inversefed_style_objective(model: nn.Module, names: list[str], x: Tensor, labels: Tensor,
                               target: dict[str, Tensor], cfg: AttackConfig) -> Tensor:
    """J(x) of eq. 2.14 with ``model``'s current weights, differentiable in x (create_graph=True)."""
    g = torch.autograd.grad(F.cross_entropy(model(x), labels), list(model.parameters()), create_graph=True)
    dot = sum((a * target[n]).sum() for a, n in zip(g, names))
    gn = sum(a.pow(2).sum() for a in g).sqrt()
    tn = sum(target[n].pow(2).sum() for n in names).sqrt()
    return 1 - dot / (gn * tn) + cfg.tv * total_variation(x)


def inversefed_style_attack(model: nn.Module, params: dict[str, Tensor], labels: Tensor, target: dict[str, Tensor],
                            x0: Tensor, cfg: AttackConfig, lo: float, hi: float) -> Tensor:
    """Cosine attack (eq. 2.14) on one batch; ``model`` is overwritten with ``params``."""
    for p, v in zip(model.parameters(), params.values()):
        p.data.copy_(v)
    x = x0.clone().requires_grad_(True)
    opt = torch.optim.Adam([x], lr=cfg.lr, betas=cfg.betas, eps=cfg.eps)
    names = list(params)
    for _ in range(cfg.iterations):
        opt.zero_grad()
        (x.grad,) = torch.autograd.grad(inversefed_style_objective(model, names, x, labels, target, cfg), [x])
        x.grad.sign_()
        opt.step()
        with torch.no_grad():
            x.clamp_(lo, hi)
    return x.detach()
