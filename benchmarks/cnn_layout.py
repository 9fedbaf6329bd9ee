"""Channels-last CNN training: one client's local epoch (:class:`~fedlib.fl.client.LocalTrainer`) in the default
NCHW layout against ``channels_last=True``, for the CNNs whose full-mode units train for hours on a CPU: Fed-nore's
MNIST CNN (600 images, B = 10), ADPDFL's CIFAR-10 CNN (500 images, B = 20) and plausible deniability's LeNet-5
(1,200 images, B = 128). Real images of the data root; the two layouts must give the same update to float32 rounding
(the convolutions sum in other orders) before a time is printed.
"""

from __future__ import annotations

import torch

from benchmarks.timing import check_close, float32_rtol, interleaved, speedup
from fedlib.data import load_dataset
from fedlib.experiments.common import fresh_model
from fedlib.fl.client import LocalSGD, LocalTrainer
from fedlib.fl.params import get_flat
from fedlib.rng import make_generator

#: model -> (dataset, images, batch size)
CASES = {"cnn_mnist": ("mnist", 600, 10), "cnn_adpdfl": ("cifar10", 500, 20), "lenet5": ("mnist", 1200, 128)}


def run() -> list[dict]:
    rows = []
    for name, (dataset, images, batch) in CASES.items():
        data = load_dataset(dataset, train=True)
        x, y, idx = data.x[:images], data.y[:images], torch.arange(images)
        opt = LocalSGD(1, batch)
        trainers = {layout: LocalTrainer(fresh_model(name, 0), channels_last=layout == "NHWC")
                    for layout in ("NCHW", "NHWC")}
        start = get_flat(trainers["NCHW"].model)

        def epoch(layout: str) -> torch.Tensor:
            return trainers[layout].train(start, x, y, idx, lr=0.05, opt=opt,
                                          generator=make_generator(0, "benchmark", name))[0]

        steps = -(-images // batch)
        check_close(f"{name}: NCHW and channels-last updates", epoch("NHWC"), epoch("NCHW"),
                    float32_rtol(3 * 5 * 5 * 64, chained=4 * steps))
        times = interleaved({"NCHW": lambda: epoch("NCHW"), "NHWC": lambda: epoch("NHWC")}, repeats=9, per=steps)
        rows += [{"row": f"local epoch, {name} (B = {batch}), NCHW", "time": times["NCHW"]},
                 {"row": f"local epoch, {name} (B = {batch}), channels-last", "time": times["NHWC"],
                  "ratio": speedup(times["NCHW"], times["NHWC"]),
                  "check": f"the same update to float32 rounding ({images} images, {steps} steps)"}]
    return rows
