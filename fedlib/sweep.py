"""The seed sweep that registers a chapter's quick-mode verdicts (:mod:`fedlib.ledger`), and the held-out check.

``python -m fedlib sweep CHAPTER`` runs the chapter in quick mode at seeds 0-4, each with 1 and with 2 torch threads
(every run a separate process, so thread counts cannot leak), keeps each run's measured values in
``results/sweeps/<chapter>/seed<S>-threads<T>.json`` (a killed sweep resumes), and writes the registry
``fedlib/experiments/verdicts/<chapter>.json``: the ledger's signature, the quick configuration's fingerprint and
every run's values. The verdicts themselves are recomputed from the values by :func:`fedlib.ledger.register`, so a
registry can be read and checked by anyone.

``python -m fedlib heldout --seed S`` runs chapters in quick mode at a seed the sweep did not see and writes, per
chapter, which decisive registered verdicts that run contradicts to ``results/heldout/seed<S>.json``: a registered
verdict is a prediction about new seeds, and this is its test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

from fedlib.fingerprint import fingerprint
from fedlib.ledger import VERDICTS, ledger_signature, load_registry, outcome, registered_verdicts, verdicts_path
from fedlib.results import Results, load_results, results_dir, write_atomic

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


Job = tuple[str, int, int]  # (chapter, seed, torch threads)


def expected_seconds(chapter: str, threads: int = 1) -> float:
    """The mean elapsed time of ``chapter``'s registered quick runs with ``threads`` torch threads (with any thread
    count if none; infinity for a chapter without a registry), to start the longest runs first."""
    registry = load_registry(chapter)
    runs = registry["runs"] if registry else []
    times = [r["elapsed_s"] for r in runs if r["threads"] == threads] or [r["elapsed_s"] for r in runs]
    return sum(times) / len(times) if times else float("inf")


def run_quick(jobs: Sequence[Job], *, cores: int = 2, log=print,
              done: Callable[[Job, Results], None] | None = None) -> dict[Job, Results]:
    """Run quick-mode chapter runs ``(chapter, seed, threads)`` as separate processes, keeping at most ``cores``
    threads busy (a run wider than ``cores`` runs alone; the longest by :func:`expected_seconds` start first, so no
    core idles at the end behind one long run), and return their results. ``done`` is called as each
    finishes (e.g. to save it, so an interrupted batch resumes)."""
    todo = sorted(jobs, key=lambda job: (-job[2], -expected_seconds(job[0], job[2])))  # widest, then longest first
    running: list[tuple[subprocess.Popen, Job, Path, float]] = []
    out: dict[Job, Results] = {}
    with tempfile.TemporaryDirectory(prefix="fedlib-quick-") as tmp:
        while todo or running:
            busy = sum(job[2] for _, job, _, _ in running)
            if todo and (busy == 0 or busy + todo[-1][2] <= cores):
                job = todo.pop(0) if busy == 0 or busy + todo[0][2] <= cores else todo.pop()
                folder = Path(tmp) / "-".join(map(str, job))
                running.append((_start(*job, folder), job, folder, time.perf_counter()))
                log(f"{job[0]}: started seed {job[1]}, {job[2]} thread(s)")
                continue
            time.sleep(1)
            for entry in list(running):
                proc, job, folder, began = entry
                if proc.poll() is None:
                    continue
                running.remove(entry)
                if proc.returncode != 0:
                    for other, *_ in running:
                        other.kill()
                    raise RuntimeError(f"{job[0]} seed {job[1]} with {job[2]} thread(s) failed:\n"
                                       f"{proc.stderr.read()[-3000:]}")
                out[job] = load_results(job[0], "quick", folder)
                log(f"{job[0]}: seed {job[1]}, {job[2]} thread(s) done in {time.perf_counter() - began:.0f} s")
                if done is not None:
                    done(job, out[job])
    return out


def sweep(chapter: str, *, seeds: Sequence[int] = SEEDS, threads: Sequence[int] = THREADS, cores: int = 2,
          folder: Path | None = None, log=print) -> dict[str, Any]:
    """Run the missing runs of the sweep and write the registry."""
    from fedlib.experiments import chapter_module

    module = chapter_module(chapter)
    folder = Path(folder or results_dir() / "sweeps" / chapter)
    folder.mkdir(parents=True, exist_ok=True)
    config = fingerprint(module.QUICK)

    def save(job: Job, res: Results) -> None:
        record = {"seed": job[1], "threads": job[2], "config": config, "elapsed_s": res.elapsed_s,
                  "values": {k: m["value"] for k, m in res.measured.items()}, "environment": res.environment}
        write_atomic(run_file(folder, job[1], job[2]), (json.dumps(record, indent=1) + "\n").encode())

    run_quick([(chapter, s, t) for t in threads for s in seeds if not _valid(run_file(folder, s, t), config)],
              cores=cores, log=log, done=save)
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


def disagreements(results: Results) -> list[str]:
    """The decisive registered verdicts (reproduced / not reproduced) that the quick run ``results`` contradicts,
    one line each."""
    return contradicted(results.chapter, {k: m["value"] for k, m in results.measured.items()})


def contradicted(chapter: str, values: dict[str, float | None], *, recorded_only: bool = False) -> list[str]:
    """The decisive registered verdicts of ``chapter`` that one quick run's measured ``values`` (claim key ->
    value) contradict, one line each: the comparison of the notebook tests and of the held-out check.
    ``recorded_only``: test only the claims ``values`` has a key for (a held-out record older than a claim did not
    test it; a run of today's code that lacks one fails it as 'not run')."""
    from fedlib.experiments import chapter_module

    ledger = chapter_module(chapter).LEDGER
    claims = {c.key(s): c for c in ledger for s in c.settings if "quick" in c.modes}
    registered = registered_verdicts(chapter, ledger)
    out = []
    for key, reg in registered.items():
        if reg.verdict in VERDICTS[:2] and key in claims and (key in values or not recorded_only):
            value = values.get(key)
            verdict = outcome(claims[key], value)
            if verdict != reg.verdict:
                out.append(f"{key}: registered {reg.verdict}, this run {verdict} ({value})")
    return out


def decisive(chapter: str, keys: Collection[str] | None = None) -> int:
    """How many of ``chapter``'s registered verdicts are decisive (of those in ``keys``, if given)."""
    from fedlib.experiments import chapter_module

    registered = registered_verdicts(chapter, chapter_module(chapter).LEDGER)
    return sum(r.verdict in VERDICTS[:2] for key, r in registered.items() if keys is None or key in keys)


def heldout(chapters: Sequence[str], seed: int, *, threads: int = 1, cores: int = 2, out: Path | None = None,
            log=print) -> dict[str, Any]:
    """Run ``chapters`` in quick mode at ``seed``, which no registered sweep may hold, and add to
    ``<out>/heldout/seed<seed>.json`` per chapter: how many decisive registered verdicts it tests and which it
    contradicts, with the run's measured values (so the report tests them against the registry of the day).
    Chapters already in the file are not run again."""
    for chapter in chapters:
        registry = load_registry(chapter) or {}
        if seed in registry.get("seeds", ()):
            raise ValueError(f"seed {seed} is one of {chapter}'s sweep seeds {registry['seeds']}: a held-out check "
                             f"needs a seed the sweep did not see")
    path = Path(out or results_dir()) / "heldout" / f"seed{seed}.json"
    record = json.loads(path.read_text()) if path.exists() else {"seed": seed, "chapters": {}}
    todo = [(c, seed, threads) for c in chapters if c not in record["chapters"]]

    def save(job: Job, res: Results) -> None:
        record["chapters"][job[0]] = {
            "threads": job[2], "elapsed_s": res.elapsed_s, "environment": res.environment,
            "decisive": decisive(job[0]), "disagree": disagreements(res),
            "values": {k: m["value"] for k, m in res.measured.items()}}
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, (json.dumps(record, indent=1, ensure_ascii=False) + "\n").encode())

    run_quick(todo, cores=cores, log=log, done=save)
    return record
