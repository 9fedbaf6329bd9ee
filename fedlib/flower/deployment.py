"""A real Flower deployment on this machine: one ``flower-superlink`` and N ``flower-supernode`` processes.

Everything listens on 127.0.0.1 only, on free ports chosen at start, in insecure mode (no TLS, no node
authentication: acceptable on loopback, never across a network; see the book's "Deploying with Flower").
:class:`LocalDeployment` starts the processes, submits fedlib's Flower App with ``flwr run`` and waits for it,
all with timeouts, and stops every process it started (and their children) when it exits, also on failure.
Run ``python -m fedlib.flower.deployment`` to deploy a 3-round DP-FedAvg run and compare it with the
simulation's. Process-tree clean-up reads ``/proc`` (Linux); elsewhere only the process groups are stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import torch

from fedlib.flower.task import DEFAULTS, RUNNER_KEYS, ConfigValue

#: The Flower App's project file: fedlib's apps (``fedlib.flower.app``), configured by the run config.
APP_PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "fedlib-app"
version = "0.1.0"
description = "fedlib's algorithms as a Flower App"
dependencies = ["flwr[simulation]>=1.41.0", "fedlib"]

[tool.flwr.app]
publisher = "fedlib"

[tool.flwr.app.components]
serverapp = "fedlib.flower.app:serverapp"
clientapp = "fedlib.flower.app:clientapp"

[tool.flwr.app.config]
{config}
"""

CONNECTION = "fedlib-local"


def write_app(directory: str | Path) -> Path:
    """Write the Flower App project (a ``pyproject.toml``) that ``flwr run`` submits; returns its folder."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    keys = {**DEFAULTS, "result-file": "", "timeout": 600.0}
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in keys.items())
    (directory / "pyproject.toml").write_text(APP_PYPROJECT.format(config=lines))
    return directory


def executable(name: str) -> str:
    """The path of Flower's command ``name`` (beside this Python, else on PATH)."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        raise FileNotFoundError(f"Flower's command {name!r} is not installed; pip install \"fedlib[flower]\"")
    return found


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = entry.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        tree.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    return tree


def descendants(pid: int) -> list[int]:
    """Every live descendant of ``pid`` (empty where ``/proc`` is missing)."""
    if not Path("/proc").is_dir():
        return []
    tree, out, todo = _children(), [], [pid]
    while todo:
        for child in tree.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, exited but not yet reaped, does not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


class LocalDeployment:
    """A SuperLink and ``num_nodes`` SuperNodes (node i has ``partition-id`` i) on 127.0.0.1, as a context manager.

    Args:
        num_nodes: SuperNodes to start (the task's number of clients).
        home: Flower's home folder (FLWR_HOME: installed apps, CLI config); default a temporary folder.
        env: extra environment variables for every process.
        start_timeout: seconds to wait for the SuperLink to listen.
        stop_timeout: seconds to wait after SIGTERM before SIGKILL.
    """

    def __init__(self, num_nodes: int, *, home: str | Path | None = None, env: Mapping[str, str] | None = None,
                 start_timeout: float = 60.0, stop_timeout: float = 10.0) -> None:
        if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
            raise ValueError(f"num_nodes must be a positive int, got {num_nodes!r}")
        self.num_nodes = num_nodes
        self._tmp = tempfile.TemporaryDirectory(prefix="fedlib-flower-") if home is None else None
        self.home = Path(home if home is not None else self._tmp.name)
        root = str(Path(__file__).resolve().parents[2])
        self.env = {**os.environ, "FLWR_HOME": str(self.home), "FLWR_TELEMETRY_ENABLED": "0",
                    "FLWR_DISABLE_UPDATE_CHECK": "1", "FEDLIB_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                    "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH", "")) if p),
                    "PATH": os.pathsep.join((str(Path(sys.executable).parent), os.environ.get("PATH", ""))),
                    **(env or {})}
        self.start_timeout = start_timeout
        self.stop_timeout = stop_timeout
        self.processes: list[subprocess.Popen] = []
        self.logs: list[Path] = []
        self.port = 0

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen:
        log = self.home / "logs" / f"{name}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as out:  # the child keeps its own copy of the descriptor
            proc = subprocess.Popen([executable(args[0]), *args[1:]], stdout=out,
                                    stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        self.processes.append(proc)
        self.logs.append(log)
        return proc

    def _wait_listening(self, port: int, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}:\n{self.tail()}")
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    return
            time.sleep(0.2)
        raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {self.start_timeout:.0f} s:\n{self.tail()}")

    def start(self) -> LocalDeployment:
        """Start the SuperLink, wait until it listens, then start the SuperNodes."""
        self.port = free_port()
        link = self._spawn("superlink", ["flower-superlink", "--insecure", "--host", "127.0.0.1", "--port",
                                         str(self.port), "--disable-runtime-dependency-installation"])
        self._wait_listening(self.port, link)
        for i in range(self.num_nodes):
            self._spawn(f"supernode{i}", [
                "flower-supernode", "--insecure", "--superlink", f"127.0.0.1:{self.port}", "--host", "127.0.0.1",
                "--port", str(free_port()), "--max-retries", "20", "--max-wait-time", str(self.start_timeout),
                "--node-config", f"partition-id={i} num-partitions={self.num_nodes}"])
        (self.home / "config.toml").write_text(
            f'[superlink]\ndefault = "{CONNECTION}"\n\n[superlink.{CONNECTION}]\n'
            f'address = "127.0.0.1:{self.port}"\ninsecure = true\n')
        return self

    def _flwr(self, args: list[str], timeout: float) -> dict:
        out = subprocess.run([executable("flwr"), *args, "--format", "json"],
                             capture_output=True, text=True, env=self.env, timeout=timeout)
        try:
            reply = json.loads(out.stdout)
        except json.JSONDecodeError:
            reply = {"success": False}
        if out.returncode != 0 or not reply.get("success"):
            raise RuntimeError(f"flwr {' '.join(args)} failed ({out.returncode}):\n{out.stdout}\n{out.stderr}")
        return reply

    def run(self, config: Mapping[str, ConfigValue], *, timeout: float = 600.0, poll: float = 1.0) -> dict:
        """Submit fedlib's Flower App with ``config`` (task keys, see :data:`~fedlib.flower.task.DEFAULTS`) and
        wait at most ``timeout`` s for it; returns what the ServerApp saved (params, metrics, rounds_completed)."""
        bad = sorted(set(config) - set(DEFAULTS) - set(RUNNER_KEYS))
        if bad:
            raise ValueError(f"unknown run config keys {bad}")
        deadline = time.monotonic() + timeout
        app = write_app(self.home / "app")
        result = self.home / "result.pt"
        result.unlink(missing_ok=True)
        pairs = {**config, "result-file": str(result)}
        overrides = " ".join(f"{k}={json.dumps(v)}" for k, v in pairs.items())
        run_id = self._flwr(["run", str(app), CONNECTION, "--run-config", overrides], timeout)["run-id"]
        status = "pending"
        while time.monotonic() < deadline:
            status = self._flwr(["ls", CONNECTION, "--run-id", str(run_id)], timeout)["runs"][0]["status"]
            if status.startswith("finished"):
                break
            time.sleep(poll)
        if status != "finished:completed" or not result.exists():
            log = subprocess.run([executable("flwr"), "log", str(run_id), CONNECTION, "--show"],
                                 capture_output=True, text=True, env=self.env, timeout=60).stdout
            raise RuntimeError(f"run {run_id} ended as {status!r} (timeout {timeout:.0f} s):\n{log[-4000:]}")
        return torch.load(result, weights_only=False)

    def tail(self, lines: int = 15) -> str:
        """The last lines of every process's log."""
        out = []
        for log in self.logs:
            text = log.read_text(errors="replace").splitlines() if log.exists() else []
            out.append(f"--- {log.name}\n" + "\n".join(text[-lines:]))
        return "\n".join(out)

    def pids(self) -> list[int]:
        """Every live process of the deployment: those started and their descendants."""
        started = [p.pid for p in self.processes]
        return [pid for pid in dict.fromkeys(started + [d for pid in started for d in descendants(pid)])
                if alive(pid)]

    def stop(self) -> None:
        """SIGTERM the deployment's processes (those started, their process groups and their descendants, listed
        before anything is signalled), then SIGKILL what is left after ``stop_timeout`` s."""
        pids = self.pids()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            # a started process leads its own process group; signal it only while it is ours (not yet reaped)
            groups = [p.pid for p in self.processes if p.poll() is None]
            for send, target in [(os.kill, pid) for pid in pids if alive(pid)] + [(os.killpg, g) for g in groups]:
                try:
                    send(target, sig)
                except (ProcessLookupError, PermissionError):
                    pass
            deadline = time.monotonic() + self.stop_timeout
            while time.monotonic() < deadline and any(alive(pid) for pid in pids):
                for proc in self.processes:
                    proc.poll()  # reap our own children
                time.sleep(0.1)
            pids = [pid for pid in pids if alive(pid)]
            if not pids:
                break
        for proc in self.processes:
            try:
                proc.wait(timeout=self.stop_timeout)
            except subprocess.TimeoutExpired:
                pass

    def __enter__(self) -> LocalDeployment:
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc) -> None:
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()


def main() -> int:
    from fedlib.flower.simulation import run_simulation
    from fedlib.flower.task import EXAMPLES, standard_task, tolerance

    config = EXAMPLES["dp-fedavg"]
    began = time.perf_counter()
    with LocalDeployment(int(config["num-clients"])) as deployment:
        deployed = deployment.run(config)
    took = time.perf_counter() - began
    simulated = run_simulation(config).result()
    simulated_task = standard_task(config)
    diff = float((deployed["params"] - simulated.params).abs().max())
    tol = tolerance(simulated_task.config, deployed["params"], simulated.params, simulated_task.init)
    print(f"deployment: {took:.1f} s, {deployed['rounds_completed']} rounds; max |deployed - simulated| = {diff:.3g} "
          f"(float32 tolerance {tol:.3g})")
    print(f"last row: {deployed['metrics'][-1]}")
    return 0 if diff <= tol else 1


if __name__ == "__main__":
    raise SystemExit(main())
