"""Transports: how a chunk crosses from a rank to its ring successor.

Every transport is a pair of ends with the same few verbs, so the executors never know
how bytes cross:

    sender:   slot = send.acquire(dtype)   wait for a free slot of the successor, get it
              send.post(nbytes)            the slot holds the next chunk
    receiver: recv.begin(nchunks)          this call will receive nchunks chunks
              slot = recv.wait(dtype)      wait for the next chunk, get its slot
              recv.release()               done with it; the sender may reuse the slot

Chunks are numbered in order over the communicator's life; each end counts its own.
`shm`: slots in MPI shared memory inside a node (the host analogue of CUDA IPC).
`mpi`: MPI point-to-point across nodes, through staging slots or, for ends that are
`direct`, from and into the caller's arrays (`post_from`, `begin(into=...)`).
"""
