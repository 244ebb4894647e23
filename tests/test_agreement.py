"""What a MismatchError says (ring/agreement.py), without ranks: the rows every rank compares
are made here, and verdict() / _differ() are given them as an allgather would."""

import numpy as np
import pytest

from ring.agreement import FIELDS, _differ, mine, verdict
from ring.errors import MismatchError
from ring.options import ALGORITHMS, COMPRESSIONS


def test_the_field_that_differs_is_named_before_the_algorithm_auto_made_of_it():
    """Ranks that pass different compressions with algorithm="auto" resolve it to different
    algorithms too: the error names the compression (the cause), not the algorithm."""
    call = {"call": 3, "collective": 0, "count": 6, "dtype": 0, "op": 0, "root": -1,
            "in_place": 0, "chunk_bytes": 1 << 20}
    wire = (None, *COMPRESSIONS).index
    rows = [mine({**call, "algorithm": ALGORITHMS.index(a), "compression": wire(c)}, None)
            for a, c in (("ring", "bf16"), ("oneshot", None))]
    assert FIELDS.index("algorithm") < FIELDS.index("compression")
    with pytest.raises(MismatchError, match=r"allreduce: ranks disagree on compression "
                                            r"\(rank 0: bf16, rank 1: none\)"):
        verdict(np.stack(rows), rows[1], None, "allreduce")


def test_a_long_value_is_shown_by_its_first_77_characters():
    """A set-up's fields (GradientBuckets' options, say) may be long: each rank's value is
    shown in at most 80 characters; a list's first differing item, not the whole list."""
    said = _differ("names", ["a" * 200, "b" * 20])
    assert said == f"names (rank 0: '{'a' * 76}..., rank 1: '{'b' * 20}')"
    assert _differ("sizes", [[1, 2, 3], [1, 5, 3]]) == "sizes[1] (rank 0: 2, rank 1: 5)"
