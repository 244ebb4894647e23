"""ring.buckets, where it has always been importable: the code is ring/training/buckets.py."""

from .training.buckets import *  # noqa: F401,F403
from .training.buckets import GradientBuckets  # noqa: F401
