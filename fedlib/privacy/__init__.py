"""Clipping, noise mechanisms, sparsification and privacy accounting (no dependency on fedlib.fl)."""

from fedlib.privacy.accountant import (
    ClientLedger,
    DEFAULT_ORDERS,
    MOMENTS_ORDERS,
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
from fedlib.privacy.clipping import (
    RunningMedian,
    clip_by_norm,
    clip_per_layer,
    clip_rows,
    layer_norms,
    median_clip_rows,
)
from fedlib.privacy.mechanisms import (
    aggregate_noise_std,
    classic_gaussian_std,
    gaussian_noise,
    laplace_noise,
    laplace_scale,
    noise_norm_ratio,
)
from fedlib.privacy.sparsify import top_k, top_k_count

__all__ = [
    "ClientLedger",    "DEFAULT_ORDERS", "MOMENTS_ORDERS", "PrivacyBudget", "RDPAccountant", "advanced_composition",
    "basic_composition", "calibrate_noise_multiplier", "compute_rdp", "epsilon_curve", "rdp_to_delta",
    "rdp_to_epsilon", "RunningMedian", "clip_by_norm", "clip_per_layer", "clip_rows", "layer_norms",
    "median_clip_rows", "aggregate_noise_std", "classic_gaussian_std", "gaussian_noise", "laplace_noise",
    "noise_norm_ratio",
    "laplace_scale",
    "top_k", "top_k_count",
]
