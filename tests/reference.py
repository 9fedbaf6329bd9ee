"""The benchmarks' slow, obviously-correct references (seed-style FedAvg, inversefed-style attack)."""

from benchmarks.seed_style import seed_style_fedavg  # noqa: F401
from benchmarks.inversefed_style import inversefed_style_attack  # noqa: F401
