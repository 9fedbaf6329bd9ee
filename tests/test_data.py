import pytest
import torch

from fedlib.data import DATASETS, DatasetNotFoundError, load_dataset


@pytest.mark.parametrize("name,train,count", [
    ("mnist", True, 60000), ("mnist", False, 10000), ("fashion_mnist", True, 60000),
    ("fashion_mnist", False, 10000), ("cifar10", True, 5438), ("cifar10", False, 1017),
    ("cifar100", True, 1117), ("cifar100", False, 916),
])
def test_counts_and_shapes(name, train, count):
    split = load_dataset(name, train=train)
    assert len(split) == count
    assert tuple(split.x.shape[1:]) == DATASETS[name].shape
    assert split.x.dtype == torch.float32 and split.y.dtype == torch.int64
    assert int(split.y.min()) == 0 and int(split.y.max()) == DATASETS[name].num_classes - 1


def test_mnist_class_counts_match_the_official_split(mnist):
    train, test = mnist
    assert torch.bincount(train.y).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert torch.bincount(test.y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]


def test_normalisation(mnist):
    train, _ = mnist
    assert abs(float(train.x.mean())) < 0.01 and abs(float(train.x.std()) - 1) < 0.01
    raw = load_dataset("mnist", normalize=False)
    assert float(raw.x.min()) == 0.0 and float(raw.x.max()) == 1.0


def test_missing_dataset_offline_says_where(tmp_path):
    with pytest.raises(DatasetNotFoundError) as err:
        load_dataset("mnist", root=tmp_path, download=False)
    msg = str(err.value)
    assert str(tmp_path / "MNIST" / "raw" / "train-images-idx3-ubyte") in msg and "FEDLIB_DATA" in msg


def test_failed_download_gives_the_same_clear_error(tmp_path, monkeypatch):
    from torchvision import datasets

    def no_network(self, *args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(datasets.FashionMNIST, "download", no_network)
    with pytest.raises(DatasetNotFoundError, match="network is unreachable"):
        load_dataset("fashion_mnist", root=tmp_path)


def test_unknown_dataset():
    with pytest.raises(ValueError, match="name must be one of"):
        load_dataset("imagenet")


def test_split_rejects_mismatched_lengths():
    from fedlib.data import Split

    with pytest.raises(ValueError, match="disagree"):
        Split(torch.zeros(3, 1, 2, 2), torch.zeros(2, dtype=torch.long), 10)
