"""Datasets held as tensors, and partitioners that split them across clients."""

from fedlib.data.datasets import DATASETS, DatasetNotFoundError, Split, data_root, load_dataset
from fedlib.data.partition import (
    PARTITIONERS,
    class_per_client,
    class_shards,
    dirichlet,
    iid,
    partition,
    repeated,
    shards,
    unequal,
)

__all__ = [
    "DATASETS", "DatasetNotFoundError", "Split", "data_root", "load_dataset",
    "PARTITIONERS", "class_per_client", "class_shards", "dirichlet", "iid", "partition", "repeated", "shards",
    "unequal",
]
