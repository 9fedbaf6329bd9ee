"""Fingerprints: one hash of everything that determines a computation's result.

A checkpoint or a finished full-mode unit is reused only when the fingerprint of what is about to run equals the one
stored with it. :func:`describe` turns configurations, algorithms (their parts and parameters), tensors (hashed),
models (their parameters) and partitions into plain JSON; :func:`fingerprint` hashes that. Two computations with
equal fingerprints get the same numbers; changing any ingredient (σ, a clipping bound, top-k, the aggregator, W^0,
the partition, the mode, the seed, :data:`ALGORITHM_VERSION`) changes the fingerprint.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import math
import re
import types
from collections.abc import Mapping
from typing import Any

#: Bumped whenever a change to fedlib alters the numbers an unchanged configuration produces, so that checkpoints and
#: full-mode units written by the older code are not mistaken for results of the new one.
ALGORITHM_VERSION = 1

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _tensor(value: Any) -> dict[str, Any]:
    import torch

    t = value.detach().cpu().contiguous()
    digest = hashlib.sha256(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"").hexdigest()
    return {"tensor": digest[:24], "shape": list(t.shape), "dtype": str(t.dtype)}


def describe(value: Any, _seen: frozenset[int] = frozenset()) -> Any:
    """A JSON-able description of ``value`` that is equal for equal computations.

    Numbers, strings, lists and dicts stand for themselves; dataclasses and other objects are their class name and
    attributes (private runtime caches included: they are empty when a run starts); tensors, numpy arrays, modules and
    random generators are content hashes; functions are their qualified names and captured values.
    """
    import numpy as np
    import torch

    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    if isinstance(value, torch.Tensor):
        return _tensor(value)
    if isinstance(value, np.ndarray):
        return _tensor(torch.from_numpy(np.ascontiguousarray(value)))
    if isinstance(value, np.generic):
        return describe(value.item(), _seen)
    if isinstance(value, torch.Generator):
        return {"generator": _tensor(value.get_state())}
    if isinstance(value, torch.nn.Module):
        return {"module": type(value).__name__,
                "state": {k: _tensor(v) for k, v in value.state_dict().items()}}
    if id(value) in _seen:
        return "<cycle>"
    seen = _seen | {id(value)}
    if isinstance(value, Mapping):
        return {str(k): describe(v, seen) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [describe(v, seen) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((describe(v, seen) for v in value), key=json.dumps)
    if isinstance(value, (types.FunctionType, types.MethodType, types.BuiltinFunctionType)):
        func = getattr(value, "__func__", value)
        closure = [c.cell_contents for c in (getattr(func, "__closure__", None) or ())]
        out: dict[str, Any] = {"function": f"{getattr(func, '__module__', '')}.{getattr(func, '__qualname__', '')}"}
        if closure:
            out["captured"] = describe(closure, seen)
        if getattr(func, "__defaults__", None):
            out["defaults"] = describe(func.__defaults__, seen)
        if isinstance(value, types.MethodType):
            out["self"] = describe(value.__self__, seen)
        return out
    if isinstance(value, type):
        return {"class": f"{value.__module__}.{value.__qualname__}"}
    if dataclasses.is_dataclass(value):
        return {"type": type(value).__qualname__,
                **{f.name: describe(getattr(value, f.name), seen) for f in dataclasses.fields(value)}}
    if hasattr(value, "__dict__"):
        return {"type": type(value).__qualname__, **{k: describe(v, seen) for k, v in sorted(vars(value).items())}}
    if hasattr(value, "__slots__"):
        return {"type": type(value).__qualname__,
                **{k: describe(getattr(value, k, None), seen) for k in value.__slots__}}
    return _ADDRESS.sub("", repr(value))


def fingerprint(*parts: Any) -> str:
    """sha256 (hex, 16 characters) of :func:`describe` of ``parts`` and :data:`ALGORITHM_VERSION`."""
    text = json.dumps({"version": ALGORITHM_VERSION, "parts": describe(list(parts))}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def difference(a: Any, b: Any, path: str = "") -> str | None:
    """The first place where two descriptions differ (``"config.rounds: 10 != 12"``), or None if equal.

    Used to say *what* changed when a checkpoint or unit no longer matches.
    """
    if type(a) is not type(b):
        return f"{path or '(root)'}: {_short(a)} != {_short(b)}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path + '.' if path else ''}{key}: {'missing' if key not in a else _short(a[key])} != " \
                       f"{'missing' if key not in b else _short(b[key])}"
            found = difference(a[key], b[key], f"{path + '.' if path else ''}{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path or '(root)'}: {len(a)} items != {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            found = difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if a == b else f"{path or '(root)'}: {_short(a)} != {_short(b)}"


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
