"""K gradient-inversion attacks (real CIFAR-100 images, MLP 3072-256-256-256-100, 2 images each, shared weights):
fedlib's :func:`~fedlib.attacks.reconstruct` (the MLP objective without materialised dummy gradients, vmapped over
the attacks) vs the inversefed-style loop, one attack after the other. Times are per attack and iteration.

Batching alone does not pay on CPU: a plain ``vmap`` of the double-backward objective measured 0.37x here (1.0-1.1x
for CNN6, 1.06x for a 768-64-10 MLP); the speed-up comes from never forming the per-attack weight gradients
(measured: 3.0-3.8x on 2 cores).

Before any time is printed, the image gradients ∇_x J of both at the start must agree to the float32 bound of
:mod:`benchmarks.timing` (longest reduction: the 3,072 inputs; chained: 4 layers × 4 passes — forward, backward,
and the two of the double backward). The signed steps then amplify rounding (a gradient entry near zero can change
sign), so after the timed runs the two are also compared by what a user sees, the PSNR of their reconstructions
(mean over the 32 images), which must agree to 0.5 dB: a user-level tolerance, well under the ~6 dB steps between
noise levels that the privacy-evaluation chapter reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch.func import grad, vmap

from benchmarks.inversefed_style import inversefed_style_attack, inversefed_style_objective
from benchmarks.timing import check_close, float32_rtol, interleaved, speedup, target
from fedlib.attacks import AttackConfig, mlp_attack_objective, mlp_layer_names, model_gradient, psnr, reconstruct
from fedlib.data import load_dataset
from fedlib.models import build_model
from fedlib.rng import make_generator

ATTACKS, IMAGES, ITERATIONS = 16, 2, 30


@dataclass(frozen=True)
class Problem:
    """The benchmark's attacks: shared weights (one round), per-attack labels, targets and dummy starts."""

    model: torch.nn.Module
    params: dict[str, torch.Tensor]
    rounds: dict[str, torch.Tensor]
    truth: torch.Tensor
    labels: torch.Tensor
    targets: dict[str, torch.Tensor]
    x0: torch.Tensor
    cfg: AttackConfig

    def batched(self) -> torch.Tensor:
        """fedlib's :func:`reconstruct`: all attacks at once."""
        return reconstruct(self.model, self.rounds, self.labels, self.targets, self.x0, cfg=self.cfg, box=(0.0, 1.0))[0]

    def one_at_a_time(self) -> torch.Tensor:
        """The inversefed-style loop: one attack after the other."""
        return torch.stack([inversefed_style_attack(self.model, self.params, self.labels[i],
                                                    {n: t[i] for n, t in self.targets.items()}, self.x0[i], self.cfg,
                                                    0.0, 1.0) for i in range(len(self.x0))])


def problem() -> Problem:
    """The attacks every timing of this module (and :mod:`benchmarks.profile_attack`) runs."""
    data = load_dataset("cifar100", train=True, normalize=False)
    model = build_model("mlp", generator=make_generator(0), in_features=3072, hidden=(256,) * 3, num_classes=100)
    params = {k: v.detach() for k, v in model.named_parameters()}
    gen = make_generator(0, "benchmark-attacks")
    idx = torch.randperm(len(data), generator=gen)[:ATTACKS * IMAGES].view(ATTACKS, IMAGES)
    truth, labels = data.x[idx], data.y[idx]
    targets = {n: torch.stack([model_gradient(model, params, truth[i], labels[i])[n] for i in range(ATTACKS)])
               for n in params}
    x0 = torch.rand(truth.shape, generator=gen)
    rounds = {n: p.unsqueeze(0) for n, p in params.items()}  # one round, shared by every attack
    return Problem(model, params, rounds, truth, labels, targets, x0, AttackConfig(iterations=ITERATIONS, lr=0.05))


def run() -> list[dict]:
    pb = problem()
    model, params, rounds, truth, labels, targets, x0, cfg = (pb.model, pb.params, pb.rounds, pb.truth, pb.labels,
                                                              pb.targets, pb.x0, pb.cfg)
    ours_grad = vmap(grad(mlp_attack_objective, argnums=2), in_dims=(None, None, 0, 0, 0, None))(
        mlp_layer_names(model), rounds, x0, labels, targets, cfg)
    ref_grad = torch.stack([_reference_gradient(model, params, x0[i], labels[i], {n: t[i] for n, t in targets.items()},
                                                cfg) for i in range(ATTACKS)])
    rtol = float32_rtol(truth[0, 0].numel(), chained=16)
    rel = check_close("batched and one-at-a-time image gradients", ours_grad, ref_grad, rtol)

    out: dict[str, torch.Tensor] = {}

    def ours() -> None:
        out["ours"] = pb.batched()

    def one_at_a_time() -> None:
        out["ref"] = pb.one_at_a_time()

    times = interleaved({"ref": one_at_a_time, "ours": ours}, per=ATTACKS * ITERATIONS)
    p_ours = float(psnr(out["ours"].flatten(0, 1), truth.flatten(0, 1)).mean())
    p_ref = float(psnr(out["ref"].flatten(0, 1), truth.flatten(0, 1)).mean())
    if abs(p_ours - p_ref) > 0.5:
        raise AssertionError(f"batched and one-at-a-time attacks reach different PSNR ({p_ours:.2f} vs {p_ref:.2f} dB)")
    ratio = speedup(times["ref"], times["ours"])
    return [
        {"row": f"{ATTACKS} attacks, one at a time", "time": times["ref"]},
        {"row": f"{ATTACKS} attacks, fedlib batched", "time": times["ours"], "ratio": ratio,
         "target": target("x one at a time", ratio.median, 5),
         "check": f"image gradients agree to {rel:.1e} (bound {rtol:.1e}); PSNR {p_ours:.2f} vs {p_ref:.2f} dB"},
    ]


def _reference_gradient(model, params, x, labels, target, cfg) -> torch.Tensor:
    """∇_x J of one attack at ``x`` computed as the reference loop computes it."""
    for p, v in zip(model.parameters(), params.values()):
        p.data.copy_(v)
    x = x.clone().requires_grad_(True)
    return torch.autograd.grad(inversefed_style_objective(model, list(params), x, labels, target, cfg), [x])[0]
