"""Client-side transforms of an update, applied in list order before upload: clip, sparsify, noise.

Each transform edits a :class:`ClientMessage`: the update vector, the L2 sensitivity that the last
clipping step guarantees (flat or per layer), and the indices kept by sparsification.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor

from fedlib.fl.component import Component, RoundContext
from fedlib.privacy.accountant import DEFAULT_ORDERS, ClientLedger, PrivacyBudget, RDPAccountant
from fedlib.privacy.clipping import RunningMedian, clip_by_norm, clip_per_layer, layer_norms
from fedlib.privacy.mechanisms import gaussian_noise
from fedlib.privacy.sparsify import top_k


@dataclass
class ClientMessage:
    """What client ``client`` (holding ``num_samples`` samples) is about to upload."""

    client: int
    num_samples: int
    update: Tensor
    bound: Tensor | None = None  # L2 bound of the whole update (0-d) or of each layer (L,)
    kept: Tensor | None = None  # indices kept by sparsification
    info: dict[str, float] = field(default_factory=dict)


class ClientTransform(Component):
    """A function ClientMessage → ClientMessage with the round's context."""

    def __call__(self, msg: ClientMessage, ctx: RoundContext) -> None:
        raise NotImplementedError

    def account(self, client: int, ctx: RoundContext) -> None:
        """Record the privacy that one upload of ``client`` spends (nothing, unless the transform adds noise).

        ``__call__`` does it; a server whose clients run the transform elsewhere (fedlib.flower) calls it
        for every upload it receives, trusting that the client ran the transform as configured.
        """

    @property
    def spends_privacy(self) -> bool:
        """Whether :meth:`account` records anything, i.e. the transform keeps a privacy ledger."""
        return type(self).account is not ClientTransform.account


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")


class ClipUpdate(ClientTransform):
    """Clip the whole update to a constant L2 bound C (thesis eq. 2.28 with constant C_i = C)."""

    def __init__(self, bound: float) -> None:
        _positive("bound", bound)
        self.bound = float(bound)

    def __call__(self, msg: ClientMessage, ctx: RoundContext) -> None:
        msg.update = clip_by_norm(msg.update, self.bound)
        msg.bound = torch.tensor(self.bound)


class ClipPerLayer(ClientTransform):
    """Clip each layer block to its own constant bound (one bound for all layers, or one per layer)."""

    def __init__(self, bounds: float | list[float]) -> None:
        self.bounds = torch.as_tensor(bounds, dtype=torch.float32)
        if torch.any(self.bounds <= 0):
            raise ValueError(f"bounds must be > 0, got {bounds!r}")

    def __call__(self, msg: ClientMessage, ctx: RoundContext) -> None:
        bounds = self.bounds.expand(len(ctx.slices)) if self.bounds.ndim == 0 else self.bounds
        msg.update = clip_per_layer(msg.update, ctx.slices, bounds)
        msg.bound = bounds.clone()


class NormBound(ClientTransform):
    """Take the update's own L2 norm as its sensitivity, without clipping (LDP-FL, thesis eq. 3.2).

    With ``GaussianNoise(per_sample=True)`` after it, the noise std is σ ‖D_i‖ / n_i (eq. 3.1). The
    bound is data-dependent, so this is *not* a valid DP sensitivity; it is implemented because it is
    what the thesis studies.
    """

    def __call__(self, msg: ClientMessage, ctx: RoundContext) -> None:
        msg.bound = torch.linalg.vector_norm(msg.update)


class MedianClip(ClientTransform):
    """Clip at the client's running median of its own update norms (thesis §2.1.5 C_i; eq. 3.8 per layer).

    The current norm is included in the median, so a client's first participation is not clipped.
    """

    def __init__(self, per_layer: bool = True) -> None:
        self.per_layer = per_layer
        self.median = RunningMedian()

    def __call__(self, msg: ClientMessage, ctx: RoundContext) -> None:
        if self.per_layer:
            bounds = self.median.observe(msg.client, layer_norms(msg.update, ctx.slices))
            msg.update = clip_per_layer(msg.update, ctx.slices, torch.clamp(bounds, min=1e-12))
        else:
            bounds = self.median.observe(msg.client, torch.linalg.vector_norm(msg.update).reshape(1))[0]
            msg.update = clip_by_norm(msg.update, max(float(bounds), 1e-12))
        msg.bound = bounds

    def reset(self) -> None:
        self.median = RunningMedian()

    def state_dict(self) -> dict:
        return self.median.state_dict()

    def load_state_dict(self, state: dict) -> None:
        self.median.load_state_dict(state)


class TopK(ClientTransform):
    """Keep the ``rate`` fraction of largest-magnitude entries (thesis §3.2.1.1, top-k sparsification)."""

    def __init__(self, rate: float) -> None:
        if not 0 < rate <= 1:
            raise ValueError(f"rate must be in (0, 1], got {rate!r}")
        self.rate = rate
        self.reset()

    def __call__(self, msg: ClientMessage, ctx: RoundContext) -> None:
        msg.update, msg.kept = top_k(msg.update, self.rate)
        self.kept, self.size = msg.kept.numel(), msg.update.numel()

    def metrics(self) -> dict[str, float]:
        """Entries uploaded per client (values and their indices) as a fraction of a dense upload."""
        return {"uploaded_values": float(self.kept), "upload_fraction": 2 * self.kept / self.size}

    def reset(self) -> None:
        self.kept, self.size = 0, 1


class GaussianNoise(ClientTransform):
    """Local DP: add N(0, (σ S)²) to each coordinate before upload (thesis §2.1.5.2, LDP-FL).

    S is the L2 sensitivity left by the preceding transform (:class:`ClipUpdate`, :class:`MedianClip`,
    :class:`NormBound`; per layer if it worked per layer), optionally divided by the client's sample
    count n_i (``per_sample=True``: the thesis's S_i = C_i / n_i, eqs. 3.2 and 3.9). With
    ``support="kept"`` noise goes only on the entries kept by :class:`TopK`.

    Accounting: ``"per_client"`` gives every client a ledger on which each noised upload is one Gaussian
    mechanism (q = 1). ``"global"`` is the thesis's convention (spec §3.P): one accountant on which every
    participating client is one sampled Gaussian mechanism with q = 1/M; it reproduces the thesis's
    round counts (e.g. 52 rounds at σ = 8, 100 clients, (0.5, 1e-6) with the moments accountant).

    Client drop-out (``drop_out=True``, per-client accounting with a budget; thesis §3.3.1.2 and Alg. 3.2): a
    client whose next upload would exceed the budget drops out of the sampling; training stops when fewer than m
    clients remain.

    Args:
        noise_multiplier: σ.
        per_sample: divide the sensitivity by n_i.
        support: ``"all"`` coordinates or only the ``"kept"`` ones.
        accounting: ``"per_client"`` or ``"global"``.
        budget: stop training before the next round would exceed it.
        delta: δ at which ε is reported when no budget is given.
        orders: Rényi orders of the accountants.
        drop_out: clients whose budget is spent drop out (needs ``accounting="per_client"`` and a budget).
    """

    def __init__(self, noise_multiplier: float, *, per_sample: bool = False,
                 support: Literal["all", "kept"] = "all", accounting: Literal["per_client", "global"] = "per_client",
                 budget: PrivacyBudget | None = None, delta: float = 1e-5,
                 orders: Sequence[float] = DEFAULT_ORDERS, drop_out: bool = False) -> None:
        if not noise_multiplier >= 0:
            raise ValueError(f"noise_multiplier must be >= 0, got {noise_multiplier!r}")
        if support not in ("all", "kept"):
            raise ValueError(f"support must be 'all' or 'kept', got {support!r}")
        if accounting not in ("per_client", "global"):
            raise ValueError(f"accounting must be 'per_client' or 'global', got {accounting!r}")
        if drop_out and (accounting != "per_client" or budget is None):
            raise ValueError(f"drop_out=True needs accounting='per_client' and a budget, got accounting="
                             f"{accounting!r}, budget={budget!r}")
        self.drop_out = drop_out
        self.noise_multiplier = float(noise_multiplier)
        self.per_sample = per_sample
        self.support = support
        self.accounting = accounting
        self.budget = budget
        self.report = budget or PrivacyBudget(1.0, delta)
        self.orders = tuple(orders)
        self.reset()

    def __call__(self, msg: ClientMessage, ctx: RoundContext) -> None:
        if msg.bound is None:
            raise ValueError("GaussianNoise needs a clipping transform (or NormBound) before it: "
                             "the sensitivity is unknown")
        scale = msg.bound.to(msg.update.dtype) * self.noise_multiplier
        if self.per_sample:
            scale = scale / msg.num_samples
        noise = gaussian_noise(msg.update.shape, 1.0, generator=ctx.generator("ldp_noise", msg.client))
        if scale.numel() == 1:
            noise.mul_(scale)
        else:
            for s, f in zip(ctx.slices, scale):
                noise[s] *= f
        if self.support == "kept":
            if msg.kept is None:
                raise ValueError("support='kept' needs a TopK transform before GaussianNoise")
            mask = torch.zeros_like(noise, dtype=torch.bool)
            mask[msg.kept] = True
            noise[~mask] = 0.0
        msg.update = msg.update + noise
        self.account(msg.client, ctx)

    def account(self, client: int, ctx: RoundContext) -> None:
        """One Gaussian mechanism of ``client``: q = 1/M on the global accountant, or q = 1 on its own ledger."""
        if self.noise_multiplier > 0:
            if self.accounting == "global":
                self.accountant.step(noise_multiplier=self.noise_multiplier, sample_rate=1.0 / ctx.num_clients)
            else:
                self.ledger.step(client, noise_multiplier=self.noise_multiplier)

    def allows_round(self, ctx: RoundContext) -> bool:
        if self.budget is None or self.noise_multiplier == 0:
            return True
        if self.accounting == "global":
            return not self.accountant.would_exceed(self.budget, noise_multiplier=self.noise_multiplier,
                                                    sample_rate=1.0 / ctx.num_clients,
                                                    steps=len(ctx.participants))
        for c in ctx.participants:
            acc = self.ledger.accountants.get(c) or RDPAccountant(self.orders)
            if acc.would_exceed(self.budget, noise_multiplier=self.noise_multiplier, sample_rate=1.0):
                return False
        return True

    def dropped_out(self, num_clients: int) -> frozenset[int]:
        """With ``drop_out``: the clients whose next upload would exceed the budget (all of them if one upload
        already would)."""
        if not self.drop_out or self.noise_multiplier == 0:
            return frozenset()
        fresh = RDPAccountant(self.orders)
        if fresh.would_exceed(self.budget, noise_multiplier=self.noise_multiplier, sample_rate=1.0):
            return frozenset(range(num_clients))
        return frozenset(c for c, acc in self.ledger.accountants.items()
                         if acc.would_exceed(self.budget, noise_multiplier=self.noise_multiplier, sample_rate=1.0))

    def metrics(self) -> dict[str, float]:
        if self.accounting == "global":
            eps = self.accountant.get_epsilon(self.report.delta, self.report.conversion)
        else:
            eps = self.ledger.max_epsilon(self.report.delta, self.report.conversion)
        if self.drop_out:
            return {"epsilon_ldp": eps, "dropped_out": float(len(self.dropped_out(0)))}
        return {"epsilon_ldp": eps}

    def reset(self) -> None:
        self.ledger = ClientLedger(self.orders)
        self.accountant = RDPAccountant(self.orders)

    def state_dict(self) -> dict:
        return {"ledger": self.ledger.state_dict(), "accountant": self.accountant.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        self.ledger.load_state_dict(state["ledger"])
        self.accountant.load_state_dict(state["accountant"])
