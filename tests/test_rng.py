import pytest
import torch

from fedlib.rng import derive_seed, make_generator


def test_same_keys_same_stream():
    a = torch.rand(5, generator=make_generator(3, "noise", 1, 2))
    b = torch.rand(5, generator=make_generator(3, "noise", 1, 2))
    assert torch.equal(a, b)


def test_streams_differ_by_every_key():
    base = derive_seed(0, "train", 1, 2)
    assert len({base, derive_seed(1, "train", 1, 2), derive_seed(0, "noise", 1, 2),
                derive_seed(0, "train", 2, 1), derive_seed(0, "train", 1, 3)}) == 5


def test_seed_fits_63_bits():
    assert 0 <= derive_seed(2**40, "x") < 2**63


def test_bad_seed():
    with pytest.raises(ValueError, match="seed"):
        derive_seed("0", "x")
