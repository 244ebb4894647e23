"""ring.torch, where it has always been importable: `import ring.torch` registers the
torch.distributed backend "ring" (the code is ring/training/torch.py)."""

from .training.torch import *  # noqa: F401,F403
