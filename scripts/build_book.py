"""Execute the chapter notebooks with papermill into a staging copy, then build the book from it.

The committed notebooks stay output-free: they are copied with the book pages to ``_build/src``, executed
there, and ``jupyter-book build _build/src --path-output .`` writes ``_build/html``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAGE = ROOT / "_build" / "src"


def notebooks() -> list[Path]:
    """The chapter notebooks, in name order."""
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


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
    return time.perf_counter() - began


def build() -> subprocess.CompletedProcess:
    """``jupyter-book build`` the staged sources with warnings as errors; HTML goes to ``_build/html``."""
    cmd = [str(Path(sys.executable).with_name("jupyter-book")), "build", str(STAGE), "--path-output", str(ROOT),
           "-W", "--keep-going", "--all"]
    return subprocess.run(cmd, capture_output=True, text=True, env=os.environ.copy())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mode", choices=("quick", "full"), default="quick")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    stage()
    for nb in notebooks():
        print(f"executing {nb.name} ({args.mode}) ...", flush=True)
        print(f"  done in {execute(STAGE / 'notebooks' / nb.name, args.mode, args.seed):.0f} s", flush=True)
    result = build()
    print(result.stdout[-3000:])
    if result.returncode != 0:
        print(result.stderr[-5000:], file=sys.stderr)
        return result.returncode
    print(f"book: {ROOT / '_build' / 'html' / 'index.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
