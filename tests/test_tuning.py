"""The tuning table "auto" reads (ring/tuning.py): which rules apply to a layout, which
algorithm covers a size, and clear errors for a table that cannot be read."""

import json

import pytest

from ring import tuning

TABLE = {"rules": [
    {"ranks": 2, "nodes": 1, "max_bytes": 1024, "algorithm": "oneshot"},
    {"ranks": 2, "nodes": 1, "max_bytes": 65536, "algorithm": "twoshot"},
    {"ranks": 4, "nodes": 1, "max_bytes": 512, "algorithm": "naive"},
    {"ranks": 4, "nodes": 2, "max_bytes": 4096, "algorithm": "ps"},
]}


def test_rules_for_a_layout_fall_back_to_the_largest_measured_rank_count_below():
    assert tuning.rules_for(TABLE, 2, 1) == [(1024, "oneshot"), (65536, "twoshot")]
    assert tuning.rules_for(TABLE, 3, 1) == [(1024, "oneshot"), (65536, "twoshot")]
    assert tuning.rules_for(TABLE, 8, 1) == [(512, "naive")]
    assert tuning.rules_for(TABLE, 4, 2) == [(4096, "ps")]
    assert tuning.rules_for(TABLE, 1, 1) == []  # nothing measured at or below one rank
    assert tuning.rules_for(TABLE, 4, 3) == []


def test_the_rule_covering_the_size_decides_and_is_never_replaced_by_another():
    rules = tuning.rules_for(TABLE, 2, 1)
    every = lambda a: True  # noqa: E731
    assert tuning.choose(rules, 8, every) == "oneshot"
    assert tuning.choose(rules, 1024, every) == "oneshot"
    assert tuning.choose(rules, 1025, every) == "twoshot"
    assert tuning.choose(rules, 1 << 20, every) is None  # past every rule: the ring
    # the covering rule cannot run here: the ring, not the next rule's algorithm
    assert tuning.choose(rules, 8, lambda a: a != "oneshot") is None


def test_a_table_from_a_path_or_the_environment(tmp_path, monkeypatch):
    p = tmp_path / "t.json"
    p.write_text(json.dumps(TABLE))
    assert tuning.load(str(p), "host") == TABLE
    monkeypatch.setenv("RING_TUNING", str(p))
    assert tuning.load(None, "host") == TABLE
    monkeypatch.delenv("RING_TUNING")
    assert tuning.load(None, "no-such-device") == {"rules": []}  # none shipped: the ring
    assert tuning.load(p, "host") == TABLE  # (a Path too)


@pytest.mark.parametrize("bad", [1, True, 3.5, ["t.json"]])
def test_a_tuning_that_is_no_path_is_refused_before_anything_is_opened(bad, capfd):
    """open() takes an int as a file descriptor: tuning=1 (or True) read stdout and closed
    it, and the process could print no more."""
    with pytest.raises(ValueError, match="tuning: expected the path of a table, got "):
        tuning.load(bad, "host")
    print("stdout still open")
    assert capfd.readouterr().out == "stdout still open\n"


@pytest.mark.parametrize("text,why", [("{", "Expecting property name"),
                                      ('{"rules": [{"ranks": 2}]}', "nodes"),
                                      ('{"rules": 3}', "not iterable")])
def test_an_unreadable_table_is_a_clear_error(tmp_path, text, why):
    p = tmp_path / "t.json"
    p.write_text(text)
    with pytest.raises(ValueError, match=f"tuning: cannot read a tuning table from .*{why}"):
        tuning.load(str(p), "host")
    with pytest.raises(ValueError, match="tuning: cannot read a tuning table from .*missing"):
        tuning.load(str(tmp_path / "missing.json"), "host")


def test_rules_name_their_collective_and_an_unknown_one_is_refused(tmp_path):
    table = {"rules": [{"ranks": 2, "nodes": 1, "max_bytes": 64, "algorithm": "oneshot"},
                       {"collective": "alltoall", "ranks": 2, "nodes": 1, "max_bytes": 8,
                        "algorithm": "oneshot"}]}
    assert tuning.rules_for(table, 2, 1) == [(64, "oneshot")]
    assert tuning.rules_for(table, 2, 1, "alltoall") == [(8, "oneshot")]
    assert tuning.rules_for(table, 2, 1, "gather") == []
    bad = tmp_path / "bad.json"
    table["rules"][1]["collective"] = "all_to_all"
    bad.write_text(json.dumps(table))
    with pytest.raises(ValueError, match="cannot read a tuning table.*all_to_all"):
        tuning.load(str(bad), "host")


REGISTERED = {"rules": [
    {"ranks": 2, "nodes": 1, "max_bytes": 1 << 20, "algorithm": "twoshot", "registered": False},
    {"ranks": 2, "nodes": 1, "max_bytes": 1 << 28, "algorithm": "twoshot", "registered": True},
    {"ranks": 2, "nodes": 1, "max_bytes": 64, "algorithm": "oneshot", "collective": "allgather"},
]}


def test_a_rule_may_apply_to_registered_buffers_or_to_staged_ones_only():
    # staged, the two-shot up to 1 MiB (it moves 6N bytes a rank there); registered, to 256 MiB
    assert tuning.rules_for(REGISTERED, 2, 1) == [(1 << 20, "twoshot")]
    assert tuning.rules_for(REGISTERED, 2, 1, registered=True) == [(1 << 28, "twoshot")]
    every = lambda a: True  # noqa: E731
    assert tuning.choose(tuning.rules_for(REGISTERED, 2, 1), 64 << 20, every) is None
    assert tuning.choose(tuning.rules_for(REGISTERED, 2, 1, registered=True), 64 << 20,
                         every) == "twoshot"
    # a rule without the condition applies to both
    for reg in (False, True):
        assert tuning.rules_for(REGISTERED, 2, 1, "allgather", reg) == [(64, "oneshot")]
    assert tuning.by_registration(REGISTERED) and not tuning.by_registration(TABLE)


def test_a_rules_registration_is_true_or_false(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"rules": [{"ranks": 2, "nodes": 1, "max_bytes": 8,
                                        "algorithm": "ring", "registered": "yes"}]}))
    with pytest.raises(ValueError, match="registered: true or false, got 'yes'"):
        tuning.load(str(p), "cuda")


IN_PLACE = {"rules": [
    {"ranks": 2, "nodes": 1, "max_bytes": 8192, "algorithm": "oneshot"},
    {"ranks": 2, "nodes": 1, "max_bytes": 1 << 26, "algorithm": "cma"},
    {"ranks": 2, "nodes": 1, "max_bytes": 1 << 17, "algorithm": "oneshot", "in_place": True},
    {"ranks": 2, "nodes": 1, "max_bytes": 1 << 26, "algorithm": "cma", "in_place": True},
    {"ranks": 3, "nodes": 1, "max_bytes": 1 << 26, "algorithm": "cma"},
]}


def test_in_place_calls_take_their_layouts_in_place_rules_where_it_has_them():
    # (in place: out is x, or x's block where MPI places it; the ranks agree on it, as the
    # agreement step compares it)
    assert tuning.rules_for(IN_PLACE, 2, 1) == [(8192, "oneshot"), (1 << 26, "cma")]
    assert tuning.rules_for(IN_PLACE, 2, 1, in_place=True) == [(1 << 17, "oneshot"),
                                                               (1 << 26, "cma")]
    # a layout without in-place rules: its rules serve both; the ranks' layout is chosen
    # before the in-place rules (3 ranks: not the 2 ranks' in-place rules)
    for ranks in (3, 5):
        assert tuning.rules_for(IN_PLACE, ranks, 1, in_place=True) == [(1 << 26, "cma")]
    assert tuning.rules_for(IN_PLACE, 2, 1, "allgather", in_place=True) == []


def test_a_rules_in_place_is_true_or_false_and_never_a_rooted_collectives(tmp_path):
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"rules": [{"ranks": 2, "nodes": 1, "max_bytes": 8,
                                        "algorithm": "ring", "in_place": 1}]}))
    with pytest.raises(ValueError, match="in_place: true or false, got 1"):
        tuning.load(str(p), "host")
    # a rooted collective's in place is its root's own business: the ranks would not agree
    p.write_text(json.dumps({"rules": [{"ranks": 2, "nodes": 1, "max_bytes": 8,
                                        "algorithm": "ring", "in_place": True,
                                        "collective": "reduce"}]}))
    with pytest.raises(ValueError, match="in_place.*reduce.*root"):
        tuning.load(str(p), "host")


def test_the_digest_the_ranks_compare_is_the_rules_and_only_they():
    """Communicator compares digest(table) across ranks at creation: tables whose rules
    differ in anything differ there; the same rules (keys in any order, another machine's
    label) digest alike."""
    rule = {"ranks": 2, "nodes": 1, "max_bytes": 1024, "algorithm": "oneshot"}
    base = tuning.digest({"machine": "a", "rules": [rule]})
    assert len(base) == 8 and int(base, 16) >= 0
    assert tuning.digest({"machine": "b", "rules": [dict(reversed(rule.items()))]}) == base
    for changed in ({**rule, "max_bytes": 2048}, {**rule, "algorithm": "ring"},
                    {**rule, "registered": True}):
        assert tuning.digest({"rules": [changed]}) != base, changed
    assert tuning.digest({"rules": []}) != base
    assert tuning.digest({"rules": [rule, rule]}) != base
