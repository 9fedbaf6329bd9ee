import math

import pytest
import torch

from fedlib.privacy import (
    RunningMedian,
    aggregate_noise_std,
    classic_gaussian_std,
    clip_by_norm,
    clip_per_layer,
    clip_rows,
    gaussian_noise,
    laplace_noise,
    laplace_scale,
    median_clip_rows,
    top_k,
    top_k_count,
)
from fedlib.rng import make_generator

G = lambda s=0: make_generator(s, "privacy-test")  # noqa: E731


def test_clip_by_norm_scales_only_large_updates():
    x = torch.tensor([3.0, 4.0])  # norm 5
    assert torch.allclose(clip_by_norm(x, 1.0), x / 5)
    assert torch.equal(clip_by_norm(x, 10.0), x)
    assert torch.linalg.vector_norm(clip_by_norm(torch.randn(1000, generator=G()), 2.5)) <= 2.5 + 1e-5


def test_clip_rows_and_median_clip_eq_2_27():
    rows = torch.diag(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    clipped, bound = median_clip_rows(rows)
    assert bound == 3.0
    assert torch.allclose(torch.linalg.vector_norm(clipped, dim=1), torch.tensor([1.0, 2.0, 3.0, 3.0, 3.0]))
    assert torch.allclose(torch.linalg.vector_norm(clip_rows(rows, torch.tensor([1.0, 1, 1, 1, 10])), dim=1),
                          torch.tensor([1.0, 1, 1, 1, 5]))


def test_clip_per_layer():
    x = torch.tensor([3.0, 4.0, 0.6, 0.8])
    out = clip_per_layer(x, [slice(0, 2), slice(2, 4)], [1.0, 2.0])
    assert torch.allclose(out, torch.tensor([0.6, 0.8, 0.6, 0.8]))
    with pytest.raises(ValueError, match="one entry per layer"):
        clip_per_layer(x, [slice(0, 2), slice(2, 4)], [1.0])


def test_running_median_first_call_is_the_current_norm():
    med = RunningMedian()
    assert torch.equal(med.observe(7, torch.tensor([2.0])), torch.tensor([2.0]))
    med.observe(7, torch.tensor([4.0]))
    assert float(med.observe(7, torch.tensor([10.0]))[0]) == 4.0
    restored = RunningMedian()
    restored.load_state_dict(med.state_dict())
    assert float(restored.observe(7, torch.tensor([0.0]))[0]) == float(med.observe(7, torch.tensor([0.0]))[0])


def test_gaussian_noise_std_and_reproducibility():
    x = gaussian_noise((400_000,), 2.5, generator=G())
    assert abs(float(x.mean())) < 0.02
    assert abs(float(x.std()) / 2.5 - 1) < 0.01
    assert torch.equal(x, gaussian_noise((400_000,), 2.5, generator=G()))
    assert not torch.equal(x, gaussian_noise((400_000,), 2.5, generator=G(1)))


def test_laplace_noise_moments():
    b = 0.7
    x = laplace_noise((400_000,), b, generator=G()).double()
    assert abs(float(x.mean())) < 0.01
    assert abs(float(x.var()) / (2 * b * b) - 1) < 0.02  # Var Lap(b) = 2 b^2
    assert abs(float(x.abs().mean()) / b - 1) < 0.01  # E|x| = b
    assert laplace_scale(2.0, 0.5) == 4.0


def test_classic_gaussian_calibration():
    assert classic_gaussian_std(1.0, 0.5, 1e-5) == pytest.approx(math.sqrt(2 * math.log(1.25e5)) / 0.5)
    assert classic_gaussian_std(3.0, 0.5, 1e-5) == pytest.approx(3 * classic_gaussian_std(1.0, 0.5, 1e-5))
    with pytest.raises(ValueError, match="epsilon must be in \\(0, 1\\)"):
        classic_gaussian_std(1.0, 2.0, 1e-5)
    with pytest.raises(ValueError, match="delta"):
        classic_gaussian_std(1.0, 0.5, 0.0)


def test_aggregate_noise_ldp_is_sqrt_m_times_cdp():
    assert aggregate_noise_std(1.0, 2.0, 100, local=False) == pytest.approx(0.02)
    assert aggregate_noise_std(1.0, 2.0, 100, local=True) == pytest.approx(0.2)


def test_top_k_keeps_the_largest_magnitudes():
    x = torch.tensor([0.1, -5.0, 0.3, 4.0, -0.2, 0.0, 1.0, -2.0, 0.05, 0.01])
    sparse, idx = top_k(x, 0.3)
    assert sorted(idx.tolist()) == [1, 3, 7]
    assert torch.equal(sparse, torch.tensor([0, -5.0, 0, 4.0, 0, 0, 0, -2.0, 0, 0]))
    assert top_k_count(199_210, 0.1) == 19_921 and top_k_count(5, 0.01) == 1
    assert torch.equal(top_k(x, 1.0)[0], x)
    with pytest.raises(ValueError, match="rate"):
        top_k(x, 0.0)


@pytest.mark.parametrize("call,match", [
    (lambda: clip_by_norm(torch.ones(3), 0.0), "bound"),
    (lambda: gaussian_noise((3,), -1.0, generator=G()), "std"),
    (lambda: laplace_noise((3,), -1.0, generator=G()), "scale"),
    (lambda: aggregate_noise_std(1.0, 1.0, 0, local=True), "clients_per_round"),
])
def test_bad_inputs(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_noise_norm_ratio_matches_drawn_noise():
    from fedlib.privacy import noise_norm_ratio

    bound, n, sigma, d = 3.0, 600, 8.0, 100_000
    drawn = torch.linalg.vector_norm(gaussian_noise((d,), sigma * bound / n, generator=make_generator(5))) / bound
    assert noise_norm_ratio(sigma, d, n) == pytest.approx(float(drawn), rel=0.01)
    assert noise_norm_ratio(8.0, 156_800, 600) == pytest.approx(5.28, abs=0.01)  # spec card §6.1, MLP layer 1
    with pytest.raises(ValueError, match="dim"):
        noise_norm_ratio(1.0, 0)
