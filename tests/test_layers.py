"""The layers stay in order and no module imports itself in a circle.

    ringtypes   ops and dtypes: imports none of the project
    kernels     the Numba kernels: may import ringtypes, never ring or harness
    ring        the library: may import kernels and ringtypes, never harness
    harness     the benchmark: may import all of the above

Every import counts, including those inside functions (a lazy import that closes a circle
is still a circle, only a later one). Read from the source with ast, nothing is imported.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("ringtypes", "kernels", "ring", "harness")
ALLOWED = {"ringtypes": set(), "kernels": {"ringtypes"}, "ring": {"ringtypes", "kernels"},
           "harness": {"ringtypes", "kernels", "ring"}}


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


def _imports(mod: str, path: Path, mods: dict) -> set[str]:
    is_pkg = path.name == "__init__.py"
    package = mod if is_pkg else mod.rpartition(".")[0]
    found = set()
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
        else:
            continue
        for n in names:
            target = _resolve(n, mods)
            if target is not None and target != mod:
                found.add(target)
    return found


GRAPH = {m: _imports(m, p, _modules()) for m, p in _modules().items()}


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


def test_no_import_cycles():
    assert _cycles(GRAPH) == []


def test_the_cycle_finder_finds_one():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


@pytest.mark.parametrize("layer", PACKAGES)
def test_layers_import_only_what_lies_below(layer):
    bad = {(m, t) for m, targets in GRAPH.items() if m.split(".")[0] == layer
           for t in targets if t.split(".")[0] not in ALLOWED[layer] | {layer}}
    assert bad == set()
