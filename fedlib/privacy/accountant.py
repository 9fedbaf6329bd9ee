"""Rényi-DP accounting of the (sub)sampled Gaussian mechanism, conversion to (ε, δ), σ calibration.

The RDP of the sampled Gaussian mechanism (SGM) follows Mironov, Talwar & Zhang, "Rényi Differential
Privacy of the Sampled Gaussian Mechanism" (arXiv 1908.10530, §3.3), as in TF-Privacy and Opacus;
fedlib's numbers equal Opacus's (tested). In federated learning with client-level DP, the sampling
rate is q = clients per round / clients and one round is one step.

Two RDP → (ε, δ) conversions are offered:

* ``"classic"``: ε = RDP(α) + ln(1/δ)/(α−1) (Mironov 2017, Prop. 3; thesis §2.1.4 after Def. 7),
  used by the moments accountant of thesis §3.2;
* ``"improved"``: ε = RDP(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1) (Balle et al. 2020, Thm 21,
  arXiv 1905.09982), used by Opacus and TF-Privacy (thesis §3.3).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy import special

Conversion = Literal["improved", "classic"]

#: Orders used by Opacus, TF-Privacy and thesis §3.3 (spec P2).
DEFAULT_ORDERS: tuple[float, ...] = tuple([1 + x / 10.0 for x in range(1, 100)] + list(range(12, 64)))
#: Integer orders 2..33 of the moments accountant (thesis §3.2, spec P1).
MOMENTS_ORDERS: tuple[float, ...] = tuple(float(a) for a in range(2, 34))


def _log_add(logx: float, logy: float) -> float:
    a, b = min(logx, logy), max(logx, logy)
    if a == -math.inf:
        return b
    return math.log1p(math.exp(a - b)) + b


def _log_sub(logx: float, logy: float) -> float:
    if logx < logy:
        raise ValueError("log-space subtraction would be negative")
    if logy == -math.inf:
        return logx
    if logx == logy:
        return -math.inf
    try:
        return math.log(math.expm1(logx - logy)) + logy
    except OverflowError:
        return logx


def _log_a_int(q: float, sigma: float, alpha: int) -> float:
    """ln A_α = ln Σ_k C(α,k) (1−q)^(α−k) q^k exp((k²−k)/(2σ²)) for integer α (1908.10530 §3.3)."""
    log_a = -math.inf
    for k in range(alpha + 1):
        log_coef = math.log(math.comb(alpha, k)) + k * math.log(q) + (alpha - k) * math.log(1 - q)
        log_a = _log_add(log_a, log_coef + (k * k - k) / (2 * sigma**2))
    return log_a


def _log_erfc(x: float) -> float:
    return math.log(2) + float(special.log_ndtr(-x * 2**0.5))


def _log_a_frac(q: float, sigma: float, alpha: float) -> float:
    """ln A_α for fractional α: the two half-line integrals of 1908.10530 §3.3."""
    log_a0, log_a1 = -math.inf, -math.inf
    z0 = sigma**2 * math.log(1 / q - 1) + 0.5
    i = 0
    while True:
        coef = float(special.binom(alpha, i))
        log_coef = math.log(abs(coef))
        j = alpha - i
        log_t0 = log_coef + i * math.log(q) + j * math.log(1 - q)
        log_t1 = log_coef + j * math.log(q) + i * math.log(1 - q)
        log_e0 = math.log(0.5) + _log_erfc((i - z0) / (math.sqrt(2) * sigma))
        log_e1 = math.log(0.5) + _log_erfc((z0 - j) / (math.sqrt(2) * sigma))
        log_s0 = log_t0 + (i * i - i) / (2 * sigma**2) + log_e0
        log_s1 = log_t1 + (j * j - j) / (2 * sigma**2) + log_e1
        if coef > 0:
            log_a0, log_a1 = _log_add(log_a0, log_s0), _log_add(log_a1, log_s1)
        else:
            log_a0, log_a1 = _log_sub(log_a0, log_s0), _log_sub(log_a1, log_s1)
        i += 1
        if max(log_s0, log_s1) < -30:
            return _log_add(log_a0, log_a1)


#: Above this σ the RDP is bounded by the Gaussian mechanism's α/(2σ²) (sampling only lowers it): below 1e-12 for
#: every order used, and the series of 1908.10530 would lose precision or overflow in σ².
_LARGE_SIGMA = 1e6


def _rdp_one(q: float, sigma: float, alpha: float) -> float:
    if q == 0:
        return 0.0
    if math.isinf(alpha):
        return math.inf
    gaussian = alpha / 2 / sigma / sigma if sigma > 0 else math.inf  # thesis Lemma 2, without overflow in σ²
    if q == 1.0 or sigma > _LARGE_SIGMA or math.isinf(gaussian):
        return gaussian  # exact for q = 1; an upper bound otherwise (∞ when σ² underflows)
    log_a = _log_a_int(q, sigma, int(alpha)) if float(alpha).is_integer() else _log_a_frac(q, sigma, alpha)
    return log_a / (alpha - 1)


@lru_cache(maxsize=4096)
def _rdp_cached(q: float, sigma: float, orders: tuple[float, ...]) -> np.ndarray:
    out = np.array([_rdp_one(q, sigma, a) for a in orders])
    out.setflags(write=False)
    return out


def _check_mechanism(noise_multiplier: float, sample_rate: float) -> None:
    if not (noise_multiplier >= 0 and math.isfinite(noise_multiplier)):
        raise ValueError(f"noise_multiplier must be a finite number >= 0, got {noise_multiplier!r}")
    if not 0 <= sample_rate <= 1:
        raise ValueError(f"sample_rate must be in [0, 1], got {sample_rate!r}")


def compute_rdp(*, q: float, noise_multiplier: float, steps: int | float,
                orders: Sequence[float] = DEFAULT_ORDERS) -> np.ndarray:
    """RDP ε(α) of the sampled Gaussian mechanism composed ``steps`` times (thesis Lemmas 2-4).

    Args:
        q: sampling rate (q = 1: plain Gaussian mechanism, RDP α/(2σ²)).
        noise_multiplier: σ, noise std divided by the L2 sensitivity.
        steps: number of compositions (RDP adds up, thesis Lemma 4).
        orders: Rényi orders α > 1.
    """
    _check_mechanism(noise_multiplier, q)
    if not (steps >= 0 and math.isfinite(steps)):
        raise ValueError(f"steps must be a finite number >= 0, got {steps!r}")
    return _rdp_cached(float(q), float(noise_multiplier), tuple(float(a) for a in orders)) * steps


def _check_delta(delta: float) -> None:
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")


def rdp_to_epsilon(orders: Sequence[float], rdp: np.ndarray, delta: float,
                   conversion: Conversion = "improved") -> tuple[float, float]:
    """Smallest ε over the orders such that the RDP curve gives (ε, δ)-DP, and the optimal order.

    ``"classic"``: ε = RDP(α) + ln(1/δ)/(α−1) (thesis §2.1.4); ``"improved"``: Balle et al. 2020 Thm 21.
    """
    _check_delta(delta)
    a = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    if conversion == "classic":
        eps = rdp + math.log(1 / delta) / (a - 1)
    elif conversion == "improved":
        eps = rdp - (math.log(delta) + np.log(a)) / (a - 1) + np.log((a - 1) / a)
    else:
        raise ValueError(f"conversion must be 'improved' or 'classic', got {conversion!r}")
    if np.isnan(eps).all():
        return math.inf, math.nan
    i = int(np.nanargmin(eps))
    return float(max(eps[i], 0.0)), float(a[i])


def rdp_to_delta(orders: Sequence[float], rdp: np.ndarray, epsilon: float) -> tuple[float, float]:
    """Smallest δ = exp((α−1)(RDP(α) − ε)) over the orders (classic conversion solved for δ; thesis §3.2)."""
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    a = np.asarray(orders, dtype=float)
    log_delta = (a - 1) * (np.asarray(rdp, dtype=float) - epsilon)
    i = int(np.nanargmin(log_delta))
    return float(min(math.exp(log_delta[i]), 1.0)), float(a[i])


class RDPAccountant:
    """Composes sampled Gaussian mechanisms and reports the (ε, δ) spent.

    The interface follows Opacus's ``RDPAccountant``: ``step(noise_multiplier=σ, sample_rate=q)``
    once per mechanism application, ``get_epsilon(delta)``. Identical steps are merged, so a
    10,000-round history costs one RDP evaluation.

    Example:
        >>> acc = RDPAccountant()
        >>> acc.step(noise_multiplier=1.5, sample_rate=0.04, steps=2250)
        >>> round(acc.get_epsilon(1e-5), 4)
        7.3291
    """

    def __init__(self, orders: Sequence[float] = DEFAULT_ORDERS) -> None:
        if any(a <= 1 for a in orders):
            raise ValueError("every Rényi order must be > 1")
        self.orders = tuple(float(a) for a in orders)
        self.steps: dict[tuple[float, float], int] = {}

    def step(self, *, noise_multiplier: float, sample_rate: float, steps: int = 1) -> None:
        """Record ``steps`` applications of the SGM with multiplier σ and sampling rate q."""
        _check_mechanism(noise_multiplier, sample_rate)
        key = (float(noise_multiplier), float(sample_rate))
        self.steps[key] = self.steps.get(key, 0) + int(steps)

    def rdp(self, extra: dict[tuple[float, float], int] | None = None) -> np.ndarray:
        """The composed RDP curve over ``self.orders`` (plus ``extra`` hypothetical steps)."""
        total = np.zeros(len(self.orders))
        merged = dict(self.steps)
        for key, n in (extra or {}).items():
            merged[key] = merged.get(key, 0) + n
        for (sigma, q), n in merged.items():
            total = total + compute_rdp(q=q, noise_multiplier=sigma, steps=n, orders=self.orders)
        return total

    def get_privacy_spent(self, delta: float, conversion: Conversion = "improved") -> tuple[float, float]:
        """(ε, optimal order) spent so far at ``delta``."""
        if not self.steps:
            return 0.0, math.nan
        return rdp_to_epsilon(self.orders, self.rdp(), delta, conversion)

    def get_epsilon(self, delta: float, conversion: Conversion = "improved") -> float:
        """ε spent so far at ``delta``."""
        return self.get_privacy_spent(delta, conversion)[0]

    def get_delta(self, epsilon: float) -> float:
        """δ spent so far at ``epsilon`` (classic conversion)."""
        return rdp_to_delta(self.orders, self.rdp(), epsilon)[0] if self.steps else 0.0

    def would_exceed(self, budget: "PrivacyBudget", *, noise_multiplier: float, sample_rate: float,
                     steps: int = 1) -> bool:
        """Whether ``steps`` more SGM applications would spend more than ``budget``."""
        rdp = self.rdp({(float(noise_multiplier), float(sample_rate)): int(steps)})
        return rdp_to_epsilon(self.orders, rdp, budget.delta, budget.conversion)[0] > budget.epsilon

    def state_dict(self) -> dict:
        return {"orders": list(self.orders), "steps": [[s, q, n] for (s, q), n in self.steps.items()]}

    def load_state_dict(self, state: dict) -> None:
        self.orders = tuple(state["orders"])
        self.steps = {(float(s), float(q)): int(n) for s, q, n in state["steps"]}


@dataclass(frozen=True)
class PrivacyBudget:
    """A target (ε, δ) and the conversion used to check it."""

    epsilon: float
    delta: float
    conversion: Conversion = "improved"

    def __post_init__(self) -> None:
        if not self.epsilon > 0:
            raise ValueError(f"epsilon must be > 0, got {self.epsilon!r}")
        _check_delta(self.delta)
        if self.conversion not in ("improved", "classic"):
            raise ValueError(f"conversion must be 'improved' or 'classic', got {self.conversion!r}")


def epsilon_curve(*, noise_multiplier: float, sample_rate: float, steps: int, delta: float,
                  orders: Sequence[float] = DEFAULT_ORDERS, conversion: Conversion = "improved",
                  steps_per_round: int = 1) -> np.ndarray:
    """ε after each of rounds 1..steps (``steps_per_round`` SGM applications per round)."""
    one = compute_rdp(q=sample_rate, noise_multiplier=noise_multiplier, steps=steps_per_round, orders=orders)
    return np.array([rdp_to_epsilon(orders, one * t, delta, conversion)[0] for t in range(1, steps + 1)])


def calibrate_noise_multiplier(*, target_epsilon: float, delta: float, sample_rate: float, steps: int,
                               orders: Sequence[float] = DEFAULT_ORDERS, conversion: Conversion = "improved",
                               tolerance: float = 0.01, max_sigma: float = 1e6) -> float:
    """Smallest σ (to ``tolerance`` in ε) whose ``steps``-fold SGM stays within (target_epsilon, delta).

    Same bisection as Opacus's ``get_noise_multiplier``, so results agree with it; the returned σ
    never overshoots the target ε.
    """
    if not (target_epsilon > 0 and math.isfinite(target_epsilon)):
        raise ValueError(f"target_epsilon must be a finite number > 0, got {target_epsilon!r}")
    _check_delta(delta)
    _check_mechanism(1.0, sample_rate)
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")

    def eps(sigma: float) -> float:
        rdp = compute_rdp(q=sample_rate, noise_multiplier=sigma, steps=steps, orders=orders)
        return rdp_to_epsilon(orders, rdp, delta, conversion)[0]

    lo, hi, eps_hi = 0.0, 10.0, math.inf
    while eps_hi > target_epsilon:
        hi *= 2
        eps_hi = eps(hi)
        if hi > max_sigma:
            raise ValueError(f"target_epsilon={target_epsilon} is too small to reach with sigma <= {max_sigma}")
    while target_epsilon - eps_hi > tolerance:
        mid = (lo + hi) / 2
        e = eps(mid)
        if e < target_epsilon:
            hi, eps_hi = mid, e
        else:
            lo = mid
    return hi


def basic_composition(epsilons: Sequence[float], deltas: Sequence[float] | None = None) -> tuple[float, float]:
    """(Σ ε_i, Σ δ_i) — composition theorem (thesis Thm 1)."""
    return float(sum(epsilons)), float(sum(deltas or []))


def advanced_composition(epsilon: float, delta: float, k: int, delta_prime: float,
                         literal: bool = False) -> tuple[float, float]:
    """k-fold composition of an (ε, δ)-DP mechanism (thesis Thm 2, eq. 2.23).

    The standard form (Dwork & Roth Thm 3.20) is ε' = sqrt(2k ln(1/δ')) ε + k ε (e^ε − 1), with total
    δ = kδ + δ'. The source's eq. 2.23 drops the factor 2 under the root; ``literal=True`` gives that
    (incorrect, too small) value for comparison.
    """
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    _check_delta(delta_prime)
    factor = 1.0 if literal else 2.0
    eps = math.sqrt(factor * k * math.log(1 / delta_prime)) * epsilon + k * epsilon * math.expm1(epsilon)
    return eps, k * delta + delta_prime


class ClientLedger:
    """One :class:`RDPAccountant` per client: local DP, where each client composes its own participations.

    A client's update noised with multiplier σ is, from that client's side, one Gaussian mechanism on
    all of its data (q = 1) per participation; budgets are tracked per client.
    """

    def __init__(self, orders: Sequence[float] = DEFAULT_ORDERS) -> None:
        self.orders = tuple(orders)
        self.accountants: dict[int, RDPAccountant] = {}

    def step(self, client: int, *, noise_multiplier: float, sample_rate: float = 1.0, steps: int = 1) -> None:
        acc = self.accountants.setdefault(int(client), RDPAccountant(self.orders))
        acc.step(noise_multiplier=noise_multiplier, sample_rate=sample_rate, steps=steps)

    def get_epsilon(self, client: int, delta: float, conversion: Conversion = "improved") -> float:
        acc = self.accountants.get(int(client))
        return acc.get_epsilon(delta, conversion) if acc is not None else 0.0

    def max_epsilon(self, delta: float, conversion: Conversion = "improved") -> float:
        """The largest ε spent by any client (0 before any step)."""
        return max((a.get_epsilon(delta, conversion) for a in self.accountants.values()), default=0.0)

    def state_dict(self) -> dict:
        return {"orders": list(self.orders), "clients": {k: a.state_dict() for k, a in self.accountants.items()}}

    def load_state_dict(self, state: dict) -> None:
        self.orders = tuple(state["orders"])
        self.accountants = {}
        for k, s in state["clients"].items():
            acc = RDPAccountant(self.orders)
            acc.load_state_dict(s)
            self.accountants[int(k)] = acc
