"""The CUDA device: rings of GPU buffers, driven by Numba kernels and stream ordering.

    arrays.py      objects with __cuda_array_interface__ in, results of the same kind out
    enqueue.py     the stream path: a plan's chunks put on the ranks' streams in an order
                   that respects the slot protocol, with CUDA events (one process) or
                   stream memory operations (ring/transport/ipc.py, across processes) for
                   every dependency
    group.py       ring.Group: one process driving K ranks (NCCL's single-process mode)
    backend.py     the Communicator's cuda device: one rank per process, its links from
                   ring/transport/ (CUDA IPC inside a node, staged MPI across nodes)
    areas.py       GPU memory every rank of a node maps: oneshot / twoshot's areas
    program.py     the kernel path: a plan as a table of integers
    persistent.py  the kernel path: one persistent kernel runs the table, channels waiting
                   on counters in the neighbours' segments
    kernel_cache.py the persistent kernels on disk, under a key every process computes alike
    kernel_path.py the kernel path's host side: one launch per call, its error word
    repeated.py    repeated calls on the kernel path: the kept launch, fired again
    graphs.py      CUDA graph capture and replay
"""
