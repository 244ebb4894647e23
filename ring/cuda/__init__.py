"""The CUDA device: rings of GPU buffers, driven by Numba kernels and stream ordering.

    arrays.py    objects with __cuda_array_interface__ in, results of the same kind out
    enqueue.py   one process driving several ranks: a plan's chunks for every rank, put on
                 the ranks' streams in an order that respects the slot protocol, with CUDA
                 events for every dependency (no host synchronisation per chunk)
    group.py     ring.Group: that mode's public face (NCCL's single-process multi-GPU mode)
"""
