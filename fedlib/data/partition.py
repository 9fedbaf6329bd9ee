"""Partitioners: split sample indices across clients, deterministically for a generator.

Each partitioner returns a list with one int64 index tensor per client. Indices refer to the
labels passed in; :func:`repeated` wraps a partitioner to work on a dataset repeated ``times``
(thesis §3.2.2: MNIST ×10 for 1,000 clients) and maps indices back to the original samples.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor

Partition = list[Tensor]


def _check_clients(num_clients: int, n: int) -> None:
    if not isinstance(num_clients, int) or num_clients < 1:
        raise ValueError(f"num_clients must be a positive int, got {num_clients!r}")
    if num_clients > n:
        raise ValueError(f"num_clients ({num_clients}) must not exceed the number of samples ({n})")


def iid(labels: Tensor, num_clients: int, *, generator: torch.Generator) -> Partition:
    """Shuffle all samples and deal them into ``num_clients`` parts of (almost) equal size."""
    n = len(labels)
    _check_clients(num_clients, n)
    perm = torch.randperm(n, generator=generator)
    return [part.clone() for part in torch.tensor_split(perm, num_clients)]


def shards(labels: Tensor, num_clients: int, *, generator: torch.Generator,
           shards_per_client: int = 2) -> Partition:
    """McMahan et al.'s pathological non-IID split (the thesis uses 2 shards per client).

    Samples are sorted by label (ties broken at random), cut into ``num_clients * shards_per_client``
    contiguous shards of equal size, and each client receives ``shards_per_client`` random shards.
    """
    n = len(labels)
    if not isinstance(shards_per_client, int) or shards_per_client < 1:
        raise ValueError(f"shards_per_client must be a positive int, got {shards_per_client!r}")
    _check_clients(num_clients * shards_per_client, n)
    perm = torch.randperm(n, generator=generator)
    order = perm[torch.argsort(labels[perm], stable=True)]
    pieces = torch.tensor_split(order, num_clients * shards_per_client)
    assignment = torch.randperm(len(pieces), generator=generator).view(num_clients, shards_per_client)
    return [torch.cat([pieces[s] for s in row.tolist()]) for row in assignment]


def class_shards(labels: Tensor, num_clients: int, *, generator: torch.Generator, shards_per_client: int = 2,
                 distinct: bool = True, max_tries: int = 100, equal_per_class: bool = False) -> Partition:
    """Single-label shards (thesis §3.3: "sorted by class into 200 single-label shards", 2 per client).

    Every class c is cut into round(n_c / s) near-equal shards, s = N / (num_clients * shards_per_client),
    so no shard straddles two classes (McMahan's sort-and-chunk cannot promise that when class counts
    are not multiples of s). Shards are dealt at random; with ``distinct`` the deal is redrawn until no
    client holds two shards of one class. For MNIST and 100 clients this gives 200 shards of 292-308.
    ``equal_per_class``: every class is cut into the same number of shards instead (thesis §5.4.1: "each class
    split into 20 shards"), so shard sizes follow the class sizes (MNIST: 271-337).
    """
    n = len(labels)
    if not isinstance(shards_per_client, int) or shards_per_client < 1:
        raise ValueError(f"shards_per_client must be a positive int, got {shards_per_client!r}")
    _check_clients(num_clients * shards_per_client, n)
    size = n / (num_clients * shards_per_client)
    classes = torch.unique(labels).tolist()
    if equal_per_class and (num_clients * shards_per_client) % len(classes):
        raise ValueError(f"equal_per_class needs num_clients * shards_per_client ({num_clients * shards_per_client}) "
                         f"to be a multiple of the number of classes ({len(classes)})")
    pieces, owner_class = [], []
    for c in classes:
        idx = torch.nonzero(labels == c).flatten()
        idx = idx[torch.randperm(len(idx), generator=generator)]
        count = num_clients * shards_per_client // len(classes) if equal_per_class else max(1, round(len(idx) / size))
        for piece in torch.tensor_split(idx, count):
            pieces.append(piece)
            owner_class.append(c)
    if len(pieces) != num_clients * shards_per_client:
        raise ValueError(f"class sizes give {len(pieces)} single-label shards, not num_clients * shards_per_client "
                         f"= {num_clients * shards_per_client}; use shards() instead")
    deal = torch.randperm(len(pieces), generator=generator).view(num_clients, shards_per_client).tolist()
    if distinct:
        _repair_deal(deal, owner_class, generator, max_tries)
    return [torch.cat([pieces[s] for s in row]) for row in deal]


def _repair_deal(deal: list[list[int]], owner_class: list[int], generator: torch.Generator, max_tries: int) -> None:
    """Swap shards between clients until no client holds two shards of one class (in place)."""
    def clash(row: list[int]) -> bool:
        return len({owner_class[s] for s in row}) < len(row)

    for _ in range(max_tries * len(deal)):
        bad = [i for i, row in enumerate(deal) if clash(row)]
        if not bad:
            return
        i = bad[int(torch.randint(len(bad), (1,), generator=generator))]
        j = int(torch.randint(len(deal), (1,), generator=generator))
        a = int(torch.randint(len(deal[i]), (1,), generator=generator))
        b = int(torch.randint(len(deal[j]), (1,), generator=generator))
        before = clash(deal[i]) + clash(deal[j])
        deal[i][a], deal[j][b] = deal[j][b], deal[i][a]
        if clash(deal[i]) + clash(deal[j]) > before:
            deal[i][a], deal[j][b] = deal[j][b], deal[i][a]  # undo a swap that adds a clash
    raise ValueError("no deal with distinct classes per client found; pass distinct=False")


def dirichlet(labels: Tensor, num_clients: int, *, generator: torch.Generator, alpha: float,
              min_size: int = 1, max_tries: int = 100) -> Partition:
    """Label-skewed split: for each class, client shares are drawn from Dirichlet(``alpha``).

    Small ``alpha`` gives few classes per client, large ``alpha`` approaches IID. Draws are
    repeated until every client has at least ``min_size`` samples.
    """
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha!r}")
    n = len(labels)
    _check_clients(num_clients, n)
    classes = torch.unique(labels)
    concentration = torch.full((num_clients,), float(alpha), dtype=torch.float64)
    for _ in range(max_tries):
        parts: list[list[Tensor]] = [[] for _ in range(num_clients)]
        for c in classes.tolist():
            idx = torch.nonzero(labels == c).flatten()
            idx = idx[torch.randperm(len(idx), generator=generator)]
            gamma = torch._standard_gamma(concentration, generator=generator)  # Dirichlet via Gammas
            shares = gamma / gamma.sum()
            cuts = (torch.cumsum(shares, 0) * len(idx)).round().long()[:-1]
            for client, piece in enumerate(torch.tensor_split(idx, cuts)):
                parts[client].append(piece)
        result = [torch.cat(p) for p in parts]
        if min(len(p) for p in result) >= min_size:
            return result
    raise ValueError(f"could not give every client {min_size} samples with alpha={alpha} in {max_tries} draws; "
                     "raise alpha or lower min_size")


def class_per_client(labels: Tensor, num_clients: int, *, generator: torch.Generator,
                     classes_per_client: int) -> Partition:
    """Each client holds ``classes_per_client`` classes; a class's samples are split evenly among its holders.

    Classes are dealt round-robin over a random class order, so every class is held by
    (almost) the same number of clients and every sample is assigned.
    """
    n = len(labels)
    _check_clients(num_clients, n)
    classes = torch.unique(labels)
    k = len(classes)
    if not isinstance(classes_per_client, int) or not 1 <= classes_per_client <= k:
        raise ValueError(f"classes_per_client must be an int in [1, {k}], got {classes_per_client!r}")
    if num_clients * classes_per_client < k:
        raise ValueError(f"num_clients * classes_per_client ({num_clients * classes_per_client}) must be at "
                         f"least the number of classes ({k}) so that every sample is assigned")
    order = classes[torch.randperm(k, generator=generator)]
    holders: dict[int, list[int]] = {int(c): [] for c in classes}
    slot = 0
    for client in range(num_clients):
        for _ in range(classes_per_client):
            holders[int(order[slot % k])].append(client)
            slot += 1
    parts: list[list[Tensor]] = [[] for _ in range(num_clients)]
    for c, owners in holders.items():
        idx = torch.nonzero(labels == c).flatten()
        idx = idx[torch.randperm(len(idx), generator=generator)]
        for owner, piece in zip(owners, torch.tensor_split(idx, len(owners))):
            parts[owner].append(piece)
    return [torch.cat(p) for p in parts]


def unequal(labels: Tensor, num_clients: int, *, generator: torch.Generator, sigma: float = 1.0,
            min_size: int = 1) -> Partition:
    """IID samples with log-normal client sizes (``sigma`` is the log-space std; 0 gives equal sizes)."""
    n = len(labels)
    _check_clients(num_clients, n)
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    if min_size * num_clients > n:
        raise ValueError(f"min_size * num_clients ({min_size * num_clients}) exceeds the number of samples ({n})")
    weights = torch.exp(sigma * torch.randn(num_clients, generator=generator, dtype=torch.float64))
    spare = n - min_size * num_clients
    sizes = torch.floor(weights / weights.sum() * spare).long() + min_size
    sizes[: n - int(sizes.sum())] += 1  # hand out the rounding remainder
    perm = torch.randperm(n, generator=generator)
    return [part.clone() for part in torch.split(perm, sizes.tolist())]


def sized(labels: Tensor, num_clients: int, *, generator: torch.Generator, sizes: Sequence[int]) -> Partition:
    """Quantity skew: IID samples dealt into clients of the given ``sizes`` (a random split of a shuffled order,
    as ``torch.utils.data.random_split`` in the plausible-deniability paper's code); labels stay random."""
    n = len(labels)
    _check_clients(num_clients, n)
    sizes = [int(s) for s in sizes]
    if len(sizes) != num_clients or min(sizes) < 1 or sum(sizes) > n:
        raise ValueError(f"sizes must be {num_clients} positive ints summing to at most {n}, got {len(sizes)} "
                         f"sizes summing to {sum(sizes)} (smallest {min(sizes, default=None)})")
    perm = torch.randperm(n, generator=generator)
    return [part.clone() for part in torch.split(perm[:sum(sizes)], sizes)]


def _shuffled_pools(labels: Tensor, generator: torch.Generator) -> tuple[Tensor, list[Tensor]]:
    classes = torch.unique(labels)
    pools = [torch.nonzero(labels == c).flatten() for c in classes.tolist()]
    return classes, [p[torch.randperm(len(p), generator=generator)] for p in pools]


def _take(classes: Tensor, pools: list[Tensor], used: list[int], row: Sequence[int]) -> Tensor:
    """The next ``row[c]`` unused samples of every class c (advances ``used``)."""
    parts = []
    for c, take in enumerate(row):
        take = int(take)
        if take < 0:
            raise ValueError(f"counts must be >= 0, got {take} for class {int(classes[c])}")
        if used[c] + take > len(pools[c]):
            raise ValueError(f"class {int(classes[c])} has only {len(pools[c])} samples; the clients need more "
                             "(lower the number of clients or samples per client)")
        parts.append(pools[c][used[c]:used[c] + take])
        used[c] += take
    return torch.cat(parts)


def by_counts(labels: Tensor, counts: Sequence[Sequence[int]], *, generator: torch.Generator) -> Partition:
    """Disjoint clients with ``counts[i][c]`` samples of class c each (e.g. Wang's Tables 4.1, 4.3, 4.4), drawn
    without replacement from a shuffled pool per class."""
    classes, pools = _shuffled_pools(labels, generator)
    if any(len(row) != len(classes) for row in counts):
        raise ValueError(f"counts must have one entry per class ({len(classes)}) in every row")
    used = [0] * len(classes)
    return [_take(classes, pools, used, row) for row in counts]


def fixed_size(labels: Tensor, num_clients: int, *, generator: torch.Generator, samples_per_client: int,
               alpha: float | None = None) -> Partition:
    """Disjoint clients of exactly ``samples_per_client`` samples (the SIFU paper §5.1, "reduced" datasets).

    ``alpha=None``: client i holds class i mod K only. Otherwise each client's class proportions are drawn from
    Dirichlet(``alpha``) (Hsu et al. 2019) and rounded to counts by largest remainder. Samples
    are drawn without replacement from a shared pool, so no two clients share a sample (the authors' code draws
    with replacement).
    """
    n = len(labels)
    if not isinstance(samples_per_client, int) or samples_per_client < 1:
        raise ValueError(f"samples_per_client must be a positive int, got {samples_per_client!r}")
    if alpha is not None and not alpha > 0:
        raise ValueError(f"alpha must be > 0 or None, got {alpha!r}")
    _check_clients(num_clients * samples_per_client, n)
    classes, pools = _shuffled_pools(labels, generator)
    k = len(classes)
    used = [0] * k
    out = []
    for i in range(num_clients):
        row = torch.zeros(k, dtype=torch.long)
        if alpha is None:
            row[i % k] = samples_per_client
        else:
            gamma = torch._standard_gamma(torch.full((k,), float(alpha), dtype=torch.float64), generator=generator)
            share = gamma / gamma.sum() * samples_per_client
            row = share.floor().long()
            rest = samples_per_client - int(row.sum())
            row[torch.argsort(share - share.floor(), descending=True)[:rest]] += 1
        out.append(_take(classes, pools, used, row.tolist()))
    return out


PARTITIONERS: dict[str, Callable[..., Partition]] = {
    "iid": iid, "shards": shards, "class_shards": class_shards, "dirichlet": dirichlet,
    "class_per_client": class_per_client, "unequal": unequal, "fixed_size": fixed_size,
    "by_counts": by_counts, "sized": sized,
}


def repeated(labels: Tensor, times: int, method: str, num_clients: int, *,
             generator: torch.Generator, **kwargs) -> Partition:
    """Partition the dataset repeated ``times`` and map indices back (index mod N).

    Thesis §3.2.2 repeats MNIST ten times to give 1,000 clients 600 samples each.
    """
    if not isinstance(times, int) or times < 1:
        raise ValueError(f"times must be a positive int, got {times!r}")
    n = len(labels)
    parts = partition(method, labels.repeat(times), num_clients, generator=generator, **kwargs)
    return [p % n for p in parts]


def partition(method: str, labels: Tensor, num_clients: int, *, generator: torch.Generator,
              repeat: int = 1, **kwargs) -> Partition:
    """Dispatch to a partitioner by name (``iid``, ``shards``, ``dirichlet``, ``class_per_client``,
    ``unequal``), optionally on the dataset repeated ``repeat`` times."""
    if method not in PARTITIONERS:
        raise ValueError(f"method must be one of {sorted(PARTITIONERS)}, got {method!r}")
    if repeat != 1:
        return repeated(labels, repeat, method, num_clients, generator=generator, **kwargs)
    return PARTITIONERS[method](labels, num_clients, generator=generator, **kwargs)
