"""Datasets held as tensors, and partitioners that split them across clients."""

from fedlib.data.datasets import (
    DATASETS,
    FULL_SIZES,
    QUICK_SUBSETS,
    DatasetIncompleteError,
    DatasetNotFoundError,
    Split,
    blocking_errors,
    data_root,
    load_dataset,
    pixel_source,
    quick_indices,
)
from fedlib.data.partition import (
    PARTITIONERS,
    class_per_client,
    class_shards,
    dirichlet,
    iid,
    partition,
    repeated,
    shards,
    sized,
    unequal,
)

__all__ = [
    "DATASETS", "FULL_SIZES", "QUICK_SUBSETS", "DatasetIncompleteError", "DatasetNotFoundError", "Split",
    "blocking_errors", "data_root", "load_dataset", "pixel_source", "quick_indices",
    "PARTITIONERS", "class_per_client", "class_shards", "dirichlet", "iid", "partition", "repeated", "shards",
    "sized", "unequal",
]
