"""Weng's thesis §3.3: plain DPFL and the noise-reduction objectives Fed-nore-1 and Fed-nore-2.

Plain DPFL (Alg. 3.2 without Fed-nore): each client clips every layer of its update at the running median
of its own layer norms (eq. 3.8), adds N(0, σ² (C_il / n_i)²) (eqs. 3.9-3.10), and the server averages
with weights 1/m (eq. 3.11). Privacy: RDP with TF-Privacy's orders and the improved conversion,
every participating client one sampled Gaussian mechanism with q = 1/M.

Fed-nore changes only the local objective, so the privacy guarantee is unchanged. As written, both
objectives are constant shifts of the cross-entropy; the ``"literal"`` modes
implement them as written, the other modes are our interpretations and are labelled so.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor

from fedlib.fl import Algorithm, GaussianNoise, MedianClip
from fedlib.fl.client import Loss, Penalty
from fedlib.privacy.accountant import DEFAULT_ORDERS, PrivacyBudget, compute_rdp, rdp_to_epsilon


def plain_dpfl(noise_multiplier: float, *, budget: PrivacyBudget | None = None, loss: Loss | None = None,
               penalty: Penalty | None = None, drop_out: bool = False) -> Algorithm:
    """Plain DPFL (A6, eqs. 3.8-3.11); pair it with ``FLConfig(weighting="uniform")``. ``loss`` and ``penalty``
    turn it into Fed-nore (see :func:`fednore`).

    Accounting: the thesis's global convention (every participant one sampled Gaussian mechanism with q = 1/M), or
    with ``drop_out=True`` Alg. 3.2 as written (§3.3.1.2): each client composes its own uploads (q = 1) and drops
    out once its next upload would exceed ``budget``; training stops when fewer than m clients remain."""
    return Algorithm(transforms=[MedianClip(per_layer=True),
                                 GaussianNoise(noise_multiplier, per_sample=True,
                                               accounting="per_client" if drop_out else "global", budget=budget,
                                               orders=DEFAULT_ORDERS, drop_out=drop_out)],
                     loss=loss, penalty=penalty)


def fednore1_coefficient(lam: float, noise_multiplier: float, num_samples: int) -> float:
    """λ1 σ / n_i, the weight of Σ_l ‖W_il − W^t_l‖ in Fed-nore-1's objective (eqs. 3.12-3.13 with S_i of eq. 3.9)."""
    return lam * noise_multiplier / num_samples


def fednore1_penalty(lam: float, noise_multiplier: float, *,
                     mode: Literal["surrogate", "literal"] = "surrogate") -> Penalty:
    """Fed-nore-1's noise term λ1 σ S_i(W_i) with S_i(W_i) = Σ_l ‖W_il − W^t_l‖ / n_i (eqs. 3.12-3.13).

    The thesis's S_i is the clipping median over n_i, which does not depend on the local parameters: read
    literally the term is a constant and changes nothing. Appendix D differentiates S_i with respect to W_i;
    this per-layer, non-squared proximal term is that reading — **our interpretation**. Its
    gradient on layer l is (λ1 σ / n_i) (W_il − W^t_l) / ‖W_il − W^t_l‖ (0 at W_il = W^t_l).
    ``mode="literal"`` adds the same value with S_i treated as a number, as the thesis's S_i is: the
    gradient is zero, so training is exactly plain DPFL's.
    """
    if not lam >= 0:
        raise ValueError(f"lam (λ1) must be >= 0, got {lam!r}")
    if mode not in ("surrogate", "literal"):
        raise ValueError(f"mode must be 'surrogate' or 'literal', got {mode!r}")

    def penalty(params: list[Tensor], anchor: list[Tensor], num_samples: int) -> Tensor:
        norms = torch.stack([torch.sqrt((p - a).pow(2).sum() + 1e-24) for p, a in zip(params, anchor)])
        value = fednore1_coefficient(lam, noise_multiplier, num_samples) * norms.sum()
        return value.detach() if mode == "literal" else value

    def value_and_gradient(params: list[Tensor], anchor: list[Tensor], num_samples: int
                           ) -> tuple[Tensor, list[Tensor]]:
        """The term and its gradient written out, c (W_il − W^t_l) / ‖W_il − W^t_l‖ per layer (0 as written)."""
        c = fednore1_coefficient(lam, noise_multiplier, num_samples)
        diffs = torch._foreach_sub(params, anchor)
        norms = [torch.sqrt(d.pow(2).sum() + 1e-24) for d in diffs]
        value = c * torch.stack(norms).sum()
        if mode == "literal":
            return value, [torch.zeros_like(d) for d in diffs]
        return value, [d.mul_(c / n) for d, n in zip(diffs, norms)]

    penalty.value_and_gradient = value_and_gradient  # type: ignore[attr-defined]
    return penalty


def fednore2_factor(lam: float, noise_multiplier: float, num_samples: int) -> float:
    """c = λ2 σ / √n_i, the factor of eq. 3.19 (Thm. 3: the noise-to-gradient ratio σ/√n_i)."""
    return lam * noise_multiplier / math.sqrt(num_samples)


def fednore2_loss(lam: float, noise_multiplier: float, *, mode: Literal["literal", "margin"] = "literal",
                  clamp: bool = False) -> Loss:
    """Fed-nore-2's local loss ℓ = −ln(a_K^p (1 − λ2 σ / √n_i)) (eq. 3.19).

    ``"literal"``: eq. 3.19 as written. For 0 < c < 1 it equals CE − ln(1 − c), a constant shift with the
    same gradients as CE, computed in that stable form so that runs equal plain DPFL exactly. For c ≥ 1 the
    logarithm is undefined: a clear error, or with ``clamp=True`` the factor is clamped to 1e-12 (still a
    constant). ``"margin"`` (**our interpretation**): subtract μ = c from the true-class logit before the
    softmax, CE(z − μ·onehot(p), p), which depends on the parameters and is defined for every λ2.
    """
    if not lam >= 0:
        raise ValueError(f"lam (λ2) must be >= 0, got {lam!r}")
    if mode not in ("literal", "margin"):
        raise ValueError(f"mode must be 'literal' or 'margin', got {mode!r}")

    def loss(logits: Tensor, labels: Tensor, num_samples: int) -> Tensor:
        c = fednore2_factor(lam, noise_multiplier, num_samples)
        if mode == "margin":
            return F.cross_entropy(logits - c * F.one_hot(labels, logits.shape[1]).to(logits.dtype), labels)
        if c >= 1 and not clamp:
            raise ValueError(f"Fed-nore-2 (eq. 3.19) is undefined for c = λ2·σ/√n_i = {lam:g}·{noise_multiplier:g}/"
                             f"√{num_samples} = {c:.3f} >= 1 (ln of a non-positive number); use λ2 < "
                             f"{math.sqrt(num_samples) / noise_multiplier:.3f}, clamp=True or mode='margin'")
        return F.cross_entropy(logits, labels) - math.log(max(1.0 - c, 1e-12))

    return loss


def fednore(noise_multiplier: float, *, lam1: float = 0.0, lam2: float = 0.0,
            mode1: Literal["surrogate", "literal"] = "surrogate", mode2: Literal["literal", "margin"] = "literal",
            clamp: bool = False, budget: PrivacyBudget | None = None) -> Algorithm:
    """Fed-nore-1 (``lam1``), Fed-nore-2 (``lam2``) or both (A9: Table 3.2 lists one λ for both) on plain DPFL."""
    loss = fednore2_loss(lam2, noise_multiplier, mode=mode2, clamp=clamp) if lam2 > 0 else None
    penalty = fednore1_penalty(lam1, noise_multiplier, mode=mode1) if lam1 > 0 else None
    return plain_dpfl(noise_multiplier, budget=budget, loss=loss, penalty=penalty)


# Convergence analysis of Fed-nore-1 (thesis §3.3.2, Lemma 6, Theorems 4-5), implemented as written.

def fednore1_l1(lam: float, noise_multiplier: float, n: float, sensitivity: float) -> float:
    """l1 = 1 / (1 + λσ√n / S) (eq. 3.25)."""
    return 1.0 / (1.0 + lam * noise_multiplier * math.sqrt(n) / sensitivity)


def fednore1_l3(l1: float, mu: float, rho: float) -> float:
    """l3 = μρ l1² − 2 l1 μ + 1, the contraction factor per round (eq. 3.27); below 1 only if l1 < 2/ρ."""
    return mu * rho * l1**2 - 2 * l1 * mu + 1


def fednore1_q1(lam: float, noise_multiplier: float, n: float, beta: float) -> float:
    """q1 = (σ/√n)(λσ n^{3/2} − β) (eq. 3.28); negative at λ = 0, where the bound stops being meaningful."""
    return noise_multiplier / math.sqrt(n) * (lam * noise_multiplier * n**1.5 - beta)


def fednore1_convex_bound(rounds: int, gap0: float, *, lam: float, noise_multiplier: float, n: float,
                          sensitivity: float, mu: float, rho: float, beta: float) -> float:
    """Theorem 4 (eq. 3.26): E{F(W^T) − F*} ≤ l3^T gap0 + (β q1 (1 − l1 ρ) + ρ q1²/2)(1 − l3^T)/(1 − l3)."""
    l1 = fednore1_l1(lam, noise_multiplier, n, sensitivity)
    l3 = fednore1_l3(l1, mu, rho)
    q1 = fednore1_q1(lam, noise_multiplier, n, beta)
    step = beta * q1 * (1 - l1 * rho) + rho / 2 * q1**2
    geometric = rounds if l3 == 1 else (1 - l3**rounds) / (1 - l3)
    return l3**rounds * gap0 + step * geometric


def fednore1_nonconvex_bound(rounds: int, gap0: float, *, lam: float, noise_multiplier: float, n: float,
                             sensitivity: float, rho: float, beta: float) -> float:
    """Theorem 5 (eq. 3.29): E‖∇F‖² ≤ gap0 / ((l1 − ρl1²/2) T) + (β q1 (1 − l1ρ) + ρ q1²/2) / (l1 − ρl1²/2)."""
    l1 = fednore1_l1(lam, noise_multiplier, n, sensitivity)
    q1 = fednore1_q1(lam, noise_multiplier, n, beta)
    denom = l1 - rho * l1**2 / 2
    return gap0 / (denom * rounds) + (beta * q1 * (1 - l1 * rho) + rho * q1**2 / 2) / denom


def uploads_budget(noise_multiplier: float, uploads: int, delta: float,
                   orders: tuple[float, ...] = DEFAULT_ORDERS) -> PrivacyBudget:
    """The per-client budget (ε, δ) under which a client of Alg. 3.2 (per-client accounting: each upload one
    Gaussian mechanism with multiplier σ, q = 1) may upload exactly ``uploads`` times before it drops out."""
    if isinstance(uploads, bool) or not isinstance(uploads, int) or uploads < 1:
        raise ValueError(f"uploads must be an int >= 1, got {uploads!r}")
    rdp = compute_rdp(q=1.0, noise_multiplier=noise_multiplier, steps=uploads, orders=orders)
    return PrivacyBudget(rdp_to_epsilon(orders, rdp, delta)[0] * (1 + 1e-9), delta)
