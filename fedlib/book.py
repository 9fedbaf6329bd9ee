"""What a chapter page needs beyond tables and figures: numbers in its prose that come from the results file.

In a notebook cell, ``glue("acc_proposed", results.tables[...]...)``; in the page's Markdown,
``{glue:text}`acc_proposed:.3f``` renders the number (myst-nb), so prose cannot go stale between runs and modes.
"""

from __future__ import annotations

from typing import Any


def glue(name: str, value: Any) -> None:
    """Make ``value`` available to the page's prose as ``{glue:text}`name``` without displaying it.

    Outside a Jupyter Book build (JupyterLab or Colab without myst-nb) it does nothing: the prose then shows the role
    as text, and the number is in the tables.
    """
    try:
        from myst_nb import glue as nb_glue
    except ImportError:
        return
    nb_glue(name, value, display=False)
