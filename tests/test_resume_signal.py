"""A real interruption: a chapter run (DPFL's TINY configuration, the smallest resumable one) gets SIGINT from outside
while it trains, is resumed from its checkpoints, and gives the same tables and measured values as a run that was
never interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

SCRIPT = """
import json, signal, sys
# Python ignores SIGINT when it starts with SIGINT ignored (a shell's background job): restore Ctrl-C's behaviour
signal.signal(signal.SIGINT, signal.default_int_handler)
from fedlib.experiments import dpfl
checkpoints = None if sys.argv[1] == "-" else __import__("pathlib").Path(sys.argv[1])
res = dpfl.run(dpfl.TINY, checkpoints=checkpoints)
print(json.dumps({"tables": res.tables, "measured": res.measured}))
"""


def _start(checkpoints: Path | str) -> subprocess.Popen:
    env = {**os.environ, "FEDLIB_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-c", SCRIPT, str(checkpoints)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _numbers(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]
    numbers = json.loads(out.strip().splitlines()[-1])
    for table in numbers["tables"].values():  # wall-clock columns differ between any two runs
        for row in table["rows"]:
            for key in [k for k in row if k.endswith("_s") or "seconds" in k]:
                del row[key]
    return numbers


@pytest.mark.chapter
@pytest.mark.timeout(1800)
def test_sigint_then_resume_gives_the_uninterrupted_numbers(tmp_path):
    checkpoints = tmp_path / "ckpt"
    proc = _start(checkpoints)
    deadline = time.monotonic() + 600
    while not list(checkpoints.rglob("*.pt")):  # wait until the first training run has checkpointed a round
        assert proc.poll() is None, proc.stderr.read()[-3000:]
        assert time.monotonic() < deadline, "no checkpoint written within 600 s"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode != 0 and "KeyboardInterrupt" in err, "the run finished before the signal arrived"
    written = sorted(p.relative_to(checkpoints) for p in checkpoints.rglob("*.pt"))
    assert written, "the interrupted run left no checkpoint to resume from"
    resumed = _numbers(_start(checkpoints))
    fresh = _numbers(_start("-"))
    assert resumed["measured"] == fresh["measured"]
    assert resumed["tables"] == fresh["tables"]
