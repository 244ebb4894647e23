"""The host device: NumPy buffers, MPI shared-memory windows inside a node."""
