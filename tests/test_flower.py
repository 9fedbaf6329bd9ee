"""fedlib on Flower: the ClientApp and Strategy reproduce fedlib's engine, in process, in Flower's simulation
engine and in a real local deployment (SuperLink + SuperNodes on 127.0.0.1).

The tests marked ``flower`` start Ray or Flower processes (about 30 s and 2 min); every test that needs Flower
skips, saying so, when ``flwr`` is not installed (``pip install -r benchmarks/requirements-flower.txt``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fedlib.algorithms.dpfl import ldp_fl, moments_budget
from fedlib.fl import FLConfig, LocalSGD, run_federated
from fedlib.rng import make_generator
from fedlib.unlearning.sensitivity import SensitivityLedger
from fedlib.unlearning.sifu import psi_star, restart_index

ROOT = Path(__file__).resolve().parents[1]
NO_FLOWER = "Flower is not installed: pip install -r benchmarks/requirements-flower.txt (the fedlib[flower] extra)"



def flower():
    """fedlib.flower, or a skip that says how to install Flower."""
    pytest.importorskip("flwr", reason=NO_FLOWER)
    import fedlib.flower

    return fedlib.flower


def example(name, **overrides):
    """One of fedlib.flower's example runs (10-client LDP-FL, 3-client DP-FedAvg), with keys replaced."""
    flower()
    from fedlib.flower.task import EXAMPLES

    return {**EXAMPLES[name], **{k.replace("_", "-"): v for k, v in overrides.items()}}


def engine_run(task, algorithm=None):
    return run_federated(task.model, task.train, task.clients, task.test, task.config,
                         algorithm or task.algorithm(), init=task.init)


# --- without Flower ---------------------------------------------------------------------------------------

def test_fedlib_never_imports_flower_and_the_extra_says_how_to_install_it():
    code = ("import sys; sys.modules['flwr'] = None\n"  # as if Flower were not installed
            "import fedlib, fedlib.fl, fedlib.algorithms.dpfl, fedlib.experiments.common\n"
            "import fedlib.unlearning.sensitivity\n"
            "try:\n    import fedlib.flower.client\nexcept ImportError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert 'pip install "fedlib[flower]"' in out.stdout and "requirements-flower.txt" in out.stdout


def test_the_extra_pins_what_the_requirements_file_pins():
    tomllib = pytest.importorskip("tomllib", reason="Python < 3.11")
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    extra = extra["flower"]
    lines = (ROOT / "benchmarks" / "requirements-flower.txt").read_text().splitlines()
    assert sorted(extra) == sorted(x.strip() for x in lines if x.strip() and not x.startswith("#"))


def test_standard_task_rejects_unknown_keys_and_algorithms():
    standard_task = flower().standard_task

    with pytest.raises(ValueError, match="unknown task keys \\['nosie-multiplier'\\]"):
        standard_task({"nosie-multiplier": 1.0})
    with pytest.raises(ValueError, match="algorithm must be one of"):
        standard_task({"algorithm": "dp-sgd"})


def test_sensitivity_ledger_is_the_leave_one_out_change_of_the_aggregate(small_fed):
    """Ψ's increment with weight 1/(m − 1) is ‖Δ(S) − Δ(S∖{i})‖ (seed 002 eq. 8 for FedAvg, eqs. 43-45)."""
    from helpers import mlp

    train, clients, test = small_fed
    config = FLConfig(rounds=3, clients_per_round=4, local=LocalSGD(1, 16), lr=0.1, weighting="uniform")
    run = run_federated(mlp(), train, clients, None, config, history="updates")
    models, participants, updates = run.history.models, run.history.participants, run.history.updates
    ledger = SensitivityLedger(models[0], len(clients), len(clients), sampling_aware=True)
    expected = torch.zeros(len(clients), dtype=torch.float64)
    for n, chosen in enumerate(participants):
        uploads = torch.stack([updates[n][c] for c in chosen])
        ledger.record(chosen, models[n], uploads, models[n + 1])
        local = (models[n] - uploads).double()
        for j, c in enumerate(chosen):
            without = torch.cat([local[:j], local[j + 1:]]).mean(0)
            expected[c] += torch.linalg.vector_norm(local.mean(0) - without)
        assert torch.allclose(ledger.psi[-1], expected, rtol=1e-5, atol=1e-9)
    assert torch.equal(ledger.models[-1], run.params)
    # the restart point is eq. 14's T for the clients to forget, and the restart model is θ^T + N(0, σ²I)
    sigma, eps, delta = 0.05, 1.0, 0.01
    t, start = ledger.restart([participants[0][0]], sigma=sigma, epsilon=eps, delta=delta,
                              generator=make_generator(0, "restart"))
    assert t == restart_index(ledger.psi[:, participants[0][0]], psi_star(sigma, eps, delta))
    noise = start - ledger.models[t]
    assert abs(float(noise.std()) - sigma) < 0.05 * sigma


# --- Flower's ClientApp and Strategy in this process (no Ray, no processes) ---------------------------------

class InProcessGrid:
    """A Grid whose nodes run the ClientApp right here, each with its own persistent Context (node i: client i)."""

    def __new__(cls, app, num_nodes):
        from flwr.app import Context, Error, Message, RecordDict
        from flwr.serverapp import Grid
        from flwr.supercore.task_identity import TaskIdentity

        TaskIdentity.task_id, TaskIdentity.run_id, TaskIdentity.node_id = 1, 1, 1  # what Flower's runtime sets

        class _Grid(Grid):
            def __init__(self):
                self.contexts = {100 + i: Context(1, 100 + i, {"partition-id": i, "num-partitions": num_nodes},
                                                  RecordDict(), {}) for i in range(num_nodes)}
                self.sent: list[tuple[str, int]] = []

            def set_run(self, run):
                pass

            @property
            def run(self):
                return None

            def create_message(self, *args, **kwargs):
                raise NotImplementedError

            def get_node_ids(self):
                return list(self.contexts)

            def push_messages(self, messages):
                raise NotImplementedError

            def pull_messages(self, message_ids):
                raise NotImplementedError

            def send_and_receive(self, messages, *, timeout=None):
                replies = []
                for msg in messages:
                    self.sent.append((msg.metadata.message_type, msg.metadata.dst_node_id))
                    try:
                        replies.append(app(msg, self.contexts[msg.metadata.dst_node_id]))
                    except Exception as err:  # as Flower's runtime: the error travels back as the reply
                        replies.append(Message(Error(0, f"{type(err).__name__}: {err}"), reply_to=msg))
                return replies

        return _Grid()


def in_process(task, **strategy_kwargs):
    fl = flower()
    grid = InProcessGrid(fl.client_app(lambda config: task), len(task.clients))
    strategy = fl.FedlibStrategy(task, **strategy_kwargs)
    return strategy, strategy.run(grid), grid


@pytest.mark.parametrize("overrides", [
    {},  # the 10-client LDP-FL run: top-k, noise on the kept entries, Global-MGD
    {"algorithm": "lcdp-fl", "cdp_noise_multiplier": 0.5},  # server-side median clipping + central noise
    {"algorithm": "fednore", "lam1": 0.5, "lam2": 0.5, "weighting": "uniform", "num_clients": 4,
     "clients_per_round": 4, "rounds": 3},  # per-client running medians kept in the node's context; penalty, loss
], ids=["ldp-fl", "lcdp-fl", "fednore"])
def test_client_app_and_strategy_reproduce_the_engine(overrides):
    task = flower().standard_task(example("ldp-fl", **overrides))
    ours = engine_run(task)
    strategy, theirs, _ = in_process(task)
    assert torch.equal(theirs.params, ours.params)
    assert theirs.metrics == ours.metrics  # accuracy, losses, ε of every accountant, clip bound, upload size
    assert any(k.startswith("epsilon") and v > 0 for k, v in theirs.metrics[-1].items())


def test_a_privacy_budget_stops_the_flower_run_where_it_stops_the_engine():
    import dataclasses

    base = flower().standard_task(example("ldp-fl", rounds=20))
    task = dataclasses.replace(base, algorithm=lambda: ldp_fl(1.0, budget=moments_budget(5.0, 1e-5)))
    ours = engine_run(task)
    strategy, theirs, grid = in_process(task)
    assert 0 < theirs.rounds_completed == ours.rounds_completed < 20
    assert torch.equal(theirs.params, ours.params) and strategy.stopped
    assert sum(kind == "train" for kind, _ in grid.sent) == theirs.rounds_completed * 5


def test_the_server_keeps_psi_and_serves_an_unlearning_request():
    fl = flower()
    task = fl.standard_task(example("ldp-fl", algorithm="fedavg", weighting="uniform", rounds=3))
    strategy, run, _ = in_process(task, track_sensitivity=True)
    ours = run_federated(task.model, task.train, task.clients, None, task.config, task.algorithm(), init=task.init,
                         history="models")
    assert torch.equal(torch.stack(strategy.sensitivity.models), torch.stack(ours.history.models))
    assert bool((strategy.sensitivity.psi[-1] > 0).any())
    forget = [strategy.sensitivity.psi[-1].argmax().item()]
    t, start = strategy.sensitivity.restart(forget, sigma=0.01, epsilon=1.0, delta=0.01,
                                            generator=make_generator(0, "restart"))
    members = [c for c in range(len(task.clients)) if c not in forget]
    again, retrained, grid = in_process(task, members=members, init=start)
    trained = {again.nodes[c]: c for c in again.nodes}
    assert retrained.rounds_completed == 3 and forget[0] not in {trained[n] for kind, n in grid.sent if kind == "train"}
    with pytest.raises(ValueError, match="track_sensitivity needs plain FedAvg"):
        fl.FedlibStrategy(fl.standard_task(example("ldp-fl")), track_sensitivity=True)


def test_nodes_must_hold_distinct_partitions_and_failures_stop_the_run():
    fl = flower()
    task = fl.standard_task(example("ldp-fl", rounds=1))
    grid = InProcessGrid(fl.client_app(lambda config: task), len(task.clients))
    first = next(iter(grid.contexts.values()))
    first.node_config["partition-id"] = 1  # two nodes claim client 1
    with pytest.raises(ValueError, match="both hold client 1"):
        fl.FedlibStrategy(task).run(grid)
    del first.node_config["partition-id"]
    with pytest.raises(RuntimeError, match="partition-id"):
        fl.FedlibStrategy(task).run(grid)


# --- Flower's simulation engine and a real deployment -------------------------------------------------------

@pytest.mark.flower
@pytest.mark.timeout(300)
def test_ldp_fl_in_flower_simulation_equals_the_engine():
    fl = flower()
    from fedlib.flower.task import tolerance

    config = example("ldp-fl")
    task = fl.standard_task(config)
    ours = engine_run(task)
    strategy = fl.run_simulation(config, num_cpus=2)
    theirs = strategy.result()
    assert theirs.rounds_completed == config["rounds"]
    diff = float((theirs.params - ours.params).abs().max())
    assert diff <= tolerance(task.config, task.init, ours.params), diff
    eps = ours.metrics[-1]["epsilon_ldp"]
    assert eps > 0 and theirs.metrics[-1]["epsilon_ldp"] == eps
    assert strategy.algorithm.metrics()["epsilon_ldp"] == eps  # the server's own ledger


@pytest.mark.flower
@pytest.mark.timeout(600)
def test_dp_fedavg_deployed_on_superlink_and_supernodes_equals_the_simulation():
    fl = flower()
    from fedlib.flower.deployment import LocalDeployment, alive
    from fedlib.flower.task import tolerance

    config = example("dp-fedavg")
    deployment = LocalDeployment(3)
    with deployment:
        deployed = deployment.run(config, timeout=400)
        pids = deployment.pids()
    assert len(pids) >= 4 and not any(alive(pid) for pid in pids)  # SuperLink, 3 SuperNodes and their children
    simulated = fl.run_simulation(config).result()
    task = fl.standard_task(config)
    assert deployed["rounds_completed"] == simulated.rounds_completed == 3
    diff = float((deployed["params"] - simulated.params).abs().max())
    assert diff <= tolerance(task.config, task.init, simulated.params), diff
    assert deployed["metrics"] == simulated.metrics == engine_run(task).metrics


@pytest.mark.flower
@pytest.mark.timeout(120)
def test_a_failing_deployment_leaves_no_process_behind():
    flower()
    from fedlib.flower.deployment import LocalDeployment, alive

    deployment = LocalDeployment(2)
    with pytest.raises(ValueError, match="unknown run config keys"):
        with deployment:
            started = deployment.pids()
            deployment.run({"nosie-multiplier": 1.0})
    assert len(started) >= 3 and not any(alive(pid) for pid in started + deployment.pids())
