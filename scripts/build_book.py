"""Execute the chapter notebooks with papermill into a staging copy, then build the book from it.

The committed notebooks stay output-free: they are copied with the book pages to ``_build/src``, executed
there, and ``jupyter-book build _build/src --path-output .`` writes ``_build/html``. With ``--jobs J`` > 1 the
chapters run J at a time, each kernel with one torch thread (two torch processes with two threads each on two
cores slow each other down; two with one thread each do not). ``--no-execute`` builds the pages only, in about
20 s: enough to check the API reference and the markdown.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / "_build" / "src"


#: notebooks that read the chapters' results: executed after every chapter has finished
READERS = ("report",)


def notebooks() -> list[Path]:
    """The chapter notebooks in name order, then the readers (the reproduction report)."""
    return sorted((ROOT / "notebooks").glob("*.ipynb"), key=lambda p: (p.stem in READERS, p.name))


def stage() -> Path:
    """Copy the book's sources (pages, notebooks, config) into a fresh staging folder."""
    if STAGE.exists():
        shutil.rmtree(STAGE)
    STAGE.mkdir(parents=True)
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy2(ROOT / name, STAGE / name)
    for folder in ("book", "notebooks"):
        shutil.copytree(ROOT / folder, STAGE / folder, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return STAGE


def execute(notebook: Path, mode: str = "quick", seed: int = 0) -> float:
    """Execute one staged notebook in place with papermill; returns the seconds it took."""
    import papermill as pm

    began = time.perf_counter()
    pm.execute_notebook(str(notebook), str(notebook), parameters={"mode": mode, "seed": seed},
                        kernel_name="python3", cwd=str(notebook.parent), execution_timeout=1800,
                        progress_bar=False)
    if (mode, seed) == ("quick", 0):  # papermill's copy of the default parameters would only repeat them
        _hide_injected_parameters(notebook)
    return time.perf_counter() - began


def _hide_injected_parameters(notebook: Path) -> None:
    """Tag papermill's "injected-parameters" cell remove-cell, so the page shows the chapter's own parameters once."""
    nb = json.loads(notebook.read_text())
    for cell in nb["cells"]:
        tags = cell.get("metadata", {}).get("tags", [])
        if "injected-parameters" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    notebook.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")


def execute_all(mode: str = "quick", seed: int = 0, jobs: int = 1) -> dict[str, float | Exception]:
    """Execute every staged chapter, ``jobs`` at a time; returns per chapter the seconds it took or its error.

    With ``jobs`` > 1 each kernel gets ``FEDLIB_NUM_THREADS=1`` (kernels inherit this process's environment);
    every kernel gets ``FEDLIB_HEADLESS=1``, so the explorers draw their static figures without live widgets and
    fedlib shows no progress bars (:mod:`fedlib.progress`), and ``TQDM_DISABLE=1`` for any other tqdm bar: a bar
    saved into a page is a widget view a static page cannot draw.
    The seconds per chapter are also written to ``_build/chapter_times.json``.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs!r}")
    saved = os.environ.get("FEDLIB_NUM_THREADS")
    saved_tqdm = os.environ.get("TQDM_DISABLE")
    if jobs > 1:
        os.environ["FEDLIB_NUM_THREADS"] = "1"
    os.environ["FEDLIB_HEADLESS"] = "1"  # static figures instead of live widgets, no progress bars (fedlib.progress)
    os.environ["TQDM_DISABLE"] = "1"  # and no other library's tqdm bar either
    out: dict[str, float | Exception] = {}
    try:
        chapters = [nb for nb in notebooks() if nb.stem not in READERS]
        readers = [nb for nb in notebooks() if nb.stem in READERS]
        for batch in (chapters, readers):
            with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
                futures = {pool.submit(execute, STAGE / "notebooks" / nb.name, mode, seed): nb.stem for nb in batch}
                for future in concurrent.futures.as_completed(futures):
                    name = futures[future]
                    try:
                        out[name] = future.result()
                    except Exception as err:  # reported per chapter by the caller
                        out[name] = err
                    print(f"  {name}: " + (f"done in {out[name]:.0f} s" if isinstance(out[name], float)
                                           else f"FAILED ({type(out[name]).__name__})"), flush=True)
    finally:
        os.environ.pop("FEDLIB_HEADLESS", None)
        if saved_tqdm is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = saved_tqdm
        if saved is None:
            os.environ.pop("FEDLIB_NUM_THREADS", None)
        else:
            os.environ["FEDLIB_NUM_THREADS"] = saved
    times = {k: round(v, 1) for k, v in sorted(out.items()) if isinstance(v, float)}
    (STAGE.parent / "chapter_times.json").write_text(json.dumps({"mode": mode, "jobs": jobs, "seconds": times},
                                                                indent=1))
    return out


def build() -> subprocess.CompletedProcess:
    """``jupyter-book build`` the staged sources with warnings as errors; HTML goes to ``_build/html``."""
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(STAGE), "--path-output", str(ROOT),
           "-W", "--keep-going", "--all"]
    return subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=("quick", "full"), default="quick")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="chapters executed at a time (default: 2, or 1 on a one-core machine)")
    parser.add_argument("--no-execute", action="store_true", help="build the pages without running the chapters")
    args = parser.parse_args()
    stage()
    if not args.no_execute:
        print(f"executing {len(notebooks())} chapters ({args.mode}, {args.jobs} at a time) ...", flush=True)
        began = time.perf_counter()
        done = execute_all(args.mode, args.seed, args.jobs)
        summed = sum(v for v in done.values() if isinstance(v, float))
        print(f"all chapters: {time.perf_counter() - began:.0f} s wall, {summed:.0f} s summed", flush=True)
        failed = {k: v for k, v in done.items() if isinstance(v, Exception)}
        for name, err in failed.items():
            print(f"{name} failed: {err}", file=sys.stderr)
        if failed:
            return 1
    result = build()
    print(result.stdout[-3000:])
    if result.returncode != 0:
        print(result.stderr[-5000:], file=sys.stderr)
        return result.returncode
    print(f"book: {ROOT / '_build' / 'html' / 'index.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
