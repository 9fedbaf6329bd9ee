"""Progress bars stay out of headless builds (fedlib.progress): a disabled text bar, never a notebook widget."""

from __future__ import annotations

import pytest

from fedlib.progress import progress_bar, progress_enabled


@pytest.mark.parametrize("var,value", [("FEDLIB_HEADLESS", "1"), ("FEDLIB_PROGRESS", "0"), ("FEDLIB_PROGRESS", "off")])
def test_headless_runs_get_a_disabled_text_bar(monkeypatch, var, value):
    monkeypatch.delenv("FEDLIB_HEADLESS", raising=False)
    monkeypatch.delenv("FEDLIB_PROGRESS", raising=False)
    monkeypatch.setenv(var, value)
    assert not progress_enabled()
    bar = progress_bar(range(3), desc="rounds", leave=False)
    assert bar.disable and type(bar).__module__ == "tqdm.std"  # tqdm.notebook would save a widget view
    assert list(bar) == [0, 1, 2]
    counter = progress_bar(total=4, desc="stage")  # the update/close form of fedlib.unlearning.stage
    counter.update(1)
    counter.set_postfix(acc="0.5")
    counter.close()


def test_interactive_runs_get_tqdm_auto(monkeypatch):
    monkeypatch.delenv("FEDLIB_HEADLESS", raising=False)
    monkeypatch.setenv("FEDLIB_PROGRESS", "1")
    monkeypatch.delenv("TQDM_DISABLE", raising=False)
    assert progress_enabled()
    bar = progress_bar(range(2), desc="rounds", leave=False)
    assert not bar.disable
    assert list(bar) == [0, 1]
