"""One DP-SGD step (per-sample clipping at C = 1, noise σ = 0 so the results can be compared) on the thesis's MLP
784-200-200-10 with a batch of 256 real MNIST images: fedlib's
:func:`~fedlib.fl.backprop.mlp_clipped_gradient_sum` (per-sample norms from ‖dz_j‖²‖a_j‖², the clipped sum as one
matrix product per layer; no per-sample gradient is ever stored) vs Opacus (``GradSampleModule`` hooks that
materialise every per-sample gradient, then ``DPOptimizer``). The clipped mean gradients must agree to the float32
bound of :mod:`benchmarks.timing` (longest reduction: the 784 inputs; chained: 3 layers × 3 passes) before any time
is printed; a step is timed as the mean of 10.
"""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F

from benchmarks.timing import check_close, float32_rtol, interleaved, speedup, target
from fedlib.data import load_dataset
from fedlib.fl.backprop import mlp_clipped_gradient_sum, mlp_linears
from fedlib.models import build_model
from fedlib.rng import make_generator

BATCH, CLIP, LR, STEPS = 256, 1.0, 0.1, 10


def run() -> list[dict]:
    try:
        import opacus
    except ImportError:
        return [{"row": "DP-SGD step: skipped (opacus not installed)", "skipped": True}]
    train = load_dataset("mnist", train=True)
    x, y = train.x[:BATCH], train.y[:BATCH]

    ours_model = build_model("mlp", generator=make_generator(0))
    linears = mlp_linears(ours_model)
    params = list(ours_model.parameters())

    def ours_step() -> list[torch.Tensor]:
        grads, _, _ = mlp_clipped_gradient_sum(linears, x, y, CLIP)
        with torch.no_grad():
            for p, g in zip(params, grads):
                p -= LR * g / BATCH
        return [g / BATCH for g in grads]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus's notices about secure RNG and full backward hooks
        gsm = opacus.GradSampleModule(build_model("mlp", generator=make_generator(0)))
        opt = opacus.optimizers.DPOptimizer(torch.optim.SGD(gsm.parameters(), lr=LR), noise_multiplier=0.0,
                                            max_grad_norm=CLIP, expected_batch_size=BATCH)

        def opacus_step() -> list[torch.Tensor]:
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(gsm(x), y).backward()
            opt.step()
            return [p.grad for p in gsm.parameters()]

        got, ref = ours_step(), opacus_step()  # both from the same initial model
        rtol = float32_rtol(x[0].numel(), chained=9)
        rel = check_close("fedlib and Opacus clipped gradients", torch.cat([g.reshape(-1) for g in got]),
                          torch.cat([g.reshape(-1) for g in ref]), rtol)

        def steps(fn):
            return lambda: [fn() for _ in range(STEPS)]

        times = interleaved({"opacus": steps(opacus_step), "ours": steps(ours_step)}, per=STEPS)
    ratio = speedup(times["opacus"], times["ours"])
    return [
        {"row": "DP-SGD step, Opacus", "time": times["opacus"]},
        {"row": "DP-SGD step, fedlib ghost norms", "time": times["ours"], "ratio": ratio,
         "target": target("x Opacus", ratio.median, 10),
         "check": f"clipped gradients agree to {rel:.1e} (bound {rtol:.1e})"},
    ]


if __name__ == "__main__":
    for row in run():
        print(row)
