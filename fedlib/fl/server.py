"""Server update W^{t+1} = W^t − γ_s V^t, with optional server momentum."""

from __future__ import annotations

from typing import Literal

import torch
from torch import Tensor

from fedlib.fl.component import Component


class ServerOptimizer(Component):
    """Apply the global update G^t to the global model.

    ``momentum=0``: W^{t+1} = W^t − γ_s G^t (FedAvg with γ_s = 1, thesis §2.1.2 Step 3).
    ``style="ema"``: V^t = β V^{t−1} + (1 − β) G^t (thesis eq. 3.6, "Global-MGD", V^0 = 0);
    ``style="heavy_ball"``: V^t = β V^{t−1} + G^t (FedAvgM). Then W^{t+1} = W^t − γ_s V^t (eq. 3.7).
    """

    def __init__(self, lr: float = 1.0, momentum: float = 0.0,
                 style: Literal["ema", "heavy_ball"] = "ema") -> None:
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr!r}")
        if not 0 <= momentum < 1:
            raise ValueError(f"momentum must be in [0, 1), got {momentum!r}")
        if style not in ("ema", "heavy_ball"):
            raise ValueError(f"style must be 'ema' or 'heavy_ball', got {style!r}")
        self.lr, self.momentum, self.style = float(lr), float(momentum), style
        self.velocity: Tensor | None = None

    def step(self, params: Tensor, update: Tensor) -> Tensor:
        """The new global parameters (``params`` is not modified)."""
        if self.momentum == 0:
            return params - self.lr * update
        if self.velocity is None:
            self.velocity = torch.zeros_like(update)
        damp = 1.0 - self.momentum if self.style == "ema" else 1.0
        self.velocity = self.momentum * self.velocity + damp * update
        return params - self.lr * self.velocity

    def reset(self) -> None:
        self.velocity = None

    def state_dict(self) -> dict:
        return {"velocity": self.velocity}

    def load_state_dict(self, state: dict) -> None:
        self.velocity = state["velocity"]
