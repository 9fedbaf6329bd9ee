"""Clipping, noise mechanisms, sparsification and privacy accounting (no dependency on fedlib.fl).

Names are loaded on first use, so the accountant (NumPy/SciPy only) serves the command-line DP calculator without
importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "accountant": ("ClientLedger", "DEFAULT_ORDERS", "MOMENTS_ORDERS", "PrivacyBudget", "RDPAccountant",
                   "advanced_composition", "basic_composition", "calibrate_noise_multiplier", "compute_rdp",
                   "epsilon_curve", "rdp_to_delta", "rdp_to_epsilon"),
    "clipping": ("RunningMedian", "clip_by_norm", "clip_per_layer", "clip_rows", "layer_norms", "median_clip_rows"),
    "mechanisms": ("aggregate_noise_std", "classic_gaussian_std", "gaussian_noise", "laplace_noise", "laplace_scale",
                   "noise_norm_ratio"),
    "sparsify": ("top_k", "top_k_count"),
}
_MODULE = {name: module for module, names in _WHERE.items() for name in names}
__all__ = sorted(_MODULE)


def __getattr__(name: str) -> Any:
    if name not in _MODULE:
        raise AttributeError(f"module 'fedlib.privacy' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"fedlib.privacy.{_MODULE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
