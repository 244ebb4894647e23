"""Registered buffers (`comm.register(x)`): user memory every rank of a node reads and writes
in place, as ncclCommRegister makes it. Pure bookkeeping over the functions it is given, so
tests/test_registry.py checks it without a GPU; ipc.py (a GPU) and simipc.py (Numba's
simulator) give it the driver's answers.

What the driver says of a pointer (`describe`): its allocation, as (base, size, ident),
where ident is CU_POINTER_ATTRIBUTE_BUFFER_ID: unique to one allocation for the process's
lifetime. A buffer freed and a new one at the same address have different idents, and that
is what keeps a mapping from going stale, on both sides:

  Registry  (this rank, one per communicator) the registered ranges, each with the ident
            of its allocation when registered. find(ptr, nbytes) answers only where the
            memory at ptr is still that allocation (describe again); else the entry is
            dropped and the buffer is staged, as an unregistered one.
  PeerMaps  (the process) the peers' allocations, each opened once and kept (as keep.py
            keeps segments: under MPS the driver refused to map memory again while a
            mapping of it stood), by (peer, base). A registration that arrives with another
            ident at a base already mapped is a new allocation there: the old mapping is
            closed first, then the new one opened. Never a stale one returned.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Allocation:
    """A device allocation as the driver describes it."""
    base: int
    size: int
    ident: int

    def holds(self, ptr: int, nbytes: int) -> bool:
        return self.base <= ptr and ptr + nbytes <= self.base + self.size


@dataclass
class Registration:
    """A registered range of every rank: made by every rank at once (comm.register is
    collective), so `index` names the same registration on every rank.
    mine: this rank's allocation; lo, hi: its registered bytes [lo, hi) (addresses);
    views[q]: rank q's allocation as this process sees it (its own: the local memory)."""
    index: int
    mine: Allocation
    lo: int
    hi: int
    views: list


class Registry:
    """This rank's registrations of one communicator."""

    def __init__(self, describe):
        self._describe = describe
        self.entries: dict[int, Registration] = {}
        self._next = 0

    def next_index(self) -> int:
        return self._next

    def add(self, mine: Allocation, lo: int, hi: int, views: list) -> Registration:
        """A new registration of [lo, hi) in allocation mine. An older one of this rank
        that it covers (the same allocation, a range within [lo, hi)) is dropped: find
        answers the newest anyway, and a buffer registered every step would otherwise
        pile up entries."""
        for old in [o for o in self.entries.values()
                    if o.mine.ident == mine.ident and lo <= o.lo and o.hi <= hi]:
            del self.entries[old.index]
        r = Registration(self._next, mine, lo, hi, views)
        self.entries[r.index] = r
        self._next += 1
        return r

    def find(self, ptr: int, nbytes: int) -> Registration | None:
        """The newest registration whose range holds [ptr, ptr + nbytes), where that
        memory is still the allocation that was registered; None otherwise (a stale entry
        is dropped on the way). The newest: the ranks name a call's registration by its
        index, and a rank that deregistered a buffer and registered it again holds only
        the newest, where the others may hold an older one too."""
        for r in reversed(list(self.entries.values())):  # (in index order: newest first)
            if r.lo <= ptr and ptr + nbytes <= r.hi:
                now = self._describe(ptr)
                if now is not None and now.ident == r.mine.ident:
                    return r
                del self.entries[r.index]  # freed since: its peers' mappings are stale too
        return None

    def remove(self, ptr: int) -> list[Registration]:
        """Drop the registrations whose range holds ptr; returns those whose memory is
        still the allocation registered (a stale one, freed since and perhaps another
        allocation at its address now, is dropped as find drops it, not returned: it was
        not the buffer at ptr that was registered)."""
        gone = [r for r in self.entries.values() if r.lo <= ptr < max(r.hi, r.lo + 1)]
        if not gone:
            return []
        for r in gone:
            del self.entries[r.index]
        now = self._describe(ptr)
        return [r for r in gone if now is not None and now.ident == r.mine.ident]

    def __len__(self) -> int:
        return len(self.entries)


class PeerMaps:
    """Peers' allocations opened in this process: open(handle) -> memory, close(memory)."""

    def __init__(self, open_, close):
        self._open, self._close = open_, close
        self._mapped: dict[tuple, tuple[int, object]] = {}
        self._lock = threading.Lock()

    def get(self, peer, alloc: Allocation, handle):
        """The peer's allocation mapped here: the mapping already open for it, else a new
        one (an older allocation's at the same base closed first)."""
        key = (peer, alloc.base)
        with self._lock:
            had = self._mapped.get(key)
            if had is not None and had[0] == alloc.ident:
                return had[1]
            if had is not None:
                del self._mapped[key]
                self._close(had[1])
            mem = self._open(handle)
            self._mapped[key] = (alloc.ident, mem)
            return mem

    def __len__(self) -> int:
        return len(self._mapped)
