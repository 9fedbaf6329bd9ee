import pytest
import torch

from fedlib.data import class_per_client, dirichlet, iid, partition, repeated, shards, sized, unequal
from fedlib.rng import make_generator

LABELS = torch.arange(1000) % 10  # 100 per class


def gen(seed=0):
    return make_generator(seed, "partition-test")


def assert_exact_cover(parts, n, times=1):
    counts = torch.bincount(torch.cat(parts), minlength=n)
    assert torch.all(counts == times), "every sample must be assigned exactly `times` times"


@pytest.mark.parametrize("method,kwargs", [
    ("iid", {}), ("shards", {"shards_per_client": 2}), ("dirichlet", {"alpha": 0.5}),
    ("class_per_client", {"classes_per_client": 2}), ("unequal", {"sigma": 1.0}),
])
def test_every_sample_exactly_once(method, kwargs):
    parts = partition(method, LABELS, 20, generator=gen(), **kwargs)
    assert len(parts) == 20
    assert_exact_cover(parts, len(LABELS))


@pytest.mark.parametrize("method,kwargs", [
    ("iid", {}), ("shards", {}), ("dirichlet", {"alpha": 0.3}), ("class_per_client", {"classes_per_client": 3}),
    ("unequal", {}),
])
def test_deterministic_for_a_seed(method, kwargs):
    a = partition(method, LABELS, 10, generator=gen(1), **kwargs)
    b = partition(method, LABELS, 10, generator=gen(1), **kwargs)
    c = partition(method, LABELS, 10, generator=gen(2), **kwargs)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


def test_iid_sizes_equal():
    assert {len(p) for p in iid(LABELS, 10, generator=gen())} == {100}


def test_shards_give_few_labels_per_client():
    parts = shards(LABELS, 50, generator=gen(), shards_per_client=2)
    assert {len(p) for p in parts} == {20}
    assert max(len(torch.unique(LABELS[p])) for p in parts) <= 2  # shards of 10 never straddle classes here


def test_class_per_client_labels():
    parts = class_per_client(LABELS, 10, generator=gen(), classes_per_client=2)
    assert all(len(torch.unique(LABELS[p])) == 2 for p in parts)


def test_dirichlet_alpha_controls_skew():
    def mean_classes(alpha):
        parts = dirichlet(LABELS, 10, generator=gen(), alpha=alpha)
        return sum(len(torch.unique(LABELS[p])) for p in parts) / 10

    assert mean_classes(0.05) < mean_classes(100.0) == 10


def test_unequal_sizes_vary_and_zero_sigma_is_equal():
    sizes = [len(p) for p in unequal(LABELS, 10, generator=gen(), sigma=1.5)]
    assert max(sizes) > 2 * min(sizes)
    assert {len(p) for p in unequal(LABELS, 10, generator=gen(), sigma=0.0)} == {100}


def test_sized_clients_hold_their_sizes_disjointly():
    sizes = [5, 300, 17, 78]
    parts = sized(LABELS, 4, generator=gen(), sizes=sizes)
    assert [len(p) for p in parts] == sizes
    assert len(torch.unique(torch.cat(parts))) == sum(sizes)
    assert all(torch.equal(a, b) for a, b in zip(parts, sized(LABELS, 4, generator=gen(), sizes=sizes)))
    with pytest.raises(ValueError, match="sizes must be 4 positive ints"):
        sized(LABELS, 4, generator=gen(), sizes=[500, 500, 1, 1])


def test_repetition_thesis_mnist_x10():
    parts = repeated(LABELS, 10, "shards", 100, generator=gen(), shards_per_client=2)
    assert len(parts) == 100 and {len(p) for p in parts} == {100}
    assert_exact_cover(parts, len(LABELS), times=10)


@pytest.mark.parametrize("call,match", [
    (lambda: iid(LABELS, 0, generator=gen()), "num_clients"),
    (lambda: iid(LABELS, 5000, generator=gen()), "num_clients"),
    (lambda: dirichlet(LABELS, 10, generator=gen(), alpha=0), "alpha"),
    (lambda: shards(LABELS, 10, generator=gen(), shards_per_client=0), "shards_per_client"),
    (lambda: class_per_client(LABELS, 10, generator=gen(), classes_per_client=11), "classes_per_client"),
    (lambda: class_per_client(LABELS, 2, generator=gen(), classes_per_client=2), "every sample"),
    (lambda: partition("random", LABELS, 10, generator=gen()), "method"),
    (lambda: repeated(LABELS, 0, "iid", 10, generator=gen()), "times"),
])
def test_bad_arguments_name_the_parameter(call, match):
    with pytest.raises(ValueError, match=match):
        call()
