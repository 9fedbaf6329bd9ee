"""Reconstruction attacks and their metrics (spec card ch4 §9 checks 4-9 and the iDLG label rule)."""

import math

import pytest
import torch
from torch import nn

from fedlib.attacks import (
    AttackConfig,
    attack_objective,
    mlp_attack_objective,
    mlp_layer_names,
    cosine_similarity,
    euclidean_distance,
    evaluator_similarity,
    leakage_probability,
    leakage_scores,
    model_gradient,
    psnr,
    reconstruct,
    recover_label,
    squared_norm,
    ssim,
    total_variation,
)
from reference import inversefed_style_attack


def tiny_mlp(seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Flatten(), nn.Linear(768, 64), nn.ReLU(), nn.Linear(64, 10))


def params_of(model: nn.Module) -> dict:
    return {k: v.detach() for k, v in model.named_parameters()}


def one_round(params: dict) -> dict:
    """The weights of a one-round attack shared by every attack: (R = 1, *shape)."""
    return {n: p.unsqueeze(0) for n, p in params.items()}


def test_check6_total_variation_is_anisotropic_mean_abs_difference():
    x = torch.tensor([[[[0.0, 1.0, 3.0], [0.0, 0.0, 0.0]]]])  # (1, 1, 2, 3)
    # horizontal |differences|: 1, 2, 0, 0 -> mean 0.75; vertical: 0, 1, 3 -> mean 4/3
    assert float(total_variation(x)) == pytest.approx(0.75 + 4 / 3)


def test_check4_objectives_at_the_true_images_are_the_tv_term():
    model = tiny_mlp()
    x, y = torch.rand(2, 3, 16, 16), torch.tensor([3, 7])
    params = params_of(model)
    target = model_gradient(model, params, x, y)
    rounds = {k: v.unsqueeze(0) for k, v in params.items()}
    for objective in ("cosine", "euclidean"):
        cfg = AttackConfig(objective=objective, tv=0.01)
        value = attack_objective(model, rounds, x, y, target, cfg)
        assert float(value) == pytest.approx(0.01 * float(total_variation(x)), abs=1e-6)


def test_all_round_objective_sums_the_dummy_gradients_over_rounds():
    model = tiny_mlp()
    x, y = torch.rand(1, 3, 16, 16), torch.tensor([2])
    p1 = params_of(model)
    p2 = {k: v + 0.01 * torch.randn_like(v) for k, v in p1.items()}
    g1, g2 = model_gradient(model, p1, x, y), model_gradient(model, p2, x, y)
    summed = {k: g1[k] + g2[k] for k in g1}
    rounds = {k: torch.stack([p1[k], p2[k]]) for k in p1}
    assert float(attack_objective(model, rounds, x, y, summed, AttackConfig(tv=0.0))) == pytest.approx(0.0, abs=1e-6)


@pytest.mark.parametrize("objective", ["cosine", "euclidean"])
@pytest.mark.parametrize("num_rounds", [1, 3])
def test_mlp_objective_equals_the_generic_one(objective, num_rounds):
    model = nn.Sequential(nn.Flatten(), nn.Linear(48, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, 5))
    params = params_of(model)
    gen = torch.Generator().manual_seed(3)
    rounds = {n: p + 0.1 * torch.randn(num_rounds, *p.shape, generator=gen) for n, p in params.items()}
    x, y = torch.rand(4, 3, 4, 4, generator=gen), torch.tensor([0, 4, 4, 2])
    target = {n: torch.randn(p.shape, generator=gen) for n, p in params.items()}
    cfg = AttackConfig(objective=objective)
    layers = mlp_layer_names(model)
    assert layers == [("1.weight", "1.bias"), ("3.weight", "3.bias"), ("5.weight", "5.bias")]
    xa, xb = x.clone().requires_grad_(True), x.clone().requires_grad_(True)
    generic = attack_objective(model, rounds, xa, y, target, cfg)
    fast = mlp_attack_objective(layers, rounds, xb, y, target, cfg)
    assert float(fast.detach()) == pytest.approx(float(generic.detach()), rel=1e-5)
    (ga,), (gb,) = torch.autograd.grad(generic, [xa]), torch.autograd.grad(fast, [xb])
    assert torch.allclose(ga, gb, rtol=1e-4, atol=1e-7)
    assert mlp_layer_names(nn.Sequential(nn.Conv2d(3, 4, 3), nn.Flatten(), nn.Linear(16, 2))) is None


@pytest.mark.parametrize("objective", ["cosine", "euclidean"])
def test_a_precomputed_target_norm_changes_no_objective_value(objective):
    model = nn.Sequential(nn.Flatten(), nn.Linear(48, 16), nn.ReLU(), nn.Linear(16, 5))
    params = params_of(model)
    gen = torch.Generator().manual_seed(4)
    x, y = torch.rand(2, 3, 4, 4, generator=gen), torch.tensor([1, 3])
    target = {n: torch.randn(p.shape, generator=gen) for n, p in params.items()}
    norm_sq = squared_norm(target)
    assert float(norm_sq) == pytest.approx(float(torch.cat([t.flatten() for t in target.values()]).pow(2).sum()),
                                           rel=1e-6)
    cfg, layers = AttackConfig(objective=objective), mlp_layer_names(model)
    rounds = one_round(params)
    assert torch.equal(mlp_attack_objective(layers, rounds, x, y, target, cfg, norm_sq),
                       mlp_attack_objective(layers, rounds, x, y, target, cfg))
    assert torch.equal(attack_objective(model, rounds, x, y, target, cfg, norm_sq),
                       attack_objective(model, rounds, x, y, target, cfg))
    # the norm is really used: a wrong one changes the value (the generic path needs it for the cosine only)
    assert not torch.equal(mlp_attack_objective(layers, rounds, x, y, target, cfg, 4 * norm_sq),
                           mlp_attack_objective(layers, rounds, x, y, target, cfg))
    assert torch.equal(attack_objective(model, rounds, x, y, target, cfg, 4 * norm_sq),
                       attack_objective(model, rounds, x, y, target, cfg)) == (objective == "euclidean")


def test_batched_attacks_equal_one_at_a_time_reference():
    model = tiny_mlp()
    params = params_of(model)
    gen = torch.Generator().manual_seed(1)
    k = 3
    truth = torch.rand(k, 2, 3, 16, 16, generator=gen)
    labels = torch.randint(0, 10, (k, 2), generator=gen)
    targets = {n: torch.stack([model_gradient(model, params, truth[i], labels[i])[n] for i in range(k)])
               for n in params}
    targets = {n: t + 1e-3 * torch.randn(t.shape, generator=gen) * (i + 1) for i, (n, t) in enumerate(targets.items())}
    x0 = torch.rand(k, 2, 3, 16, 16, generator=gen)
    cfg = AttackConfig(iterations=20, lr=0.05)
    batched, values = reconstruct(model, one_round(params), labels, targets, x0, cfg=cfg, box=(0.0, 1.0))
    assert values.shape == (k,) and torch.isfinite(values).all()
    for i in range(k):
        ref = inversefed_style_attack(tiny_mlp(), params, labels[i], {n: t[i] for n, t in targets.items()}, x0[i], cfg,
                                0.0, 1.0)
        assert torch.allclose(batched[i], ref, atol=1e-5)


def test_batched_generic_path_equals_reference_for_a_conv_net_with_per_attack_weights():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(4 * 8 * 8, 5))
    base = params_of(model)
    gen = torch.Generator().manual_seed(2)
    per_attack = [{n: p + 0.05 * torch.randn(p.shape, generator=gen) for n, p in base.items()} for _ in range(2)]
    truth, labels = torch.rand(2, 1, 3, 8, 8, generator=gen), torch.tensor([[1], [3]])
    targets = {n: torch.stack([model_gradient(model, per_attack[i], truth[i], labels[i])[n] for i in range(2)])
               for n in base}
    rounds = {n: torch.stack([per_attack[i][n] for i in range(2)]).unsqueeze(1) for n in base}  # (K, R = 1, ...)
    x0 = torch.rand(2, 1, 3, 8, 8, generator=gen)
    cfg = AttackConfig(iterations=10, lr=0.05)
    out, _ = reconstruct(model, rounds, labels, targets, x0, cfg=cfg, box=(0.0, 1.0))
    for i in range(2):
        ref = inversefed_style_attack(model, per_attack[i], labels[i], {n: t[i] for n, t in targets.items()}, x0[i],
                                      cfg, 0.0, 1.0)
        assert torch.allclose(out[i], ref, atol=1e-5)
    with pytest.raises(ValueError, match="rounds"):
        reconstruct(model, base, labels, targets, x0, cfg=cfg, box=(0.0, 1.0))


def test_check5_reconstructions_stay_in_the_box():
    model = tiny_mlp()
    params = params_of(model)
    x, y = torch.rand(1, 1, 3, 16, 16), torch.tensor([[4]])
    target = {n: g.unsqueeze(0) for n, g in model_gradient(model, params, x[0], y[0]).items()}
    lo, hi = torch.tensor([-0.5, 0.0, 0.1]).view(3, 1, 1), torch.tensor([0.5, 1.0, 0.9]).view(3, 1, 1)
    out, _ = reconstruct(model, one_round(params), y, target, torch.randn(1, 1, 3, 16, 16) * 3,
                         cfg=AttackConfig(iterations=5, lr=0.5), box=(lo, hi))
    assert (out >= lo).all() and (out <= hi).all()


def _attack_psnr(noise_std: float, seed: int) -> tuple[float, float]:
    model = tiny_mlp(seed)
    params = params_of(model)
    gen = torch.Generator().manual_seed(seed)
    truth, y = torch.rand(1, 2, 3, 16, 16, generator=gen), torch.randint(0, 10, (1, 2), generator=gen)
    target = {n: (g + noise_std * torch.randn(g.shape, generator=gen)).unsqueeze(0)
              for n, g in model_gradient(model, params, truth[0], y[0]).items()}
    x0 = torch.rand(1, 2, 3, 16, 16, generator=gen)
    out, _ = reconstruct(model, one_round(params), y, target, x0, cfg=AttackConfig(iterations=400, lr=0.05),
                         box=(0.0, 1.0))
    return float(psnr(x0[0], truth[0]).mean()), float(psnr(out[0], truth[0]).mean())


def test_check7_attack_recovers_images_without_noise_and_fails_with_huge_noise():
    clean, noisy = [], []
    for seed in (0, 1):
        start, final = _attack_psnr(0.0, seed)
        assert final >= start + 5.0
        clean.append(final)
        noisy.append(_attack_psnr(10.0, seed)[1])  # gradient entries are ~1e-2: SNR far below 0.01
    assert sum(noisy) / 2 <= sum(clean) / 2 - 3.0


def test_idlg_recovers_the_label_of_every_single_sample():
    model = tiny_mlp()
    params = params_of(model)
    x = torch.rand(30, 3, 16, 16)
    for i in range(30):
        label = torch.tensor([i % 10])
        g = model_gradient(model, params, x[i:i + 1], label)
        assert recover_label(g["3.weight"]) == i % 10
    with pytest.raises(ValueError, match="last_weight_grad"):
        recover_label(torch.zeros(10))


def test_check8_metrics_on_known_images():
    x = torch.rand(2, 3, 16, 16)
    assert math.isinf(float(psnr(x, x)[0]))
    assert torch.allclose(cosine_similarity(x, x), torch.ones(2)) and torch.allclose(euclidean_distance(x, x),
                                                                                      torch.zeros(2), atol=1e-5)
    zero, half = torch.zeros(1, 3, 16, 16), torch.full((1, 3, 16, 16), 0.5)
    assert float(psnr(zero, half)) == pytest.approx(10 * math.log10(1 / 0.25))  # 6.02 dB
    assert torch.allclose(ssim(x, x), torch.ones(2))
    far = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(5))
    assert float(ssim(far, x).max()) < 0.2
    d = 3 * 16 * 16
    assert float(euclidean_distance(far, x).mean()) == pytest.approx(math.sqrt(2 * d), rel=0.1)  # unrelated: ≈ √(2d)
    with pytest.raises(ValueError, match="shape"):
        psnr(x, x[:1])


def test_check9_leakage_probability_hand_example():
    cs, ed = torch.tensor([1.0, 0.0]), torch.tensor([0.0, 1.0])
    assert torch.allclose(leakage_scores(cs, ed, total_noise=0.0), torch.tensor([0.5, -0.5]))
    assert leakage_probability(cs, ed, total_noise=0.0) == 0.5
    # ρ = min(σC, 0.1): σC = 1 gives ρ = 0.1 on both terms
    assert torch.allclose(leakage_scores(cs, ed, total_noise=1.0), torch.tensor([0.4, -0.6]))
    assert torch.allclose(leakage_scores(cs, ed, total_noise=0.001), torch.tensor([0.499, -0.501]))
    with pytest.raises(ValueError, match="alpha2"):
        leakage_scores(cs, ed, total_noise=0.0, alpha2=2.0)


def test_evaluator_similarity_is_one_and_zero_for_identical_inputs():
    torch.manual_seed(0)
    evaluators = [nn.Sequential(nn.Flatten(), nn.Linear(768, 10)) for _ in range(2)]
    x = torch.rand(4, 3, 16, 16)
    cs, ed = evaluator_similarity(evaluators, x, x)
    assert torch.allclose(cs, torch.ones(4)) and torch.allclose(ed, torch.zeros(4))
    cs2, ed2 = evaluator_similarity(evaluators, torch.rand(4, 3, 16, 16), x)
    assert (ed2 >= 0).all() and (ed2 <= 1).all() and (cs2 <= 1 + 1e-6).all()


def test_bad_attack_config_names_the_parameter():
    with pytest.raises(ValueError, match="objective"):
        AttackConfig(objective="l1")
    with pytest.raises(ValueError, match="iterations"):
        AttackConfig(iterations=0)


# --- the convergence analysis of §4.3 (fedlib.attacks.theory), each function against its equation ---------------

def test_lemma7_k1_is_eq_4_5_and_one_without_noise_or_clipping():
    from fedlib.attacks.theory import lemma7_k1

    assert lemma7_k1(0.0, 2.0, 1.5, 100) == 1.0  # σ = 0, C ≥ ‖g‖ (spec card check 11)
    assert lemma7_k1(0.0, 0.5, 2.0, 100) == 0.25  # clipping alone: C/‖g‖
    # eq. 4.5: min(1, C/‖g‖) + (σ/√n)·C/‖g‖
    assert lemma7_k1(0.3, 0.5, 2.0, 16) == pytest.approx(0.25 + 0.3 / 4 * 0.25)
    # the √d reading: σC√d/n in place of σC/√n; equal to the printed one when d = n
    assert lemma7_k1(0.3, 0.5, 2.0, 16, dim=16) == pytest.approx(lemma7_k1(0.3, 0.5, 2.0, 16))
    assert lemma7_k1(0.3, 0.5, 2.0, 16, dim=1600) == pytest.approx(0.25 + 0.3 * 0.5 * 40 / 16 / 2.0)
    with pytest.raises(ValueError, match="bound"):
        lemma7_k1(0.1, 0.0, 1.0, 10)
    with pytest.raises(ValueError, match="n must"):
        lemma7_k1(0.1, 1.0, 1.0, 0)


def test_lemma7_bound_fails_as_printed_and_holds_with_sqrt_d_on_flat_clipping():
    from fedlib.algorithms.udp import privatize
    from fedlib.attacks.theory import lemma7_k1

    gen = torch.Generator().manual_seed(0)
    g = {"w": torch.randn(200, 50, generator=gen), "b": torch.randn(200, generator=gen)}
    norm = float(torch.cat([t.flatten() for t in g.values()]).norm())
    d, n = 10_200, 10
    for sigma, bound in ((0.5, 1.0), (0.1, 20.0), (2.0, 0.5)):
        noisy = privatize(g, bound=bound, noise_multiplier=sigma, num_samples=n, generator=gen, mode="flat")
        measured = float(torch.cat([t.flatten() for t in noisy.values()]).norm())
        assert measured > lemma7_k1(sigma, bound, norm, n) * norm  # √n underestimates the noise norm (d ≫ n)
        assert measured <= lemma7_k1(sigma, bound, norm, n, dim=d) * norm


def test_corollary2_k3_is_eqs_4_8_and_4_11():
    from fedlib.attacks.theory import corollary2_bound, corollary2_k3, theorem6_k2

    for k1 in (1.0, 1.3, 4.0):
        for s in (0.0, 0.3, 0.5, 1.0):
            k2 = theorem6_k2(k1)
            assert k2 == pytest.approx((k1 - 1) / k1)  # eq. 4.9
            first_line = s * 1 + (1 - s) * (-1) * (1 - 1 / k1) + (1 - s) * 1 * (1 / k1)  # eq. 4.8, first line
            assert corollary2_k3(k1, s) == pytest.approx(first_line)
            assert corollary2_k3(k1, s) == pytest.approx(2 * s - 1 + 2 * (1 - s) / k1)
    assert corollary2_k3(1.0, 0.2) == 1.0  # no noise: the noise-free update (spec card check 11)
    assert corollary2_k3(2.5) == pytest.approx(1 / 2.5)  # s = 0.5
    assert corollary2_bound(0.5, lipschitz=2.0, gap=3.0, iterations=10) == pytest.approx(2 * 3 / (2 * 10 * 0.5))
    with pytest.raises(ValueError, match="s must"):
        corollary2_k3(2.0, 1.5)


def test_lemma8_and_theorem7_follow_eqs_4_13_to_4_17_and_are_undefined_above_k1_one():
    from fedlib.attacks.theory import lemma8_noisy_objective, theorem7_bound, theorem7_k4, theorem7_k5

    assert lemma8_noisy_objective(1.0, 0.5, 2.0, 4.0) == pytest.approx(1 + math.sqrt(2 * 0.5 * 8))  # eq. 4.13
    assert lemma8_noisy_objective(1.0, 0.5, 2.0, 4.0, appendix=True) == pytest.approx(1 + 2 * math.sqrt(0.5 * 8))
    assert lemma8_noisy_objective(1.0, 1.0, 2.0, 4.0) == 1.0  # k1 = 1: J̄ = J
    assert math.isnan(lemma8_noisy_objective(1.0, 1.2, 2.0, 4.0))
    assert theorem7_k4(0.5, 2.0, 4.0) == pytest.approx(math.sqrt(2 * 4.0 * 0.5 / 2.0))  # eq. 4.15
    assert math.isnan(theorem7_k4(1.5, 2.0, 4.0))
    assert theorem7_k5(0.6, 2.0) == pytest.approx(1 + 0.6 / 3.0)  # eq. 4.17, +
    assert theorem7_k5(0.6, 2.0, sign=-1) == pytest.approx(1 + 0.6 / 1.0)
    assert theorem7_bound(2.0, lipschitz=4.0, iterations=2) == pytest.approx(4.0 / (2 * 2 * 4.0))  # eq. 4.16
    with pytest.raises(ValueError, match="beta3"):
        theorem7_k5(0.6, 1.0, sign=-1)


def test_noise_to_signal_is_the_measured_ratio_of_gaussian_noise_norm_to_signal():
    from fedlib.attacks.theory import noise_to_signal

    d, n, sigma, bound = 40_000, 8, 0.3, 2.0
    noise = torch.randn(d, generator=torch.Generator().manual_seed(1)) * sigma * bound / n
    assert noise_to_signal(1.5, sigma, bound, n, d) == pytest.approx(float(noise.norm()) / 1.5, rel=0.01)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device (scripts/device_units.sh runs it there)")
@pytest.mark.parametrize("objective", ["cosine", "euclidean"])
def test_attacks_on_cuda_agree_with_the_cpu(objective):
    """The attack on a GPU computes the CPU's function: the objective to float32 rounding, and 20 unsigned Adam
    steps to 1e-4 (signed steps can flip a near-zero gradient entry's sign, so they are compared on the CPU only)."""
    model = tiny_mlp()
    params = params_of(model)
    gen = torch.Generator().manual_seed(3)
    truth, labels = torch.rand(2, 2, 3, 16, 16, generator=gen), torch.randint(0, 10, (2, 2), generator=gen)
    targets = {n: torch.stack([model_gradient(model, params, truth[i], labels[i])[n] for i in range(2)])
               for n in params}
    x0 = torch.rand(2, 2, 3, 16, 16, generator=gen)
    cfg = AttackConfig(objective=objective, iterations=20, lr=0.05, signed=False)
    lo, hi = torch.zeros(3, 1, 1), torch.ones(3, 1, 1)
    on = lambda p: {n: t.cuda() for n, t in p.items()}  # noqa: E731
    cpu, cpu_values = reconstruct(model, one_round(params), labels, targets, x0, cfg=cfg, box=(lo, hi))
    gpu, gpu_values = reconstruct(model.cuda(), on(one_round(params)), labels.cuda(), on(targets), x0.cuda(),
                                  cfg=cfg, box=(lo.cuda(), hi.cuda()))
    assert gpu.is_cuda and gpu_values.is_cuda
    assert torch.allclose(gpu.cpu(), cpu, atol=1e-4)
    assert torch.allclose(gpu_values.cpu(), cpu_values, rtol=1e-4, atol=1e-6)
