"""Evaluating many models on one test set, as ADPDFL's §5.4.1 metric does every round (70 training DCs' models on
10,000 test images): :func:`~fedlib.algorithms.decentralized.correct_many` vmapped over 32 models at once on NCHW
images (its GPU path, and its CPU path until 2026-11-28) against its CPU default (one model at a time on batches of
250 channels-last images), for the thesis's MNIST MLP and CIFAR-10 CNN. The two must
classify every sample alike before a time is printed; a step is one model on 2,000 images.
"""

from __future__ import annotations

import torch

from benchmarks.timing import interleaved, speedup
from fedlib.algorithms.decentralized import correct_many
from fedlib.experiments.common import fresh_model
from fedlib.fl.params import get_flat
from fedlib.rng import make_generator

MODELS, IMAGES = 8, 2000
SHAPES = {"mlp": (1, 28, 28), "cnn_adpdfl": (3, 32, 32)}


def run() -> list[dict]:
    rows = []
    for name, shape in SHAPES.items():
        model = fresh_model(name, 0)
        g = make_generator(0, "benchmark", name)
        base = get_flat(model)
        params = base + 0.01 * torch.randn(MODELS, len(base), generator=g)
        x, y = torch.randn(IMAGES, *shape, generator=g), torch.randint(0, 10, (IMAGES,), generator=g)

        def vmapped() -> torch.Tensor:
            return correct_many(model, params, x, y, models_per_batch=32, samples_per_batch=2000,
                                channels_last=False)

        def one_at_a_time() -> torch.Tensor:
            return correct_many(model, params, x, y)

        differ = int((vmapped() != one_at_a_time()).sum())
        if differ:
            raise AssertionError(f"{name}: the two batchings classify {differ} samples differently")
        times = interleaved({"vmap": vmapped, "loop": one_at_a_time}, per=MODELS)
        rows += [{"row": f"evaluate {MODELS} models ({name}), vmap × 32, NCHW", "time": times["vmap"]},
                 {"row": f"evaluate {MODELS} models ({name}), one at a time, NHWC", "time": times["loop"],
                  "ratio": speedup(times["vmap"], times["loop"]),
                  "check": f"the same predictions on {MODELS} × {IMAGES} samples"}]
    return rows
