"""Units of a chapter run: independently seeded pieces (one training run, one attack sweep, one unlearning schedule)
whose results are kept one small JSON file each, so a long full-mode run accumulates over many sessions and machines.

A chapter asks :meth:`Units.run` for each unit with the unit's id, everything that determines it (hashed into its
identity with :mod:`fedlib.fingerprint`) and a function computing it. The answer is the stored result when a file
with the same identity exists, else the freshly computed result (stored), or None when the budget is spent or the
runner only plans — the chapter then shows "not run yet" for what depends on it. Full-mode unit files live in
``results/full/<chapter>/units/`` and are committed; quick mode keeps no unit files unless asked.

A unit whose data the data root lacks is *blocked*: :meth:`Units.block` records it with the reason, so the status
and the report list it instead of training on a subset.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections import Counter
from fnmatch import fnmatchcase
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fedlib.checkpoint import identity, take_resumed_seconds
from fedlib.fingerprint import difference


class UnitFileError(ValueError):
    """A unit file is unreadable or not for the unit at its path."""


@dataclass
class Budget:
    """How much a run may compute: at most ``units`` new units and/or ``seconds`` of wall time (None: no limit),
    and only units whose id matches one of the shell patterns ``only`` (None: any unit).

    A unit that has started always finishes; the budget is checked before starting the next one.
    """

    units: int | None = None
    seconds: float | None = None
    only: tuple[str, ...] | None = None
    started: float = field(default_factory=time.perf_counter)
    used: int = 0

    def __post_init__(self) -> None:
        if self.units is not None and (isinstance(self.units, bool) or not isinstance(self.units, int)
                                       or self.units < 0):
            raise ValueError(f"units must be an int >= 0 or None, got {self.units!r}")
        if self.seconds is not None and not self.seconds >= 0:
            raise ValueError(f"seconds must be >= 0 or None, got {self.seconds!r}")
        if self.only is not None and (isinstance(self.only, str) or not self.only
                                      or not all(isinstance(p, str) and p for p in self.only)):
            raise ValueError(f"only must be a non-empty tuple of non-empty unit-id patterns or None, "
                             f"got {self.only!r}")

    def allows(self, unit_id: str | None = None) -> bool:
        """Whether a new unit may start (``unit_id``: also whether it is one of those selected by ``only``)."""
        if unit_id is not None and self.only is not None and not any(fnmatchcase(unit_id, p) for p in self.only):
            return False
        if self.units is not None and self.used >= self.units:
            return False
        return self.seconds is None or time.perf_counter() - self.started < self.seconds


def unit_filename(unit_id: str) -> str:
    """A unit id as a file name (letters, digits, '.', '_' and '-')."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", unit_id).strip("_") + ".json"


def _environment() -> dict[str, str]:
    from fedlib.results import environment

    return environment()


class Units:
    """The units of one chapter run (see the module docstring).

    Args:
        chapter, mode, seed: the run.
        folder: where unit files are kept; None keeps none (quick mode's default: every unit is computed).
        budget: what this run may compute (None: everything missing).
        plan_only: compute nothing; only record which units exist and which are done (for ``status``).
    """

    def __init__(self, chapter: str, mode: str, seed: int, *, folder: str | Path | None = None,
                 budget: Budget | None = None, plan_only: bool = False) -> None:
        self.chapter, self.mode, self.seed = chapter, mode, seed
        self.folder = Path(folder) if folder is not None else None
        self.budget = budget
        self.plan_only = plan_only
        #: unit id -> "done" (read back), "computed", "not run" or "blocked: <reason>"
        self.state: dict[str, str] = {}
        #: unit id -> seconds it took (measured now or when it was computed)
        self.seconds: dict[str, float] = {}
        #: unit id -> the device it was computed on ("cpu" or "cuda")
        self.devices: dict[str, str] = {}
        self.blocked: dict[str, str] = {}
        #: units whose training diverged and stopped early (their time prices no other unit; see estimate_left)
        self.stopped_early: set[str] = set()
        self._asked: dict[str, tuple[str, dict[str, Any] | None]] = {}  # unit id -> (identity hash, result)

    def path(self, unit_id: str) -> Path | None:
        return None if self.folder is None else self.folder / unit_filename(unit_id)

    def identity(self, unit_id: str, spec: Any) -> dict[str, Any]:
        return identity(chapter=self.chapter, unit=unit_id, mode=self.mode, seed=self.seed, spec=spec)

    def read(self, unit_id: str, ident: dict[str, Any]) -> dict[str, Any] | None:
        """The stored result of the unit, or None if it has no file (a file for another identity is not reused)."""
        path = self.path(unit_id)
        if path is None or not path.exists():
            return None
        stored = load_unit(path)
        if stored["identity"]["hash"] != ident["hash"]:
            return None  # written for another configuration: recompute (the file is replaced)
        return stored

    def run(self, unit_id: str, spec: Any, compute: Callable[[], dict[str, Any]]) -> dict[str, Any] | None:
        """The result of unit ``unit_id`` determined by ``spec``: read back, computed now, or None (not run).

        Asking again for a unit of this run with the same spec returns the same result; with another spec it is an
        error (two different computations under one id).
        """
        ident = self.identity(unit_id, spec)
        if unit_id in self._asked:
            known, result = self._asked[unit_id]
            if known != ident["hash"]:
                raise ValueError(f"unit {unit_id!r} was asked for twice with different specs; unit ids must be unique")
            return result
        result = self._result(unit_id, ident, compute)
        self._asked[unit_id] = (ident["hash"], result)
        return result

    def _result(self, unit_id: str, ident: dict[str, Any], compute: Callable[[], dict[str, Any]]
                ) -> dict[str, Any] | None:
        stored = self.read(unit_id, ident)
        if stored is not None:
            self.state[unit_id] = "done"
            self.seconds[unit_id] = stored["elapsed_s"]
            self.devices[unit_id] = unit_device(stored)
            self._note_stop(unit_id, stored["result"])
            return stored["result"]
        if self.plan_only or (self.budget is not None and not self.budget.allows(unit_id)):
            self.state[unit_id] = "not run"
            return None
        take_resumed_seconds()
        began = time.perf_counter()
        result = compute()
        resumed = take_resumed_seconds()  # a unit resumed from checkpoints took those calls' time too
        elapsed = time.perf_counter() - began + resumed
        if self.budget is not None:
            self.budget.used += 1
        self.state[unit_id] = "computed"
        self.seconds[unit_id] = elapsed
        self._note_stop(unit_id, result)
        environment = _environment()
        self.devices[unit_id] = environment["device"]
        path = self.path(unit_id)
        if path is not None:
            write_unit(path, {"chapter": self.chapter, "mode": self.mode, "seed": self.seed, "unit": unit_id,
                              "identity": ident, "elapsed_s": elapsed, **({"resumed_s": resumed} if resumed else {}),
                              "environment": environment, "result": result})
        return result

    def _note_stop(self, unit_id: str, result: Any) -> None:
        if isinstance(result, dict) and result.get("diverged"):
            self.stopped_early.add(unit_id)

    def refresh(self) -> list[str]:
        """Forget the units that were not run when asked for but whose file, for the identity asked, exists now
        (another run on the same results root finished them meanwhile), so that asking again reads them back;
        return their ids."""
        late = []
        for unit_id, (known, _) in self._asked.items():
            path = self.path(unit_id)
            if self.state.get(unit_id) != "not run" or path is None or not path.exists():
                continue
            try:
                if load_unit(path)["identity"]["hash"] == known:
                    late.append(unit_id)
            except UnitFileError:
                continue  # not a usable file: the unit stays "not run"
        for unit_id in late:
            del self._asked[unit_id], self.state[unit_id]
        return sorted(late)

    def block(self, unit_id: str, reason: str) -> None:
        """Record that ``unit_id`` (or a group of units, e.g. ``"cifar10/*"``) cannot run here, and why."""
        self.state[unit_id] = f"blocked: {reason}"
        self.blocked[unit_id] = reason

    def summary(self) -> dict[str, Any]:
        """Counts by state, the measured seconds and devices, and the blocked units with their reasons."""
        states = list(self.state.values())
        return {"done": states.count("done") + states.count("computed"), "computed": states.count("computed"),
                "not_run": states.count("not run"), "blocked": dict(self.blocked), "total": len(states),
                "seconds": dict(self.seconds), "devices": dict(self.devices),
                "stopped_early": sorted(self.stopped_early),
                "missing": sorted(u for u, s in self.state.items() if s == "not run")}


def unit_device(data: dict[str, Any]) -> str:
    """The device a unit file was computed on: its ``environment.device`` ("cpu" for files from before fedlib
    recorded it, when every unit ran on the CPU)."""
    return data.get("environment", {}).get("device", "cpu")


def write_unit(path: Path, data: dict[str, Any]) -> None:
    """Write a unit file atomically (temp file in the same folder, fsync, replace)."""
    from fedlib.results import clean, write_atomic

    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, (json.dumps(clean(data), indent=1, allow_nan=False) + "\n").encode())


def load_unit(path: Path) -> dict[str, Any]:
    """Read and check a unit file: valid JSON with an identity, a result and its own unit id (as in its name)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise UnitFileError(f"unit file {path} is unreadable ({type(err).__name__}: {err})") from None
    missing = [k for k in ("unit", "identity", "result", "elapsed_s") if k not in data]
    if missing:
        raise UnitFileError(f"unit file {path} lacks {missing}")
    if unit_filename(data["unit"]) != path.name:
        raise UnitFileError(f"unit file {path} holds unit {data['unit']!r}, whose file name is "
                            f"{unit_filename(data['unit'])}")
    return data


def explain_mismatch(path: Path, units: Units, unit_id: str, spec: Any) -> str | None:
    """Why the file at ``path`` is not the result of ``unit_id`` with ``spec`` (None if it is)."""
    stored = load_unit(path)
    ident = units.identity(unit_id, spec)
    if stored["identity"]["hash"] == ident["hash"]:
        return None
    return difference(stored["identity"].get("description"), ident["description"]) or "fedlib's ALGORITHM_VERSION"


@dataclass(frozen=True)
class Estimate:
    """Time left for a chapter's missing units: ``seconds`` for the ``estimated`` ones, each priced at the mean time
    of the finished units whose ids share the longest leading part with it (``mnist-iid-…`` prices from other
    ``mnist-iid-…`` units), and ``unmeasured`` missing units that share no leading part with any finished one (e.g.
    CIFAR-10 units when only MNIST ones have run): their time is unknown, not guessed."""

    seconds: float
    estimated: int
    unmeasured: int

    def text(self) -> str:
        """"1.2 h", "1.2 h + 40 units of unmeasured kinds", "? (40 units of unmeasured kinds)" or "–"."""
        if self.estimated == 0 and self.unmeasured == 0:
            return "–"
        hours = f"{self.seconds / 3600:.1f} h" if self.estimated else "?"
        if not self.unmeasured:
            return hours
        extra = f"{self.unmeasured} unit{'s' * (self.unmeasured != 1)} of unmeasured kinds"
        return f"{hours} + {extra}" if self.estimated else f"? ({extra})"


def _id_tokens(unit_id: str) -> list[str]:
    """A unit id's words, seeds left out (a seed does not change what a unit costs)."""
    return [t for t in re.split(r"[/\-_:, ]+", unit_id) if t and not re.fullmatch(r"seed\d+", t)]


def _most_like(tokens: list[str], measured: list[tuple[list[str], float]]
               ) -> tuple[tuple[int, int], list[tuple[list[str], float]]] | None:
    """The finished units most like a unit's ``tokens`` and how alike (shared tokens, common prefix): those sharing
    its first token, then the most tokens anywhere, then the longest common prefix; None if none shares the first."""
    def likeness(other: list[str]) -> tuple[int, int]:
        prefix = 0
        while prefix < min(len(tokens), len(other)) and tokens[prefix] == other[prefix]:
            prefix += 1
        return sum((Counter(tokens) & Counter(other)).values()), prefix

    candidates = [(likeness(t), (t, s)) for t, s in measured if tokens and t[:1] == tokens[:1]]
    if not candidates:
        return None
    best = max(like for like, _ in candidates)
    return best, [unit for like, unit in candidates if like == best]


def _mean(units: list[tuple[list[str], float]]) -> float:
    return sum(s for _, s in units) / len(units)


def estimate_left(summary: dict[str, Any], device: str = "cpu") -> Estimate:
    """How long the missing units of ``summary`` will take on ``device``, from the measured times of the finished
    ones computed there (see :class:`Estimate`; a GPU unit prices nothing for a CPU: privacy evaluation's attack
    units took 30-45 times as long on one CPU thread as on an H200): a missing unit is priced at the mean of the
    finished units most like it (ids split into tokens at ``/ - _ : ,`` and spaces, seeds left out): those sharing
    its first token, then the most tokens anywhere, then the longest common prefix; it is counted as unmeasured if
    none shares the first token (a CIFAR-10 unit is not priced by MNIST ones). Shared tokens anywhere come first
    because an id may name a setting before the method (Fed-nore's ``mlp/σ = 12: Fed-nore-1, λ1 = 1`` costs what
    Fed-nore-1 at σ = 10 cost, 3,593 s, not what Fed-nore-2 at σ = 12 cost when it diverged in round 1, 8 s).

    A unit whose training diverged and stopped early (``stopped_early``) prices a missing unit only when no unit
    that ran its course shares the missing one's first token: Fed-nore's ``cnn/LR 0.01: plain DPFL`` would
    otherwise cost what ``cnn/LR 1: plain DPFL`` cost when it diverged in round 1 (225 s), not the 52 rounds
    ``cnn/plain DPFL`` took (4,707 s).

    Where another device ran units more like the missing one than this device did, the price is scaled by that
    device's ratio: privacy evaluation's all-round attack at round 15 ran only on a GPU, where it took 3 times the
    one-round attack that the CPU ran, so the CPU price is 3 times the CPU's one-round time, not equal to it."""
    devices, stopped = summary.get("devices", {}), set(summary.get("stopped_early", ()))
    by_device: dict[str, list[tuple[list[str], float]]] = {}
    for u, s in summary["seconds"].items():
        if math.isfinite(s) and u not in stopped:
            by_device.setdefault(devices.get(u, "cpu"), []).append((_id_tokens(u), s))
    here = by_device.pop(device, [])
    here_stopped = [(_id_tokens(u), s) for u, s in summary["seconds"].items()
                    if u in stopped and math.isfinite(s) and devices.get(u, "cpu") == device]
    total, estimated, unmeasured = 0.0, 0, 0
    for unit in summary["missing"]:
        tokens = _id_tokens(unit)
        local = _most_like(tokens, here) or _most_like(tokens, here_stopped)
        if local is None:
            unmeasured += 1
            continue
        like, alike = local
        price = _mean(alike)
        for other in by_device.values():  # a device that knows this kind better scales the price by its ratio
            there = _most_like(tokens, other)
            priced = [_most_like(t, other) for t, _ in alike]
            if there is not None and there[0] > like and all(p is not None for p in priced):
                price *= _mean(there[1]) / (sum(_mean(p[1]) for p in priced) / len(priced))
                break
        total += price
        estimated += 1
    return Estimate(total, estimated, unmeasured)


def default_folder(chapter: str, mode: str, root: str | Path | None = None) -> Path:
    """``<results>/<mode>/<chapter>/units``."""
    from fedlib.results import results_dir

    return Path(root or results_dir()) / mode / chapter / "units"

