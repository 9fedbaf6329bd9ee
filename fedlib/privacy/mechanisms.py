"""Additive noise mechanisms and their classic calibrations (thesis §2.1.4)."""

from __future__ import annotations

import math

import torch
from torch import Tensor


def gaussian_noise(shape: torch.Size | tuple[int, ...], std: float, *, generator: torch.Generator,
                   dtype: torch.dtype = torch.float32) -> Tensor:
    """i.i.d. N(0, std^2) noise of ``shape`` drawn from ``generator`` (Gaussian mechanism, thesis Def. 5)."""
    if not std >= 0:
        raise ValueError(f"std must be >= 0, got {std!r}")
    noise = torch.randn(shape, generator=generator, dtype=dtype)
    return noise.mul_(std)


def laplace_noise(shape: torch.Size | tuple[int, ...], scale: float, *, generator: torch.Generator,
                  dtype: torch.dtype = torch.float32) -> Tensor:
    """i.i.d. Lap(b) noise, density ``exp(-abs(x) / b) / (2b)``, drawn by inverse CDF.

    The Laplace mechanism of thesis §2.1.4.
    """
    if not scale >= 0:
        raise ValueError(f"scale must be >= 0, got {scale!r}")
    u = torch.rand(shape, generator=generator, dtype=torch.float64) - 0.5
    x = -scale * torch.sign(u) * torch.log1p(-2.0 * u.abs())
    return x.to(dtype)


def laplace_scale(sensitivity: float, epsilon: float) -> float:
    """b = Δf / ε for ε-DP with L1-sensitivity Δf (thesis §2.1.4, Def. 3)."""
    if not sensitivity > 0:
        raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    return sensitivity / epsilon


def classic_gaussian_std(sensitivity: float, epsilon: float, delta: float) -> float:
    """σ_abs = sqrt(2 ln(1.25/δ)) Δf / ε: one application is (ε, δ)-DP (Dwork & Roth Thm A.1; thesis §2.1.4).

    The theorem holds only for 0 < ε < 1; for larger ε, or for many rounds, calibrate with the RDP
    accountant (:func:`fedlib.privacy.accountant.calibrate_noise_multiplier`).

    Raises:
        ValueError: ε outside (0, 1), δ outside (0, 1), or sensitivity ≤ 0.
    """
    if not sensitivity > 0:
        raise ValueError(f"sensitivity must be > 0, got {sensitivity!r}")
    if not 0 < epsilon < 1:
        raise ValueError(f"epsilon must be in (0, 1) for the classic Gaussian mechanism, got {epsilon!r}; "
                         "use the RDP accountant for larger epsilon")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    return math.sqrt(2.0 * math.log(1.25 / delta)) * sensitivity / epsilon


def aggregate_noise_std(noise_multiplier: float, bound: float, clients_per_round: int, *, local: bool) -> float:
    """Per-coordinate noise std on the average of m clipped updates (thesis §2.1.5, Fig. 2.3).

    Central DP adds N(0, (σC)²) once to the sum: std σC/m on the average. Local DP has every client
    add N(0, (σC)²) to its own update: the m independent draws average to std σC/√m, i.e. √m times
    more noise at the same σ.
    """
    if not isinstance(clients_per_round, int) or clients_per_round < 1:
        raise ValueError(f"clients_per_round must be a positive int, got {clients_per_round!r}")
    if not noise_multiplier >= 0 or not bound > 0:
        raise ValueError(f"need noise_multiplier >= 0 and bound > 0, got {noise_multiplier!r}, {bound!r}")
    m = clients_per_round
    return noise_multiplier * bound / (math.sqrt(m) if local else m)


def noise_norm_ratio(noise_multiplier: float, dim: int, num_samples: int = 1) -> float:
    """‖N(0, (σS/n_i)² I_d)‖ / S ≈ σ √d / n_i: the noise norm relative to the bound S it is scaled to.

    Thesis eqs. 3.1-3.2 (d = the k kept entries) and 3.9-3.10 (d = the layer's size d_l); ``num_samples=1``
    for a sensitivity that is not divided by n_i.
    """
    if not noise_multiplier >= 0 or not dim >= 1 or not num_samples >= 1:
        raise ValueError(f"need noise_multiplier >= 0, dim >= 1 and num_samples >= 1, got {noise_multiplier!r}, "
                         f"{dim!r}, {num_samples!r}")
    return noise_multiplier * math.sqrt(dim) / num_samples


def _phi(x: float) -> float:
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def gaussian_delta(epsilon: float, ratio: float) -> float:
    """δ(ε) of the Gaussian mechanism with sensitivity/std ratio Δ/σ: its exact privacy profile
    δ = Φ(Δ/(2σ) − εσ/Δ) − e^ε Φ(−Δ/(2σ) − εσ/Δ) (Balle & Wang 2018, Thm 8). Valid for every ε ≥ 0,
    unlike :func:`classic_gaussian_std`."""
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if not ratio >= 0:
        raise ValueError(f"ratio must be >= 0, got {ratio!r}")
    if ratio == 0:
        return 0.0
    if epsilon > 700:  # e^ε overflows a float (a very small σ): the second term in log space
        from scipy.special import log_ndtr

        second = math.exp(epsilon + float(log_ndtr(-ratio / 2 - epsilon / ratio)))
    else:
        second = math.exp(epsilon) * _phi(-ratio / 2 - epsilon / ratio)
    return max(0.0, _phi(ratio / 2 - epsilon / ratio) - second)


def analytic_gaussian_ratio(epsilon: float, delta: float) -> float:
    """The largest Δ/σ for which the Gaussian mechanism is (ε, δ)-DP, by bisection on :func:`gaussian_delta`
    (the "analytic Gaussian mechanism" of Balle & Wang 2018)."""
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon!r}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    lo, hi = 0.0, 1.0
    while gaussian_delta(epsilon, hi) <= delta:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gaussian_delta(epsilon, mid) <= delta else (lo, mid)
    return lo


def gaussian_epsilon(ratio: float, delta: float) -> float:
    """The smallest ε for which the Gaussian mechanism with sensitivity/std ratio Δ/σ is (ε, δ)-DP: the inverse
    of :func:`gaussian_delta` in ε (bisection; exact, tighter than any RDP conversion for one release)."""
    if not ratio >= 0:
        raise ValueError(f"ratio must be >= 0, got {ratio!r}")
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if gaussian_delta(0.0, ratio) <= delta:
        return 0.0
    lo, hi = 0.0, 1.0
    while gaussian_delta(hi, ratio) > delta:
        lo, hi = hi, 2 * hi
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if gaussian_delta(mid, ratio) <= delta else (mid, hi)
    return hi
