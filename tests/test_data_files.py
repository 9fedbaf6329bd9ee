"""A bad dataset file says which file is wrong and how; a pickle in the data root never runs code; a failed load
leaves no empty folder behind."""

import pickle
import shutil

import numpy as np
import pytest

from fedlib.data import DatasetNotFoundError, data_root, load_dataset
from fedlib.data.files import DatasetFileError


@pytest.fixture
def mnist_root(tmp_path):
    """A copy of the MNIST test split (the training files are linked, not copied)."""
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for f in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        shutil.copy(data_root() / "MNIST" / "raw" / f, raw / f)
    return tmp_path


def load_test(root):
    return load_dataset("mnist", train=False, root=root, download=False)


def test_truncated_image_file(mnist_root):
    path = mnist_root / "MNIST" / "raw" / "t10k-images-idx3-ubyte"
    path.write_bytes(path.read_bytes()[:100_000])
    with pytest.raises(DatasetFileError, match=r"t10k-images-idx3-ubyte: 100,000 bytes, but its header announces "
                                               r"10,000 images \(7,840,016 bytes\): the file is truncated"):
        load_test(mnist_root)


def test_bad_magic_and_empty_file(mnist_root):
    path = mnist_root / "MNIST" / "raw" / "t10k-labels-idx1-ubyte"
    data = bytearray(path.read_bytes())
    data[3] = 7
    path.write_bytes(bytes(data))
    with pytest.raises(DatasetFileError, match="t10k-labels-idx1-ubyte: magic number 2055, expected 2049"):
        load_test(mnist_root)
    path.write_bytes(b"")
    with pytest.raises(DatasetFileError, match="0 bytes, too short for an IDX header"):
        load_test(mnist_root)


def test_labels_out_of_range(mnist_root):
    path = mnist_root / "MNIST" / "raw" / "t10k-labels-idx1-ubyte"
    data = bytearray(path.read_bytes())
    data[8] = 12
    path.write_bytes(bytes(data))
    with pytest.raises(DatasetFileError, match=r"labels range over 0..12, but the dataset has 10 classes"):
        load_test(mnist_root)


def test_missing_file_names_it(mnist_root):
    (mnist_root / "MNIST" / "raw" / "t10k-labels-idx1-ubyte").unlink()
    with pytest.raises(DatasetNotFoundError, match="t10k-labels-idx1-ubyte"):
        load_test(mnist_root)


@pytest.fixture
def cifar_root(tmp_path):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    shutil.copy(data_root() / "cifar-100-python" / "test", folder / "test")
    return tmp_path


def test_truncated_cifar_batch(cifar_root):
    path = cifar_root / "cifar-100-python" / "test"
    path.write_bytes(path.read_bytes()[:50_000])
    with pytest.raises(DatasetFileError, match="test: unreadable CIFAR batch .* truncated or corrupt"):
        load_dataset("cifar100", train=False, root=cifar_root, download=False)


class _Exploit:
    def __reduce__(self):
        return (exec, ("import pathlib; pathlib.Path('PWNED').write_text('x')",))


def test_a_crafted_pickle_in_the_data_root_never_runs(cifar_root, monkeypatch):
    monkeypatch.chdir(cifar_root)
    path = cifar_root / "cifar-100-python" / "test"
    path.write_bytes(pickle.dumps({"data": _Exploit(), "fine_labels": [0]}, protocol=2))
    with pytest.raises(DatasetFileError, match="never unpickles code"):
        load_dataset("cifar100", train=False, root=cifar_root, download=False)
    assert not (cifar_root / "PWNED").exists()
    path.write_bytes(pickle.dumps({"data": np.zeros((2, 3072), np.uint8), "fine_labels": [0, 1]}, protocol=2))
    assert len(load_dataset("cifar100", train=False, root=cifar_root, download=False)) == 2  # plain arrays load


def test_a_failed_download_leaves_no_empty_folder(tmp_path, monkeypatch):
    from torchvision import datasets

    def no_network(self, *args, **kwargs):
        raise OSError("network is unreachable")

    monkeypatch.setattr(datasets.MNIST, "download", no_network)
    root = tmp_path / "fresh"
    with pytest.raises(DatasetNotFoundError, match="network is unreachable"):
        load_dataset("mnist", root=root)
    assert not root.exists()


def test_fedlib_data_must_be_a_folder(tmp_path, monkeypatch):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    monkeypatch.setenv("FEDLIB_DATA", str(not_a_folder))
    with pytest.raises(ValueError, match=f"FEDLIB_DATA={not_a_folder} is not a folder"):
        data_root()
