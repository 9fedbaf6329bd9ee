"""Spec card ch3 §9 checks for Fed-nore (5-7, 10) and plain DPFL."""

import math

import pytest
import torch
import torch.nn.functional as F

from fedlib.algorithms.fednore import fednore, fednore1_penalty, fednore2_factor, fednore2_loss, plain_dpfl
from fedlib.fl import ClientMessage, RoundContext, run_federated
from fedlib.fl.backprop import mlp_cross_entropy_grads
from fedlib.fl.client import LocalTrainer, cross_entropy
from fedlib.fl.params import layer_slices
from fedlib.models import build_model
from fedlib.rng import make_generator
from helpers import cfg as base_cfg, mlp


def cfg(**kw):
    """Plain DPFL averages with weights 1/m (eq. 3.11)."""
    return base_cfg(**{"weighting": "uniform", **kw})


def test_check5_fednore1_zero_lambda_is_plain_dpfl_and_gradient_matches(small_fed):
    train, clients, test = small_fed
    plain = run_federated(mlp(), train, clients, test, cfg(), plain_dpfl(4.0)).params
    zero = run_federated(mlp(), train, clients, test, cfg(), fednore(4.0, lam1=0.0)).params
    assert torch.equal(plain, zero)
    params = [torch.randn(5, 3, requires_grad=True), torch.randn(3, requires_grad=True)]
    anchor = [torch.randn(5, 3), torch.randn(3)]
    lam, sigma, n = 1.0, 8.0, 600
    grads = torch.autograd.grad(fednore1_penalty(lam, sigma)(params, anchor, n), params)
    for g, p, a in zip(grads, params, anchor):
        d = (p - a).detach()
        torch.testing.assert_close(g, lam * sigma / n * d / d.norm(), rtol=1e-6, atol=0)


def test_fednore1_literal_is_a_constant_and_trains_like_plain_dpfl(small_fed):
    train, clients, test = small_fed
    params = [torch.randn(4, requires_grad=True)]
    value = fednore1_penalty(1.0, 8.0, mode="literal")(params, [torch.zeros(4)], 600)
    assert value > 0 and not value.requires_grad  # S_i is a number: no gradient
    a = run_federated(mlp(), train, clients, test, cfg(), fednore(4.0, lam1=1.0, mode1="literal")).params
    b = run_federated(mlp(), train, clients, test, cfg(), plain_dpfl(4.0)).params  # both: explicit backprop
    assert torch.equal(a, b)


def test_check6_fednore2_literal_is_ce_shifted_by_a_constant(small_fed):
    logits, labels = torch.randn(32, 10, requires_grad=True), torch.randint(0, 10, (32,))
    c = fednore2_factor(0.1, 8.0, 600)
    assert c == pytest.approx(0.1 * 8 / math.sqrt(600))  # 0.0327
    loss = fednore2_loss(0.1, 8.0)(logits, labels, 600)
    ce = F.cross_entropy(logits, labels)
    assert float((loss - ce).detach()) == pytest.approx(-math.log(1 - c), abs=1e-6)  # float32 rounding
    (g1,), (g2,) = torch.autograd.grad(loss, logits), torch.autograd.grad(ce, logits)
    torch.testing.assert_close(g1, g2, atol=1e-6, rtol=0)
    # whole runs equal plain DPFL (same seeds, autograd CE)
    train, clients, test = small_fed
    a = run_federated(mlp(), train, clients, test, cfg(), fednore(4.0, lam2=0.1)).params
    b = run_federated(mlp(), train, clients, test, cfg(), plain_dpfl(4.0, loss=cross_entropy)).params
    assert torch.equal(a, b)


def test_check6_fednore2_literal_is_undefined_for_c_at_least_one():
    logits, labels = torch.randn(4, 10), torch.randint(0, 10, (4,))
    with pytest.raises(ValueError, match=r"undefined for c = λ2·σ/√n_i = 10·8/√600 = 3.266"):
        fednore2_loss(10.0, 8.0)(logits, labels, 600)
    clamped = fednore2_loss(10.0, 8.0, clamp=True)(logits, labels, 600)
    assert float(clamped - F.cross_entropy(logits, labels)) == pytest.approx(-math.log(1e-12))


def test_check7_fednore2_margin_zero_is_ce_and_otherwise_changes_gradients():
    logits, labels = torch.randn(16, 10, requires_grad=True), torch.randint(0, 10, (16,))
    assert torch.equal(fednore2_loss(0.0, 8.0, mode="margin")(logits, labels, 600), F.cross_entropy(logits, labels))
    (g_margin,) = torch.autograd.grad(fednore2_loss(25.0, 8.0, mode="margin")(logits, labels, 600), logits)
    (g_ce,) = torch.autograd.grad(F.cross_entropy(logits, labels), logits)
    assert not torch.allclose(g_margin, g_ce)
    # margin μ on the true logit = factor e^{−μ} on its unnormalised probability
    mu = fednore2_factor(25.0, 8.0, 600)
    p = torch.softmax(logits.detach(), 1)
    true = p.gather(1, labels[:, None]).squeeze(1) * math.exp(-mu)
    manual = -torch.log(true / (true + p.sum(1) - p.gather(1, labels[:, None]).squeeze(1))).mean()
    assert float(fednore2_loss(25.0, 8.0, mode="margin")(logits.detach(), labels, 600)) == pytest.approx(
        float(manual), rel=1e-5)


def test_check10_per_layer_running_median_clipping_and_noise_std():
    model = build_model("mlp", generator=make_generator(0), hidden=(300,))
    slices = layer_slices(model)
    d = slices[-1].stop
    algorithm = plain_dpfl(8.0)
    clip, noise = algorithm.transforms
    for comp in algorithm.components():
        comp.reset()
    ctx = RoundContext(0, 100, 50, (0,), slices, 0)
    first = torch.randn(d, generator=make_generator(1))
    msg = ClientMessage(0, 600, first.clone())
    clip(msg, ctx)
    assert torch.equal(msg.update, first)  # first participation: C_il = ‖D_il‖, no clipping
    history = [first]
    for k in range(2, 5):
        upd = torch.randn(d, generator=make_generator(k)) * k
        history.append(upd)
        msg = ClientMessage(0, 600, upd.clone())
        clip(msg, ctx)
        for j, s in enumerate(slices):
            median = torch.stack([h[s].norm() for h in history]).median()
            assert torch.isclose(msg.bound[j], median)
            assert float(msg.update[s].norm()) <= float(median) * (1 + 1e-5)
    clean = msg.update.clone()
    noise(msg, ctx)
    big = slices[0]  # 784 x 300 weights: enough draws for a 2 % check
    assert float((msg.update[big] - clean[big]).std()) == pytest.approx(8.0 * float(msg.bound[0]) / 600, rel=0.02)


def test_bad_lambdas_are_refused():
    with pytest.raises(ValueError, match="lam"):
        fednore1_penalty(-1.0, 8.0)
    with pytest.raises(ValueError, match="mode"):
        fednore2_loss(1.0, 8.0, mode="squared")


def test_rounds_to_reach_the_first_round_at_or_above_the_target():
    from fedlib.experiments.common import rounds_to_reach
    from fedlib.fl import RunResult

    out = RunResult(torch.zeros(1), [{"round": r, "accuracy": a} for r, a in [(1, 0.5), (2, 0.8), (3, 0.7), (4, 0.9)]],
                    None, 4, 0.0)
    assert rounds_to_reach(out, 0.8) == 2 and rounds_to_reach(out, 0.85) == 4 and rounds_to_reach(out, 0.95) is None


def test_a_variant_that_never_reaches_plain_dpfl_saved_no_rounds():
    """The full run's Fed-nore-2 (λ2 = 200) diverged in round 1: it must not count as reaching the target in round 1."""
    from fedlib.experiments.common import rounds_saved
    from fedlib.fl.engine import RunSummary

    plain = RunSummary([{"round": r, "accuracy": 0.5 + r / 100} for r in range(1, 41)], 40, 0.0)
    faster = RunSummary([{"round": r, "accuracy": 0.5 + r / 50} for r in range(1, 41)], 40, 0.0)
    diverged = RunSummary([{"round": 1, "accuracy": 0.09}], 0, 0.0, diverged=True)
    short = RunSummary([{"round": r, "accuracy": 0.6} for r in range(1, 11)], 10, 0.0)
    assert rounds_saved(faster, plain, 10_000)[0] == pytest.approx(1 - 20 / 40)
    value, detail, interval = rounds_saved(diverged, plain, 10_000)
    assert value == -1.0 and "diverged after 0 round(s)" in detail and interval == (-1.0, -1.0)
    assert rounds_saved(short, plain, 10_000)[0] == pytest.approx(1 - 41 / 40)
    assert rounds_saved(None, plain, 10_000) == (None, "not run yet", None)
    # a variant that ran every round the privacy budget allows without reaching the target never does under it
    budget_end = RunSummary([{"round": r, "accuracy": 0.6} for r in range(1, 41)], 40, 0.0)
    assert rounds_saved(budget_end, plain, 10_000)[0] == pytest.approx(1 - 41 / 40)  # no budget: censored
    value, detail, _ = rounds_saved(budget_end, plain, 10_000, budget=40)
    assert value == -1.0 and "not within the 40 rounds the privacy budget allows" in detail
    assert rounds_saved(short, plain, 10_000, budget=40)[0] == pytest.approx(1 - 41 / 40)  # stopped before it


def test_fed_nore_1_rounds_of_table_3_3_are_read_with_the_budget(tmp_path):
    """Table 3.3's 52(42): Fed-nore-1 (λ1 = 1, MLP, σ = 8) reaches plain DPFL's accuracy in 42 rounds. The committed
    full run's Fed-nore-1 peaks at 0.9577 against plain DPFL's 0.9639 and never reaches it within the 52 rounds the
    budget allows (−100 %), but with the target lowered by its sampling bound (0.63 pp) it does in round 52 (0 %
    saved): inconclusive. The budget is §3.3's: 52 rounds at σ = 8."""
    from helpers import assemble_committed_full

    from fedlib.experiments.fednore import FULL, PAPER_SIGMA, budget_rounds

    mlp = next(r for r in FULL.runs if r.track.key == "mlp")
    assert budget_rounds(mlp, PAPER_SIGMA) == 52 and budget_rounds(mlp, 4.0) == 12
    entry = {c["key"]: c for c in assemble_committed_full("fednore", tmp_path).claims}["nore1_fewer_rounds"]
    assert entry["value"] == -1.0 and entry["outcome"] == "inconclusive"
    assert "never under the budget" in entry["detail"] and "-100 % … +0 %" in entry["detail"]


def test_rounds_saved_must_hold_at_both_ends_of_the_targets_sampling_bound():
    """Reaching plain DPFL's best accuracy in a round is a difference of two accuracies on the test set: with the
    target moved by its bound (widest: √(min(2p, 2 − 2p)/N)·z, ±1.04 pp at p = 0.9 on 10,000 images) the share of
    rounds saved is read again, and a full-mode verdict must hold at both ends. The full run's MNIST CNN as measured:
    plain DPFL's best 0.9851 in its last round (52), Fed-nore-2 first at or above it in round 39 (0.9853) but never
    0.40 pp above: +25 % saved, yet inconclusive (the variant may not truly reach it within the budget)."""
    from fedlib.experiments.common import rounds_saved
    from fedlib.experiments.fednore import LEDGER
    from fedlib.fl.engine import RunSummary
    from fedlib.results import Results

    plain = RunSummary([{"round": r, "accuracy": 0.5 + r / 100} for r in range(1, 41)], 40, 0.0)
    faster = RunSummary([{"round": r, "accuracy": 0.5 + r / 50} for r in range(1, 41)], 40, 0.0)
    value, detail, interval = rounds_saved(faster, plain, 10_000)
    assert interval == pytest.approx((1 - 21 / 40, 1 - 20 / 40)) and "the target ±1.04 pp" in detail
    cnn_plain = RunSummary([{"round": r, "accuracy": 0.9800 + 0.0051 * (r == 52)} for r in range(1, 53)], 52, 0.0)
    cnn_nore2 = RunSummary([{"round": r, "accuracy": 0.9853 if r >= 39 else 0.9700} for r in range(1, 53)], 52, 0.0)
    claim = next(c for c in LEDGER if c.id == "nore2_cnn_fewer_rounds")
    verdicts = {}
    for name, variant in (("cnn", cnn_nore2), ("clear", faster)):
        for mode in ("full", "quick"):
            value, detail, interval = rounds_saved(variant, cnn_plain if name == "cnn" else plain, 10_000)
            res = Results("fednore", mode, 0, {})
            res.measure(claim, value, detail, interval=interval)
            res.evaluate(LEDGER)
            verdicts[name, mode] = res.claim("nore2_cnn_fewer_rounds")
    cnn = verdicts["cnn", "full"]
    assert cnn["value"] == pytest.approx(1 - 39 / 52) and cnn["outcome"] == "inconclusive"
    assert "the target ±0.40 pp" in cnn["detail"] and "at the ends of its test-set sampling bound" in cnn["detail"]
    assert verdicts["clear", "full"]["outcome"] == "reproduced"
    assert verdicts["cnn", "quick"]["outcome"] == "full mode only"
    with pytest.raises(ValueError, match="interval must be"):
        Results("fednore", "full", 0, {}).measure(claim, 0.25, interval=(0.3, 0.5))


def test_fednore1_convex_bound_is_the_unrolled_recursion_a32():
    from fedlib.algorithms.fednore import fednore1_convex_bound, fednore1_l1, fednore1_l3, fednore1_q1

    kw = dict(lam=0.5, noise_multiplier=1.0, n=1.0, sensitivity=1.0, mu=0.1, rho=1.0, beta=1.0)
    l1 = fednore1_l1(0.5, 1.0, 1.0, 1.0)
    assert l1 == pytest.approx(1 / 1.5)  # eq. 3.25
    l3 = fednore1_l3(l1, 0.1, 1.0)
    q1 = fednore1_q1(0.5, 1.0, 1.0, 1.0)
    gap = 2.0
    for t in range(1, 30):  # (A.32): gap_{t+1} <= l3 gap_t + β q1 (1 − l1 ρ) + ρ q1²/2
        gap = l3 * gap + q1 * (1 - l1) + q1**2 / 2
        assert fednore1_convex_bound(t, 2.0, **kw) == pytest.approx(gap, rel=1e-12)
    assert fednore1_convex_bound(0, 2.0, **kw) == 2.0


def test_fednore1_bound_constants_show_the_cards_caveats():
    from fedlib.algorithms.fednore import fednore1_l1, fednore1_l3, fednore1_nonconvex_bound, fednore1_q1

    assert fednore1_l1(0.0, 8.0, 600, 1.0) == 1.0
    assert fednore1_q1(0.0, 8.0, 600, 1.0) == pytest.approx(-8.0 / math.sqrt(600))  # negative at λ = 0
    assert fednore1_l3(1.9, 0.1, 1.0) < 1 < fednore1_l3(2.1, 0.1, 1.0)  # contraction needs l1 < 2/ρ
    # at the thesis's scale (n = 600, σ = 8, λ = 1) the n^{3/2} term makes the bound vacuous
    assert fednore1_nonconvex_bound(52, 1.0, lam=1.0, noise_multiplier=8.0, n=600, sensitivity=1.0, rho=1.0,
                                    beta=1.0) > 1e6


def test_chapter_variants_sweeps_and_budget_cut():
    from fedlib.experiments.fednore import FULL, MLP, OURS_SIGMA, TrackRun, sweep_rounds, variants

    mlp_run = FULL.runs[0]
    names = [v.name for v in variants(mlp_run)]
    assert len(names) == len(set(names))  # names are unit ids: they must be unique
    sweep = {v.sigma: v.rounds for v in variants(mlp_run) if v.group == "sigma"}
    assert sweep[4.0] == 12 and sweep[6.0] == 28 and sweep[10.0] == 52  # min(52, rounds within ε = 0.2703)
    assert sweep_rounds(mlp_run, 8.0) == 52
    sweep_lams = {(v.kind, v.lam1 or v.lam2) for v in variants(mlp_run) if v.group == "sigma" and v.kind != "plain"}
    assert sweep_lams == {("nore1", 1.0), ("nore2", 200.0)}  # the paper's best λ's, unscaled
    ours = {v.kind: v for v in variants(mlp_run) if v.group == "ours"}
    assert ours["nore2"].sigma == OURS_SIGMA and ours["nore2"].lam2 == 25.0 and ours["nore2"].scaled
    quick = TrackRun(MLP, sigma=64.0, rounds=15, lam_scale=(0.125, 0.5), lam2=(25.0,), sigmas=(8.0,),
                     sweep_budget=False, dropout=True)
    by_name = {v.name: v for v in variants(quick)}
    assert by_name["Fed-nore-2 margin, λ2 = 25"].lam2 == 12.5  # the name shows the paper's λ, the run λ × scale
    assert by_name["σ = 8: Fed-nore-2 margin, λ2 = 200"].lam2 == 200.0 and by_name["σ = 8: plain DPFL"].rounds == 15
    assert by_name["plain DPFL, client drop-out (Alg. 3.2)"].uploads == 15 * 50 // 100
    cnn = FULL.runs[1]
    assert {v.lr for v in variants(cnn) if v.group == "lr"} == {0.01, 1.0}


def test_chapter_config_errors_name_the_parameter():
    from fedlib.experiments.fednore import MLP, TrackRun

    with pytest.raises(ValueError, match="sigmas"):
        TrackRun(MLP, sigma=8.0, sigmas=(4.0, 8.0))  # the main σ is not repeated in the sweep


def test_uploads_budget_lets_a_client_upload_exactly_that_often():
    from fedlib.algorithms.fednore import uploads_budget
    from fedlib.privacy import RDPAccountant

    budget = uploads_budget(8.0, 26, 1e-6)
    acc = RDPAccountant()
    acc.step(noise_multiplier=8.0, sample_rate=1.0, steps=26)
    assert not acc.would_exceed(budget, noise_multiplier=8.0, sample_rate=1.0, steps=0)
    assert acc.would_exceed(budget, noise_multiplier=8.0, sample_rate=1.0)
    assert budget.epsilon == pytest.approx(3.158, abs=1e-3)  # 26 uploads at σ = 8, q = 1 (vs 0.27 with q = 1/M)
    with pytest.raises(ValueError, match="uploads"):
        uploads_budget(8.0, 0, 1e-6)


def test_literal_objectives_leave_the_update_bit_identical():
    from fedlib.experiments import fednore

    run = fednore.TINY.runs[0]
    fed = fednore.make_federation("mnist", "class_shards", 100, seed=0, subset="quick")
    track = fednore._Track(run, fed, seed=0, mode="quick", units=fednore.Units("fednore", "quick", 0),
                           progress=False, checkpoints=None, delta=1e-6, defect=None)
    rows = fednore._literal_check(track)["rows"]
    assert [r["max_abs_difference"] for r in rows] == [0.0, 0.0]


def test_full_mode_plans_its_units_and_blocks_what_the_data_root_cannot_serve(tmp_path, monkeypatch):
    from fedlib.data.datasets import DatasetIncompleteError
    from fedlib.experiments import fednore
    from fedlib.units import Units

    real = fednore.make_federation

    def partial(dataset, *args, **kwargs):  # a data root with only a CIFAR-10 subset
        if dataset == "cifar10":
            raise DatasetIncompleteError("this setting needs the full CIFAR-10 (50,000 training images; found 5,438)")
        return real(dataset, *args, **kwargs)

    monkeypatch.setattr(fednore, "make_federation", partial)
    units = Units("fednore", "full", 0, folder=tmp_path, plan_only=True)
    res = fednore.run(fednore.FULL, mode="full", seed=0, units=units)
    plan = units.summary()
    assert list(plan["blocked"]) == ["cifar/*"] and "found 5,438" in plan["blocked"]["cifar/*"]
    trainings = sum(len(fednore.variants(r)) for r in fednore.FULL.runs if r.track.key != "cifar")
    assert plan["done"] == 0 and plan["not_run"] == trainings + 3  # + literal check, sensitivity, audit
    assert "mlp/σ = 40: Fed-nore-2 margin, λ2 = 200" in plan["missing"] and not list(tmp_path.iterdir())
    assert "T3.2" not in res.tables and all(row["ours"] is None for row in res.tables["T3.3"]["rows"])
    assert res.claim("cifar_nore2_improves")["outcome"] == "not run"
    assert res.claim("rdp_convention")["outcome"] == "reproduced"  # arithmetic needs no unit


@pytest.mark.parametrize("mode", ["surrogate", "literal"])
def test_fednore1_gradient_written_out_equals_autograd_and_keeps_the_explicit_backprop(mode):
    """Fed-nore-1's term carries its gradient, so an MLP keeps the explicit back-propagation instead of autograd
    (local training 1.8x faster); it must give autograd's gradients of CE + λ1σ/n_i Σ_l ‖W_il − W^t_l‖."""
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x, y = torch.randn(10, 12), torch.randint(0, 3, (10,))
    anchor = [p.detach().clone() for p in net.parameters()]
    with torch.no_grad():
        for p in net.parameters():
            p.add_(0.1 * torch.randn_like(p))
    penalty = fednore1_penalty(2.0, 8.0, mode=mode)
    fast = LocalTrainer(net, penalty=penalty)
    slow = LocalTrainer(net, penalty=lambda p, a, n: penalty(p, a, n))  # no written-out gradient: autograd
    assert fast.linears is not None and slow.linears is None
    fast.num_samples = slow.num_samples = 30
    (g_fast, l_fast), (g_slow, l_slow) = fast.gradients(x, y, anchor), slow.gradients(x, y, anchor)
    for a, b in zip(g_fast, g_slow):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)
    assert float(l_fast) == pytest.approx(float(l_slow), rel=1e-6)
    plain, _ = mlp_cross_entropy_grads(fast.linears, x, y)
    moved = max(float((a - b).abs().max()) for a, b in zip(g_fast, plain))
    assert (moved > 1e-3) if mode == "surrogate" else (moved == 0.0)  # the literal term is a constant


def test_a_full_run_compares_two_runs_with_their_per_image_results(tmp_path):
    """Fed-nore's accuracy differences name the two runs and read the per-image results their units keep, so the
    ledger's test-set bound is the paired one (TINY in full mode, every unit computed here)."""
    from fedlib.experiments import fednore
    from fedlib.units import Units

    res = fednore.run(fednore.TINY, mode="full", seed=0, units=Units("fednore", "full", 0, folder=tmp_path))
    pairs = {k: m["sampling"] for k, m in res.measured.items()
             if m["value"] is not None and len(m.get("sampling", {}).get("accuracies", ())) == 2}
    paired = {k: p["disagreement"] for k, p in pairs.items() if "disagreement" in p}
    # TINY's Fed-nore-2 at σ = 40 and 64 diverges: no per-image results, the widest bound any dependence allows
    # (TINY's σ sweep below 24 is σ = 8 alone: 'Fed-nore-2 improves below σ = 24' reads the same pair there)
    assert set(paired) == {"nore1_improves/σ = 8", "nore2_improves/σ = 8", "nore2_beats_nore1/σ = 8",
                           "nore2_improves_below_24", "nore1_beats_plain_large_sigma/σ = 40"}
    assert paired["nore2_improves_below_24"] == paired["nore2_improves/σ = 8"]
    assert len(pairs) == 8 and 0 < paired["nore1_improves/σ = 8"] < paired["nore2_improves/σ = 8"] < 1
    assert pairs["nore2_improves/σ = 8"]["accuracies"][1] == pairs["nore1_improves/σ = 8"]["accuracies"][1]
    # a difference of two gains combines four runs: Fed-nore-1's kept their per-image results (exact bound),
    # Fed-nore-2's at σ = 40 diverged (the bound without them)
    gains = {cid: res.measured[f"{cid}/σ = 8 vs 40"] for cid in ("nore1_large_noise", "nore2_moderate_noise")}
    for cid, m in gains.items():
        a, w = m["sampling"]["accuracies"], m["sampling"]["weights"]
        assert w == [1.0, -1.0, -1.0, 1.0] and m["value"] == pytest.approx(sum(x * y for x, y in zip(w, a)))
    assert "mean_square" in gains["nore1_large_noise"]["sampling"]
    assert "mean_square" not in gains["nore2_moderate_noise"]["sampling"]


def test_two_runs_that_diverged_in_round_one_cannot_show_one_is_worse(tmp_path):
    """Fig. 3.13's 'Fed-nore-2 performs worse than plain DPFL at learning rate 1': the committed full run's plain
    DPFL and Fed-nore-2 both diverged in round 1 (0.1054 vs 0.0831, chance 0.10). The 2.2-pp gap clears the
    sampling bound (±1.01 pp), but neither model was trained: inconclusive, and the detail says why."""
    from helpers import assemble_committed_full

    results = assemble_committed_full("fednore", tmp_path)
    entry = results.claim("nore2_cnn_large_lr")
    assert entry["value"] == pytest.approx(0.0831 - 0.1054)
    assert entry["outcome"] == "inconclusive"
    assert "untested: both runs diverged in their first round" in entry["detail"]


def test_fed_nore_2_below_sigma_24_is_read_at_its_worst_sigma(tmp_path):
    """'Fed-nore-2 can greatly improve the accuracy compared with the plain DPFL when σ < 24' holds for every σ of the
    sweep below 24 or not at all: the committed full run reads the smallest gain (Fed-nore-2, λ2 = 200, diverges in
    round 1 at every σ: −86.9 pp at σ = 8) and lists each σ's gain."""
    from helpers import assemble_committed_full

    results = assemble_committed_full("fednore", tmp_path)
    entry = results.claim("nore2_improves_below_24")
    gains = {row["sigma"]: row["nore2_gain"] for row in results.tables["sigma"]["rows"] if row["sigma"] < 24}
    assert sorted(gains) == [4.0, 6.0, 8.0, 10.0, 12.0, 16.0]
    assert entry["value"] == pytest.approx(min(gains.values()))
    assert entry["outcome"] == "not reproduced" and "σ = 4: -0.8286" in entry["detail"]


def test_fig_3_6_to_3_8s_statements_are_read_on_the_whole_grid(tmp_path):
    """Fig. 3.7's 'outperforms the plain DPFL when λ_nore2 is larger than zero' at λ2 = 0.1 and 25 too, Fig. 3.6's
    'when λ_nore1 is getting larger, the performance is the same with the plain DPFL and even worse' (λ1 = 25), and
    Fig. 3.8's 'with a larger base noise variance ... Fed-nore-1 can perform much better than the plain DPFL' as a
    difference at σ = 24 and 40 (ours: below plain at both), from the committed units by today's code."""
    from helpers import assemble_committed_full

    claims = {c["key"]: c for c in assemble_committed_full("fednore", tmp_path).claims}
    assert claims["nore1_large_lambda_no_better"]["outcome"] == "reproduced"  # 0.9194 against 0.9639
    assert claims["nore1_large_lambda_no_better"]["value"] == pytest.approx(0.9194 - 0.9639)
    for sigma in ("24", "40"):
        large = claims[f"nore1_beats_plain_large_sigma/σ = {sigma}"]
        assert -0.01 < large["value"] < 0 and large["outcome"] == "inconclusive"
    assert claims["nore2_improves_every_lambda/λ2 = 25"]["value"] == pytest.approx(0.9707 - 0.9639)


def test_the_theses_own_tables_measured_on_the_claims():
    from fedlib.experiments import fednore
    from fedlib.ledger import paper_verdicts, unacknowledged

    own = fednore.paper_values()
    # Table 3.3 (MNIST, σ = 8): Fed-nore-2 reaches plain DPFL's accuracy in 33 of 52 rounds (MLP), 32 (CNN);
    # MLP: plain 95.9 %, Fed-nore-1 96.4 %, Fed-nore-2 96.7 %; Table 3.2 (CIFAR-10): plain 48.7 %, Fed-nore-2 53.7 %
    assert own["nore2_fewer_rounds/σ = 8"] == pytest.approx(1 - 33 / 52)
    assert own["nore2_cnn_fewer_rounds"] == pytest.approx(1 - 32 / 52)
    assert own["cifar_gain_larger"] == pytest.approx((0.537 - 0.487) - (0.967 - 0.959))
    assert own["combined_worse"] == pytest.approx(0.537 - 0.505)  # best single (Fed-nore-2, λ = 10) vs λ = 20 both
    assert paper_verdicts(fednore.LEDGER, own)["nore2_beats_nore1/σ = 8"][1] == "inconclusive"  # 0.3 pp
    assert not any("(ours)" in k for k in own)
    assert unacknowledged(fednore.LEDGER, own) == []
