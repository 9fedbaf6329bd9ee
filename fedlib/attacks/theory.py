"""The convergence analysis of reconstruction attacks under DP noise (Weng's thesis §4.3, appendices G-J), one function
per equation, and the noise-to-signal view the chapter plots them against.

The thesis states the results with "="; its proofs give "≤" (appendix H). Where the source is ambiguous the
function takes the reading as an argument and says which one is printed:

* Lemma 7 bounds the norm of the noise N(0, (σC/n)² I) by σC/√n (eq. A.39); a d-dimensional Gaussian has norm
  ≈ σC√d/n, so ``dim=d`` gives that reading (√d in place of √n).
* Theorem 6 assumes 1/k1 < 1 (k1 > 1); Lemma 8 and Theorem 7 need k1 ≤ 1 (the square root of 1 − k1), so the two
  analyses never hold at the same (σ, C). Where a square root would be negative the functions return NaN rather
  than a number the theorem does not give.
* Lemma 8's eq. (4.13) and its proof's eq. (A.48) differ by a factor 2 (``appendix=True`` for A.48).
* g(x) and g(x*) are vectors under a square root (eqs. 4.13, 4.15); we read them as their norms.
"""

from __future__ import annotations

import math


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


def lemma7_k1(sigma: float, bound: float, grad_norm: float, n: int, *, dim: int | None = None) -> float:
    """k1 = min(1, C/‖g‖) + (σ/√n)·C/‖g‖ (eq. 4.5), so that ‖ḡ‖ ≤ k1‖g‖ (Lemma 7, eq. 4.4).

    ``dim``: read the noise norm as σC√d/n (the norm of a d-dimensional N(0, (σC/n)² I)) instead of the printed
    σC/√n; the two agree only when d = n.
    """
    if not sigma >= 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    _positive("bound (C)", bound)
    _positive("grad_norm (‖g‖)", grad_norm)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n!r}")
    if dim is not None and dim < 1:
        raise ValueError(f"dim must be >= 1 or None, got {dim!r}")
    noise_norm = sigma * bound * math.sqrt(n if dim is None else dim) / n
    return min(1.0, bound / grad_norm) + noise_norm / grad_norm


def theorem6_k2(k1: float) -> float:
    """k2 = (k1 − 1)/k1 (eq. 4.9)."""
    _positive("k1", k1)
    return (k1 - 1) / k1


def corollary2_k3(k1: float, s: float = 0.5) -> float:
    """k3 = 1 − 2k2 + 2k2·s (eqs. 4.8 and 4.11): the expected factor E{Ū}/U by which the noise scales one
    signed-Adam update of the attack (Theorem 6), with s the probability that the cosine term and the TV term of
    ∇J have the same sign. Equal to 2s − 1 + 2(1 − s)/k1; s = 0.5 gives 1/k1. Theorem 6 assumes k1 > 1 (the
    sign-flip probability 1 − 1/k1 must be a probability); below it the formula still evaluates (k3 > 1)."""
    if not 0 <= s <= 1:
        raise ValueError(f"s must be in [0, 1], got {s!r}")
    k2 = theorem6_k2(k1)
    return 1 - 2 * k2 + 2 * k2 * s


def corollary2_bound(k3: float, *, lipschitz: float = 1.0, gap: float = 1.0, iterations: int = 1) -> float:
    """E{‖∇J‖²} ≤ L (J(x⁰) − J(x*)) / (2 T k3) (Corollary 2, eq. 4.10; "≤" as in appendix H, eq. A.44).

    With the defaults (L = 1, J(x⁰) − J(x*) = 1, T = 1) it is 1/(2 k3): the bound relative to the noise-free one
    is 1/k3.
    """
    _positive("lipschitz (L)", lipschitz)
    if iterations < 1:
        raise ValueError(f"iterations (T) must be >= 1, got {iterations!r}")
    return lipschitz * gap / (2 * iterations * k3)


def lemma8_noisy_objective(j: float, k1: float, gx_norm: float, gstar_norm: float, *,
                           appendix: bool = False) -> float:
    """J̄ = J + √(2(1 − k1)‖g(x)‖‖g(x*)‖) (Lemma 8, eq. 4.13; ``appendix=True``: 2√((1 − k1)‖g(x)‖‖g(x*)‖),
    eq. A.48). NaN where k1 > 1 (the square root of a negative number)."""
    if k1 > 1:
        return math.nan
    factor = 2 * math.sqrt(1 - k1) if appendix else math.sqrt(2 * (1 - k1))
    return j + factor * math.sqrt(gx_norm * gstar_norm)


def theorem7_k4(k1: float, gx_norm: float, gstar_norm: float) -> float:
    """k4 = √(2‖g(x*)‖(1 − k1)/‖g(x)‖) (eq. 4.15); NaN where k1 > 1."""
    _positive("gx_norm (‖g(x)‖)", gx_norm)
    if k1 > 1:
        return math.nan
    return math.sqrt(2 * gstar_norm * (1 - k1) / gx_norm)


def theorem7_k5(k4: float, beta3: float, sign: int = 1) -> float:
    """k5 = 1 + k4/(β3 ± 1) (eq. 4.17), with β3 g'(x) = ∇Re (eq. 4.18) and ``sign`` the ± of eq. A.49."""
    if sign not in (1, -1):
        raise ValueError(f"sign must be +1 or -1, got {sign!r}")
    if beta3 + sign == 0:
        raise ValueError(f"beta3 + sign must not be 0 (eq. 4.17 divides by it), got beta3={beta3!r}, sign={sign}")
    return 1 + k4 / (beta3 + sign)


def theorem7_bound(k5: float, *, lipschitz: float = 1.0, gap: float = 1.0, iterations: int = 1) -> float:
    """E{‖∇J‖²} ≤ L (J(x⁰) − J(x*)) / (2 T k5²) (Theorem 7, eq. 4.16; appendix J)."""
    _positive("lipschitz (L)", lipschitz)
    if iterations < 1:
        raise ValueError(f"iterations (T) must be >= 1, got {iterations!r}")
    return lipschitz * gap / (2 * iterations * k5**2)


def noise_to_signal(signal_norm: float, sigma: float, bound: float, n: int, dim: int) -> float:
    """‖N(0, (σC/n)² I_d)‖ / ‖ĝ‖ ≈ σC√d / (n ‖ĝ‖): the noise-to-signal ratio of one shared vector (eq. 4.2).

    Not an equation of the thesis: the quantity its "total noise" σC stands for once the clipped signal ‖ĝ‖ and the
    dimension d are taken into account (its inverse is the SNR the chapter plots the attack against).
    """
    _positive("signal_norm", signal_norm)
    return sigma * bound * math.sqrt(dim) / (n * signal_norm)
