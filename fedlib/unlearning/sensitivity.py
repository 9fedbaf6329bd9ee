"""SIFU's bounded sensitivity Ψ kept by the server of a running FedAvg federation, and the rollback it allows.

:func:`~fedlib.unlearning.stage.run_stage` tracks Ψ inside fedlib's own loop; a server driven by something
else (Flower, see :mod:`fedlib.flower`) records each round here instead. After round n with participants S_n,
every sampled client's Ψ grows by p_i/(1 − p_i) ‖θ_i^{n+1} − θ^{n+1}‖ (SIFU eq. 8 simplified by eqs.
43-45). A request to forget clients W is then served as IFU does (Alg. 2): roll back to T, the last round
with Ψ(T, W) ≤ Ψ* = εσ/c_δ (eqs. 13-14), perturb θ^T with N(0, σ² I) and retrain without W.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from fedlib.unlearning.sifu import Calibration, perturb, psi_star, restart_index
from fedlib.unlearning.stage import sensitivity_increment


class SensitivityLedger:
    """Ψ(n, i) for n = 0..rounds and every client, and the global models θ^n to roll back to.

    Args:
        init: θ^0.
        num_clients: M (columns of Ψ).
        members: ``|I|``, the number of clients trained on; the increment weight is 1/(``|I|`` − 1) (the paper's
            p_i/(1 − p_i) with p_i = 1/``|I|``), or 1/(``|S_n|`` − 1) with ``sampling_aware`` (ours).
        sampling_aware: weight by the realised participants instead.
    """

    def __init__(self, init: Tensor, num_clients: int, members: int, *, sampling_aware: bool = False) -> None:
        if members < 2:
            raise ValueError(f"members must be >= 2 (Ψ divides by |I| - 1), got {members!r}")
        self.num_clients = num_clients
        self.members = members
        self.sampling_aware = sampling_aware
        self.rows: list[Tensor] = [torch.zeros(num_clients, dtype=torch.float64)]
        self.models: list[Tensor] = [init.detach().clone()]

    @property
    def psi(self) -> Tensor:
        """Ψ as a (rounds + 1, M) float64 table."""
        return torch.stack(self.rows)

    def record(self, clients: Sequence[int], start: Tensor, updates: Tensor, new: Tensor) -> None:
        """Round n: participants ``clients``, θ^n = ``start``, their updates ∇W_i = θ^n − θ_i (m, d), θ^{n+1}."""
        if len(clients) < 2:
            raise ValueError(f"Ψ needs at least 2 participants per round, got {len(clients)}")
        weight = 1.0 / ((len(clients) if self.sampling_aware else self.members) - 1)
        row = self.rows[-1].clone()
        row[list(clients)] += sensitivity_increment(start - updates, new, weight)
        self.rows.append(row)
        self.models.append(new.detach().clone())

    def restart(self, forget: Sequence[int], *, sigma: float, epsilon: float, delta: float,
                generator: torch.Generator, calibration: Calibration = "classical") -> tuple[int, Tensor]:
        """(T, θ^T + N(0, σ² I)): where IFU restarts training without the clients ``forget`` (eqs. 13-14, Thm 2)."""
        if not forget or not all(0 <= int(i) < self.num_clients for i in forget):
            raise ValueError(f"forget must be a non-empty list of client ids in [0, {self.num_clients}), "
                             f"got {forget!r}")
        column = self.psi[:, [int(i) for i in forget]].max(1).values
        t = restart_index(column, psi_star(sigma, epsilon, delta, calibration))
        return t, perturb(self.models[t], sigma, generator)
