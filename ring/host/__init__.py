"""The host device: NumPy buffers, ring links in MPI shared-memory windows inside a node and
MPI messages across nodes (ring/transport/).

    backend.py    the Communicator's host device: its links, the walk it takes
    executor.py   the walk of a plan in Python, chunk by chunk, over any pair of ends
    compiled_walk.py   the same walk compiled (Numba), when both links are in shared memory
    reduce.py     NumPy's "kernels": one ring step on one chunk, the rank-order fold
    half.py       float16 / bfloat16 arithmetic in compiled loops, bit for bit NumPy's
    compiled_round.py  one exchange round compiled: the agreement and a oneshot's data
    repeated.py   repeated small calls: what a first oneshot call worked out, kept
"""
