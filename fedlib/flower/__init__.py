"""fedlib's algorithms on Flower: a ClientApp, a Strategy and ServerApp, simulation and a local deployment.

Flower is an optional extra: ``pip install "fedlib[flower]"`` (from a checkout: ``pip install -e ".[flower]"``).
``import fedlib`` never imports Flower; ``import fedlib.flower`` needs it and says how to install it.
"""

import os

# Flower sends usage events to flower.ai unless told not to; fedlib runs offline and keeps the run local.
# An explicit FLWR_TELEMETRY_ENABLED=1 still turns them on.
os.environ.setdefault("FLWR_TELEMETRY_ENABLED", "0")

try:
    import flwr  # noqa: F401
except ImportError as err:  # pragma: no cover - exercised by tests/test_flower.py with flwr hidden
    raise ImportError(
        "fedlib.flower needs Flower, an optional extra of fedlib. Install it with\n"
        '    pip install "fedlib[flower]"\n'
        "or, from a fedlib checkout, pip install -r benchmarks/requirements-flower.txt "
        "(flwr[simulation]==1.41.0 and grpcio-health-checking==1.81.1)") from err

from fedlib.flower.client import client_app
from fedlib.flower.server import FedlibStrategy, server_app
from fedlib.flower.simulation import run_simulation
from fedlib.flower.task import DEFAULTS, Task, standard_task

__all__ = ["client_app", "FedlibStrategy", "server_app", "run_simulation", "DEFAULTS", "Task", "standard_task"]
