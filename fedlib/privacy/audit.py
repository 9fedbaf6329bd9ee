"""Empirical privacy auditing: a statistically valid lower bound ε̂ on the ε of a mechanism, from canaries.

An accountant's ε is an upper bound only if the code does what the math assumes. An audit runs the mechanism many
times on two neighbouring inputs — a client's update without and with a canary, each with probability ½ — scores
what the attacker sees (the projection on the canary's direction), and turns the distinguishing test's error rates
into ε̂ (Jagielski, Ullman & Oprea 2020; Nasr et al. 2021): (ε, δ)-DP forces every test to have
FPR + e^ε FNR ≥ 1 − δ and FNR + e^ε FPR ≥ 1 − δ (Kairouz, Oh & Viswanath 2015). With Clopper–Pearson upper bounds on
both rates, ε̂ is a lower bound on the true ε with probability ≥ 1 − α; an implementation whose ε̂ exceeds its
accounted ε does not do what its accountant assumes.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import torch
from torch import Tensor


def clopper_pearson_upper(successes: int, trials: int, alpha: float) -> float:
    """One-sided (1 − α) Clopper–Pearson upper confidence bound on a binomial proportion."""
    from scipy.stats import beta

    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes} of {trials}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    return 1.0 if successes == trials else float(beta.ppf(1 - alpha, successes + 1, trials - successes))


def epsilon_from_rates(fpr: float, fnr: float, delta: float) -> float:
    """The smallest ε that (ε, δ)-DP allows for a test with these error rates: max(log((1 − δ − FPR)/FNR),
    log((1 − δ − FNR)/FPR)), 0 if neither is positive, ∞ for an error-free test (Kairouz et al. 2015, Thm. 2.1)."""
    for name, rate in (("fpr", fpr), ("fnr", fnr)):
        if not 0 <= rate <= 1:
            raise ValueError(f"{name} must be in [0, 1], got {rate!r}")
    best = 0.0
    for a, b in ((fpr, fnr), (fnr, fpr)):
        if 1 - delta - a > b:
            best = max(best, math.inf if b == 0 else math.log((1 - delta - a) / b))
    return best


@dataclass
class AuditResult:
    """ε̂ at confidence 1 − α, with the test that achieved it (threshold chosen on a calibration half; the rates
    are counted on the other half)."""

    epsilon_lb: float
    threshold: float
    tpr: float
    fpr: float
    trials: int
    alpha: float
    delta: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


def epsilon_lower_bound(scores_out: Tensor, scores_in: Tensor, *, delta: float, alpha: float = 0.05) -> AuditResult:
    """ε̂ from the attacker's scores on runs without (``scores_out``) and with (``scores_in``) the canary.

    The threshold τ ("canary present" iff score > τ) is the one whose ε estimate is largest on the first half of
    each score set; FPR and FNR are counted on the second halves and replaced by their (1 − α/2) Clopper–Pearson
    upper bounds, so that ε̂ is a lower bound on ε with probability ≥ 1 − α.
    """
    if not 0 <= delta < 1:
        raise ValueError(f"delta must be in [0, 1), got {delta!r}")
    scores_out, scores_in = scores_out.flatten().double(), scores_in.flatten().double()
    if min(len(scores_out), len(scores_in)) < 20:
        raise ValueError(f"need at least 20 runs with and without the canary, got {len(scores_out)}, "
                         f"{len(scores_in)}")
    h_out, h_in = len(scores_out) // 2, len(scores_in) // 2
    cal_out, test_out = scores_out[:h_out], scores_out[h_out:]
    cal_in, test_in = scores_in[:h_in], scores_in[h_in:]
    candidates = torch.cat([cal_out, cal_in]).unique()
    fpr_cal = (cal_out.unsqueeze(0) > candidates.unsqueeze(1)).double().mean(1)
    fnr_cal = (cal_in.unsqueeze(0) <= candidates.unsqueeze(1)).double().mean(1)
    smooth = 1.0 / (h_out + h_in)  # keeps a zero error rate from winning on one lucky run
    estimate = torch.maximum(torch.log((1 - delta - fpr_cal).clamp_min(1e-12) / (fnr_cal + smooth)),
                             torch.log((1 - delta - fnr_cal).clamp_min(1e-12) / (fpr_cal + smooth)))
    tau = float(candidates[int(torch.argmax(estimate))])
    false_pos = int((test_out > tau).sum())
    false_neg = int((test_in <= tau).sum())
    fpr_hi = clopper_pearson_upper(false_pos, len(test_out), alpha / 2)
    fnr_hi = clopper_pearson_upper(false_neg, len(test_in), alpha / 2)
    eps = epsilon_from_rates(fpr_hi, fnr_hi, delta)
    return AuditResult(eps, tau, 1 - false_neg / len(test_in), false_pos / len(test_out), len(scores_out)
                       + len(scores_in), alpha, delta)


def audit(release: Callable[[Tensor, int], Tensor], without: Tensor, with_canary: Tensor, *, trials: int,
          delta: float, alpha: float = 0.05, generator: torch.Generator, direction: Tensor | None = None
          ) -> AuditResult:
    """Audit a mechanism on one pair of neighbouring inputs.

    Args:
        release: ``release(x, run)`` → what the attacker sees for input x; ``run`` indexes the run so that every
            run draws fresh noise from its own stream.
        without, with_canary: the neighbouring inputs (e.g. a client's update without and with a canary).
        trials: runs in total; each run gets the canary with probability ½.
        delta, alpha: the δ of the audited claim and the confidence level 1 − α.
        generator: the coin flips that decide which runs get the canary.
        direction: the attacker's score is the projection of the release on this direction (default:
            ``with_canary − without``, for mechanisms that release a noisy version of their input).
    """
    if trials < 40:
        raise ValueError(f"trials must be >= 40, got {trials!r}")
    direction = (with_canary - without if direction is None else direction).flatten()
    norm = float(direction.norm())
    if norm == 0:
        raise ValueError("the canary direction is zero: the two inputs are identical")
    direction = direction / norm
    flips = torch.rand(trials, generator=generator) < 0.5
    scores = torch.stack([release(with_canary if bool(f) else without, run).flatten().double() @ direction.double()
                          for run, f in enumerate(flips)])
    return epsilon_lower_bound(scores[~flips], scores[flips], delta=delta, alpha=alpha)
