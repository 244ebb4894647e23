"""PyTorch tensors as ring takes them, and back, without importing torch where none is used.

    as_array(t)        a CPU tensor: a NumPy view of its memory (bfloat16 and float8
                       through their integer bits, as ml_dtypes'); a CUDA tensor: itself
                       (ring's cuda device takes it through __cuda_array_interface__)
    as_tensor(a, like) a NumPy or GPU array as a tensor on like's device, sharing a's memory

ring.torch (the torch.distributed backend) and ring.buckets (gradients given as tensors)
both go through here.
"""

from __future__ import annotations

import numpy as np


def is_tensor(x) -> bool:
    return type(x).__module__.startswith("torch")


# torch dtypes NumPy lacks that ring carries: through integer bits of their width, as the
# ml_dtypes type of the same name (on the cuda device, ring.cuda.arrays does the same)
BITS = {"bfloat16": "int16", "float8_e4m3fn": "uint8", "float8_e5m2": "uint8"}


def as_array(t):
    import torch
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"ring: expected a torch.Tensor, got {type(t).__name__}")
    if t.is_cuda:
        return t
    if t.device.type != "cpu":
        raise TypeError(f"ring: tensors on {t.device.type} are not supported (cpu, cuda)")
    t = t.detach()
    name = str(t.dtype).removeprefix("torch.")
    if name in BITS:
        import ml_dtypes
        return t.view(getattr(torch, BITS[name])).numpy().view(getattr(ml_dtypes, name))
    try:
        return t.numpy()
    except TypeError:  # a dtype neither NumPy nor ring has (float8_e4m3fnuz, bits16, ...)
        pass
    # its bytes under a dtype that names it, which no collective takes: ring's argument check
    # refuses it on every rank (the others told by the agreement), where torch's own
    # TypeError here would leave them waiting in the collective
    try:
        raw = t.unsqueeze(-1).view(torch.uint8).numpy()
    except RuntimeError:  # (not viewable as bytes: a quantized one, say)
        raise TypeError(f"ring: unsupported dtype {t.dtype}") from None
    return raw.view(np.dtype([(str(t.dtype), f"V{t.element_size()}")])).reshape(t.shape)


def as_tensor(a, like):
    import torch
    if isinstance(a, np.ndarray):
        if a.dtype.name in BITS:
            name = a.dtype.name
            return torch.from_numpy(a.view(BITS[name])).view(getattr(torch, name))
        return torch.from_numpy(a)
    return torch.as_tensor(a, device=like.device)
