"""The ledger's three verdicts, registration over a sweep, and evaluation of a chapter's measured values."""

import math
import statistics

import pytest

from fedlib.ledger import (
    Claim,
    auc_halfwidth,
    clears,
    combination_halfwidth,
    confidence_halfwidth,
    counts,
    distance_interval,
    evaluate,
    format_value,
    ledger_signature,
    outcome,
    paper_verdicts,
    prediction_halfwidth,
    register,
    sampling_halfwidth,
    unacknowledged,
    widest_mean_square,
)

GT = Claim("gt", "A beats B", "Table 1", "acc(A) − acc(B)", ">")
LT = Claim("lt", "A loses to B", "Fig. 2", "acc(A) − acc(B)", "<", margin=0.02)
CLOSE = Claim("close", "A is close to B", "§3", "acc(A) − acc(B)", "≈", settings=("mnist", "fmnist"))


@pytest.mark.parametrize("claim,value,expected", [
    (GT, 0.011, "reproduced"), (GT, 0.01, "reproduced"), (GT, 0.009, "inconclusive"), (GT, -0.009, "inconclusive"),
    (GT, -0.01, "not reproduced"), (LT, -0.03, "reproduced"), (LT, 0.0, "inconclusive"), (LT, 0.02, "not reproduced"),
    (CLOSE, 0.01, "reproduced"), (CLOSE, -0.015, "inconclusive"), (CLOSE, 0.02, "not reproduced"),
    (GT, None, "not run"), (GT, math.nan, "not run"),
])
def test_three_verdicts_with_the_margin(claim, value, expected):
    assert outcome(claim, value) == expected


def test_a_verdict_is_decisive_only_when_every_run_gives_it_with_room():
    assert register(GT, [0.05, 0.055, 0.05, 0.052]).verdict == "reproduced"
    assert register(GT, [0.05, 0.06, 0.005, 0.07]).verdict == "inconclusive"  # one run inside the margin
    assert register(GT, [0.05, -0.02]).verdict == "inconclusive"  # runs disagree
    assert register(GT, [-0.05, -0.048, -0.052]).verdict == "not reproduced"
    # every run clears the margin, but the spread leaves a new seed room to fall inside it
    assert register(GT, [0.011, 0.06, 0.012, 0.07]).verdict == "inconclusive"
    # mean − 2 sd = 0.0383 clears the 0.01 margin, but the 99 % prediction bound (t with 3 degrees of freedom,
    # sd·√1.25) is 0.0089: about one new seed in 94 falls inside the margin
    assert register(GT, [0.05, 0.06, 0.05, 0.07]).verdict == "inconclusive"
    assert register(CLOSE, [0.001, -0.001, 0.0]).verdict == "reproduced"
    assert register(CLOSE, [0.001, 0.009, -0.009]).verdict == "inconclusive"
    assert register(GT, [0.05, None]).verdict == "not run"
    reg = register(GT, [0.03, 0.01, 0.02])
    assert reg.spread == (0.01, 0.02, 0.03) and reg.counts == {"reproduced": 3}


def test_a_seed_rerun_with_another_thread_count_is_not_a_new_sample():
    # SIFU's verify_output_separates: the 2-thread runs repeat the 1-thread values bit for bit; counted as 10
    # samples they shrank the sd and turned an inconclusive verdict into "reproduced"
    values = [14.0, 17.5, 21.7, 26.9, 31.3]
    spread = Claim("s", "x", "y", "z", ">", margin=1.0)
    assert register(spread, values).verdict == "inconclusive"
    assert register(spread, values * 2).verdict == "reproduced"  # naive pooling: the artefact
    assert register(spread, values * 2, seeds=[0, 1, 2, 3, 4] * 2).verdict == "inconclusive"
    assert register(spread, [*values, *values[:4], -1.0], seeds=[0, 1, 2, 3, 4] * 2).verdict == "inconclusive"
    with pytest.raises(ValueError, match="one seed per run"):
        register(spread, values, seeds=[0, 1])


def test_evaluate_gives_one_entry_per_claim_and_setting():
    measured = {"gt": {"value": 0.05, "detail": "x"}, "close/mnist": {"value": 0.0, "detail": ""}}
    entries = evaluate([GT, CLOSE], measured, "quick")
    assert [e["key"] for e in entries] == ["gt", "close/mnist", "close/fmnist"]
    assert [e["outcome"] for e in entries] == ["reproduced", "reproduced", "not run"]
    full_only = Claim("abs", "97 %", "T1", "acc − 0.97", "≈", modes=("full",))
    assert evaluate([full_only], {"abs": {"value": 0.0}}, "quick")[0]["outcome"] == "full mode only"
    ours = Claim("close", "A ≈ B", "Fig. 2", "A − B", "≈", settings=("mnist", "mnist, σ ours"),
                 quick_only=("mnist, σ ours",))
    both = {"close/mnist": {"value": 0.0}, "close/mnist, σ ours": {"value": 0.0}}
    assert [e["outcome"] for e in evaluate([ours], both, "quick")] == ["reproduced", "reproduced"]
    assert [e["outcome"] for e in evaluate([ours], {"close/mnist": {"value": 0.0}}, "full")] == \
        ["reproduced", "quick mode only"]
    with pytest.raises(KeyError, match="not in the ledger"):
        evaluate([GT], {"nope": {"value": 1.0}}, "quick")
    with pytest.raises(ValueError, match="unique"):
        evaluate([GT, GT], {}, "quick")


def test_the_prediction_bound_is_students():
    # n = 5 samples of sd 1: t(0.99; 4) = 3.7469 (tables), times √1.2
    assert prediction_halfwidth([-1.0, -0.5, 0.0, 0.5, 1.0], level=0.99) == pytest.approx(
        3.7469 * math.sqrt(0.625) * math.sqrt(1.2), abs=1e-4)
    assert prediction_halfwidth([0.0, 2.0], level=0.975) == pytest.approx(12.7062 * math.sqrt(2) * math.sqrt(1.5),
                                                                          abs=1e-3)
    with pytest.raises(ValueError, match="at least 2 samples"):
        prediction_halfwidth([1.0])


def test_the_confidence_bound_of_a_mean_is_students():
    # n = 5 samples of sd √0.625: t(0.99; 4) = 3.7469 (tables), over √5
    assert confidence_halfwidth([-1.0, -0.5, 0.0, 0.5, 1.0]) == pytest.approx(
        3.7469 * math.sqrt(0.625) / math.sqrt(5), abs=1e-4)
    with pytest.raises(ValueError, match="at least 2 samples"):
        confidence_halfwidth([1.0])


def test_a_mean_over_seeds_is_decisive_only_when_its_confidence_bound_clears_the_margin():
    # FLZ's FLAvg − FLAvg(subset) on the homogeneous split, full mode: a mean of 0.97 pp inside the 1-pp margin,
    # from five seeds that spread from −0.6 to +2.6 pp, passed as one run; with the seeds it is inconclusive
    seeds = [0.026, -0.006, 0.012, 0.010, 0.0063]
    mean = sum(seeds) / len(seeds)
    close = Claim("close", "A is close to B", "§3", "acc(A) − acc(B)", "≈")
    assert outcome(close, mean) == "reproduced"
    entry = evaluate([close], {"close": {"value": mean, "detail": "x", "samples": seeds}}, "full")[0]
    assert entry["outcome"] == "inconclusive" and "mean of 5 seeds" in entry["detail"]
    tight = [0.0045, 0.005, 0.0055]  # 0.5 pp ± t(0.99; 2)·0.0005/√3 = 0.2 pp: inside the margin
    assert evaluate([close], {"close": {"value": 0.005, "samples": tight}}, "full")[0]["outcome"] == "reproduced"
    # the bound only takes verdicts away: an inconclusive mean stays inconclusive, a clear one keeps its verdict
    far = [0.09, 0.1, 0.11]
    assert evaluate([GT], {"gt": {"value": 0.1, "samples": far}}, "full")[0]["outcome"] == "reproduced"
    assert evaluate([GT], {"gt": {"value": -0.1, "samples": [-v for v in far]}}, "full")[0]["outcome"] == \
        "not reproduced"
    assert evaluate([GT], {"gt": {"value": 0.005, "samples": [0.0, 0.01]}}, "full")[0]["outcome"] == "inconclusive"
    # the test is the one the sweeps use: which side of the margin the bound must stay on
    assert clears(GT, "reproduced", 0.05, 0.039) and not clears(GT, "reproduced", 0.05, 0.041)
    assert clears(GT, "not reproduced", -0.05, 0.039) and not clears(GT, "not reproduced", -0.05, 0.041)
    assert clears(close, "reproduced", 0.004, 0.005) and not clears(close, "reproduced", -0.004, 0.007)
    assert clears(close, "not reproduced", -0.03, 0.009) and not clears(close, "not reproduced", 0.03, 0.011)
    # quick mode's verdicts are registered from whole runs (the sweep): a run's own seeds do not change its outcome
    assert evaluate([close], {"close": {"value": mean, "samples": seeds}}, "quick")[0]["outcome"] == "reproduced"


def test_a_run_records_samples_only_as_the_values_its_mean_is_made_of():
    from fedlib.results import Results

    res = Results("flz", "full", seed=0, config={})
    res.measure(GT, 0.02, samples=[0.01, 0.03])
    assert res.measured["gt"]["samples"] == [0.01, 0.03]
    with pytest.raises(ValueError, match="not the mean of its samples"):
        res.measure(LT, 0.02, samples=[0.01, 0.02])
    with pytest.raises(ValueError, match="at least 2 finite values"):
        res.measure(CLOSE, 0.02, setting="mnist", samples=[0.02])


def test_the_sampling_bound_of_one_accuracy_is_the_binomial_standard_error():
    # 0.9559 on 10,000 images: SE √(0.9559·0.0441/10⁴) = 0.2053 pp; z(0.99) = 2.3263
    assert sampling_halfwidth(10_000, (0.9559,)) == pytest.approx(2.3263 * 0.0020532, rel=1e-4)
    assert sampling_halfwidth(100, (1.0,)) == 0.0


def test_the_sampling_bound_of_a_difference_without_per_image_results_is_the_widest_any_dependence_allows():
    # two separately trained models at 0.2581 and 0.2480 on 10,000 images can disagree on at most
    # min(p1 + p2, 2 − p1 − p2) = 50.61 % of them (Fréchet): SE √((0.5061 − 0.0101²)/10⁴) = 0.7113 pp
    n = 10_000
    assert sampling_halfwidth(n, (0.2581, 0.2480)) == pytest.approx(2.3263 * 0.0071133, rel=1e-4)
    # ... wider than independent errors allow (the paired bound at d = p1(1 − p2) + p2(1 − p1)), which some model
    # pairs exceed (non-IID models that specialise in different classes)
    p1, p2 = 0.2581, 0.2480
    assert sampling_halfwidth(n, (p1, p2)) > sampling_halfwidth(n, (p1, p2), p1 * (1 - p2) + p2 * (1 - p1))
    # accurate models cannot disagree much: 0.9 and 0.85 disagree on at most 25 % of the images
    assert sampling_halfwidth(n, (0.9, 0.85)) == pytest.approx(2.3263 * math.sqrt((0.25 - 0.05 ** 2) / n), rel=1e-4)
    assert sampling_halfwidth(n, (0.2581, 0.2480)) == sampling_halfwidth(n, (0.2480, 0.2581))
    assert sampling_halfwidth(n, (1.0, 0.0)) == 0.0  # every image decided the same way by both: nothing to add
    assert sampling_halfwidth(100, (0.5, 0.5)) == pytest.approx(10 * sampling_halfwidth(n, (0.5, 0.5)))
    for bad, match in (((0, (0.5,)), "positive int"), ((True, (0.5,)), "positive int"), ((n, ()), "one accuracy"),
                       ((n, (0.1, 0.2, 0.3)), "one accuracy"), ((n, (0.5, 1.2)), "must lie in")):
        with pytest.raises(ValueError, match=match):
            sampling_halfwidth(*bad)


def test_the_paired_sampling_bound_reads_the_share_of_images_the_two_models_disagree_on():
    # McNemar: SE √((d − v²)/N); twin models 0.7221 / 0.7220 that disagree on 1 % of 10,000 images: ±0.23 pp
    n = 10_000
    assert sampling_halfwidth(n, (0.7221, 0.7220), 0.01) == pytest.approx(2.3263 * math.sqrt((0.01 - 1e-8) / n),
                                                                           rel=1e-4)
    # every disagreement one way (d = |v|): the floor √((|v| − v²)/N) that the ledger used on 2026-12-01
    assert sampling_halfwidth(n, (0.7, 0.6), 0.1) == pytest.approx(2.3263 * math.sqrt(0.09 / n), rel=1e-4)
    assert sampling_halfwidth(n, (0.7, 0.7), 0.0) == 0.0  # the same predictions: nothing to take away
    # independent errors are the paired bound at d = p1(1 − p2) + p2(1 − p1): SE √((p1(1 − p1) + p2(1 − p2))/N)
    p1, p2 = 0.2581, 0.2480
    assert sampling_halfwidth(n, (p1, p2), p1 * (1 - p2) + p2 * (1 - p1)) == pytest.approx(2.3263 * 0.0061482,
                                                                                           rel=1e-4)
    for bad in ((n, (0.7, 0.6), 0.05), (n, (0.7, 0.6), 0.71), (n, (0.9,), 0.1)):
        with pytest.raises(ValueError, match="disagreement"):
            sampling_halfwidth(*bad)


def test_the_widest_mean_square_is_the_largest_any_joint_distribution_of_the_models_allows():
    # the comonotone coupling against a linear programme over all 2^K joint outcomes of K models' right / wrong
    import itertools
    import random

    from scipy.optimize import linprog

    rng = random.Random(11)
    for _ in range(40):
        k = rng.randint(1, 4)
        accs = [rng.random() for _ in range(k)]
        weights = [rng.choice((-1, 1)) * rng.random() for _ in range(k)]
        outcomes = list(itertools.product((0, 1), repeat=k))
        lp = linprog([-sum(w * c for w, c in zip(weights, o)) ** 2 for o in outcomes],
                     A_eq=[[1] * len(outcomes)] + [[o[i] for o in outcomes] for i in range(k)], b_eq=[1, *accs])
        assert widest_mean_square(accs, weights) == pytest.approx(-lp.fun, abs=1e-9)
    assert widest_mean_square((0.3, 0.4), (1.0, -1.0)) == pytest.approx(0.7)  # Fréchet: min(p1 + p2, 2 − p1 − p2)
    assert widest_mean_square((0.8, 0.9), (1.0, -1.0)) == pytest.approx(0.3)
    assert widest_mean_square((0.25,), (1.0,)) == pytest.approx(0.25)


def test_the_sampling_bound_of_a_combination_is_exact_from_per_image_results_and_safe_without():
    import torch

    from fedlib.fl.engine import disagreement, mean_square

    g = torch.Generator().manual_seed(3)
    n = 2_000
    hard = torch.rand(n, generator=g) < 0.4  # images every model tends to miss: positively correlated errors
    correct = [(torch.rand(n, generator=g) < 0.9) & ~(hard & (torch.rand(n, generator=g) < 0.8)) for _ in range(4)]
    weights = (0.5, 0.5, -0.5, -0.5)  # mean over two settings of acc(a) − acc(b)
    accs = [float(c.double().mean()) for c in correct]
    x = sum(w * c.double() for w, c in zip(weights, correct))
    # exact: the per-image combination's sd over √N
    exact = 2.3263 * float(x.std(unbiased=False)) / math.sqrt(n)
    ms = mean_square(weights, correct)
    assert ms == pytest.approx(float((x * x).mean()))
    assert combination_halfwidth(n, accs, weights, ms) == pytest.approx(exact, rel=1e-4)
    # without per-image results: never below the exact bound when errors correlate positively
    assert combination_halfwidth(n, accs, weights) >= exact
    # models that specialise in different halves of the images: errors negatively correlated, the exact bound wider
    # than independent errors give, and still within the widest
    half = torch.arange(n) < n // 2
    special = [half & (torch.rand(n, generator=g) < 0.6), ~half & (torch.rand(n, generator=g) < 0.5)]
    p = [float(c.double().mean()) for c in special]
    paired = sampling_halfwidth(n, p, disagreement(*special))
    assert sampling_halfwidth(n, p, p[0] * (1 - p[1]) + p[1] * (1 - p[0])) < paired <= sampling_halfwidth(n, p)
    # one accuracy and a difference of two: the sampling bound's formulas
    assert combination_halfwidth(10_000, (0.9559,), (1.0,)) == pytest.approx(sampling_halfwidth(10_000, (0.9559,)))
    assert combination_halfwidth(10_000, (0.3, 0.2), (1.0, -1.0)) == pytest.approx(
        sampling_halfwidth(10_000, (0.3, 0.2)))
    assert mean_square((1.0, -1.0), correct[:2]) == disagreement(*correct[:2])
    assert mean_square(weights, [None, *correct[1:]]) is None
    for bad, match in (((n, accs, (1.0,)), "one weight per accuracy"), ((n, (), ()), "one weight per accuracy"),
                       ((n, accs, weights, -0.1), "mean_square must lie"), ((n, accs, weights, 1.5), "mean_square"),
                       ((0, accs, weights), "positive int")):
        with pytest.raises(ValueError, match=match):
            combination_halfwidth(*bad)
    with pytest.raises(ValueError, match="different test sets"):
        mean_square((1.0, -1.0), (correct[0], correct[1][:10]))


def test_a_combination_of_accuracies_carries_its_sampling_bound_into_the_verdict():
    from fedlib.results import Results

    def full(value, **kw):
        res = Results("adpdfl", "full", seed=0, config={})
        res.measure(GT, value, "d", **kw)
        res.evaluate([GT])
        return res.claims[0]

    accs, w = (0.1883, 0.2011, 0.1700, 0.1794), (0.5, 0.5, -0.5, -0.5)  # value +2.00 pp, unpaired ±1.40
    entry = full(0.0200, test_images=10_000, accuracies=accs, weights=w)
    assert entry["outcome"] == "inconclusive" and "4 models, no per-image results" in entry["detail"]
    # per-image results with a mean square of 0.10 (models disagree on about a fifth of the images): ±0.73 pp
    entry = full(0.0200, test_images=10_000, accuracies=accs, weights=w, mean_square=0.10)
    assert entry["outcome"] == "reproduced" and "4 models, paired by their per-image results" in entry["detail"]
    for kw, match in (({"weights": w}, "need the accuracies"), ({"mean_square": 0.1}, "needs the weights"),
                      ({"test_images": 10_000, "accuracies": accs, "weights": w, "disagreement": 0.1},
                       "not disagreement"),
                      ({"test_images": 10_000, "accuracies": accs, "weights": (1.0, 1.0, -1.0, -1.0)}, "weighted sum")):
        with pytest.raises(ValueError, match=match):
            Results("adpdfl", "full", seed=0, config={}).measure(GT, 0.0200, **kw)


def test_a_full_verdict_must_clear_the_margin_by_the_test_sets_sampling_bound():
    from fedlib.results import Results

    def full(claim, value, **kw):
        res = Results("flz", "full", seed=0, config={})
        res.measure(claim, value, "d", setting=claim.settings[0], **kw)
        res.evaluate([claim])
        return res.claims[0]

    # 1.01 pp over 1 pp (one image of 10,000): reproduced without the bound, inconclusive with it
    assert full(GT, 0.0101)["outcome"] == "reproduced"
    entry = full(GT, 0.0101, test_images=10_000, accuracies=(0.2581, 0.2480))
    assert entry["outcome"] == "inconclusive" and "test-set sampling (10,000 images, " in entry["detail"]
    # 2.70 pp between models near 0.26 clears 1 pp + 1.68 pp; 2.00 pp does not (the paired floor let it through)
    assert full(GT, 0.0270, test_images=10_000, accuracies=(0.2750, 0.2480))["outcome"] == "reproduced"
    assert full(GT, 0.0200, test_images=10_000, accuracies=(0.2680, 0.2480))["outcome"] == "inconclusive"
    # near 0.99 two models cannot disagree on more than 2.5 % of the images: 1.5 pp clears 1 pp + 0.37 pp
    assert full(GT, 0.015, test_images=10_000, accuracies=(0.995, 0.980))["outcome"] == "reproduced"
    assert full(GT, -0.0105, test_images=10_000, accuracies=(0.2375, 0.2480))["outcome"] == "inconclusive"
    assert full(GT, -0.03, test_images=10_000, accuracies=(0.2180, 0.2480))["outcome"] == "not reproduced"
    # '≈' between two runs: 0.10 pp apart near 0.22 is within 1 pp, but not by the 1.56-pp bound
    assert full(CLOSE, -0.001, test_images=10_000, accuracies=(0.2241, 0.2251))["outcome"] == "inconclusive"
    # '≈' against the paper's number: 0.71 pp off at accuracy 0.956 is within 1 pp, but not by 0.48 pp more
    assert full(CLOSE, -0.0071, test_images=10_000, accuracies=(0.9559,))["outcome"] == "inconclusive"
    assert full(CLOSE, -0.004, test_images=10_000, accuracies=(0.9559,))["outcome"] == "reproduced"
    # an inconclusive value stays so, without a bound printed; quick mode leaves it to the sweep
    assert "sampling" not in full(GT, 0.005, test_images=10_000, accuracies=(0.2530, 0.2480))["detail"]
    res = Results("flz", "quick", seed=0, config={})
    res.measure(GT, 0.0101, test_images=10_000, accuracies=(0.2581, 0.2480))
    res.evaluate([GT])
    assert res.claims[0]["outcome"] == "reproduced"
    # two seeds' models, each on its own test set: independent errors, ±1.44 pp, and 2.50 pp clears 1 pp by it
    entry = full(GT, 0.0250, test_images=10_000, accuracies=(0.2730, 0.2480), independent=True)
    assert entry["outcome"] == "reproduced" and "two test sets, errors independent, one-sided 99 %) ±1.44" in entry[
        "detail"]
    assert full(GT, 0.0250, test_images=10_000, accuracies=(0.2730, 0.2480))["outcome"] == "inconclusive"  # ±1.68
    for kw, match in (({"accuracies": (0.9,)}, "go together"), ({"test_images": 10_000}, "go together"),
                      ({"test_images": 10_000, "accuracies": (0.30, 0.25)}, "not the difference"),
                      ({"test_images": 10_000, "accuracies": (0.26, 0.25), "independent": True,
                        "disagreement": 0.3}, "independent needs"),
                      ({"test_images": 10_000, "accuracies": (0.26,), "independent": True}, "independent needs")):
        with pytest.raises(ValueError, match=match):
            Results("flz", "full", seed=0, config={}).measure(GT, 0.01, **kw)


def test_a_mean_over_a_sample_of_items_carries_their_confidence_bound():
    from fedlib.results import Results

    psnr_gt = Claim("psnr_gt", "A leaks more than B", "Table 4.1", "PSNR(A) − PSNR(B)", ">", unit="psnr")

    def full(value, per_item):
        res = Results("privacy_eval", "full", seed=0, config={})
        res.measure(psnr_gt, value, "d", per_item=per_item)
        res.evaluate([psnr_gt])
        return res.claims[0]

    # a PSNR difference of 2 dB image by image over 100 images, per-image sd 2 (tight) or 6 (wide): t(0.99; 99) = 2.365
    tight = [2.0 + (2.0 if j % 2 else -2.0) for j in range(100)]
    entry = full(2.0, tight)
    assert entry["outcome"] == "reproduced" and "test-set sampling (100 images, paired per image" in entry["detail"]
    assert confidence_halfwidth(tight) == pytest.approx(2.365 * statistics.stdev(tight) / 10, rel=1e-3)
    wide = [2.0 + (6.0 if j % 2 else -6.0) for j in range(100)]
    assert full(2.0, wide)["outcome"] == "inconclusive"  # 2 − 1.43 < the 1-dB margin
    # a gap of two float32 means near 20 dB (−0.187005) against the mean of its per-image gaps (−0.187009): the
    # same value to the operands' rounding, accepted
    Results("privacy_eval", "full", seed=0, config={}).measure(psnr_gt, -0.187005, per_item=[-0.187009, -0.187009])
    for kw, match in (({"per_item": [2.0]}, "at least 2"), ({"per_item": [1.0, 2.0]}, "not the mean"),
                      ({"per_item": tight, "test_images": 100, "accuracies": (0.5,)}, "without test_images")):
        with pytest.raises(ValueError, match=match):
            Results("flz", "full", seed=0, config={}).measure(GT, 2.0, **kw)


def test_the_auc_bound_is_birnbaum_klose_and_adds_two_aucs_standard_errors():
    # Var(AUC) ≤ A(1 − A)/min(m, n): 0.548 over 2,250 members: SE 0.01049; a difference adds the two SEs
    assert auc_halfwidth(2250, (0.548,)) == pytest.approx(2.3263 * math.sqrt(0.548 * 0.452 / 2250), rel=1e-4)
    assert auc_halfwidth(2250, (0.548, 0.492)) == pytest.approx(
        auc_halfwidth(2250, (0.548,)) + auc_halfwidth(2250, (0.492,)))
    assert auc_halfwidth(100, (1.0, 0.0)) == 0.0  # perfect separation either way: no sampling left
    for bad, match in (((0, (0.5,)), "positive int"), ((10, ()), "one or two"), ((10, (0.5, 1.5)), "one or two")):
        with pytest.raises(ValueError, match=match):
            auc_halfwidth(*bad)
    with pytest.raises(ValueError, match="auc needs"):
        from fedlib.results import Results

        Results("sifu", "full", 0, {}).measure(GT, 0.01, test_images=100, accuracies=(0.5, 0.49), auc=True,
                                               disagreement=0.3)


def test_measure_difference_records_a_minus_b_with_both_accuracies():
    from fedlib.results import Results

    res = Results("flz", "full", seed=0, config={})
    res.measure_difference(GT, 0.2581, 0.2480, "A 0.2581, B 0.2480", test_images=10_000)
    res.measure_difference(CLOSE, 0.5, None, "B not run", setting="mnist", test_images=10_000)
    assert res.measured["gt"]["value"] == pytest.approx(0.0101)
    assert res.measured["gt"]["sampling"] == {"test_images": 10_000, "accuracies": [0.2581, 0.2480]}
    assert res.measured["close/mnist"] == {"value": None, "detail": "B not run"}


@pytest.mark.parametrize("claim,bound,verdict", [
    (GT, -0.01, "not reproduced"), (GT, -0.009, "not run"), (GT, 0.05, "not run"), (GT, None, "not run"),
    (LT, -0.02, "reproduced"), (LT, -0.019, "not run"), (LT, 0.05, "not run"),
])
def test_an_upper_bound_decides_a_verdict_only_where_every_value_below_it_gives_that_verdict(claim, bound, verdict):
    """A value known only as 'at most b' (runs missing that can only lower it): for '>' every value ≤ b fails once b
    fails; for '<' every value ≤ b passes once b passes; anything else stays not run."""
    from fedlib.results import Results

    res = Results("adpdfl", "full", seed=0, config={})
    res.measure(claim, bound, "A: 0.5, B: not run", at_most=True)
    (entry,) = evaluate([claim], res.measured, "full")
    assert entry["outcome"] == verdict
    if verdict == "not run":
        assert entry["value"] is None and "at_most" not in entry
    else:
        assert entry["value"] == bound and entry["at_most"] and "whatever the runs not run yet give" in entry["detail"]


def test_an_upper_bound_cannot_decide_a_two_sided_claim():
    from fedlib.results import Results

    res = Results("adpdfl", "full", seed=0, config={})
    res.measure(CLOSE, 0.5, setting="mnist", at_most=True)
    with pytest.raises(ValueError, match="two-sided"):
        evaluate([CLOSE], res.measured, "full")
    with pytest.raises(ValueError, match="no per-seed samples"):
        res.measure(GT, 0.02, samples=[0.01, 0.03], at_most=True)


def test_claims_are_validated():
    with pytest.raises(ValueError, match="direction"):
        Claim("x", "p", "e", "m", ">=")
    with pytest.raises(ValueError, match="unit"):
        Claim("x", "p", "e", "m", ">", unit="furlongs")
    with pytest.raises(ValueError, match="margin"):
        Claim("x", "p", "e", "m", ">", margin=0.0)
    with pytest.raises(ValueError, match="quick_only"):
        Claim("x", "p", "e", "m", ">", settings=("a",), quick_only=("b",))
    with pytest.raises(ValueError, match="quick_only"):
        Claim("x", "p", "e", "m", ">", settings=("a",), modes=("full",), quick_only=("a",))
    with pytest.raises(KeyError):
        GT.key("cifar10")


def test_signature_changes_with_the_test_and_counts_add_up():
    assert ledger_signature([GT]) != ledger_signature([Claim("gt", "A beats B", "Table 1", "m", ">", margin=0.02)])
    assert counts(["reproduced", "inconclusive", "reproduced"]) == {"reproduced": 2, "not reproduced": 0,
                                                                    "inconclusive": 1}
    assert format_value(0.0123, "accuracy") == "+1.2 pp" and format_value(None, "psnr") == "not run yet"


def test_a_run_that_cannot_test_a_claim_is_inconclusive_in_full_mode_whatever_its_value():
    """e.g. Fed-nore's 'Fed-nore-2 is worse than plain DPFL at learning rate 1' read off two runs that both diverged in
    round 1: a 2.2-pp gap between two untrained models clears the sampling bound but tests nothing."""
    from fedlib.results import Results

    def run(mode, value, **kw):
        res = Results("fednore", mode, seed=0, config={})
        res.measure(LT, value, "d", **kw)
        res.evaluate([LT])
        return res.claims[0]

    why = "both runs diverged in their first round"
    assert run("full", -0.05)["outcome"] == "reproduced"
    entry = run("full", -0.05, untested=why)
    assert entry["outcome"] == "inconclusive" and entry["detail"] == f"d; untested: {why}"
    assert run("full", 0.05, untested=why)["outcome"] == "inconclusive"
    assert run("full", 0.0, untested=why)["detail"] == f"d; untested: {why}"  # inconclusive anyway: it says why
    assert run("quick", -0.05, untested=why)["outcome"] == "reproduced"  # quick mode: the sweep registers values
    assert run("full", None, untested=why)["outcome"] == "not run"
    with pytest.raises(ValueError, match="untested must say why"):
        run("full", -0.05, untested=" ")


def test_the_papers_own_numbers_get_the_claims_own_test_and_a_failing_one_must_be_acknowledged():
    ack = Claim("ack", "A is close to B", "§3", "acc(A) − acc(B)", "≈", note="A 3 pp below: not reproduced on its own numbers")
    ledger = [GT, CLOSE, ack]
    values = {"gt": 0.02, "close/mnist": 0.015, "close/fmnist": -0.03, "ack": -0.03}
    assert paper_verdicts(ledger, values) == {"gt": (0.02, "reproduced"), "close/mnist": (0.015, "inconclusive"),
                                              "close/fmnist": (-0.03, "not reproduced"),
                                              "ack": (-0.03, "not reproduced")}
    assert unacknowledged(ledger, values) == ["close/fmnist", "close/mnist"]  # ack's note says so; gt passes
    assert unacknowledged(ledger, {"gt": 0.02}) == []
    # a paper's std printed as 0.02 and 0.01: their difference sits on the margin and reads as the decimal it is
    assert paper_verdicts(ledger, {"gt": (0.02 + 0.01) / 2 - (0.0 + 0.01) / 2})["gt"] == (0.01, "reproduced")
    with pytest.raises(KeyError, match="close/cifar"):
        paper_verdicts(ledger, {"close/cifar": 0.0})
    with pytest.raises(ValueError, match="finite"):
        paper_verdicts(ledger, {"gt": math.nan})


def test_distance_interval_moves_each_cell_by_its_bound_towards_and_away_from_the_paper():
    """Mean over cells of |ours − paper| = (0.1 + 0.3) / 2; each cell moved by its halfwidth: the near end never
    below 0 in a cell (0.1 − 0.15 → 0), the far end the gaps plus the halfwidths."""
    low, high = distance_interval([0.5, 0.9], [0.6, 0.6], [0.15, 0.05])
    assert (low, high) == pytest.approx(((0.0 + 0.25) / 2, (0.25 + 0.35) / 2))
    with pytest.raises(ValueError, match="one number per cell"):
        distance_interval([0.5, 0.9], [0.6], [0.1, 0.1])


def test_a_distance_to_the_paper_inside_its_interval_is_inconclusive_in_full_mode():
    """'≈' with a 1-pp margin is 'not reproduced' from 2 pp on: a 3-pp distance whose near end (3 − 1.5 pp) falls
    short of that is inconclusive; with a 0.2-pp bound it is not reproduced."""
    claim = Claim("values", "close to the paper", "T", "mean |ours − paper|", "≈")
    for width, verdict in ((0.015, "inconclusive"), (0.002, "not reproduced")):
        ends = distance_interval([0.83], [0.8], [width])
        (entry,) = evaluate([claim], {"values": {"value": 0.03, "detail": "", "interval": list(ends)}}, "full")
        assert entry["outcome"] == verdict
