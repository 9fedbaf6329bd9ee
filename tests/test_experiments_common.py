"""Helpers every chapter experiment shares."""

from pathlib import Path

import torch

from fedlib.experiments.common import Federation, checkpoint_path, first_round_updates
from fedlib.fl import LocalSGD


def test_checkpoint_paths_are_per_chapter_seed_and_run():
    assert checkpoint_path(None, "dpfl", 0, "x") is None
    path = checkpoint_path(Path("ck"), "dpfl", 2, "100-LCDP-FL, top-10%")
    assert path == Path("ck/dpfl-seed2/100_LCDP_FL_top_10.pt")
    assert checkpoint_path(Path("ck"), "dpfl", 2, "100-LCDP-FL, top-1%") != path


def test_first_round_updates_do_not_depend_on_which_clients_are_asked(small_fed):
    train, clients, test = small_fed
    fed = Federation(train, test, clients)
    opt = LocalSGD(1, 16)
    both = first_round_updates("mlp", fed, [0, 3], seed=1, lr=0.1, opt=opt, stream="s")
    alone = first_round_updates("mlp", fed, [3], seed=1, lr=0.1, opt=opt, stream="s")
    assert torch.equal(both[1], alone[0]) and not torch.equal(both[0], both[1])
    assert all(float(u.norm()) > 0 for u in both)
