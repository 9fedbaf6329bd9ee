"""fedlib: reproductions of privacy-preserving federated learning and federated unlearning papers.

Subpackages: :mod:`fedlib.data` (datasets, partitions), :mod:`fedlib.models`, :mod:`fedlib.fl`
(the round engine), :mod:`fedlib.privacy` (clipping, mechanisms, accountant),
:mod:`fedlib.experiments` (one module per book chapter), :mod:`fedlib.results`, :mod:`fedlib.plotting`.
"""

__version__ = "0.1.0"

import torch as _torch

# A GPU computes in float32, as the CPU does: PyTorch lets cuDNN run float32 convolutions in TF32 (10 mantissa bits)
# by default, which fedlib turns off so that a unit means the same function on either device. The 20 plausible
# deniability units computed on a GPU on 2026-12-04 ran with TF32 convolutions (book/running.md, "On a GPU").
_torch.backends.cudnn.allow_tf32 = False
_torch.backends.cuda.matmul.allow_tf32 = False
