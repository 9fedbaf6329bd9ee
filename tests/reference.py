"""The seed-style FedAvg of the benchmarks, used here as the slow, obviously-correct reference."""

from benchmarks.seed_style import seed_style_fedavg  # noqa: F401
