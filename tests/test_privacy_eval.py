"""The UDP client of thesis ch. 4 and the privacy-evaluation chapter (spec card ch4 §9 checks 1-3, 10, 13, 15)."""

import dataclasses
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from fedlib.algorithms.udp import privatize, single_end_trajectory
from fedlib.attacks import AttackConfig
from fedlib.privacy import RunningMedian


def grads(seed: int = 0, scale: float = 1.0) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {"w": scale * torch.randn(30, 20, generator=g), "b": scale * torch.randn(30, generator=g)}


def test_check1_clipping_flat_and_per_layer():
    g = grads(scale=5.0)
    zero = dict(noise_multiplier=0.0, num_samples=1, generator=torch.Generator())
    flat = privatize(g, bound=2.0, mode="flat", **zero)
    assert float(torch.cat([t.flatten() for t in flat.values()]).norm()) == pytest.approx(2.0, rel=1e-5)
    per = privatize(g, bound=2.0, mode="per_layer", **zero)
    assert all(float(t.norm()) == pytest.approx(2.0, rel=1e-5) for t in per.values())
    small = grads(scale=1e-3)
    same = privatize(small, bound=2.0, mode="flat", **zero)
    assert all(torch.equal(same[k], small[k]) for k in small)  # inside the ball: unchanged, bit for bit


def test_check2_noise_std_is_sigma_c_over_n():
    g = {"w": torch.zeros(1000, 1000)}
    out = privatize(g, bound=2.0, noise_multiplier=0.3, num_samples=100, generator=torch.Generator().manual_seed(0))
    assert float(out["w"].std()) == pytest.approx(0.006, rel=0.02) and abs(float(out["w"].mean())) < 1e-4
    g = grads()
    exact = privatize(g, bound=100.0, noise_multiplier=0.0, num_samples=7, generator=torch.Generator())
    assert all(torch.equal(exact[k], g[k]) for k in g)


def test_check10_median_clipping_uses_the_running_median_of_each_layer():
    median = RunningMedian()
    zero = dict(noise_multiplier=0.0, num_samples=1, generator=torch.Generator(), mode="median", median=median)
    for norm in (3.0, 1.0, 2.0):
        out = privatize({"w": torch.tensor([norm, 0.0])}, bound=1.0, **zero)
    assert float(out["w"][0]) == 2.0  # median of [3, 1, 2]
    two = RunningMedian()
    for norm in (3.0, 1.0):
        out = privatize({"w": torch.tensor([norm, 0.0])}, bound=1.0, noise_multiplier=0.0, num_samples=1,
                        generator=torch.Generator(), mode="median", median=two)
    assert float(out["w"][0]) == 1.0  # our convention: torch's lower median of an even count (the card: mean, 2)
    with pytest.raises(ValueError, match="median"):
        privatize(grads(), bound=1.0, noise_multiplier=0.0, num_samples=1, generator=torch.Generator(), mode="median")
    with pytest.raises(ValueError, match="mode"):
        privatize(grads(), bound=1.0, noise_multiplier=0.0, num_samples=1, generator=torch.Generator(), mode="l1")


def test_single_end_trajectory_records_starting_weights_and_clean_gradients():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(12, 5))
    start = {k: v.detach().clone() for k, v in model.named_parameters()}
    x, y = torch.rand(6, 3, 2, 2), torch.arange(6) % 5
    expected = torch.autograd.grad(F.cross_entropy(model(x), y), list(model.parameters()))
    traj = single_end_trajectory(model, x, y, rounds=2, batch_size=3, generator=torch.Generator().manual_seed(1))
    assert all(torch.equal(traj.weights[0][k], start[k]) for k in start)
    assert torch.allclose(traj.grads[0]["1.weight"], expected[0])
    assert not torch.equal(traj.weights[1]["1.weight"], start["1.weight"])  # one Adam epoch moved the model


def test_check13_epsilon_at_sigma_one_and_monotone():
    from fedlib.experiments.privacy_eval import QUICK, epsilon_of

    assert 7.5 <= epsilon_of(1.0, QUICK) <= 9.5
    eps = [epsilon_of(s, QUICK) for s in (0.3, 0.5, 1.0, 2.0)]
    assert all(a > b for a, b in zip(eps, eps[1:]))


def test_sigma_scale_matches_the_spec_formula():
    from fedlib.experiments.privacy_eval import DOC_PARAMETERS, sigma_scale

    assert sigma_scale(100, DOC_PARAMETERS) == 1.0
    assert sigma_scale(8, 943_972) == pytest.approx(0.08 * math.sqrt(5_348_452 / 943_972))


def test_tiny_chapter_run_writes_the_tables_and_images(tmp_path):
    from fedlib.experiments.privacy_eval import QUICK, Setting, run
    from fedlib.results import load_results

    tiny = dataclasses.replace(QUICK, images=4, hidden=(32,), batch_size=2, rounds=2, evaluator_epochs=1,
                               attack=AttackConfig(iterations=3, lr=0.05), fl_clients=2, fl_images=4, fl_epochs=1)
    res = run(tiny, seed=0)
    assert [(r["setting"], r["C"]) for r in res.tables["T4.4"]["rows"]] == [("FL", 0.1), ("FL", 1.0), ("SE", 0.1),
                                                                           ("SE", 1.0)]
    for table in ("T4.1", "T4.3", "T4.4", "T4.5"):
        rows = res.tables[table]["rows"]
        assert rows and all("paper" in r and r["ours"] is not None for r in rows)
    assert {c["id"] for c in res.claims} >= {"psnr_falls_with_noise", "larger_c_leaks_more",
                                             "all_round_beats_one_round"}
    res.save(tmp_path)
    back = load_results("privacy_eval", "quick", tmp_path)
    assert back.images["truth"].shape == (4, 32, 32, 3)
    assert Setting(1.0, 0.1).name in back.images  # round-1 reconstructions are kept for the image grids
    for c, sigma in tiny.curves:  # check 15: at round 1 the all-round attack is the one-round attack
        one = back.series[f"loss/C = {c:g}, σ = {sigma:g}/one-round"]
        every = back.series[f"loss/C = {c:g}, σ = {sigma:g}/all-round"]
        assert one["y"][0] == pytest.approx(every["y"][0], rel=1e-4)


def test_chapter_bad_input_names_the_parameter():
    from fedlib.experiments.privacy_eval import QUICK, run

    with pytest.raises(ValueError, match="images"):
        run(dataclasses.replace(QUICK, images=101))
    with pytest.raises(ValueError, match="download the full CIFAR-100"):  # the offline subset has 1,117 images
        run(dataclasses.replace(QUICK, fl_clients=40, fl_images=100, attack=AttackConfig(iterations=1),
                                evaluator_epochs=1, rounds=1))


def test_check14_udp_fl_without_noise_and_clipping_is_fedavg_and_noise_std_is_sigma_c_over_n():
    from fedlib.algorithms.udp import udp_fl
    from fedlib.data.datasets import Split
    from fedlib.fl import FLConfig, LocalSGD, run_federated

    def model():
        torch.manual_seed(0)
        return nn.Sequential(nn.Flatten(), nn.Linear(300, 50), nn.ReLU(), nn.Linear(50, 5))

    gen = torch.Generator().manual_seed(4)
    train = Split(torch.rand(16, 3, 10, 10, generator=gen), torch.arange(16) % 5, 5)
    clients = [torch.arange(0, 8), torch.arange(8, 16)]
    cfg = FLConfig(rounds=2, clients_per_round=2, local=LocalSGD(1, 4), lr=0.1, weighting="uniform", seed=3)
    fedavg = run_federated(model(), train, clients, None, cfg, history="updates")
    quiet = run_federated(model(), train, clients, None, cfg, udp_fl(1e6, 0.0), history="updates")
    assert torch.equal(quiet.params, fedavg.params)
    noisy = run_federated(model(), train, clients, None, cfg, udp_fl(1e6, 2e-6), history="updates")
    noise = noisy.history.updates[0][0][:15000] - fedavg.history.updates[0][0][:15000]  # round 1: same W^0
    assert float(noise.std()) == pytest.approx(2e-6 * 1e6 / 8, rel=0.05)  # σC/n with n = 8
