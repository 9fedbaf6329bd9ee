"""FLZ (Wang 2024, "Learning to Unlearn"): a server-side contribution model, contribution-weighted aggregation, and
unlearning by dropping a client's share (eqs. 3.5-3.13).

Every round the server feeds the concatenated client parameters θ = vec(θ_1..θ_N) to an encoder-decoder: the
outer encoder gives each client a latent contribution z_k ∈ R^d and a support set s^k; per-client inner encoders
map all z to t_k and back to ẑ_k; the outer decoder rebuilds θ̂ from (ẑ, s). The loss (eq. 3.11) is the relative
reconstruction error of θ and z plus cosine "orthogonality" regularisers weighted by the temperatures t1, t2. The
global model is Σ_k π_k θ̂_k / Σ_k π_k with π_k = Σ_i ẑ_{k,i} (eq. 3.12); unlearning client u renormalises over the
others (eq. 3.13), with no data and no retraining.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from fedlib.rng import derive_seed, make_generator
from fedlib.unlearning.stage import Federation

logger = logging.getLogger(__name__)

RegForm = Literal["cos", "sq"]


@dataclass(frozen=True)
class ContributionConfig:
    """The contribution model and its training schedule ("Reference presets").

    Attributes:
        z_dim: d, the size of each client's latent contribution z_k.
        hidden: H, the hidden width of the outer and inner encoders/decoders.
        t_dim: d_t, the size of the inner latent t_k (None: H).
        theta_out_relu: ReLU on the reconstructed parameters θ̂ (the code's choice; never negative weights).
        steps: K, optimiser steps per round on the memory (not stated; the code: 1).
        memory: rounds kept as training rows (None: all; the code: 1).
        lr: Adam's learning rate (the code: 1e-3).
        t1, t2: the temperatures multiplying the θ- and t-regularisers (eq. 3.11).
        reg_form: ``"cos"`` (eqs. 3.9b/3.10, −1 + mean cos) or ``"sq"`` (eq. 3.9a, −mean (1 − cos)²).
        theta_target: the θ-regulariser compares θ̃^k_j with the input θ_k (eq. 3.6) or with θ̂_k (the code).
        normalised: ℓ_rec = ‖x − x̂‖²/‖x‖² (eqs. 3.7-3.8) or the code's plain sum of squares.
        zhat_act: ``"relu"`` on ẑ (the code; π_k can die at exactly 0) or ``"softplus"`` (ours:
            every client keeps a positive contribution).
    """

    z_dim: int = 5
    hidden: int = 50
    t_dim: int | None = None
    theta_out_relu: bool = False
    steps: int = 50
    memory: int | None = None
    lr: float = 1e-3
    t1: float = 1.0
    t2: float = 1.0
    reg_form: RegForm = "cos"
    theta_target: Literal["input", "recon"] = "input"
    normalised: bool = True
    zhat_act: Literal["relu", "softplus"] = "relu"

    def __post_init__(self) -> None:
        for name in ("z_dim", "hidden", "steps"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.memory is not None and self.memory < 1:
            raise ValueError(f"memory must be a positive int or None, got {self.memory!r}")
        if self.t1 < 0 or self.t2 < 0:
            raise ValueError(f"temperatures must be >= 0, got t1={self.t1!r}, t2={self.t2!r}")
        if self.reg_form not in ("cos", "sq"):
            raise ValueError(f"reg_form must be 'cos' or 'sq', got {self.reg_form!r}")
        if self.zhat_act not in ("relu", "softplus"):
            raise ValueError(f"zhat_act must be 'relu' or 'softplus', got {self.zhat_act!r}")
        if self.theta_target not in ("input", "recon"):
            raise ValueError(f"theta_target must be 'input' or 'recon', got {self.theta_target!r}")


#: the thesis's settings (d = 5, H = 50) and the likely released code's (d = 20, H = 784, d_t = 20, K = 1, one
#: memory row, θ-regulariser on θ̂, squared unnormalised losses) — with that code's bugs fixed: parameters are
#: (un)flattened in one order, the inner encoders/decoders are registered and trained, and θ̂ has no ReLU.
PRESETS = {"thesis": ContributionConfig(),
           "ltu_code": ContributionConfig(z_dim=20, hidden=784, t_dim=20, steps=1, memory=1, reg_form="sq",
                                          theta_target="recon", normalised=False)}


class ContributionModel(nn.Module):
    """The encoder-decoder of eq. 3.5 / Fig. 3.2 for N clients with P parameters each."""

    def __init__(self, num_clients: int, num_params: int, cfg: ContributionConfig) -> None:
        super().__init__()
        if num_clients < 2:
            raise ValueError(f"num_clients must be >= 2, got {num_clients!r}")
        n, d, h = num_clients, cfg.z_dim, cfg.hidden
        dt = cfg.t_dim or h
        self.n, self.d, self.p = n, d, num_params
        self.encoder = nn.Sequential(nn.Linear(n * num_params, h), nn.ReLU(), nn.Linear(h, n * d + n * (n - 1) * d),
                                     nn.ReLU())
        self.inner_enc = nn.ModuleList([nn.Sequential(nn.Linear(n * d, dt), nn.ReLU()) for _ in range(n)])
        act = nn.ReLU if cfg.zhat_act == "relu" else nn.Softplus
        self.inner_dec = nn.ModuleList([nn.Sequential(nn.Linear(dt, d), act()) for _ in range(n)])
        out = [nn.Linear(n * d + n * (n - 1) * d, h), nn.ReLU(), nn.Linear(h, n * num_params)]
        self.decoder = nn.Sequential(*out, *([nn.ReLU()] if cfg.theta_out_relu else []))

    def forward(self, theta: Tensor) -> dict[str, Tensor]:
        """θ (B, N·P) → z (B, N, d), s (B, N, N−1, d), t (B, N, d_t), ẑ (B, N, d), θ̂ (B, N·P) (eq. 3.5)."""
        b, n, d = theta.shape[0], self.n, self.d
        code = self.encoder(theta)
        z = code[:, : n * d].reshape(b, n, d)
        s = code[:, n * d:].reshape(b, n, n - 1, d)
        flat_z = z.reshape(b, n * d)
        t = torch.stack([enc(flat_z) for enc in self.inner_enc], dim=1)
        zhat = torch.stack([dec(t[:, k]) for k, dec in enumerate(self.inner_dec)], dim=1)
        theta_hat = self.decoder(torch.cat([zhat.reshape(b, n * d), s.reshape(b, -1)], dim=1))
        return {"z": z, "s": s, "t": t, "zhat": zhat, "theta_hat": theta_hat}


def reconstruction_loss(x: Tensor, x_hat: Tensor, *, normalised: bool = True) -> Tensor:
    """ℓ_rec(x, x̂) = ‖x − x̂‖²/‖x‖² per row, averaged over rows (eqs. 3.7-3.8); plain ‖x − x̂‖² if not normalised."""
    x, x_hat = x.reshape(len(x), -1), x_hat.reshape(len(x_hat), -1)
    err = (x - x_hat).pow(2).sum(1)
    return (err / x.pow(2).sum(1).clamp_min(1e-12) if normalised else err).mean()


def orthogonality_loss(cosines: Tensor, form: RegForm = "cos") -> Tensor:
    """ℓ_reg from the cosines cos∠(x, y_j) to the other clients (last dimension): −1 + mean_j cos (eqs. 3.9b,
    3.10) or −mean_j (1 − cos)² (eq. 3.9a; not equal to 3.9b)."""
    if form == "cos":
        return -1.0 + cosines.mean(-1)
    if form == "sq":
        return -(1.0 - cosines).pow(2).mean(-1)
    raise ValueError(f"form must be 'cos' or 'sq', got {form!r}")


def projected_cosines(target: Tensor, theta_hat: Tensor, zhat: Tensor, s: Tensor) -> Tensor:
    """cos∠(target_k, θ̃^k_j) for θ̃^k_j = (ẑ_k · s^k_j) θ̂_k (eq. 3.6) without building θ̃ (B, N, N−1, P): a scalar
    multiple of θ̂_k, so the cosine is sign(ẑ_k · s^k_j) · cos∠(target_k, θ̂_k) (0 when the scalar is 0). Shapes:
    target and θ̂ (B, N, P), ẑ (B, N, d), s (B, N, N−1, d) → (B, N, N−1)."""
    scale = torch.einsum("bkd,bkjd->bkj", zhat, s)
    base = F.cosine_similarity(target, theta_hat, dim=-1, eps=1e-12)
    return torch.sign(scale) * base.unsqueeze(-1)


def pairwise_cosines(t: Tensor) -> Tensor:
    """cos∠(t_k, t_j) for j ≠ k: (B, N, d_t) → (B, N, N−1)."""
    n = t.shape[1]
    cos = F.cosine_similarity(t.unsqueeze(2), t.unsqueeze(1), dim=-1, eps=1e-12)
    mask = ~torch.eye(n, dtype=torch.bool)
    return cos[:, mask].reshape(t.shape[0], n, n - 1)


def flz_loss(theta: Tensor, out: dict[str, Tensor], cfg: ContributionConfig) -> tuple[Tensor, dict[str, float]]:
    """Eq. 3.11 for N clients: ℓ_rec(θ, θ̂) + ℓ_rec(z, ẑ) + (t1/N) Σ_k ℓ_reg(θ_k, {θ̃^k_j}) + (t2/N) Σ_k ℓ_reg(t_k,
    {t_j}) (the thesis writes N = 3: 1/3 and, inside ℓ_reg, 1/2). No gradient is stopped: z is on both sides.

    Returns:
        The loss and its terms (floats, for logging).
    """
    b, n = out["z"].shape[:2]
    rec_theta = reconstruction_loss(theta, out["theta_hat"], normalised=cfg.normalised)
    rec_z = reconstruction_loss(out["z"], out["zhat"], normalised=cfg.normalised)
    theta_hat = out["theta_hat"].reshape(b, n, -1)
    target = theta.reshape(b, n, -1) if cfg.theta_target == "input" else theta_hat
    reg_theta = orthogonality_loss(projected_cosines(target, theta_hat, out["zhat"], out["s"]), cfg.reg_form).mean()
    reg_t = orthogonality_loss(pairwise_cosines(out["t"]), cfg.reg_form).mean()
    loss = rec_theta + rec_z + cfg.t1 * reg_theta + cfg.t2 * reg_t
    terms = {"rec_theta": rec_theta, "rec_z": rec_z, "reg_theta": reg_theta, "reg_t": reg_t}
    return loss, {k: float(v.detach()) for k, v in terms.items()}


def contributions(zhat: Tensor) -> Tensor:
    """π_k = Σ_i ẑ_{k,i}, client k's scalar contribution (Def. 4, eq. 3.12); ẑ (N, d) → (N,)."""
    return zhat.sum(-1)


def contribution_weights(pi: Tensor, keep: Sequence[int] | None = None, *, warn: bool = True) -> Tensor:
    """π_k / Σ_{j∈keep} π_j over the kept clients (zero elsewhere). If every kept π is 0 (dead contributions)
    the weights fall back to uniform over the kept clients; both cases are logged unless
    ``warn=False`` (:func:`flz` reports them once per run)."""
    keep = list(range(len(pi))) if keep is None else list(keep)
    if not keep:
        raise ValueError("at least one client must be kept")
    w = torch.zeros_like(pi)
    total = float(pi[keep].sum())
    if total > 0:
        w[keep] = pi[keep] / total
    else:
        w[keep] = 1.0 / len(keep)
    dead = [k for k in keep if float(pi[k]) == 0.0]
    if warn and total <= 0:
        logger.warning("all kept contributions π are 0; aggregating with uniform weights")
    elif warn and dead:
        logger.warning("clients %s have contribution π = 0 and are left out of the aggregate", dead)
    return w


def aggregate(theta_hat: Tensor, pi: Tensor, *, warn: bool = True) -> Tensor:
    """θ̄ = Σ_k π_k θ̂_k / Σ_k π_k (eq. 3.12); θ̂ (N, P)."""
    return contribution_weights(pi, warn=warn) @ theta_hat


def unlearn(theta_hat: Tensor, pi: Tensor, forget: Sequence[int], *, warn: bool = True) -> Tensor:
    """θ̄_{\\U} = Σ_{k∉U} π_k θ̂_k / Σ_{k∉U} π_k (eq. 3.13): FLZ's unlearning, from the last round's θ̂ and π only."""
    n = len(pi)
    bad = [u for u in forget if not 0 <= u < n]
    if bad:
        raise ValueError(f"forget must hold client indices in [0, {n}), got {bad}")
    return contribution_weights(pi, [k for k in range(n) if k not in set(forget)], warn=warn) @ theta_hat


class ContributionTrainer:
    """The server's contribution model, its Adam optimiser and its memory of past rounds (Alg. 1)."""

    def __init__(self, num_clients: int, num_params: int, cfg: ContributionConfig, *, seed: int) -> None:
        gen_state = torch.random.get_rng_state()
        torch.manual_seed(seed)  # PyTorch's default init under a seed
        self.model = ContributionModel(num_clients, num_params, cfg)
        torch.random.set_rng_state(gen_state)
        self.cfg = cfg
        self.opt = torch.optim.Adam(self.model.parameters(), lr=cfg.lr, fused=True)  # one pass over 4M weights
        self.memory: list[Tensor] = []
        self.last_terms: dict[str, float] = {}

    def step(self, client_params: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Add this round's θ (N, P) to the memory, train K steps, and return θ̂ (N, P), π (N,) and t (N, d_t)."""
        self.memory.append(client_params.reshape(-1).detach())
        if self.cfg.memory is not None:
            self.memory = self.memory[-self.cfg.memory:]
        rows = torch.stack(self.memory)
        self.model.train()
        for _ in range(self.cfg.steps):
            loss, self.last_terms = flz_loss(rows, self.model(rows), self.cfg)
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
        with torch.no_grad():
            out = self.model(client_params.reshape(1, -1))
        n = client_params.shape[0]
        return out["theta_hat"].reshape(n, -1), contributions(out["zhat"][0]), out["t"][0]


@dataclass(frozen=True)
class LocalAdam:
    """LocalTrain of every framework (the code's settings): E epochs of Adam (lr 1e-3, fresh each
    call) over seeded shuffles in batches of 50, cross-entropy."""

    epochs: int = 200
    batch_size: int = 50
    lr: float = 1e-3


def _local(fed: Federation, work: LocalAdam, start: Tensor, clients: Sequence[int], stream: tuple, epochs: int
           ) -> Tensor:
    gens = [make_generator(fed.seed, *stream, k) for k in clients]
    return fed.trainer.train(start, fed.x[list(clients)], fed.y[list(clients)], epochs=epochs,
                             batch_size=work.batch_size, lr=work.lr, adam=True, generators=gens)


def _accuracy(fed: Federation, params: Tensor, test: tuple[Tensor, Tensor]) -> float:
    return float(fed.trainer.accuracy(params, test[0].unsqueeze(0), test[1].unsqueeze(0))[0])


@dataclass
class FLZRun:
    """Per-round test accuracy of a framework (FLZ also logs its unlearned model, π, reconstruction error, the
    entanglement mean cos∠(t_j, t_k) and the rounds where a client's π was 0); ``params``: the final global model;
    ``theta_hat`` (N, P) and ``pi`` (N,): the contribution model's last outputs, from which eqs. 3.12-3.13 build
    ``params`` and ``unlearned``."""

    accuracy: list[float]
    params: Tensor
    unlearn_accuracy: list[float] | None = None
    unlearned: Tensor | None = None
    shares: list[list[float]] | None = None
    rec_error: list[float] | None = None
    entanglement: list[float] | None = None
    dead_rounds: dict[int, list[int]] | None = None
    theta_hat: Tensor | None = None
    pi: Tensor | None = None


def flavg(fed: Federation, init: Tensor, rounds: int, work: LocalAdam, test: tuple[Tensor, Tensor], *,
          clients: Sequence[int] | None = None, progress: bool = False) -> FLZRun:
    """FLAvg (A1, eq. 3.1): every client trains E epochs from θ̄(r−1), the server takes the uniform mean. With
    ``clients`` = C \\ U it is FLAvg(subset) (A2), the retraining the thesis calls the upper bound; client k's
    streams are keyed by (round, k), so leaving clients out changes nothing else."""
    clients = list(range(fed.num_clients)) if clients is None else sorted(clients)
    theta, acc = init.clone(), []
    for r in _rounds(rounds, progress, "FLAvg"):
        theta = _local(fed, work, theta, clients, ("local", r), work.epochs).mean(0)
        acc.append(_accuracy(fed, theta, test))
    return FLZRun(acc, theta)


def local_only(fed: Federation, init: Tensor, epochs: int, work: LocalAdam, test: tuple[Tensor, Tensor]) -> float:
    """ll (A3): every client trains alone from θ_0; the mean of their test accuracies."""
    models = _local(fed, work, init, range(fed.num_clients), ("ll",), epochs)
    return sum(_accuracy(fed, m, test) for m in models) / len(models)


def centralised(fed: Federation, init: Tensor, epochs: int, work: LocalAdam, test: tuple[Tensor, Tensor]) -> float:
    """CL (A4): one model trained on the union of the clients' data."""
    pooled = Federation(fed.trainer, fed.x.reshape(1, -1, *fed.x.shape[2:]), fed.y.reshape(1, -1), fed.seed)
    return _accuracy(fed, _local(pooled, work, init, [0], ("cl",), epochs)[0], test)


def flz(fed: Federation, init: Tensor, rounds: int, work: LocalAdam, cfg: ContributionConfig,
        test: tuple[Tensor, Tensor], *, forget: Sequence[int] = (), progress: bool = False,
        warn: bool = True) -> FLZRun:
    """FLZ (Alg. 1, eq. 3.12) for ``rounds`` rounds; each round also evaluates FLZ(unlearn) of ``forget`` (eq. 3.13)
    without feeding it back (``forget`` empty: the unlearned model is the global model). The
    contribution model is seeded with the run's seed. ``warn``: log the clients whose π was 0 (a caller that
    reports ``dead_rounds`` itself passes False)."""
    n = fed.num_clients
    trainer = ContributionTrainer(n, init.numel(), cfg, seed=derive_seed(fed.seed, "contribution") % 2**31)
    theta = init.clone()
    run = FLZRun([], theta, [], None, [], [], [])
    dead: dict[int, list[int]] = {}  # client -> rounds with π = 0
    for r in _rounds(rounds, progress, "FLZ"):
        local = _local(fed, work, theta, range(n), ("local", r), work.epochs)
        theta_hat, pi, t = trainer.step(local)
        theta = aggregate(theta_hat, pi, warn=False)
        run.accuracy.append(_accuracy(fed, theta, test))
        run.shares.append(contribution_weights(pi, warn=False).tolist())
        for k in range(n):
            if float(pi[k]) == 0.0:
                dead.setdefault(k, []).append(r + 1)
        run.rec_error.append(float(reconstruction_loss(local.reshape(1, -1), theta_hat.reshape(1, -1))))
        run.entanglement.append(float(pairwise_cosines(t.unsqueeze(0)).mean()))
        run.unlearned = unlearn(theta_hat, pi, forget, warn=False)
        run.unlearn_accuracy.append(_accuracy(fed, run.unlearned, test))
        run.theta_hat, run.pi = theta_hat, pi
    run.params = theta
    run.dead_rounds = dead
    if dead and warn:
        logger.warning("contribution π = 0 (left out of the aggregate) for %s", "; ".join(
            f"client {k} in {len(v)} of {rounds} rounds" for k, v in sorted(dead.items())))
    return run


def _rounds(rounds: int, progress: bool, desc: str):
    if not progress:
        return range(rounds)
    from fedlib.progress import progress_bar

    return progress_bar(range(rounds), desc=desc, leave=False)
