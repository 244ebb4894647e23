"""The algorithm registry (ring/algorithms/): one module per algorithm, each name of
algorithm= served by exactly one, and every algorithm's refusals as its `serves` says.
Pure: contexts are stand-ins (no MPI, no device)."""

from types import SimpleNamespace

import pytest

from ring import algorithms
from ring.algorithms import AUTO, BY_NAME, resolve, why_not
from ring.options import ALGORITHMS, EXCHANGE_BYTES
from ring.schedule import Collective
from ring.topology import Topology

EVERY = [c for c in Collective if c is not Collective.BARRIER]


def context(device="host", size=4, nodes=1, exchange=True):
    """A stand-in Context: `size` ranks on `nodes` equal nodes of consecutive ranks."""
    per = size // nodes
    topo = Topology(None, [r // per for r in range(size)], [r % per for r in range(size)])
    return SimpleNamespace(device=device, size=size, rank=0, topo=topo, kept={},
                           exchange=SimpleNamespace(cap=EXCHANGE_BYTES, cma=None) if exchange
                           else None,
                           backend=SimpleNamespace(kernel=None,  # (cuda: the stream path)
                                                   no_peer_access=lambda: None))


def test_every_name_has_one_module_in_wire_order():
    assert list(BY_NAME) == [a for a in ALGORITHMS if a != AUTO]
    assert [a.code for a in BY_NAME.values()] == list(range(1, len(ALGORITHMS)))
    modules = {type(a).__module__ for a in BY_NAME.values()}
    assert modules == {f"ring.algorithms.{n}" for n in BY_NAME}


@pytest.mark.parametrize("device", ["host", "cuda"])
@pytest.mark.parametrize("name", list(BY_NAME))
def test_an_algorithm_refuses_what_it_does_not_serve(name, device):
    """On one node of 4 (where every algorithm can run), small calls: refused exactly where
    `serves` leaves the collective out (hierarchical needs nodes: asked there on 2)."""
    ctx = context(device, nodes=2 if name == "hierarchical" else 1,
                  exchange=name != "hierarchical")
    ctx.backend.kernel = object()  # (cuda: the kernel path, where twoshot runs its halves)
    alg = BY_NAME[name]
    for c in EVERY:
        why = alg.why_not(ctx, c, 64)
        assert (why is None) == (c in alg.serves[device]), (name, device, c, why)


def test_the_shared_memory_algorithms_need_one_node_and_fit_the_window():
    across = context(exchange=False, nodes=2)
    one = context()
    assert why_not(across, "twoshot", Collective.ALLREDUCE, 64) == \
        "it needs every rank of the communicator on one node"
    assert why_not(across, "oneshot", Collective.ALLREDUCE, 64) is None  # by MPI (host)
    assert why_not(context("cuda", exchange=False, nodes=2), "oneshot",
                   Collective.ALLREDUCE, 64) is not None
    assert "at most" in why_not(one, "oneshot", Collective.ALLREDUCE, EXCHANGE_BYTES + 1)
    # an all-gather posts its count / K per rank
    assert why_not(one, "oneshot", Collective.ALLGATHER, 4 * EXCHANGE_BYTES) is None


def test_cma_needs_one_node_and_the_processes_may_read_each_other():
    """cma reads the peers' arrays where they are: any size, one node only, and only where
    the exchange's probe found every rank able to read every other's memory (its reason
    otherwise, the same on every rank)."""
    one = context()
    for c in EVERY:
        assert why_not(one, "cma", c, 64 * EXCHANGE_BYTES) is None
    assert why_not(context(exchange=False, nodes=2), "cma", Collective.ALLGATHER, 64) == \
        "it needs every rank of the communicator on one node"
    one.exchange.cma = "rank 1 cannot read rank 0's memory (Operation not permitted)"
    assert why_not(one, "cma", Collective.ALLGATHER, 64) == one.exchange.cma
    assert resolve(one, AUTO, Collective.ALLGATHER, 1 << 24, [(1 << 30, "cma")]) == "ring"
    with pytest.raises(ValueError, match="'cma' cannot run here: rank 1 cannot read"):
        resolve(one, "cma", Collective.ALLGATHER, 64, [])


def test_the_two_shot_kernel_takes_any_size_where_the_kernel_path_runs():
    """On the cuda device with the persistent kernel's path (every rank of the node
    co-resident), twoshot runs as its kernel, in rounds of its areas: no size limit; on
    the stream path the host-driven twoshot keeps the window's."""
    one = context("cuda")
    assert "at most" in why_not(one, "twoshot", Collective.ALLREDUCE, EXCHANGE_BYTES + 1)
    for half in (Collective.REDUCE_SCATTER, Collective.ALLGATHER):  # its kernel's only
        assert "kernel path" in why_not(one, "twoshot", half, 64)
        assert why_not(context(), "twoshot", half, 64) == \
            f"twoshot runs {half} on the cuda device only"
    one.backend.kernel = object()
    assert why_not(one, "twoshot", Collective.ALLREDUCE, 1 << 30) is None
    for half in (Collective.REDUCE_SCATTER, Collective.ALLGATHER):
        assert why_not(one, "twoshot", half, 1 << 30) is None
    assert why_not(one, "twoshot", Collective.BROADCAST, 64) is not None


def test_one_shot_and_two_shot_refuse_gpus_without_peer_access_and_auto_takes_the_ring():
    """On a node whose GPUs cannot all map each other (every rank reads every other's
    memory): both refuse with the reason, on either path; "auto" with a rule naming them
    runs the ring."""
    from ring.transport.ipc import missing_peer_access
    pairs = {(0, 1), (1, 0), (2, 3), (3, 2)}  # two pairs of GPUs, no access across
    why = missing_peer_access([0, 1, 2, 3], lambda a, b: (a, b) in pairs)
    assert why == "GPU 0 cannot access GPU 2's memory (no peer access between them)"
    assert missing_peer_access([0, 1, 1, 0], lambda a, b: (a, b) in pairs) is None
    assert missing_peer_access([5, 5, 5], lambda a, b: False) is None  # one GPU
    assert missing_peer_access([0, 1], lambda a, b: (a, b) == (0, 1)) == \
        "GPU 1 cannot access GPU 0's memory (no peer access between them)"  # (one way only)
    for kernel in (None, object()):
        ctx = context("cuda")
        ctx.backend.kernel, ctx.backend.no_peer_access = kernel, lambda: why
        for name in ("oneshot", "twoshot"):
            assert why_not(ctx, name, Collective.ALLREDUCE, 64) == why
            assert resolve(ctx, AUTO, Collective.ALLREDUCE, 64, [(1 << 20, name)]) == "ring"
        with pytest.raises(ValueError, match="no peer access"):
            resolve(ctx, "twoshot", Collective.ALLREDUCE, 64, [])


def test_auto_takes_the_rules_then_the_two_level_then_the_ring():
    one, two = context(), context(nodes=2, exchange=False)
    assert resolve(one, AUTO, Collective.ALLREDUCE, 64, [(1 << 20, "oneshot")]) == "oneshot"
    assert resolve(one, AUTO, Collective.ALLREDUCE, 64, []) == "ring"
    assert resolve(two, AUTO, Collective.ALLREDUCE, 64, []) == "hierarchical"
    assert resolve(two, AUTO, Collective.BROADCAST, 64, []) == "ring"
    # a rule whose algorithm cannot run here is passed over
    assert resolve(two, AUTO, Collective.ALLREDUCE, 64, [(1 << 20, "twoshot")]) == "hierarchical"
    with pytest.raises(ValueError, match="'twoshot' cannot run here"):
        resolve(two, "twoshot", Collective.ALLREDUCE, 64, [])
    with pytest.raises(ValueError, match="algorithm: expected one of"):
        resolve(one, "nope", Collective.ALLREDUCE, 64, [])


def test_a_compressed_call_runs_where_the_slots_carry_the_wire():
    one, two = context(), context(nodes=2, exchange=False)
    assert resolve(one, AUTO, Collective.ALLREDUCE, 64, [], "bf16") == "ring"
    assert resolve(two, AUTO, Collective.ALLREDUCE, 64, [], "bf16") == "hierarchical"
    assert resolve(two, AUTO, Collective.REDUCE_SCATTER, 64, [], "bf16") == "ring"
    with pytest.raises(ValueError, match="cannot run with compression"):
        resolve(one, "oneshot", Collective.ALLREDUCE, 64, [], "bf16")
    with pytest.raises(ValueError, match="host device only"):
        resolve(context("cuda"), AUTO, Collective.ALLREDUCE, 64, [], "bf16")


def test_the_registry_is_the_modules():
    assert algorithms.get("tree") is algorithms.tree.ALGORITHM


def test_two_levels_need_equal_nodes_of_consecutive_ranks_and_more_than_one_rank_each():
    """hierarchical.applies: the layouts the two-level algorithm runs on (N equal nodes of
    L > 1 consecutive ranks: rank r = node * L + local index, as its rings assume) and the
    reason for each it refuses, round-robin placement among them (emulated nodes are always
    consecutive: RING_NODES never makes the others)."""
    from ring.algorithms.hierarchical import applies

    def topo(node_of):
        return Topology(None, node_of, [0] * len(node_of))
    assert applies(topo([0, 0, 1, 1]), 4) is None
    assert applies(topo([0, 0, 0, 1, 1, 1]), 6) is None
    assert "one node" in applies(topo([0, 0, 0]), 3)
    assert "one rank per node" in applies(topo([0, 1, 2]), 3)
    for layout in ([0, 1, 0, 1], [0, 0, 1, 1, 1, 0], [0, 0, 1]):
        assert "consecutive in rank order" in applies(topo(layout), len(layout)), layout
