"""PyTorch tensors as ring takes them, and back, without importing torch where none is used.

    as_array(t)        a CPU tensor: a NumPy view of its memory (bfloat16 through its
                       int16 bits, as ml_dtypes.bfloat16); a CUDA tensor: itself (ring's
                       cuda device takes it through __cuda_array_interface__)
    as_tensor(a, like) a NumPy or GPU array as a tensor on like's device, sharing a's memory

ring.torch (the torch.distributed backend) and ring.buckets (gradients given as tensors)
both go through here.
"""

from __future__ import annotations

import numpy as np


def is_tensor(x) -> bool:
    return type(x).__module__.startswith("torch")


def as_array(t):
    import torch
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"ring: expected a torch.Tensor, got {type(t).__name__}")
    if t.is_cuda:
        return t
    if t.device.type != "cpu":
        raise TypeError(f"ring: tensors on {t.device.type} are not supported (cpu, cuda)")
    t = t.detach()
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def as_tensor(a, like):
    import torch
    if isinstance(a, np.ndarray):
        if a.dtype.name == "bfloat16":
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(a)
    return torch.as_tensor(a, device=like.device)
