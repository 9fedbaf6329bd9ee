"""The Flower App that ``flwr run`` deploys (see :func:`fedlib.flower.deployment.write_app`): fedlib's standard
task, configured by the run config (``[tool.flwr.app.config]``, ``flwr run --run-config``)."""

from fedlib.flower.client import client_app
from fedlib.flower.server import server_app

clientapp = client_app()
serverapp = server_app()
