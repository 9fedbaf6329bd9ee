"""Checkpoints of resumable loops: written atomically, read without running code, reused only when they match.

A checkpoint holds a :func:`~fedlib.fingerprint.fingerprint` of everything that determines the run (configuration,
algorithm and its parameters, W^0, the partition, the data) beside the state. :func:`load` refuses a checkpoint
written for anything else with :class:`CheckpointMismatch`, naming the first difference, rather than returning
another run's numbers; it never unpickles code (``torch.load(weights_only=True)``: tensors, numbers, strings,
lists, tuples and dicts only).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import torch

from fedlib.fingerprint import ALGORITHM_VERSION, describe, difference, fingerprint


#: seconds that loops resumed since the last :func:`take_resumed_seconds` had spent before their checkpoints
_resumed_s = [0.0]


class Clock:
    """A resumable loop's wall time over all its calls: the ``elapsed_s`` kept in the state it resumed from (0 when
    it starts afresh, or for a checkpoint written before 2026-12-04, which kept none) plus this call's. Save
    :meth:`total` with the state as ``elapsed_s``; the earlier seconds also go to :func:`take_resumed_seconds`, so
    the unit running the loop records the computation's whole time, not only its last call's."""

    def __init__(self, state: dict[str, Any] | None) -> None:
        self.earlier = float(state.get("elapsed_s", 0.0)) if state else 0.0
        self.began = time.perf_counter()
        _resumed_s[0] += self.earlier

    def total(self) -> float:
        """Seconds of the earlier calls up to their last checkpoint, plus this call's so far."""
        return self.earlier + time.perf_counter() - self.began


def take_resumed_seconds() -> float:
    """The seconds that loops resumed since the last call had spent before their checkpoints (then reset to 0)."""
    seconds, _resumed_s[0] = _resumed_s[0], 0.0
    return seconds


class CheckpointMismatch(ValueError):
    """A checkpoint exists at the path but was written for another computation."""


class CheckpointUnreadable(ValueError):
    """A checkpoint file is corrupt or holds something other than plain data (e.g. a crafted pickle)."""


def identity(**parts: Any) -> dict[str, Any]:
    """What identifies a run: the hash of ``parts`` and their description (kept to explain a mismatch)."""
    return {"hash": fingerprint(parts), "version": ALGORITHM_VERSION, "description": describe(parts)}


def data_digest(x: torch.Tensor, y: torch.Tensor) -> dict[str, Any]:
    """A cheap stand-in for a data split in an identity: its shape, all labels and a strided sample of the inputs
    (catches another subset, order, normalisation or dataset without hashing every pixel)."""
    flat = x.reshape(-1)
    step = max(1, flat.numel() // 4096)
    return {"x_shape": list(x.shape), "x_sample": flat[::step].clone(), "y": y}


def save(path: str | Path, ident: dict[str, Any], state: dict[str, Any]) -> None:
    """Write ``state`` with its identity to ``path`` atomically (a kill mid-write leaves the previous file)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fh:
        torch.save({"identity": ident, "state": state}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def load(path: str | Path, ident: dict[str, Any], *, map_location: Any = None) -> dict[str, Any] | None:
    """The state saved at ``path`` for the run ``ident``; None when there is no checkpoint.

    Raises:
        CheckpointUnreadable: the file is not a fedlib checkpoint of plain data.
        CheckpointMismatch: it was written for another run (the message names the first difference).
    """
    path = Path(path)
    if not path.exists():
        return None
    try:
        saved = torch.load(path, weights_only=True, map_location=map_location)
    except Exception as err:  # a crafted pickle, truncation, another format
        raise CheckpointUnreadable(
            f"checkpoint {path} cannot be read as plain data ({type(err).__name__}: {str(err).splitlines()[0][:200]}); "
            "fedlib never unpickles code from a checkpoint — delete the file or pass another folder") from None
    if not isinstance(saved, dict) or "identity" not in saved or "state" not in saved:
        raise CheckpointUnreadable(f"checkpoint {path} is not a fedlib checkpoint (no identity/state); delete it")
    stored = saved["identity"]
    if stored.get("hash") != ident["hash"]:
        what = difference(stored.get("description"), ident["description"]) or \
            f"fedlib's ALGORITHM_VERSION {stored.get('version')} != {ident['version']}"
        raise CheckpointMismatch(
            f"checkpoint {path} was written for another run ({what}); resuming from it would report that run's "
            "numbers. Delete it, or pass a different --checkpoints folder")
    return saved["state"]
