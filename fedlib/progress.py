"""Progress bars that stay out of built pages.

Interactive use gets :mod:`tqdm.auto` (a widget in JupyterLab and Colab, text in a terminal). A headless run gets
none: a bar saved into an executed notebook is a widget view that a static page cannot draw, or a wall of
carriage-returned text. Headless means ``FEDLIB_PROGRESS=0`` (also ``false``, ``no``, ``off``) or
``FEDLIB_HEADLESS=1``, which ``scripts/build_book.py`` sets for every chapter it executes.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

_OFF = ("0", "false", "no", "off")


def progress_enabled() -> bool:
    """False when ``$FEDLIB_PROGRESS`` is 0/false/no/off or ``$FEDLIB_HEADLESS`` is 1 (the book build)."""
    if os.environ.get("FEDLIB_PROGRESS", "").strip().lower() in _OFF:
        return False
    return os.environ.get("FEDLIB_HEADLESS") != "1"


def progress_bar(iterable: Iterable | None = None, **kwargs: Any):
    """A tqdm bar over ``iterable`` (``tqdm.auto``), or a disabled text bar when :func:`progress_enabled` is False.

    The disabled bar is a plain ``tqdm.std.tqdm(..., disable=True)``: it iterates, ``update``s and ``close``s like
    any bar, prints nothing and never creates a notebook widget.
    """
    if progress_enabled():
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm

        kwargs["disable"] = True
    return tqdm(iterable, **kwargs)
