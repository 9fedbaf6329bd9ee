"""How much an attack recovered (Weng's thesis §4.2.3-4.2.4): PSNR, cosine similarity, Euclidean distance, SSIM,
and the chapter's leakage probability P(pl) (eq. 4.3).

Images are compared in pixel space, values in [0, 1], batches of shape (N, C, H, W); every metric returns one
value per image (average them yourself, as the thesis's tables do).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor


def _check_pair(x: Tensor, ref: Tensor) -> None:
    if x.shape != ref.shape or x.ndim != 4:
        raise ValueError(f"x and ref must both have shape (N, C, H, W); got {tuple(x.shape)} and {tuple(ref.shape)}")


def psnr(x: Tensor, ref: Tensor, *, data_range: float = 1.0) -> Tensor:
    """Peak signal-to-noise ratio per image, 10 log10(range² / MSE) in dB (+inf for identical images)."""
    _check_pair(x, ref)
    mse = (x - ref).pow(2).flatten(1).mean(1)
    return 10 * torch.log10(data_range**2 / mse)


def _standardise(x: Tensor) -> Tensor:
    flat = x.flatten(1)
    return (flat - flat.mean(1, keepdim=True)) / flat.std(1, keepdim=True).clamp_min(1e-12)


def cosine_similarity(x: Tensor, ref: Tensor) -> Tensor:
    """Cosine similarity per image of the standardised (zero-mean, unit-variance) flattened images (Table 4.1)."""
    _check_pair(x, ref)
    return F.cosine_similarity(_standardise(x), _standardise(ref), dim=1)


def euclidean_distance(x: Tensor, ref: Tensor) -> Tensor:
    """Euclidean distance per image of the standardised flattened images (Table 4.1; ≈ √(2d) for unrelated
    images, d the number of pixels × channels)."""
    _check_pair(x, ref)
    return (_standardise(x) - _standardise(ref)).norm(dim=1)


def _gaussian_window(size: int, sigma: float) -> Tensor:
    coords = torch.arange(size, dtype=torch.float64) - (size - 1) / 2
    g = torch.exp(-coords**2 / (2 * sigma**2))
    return g / g.sum()


def ssim(x: Tensor, ref: Tensor, *, data_range: float = 1.0, window: int = 11, sigma: float = 1.5) -> Tensor:
    """Structural similarity per image (Wang et al. 2004): Gaussian window 11 / σ 1.5, K1 = 0.01, K2 = 0.03,
    valid windows only, averaged over positions and channels."""
    _check_pair(x, ref)
    if min(x.shape[-2:]) < window:
        raise ValueError(f"images must be at least {window}×{window} for the SSIM window, got {tuple(x.shape[-2:])}")
    x, ref = x.double(), ref.double()
    channels = x.shape[1]
    g = _gaussian_window(window, sigma)
    kernel = (g[:, None] * g[None, :]).expand(channels, 1, window, window).contiguous()

    def blur(t: Tensor) -> Tensor:
        return F.conv2d(t, kernel, groups=channels)

    mu_x, mu_r = blur(x), blur(ref)
    var_x = blur(x * x) - mu_x**2
    var_r = blur(ref * ref) - mu_r**2
    cov = blur(x * ref) - mu_x * mu_r
    c1, c2 = (0.01 * data_range) ** 2, (0.03 * data_range) ** 2
    s = ((2 * mu_x * mu_r + c1) * (2 * cov + c2)) / ((mu_x**2 + mu_r**2 + c1) * (var_x + var_r + c2))
    return s.flatten(1).mean(1).float()


def leakage_scores(cs: Tensor, ed: Tensor, *, total_noise: float, alpha2: float = 0.5) -> Tensor:
    """pl_j = α2 (CS_j − avg(CS) − ρ_cs) − (1 − α2)(ED_j − avg(ED) + ρ_ed), ρ = min(σC, 0.1) (eq. 4.3).

    ``cs``/``ed``: per image, the cosine similarity and normalised Euclidean distance between the evaluators'
    outputs on the reconstruction and on the true image. α2 is not stated in the thesis; 0.5 is our choice.
    """
    if cs.shape != ed.shape or cs.ndim != 1:
        raise ValueError(f"cs and ed must be 1-d of equal length, got {tuple(cs.shape)} and {tuple(ed.shape)}")
    if not 0 <= alpha2 <= 1:
        raise ValueError(f"alpha2 must be in [0, 1], got {alpha2!r}")
    if not total_noise >= 0:
        raise ValueError(f"total_noise (σC) must be >= 0, got {total_noise!r}")
    rho = min(total_noise, 0.1)
    return alpha2 * (cs - cs.mean() - rho) - (1 - alpha2) * (ed - ed.mean() + rho)


def leakage_probability(cs: Tensor, ed: Tensor, *, total_noise: float, alpha2: float = 0.5) -> float:
    """P(pl): the fraction of images with pl_j > 0 (§4.2.4, eq. 4.3)."""
    return float((leakage_scores(cs, ed, total_noise=total_noise, alpha2=alpha2) > 0).float().mean())


@torch.no_grad()
def evaluator_similarity(evaluators: list[torch.nn.Module], x: Tensor, ref: Tensor) -> tuple[Tensor, Tensor]:
    """CS_j and ED_j of §4.2.4: the evaluators' softmax outputs are averaged, then compared per image; ED is
    divided by √2, the largest distance between two probability vectors, so it lies in [0, 1] (our choice:
    the normalisation is not stated). ``x`` and ``ref`` are in the evaluators' input space."""
    if not evaluators:
        raise ValueError("evaluators must hold at least one model")

    def outputs(t: Tensor) -> Tensor:
        return torch.stack([F.softmax(m.eval()(t), dim=1) for m in evaluators]).mean(0)

    p, q = outputs(x), outputs(ref)
    return F.cosine_similarity(p, q, dim=1), (p - q).norm(dim=1) / math.sqrt(2)
