"""MNIST, Fashion-MNIST, CIFAR-10 and CIFAR-100 as in-memory tensors.

The data root is ``$FEDLIB_DATA`` or, when unset, ``~/.cache/fedlib/data``; it uses torchvision's
folder layout, so an existing torchvision root works as is. Files are downloaded only when they are
missing and the network is reachable; offline, a missing dataset raises
:class:`DatasetNotFoundError` saying where the files are expected.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import torch
from torch import Tensor


class DatasetNotFoundError(FileNotFoundError):
    """A dataset is missing from the data root and could not be downloaded."""


@dataclass(frozen=True)
class DatasetInfo:
    """What fedlib needs to know about one dataset."""

    folder: str
    shape: tuple[int, int, int]
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]
    files: tuple[str, ...]


DATASETS: dict[str, DatasetInfo] = {
    "mnist": DatasetInfo("MNIST", (1, 28, 28), 10, (0.1307,), (0.3081,),
                         ("raw/train-images-idx3-ubyte", "raw/train-labels-idx1-ubyte",
                          "raw/t10k-images-idx3-ubyte", "raw/t10k-labels-idx1-ubyte")),
    "fashion_mnist": DatasetInfo("FashionMNIST", (1, 28, 28), 10, (0.2860,), (0.3530,),
                                 ("raw/train-images-idx3-ubyte", "raw/train-labels-idx1-ubyte",
                                  "raw/t10k-images-idx3-ubyte", "raw/t10k-labels-idx1-ubyte")),
    "cifar10": DatasetInfo("cifar-10-batches-py", (3, 32, 32), 10, (0.4914, 0.4822, 0.4465),
                           (0.2470, 0.2435, 0.2616), ("batches.meta", "test_batch")),
    "cifar100": DatasetInfo("cifar-100-python", (3, 32, 32), 100, (0.5071, 0.4865, 0.4409),
                            (0.2673, 0.2564, 0.2762), ("meta", "train", "test")),
}


@dataclass(frozen=True)
class Split:
    """One split of a dataset: images ``x`` (N, C, H, W) float32 and labels ``y`` (N,) int64."""

    x: Tensor
    y: Tensor
    num_classes: int

    def __post_init__(self) -> None:
        if self.x.shape[0] != self.y.shape[0]:
            raise ValueError(f"x and y disagree on the number of samples: {self.x.shape[0]} vs {self.y.shape[0]}")

    def __len__(self) -> int:
        return int(self.y.shape[0])

    def subset(self, indices: Tensor) -> "Split":
        """The samples at ``indices`` (a copy)."""
        return Split(self.x[indices], self.y[indices], self.num_classes)


def data_root() -> Path:
    """``$FEDLIB_DATA`` if set, else ``~/.cache/fedlib/data``."""
    env = os.environ.get("FEDLIB_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "fedlib" / "data"


def _torchvision_class(name: str):
    from torchvision import datasets as tvd

    if name == "mnist":
        return tvd.MNIST
    if name == "fashion_mnist":
        return tvd.FashionMNIST
    base = tvd.CIFAR10 if name == "cifar10" else tvd.CIFAR100
    # Subset files (as in the offline data folder) fail torchvision's md5 check; the loading code is
    # unchanged with the checksums off, and the full official files load the same way.
    return type(f"{base.__name__}Files", (base,), {
        "train_list": [[n, None] for n, _ in base.train_list],
        "test_list": [[n, None] for n, _ in base.test_list],
    })


def _missing_message(name: str, root: Path, reason: str) -> str:
    info = DATASETS[name]
    expected = "\n".join(f"  {root / info.folder / f}" for f in info.files)
    return (
        f"Dataset {name!r} was not found under {root} and could not be downloaded ({reason}).\n"
        f"Expected torchvision's layout, e.g.:\n{expected}\n"
        "Point FEDLIB_DATA at a folder that holds it (in this project's CI: export FEDLIB_DATA=../shared/data), "
        "or run once with internet access so that torchvision downloads it there."
    )


@lru_cache(maxsize=16)
def _load_raw(name: str, train: bool, root: str, download: bool | None) -> tuple[Tensor, Tensor]:
    cls = _torchvision_class(name)
    try:
        ds = cls(root, train=train, download=False)
    except RuntimeError:
        if download is False:
            raise DatasetNotFoundError(_missing_message(name, Path(root), "download=False")) from None
        try:
            ds = cls(root, train=train, download=True)
        except Exception as err:  # no network, DNS failure, HTTP error, ...
            raise DatasetNotFoundError(_missing_message(name, Path(root), f"{type(err).__name__}: {err}")) from None
    data = ds.data
    x = torch.from_numpy(np.asarray(data)) if not isinstance(data, Tensor) else data
    if x.ndim == 3:  # MNIST-like (N, H, W)
        x = x.unsqueeze(1)
    else:  # CIFAR (N, H, W, C)
        x = x.permute(0, 3, 1, 2)
    y = torch.as_tensor(np.asarray(ds.targets), dtype=torch.int64)
    return x.contiguous(), y


def load_dataset(name: str, *, train: bool = True, root: str | Path | None = None,
                 normalize: bool = True, download: bool | None = None) -> Split:
    """Load a dataset split as tensors.

    Args:
        name: one of ``"mnist"``, ``"fashion_mnist"``, ``"cifar10"``, ``"cifar100"``.
        train: the training split if True, else the test split.
        root: data root; defaults to :func:`data_root`.
        normalize: standardise each channel with the dataset's mean and std; otherwise pixels are in [0, 1].
        download: None tries a download only when files are missing; False never downloads.

    Returns:
        A :class:`Split` with ``x`` of shape (N, C, H, W), float32.

    Raises:
        ValueError: unknown ``name``.
        DatasetNotFoundError: files missing and no download possible.
    """
    if name not in DATASETS:
        raise ValueError(f"name must be one of {sorted(DATASETS)}, got {name!r}")
    root = Path(root).expanduser() if root is not None else data_root()
    raw_x, y = _load_raw(name, bool(train), str(root), download)
    info = DATASETS[name]
    x = raw_x.to(torch.float32).div_(255.0)
    if normalize:
        mean = torch.tensor(info.mean).view(1, -1, 1, 1)
        std = torch.tensor(info.std).view(1, -1, 1, 1)
        x = x.sub_(mean).div_(std)
    return Split(x, y.clone(), info.num_classes)
