"""Reading the dataset files themselves, checking every one before trusting it.

MNIST and Fashion-MNIST come as IDX files; CIFAR-10/100 as Python pickles. Both are read here rather than by
torchvision's classes so that a bad file is reported as *which* file is wrong and *how* (size, magic number, image
count, label range), and so that a pickle in the data root can never run code: CIFAR pickles are loaded by an
unpickler that admits only what the official files contain (NumPy arrays and their dtypes).
"""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np


class DatasetFileError(ValueError):
    """A dataset file exists but is not what it should be (truncated, wrong magic, bad labels, ...)."""


_IDX_MAGIC = {2049: 1, 2051: 3}  # labels: 1 dimension; images: 3 dimensions (N, rows, cols)


def read_idx(path: Path, *, kind: str) -> np.ndarray:
    """An IDX file of unsigned bytes: ``kind="images"`` (N, rows, cols) or ``"labels"`` (N,)."""
    want = 2051 if kind == "images" else 2049
    data = Path(path).read_bytes()
    if len(data) < 8:
        raise DatasetFileError(f"{path}: {len(data)} bytes, too short for an IDX header (the file is truncated or "
                               "empty; delete it to download it again)")
    magic = int.from_bytes(data[:4], "big")
    if magic != want:
        raise DatasetFileError(f"{path}: magic number {magic}, expected {want} for an IDX {kind} file "
                               "(not an uncompressed MNIST-format file?)")
    ndim = _IDX_MAGIC[magic]
    header = 4 + 4 * ndim
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    expected = header + int(np.prod(dims))
    if len(data) != expected:
        raise DatasetFileError(f"{path}: {len(data):,} bytes, but its header announces {dims[0]:,} {kind} "
                               f"({expected:,} bytes): the file is truncated or corrupt; delete it to download it "
                               "again")
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(dims).copy()


class _Refused(pickle.UnpicklingError):
    """A pickle asked for a global that no dataset file contains."""


class _DatasetUnpickler(pickle.Unpickler):
    """Admits only the globals a CIFAR batch uses: NumPy's array reconstruction, dtypes, and bytes (protocol 2)."""

    ALLOWED = {("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy", "ndarray"), ("numpy", "dtype"), ("_codecs", "encode")}  # protocol-2 bytes

    def find_class(self, module: str, name: str):
        if (module, name) not in self.ALLOWED:
            raise _Refused(f"global {module}.{name} is not part of a CIFAR file")
        return super().find_class(module, name)


def read_cifar_batch(path: Path, *, label_key: str) -> tuple[np.ndarray, np.ndarray]:
    """A CIFAR batch pickle: images (N, 32, 32, 3) uint8 and labels (N,) int64, read without running code."""
    try:
        with open(path, "rb") as fh:
            batch = _DatasetUnpickler(fh, encoding="latin1").load()
    except _Refused as err:
        raise DatasetFileError(f"{path}: not a CIFAR batch ({err}); fedlib never unpickles code from the data root — "
                               "delete the file to download it again") from None
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError) as err:
        raise DatasetFileError(f"{path}: unreadable CIFAR batch ({type(err).__name__}: {err}); the file is truncated "
                               "or corrupt — delete it to download it again") from None
    if not isinstance(batch, dict) or "data" not in batch or label_key not in batch:
        raise DatasetFileError(f"{path}: a CIFAR batch is a dict with 'data' and '{label_key}'; found "
                               f"{type(batch).__name__}" + (f" with keys {sorted(batch)}" if isinstance(batch, dict)
                                                            else ""))
    data = np.asarray(batch["data"])
    labels = np.asarray(batch[label_key], dtype=np.int64)
    if data.dtype != np.uint8 or data.ndim != 2 or data.shape[1] != 3072:
        raise DatasetFileError(f"{path}: 'data' must be N × 3072 uint8, found {data.shape} {data.dtype}")
    if len(labels) != len(data):
        raise DatasetFileError(f"{path}: {len(data):,} images but {len(labels):,} labels")
    return data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels


def check_labels(path: Path, labels: np.ndarray, num_classes: int) -> None:
    """Labels must lie in 0..num_classes − 1."""
    if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
        raise DatasetFileError(f"{path}: labels range over {labels.min()}..{labels.max()}, but the dataset has "
                               f"{num_classes} classes (0..{num_classes - 1})")
