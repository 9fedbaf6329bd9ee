"""Reconstruction attacks on shared gradients and the metrics that score them (Weng's thesis ch. 4)."""

from fedlib.attacks.inversion import (
    AttackConfig,
    attack_objective,
    gradient_cosine_distance,
    gradient_euclidean_distance,
    mlp_attack_objective,
    mlp_layer_names,
    model_gradient,
    reconstruct,
    recover_label,
    squared_norm,
    total_variation,
)
from fedlib.attacks.metrics import (
    cosine_similarity,
    euclidean_distance,
    evaluator_similarity,
    leakage_probability,
    leakage_scores,
    psnr,
    ssim,
)

__all__ = [
    "AttackConfig", "attack_objective", "gradient_cosine_distance", "gradient_euclidean_distance",
    "mlp_attack_objective", "mlp_layer_names", "model_gradient", "reconstruct", "recover_label", "squared_norm",
    "total_variation",
    "cosine_similarity", "euclidean_distance", "evaluator_similarity", "leakage_probability", "leakage_scores",
    "psnr", "ssim",
]
