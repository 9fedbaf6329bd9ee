"""The seed sweep that registers a chapter's quick-mode verdicts (:mod:`fedlib.ledger`).

``python -m fedlib sweep CHAPTER`` runs the chapter in quick mode at seeds 0-4, each with 1 and with 2 torch threads
(every run a separate process, so thread counts cannot leak), keeps each run's measured values in
``results/sweeps/<chapter>/seed<S>-threads<T>.json`` (a killed sweep resumes), and writes the registry
``fedlib/experiments/verdicts/<chapter>.json``: the ledger's signature, the quick configuration's fingerprint and
every run's values. The verdicts themselves are recomputed from the values by :func:`fedlib.ledger.register`, so a
registry can be read and checked by anyone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fedlib.fingerprint import fingerprint
from fedlib.ledger import ledger_signature, verdicts_path
from fedlib.results import load_results, results_dir, write_atomic

SEEDS = (0, 1, 2, 3, 4)
THREADS = (1, 2)


def run_file(folder: Path, seed: int, threads: int) -> Path:
    return folder / f"seed{seed}-threads{threads}.json"


def _start(chapter: str, seed: int, threads: int, out: Path) -> subprocess.Popen:
    env = {**os.environ, "FEDLIB_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads),
           "MKL_NUM_THREADS": str(threads)}
    return subprocess.Popen([sys.executable, "-m", "fedlib", "run", chapter, "--mode", "quick", "--seed", str(seed),
                             "--out", str(out)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def sweep(chapter: str, *, seeds: Sequence[int] = SEEDS, threads: Sequence[int] = THREADS, cores: int = 2,
          folder: Path | None = None, log=print) -> dict[str, Any]:
    """Run the missing runs of the sweep (at most ``cores`` threads busy at once) and write the registry."""
    from fedlib.experiments import chapter_module

    module = chapter_module(chapter)
    folder = Path(folder or results_dir() / "sweeps" / chapter)
    folder.mkdir(parents=True, exist_ok=True)
    config = fingerprint(module.QUICK)
    todo = [(s, t) for t in sorted(threads, reverse=True) for s in seeds
            if not _valid(run_file(folder, s, t), config)]
    running: list[tuple[subprocess.Popen, int, int, Path, float]] = []
    with tempfile.TemporaryDirectory(prefix=f"sweep-{chapter}-") as tmp:
        while todo or running:
            busy = sum(t for _, _, t, _, _ in running)
            startable = [job for job in todo if busy + job[1] <= max(cores, job[1])]
            if startable and (busy == 0 or busy + startable[0][1] <= cores):
                seed, t = startable[0]
                todo.remove((seed, t))
                out = Path(tmp) / f"{seed}-{t}"
                running.append((_start(chapter, seed, t, out), seed, t, out, time.perf_counter()))
                log(f"{chapter}: started seed {seed}, {t} thread(s)")
                continue
            time.sleep(2)
            for job in list(running):
                proc, seed, t, out, began = job
                if proc.poll() is None:
                    continue
                running.remove(job)
                if proc.returncode != 0:
                    raise RuntimeError(f"{chapter} seed {seed} with {t} thread(s) failed:\n{proc.stderr.read()[-3000:]}")
                res = load_results(chapter, "quick", out)
                record = {"seed": seed, "threads": t, "config": config, "elapsed_s": res.elapsed_s,
                          "values": {k: m["value"] for k, m in res.measured.items()},
                          "environment": res.environment}
                write_atomic(run_file(folder, seed, t), (json.dumps(record, indent=1) + "\n").encode())
                log(f"{chapter}: seed {seed}, {t} thread(s) done in {time.perf_counter() - began:.0f} s")
    runs = [json.loads(run_file(folder, s, t).read_text()) for t in threads for s in seeds]
    registry = {"chapter": chapter, "ledger": ledger_signature(module.LEDGER), "config": config,
                "seeds": list(seeds), "threads": list(threads),
                "runs": [{k: r[k] for k in ("seed", "threads", "elapsed_s", "values")} for r in runs],
                "environment": runs[0]["environment"]}
    path = verdicts_path(chapter)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(registry, indent=1) + "\n").encode())
    log(f"wrote {path}")
    return registry


def _valid(path: Path, config: str) -> bool:
    """A finished run of the current quick configuration."""
    if not path.exists():
        return False
    try:
        return json.loads(path.read_text()).get("config") == config
    except ValueError:
        return False
