"""The package's layers: every import of an hmbuild module (at the top or inside a function) points
to a lower layer or to its own package, and no module imports one that imports it back."""
import ast
from pathlib import Path

from conftest import REPO

PKG = REPO / "hmbuild"
# Top to bottom. A module may import modules of its own package and of the layers below it.
LAYERS = ("cli", "scaffold", "model", "build", "targets", "config", "core")
CORE = {"hmbuild", "hmbuild.__main__", "hmbuild.errors", "hmbuild.resources", "hmbuild.templating",
        "hmbuild.archive"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def layer(module: str) -> str:
    if module in CORE:
        return "core"
    return module.split(".")[1]


def imports(path: Path, known: set[str]) -> set[str]:
    """The hmbuild modules `path` imports; `from hmbuild.pkg import mod` counts as hmbuild.pkg.mod."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("hmbuild"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("hmbuild"):
            for a in node.names:
                sub = f"{node.module}.{a.name}"
                found.add(sub if sub in known else node.module)
    return found - {module_name(path)}


def graph() -> dict[str, set[str]]:
    paths = sorted(PKG.rglob("*.py"))
    known = {module_name(p) for p in paths}
    return {module_name(p): imports(p, known) for p in paths}


def test_every_import_names_a_module_of_the_package():
    g = graph()
    missing = {(m, i) for m, deps in g.items() for i in deps if i not in g}
    assert not missing, missing


def test_no_module_imports_one_that_imports_it_back():
    g = graph()
    cycles = []

    def walk(node, stack, on_stack, done):
        on_stack.add(node)
        stack.append(node)
        for dep in sorted(g.get(node, ())):
            if dep in on_stack:
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in done:
                walk(dep, stack, on_stack, done)
        stack.pop()
        on_stack.discard(node)
        done.add(node)

    done = set()
    for m in sorted(g):
        if m not in done:
            walk(m, [], set(), done)
    assert not cycles, "import circles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_imports_point_down_the_layers():
    g = graph()
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = [f"{m} ({layer(m)}) imports {d} ({layer(d)})" for m, deps in sorted(g.items()) for d in sorted(deps)
              if m != "hmbuild.__main__" and d in g and rank[layer(d)] < rank[layer(m)]]
    assert not upward, "\n".join(upward)


def test_the_walk_sees_the_layers():
    """The checks above are only as good as the walk: it finds the packages and their imports."""
    g = graph()
    assert {layer(m) for m in g} == set(LAYERS)
    assert "hmbuild.build.builder" in g["hmbuild.build.runners"]
    assert "hmbuild.cli" in g["hmbuild.__main__"]
