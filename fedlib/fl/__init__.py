"""The federated-learning engine: local training, client transforms, aggregation, server update."""

from fedlib.fl.aggregators import Aggregator, CentralGaussian, WeightedMean
from fedlib.fl.client import LocalSGD, LocalTrainer, evaluate
from fedlib.fl.component import Component, RoundContext
from fedlib.fl.engine import Algorithm, FLConfig, History, RunResult, RunSummary, run_federated, sample_clients
from fedlib.fl.params import get_flat, layer_slices, set_flat
from fedlib.fl.server import ServerOptimizer
from fedlib.fl.transforms import (
    ClientMessage,
    ClientTransform,
    ClipPerLayer,
    ClipUpdate,
    GaussianNoise,
    MedianClip,
    NormBound,
    TopK,
)

__all__ = [
    "Aggregator", "CentralGaussian", "WeightedMean", "LocalSGD", "LocalTrainer", "evaluate", "Component",
    "RoundContext", "Algorithm", "FLConfig", "History", "RunResult", "RunSummary", "run_federated", "sample_clients",
    "get_flat", "layer_slices", "set_flat", "ServerOptimizer", "ClientMessage", "ClientTransform",
    "ClipPerLayer", "ClipUpdate", "GaussianNoise", "MedianClip", "NormBound", "TopK",
]
