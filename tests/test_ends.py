"""ring/transport/__init__.py's ends(): the one place that chooses each ring link's kind,
for the host and the GPU alike. A link has two ends made on two ranks, each by its own
call: the sender's outbound and its successor's inbound must be of one kind (both memory
the node maps, or both MPI), or the first chunk over it waits forever."""

from hypothesis import given, strategies as st

from ring.topology import Topology
from ring.transport import Kind, ends


def kind(name: str) -> Kind:
    return Kind(inbound=lambda pred: (name, "from", pred), outbound=lambda succ: (name, "to", succ))


# every layout of ranks on nodes: node_of[r] for each rank, nodes in any order
layouts = st.lists(st.integers(0, 3), min_size=1, max_size=9)


@given(layouts)
def test_both_ends_of_every_link_are_of_one_kind(node_of):
    topo = Topology(None, node_of, [0] * len(node_of))
    k = len(node_of)
    made = [ends(topo, r, k, kind("near"), kind("far")) for r in range(k)]
    for r in range(k):
        succ = (r + 1) % k
        out_kind, _, to = made[r][1]
        in_kind, _, frm = made[succ][0]
        assert (to, frm) == (succ, r)
        assert out_kind == in_kind == ("near" if node_of[r] == node_of[succ] else "far"), \
            (node_of, r)
