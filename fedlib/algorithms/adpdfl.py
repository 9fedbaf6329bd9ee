"""ADPDFL, anonymous DP-based decentralized FL (Weng's thesis ch. 5): the protocol's pieces and its theorems.

Distributed clients (DCs) clip their update to C and add Gaussian noise of std σ·2C/n_i (eqs. 5.2-5.4), then
exchange the noisy updates peer to peer, by gossip (A5.2) or through a random temporary leader (pseudo-central,
A5.3), while a trusted proxy server (TPS) hides who talks to whom behind per-round hashed addresses (A5.4).
The training loop is :func:`fedlib.fl.decentralized.run_decentralized`; this module holds the equations.
"""

from __future__ import annotations

import hashlib
import math
from typing import Literal

import torch
from torch import Tensor

from fedlib.fl import Algorithm, CentralGaussian, ClipUpdate, GaussianNoise
from fedlib.privacy import DEFAULT_ORDERS, clip_by_norm, compute_rdp, gaussian_noise, rdp_to_epsilon
from fedlib.rng import derive_seed

Protocol = Literal["gossip", "pseudo_central"]
PROTOCOLS = ("gossip", "pseudo_central")


def _check_protocol(protocol: str, m_tcs: int, num_clients: int, m_e: int | None) -> None:
    if protocol not in PROTOCOLS:
        raise ValueError(f"protocol must be one of {PROTOCOLS}, got {protocol!r}")
    if not 1 <= m_tcs <= num_clients:
        raise ValueError(f"m_tcs must be in [1, num_clients = {num_clients}], got {m_tcs!r}")
    if protocol == "gossip" and (m_e is None or not 1 <= m_e <= m_tcs - 1):
        raise ValueError(f"gossip needs m_e in [1, m_tcs - 1 = {m_tcs - 1}], got {m_e!r}")


def sensitivity(bound: float, num_samples: int) -> float:
    """Δf_i = 2C / n_i, the l2 sensitivity of DC i's clipped update (eq. 5.4)."""
    if not bound > 0:
        raise ValueError(f"bound must be > 0, got {bound!r}")
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples!r}")
    return 2.0 * bound / num_samples


def privatize(update: Tensor, *, bound: float | None, sigma: float, num_samples: int,
              generator: torch.Generator) -> Tensor:
    """ḡ = ĝ + N(0, σ² Δf_i² I) with ĝ = g / max(1, ‖g‖₂ / C) (eqs. 5.2-5.3; Δf_i = 2C/n_i of eq. 5.4 with
    n_i = ``num_samples``; Theorem 8's wording "N(0, 4C²σ²/m²)" is ``num_samples=m``).

    ``bound=None`` and ``sigma=0``: the non-private baselines (B5.1), the update is returned as it is.
    """
    if not sigma >= 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    if bound is None:
        if sigma > 0:
            raise ValueError("sigma > 0 needs a clipping bound (the sensitivity 2C/n_i is unknown without one)")
        return update
    clipped = clip_by_norm(update, bound)
    if sigma == 0:
        return clipped
    std = sigma * sensitivity(bound, num_samples)
    return clipped + gaussian_noise(update.shape, std, generator=generator).to(update.device)


FEDAVG_NOISE = ("client", "central")


def dp_fedavg(bound: float, sigma: float, noise: Literal["client", "central"] = "client") -> Algorithm:
    """Baseline B5.2, DP-FedAvg ("base noise variance set to two, others unchanged"), in two readings.

    ``"client"`` (the chapter's mechanism with σ = 2): clip to C, client-side noise of std σ·2C/n_i (eq. 5.3),
    server average; :class:`~fedlib.fl.GaussianNoise` with ``per_sample`` adds std (its multiplier)·C/n_i, hence
    the 2σ. ``"central"`` (McMahan et al. 2018): the server clips each update to C, averages, and adds noise of
    std σ·C/m_tcs to the average (:class:`~fedlib.fl.CentralGaussian`, noise σC on the sum).
    """
    if noise == "client":
        return Algorithm(transforms=[ClipUpdate(bound), GaussianNoise(2.0 * sigma, per_sample=True)])
    if noise == "central":
        return Algorithm(aggregator=CentralGaussian(sigma, bound=bound))
    raise ValueError(f"noise must be one of {FEDAVG_NOISE}, got {noise!r}")


def privacy_factor(protocol: Protocol, m_tcs: int, num_clients: int, m_e: int | None = None) -> float:
    """s1 of Theorem 8: r_tcs² m_e (gossip) or r_tcs² (pseudo-central), r_tcs = m_tcs / M."""
    _check_protocol(protocol, m_tcs, num_clients, m_e)
    rate = m_tcs / num_clients
    return rate**2 * (m_e if protocol == "gossip" else 1)


def theorem8_sigma2(*, epsilon: float, delta: float, rounds: int, m_tcs: int, num_clients: int,
                    protocol: Protocol, m_e: int | None = None, amplification_m: int | None = None) -> float:
    """σ² = 7 s1 T (ε + 2 log(1/δ)) / (m² ε²), the noise scale of Theorem 8 (eq. 5.5 / A.59), as claimed.

    m, the anonymity amplification factor, defaults to M = ``num_clients``. Valid for
    ε < 2 log(1/δ), where the chosen Rényi order α = 1 + 2 log(1/δ)/ε is at least 2.
    """
    if not 0 < delta < 1:
        raise ValueError(f"delta must be in (0, 1), got {delta!r}")
    if not 0 < epsilon < 2 * math.log(1 / delta):
        raise ValueError(f"epsilon must be in (0, 2 log(1/δ) = {2 * math.log(1 / delta):.4f}) for Theorem 8, "
                         f"got {epsilon!r}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise ValueError(f"rounds must be a positive int, got {rounds!r}")
    m = num_clients if amplification_m is None else amplification_m
    if m < 1:
        raise ValueError(f"amplification_m must be >= 1, got {amplification_m!r}")
    s1 = privacy_factor(protocol, m_tcs, num_clients, m_e)
    return 7.0 * s1 * rounds * (epsilon + 2 * math.log(1 / delta)) / (m**2 * epsilon**2)


def theorem8_epsilon(sigma2: float, *, alpha: float, delta: float, rounds: int, m_tcs: int, num_clients: int,
                     protocol: Protocol, m_e: int | None = None, amplification_m: int | None = None) -> float:
    """ε = 3.5 T s1 α / (m² σ²) + log(1/δ) / (α − 1): Lemma 3 per round, Lemma 4 over T rounds, RDP → DP
    (appendix K, A.56-A.58), with the m² anonymity factor as claimed."""
    if not sigma2 > 0:
        raise ValueError(f"sigma2 must be > 0, got {sigma2!r}")
    if not alpha > 1:
        raise ValueError(f"alpha must be > 1, got {alpha!r}")
    m = num_clients if amplification_m is None else amplification_m
    s1 = privacy_factor(protocol, m_tcs, num_clients, m_e)
    return 3.5 * rounds * s1 * alpha / (m**2 * sigma2) + math.log(1 / delta) / (alpha - 1)


def accountant_epsilon(sigma: float, *, sample_rate: float, rounds: int, delta: float,
                       releases_per_round: int = 1) -> float:
    """ε of the same noise with a standard subsampled-Gaussian RDP accountant and no anonymity factor:
    q = r_tcs, noise multiplier σ, ``rounds × releases_per_round`` steps."""
    rdp = compute_rdp(q=sample_rate, noise_multiplier=sigma, steps=rounds * releases_per_round, orders=DEFAULT_ORDERS)
    return rdp_to_epsilon(DEFAULT_ORDERS, rdp, delta, "improved")[0]


def epsilon_as_run(sigma: float, *, num_samples: int, rounds: int, delta: float) -> float:
    """ε of ADPDFL's mechanism as it runs, for one DC, in the book's convention (no amplification):

    each upload ḡ_i = ĝ_i + N(0, (σ·2C/n_i)²) is one Gaussian release of the clipped update ĝ_i, whose
    sensitivity is 2C (clipping bounds the upload, not one sample's share of it: local SGD clips no per-sample
    gradient), i.e. noise multiplier σ/n_i; the T releases of a DC that takes part in every round compose (RDP,
    Lemma 4); no amplification by subsampling (the TPS knows who takes part) or by anonymity (the leader and the
    receivers see each upload); gossip's m_e copies of one noisy update are one release.
    ``num_samples``: the noise denominator (n_i, or m for Theorem 8's wording).
    """
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma!r}")
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples!r}")
    return accountant_epsilon(sigma / num_samples, sample_rate=1.0, rounds=rounds, delta=delta)


def gossip_graph(m_tcs: int, m_e: int, generator: torch.Generator) -> Tensor:
    """The TPS's random regular digraph on S^t (A5.2 step 1).

    A random permutation π of the m_tcs positions and m_e distinct offsets O ⊂ {1, …, m_tcs − 1}: position
    π(k) sends to π((k + o) mod m_tcs) for o ∈ O. Every DC sends to and receives from exactly m_e others.

    Returns:
        ``receivers`` (m_tcs, m_e): ``receivers[i]`` are the positions in S^t that position i sends to.
    """
    if isinstance(m_e, bool) or not isinstance(m_e, int) or not 1 <= m_e <= m_tcs - 1:
        raise ValueError(f"m_e must be an int in [1, m_tcs - 1 = {m_tcs - 1}], got {m_e!r}")
    perm = torch.randperm(m_tcs, generator=generator)
    offsets = 1 + torch.randperm(m_tcs - 1, generator=generator)[:m_e]
    receivers = torch.empty(m_tcs, m_e, dtype=torch.long)
    receivers[perm] = perm[(torch.arange(m_tcs)[:, None] + offsets[None, :]) % m_tcs]
    return receivers


def mixing_matrix(receivers: Tensor, *, include_self: bool = True) -> Tensor:
    """The gossip mixing matrix: row i averages DC i's own update (if ``include_self``) and the m_e it
    receives, uniform weights 1/(m_e + 1) (A5.2 step 3). Doubly stochastic for a regular graph."""
    m, m_e = receivers.shape
    mix = torch.zeros(m, m, dtype=torch.float64)
    senders = torch.arange(m)[:, None].expand(m, m_e)
    mix[receivers.reshape(-1), senders.reshape(-1)] = 1.0
    if include_self:
        mix += torch.eye(m, dtype=torch.float64)
    return mix / mix.sum(1, keepdim=True)


def second_eigenvalue(mix: Tensor) -> float:
    """ρ2, the second-largest eigenvalue modulus of a mixing matrix (Theorem 9, eq. 5.8)."""
    moduli = torch.linalg.eigvals(mix.to(torch.float64)).abs().sort(descending=True).values
    return float(moduli[1]) if len(moduli) > 1 else 0.0


def choose_leader(participants: tuple[int, ...], previous: int | None, generator: torch.Generator) -> int:
    """The round's temporary leader: uniform over S^t, never the previous round's leader (A5.3; §7.7)."""
    candidates = [c for c in participants if c != previous]
    if not candidates:
        raise ValueError(f"no leader can be chosen: the only participant {participants} led the previous round")
    return candidates[int(torch.randint(len(candidates), (1,), generator=generator))]


class TrustedProxy:
    """The TPS of the anonymous communication protocol (A5.4), simulated.

    It alone knows the DCs' real indices; each round it hands out salted hashes that change every round, so
    the addresses a DC sees cannot be linked to one another across rounds nor to a DC's index.
    """

    def __init__(self, seed: int) -> None:
        self._secret = derive_seed(seed, "tps-secret")

    def hashed_id(self, round: int, client: int) -> str:
        """DC ``client``'s address in round ``round``: a keyed, per-round hash of its index."""
        text = f"{self._secret}:{round}:{client}".encode()
        return hashlib.blake2b(text, digest_size=8).hexdigest()

    def gossip_view(self, round: int, participants: tuple[int, ...], receivers: Tensor) -> dict[str, list[str]]:
        """What the DCs of S^t learn in a gossip round: each hashed address and the hashed addresses it sends to."""
        ids = [self.hashed_id(round, c) for c in participants]
        return {ids[i]: [ids[j] for j in row.tolist()] for i, row in enumerate(receivers)}

    def leader_view(self, round: int, leader: int) -> str:
        """What the DCs of S^t learn in a pseudo-central round: the leader's hashed address."""
        return self.hashed_id(round, leader)


def _check_smoothness(L: float, upper: float) -> None:
    if not 1 < L < upper:
        raise ValueError(f"L must be in (1, {upper:g}) for the bound of Theorem 9 as printed, got {L!r}")


def pseudo_central_bound(m_tcs: int, *, num_clients: int, rounds: int, L: float, zeta2: float, f_gap: float,
                         bound: float, sigma2: float, n: int) -> dict[str, float]:
    """The terms of Theorem 9's pseudo-central bound (eq. 5.9), with m = M:

    2(F0 − F*)/(T(2 − L)) − ζ²/(2 − L) + ζ²(L − 1)(M − m_tcs)/(m_tcs(2 − L)(M − 1)) + 4LC²σ²/(n² m_tcs (2 − L)).
    """
    _check_smoothness(L, 2.0)
    M, d = num_clients, 2.0 - L
    terms = {"optimisation": 2 * f_gap / (rounds * d), "fl": -zeta2 / d,
             "sampling": zeta2 * (L - 1) * (M - m_tcs) / (m_tcs * d * (M - 1)),
             "privacy": 4 * L * bound**2 * sigma2 / (n**2 * m_tcs * d)}
    terms["total"] = sum(terms.values())
    return terms


def gossip_bound(m_tcs: int, m_e: int, *, rho2: float, rounds: int, L: float, zeta2: float, f_gap: float,
                 bound: float, sigma2: float, n: int) -> dict[str, float]:
    """The terms of Theorem 9's gossip bound (eq. 5.8), D = ρ2 + ρ2 L − L + 2:

    2(F0 − F*)/(T D) − ζ²/D + ζ²(L − 1)(1 − ρ2)(m_tcs − m_e)/(m_e D (m_tcs − 1)) + 4LC²σ²(1 − ρ2)/(n² m_e D).
    """
    _check_smoothness(L, 2.0)
    if not 0 <= rho2 < 1:
        raise ValueError(f"rho2 must be in [0, 1), got {rho2!r}")
    d = rho2 + rho2 * L - L + 2
    terms = {"optimisation": 2 * f_gap / (rounds * d), "fl": -zeta2 / d,
             "sampling": zeta2 * (L - 1) * (1 - rho2) * (m_tcs - m_e) / (m_e * d * (m_tcs - 1)),
             "privacy": 4 * L * bound**2 * sigma2 * (1 - rho2) / (n**2 * m_e * d)}
    terms["total"] = sum(terms.values())
    return terms


def optimal_m_tcs(*, num_clients: int, rounds: int, L: float, zeta2: float, bound: float, n: int, epsilon: float,
                  delta: float) -> float:
    """The m_tcs that minimises eq. 5.9 once σ² of Theorem 8 (∝ m_tcs²) is substituted:

    m* = sqrt(ζ²(L − 1) M n² M⁴ ε² / ((M − 1) · 28 L C² T (ε + 2 log(1/δ)))).
    """
    _check_smoothness(L, 2.0)
    M = num_clients
    return math.sqrt(zeta2 * (L - 1) * M * n**2 * M**4 * epsilon**2
                     / ((M - 1) * 28 * L * bound**2 * rounds * (epsilon + 2 * math.log(1 / delta))))
