"""Data-parallel training on ring's collectives: gradient buckets (DDP's layout, overlap,
wire compression with error feedback), the int8 exchanges, and the torch.distributed
backend. Above the communicator: these call its public API only.

    buckets      GradientBuckets: gradients packed into buckets, all-reduced as they fill
    quantize     int8 with a float32 scale per block, compiled host loops
    int8_reduce  the int8 exchanges (all-gather, or DeepSpeed's all-to-all)
    torch        the torch.distributed backend "ring" and DDP comm hooks
    tensors      NumPy / CUDA views of torch tensors; buffers: either device's arrays

ring.buckets and ring.torch stay importable where they were.
"""
