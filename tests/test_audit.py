"""Privacy auditing: Clopper–Pearson bounds, the hypothesis-testing inequality, and lower bounds on a Gaussian
mechanism of known σ that stay below the exact ε, rise as σ falls, and trip when noise or clipping is missing."""

from __future__ import annotations

import math

import pytest
import torch

from fedlib.experiments.audit import transforms_release
from fedlib.fl.transforms import ClipUpdate, GaussianNoise
from fedlib.privacy.audit import audit, clopper_pearson_upper, epsilon_from_rates, epsilon_lower_bound
from fedlib.privacy.mechanisms import gaussian_delta, gaussian_epsilon
from fedlib.rng import make_generator

DELTA = 1e-5


def gaussian_release(sigma: float):
    def release(x: torch.Tensor, run: int) -> torch.Tensor:
        return x + sigma * torch.randn(x.shape, generator=make_generator(0, "audit-test", run))
    return release


def test_clopper_pearson_and_rates():
    assert clopper_pearson_upper(0, 100, 0.05) == pytest.approx(1 - 0.05 ** (1 / 100))
    assert clopper_pearson_upper(100, 100, 0.05) == 1.0
    assert clopper_pearson_upper(30, 100, 0.05) > 0.3
    assert epsilon_from_rates(0.01, 0.5, 0.0) == pytest.approx(math.log(50))
    assert epsilon_from_rates(0.5, 0.5, 0.0) == 0.0
    assert epsilon_from_rates(0.0, 0.0, 0.0) == math.inf
    with pytest.raises(ValueError, match="fpr"):
        epsilon_from_rates(1.5, 0.1, 0.0)
    with pytest.raises(ValueError, match="at least 20"):
        epsilon_lower_bound(torch.zeros(5), torch.ones(5), delta=DELTA)


def test_gaussian_epsilon_inverts_the_profile():
    for ratio in (0.5, 1.0, 2.0, 100.0):  # 100: ε ≈ 5,400, past where e^ε overflows a float
        eps = gaussian_epsilon(ratio, DELTA)
        assert gaussian_delta(eps, ratio) == pytest.approx(DELTA, rel=1e-6)
    assert gaussian_epsilon(1.0, DELTA) > gaussian_epsilon(0.5, DELTA)


def test_gaussian_lower_bound_is_valid_and_rises_as_sigma_falls():
    x0, x1 = torch.zeros(4), torch.tensor([1.0, 0.0, 0.0, 0.0])  # sensitivity 1
    bounds = {}
    for sigma in (0.25, 0.5, 1.0, 2.0):
        res = audit(gaussian_release(sigma), x0, x1, trials=4000, delta=DELTA, generator=make_generator(1, "flip"))
        bounds[sigma] = res.epsilon_lb
        assert res.epsilon_lb <= gaussian_epsilon(1 / sigma, DELTA), sigma
    assert bounds[0.25] > bounds[0.5] > bounds[1.0] > bounds[2.0] >= 0
    assert bounds[0.5] > 1.0  # the audit has power: it certifies a non-trivial ε where the mechanism leaks


def test_negative_controls_trip():
    claimed = gaussian_epsilon(1 / 2.0, DELTA)  # clip at C = 1 and noise 2C: ε ≈ 2.1 at δ = 1e-5
    x0, x1 = torch.zeros(8), torch.zeros(8)
    x1[0] = 10.0  # a canary update ten times the clipping bound
    kwargs = dict(trials=2000, delta=DELTA, generator=make_generator(2, "flip"))
    honest = audit(transforms_release(lambda: [ClipUpdate(1.0), GaussianNoise(2.0)]), x0, x1, **kwargs)
    assert honest.epsilon_lb <= claimed
    noise_off = audit(transforms_release(lambda: [ClipUpdate(1.0), GaussianNoise(0.0)]), x0, x1, **kwargs)
    # the noise still claims sensitivity C = 1, without the clipping that would ensure it
    clipping_skipped = audit(transforms_release(lambda: [GaussianNoise(2.0)], bound_if_unclipped=1.0), x0, x1,
                             **kwargs)
    assert noise_off.epsilon_lb > claimed and clipping_skipped.epsilon_lb > claimed


def test_audit_rejects_bad_input():
    x = torch.zeros(3)
    with pytest.raises(ValueError, match="trials"):
        audit(gaussian_release(1.0), x, x + 1, trials=10, delta=DELTA, generator=make_generator(0))
    with pytest.raises(ValueError, match="identical"):
        audit(gaussian_release(1.0), x, x, trials=100, delta=DELTA, generator=make_generator(0))
    with pytest.raises(ValueError, match="delta"):
        epsilon_lower_bound(torch.zeros(40), torch.ones(40), delta=1.5)


def test_every_audited_mechanism_runs_on_small_updates():
    from fedlib.experiments.audit import CONTROLS, MECHANISMS, Canaries, audit_case, make_case

    gen = make_generator(3, "updates")
    data = Canaries(torch.randn(4, 6, generator=gen), 10 * torch.eye(6)[0], seed=0, clip=1.0)
    rows = {n: audit_case(make_case(n, data, 1.0), data, 1.0, trials=200, delta=DELTA, alpha=0.05, key=n)
            for n in MECHANISMS + CONTROLS}
    assert all(0 <= r["audited_eps_lb"] for r in rows.values())
    off = rows["control_noise_off"]  # without noise the canary is always detected: ε̂ is the capacity of 200 runs
    assert off["tpr"] == 1.0 and off["fpr"] == 0.0 and off["audited_eps_lb"] > rows["local"]["audited_eps_lb"]
    with pytest.raises(ValueError, match="name must be one of"):
        make_case("laplace", data, 1.0)
