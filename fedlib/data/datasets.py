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

from fedlib.data.files import DatasetFileError, check_labels, read_cifar_batch, read_idx


class DatasetNotFoundError(FileNotFoundError):
    """A dataset is missing from the data root and could not be downloaded."""


class DatasetIncompleteError(DatasetNotFoundError):
    """The data root holds only part of a dataset that a setting needs whole (e.g. an offline subset)."""


def blocking_errors(mode: str) -> type[DatasetNotFoundError]:
    """The data errors that block a chapter's units instead of stopping its run: a dataset the data root holds only
    in part and, in full mode, one it lacks altogether (a machine given only MNIST still runs the MNIST units and
    lists the rest as blocked). Quick mode still stops on a missing dataset: its run is one piece."""
    return DatasetNotFoundError if mode == "full" else DatasetIncompleteError


@dataclass(frozen=True)
class DatasetInfo:
    """What fedlib needs to know about one dataset."""

    folder: str
    shape: tuple[int, int, int]
    num_classes: int
    mean: tuple[float, ...]
    std: tuple[float, ...]


DATASETS: dict[str, DatasetInfo] = {
    "mnist": DatasetInfo("MNIST", (1, 28, 28), 10, (0.1307,), (0.3081,)),
    "fashion_mnist": DatasetInfo("FashionMNIST", (1, 28, 28), 10, (0.2860,), (0.3530,)),
    "cifar10": DatasetInfo("cifar-10-batches-py", (3, 32, 32), 10, (0.4914, 0.4822, 0.4465),
                           (0.2470, 0.2435, 0.2616)),
    "cifar100": DatasetInfo("cifar-100-python", (3, 32, 32), 100, (0.5071, 0.4865, 0.4409),
                            (0.2673, 0.2564, 0.2762)),
}


#: Official sizes (train, test): a full-mode setting refuses anything smaller (see ``load_dataset(subset="full")``).
FULL_SIZES: dict[str, tuple[int, int]] = {"mnist": (60_000, 10_000), "fashion_mnist": (60_000, 10_000),
                                          "cifar10": (50_000, 10_000), "cifar100": (50_000, 10_000)}

#: The fixed quick-mode subsets, as (start, count) ranges of the official order; they never grow with the data
#: root. CIFAR-10: the first images of each official batch, exactly the 5,438 training / 1,017 test images that
#: the offline data held before the full CIFAR-10 arrived (1,102 of ``data_batch_1``; 1,017 of batches 2, 3 and 5;
#: 1,285 of ``data_batch_4``; 1,017 of ``test_batch``), so quick results stay comparable across data roots. Every
#: one of these test images has exact official pixels. CIFAR-100: the first 1,117 training / 916 test images, the
#: offline subset. MNIST and Fashion-MNIST: quick mode uses the whole split.
QUICK_SUBSETS: dict[tuple[str, bool], tuple[tuple[int, int], ...]] = {
    ("cifar10", True): ((0, 1102), (10_000, 1017), (20_000, 1017), (30_000, 1285), (40_000, 1017)),
    ("cifar10", False): ((0, 1017),),
    ("cifar100", True): ((0, 1117),),
    ("cifar100", False): ((0, 916),),
}

#: What ``load_dataset(subset=...)`` accepts.
SUBSETS = ("all", "quick", "full")


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
    """``$FEDLIB_DATA`` if set, else ``~/.cache/fedlib/data``.

    Raises:
        ValueError: ``$FEDLIB_DATA`` names something that is not a folder.
    """
    env = os.environ.get("FEDLIB_DATA")
    root = Path(env).expanduser() if env else Path.home() / ".cache" / "fedlib" / "data"
    if root.exists() and not root.is_dir():
        raise ValueError(f"FEDLIB_DATA={env} is not a folder; point it at the data root (torchvision's layout)")
    return root


def _torchvision_class(name: str):
    """torchvision's class for ``name``: used to *download* missing files only (fedlib reads the files itself)."""
    from torchvision import datasets as tvd

    return {"mnist": tvd.MNIST, "fashion_mnist": tvd.FashionMNIST, "cifar10": tvd.CIFAR10,
            "cifar100": tvd.CIFAR100}[name]


#: the files of each split, relative to the dataset's folder
SPLIT_FILES: dict[str, dict[bool, tuple[str, ...]]] = {
    "mnist": {True: ("raw/train-images-idx3-ubyte", "raw/train-labels-idx1-ubyte"),
              False: ("raw/t10k-images-idx3-ubyte", "raw/t10k-labels-idx1-ubyte")},
    "cifar10": {True: tuple(f"data_batch_{i}" for i in range(1, 6)), False: ("test_batch",)},
    "cifar100": {True: ("train",), False: ("test",)},
}
SPLIT_FILES["fashion_mnist"] = SPLIT_FILES["mnist"]


def _missing_message(name: str, root: Path, missing: list[Path], reason: str) -> str:
    expected = "\n".join(f"  {p}" for p in missing)
    return (
        f"Dataset {name!r} was not found under {root} and could not be downloaded ({reason}).\n"
        f"Missing (torchvision's layout):\n{expected}\n"
        "Point FEDLIB_DATA at a folder that holds it (export FEDLIB_DATA=/path/to/data), "
        "or run once with internet access so that torchvision downloads it there."
    )


def _download(name: str, train: bool, root: Path, missing: list[Path]) -> None:
    """Let torchvision download the split; on failure remove the folders the attempt created and left empty."""
    folder = root / DATASETS[name].folder
    created = [p for p in (root, folder, folder / "raw") if not p.exists()]
    try:
        _torchvision_class(name)(str(root), train=train, download=True)
    except Exception as err:  # no network, DNS failure, HTTP error, ...
        for p in reversed(created):
            if p.is_dir() and not any(p.iterdir()):
                p.rmdir()
        raise DatasetNotFoundError(_missing_message(name, root, missing, f"{type(err).__name__}: {err}")) from None


def _read(name: str, train: bool, paths: list[Path]) -> tuple[np.ndarray, np.ndarray]:
    """Images (N, H, W) or (N, H, W, C) and labels of a split, every file checked."""
    info = DATASETS[name]
    if name in ("mnist", "fashion_mnist"):
        x, y = read_idx(paths[0], kind="images"), read_idx(paths[1], kind="labels").astype(np.int64)
        if len(x) != len(y):
            raise DatasetFileError(f"{paths[0]} holds {len(x):,} images but {paths[1]} {len(y):,} labels")
        check_labels(paths[1], y, info.num_classes)
        return x, y
    parts = [read_cifar_batch(p, label_key="labels" if name == "cifar10" else "fine_labels") for p in paths]
    for p, (_, labels) in zip(paths, parts):
        check_labels(p, labels, info.num_classes)
    return np.concatenate([x for x, _ in parts]), np.concatenate([y for _, y in parts])


@lru_cache(maxsize=16)
def _load_raw(name: str, train: bool, root: str, download: bool | None) -> tuple[Tensor, Tensor]:
    folder = Path(root) / DATASETS[name].folder
    paths = [folder / f for f in SPLIT_FILES[name][train]]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        if download is False:
            raise DatasetNotFoundError(_missing_message(name, Path(root), missing, "download=False"))
        _download(name, train, Path(root), missing)
    data, labels = _read(name, train, paths)
    x = torch.from_numpy(np.ascontiguousarray(data))
    x = x.unsqueeze(1) if x.ndim == 3 else x.permute(0, 3, 1, 2)  # (N, C, H, W)
    return x.contiguous(), torch.from_numpy(labels)


def quick_indices(name: str, train: bool) -> Tensor | None:
    """Indices (official order) of the fixed quick-mode subset of a split; None where quick mode uses all of it."""
    ranges = QUICK_SUBSETS.get((name, bool(train)))
    if ranges is None:
        return None
    return torch.cat([torch.arange(start, start + count) for start, count in ranges])


def _select(name: str, train: bool, subset: str, x: Tensor, y: Tensor, root: Path) -> tuple[Tensor, Tensor]:
    """Apply ``subset`` to the raw split ``x, y`` as found under ``root`` (see :func:`load_dataset`)."""
    split = "training" if train else "test"
    full = FULL_SIZES[name][0 if train else 1]
    found = len(y)
    if subset == "full":
        if found < full:
            raise DatasetIncompleteError(
                f"this setting needs the full {_TITLES[name]} ({full:,} {split} images; found {found:,} under "
                f"{root}) — run with internet access (torchvision downloads it) or point FEDLIB_DATA at the "
                "official files")
        return x, y
    if subset == "quick":
        idx = quick_indices(name, train)
        if idx is None:
            return x, y
        if found == len(idx):  # a data root that holds exactly the quick subset (fedlib's former offline files)
            return x, y
        if found < full:
            raise DatasetIncompleteError(
                f"the quick-mode {_TITLES[name]} subset is the first images of each official batch "
                f"({len(idx):,} {split} images); the {found:,} found under {root} are neither those nor the "
                "full split — point FEDLIB_DATA at the official files")
        return x[idx], y[idx]
    return x, y


_TITLES = {"mnist": "MNIST", "fashion_mnist": "Fashion-MNIST", "cifar10": "CIFAR-10", "cifar100": "CIFAR-100"}


def pixel_source(name: str, *, subset: str = "all", root: str | Path | None = None) -> Tensor:
    """Where each test image's pixels come from: 1 exact official pixels, 2 partly exact, 0 decoded from a lossy
    JPEG export (int8, one per test image of ``load_dataset(name, train=False, subset=subset)``).

    Only the offline CIFAR-10 test split marks some images inexact (``test_batch_pixel_source.npy`` beside
    ``test_batch``; see the data README); without that file every image is the official one (source 1).
    """
    root = Path(root).expanduser() if root is not None else data_root()
    n = len(load_dataset(name, train=False, root=root, subset=subset, normalize=False))
    path = root / DATASETS[name].folder / "test_batch_pixel_source.npy"
    if name != "cifar10" or not path.exists():
        return torch.ones(n, dtype=torch.int8)
    source = torch.from_numpy(np.load(path)).to(torch.int8)
    idx = quick_indices(name, False) if subset == "quick" and len(source) != n else None
    source = source[idx] if idx is not None else source
    if len(source) != n:
        raise ValueError(f"{path} marks {len(source):,} images but the test split has {n:,}")
    return source


def load_dataset(name: str, *, train: bool = True, root: str | Path | None = None,
                 normalize: bool = True, download: bool | None = None, subset: str = "all") -> Split:
    """Load a dataset split as tensors.

    Args:
        name: one of ``"mnist"``, ``"fashion_mnist"``, ``"cifar10"``, ``"cifar100"``.
        train: the training split if True, else the test split.
        root: data root; defaults to :func:`data_root`.
        normalize: standardise each channel with the dataset's mean and std; otherwise pixels are in [0, 1].
        download: None tries a download only when files are missing; False never downloads.
        subset: ``"all"`` whatever the data root holds; ``"quick"`` the fixed quick-mode subset
            (:data:`QUICK_SUBSETS`: CIFAR-10's first images of each official batch, the whole split for the
            others), never more; ``"full"`` the official split, refusing a partial one
            (:class:`DatasetIncompleteError`, e.g. the offline CIFAR-100 subset).

    Returns:
        A :class:`Split` with ``x`` of shape (N, C, H, W), float32.

    Raises:
        ValueError: unknown ``name`` or ``subset``.
        DatasetNotFoundError: files missing and no download possible.
        DatasetIncompleteError: ``subset="full"`` (or ``"quick"``) and the data root holds too few images.
    """
    if name not in DATASETS:
        raise ValueError(f"name must be one of {sorted(DATASETS)}, got {name!r}")
    if subset not in SUBSETS:
        raise ValueError(f"subset must be one of {SUBSETS}, got {subset!r}")
    root = Path(root).expanduser() if root is not None else data_root()
    raw_x, y = _load_raw(name, bool(train), str(root), download)
    raw_x, y = _select(name, bool(train), subset, raw_x, y, root)
    info = DATASETS[name]
    x = raw_x.to(torch.float32).div_(255.0)
    if normalize:
        mean = torch.tensor(info.mean).view(1, -1, 1, 1)
        std = torch.tensor(info.std).view(1, -1, 1, 1)
        x = x.sub_(mean).div_(std)
    return Split(x, y.clone(), info.num_classes)
