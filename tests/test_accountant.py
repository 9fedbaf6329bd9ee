import math

import numpy as np
import pytest

from fedlib.privacy import (
    DEFAULT_ORDERS,
    MOMENTS_ORDERS,
    ClientLedger,
    PrivacyBudget,
    RDPAccountant,
    advanced_composition,
    basic_composition,
    calibrate_noise_multiplier,
    compute_rdp,
    epsilon_curve,
    rdp_to_delta,
    rdp_to_epsilon,
)


def test_opacus_reference_value():
    acc = RDPAccountant()
    for _ in range(2250):  # one step at a time, as Opacus's test does
        acc.step(noise_multiplier=1.5, sample_rate=0.04)
    assert acc.get_epsilon(1e-5) == pytest.approx(7.32911117143, abs=1e-7)


def test_opacus_noise_multiplier_reference_values():
    assert calibrate_noise_multiplier(target_epsilon=8, delta=1e-5, sample_rate=0.04, steps=2250) == \
        pytest.approx(1.416, abs=5e-4)
    assert calibrate_noise_multiplier(target_epsilon=8, delta=1e-5, sample_rate=0.04, steps=2000) == \
        pytest.approx(1.3562, abs=5e-5)


def test_dp_accounting_subsampled_gaussian_rdp_values():
    # dp_accounting's rdp_privacy_accountant_test (sigma 2.5, q 0.01, 50 steps). Its order-1.5 value
    # (6.70579741e-4) comes from dp_accounting's newer fractional-order analysis; the Opacus/TF-Privacy
    # formula that fedlib matches gives 6.5007e-4 there, so that order is left out.
    orders = [2.5, 5, 50, 100]
    rdp = compute_rdp(q=0.01, noise_multiplier=2.5, steps=50, orders=orders)
    expected = [1.08548710e-3, 2.18075656e-3, 2.38460375e-2, 1.67416308e2]
    np.testing.assert_allclose(rdp, expected, rtol=1e-4)


def test_gaussian_mechanism_rdp_is_alpha_over_two_sigma_squared():
    np.testing.assert_allclose(compute_rdp(q=1.0, noise_multiplier=2.0, steps=3, orders=[2, 5.5, 10]),
                               3 * np.array([2, 5.5, 10]) / 8)


def test_thesis_budgets_p1_and_p2():
    p1 = lambda rounds: rdp_to_epsilon(  # noqa: E731
        MOMENTS_ORDERS, compute_rdp(q=0.01, noise_multiplier=8, steps=50 * rounds, orders=MOMENTS_ORDERS),
        1e-6, "classic")[0]
    assert p1(52) == pytest.approx(0.4996, abs=1e-4) and p1(53) == pytest.approx(0.5009, abs=1e-4)
    eps, order = rdp_to_epsilon(DEFAULT_ORDERS, compute_rdp(q=0.01, noise_multiplier=8, steps=2600), 1e-6)
    assert eps == pytest.approx(0.2702, abs=1e-4) and order == 63
    cdp = rdp_to_epsilon(MOMENTS_ORDERS, compute_rdp(q=0.5, noise_multiplier=1.18, steps=11,
                                                     orders=MOMENTS_ORDERS), 1e-3, "classic")[0]
    assert cdp == pytest.approx(8.15, abs=0.01)
    delta, _ = rdp_to_delta(MOMENTS_ORDERS, compute_rdp(q=0.01, noise_multiplier=2, steps=550,
                                                        orders=MOMENTS_ORDERS), 8.0)
    assert 1e-108 < delta < 1e-107


@pytest.mark.parametrize("sigma,q,steps,delta", [(0.8, 0.001, 100, 1e-6), (1.5, 0.05, 1000, 1e-5),
                                                 (2.0, 0.2, 100, 1e-6), (1.1, 0.01, 5000, 1e-5),
                                                 (4.0, 1.0, 50, 1e-5)])
def test_equals_opacus_rdp_accountant(sigma, q, steps, delta):
    opacus = pytest.importorskip("opacus.accountants.analysis.rdp")
    ref_rdp = opacus.compute_rdp(q=q, noise_multiplier=sigma, steps=steps, orders=list(DEFAULT_ORDERS))
    ref_eps, _ = opacus.get_privacy_spent(orders=list(DEFAULT_ORDERS), rdp=ref_rdp, delta=delta)
    acc = RDPAccountant()
    acc.step(noise_multiplier=sigma, sample_rate=q, steps=steps)
    assert acc.get_epsilon(delta) == pytest.approx(float(ref_eps), rel=1e-9)


@pytest.mark.parametrize("eps,q,steps,delta", [(1.0, 0.01, 100, 1e-5), (3.0, 0.1, 300, 1e-6),
                                               (8.0, 0.5, 20, 1e-3), (0.5, 0.001, 2000, 1e-5)])
def test_calibrated_sigma_never_overshoots_and_is_tight(eps, q, steps, delta):
    sigma = calibrate_noise_multiplier(target_epsilon=eps, delta=delta, sample_rate=q, steps=steps)
    acc = RDPAccountant()
    acc.step(noise_multiplier=sigma, sample_rate=q, steps=steps)
    assert eps - 0.01 <= acc.get_epsilon(delta) <= eps


def test_monotone_in_sigma_q_and_steps():
    e = lambda s, q, t: rdp_to_epsilon(DEFAULT_ORDERS, compute_rdp(q=q, noise_multiplier=s, steps=t), 1e-5)[0]  # noqa
    assert e(1.0, 0.1, 100) > e(2.0, 0.1, 100)
    assert e(1.0, 0.1, 100) < e(1.0, 0.2, 100)
    assert e(1.0, 0.1, 100) < e(1.0, 0.1, 200)
    curve = epsilon_curve(noise_multiplier=1.0, sample_rate=0.1, steps=50, delta=1e-5)
    assert np.all(np.diff(curve) > 0) and curve[-1] == pytest.approx(e(1.0, 0.1, 50))


def test_improved_conversion_is_tighter_than_classic():
    rdp = compute_rdp(q=0.05, noise_multiplier=1.2, steps=500)
    assert rdp_to_epsilon(DEFAULT_ORDERS, rdp, 1e-5, "improved")[0] < rdp_to_epsilon(DEFAULT_ORDERS, rdp, 1e-5,
                                                                                      "classic")[0]


def test_budget_check_and_state_roundtrip():
    acc = RDPAccountant(MOMENTS_ORDERS)
    budget = PrivacyBudget(0.5, 1e-6, "classic")
    acc.step(noise_multiplier=8, sample_rate=0.01, steps=51 * 50)
    assert not acc.would_exceed(budget, noise_multiplier=8, sample_rate=0.01, steps=50)
    acc.step(noise_multiplier=8, sample_rate=0.01, steps=50)
    assert acc.would_exceed(budget, noise_multiplier=8, sample_rate=0.01, steps=50)
    copy = RDPAccountant()
    copy.load_state_dict(acc.state_dict())
    assert copy.get_epsilon(1e-6, "classic") == acc.get_epsilon(1e-6, "classic")
    assert RDPAccountant().get_epsilon(1e-5) == 0.0


def test_client_ledger_tracks_each_client():
    ledger = ClientLedger()
    ledger.step(1, noise_multiplier=1.0)
    ledger.step(1, noise_multiplier=1.0)
    ledger.step(2, noise_multiplier=1.0)
    assert ledger.get_epsilon(1, 1e-5) > ledger.get_epsilon(2, 1e-5) > ledger.get_epsilon(3, 1e-5) == 0.0
    assert ledger.max_epsilon(1e-5) == ledger.get_epsilon(1, 1e-5)


def test_compositions():
    assert basic_composition([0.1, 0.2], [1e-6, 1e-6]) == (pytest.approx(0.3), pytest.approx(2e-6))
    eps, delta = advanced_composition(0.1, 1e-6, 100, 1e-5)
    assert eps == pytest.approx(math.sqrt(200 * math.log(1e5)) * 0.1 + 100 * 0.1 * math.expm1(0.1))
    assert delta == pytest.approx(1e-4 + 1e-5)
    assert advanced_composition(0.1, 1e-6, 100, 1e-5, literal=True)[0] < eps  # the seed's eq. 2.23 drops a 2


@pytest.mark.parametrize("call,match", [
    (lambda: compute_rdp(q=1.5, noise_multiplier=1.0, steps=1), "sample_rate"),
    (lambda: compute_rdp(q=0.1, noise_multiplier=-1.0, steps=1), "noise_multiplier"),
    (lambda: rdp_to_epsilon(DEFAULT_ORDERS, np.zeros(len(DEFAULT_ORDERS)), 0.0), "delta"),
    (lambda: rdp_to_epsilon(DEFAULT_ORDERS, np.zeros(len(DEFAULT_ORDERS)), 1e-5, "fast"), "conversion"),
    (lambda: calibrate_noise_multiplier(target_epsilon=0, delta=1e-5, sample_rate=0.1, steps=10),
     "target_epsilon"),
    (lambda: calibrate_noise_multiplier(target_epsilon=1, delta=1e-5, sample_rate=0.1, steps=0), "steps"),
    (lambda: PrivacyBudget(-1, 1e-5), "epsilon"),
    (lambda: RDPAccountant(orders=[0.5, 2]), "order"),
])
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()
