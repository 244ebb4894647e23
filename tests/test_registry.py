"""ring/transport/registry.py: registered buffers' bookkeeping, with a stand-in for the
driver (allocations that can be freed and made again at the same address)."""

import pytest

from ring.transport.registry import Allocation, PeerMaps, Registry

from .gpu import SIMULATED


class Driver:
    """Allocations by address; a new one gets a new ident (CU_POINTER_ATTRIBUTE_BUFFER_ID)."""

    def __init__(self):
        self.live: dict[int, Allocation] = {}
        self.idents = 0

    def malloc(self, base: int, size: int) -> Allocation:
        self.idents += 1
        a = self.live[base] = Allocation(base, size, self.idents)
        return a

    def free(self, base: int) -> None:
        del self.live[base]

    def describe(self, ptr: int):
        return next((a for a in self.live.values() if a.holds(ptr, 1)), None)


def test_find_answers_for_the_registered_range_only():
    d = Driver()
    a = d.malloc(4096, 1024)
    reg = Registry(d.describe)
    r = reg.add(a, 4096 + 256, 4096 + 768, ["views"])
    assert r.index == 0 and reg.next_index() == 1
    assert reg.find(4096 + 256, 512) is r
    assert reg.find(4096 + 300, 100) is r
    assert reg.find(4096, 512) is None  # starts before the range
    assert reg.find(4096 + 256, 513) is None  # runs past it
    assert len(reg) == 1


def test_a_buffer_freed_and_made_again_at_the_same_address_is_not_found():
    d = Driver()
    a = d.malloc(4096, 1024)
    reg = Registry(d.describe)
    reg.add(a, 4096, 5120, ["views"])
    d.free(4096)
    assert reg.find(4096, 512) is None and len(reg) == 0  # freed: dropped
    b = d.malloc(4096, 1024)  # the same address, another allocation
    reg.add(a, 4096, 5120, ["stale views"])  # registered before b was made
    assert reg.find(4096, 512) is None and len(reg) == 0
    r = reg.add(b, 4096, 5120, ["views of b"])
    assert reg.find(4096, 512) is r and r.index == 2


def test_a_buffer_registered_again_is_found_in_its_newest_registration():
    """Every rank names a call's registration by its index, and the kernel takes a buffer
    in place only where every rank names the same one. A rank that deregistered a buffer
    and registered it again (the others registering it a second time, as register is
    collective) holds only the newest; so must the others answer: the newest registration
    that holds the range, not the first (check_registered's programs, 1500 examples)."""
    d = Driver()
    a = d.malloc(4096, 1024)
    mine, theirs = Registry(d.describe), Registry(d.describe)
    mine.add(a, 4096, 5120, ["views"])
    theirs.add(a, 4096, 5120, ["views"])
    assert mine.remove(4096)  # deregistered on this rank only
    again = [reg.add(a, 4096, 5120, ["views again"]) for reg in (mine, theirs)]
    assert [reg.find(4096, 512) for reg in (mine, theirs)] == again
    assert again[0].index == again[1].index == 1 and len(theirs) == 1  # (covered: gone)


def test_a_buffer_registered_every_step_keeps_one_entry_and_a_wider_older_one_stays():
    d = Driver()
    a = d.malloc(4096, 1024)
    reg = Registry(d.describe)
    wide = reg.add(a, 4096, 5120, ["whole"])
    for _ in range(100):
        last = reg.add(a, 4096 + 256, 4096 + 512, ["part"])
    assert len(reg) == 2 and last.index == 100  # the wider one is not covered by the part
    assert reg.find(4096 + 256, 256) is last and reg.find(4096, 256) is wide
    b = d.malloc(8192, 1024)
    other = reg.add(b, 8192, 9216, ["b"])  # another allocation: nothing of a's dropped
    assert len(reg) == 3 and reg.find(8192, 16) is other


def test_remove_drops_the_ranges_that_hold_the_pointer():
    d = Driver()
    reg = Registry(d.describe)
    a, b = d.malloc(0, 100), d.malloc(1000, 100)
    ra, rb = reg.add(a, 0, 100, []), reg.add(b, 1000, 1100, [])
    assert reg.remove(1000) == [rb]
    assert reg.find(1000, 10) is None and reg.find(0, 10) is ra
    assert reg.remove(5000) == []


def test_remove_of_a_new_buffer_at_a_freed_registered_address_answers_nothing():
    """deregister(x) of a buffer never registered answers False even where a registered
    buffer was freed at its address: the stale entry is dropped, not taken for x's (found
    by check_registered's programs at 400 examples: a program's fresh buffer at the
    address of the last program's registered one)."""
    d = Driver()
    reg = Registry(d.describe)
    reg.add(d.malloc(4096, 1024), 4096, 5120, [])
    d.free(4096)
    d.malloc(4096, 1024)  # the same address, another allocation, never registered
    assert reg.remove(4096) == [] and len(reg) == 0  # (the stale entry dropped)
    r = reg.add(d.live[4096], 4096, 5120, [])
    assert reg.remove(4096) == [r]


def test_peer_maps_open_each_allocation_once_and_never_return_a_stale_one():
    opened, closed = [], []

    def open_(handle):
        opened.append(handle)
        return f"mapping of {handle}"

    maps = PeerMaps(open_, closed.append)
    a = Allocation(4096, 1024, ident=7)
    m = maps.get(1, a, "handle 7")
    assert m == "mapping of handle 7"
    assert maps.get(1, a, "handle 7") is m and opened == ["handle 7"]  # once
    assert maps.get(2, a, "rank 2's handle") != m  # another peer's memory
    b = Allocation(4096, 1024, ident=8)  # rank 1 freed a, a new allocation at its base
    m2 = maps.get(1, b, "handle 8")
    assert m2 == "mapping of handle 8" and closed == [m]  # the old closed first
    assert len(maps) == 2


@pytest.mark.parametrize("size", [1, 4096])
def test_allocation_holds(size):
    a = Allocation(100, size, 1)
    assert a.holds(100, size) and not a.holds(100, size + 1) and not a.holds(99, 1)


@pytest.mark.skipif(not SIMULATED, reason="simipc's memory: Numba's simulator")
def test_register_refuses_where_two_ranks_share_one_process():
    """A process cannot map its own memory through CUDA IPC: where two of the ranks that
    register are one process (the same host and pid), register answers False (every rank
    stages) and keeps nothing, though every buffer could be described and exported."""
    import numpy as np
    from mpi4py import MPI

    from ring.cuda import registered
    from ring.transport import simipc

    class TwoRanksOneProcess:
        size, rank = 2, 0

        def allgather(self, mine):
            return [mine, mine]

    x = simipc.shared_array(MPI.COMM_SELF, 8, np.float32)
    reg = registered.registry()
    try:
        assert registered.register(TwoRanksOneProcess(), reg, x.array, 0, None, None) is False
        assert len(reg) == 0
    finally:
        x.free()


@pytest.mark.skipif(not SIMULATED, reason="simipc's memory: Numba's simulator")
def test_the_simulators_allocations_are_known_until_freed():
    """simipc stands in for the driver's pointer queries and IPC handles (ipc.py): a shared
    array's memory is described (its allocation, with an ident of its own) and its handle
    opens while it lives; once it is freed, neither, as the driver knows no freed memory.
    Else a test could read a freed buffer through a description the driver would refuse."""
    import numpy as np
    from mpi4py import MPI

    from ring.transport import simipc

    x = simipc.shared_array(MPI.COMM_SELF, 8, np.float32)
    base, ident = x.alloc.base, x.alloc.ident
    assert simipc.describe(base + 4) is x.alloc
    handle = simipc.export(x.alloc)
    assert simipc.open_mapping(handle)[1].nbytes >= 32
    x.free()
    assert simipc.describe(base) is None and simipc.describe(base + 4) is None
    with pytest.raises(KeyError):
        simipc.open_mapping(handle)
    y = simipc.shared_array(MPI.COMM_SELF, 8, np.float32)
    try:
        assert y.alloc.ident != ident
    finally:
        y.free()
