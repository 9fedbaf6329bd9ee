"""The theory of the SIFU paper checked exactly where its assumptions hold.

* Theorem 1 (α ≤ Ψ) and Corollary 1 (the decayed bound under L2 regularisation and strong convexity): FedAvg with
  full participation and full-batch gradient descent on per-client least squares,
  f_i(θ) = ‖X_i θ − y_i‖² / (2 n_i) + λ‖θ‖²/2, whose Hessians X_iᵀX_i/n_i + λI are constant, so Assumption 1 (a
  locally quadratic loss) holds exactly. Two coupled runs, on I and on I_{−c}, give the true model sensitivity
  α(n, c) (eq. 9), which the bounded sensitivity Ψ(n, c) (eq. 8; eq. 11 with decay) must bound when
  η ≤ 1/(λ + λ_max(H_i)).
* Appendix A (fine-tuning does not unlearn): gradient descent on over-parameterised linear regression,
  f(θ) = ‖y − Xθ‖²/2 (eq. 21), has θ^N = A(X, N) θ^0 + η B(X, y, N) (eq. 23). Fine-tuning θ^N on the data without
  one sample and retraining from θ^0 on it differ by A(X_{−1}, Ñ)(θ^N − θ^0), which tends to the projection of
  θ^N − θ^0 on the null space of X_{−1}, not to 0. Eq. 24 as printed omits the −θ^0 and the η.

Everything is float64.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor


def least_squares_clients(num_clients: int, samples: int, dim: int, *, generator: torch.Generator,
                          heterogeneity: float = 1.0, noise: float = 0.1) -> tuple[Tensor, Tensor]:
    """Client data X (M, n, d) ~ N(0, 1) and y = X θ_i + noise with client optima θ_i = θ* + heterogeneity·N(0, I):
    heterogeneous clients, so removing one moves the model."""
    for name, value in (("num_clients", num_clients), ("samples", samples), ("dim", dim)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    x = torch.randn(num_clients, samples, dim, generator=generator, dtype=torch.float64)
    optima = torch.randn(dim, generator=generator, dtype=torch.float64) + heterogeneity * torch.randn(
        num_clients, dim, generator=generator, dtype=torch.float64)
    y = torch.einsum("mnd,md->mn", x, optima) + noise * torch.randn(num_clients, samples, generator=generator,
                                                                     dtype=torch.float64)
    return x, y


def curvature(x: Tensor, lam: float = 0.0) -> tuple[float, float]:
    """(μ, L): the smallest and largest eigenvalue over the clients' Hessians X_iᵀX_i/n_i + λI."""
    eig = torch.linalg.eigvalsh(torch.einsum("mnd,mne->mde", x, x) / x.shape[1])
    return float(eig.min()) + lam, float(eig.max()) + lam


def local_models(x: Tensor, y: Tensor, theta: Tensor, *, steps: int, lr: float, lam: float = 0.0) -> Tensor:
    """θ_i^{n+1}: K = ``steps`` full-batch gradient steps on f_i from θ^n for every client (M, d) (LocalWork
    with momentum 0 and B ≥ n_i)."""
    t = theta.reshape(1, -1).repeat(x.shape[0], 1)
    for _ in range(steps):
        residual = torch.einsum("mnd,md->mn", x, t) - y
        t = t - lr * (torch.einsum("mnd,mn->md", x, residual) / x.shape[1] + lam * t)
    return t


def fedavg_trajectory(x: Tensor, y: Tensor, clients: Sequence[int], theta0: Tensor, *, rounds: int, steps: int,
                      lr: float, lam: float = 0.0) -> Tensor:
    """θ^0..θ^N of FedAvg on ``clients`` with full participation, η_g = 1 and weights p_i = n_i/Σn (equal sizes:
    the mean), eq. 6: (rounds + 1, d)."""
    idx = list(clients)
    out = [theta0.double()]
    for _ in range(rounds):
        theta = out[-1]
        out.append(theta + (local_models(x[idx], y[idx], theta, steps=steps, lr=lr, lam=lam) - theta).mean(0))
    return torch.stack(out)


def model_sensitivity(with_c: Tensor, without_c: Tensor) -> Tensor:
    """α(n, c) = ‖FedAvg(I, n) − FedAvg(I_{−c}, n)‖₂ for n = 0..N (eq. 9), from the two trajectories."""
    return torch.linalg.vector_norm(with_c - without_c, dim=1)


def bounded_sensitivity(x: Tensor, y: Tensor, trajectory: Tensor, *, steps: int, lr: float, lam: float = 0.0,
                        decay: float = 1.0) -> Tensor:
    """Ψ(n, c) = Σ_{s<n} decay^{(n−1−s)K} ‖Δ(I, θ^s) − Δ(I_{−c}, θ^s)‖₂ for n = 0..N and every client c, (N + 1, M),
    along ``trajectory`` (the run on all clients I): eq. 8 with ``decay = 1``, eq. 11 of Corollary 1 with
    ``decay = 1 − η(λ + μ)``. Δ(I, θ) is the mean update of all clients (eq. 7), Δ(I_{−c}, θ) that of the others
    (weights q_i = p_i/(1 − p_c)), re-aggregated explicitly."""
    if not 0 < decay <= 1:
        raise ValueError(f"decay must be in (0, 1], got {decay!r}")
    m = x.shape[0]
    psi = [torch.zeros(m, dtype=torch.float64)]
    for theta in trajectory[:-1]:
        updates = local_models(x, y, theta, steps=steps, lr=lr, lam=lam) - theta
        total = updates.sum(0)
        without = (total - updates) / (m - 1)  # row c: the mean update of every client but c
        gap = torch.linalg.vector_norm(total / m - without, dim=1)
        psi.append(decay**steps * psi[-1] + gap)
    return torch.stack(psi)


def gd_operators(x: Tensor, y: Tensor, steps: int, lr: float) -> tuple[Tensor, Tensor]:
    """A(X, N) = (I − ηXᵀX)^N and B(X, y, N) = Σ_{n<N} (I − ηXᵀX)^n Xᵀy (eq. 23)."""
    step = torch.eye(x.shape[1], dtype=torch.float64) - lr * x.T @ x
    b = torch.zeros(x.shape[1], dtype=torch.float64)
    power = torch.eye(x.shape[1], dtype=torch.float64)
    for _ in range(steps):
        b = b + power @ (x.T @ y)
        power = step @ power
    return power, b


def gradient_descent(x: Tensor, y: Tensor, theta0: Tensor, *, steps: int, lr: float) -> Tensor:
    """``steps`` gradient steps θ ← θ − η Xᵀ(Xθ − y) on f of eq. 21 from θ^0."""
    theta = theta0.double()
    for _ in range(steps):
        theta = theta - lr * x.T @ (x @ theta - y)
    return theta


def finetune_gap(x: Tensor, y: Tensor, theta0: Tensor, *, drop: int, steps: int, finetune_steps: int, lr: float
                 ) -> dict[str, float]:
    """Appendix A for one removed sample ``drop``: ‖φ^Ñ − θ_{−1}^Ñ‖ measured by running gradient descent, beside
    the corrected closed form ‖A(X_{−1}, Ñ)(θ^N − θ^0)‖, eq. 24 as printed ‖A(X_{−1}, Ñ)A(X, N)θ^0 +
    A(X_{−1}, Ñ)B(X, y, N)‖ and its error against the measured difference, the limit ‖P_null(X_{−1})(θ^N − θ^0)‖
    the scale ‖θ^N − θ^0‖, and ‖θ^N − θ_{−1}^Ñ‖: how far the model that saw the sample is from the retrained one
    before fine-tuning (``before``)."""
    keep = [i for i in range(len(y)) if i != drop]
    x_, y_ = x[keep], y[keep]
    theta_n = gradient_descent(x, y, theta0, steps=steps, lr=lr)
    retrained = gradient_descent(x_, y_, theta0, steps=finetune_steps, lr=lr)
    measured = gradient_descent(x_, y_, theta_n, steps=finetune_steps, lr=lr) - retrained
    a_full, b_full = gd_operators(x, y, steps, lr)
    a_minus, _ = gd_operators(x_, y_, finetune_steps, lr)
    corrected = a_minus @ (theta_n - theta0)
    printed = a_minus @ a_full @ theta0 + a_minus @ b_full
    _, s, vh = torch.linalg.svd(x_, full_matrices=True)
    null = vh[int((s > 1e-10 * s.max()).sum()):]
    limit = null.T @ (null @ (theta_n - theta0))
    norm = float(torch.linalg.vector_norm(measured))
    return {"measured": norm, "corrected": float(torch.linalg.vector_norm(corrected)),
            "corrected_error": float(torch.linalg.vector_norm(corrected - measured)),
            "printed": float(torch.linalg.vector_norm(printed)),
            "printed_error": float(torch.linalg.vector_norm(printed - measured)),
            "limit": float(torch.linalg.vector_norm(limit)),
            "scale": float(torch.linalg.vector_norm(theta_n - theta0)),
            "before": float(torch.linalg.vector_norm(theta_n - retrained))}
