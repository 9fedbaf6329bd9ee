"""Deterministic, independent random streams.

Every random draw in fedlib takes an explicit :class:`torch.Generator` derived from
``(seed, purpose, round, client, ...)``. Adding a draw for one purpose (say, DP noise) therefore
never shifts another stream (say, the mini-batch order), and any round can be rebuilt from the
seed alone, which is what makes checkpoint/resume exact.
"""

from __future__ import annotations

import hashlib

import torch


def derive_seed(seed: int, *keys: int | str) -> int:
    """A 63-bit seed that depends on ``seed`` and every key, in order.

    Example:
        >>> derive_seed(0, "noise", 3, 7) == derive_seed(0, "noise", 3, 7)
        True
        >>> derive_seed(0, "noise", 3, 7) == derive_seed(0, "noise", 7, 3)
        False
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an int, got {seed!r}")
    text = repr((seed,) + tuple(keys)).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 1


def make_generator(seed: int, *keys: int | str) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with :func:`derive_seed` ``(seed, *keys)``."""
    gen = torch.Generator()
    gen.manual_seed(derive_seed(seed, *keys))
    return gen
