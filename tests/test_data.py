import shutil

import pytest
import torch

from fedlib.data import DATASETS, DatasetNotFoundError, data_root, load_dataset
from fedlib.data.datasets import DatasetIncompleteError, pixel_source, quick_indices


@pytest.mark.parametrize("name,train,count", [
    ("mnist", True, 60000), ("mnist", False, 10000), ("fashion_mnist", True, 60000),
    ("fashion_mnist", False, 10000), ("cifar10", True, 50000), ("cifar10", False, 10000),
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


def test_full_cifar10_is_the_official_split():
    train, test = load_dataset("cifar10", subset="full"), load_dataset("cifar10", train=False, subset="full")
    assert torch.bincount(train.y).tolist() == [5000] * 10 and torch.bincount(test.y).tolist() == [1000] * 10


@pytest.mark.parametrize("train,sizes", [(True, (1102, 1017, 1017, 1285, 1017)), (False, (1017,))])
def test_quick_cifar10_is_the_fixed_prefix_of_each_official_batch(train, sizes):
    """Quick mode's CIFAR-10 never grows with the data root: the first images of each batch of 10,000, as the
    offline files held before the full CIFAR-10 arrived (5,438 / 1,017)."""
    full = load_dataset("cifar10", train=train, normalize=False)
    quick = load_dataset("cifar10", train=train, normalize=False, subset="quick")
    assert len(quick) == sum(sizes)
    starts = [0, *torch.tensor(sizes).cumsum(0).tolist()]
    for batch, (begin, end) in enumerate(zip(starts, starts[1:])):
        first = batch * 10_000
        assert torch.equal(quick.x[begin:end], full.x[first:first + end - begin])
        assert torch.equal(quick.y[begin:end], full.y[first:first + end - begin])
    assert torch.equal(quick_indices("cifar10", train), torch.cat(
        [torch.arange(b * 10_000, b * 10_000 + n) for b, n in enumerate(sizes)]))


def test_quick_subset_of_a_root_that_holds_only_it(tmp_path):
    """A data root with exactly the quick subset (fedlib's former offline files) serves quick mode as it is, and
    refuses full mode with the counts in the message."""
    import pickle

    src = load_dataset("cifar10", normalize=False, subset="quick")
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    shutil.copy(data_root() / "cifar-10-batches-py" / "batches.meta", folder)
    data = (src.x * 255).round().to(torch.uint8).reshape(len(src), -1).numpy()  # official rows: R, G, B planes
    cuts = [0, 1102, 2119, 3136, 4421, 5438]
    for b in range(5):
        part = {"batch_label": b"x", "labels": src.y[cuts[b]:cuts[b + 1]].tolist(), "data": data[cuts[b]:cuts[b + 1]]}
        (folder / f"data_batch_{b + 1}").write_bytes(pickle.dumps(part, protocol=2))
    (folder / "test_batch").write_bytes(pickle.dumps({"batch_label": b"t", "labels": [0], "data": data[:1]}))
    assert torch.equal(load_dataset("cifar10", root=tmp_path, normalize=False, subset="quick").x, src.x)
    with pytest.raises(DatasetIncompleteError, match=r"full CIFAR-10 \(50,000 training images; found 5,438"):
        load_dataset("cifar10", root=tmp_path, subset="full")


def test_full_mode_refuses_the_cifar100_subset():
    with pytest.raises(DatasetIncompleteError, match=r"full CIFAR-100 \(50,000 training images; found 1,117.*FEDLIB_DATA"):
        load_dataset("cifar100", subset="full")
    assert len(load_dataset("cifar100", subset="quick")) == 1117


def test_pixel_source_marks_the_jpeg_decoded_test_images():
    source = pixel_source("cifar10")
    assert len(source) == 10_000 and torch.bincount(source.long(), minlength=3).tolist() == [5400, 4599, 1]
    assert bool((source[:1017] == 1).all()) and int(source[1017]) == 2
    test = load_dataset("cifar10", train=False)
    vehicles = torch.isin(test.y, torch.tensor([0, 1, 8, 9]))  # airplane, automobile, ship, truck: exact PNGs
    assert bool((source[vehicles] == 1).all()) and bool((source[~vehicles][1018 - 1017:] != 1).any())
    assert bool((pixel_source("cifar10", subset="quick") == 1).all())  # quick's 1,017 test images are all exact
    assert bool((pixel_source("mnist") == 1).all()) and len(pixel_source("mnist")) == 10_000


def test_unknown_subset():
    with pytest.raises(ValueError, match="subset must be one of"):
        load_dataset("mnist", subset="half")
