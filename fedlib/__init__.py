"""fedlib: reproductions of privacy-preserving federated learning and federated unlearning papers.

Subpackages: :mod:`fedlib.data` (datasets, partitions), :mod:`fedlib.models`, :mod:`fedlib.fl`
(the round engine), :mod:`fedlib.privacy` (clipping, mechanisms, accountant),
:mod:`fedlib.experiments` (one module per book chapter), :mod:`fedlib.results`, :mod:`fedlib.plotting`.
"""

__version__ = "0.1.0"
