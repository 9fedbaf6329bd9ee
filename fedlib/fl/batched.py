"""Many small clients trained at once: local SGD vectorised over clients with ``torch.func.vmap``.

Unlearning experiments run thousands of rounds of ten clients holding 100 samples each; there the cost is
Python overhead per client step, not arithmetic. :class:`BatchedClients` runs one step for all the round's
clients in a single vmapped gradient call (for a linear model that is one batched matrix product), so a round
costs about as much as one client step of :class:`~fedlib.fl.client.LocalTrainer`. Every client draws its
mini-batches from its own generator, so a client's local model does not depend on who else was sampled.
Clients are stacked as ``(M, n, ...)`` tensors: equal numbers of samples (:func:`stack_clients`), or unequal ones
(quantity skew) padded to the largest client with label :data:`PAD` (:func:`stack_padded`); a padded client trains
on its own samples only, as it would alone.

A network with dropout gets a fresh mask per client and local step (``vmap`` with ``randomness="different"``),
drawn from the global generator seeded, inside ``torch.random.fork_rng``, by one number from each client's
generator: the same seed gives the same masks, but a client's masks depend on who else was sampled in the round.
Evaluation (:meth:`BatchedClients.accuracy`, :meth:`BatchedClients.losses`) runs with dropout off. On a CPU a CNN
without dropout takes its clients' gradients one client at a time instead (``torch.func.grad`` without ``vmap``): the
same arithmetic as a client trained alone, without vmap's grouped convolutions.

:class:`BatchedLocalTrainer` is the engine's counterpart of :class:`~fedlib.fl.client.LocalTrainer` for a few MLP
clients at a time (``run_federated(..., client_batch=k)``): the same local SGD on per-layer parameter stacks, updated
in place, with each client's batches gathered once per epoch.
"""

from __future__ import annotations

import copy
import math
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.func import functional_call, grad, vmap

from fedlib.data.datasets import Split
from fedlib.fl.backprop import batched_mlp_grads, mlp_linears
from fedlib.fl.client import LocalSGD, sgd_step_
from fedlib.models import forward_in_chunks
from fedlib.rng import derive_seed

#: the label of padding entries in :func:`stack_padded`'s ``y``
PAD = -1


def stack_clients(data: Split, clients: Sequence[Tensor]) -> tuple[Tensor, Tensor]:
    """Client data as ``x`` (M, n, C, H, W) and ``y`` (M, n); every client must hold the same n samples."""
    sizes = sorted({len(c) for c in clients})
    if len(sizes) != 1:
        raise ValueError(f"batched clients need equal client sizes, got sizes from {sizes[0]} to {sizes[-1]}")
    index = torch.stack([c.long() for c in clients])
    return data.x[index], data.y[index]


def stack_padded(data: Split, clients: Sequence[Tensor]) -> tuple[Tensor, Tensor, Tensor]:
    """Clients of unequal sizes as ``x`` (M, n_max, ...) and ``y`` (M, n_max), each client's samples first and
    then padding (its first sample's pixels, label :data:`PAD`), and the sizes n_i (M,)."""
    sizes = torch.tensor([len(c) for c in clients])
    if len(clients) == 0 or int(sizes.min()) < 1:
        raise ValueError(f"every client needs at least one sample, got sizes {sizes.tolist()}")
    n = int(sizes.max())
    index = torch.stack([torch.cat([c.long(), c[:1].long().repeat(n - len(c))]) for c in clients])
    x, y = data.x[index], data.y[index].clone()
    y[torch.arange(n) >= sizes.unsqueeze(1)] = PAD
    return x, y, sizes


def client_sizes(y: Tensor) -> Tensor:
    """n_i of every client of a stacked ``y`` (M, n): its entries that are not :data:`PAD`."""
    return (y != PAD).sum(1)


class BatchedClients:
    """Local SGD (optionally heavy-ball momentum, reset every round) for a batch of clients.

    Args:
        model: the network; only its architecture and buffers are used (parameters come flat).
        device: where the arithmetic runs (default: where ``model`` is). Parameters and data are moved there and
            results come back to the device of the parameters passed in, so a caller can keep models, noise and
            bookkeeping on the CPU and train on a GPU; a data tensor passed again (e.g. the members evaluated every
            round) is moved once. The random streams stay the callers' CPU generators, so batches, noise and
            sampling do not depend on the device; only float rounding does.
    """

    def __init__(self, model: nn.Module, device: str | torch.device | None = None) -> None:
        self.model = model
        self.device = torch.device(device) if device is not None else next(model.parameters()).device
        if self.device != next(model.parameters()).device:
            model = copy.deepcopy(model).to(self.device)
        self.net = model  # the module the arithmetic runs on (``model`` itself unless it lives elsewhere)
        self._moved: dict[int, tuple[weakref.ref, int, Tensor]] = {}
        self.names = [n for n, _ in model.named_parameters()]
        self.shapes = [p.shape for _, p in model.named_parameters()]
        self.sizes = [p.numel() for _, p in model.named_parameters()]
        self.dim = sum(self.sizes)

        def loss(params: dict[str, Tensor], x: Tensor, y: Tensor) -> Tensor:
            return F.cross_entropy(functional_call(model, params, (x,)), y)

        def weighted(params: dict[str, Tensor], x: Tensor, y: Tensor, w: Tensor) -> Tensor:
            return (F.cross_entropy(functional_call(model, params, (x,)), y, reduction="none") * w).sum()

        self.dropout = any(isinstance(m, nn.Dropout) and m.p > 0 for m in model.modules())
        randomness = "different" if self.dropout else "error"
        self._grad, self._weighted_grad = grad(loss), grad(weighted)
        self._grads = vmap(self._grad, randomness=randomness)
        self._weighted_grads = vmap(self._weighted_grad, randomness=randomness)
        self.mlp = mlp_linears(model) is not None and len(self.names) == len(list(model.parameters()))
        # On a CPU, vmap turns each convolution into a grouped one: a step of 10 LeNet5 clients 1.8x and of 10
        # ConvNet clients 2.7x slower than one client at a time, ResNet-mini and SIFU's CIFAR-10 CNN alike
        # (benchmarks/batched_cnn.py, one quiet thread). Dropout keeps vmap, whose batched masks a client-by-client
        # loop would not draw alike.
        self.client_by_client = self.device.type == "cpu" and not self.mlp and not self.dropout

    def _data(self, t: Tensor) -> Tensor:
        """Data ``t`` on :attr:`device`: itself if it is there, else a copy, kept while ``t`` lives unchanged."""
        if t.device == self.device:
            return t
        ref, version, moved = self._moved.get(id(t), (None, -1, None))
        if ref is None or ref() is not t or version != t._version:
            moved = t.to(self.device)
            self._moved[id(t)] = (weakref.ref(t, lambda _, key=id(t): self._moved.pop(key, None)), t._version,
                                  moved)
        return moved

    def _unflatten(self, flat: Tensor) -> dict[str, Tensor]:
        parts = torch.split(flat, self.sizes, dim=1)
        return {n: part.reshape(flat.shape[0], *s) for n, part, s in zip(self.names, parts, self.shapes)}

    def _flatten(self, params: dict[str, Tensor]) -> Tensor:
        return torch.cat([params[n].reshape(params[n].shape[0], -1) for n in self.names], dim=1)

    def _gradients(self, theta: Tensor, x: Tensor, y: Tensor, w: Tensor | None = None) -> Tensor:
        """Each client's mean cross-entropy gradient (m, d) at its own parameters theta (m, d); with sample
        weights ``w`` (m, b), the gradient of Σ_j w_j ℓ_j instead."""
        params = self._unflatten(theta)
        if self.client_by_client:
            flat = []
            for i in range(theta.shape[0]):
                one = {n: p[i] for n, p in params.items()}
                g = self._grad(one, x[i], y[i]) if w is None else self._weighted_grad(one, x[i], y[i], w[i])
                flat.append(torch.cat([g[n].reshape(-1) for n in self.names]))
            return torch.stack(flat)
        if not self.mlp:
            return self._flatten(self._grads(params, x, y) if w is None else self._weighted_grads(params, x, y, w))
        tensors = [params[n] for n in self.names]
        grads, _ = batched_mlp_grads(tensors[0::2], tensors[1::2], x, y, w)
        return self._flatten(dict(zip(self.names, grads)))

    def train(self, start: Tensor, x: Tensor, y: Tensor, *, steps: int | Sequence[int] | None = None,
              epochs: int | None = None, batch_size: int, lr: float, momentum: float = 0.0, adam: bool = False,
              generators: Sequence[torch.Generator]) -> Tensor:
        """Local models after local training from ``start`` (SIFU's LocalWork; FLZ's LocalTrain).

        Args:
            start: flat start model (d,), the same for every client.
            x, y: the clients' samples, (m, n, ...) and (m, n); clients of unequal sizes padded with label
                :data:`PAD` (:func:`stack_padded`) each train on their own n_i samples, as they would alone.
            steps: K local steps, each on min(B, n) samples drawn without replacement (B ≥ n: full-batch GD), or
                one K_i per client (unequal clients stop after their own K_i steps);
            epochs: or E passes over a fresh shuffle of each client's samples in batches of B (the last one
                smaller). Give exactly one of the two.
            batch_size: B.
            lr: η.
            momentum: β of v ← β v + g, θ ← θ − η v (0: plain SGD).
            adam: Adam (β = 0.9, 0.999, ε = 1e-8, as ``torch.optim.Adam``) with fresh moments instead of SGD.
            generators: one per client, for its mini-batches.

        Returns:
            The local models θ_i (m, d).
        """
        m, n = y.shape
        if (steps is None) == (epochs is None):
            raise ValueError(f"give exactly one of steps and epochs, got steps={steps!r}, epochs={epochs!r}")
        if len(generators) != m:
            raise ValueError(f"need one generator per client: {m} clients, {len(generators)} generators")
        if start.numel() != self.dim:
            raise ValueError(f"start has {start.numel()} entries, the model has {self.dim} parameters")
        home = start.device
        start, x, y = start.to(self.device), self._data(x), self._data(y)
        sizes = client_sizes(y)
        per_client = steps is not None and not isinstance(steps, int)
        if per_client and len(steps) != m:
            raise ValueError(f"steps per client: {m} clients, {len(steps)} step counts")
        if per_client or bool((sizes != n).any()):
            if adam:
                raise ValueError("adam=True needs clients of equal sizes and one step count")
            return self._train_unequal(start, x, y, sizes, steps, epochs, batch_size, lr, momentum,
                                       generators).to(home)
        theta = start.detach().reshape(1, -1).repeat(m, 1)
        velocity = torch.zeros_like(theta) if momentum > 0 or adam else None
        second = torch.zeros_like(theta) if adam else None
        rows = torch.arange(m, device=y.device).unsqueeze(1)
        t = 0
        for idx in self._batches(n, steps, epochs, batch_size, generators):
            xb, yb = (x, y) if idx is None else (x[rows, idx.to(y.device)], y[rows, idx.to(y.device)])
            if self.dropout:
                g = self._dropout_gradients(theta, xb, yb, generators)
            else:
                g = self._gradients(theta, xb, yb)
            t += 1
            if adam:
                velocity.mul_(0.9).add_(g, alpha=0.1)
                second.mul_(0.999).addcmul_(g, g, value=0.001)
                denom = (second.sqrt() / math.sqrt(1 - 0.999**t)).add_(1e-8)
                theta = theta.addcdiv(velocity, denom, value=-lr / (1 - 0.9**t))
                continue
            if velocity is not None:
                g = velocity.mul_(momentum).add_(g)
            theta = theta - lr * g
        return theta.to(home)

    def _train_unequal(self, start: Tensor, x: Tensor, y: Tensor, sizes: Tensor, steps: int | Sequence[int] | None,
                       epochs: int | None, batch_size: int, lr: float, momentum: float,
                       generators: Sequence[torch.Generator]) -> Tensor:
        """:meth:`train` for clients of unequal sizes or step counts: every step, each client that has steps left
        takes its own batch (padded to the longest with weight 0, its b_i samples weighted 1/b_i); the others
        stand still."""
        m = len(sizes)
        theta = start.detach().reshape(1, -1).repeat(m, 1)
        velocity = torch.zeros_like(theta) if momentum > 0 else None
        plans = [self._client_batches(int(sizes[i]), steps if steps is None or isinstance(steps, int) else
                                      int(steps[i]), epochs, batch_size, generators[i]) for i in range(m)]
        for s in range(max((len(p) for p in plans), default=0)):
            moving = [i for i, p in enumerate(plans) if s < len(p)]
            batch = [plans[i][s] for i in moving]
            width = max(len(b) for b in batch)
            idx = torch.zeros(len(moving), width, dtype=torch.long)
            w = torch.zeros(len(moving), width, dtype=theta.dtype)
            for j, b in enumerate(batch):
                idx[j, :len(b)] = b
                w[j, :len(b)] = 1.0 / len(b)
            rows = torch.tensor(moving, device=y.device)
            idx = idx.to(y.device)
            xb, yb, wb = x[rows.unsqueeze(1), idx], y[rows.unsqueeze(1), idx], w.to(theta.device)  # never padding
            if self.dropout:
                g = self._dropout_gradients(theta[rows], xb, yb, [generators[i] for i in moving], wb)
            else:
                g = self._gradients(theta[rows], xb, yb, wb)
            if velocity is not None:
                velocity[rows] = velocity[rows] * momentum + g
                g = velocity[rows]
            theta[rows] = theta[rows] - lr * g
        return theta

    @staticmethod
    def _client_batches(n: int, steps: int | None, epochs: int | None, batch_size: int,
                        generator: torch.Generator) -> list[Tensor]:
        """One client's batch indices, step by step, drawn from its generator exactly as :meth:`_batches` draws
        them for a client trained alone."""
        if steps is not None:
            return [torch.arange(n) if batch_size >= n else torch.randperm(n, generator=generator)[:batch_size]
                    for _ in range(steps)]
        out = []
        for _ in range(epochs):
            order = torch.randperm(n, generator=generator)
            out += [order[s:s + batch_size] for s in range(0, n, batch_size)]
        return out

    def _dropout_gradients(self, theta: Tensor, x: Tensor, y: Tensor, generators: Sequence[torch.Generator],
                           w: Tensor | None = None) -> Tensor:
        """:meth:`_gradients` with dropout masks drawn from the global generator, seeded by one number from each
        client's generator inside ``fork_rng`` (the caller's global random state is left untouched)."""
        draws = [int(torch.randint(2**62, (1,), generator=g)) for g in generators]
        devices = [theta.device.index or 0] if theta.is_cuda else []
        with torch.random.fork_rng(devices=devices):
            seed = derive_seed(0, "dropout", *draws)
            torch.manual_seed(seed)
            if theta.is_cuda:
                torch.cuda.manual_seed(seed)
            return self._gradients(theta, x, y, w)

    @contextmanager
    def _evaluating(self) -> Iterator[None]:
        """Dropout off while evaluating (a network without dropout is left as it is)."""
        was = self.net.training
        if self.dropout:
            self.net.eval()
        try:
            yield
        finally:
            self.net.train(was)

    @staticmethod
    def _batches(n: int, steps: int | None, epochs: int | None, batch_size: int,
                 generators: Sequence[torch.Generator]) -> Iterator[Tensor | None]:
        """Per step, each client's batch indices (m, b); None for the whole client."""
        if steps is not None:
            for _ in range(steps):
                yield None if batch_size >= n else torch.stack(
                    [torch.randperm(n, generator=g)[:batch_size] for g in generators])
            return
        for _ in range(epochs):
            order = torch.stack([torch.randperm(n, generator=g) for g in generators])
            for s in range(0, n, batch_size):
                yield order[:, s:s + batch_size]

    @torch.no_grad()
    def accuracy(self, params: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """Accuracy of flat ``params`` (d,) on each client's samples: a tensor (M,) for x (M, n, ...), y (M, n)
        (padding, label :data:`PAD`, is not counted)."""
        home, x, y = params.device, self._data(x), self._data(y)
        logits = self._logits(params.to(self.device), x.reshape(-1, *x.shape[2:]))
        hits = (logits.argmax(1) == y.reshape(-1)).reshape(y.shape).float()
        sizes = client_sizes(y)
        if bool((sizes == y.shape[1]).all()):
            return hits.mean(1).to(home)
        return (hits.sum(1) / sizes.to(hits.dtype)).to(home)

    @torch.no_grad()
    def losses(self, params: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """Per-sample cross-entropy of flat ``params`` (d,) on samples x (N, ...), y (N,)."""
        losses = F.cross_entropy(self._logits(params.to(self.device), self._data(x)), self._data(y), reduction="none")
        return losses.to(params.device)

    def _logits(self, params: Tensor, x: Tensor) -> Tensor:
        """The logits of flat ``params`` (d,) on samples x (N, ...), dropout off; a CNN sees
        :data:`~fedlib.models.EVAL_CHUNK` samples at a time (:func:`~fedlib.models.forward_in_chunks`: 3.6x faster
        for cnn_sifu on 6,000 images)."""
        named = {k: v[0] for k, v in self._unflatten(params.reshape(1, -1)).items()}
        with self._evaluating():
            return forward_in_chunks(lambda xb: functional_call(self.net, named, (xb,)), x, self.net)


class BatchedLocalTrainer:
    """:class:`~fedlib.fl.client.LocalTrainer`'s local SGD (E epochs of batches of B, optional momentum with
    dampening) for m MLP clients holding the same number of samples, one batched matrix product per layer and step
    for all of them (:func:`~fedlib.fl.backprop.batched_mlp_grads`).

    Each client shuffles with its own generator exactly as ``LocalTrainer`` does, so a client's local model equals
    ``LocalTrainer``'s up to float32 rounding (the batched products and softmax sum in another order), whoever else
    is in the batch.

    Args:
        model: a ``Sequential`` MLP (:func:`~fedlib.fl.backprop.mlp_linears`); only its architecture is used.
    """

    def __init__(self, model: nn.Module) -> None:
        params = list(model.parameters())
        if mlp_linears(model) is None or not all(p.requires_grad for p in params):
            raise ValueError("batched clients (client_batch > 1) need an MLP of Linear and ReLU layers with biases, "
                             f"every parameter trainable; got {type(model).__name__}")
        self.shapes = [p.shape for p in params]
        self.sizes = [p.numel() for p in params]

    def train(self, start: Tensor, x: Tensor, y: Tensor, indices: Sequence[Tensor], *, lr: float, opt: LocalSGD,
              generators: Sequence[torch.Generator]) -> list[tuple[Tensor, float]]:
        """Local SGD of client i from flat ``start`` on ``x[indices[i]], y[indices[i]]`` with ``generators[i]``.

        Returns:
            Per client, the update ∇W_i = W^t − W_i (flat, on ``start``'s device; training runs on ``x``'s) and
            the mean training loss of its last epoch.
        """
        m, n = len(indices), len(indices[0])
        if any(len(ix) != n for ix in indices) or len(generators) != m:
            raise ValueError(f"need {m} clients of equal size and one generator each; got sizes "
                             f"{sorted({len(ix) for ix in indices})} and {len(generators)} generators")
        base = start.to(x.device)
        layers = [part.reshape(1, *shape).repeat(m, *(1,) * len(shape))
                  for part, shape in zip(torch.split(base, self.sizes), self.shapes)]
        bufs = [torch.zeros_like(p) for p in layers] if opt.momentum > 0 else None
        steps = math.ceil(n / opt.batch_size)
        last = torch.zeros(m, device=x.device)
        for _ in range(opt.epochs):
            order = torch.stack([ix[torch.randperm(n, generator=g)] for ix, g in zip(indices, generators)])
            flat = order.reshape(-1).to(x.device)
            xs, ys = x.index_select(0, flat).reshape(m, n, -1), y.index_select(0, flat).reshape(m, n)  # one gather
            total = torch.zeros(m, device=x.device)
            for s in range(steps):
                batch = slice(s * opt.batch_size, (s + 1) * opt.batch_size)
                grads, losses = batched_mlp_grads(layers[0::2], layers[1::2], xs[:, batch], ys[:, batch])
                sgd_step_(layers, grads, bufs, opt, lr)
                total += losses
            last = total / steps
        updates = (base - torch.cat([p.reshape(m, -1) for p in layers], dim=1)).to(start.device)
        return list(zip(updates, last.tolist()))
