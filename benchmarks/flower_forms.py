"""One algorithm in three forms, timed side by side: fedlib's engine, Flower's simulation engine, a Flower deployment.

``python -m benchmarks flower_forms`` (needs ``pip install -r benchmarks/requirements-flower.txt``) runs
fedlib.flower's example runs (:data:`fedlib.flower.task.EXAMPLES`): 3-client DP-FedAvg in all three forms, and
10-client LDP-FL in the engine and in simulation. Each form is timed from the start of the run to the final model,
its own start-up included (loading the data, starting Ray or the SuperLink and SuperNodes); before anything is
written, every form's final model must equal the engine's within the float32 tolerance
(:func:`fedlib.flower.task.tolerance`) and its ε must be the engine's. Writes ``results/flower.json``, which the
book's "Deploying with Flower" page renders.
"""

from __future__ import annotations

import json
import os
import platform
import time
from datetime import date
from pathlib import Path

import torch

OUT = Path(__file__).resolve().parents[1] / "results" / "flower.json"


def _epsilon(row: dict[str, float]) -> float:
    return max((v for k, v in row.items() if k.startswith("epsilon")), default=0.0)


def _form(name: str, seconds: float, params: torch.Tensor, metrics: list[dict], reference, tol: float, **extra) -> dict:
    diff = float((params - reference.params).abs().max())
    eps, ref_eps = _epsilon(metrics[-1]), _epsilon(reference.metrics[-1])
    if diff > tol or eps != ref_eps:
        raise AssertionError(f"{name}: max |Δ| {diff:.3g} (tolerance {tol:.3g}), ε {eps} vs the engine's {ref_eps}; "
                             "nothing written")
    return {"form": name, "seconds": round(seconds, 2), "max_abs_diff": diff, "tolerance": tol, "epsilon": eps,
            "accuracy": metrics[-1]["accuracy"], **extra}


def _engine(config: dict) -> tuple[float, float, object]:
    """Seconds in all (loading the data from disk, as every form does), seconds of training, the result."""
    from fedlib.data import datasets
    from fedlib.fl import run_federated
    from fedlib.flower import task as flower_task

    datasets._load_raw.cache_clear()  # read the data from disk again, as the other forms' processes do
    flower_task._standard_task.cache_clear()
    began = time.perf_counter()
    task = flower_task.standard_task(config)
    trained = time.perf_counter()
    result = run_federated(task.model, task.train, task.clients, task.test, task.config, task.algorithm(),
                           init=task.init)
    end = time.perf_counter()
    return end - began, end - trained, result


def run() -> dict:
    """Measure both example runs; returns what is written to ``results/flower.json``."""
    import flwr
    import ray

    from fedlib.flower.deployment import LocalDeployment
    from fedlib.flower.simulation import run_simulation
    from fedlib.flower.task import EXAMPLES, standard_task, tolerance

    load = os.getloadavg()
    runs = {}
    for name in ("dp-fedavg", "ldp-fl"):
        config = EXAMPLES[name]
        seconds, train_s, ours = _engine(config)
        task = standard_task(config)
        tol = tolerance(task.config, task.init, ours.params)
        forms = [_form("fedlib engine", seconds, ours.params, ours.metrics, ours, tol, train_s=round(train_s, 3))]
        began = time.perf_counter()
        simulated = run_simulation(config, num_cpus=2).result()
        forms.append(_form("Flower simulation (Ray, 2 CPUs)", time.perf_counter() - began, simulated.params,
                           simulated.metrics, ours, tol))
        if name == "dp-fedavg":
            began = time.perf_counter()
            with LocalDeployment(int(config["num-clients"])) as deployment:
                started = time.perf_counter() - began
                deployed = deployment.run(config)
                ran = time.perf_counter() - began - started
            forms.append(_form(f"Flower deployment ({config['num-clients']} SuperNodes)", time.perf_counter() - began,
                               deployed["params"], deployed["metrics"], ours, tol, start_s=round(started, 2),
                               run_s=round(ran, 2)))
        runs[name] = {"config": config, "forms": forms}
    return {
        "date": date.today().isoformat(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_1min": [round(load[0], 2), round(os.getloadavg()[0], 2)],
        "versions": {"torch": torch.__version__, "flwr": flwr.__version__, "ray": ray.__version__},
        "torch_threads": torch.get_num_threads(),
        "runs": runs,
    }


def main() -> int:
    try:
        import flwr  # noqa: F401
    except ImportError:
        print("flower_forms: skipped (pip install -r benchmarks/requirements-flower.txt)")
        return 1
    out = run()
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1) + "\n")
    for name, entry in out["runs"].items():
        for form in entry["forms"]:
            print(f"{name:10s} {form['form']:36s} {form['seconds']:8.2f} s  max |Δ| {form['max_abs_diff']:.2g}  "
                  f"ε {form['epsilon']:.3f}")
    print(f"written: {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
