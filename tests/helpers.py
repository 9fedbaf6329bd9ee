"""Small models and configurations shared by the algorithm tests."""

from fedlib.fl import FLConfig, LocalSGD
from fedlib.models import build_model
from fedlib.rng import make_generator


def mlp(seed=0):
    """The thesis MLP with one hidden layer of 32 units: fast, and on the explicit-backprop path."""
    return build_model("mlp", generator=make_generator(seed, "init"), hidden=(32,))


def cfg(**kw):
    """3 rounds, 4 clients per round, one local epoch of batch 16, LR 0.1, seed 0; ``kw`` overrides."""
    return FLConfig(**{**dict(rounds=3, clients_per_round=4, local=LocalSGD(1, 16), lr=0.1, seed=0), **kw})
