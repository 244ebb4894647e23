"""The layers stay in order, no module imports itself in a circle, and no private name
crosses a module.

From the bottom up (a module may import its own layer and those below, never above):

    types       ringtypes: ops and dtypes
    kernels     the Numba kernels, their launches and the CUDA driver calls they need
    base        ring's pure parts: schedule, recipe, options, tuning, errors, waits, topology
    transport   ring/transport/: how bytes reach a peer (host and GPU links, the exchange
                window, whole-buffer MPI messages)
    call        one call's arguments, the agreement on it, the Context algorithms see
    devices     ring/host/, ring/cuda/: a device's executor over the links (and the host
                and kernel paths' repeated calls); neither device imports the other
    algorithms  ring/algorithms/: one module per algorithm, on a device's backend
    api         ring.Communicator, ring.Group, the device factory, the package
    training    ring/training/ (and the ring.buckets / ring.torch names): the API's users
    harness     the benchmark

Every import counts, including those inside functions (a lazy import that closes a circle
is still a circle, only a later one). Read from the source with ast, nothing is imported.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ringtypes", "kernels", "ring", "harness")
# (layer, the module prefixes in it); the first prefix that matches a module decides
LAYERS = [
    ("types", ["ringtypes"]),
    ("kernels", ["kernels"]),
    ("base", ["ring.schedule", "ring.recipe", "ring.options", "ring.tuning", "ring.errors",
              "ring.wait", "ring.topology", "ring.debug", "ring.fatal", "ring.progress"]),
    ("transport", ["ring.transport"]),
    ("call", ["ring.call", "ring.agreement", "ring.context"]),
    ("devices", ["ring.host", "ring.cuda"]),
    ("algorithms", ["ring.algorithms"]),
    ("api", ["ring.communicator", "ring.devices", "ring.cuda.group", "ring"]),
    ("training", ["ring.training", "ring.buckets", "ring.torch"]),
    ("harness", ["harness"]),
]
RANK = {name: i for i, (name, _) in enumerate(LAYERS)}
APART = [("ring.host", "ring.cuda")]  # each device's code apart from the other's


def layer(mod: str) -> str:
    """The layer of a module: the longest prefix of LAYERS it falls under."""
    best = None
    for name, prefixes in LAYERS:
        for p in prefixes:
            if (mod == p or mod.startswith(p + ".")) and (best is None or len(p) > len(best[1])):
                best = (name, p)
    assert best is not None, f"{mod}: in no layer (add it to tests/test_layers.py's LAYERS)"
    return best[0]


def _modules() -> dict[str, Path]:
    mods = {}
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(f.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = f
    return mods


def _resolve(name: str, mods: dict) -> str | None:
    """The project module an import of `name` loads (its longest known prefix)."""
    while name and name not in mods:
        name = name.rpartition(".")[0]
    return name or None


def _imports(mod: str, path: Path, mods: dict) -> tuple[set[str], set[tuple[str, str]]]:
    """(the project modules mod imports, the private names it imports from them)."""
    is_pkg = path.name == "__init__.py"
    package = mod if is_pkg else mod.rpartition(".")[0]
    found, private = set(), set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module
            # `from pkg import sub` imports pkg.sub when sub is a module, else pkg
            names = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in mods else stem
                     for a in node.names]
            if _resolve(stem, mods) is not None:
                private |= {(stem, a.name) for a in node.names
                            if a.name.startswith("_") and not a.name.startswith("__")}
        else:
            continue
        for n in names:
            target = _resolve(n, mods)
            if target is not None and target != mod:
                found.add(target)
    return found, private


MODS = _modules()
READ = {m: _imports(m, p, MODS) for m, p in MODS.items()}
GRAPH = {m: targets for m, (targets, _) in READ.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected component of more than one module (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_graph_was_read():
    assert "ring.communicator" in GRAPH and "ring.agreement" in GRAPH["ring.communicator"]
    assert "ringtypes" in GRAPH["kernels.reduce"]
    assert "ring.algorithms.ring" in GRAPH["ring.algorithms"]


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_module_has_a_layer():
    assert {layer(m) for m in MODS} == set(RANK)


def test_the_layers_are_where_the_architecture_says():
    assert [layer(m) for m in ("ring.schedule", "ring.transport.ipc", "ring.context",
                               "ring.host.repeated", "ring.cuda.enqueue",
                               "ring.algorithms.tree", "ring.cuda.group", "ring",
                               "ring.training.buckets")] == \
        ["base", "transport", "call", "devices", "devices", "algorithms", "api", "api",
         "training"]


@pytest.mark.parametrize("name", RANK)
def test_a_layer_imports_only_itself_and_what_lies_below(name):
    bad = sorted((m, t) for m, targets in GRAPH.items() if layer(m) == name
                 for t in targets if RANK[layer(t)] > RANK[name])
    assert bad == [], "imports that run up a layer"


def test_the_devices_keep_apart():
    bad = sorted((m, t) for m, targets in GRAPH.items() for a, b in APART for t in targets
                 if (m.startswith(a) and t.startswith(b)) or (m.startswith(b) and t.startswith(a))
                 if layer(m) == layer(t) == "devices")
    assert bad == []


def test_no_private_name_is_imported_across_modules():
    bad = sorted((m, f"{stem}.{name}") for m, (_, private) in READ.items()
                 for stem, name in private)
    assert bad == []


def test_the_checks_find_what_they_look_for(tmp_path):
    """A module that imports upwards and a private name is caught (the checks can fail)."""
    (tmp_path / "ring").mkdir()
    (tmp_path / "ring" / "schedule.py").write_text(
        "from .communicator import Communicator\nfrom .wait import _helper\n")
    mods = {"ring.schedule": tmp_path / "ring" / "schedule.py", "ring.communicator": None,
            "ring.wait": None}
    targets, private = _imports("ring.schedule", mods["ring.schedule"], mods)
    assert targets == {"ring.communicator", "ring.wait"}
    assert private == {("ring.wait", "_helper")}
    assert RANK[layer("ring.communicator")] > RANK[layer("ring.schedule")]
