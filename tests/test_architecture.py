"""The architecture holds: imports point down the layers, no cycles, modules stay small.

The import graph is computed from the source with ``ast``, counting imports inside
functions too (a deferred import is still a dependency). ``GRAPH`` leaves out imports
under ``if TYPE_CHECKING:`` and must be free of cycles and upward imports;
``GRAPH_TC`` counts them too (an annotation naming a higher layer's type is a dependency
all the same) and is held to the same rules: no upward import, no cycle, no driver name
(``pyopencl``, ``cuda.*``) outside its backend's folder. The allow-lists of issue 23's
ratchets (``KNOWN_UPWARD``, ``KNOWN_CYCLES``, ``KNOWN_DRIVER_USERS``) are empty; the
ratchet machinery stays, so that an entry added there must also be removed once it no
longer offends. Plan: docs/design/launch.md (issue 23). See docs/design/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("pysycl", "pysycl_numba")

#: Layers, lowest first. A module may import its own layer and the layers below it.
#: The longest matching prefix decides a module's layer.
LAYERS: list[tuple[str, ...]] = [
    ("pysycl._core",),
    ("pysycl._core.backends", "pysycl.property"),
    ("pysycl._objects",),
    ("pysycl._memory",),
    ("pysycl._kernels.kernel_api", "pysycl._kernels.kernel_api_host",
     "pysycl._kernels.group_algorithms", "pysycl._kernels.sycl_intrel", "pysycl._kernels.matrix",
     "pysycl._kernels.matrix_ptx", "pysycl._kernels.matrix_flight"),
    ("pysycl_numba",),
    ("pysycl._kernels",),
    ("pysycl._bundles",),
    ("pysycl._commands",),
    ("pysycl._backends",),
    ("pysycl.ext", "pysycl.opencl", "pysycl.__main__"),
    ("pysycl",),
    # the testing support (fixtures, strategies, the pytest plugin): a client of the package
    ("pysycl.testing",),
]
#: Packages whose ``__init__`` only documents them (``import pysycl._x.y`` runs it).
_PACKAGE_INITS_MAY_NOT_IMPORT = ("pysycl._core", "pysycl._objects", "pysycl._memory",
                                 "pysycl._commands", "pysycl._kernels", "pysycl._bundles",
                                 "pysycl._backends", "pysycl._backends.opencl",
                                 "pysycl._backends.host")


def _modules() -> dict[str, tuple[Path, bool]]:
    mods = {}
    for pkg in PACKAGES:
        for f in (REPO / pkg).rglob("*.py"):
            parts = list(f.relative_to(REPO).with_suffix("").parts)
            is_pkg = parts[-1] == "__init__"
            if is_pkg:
                parts = parts[:-1]
            mods[".".join(parts)] = (f, is_pkg)
    return mods


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.If) and "TYPE_CHECKING" in ast.unparse(n.test):
            for c in n.body:
                out.update(id(x) for x in ast.walk(c))
    return out


def _import_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports; ``type_checking``: count ``if TYPE_CHECKING:`` too."""
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = set() if type_checking else _type_checking_nodes(tree)
        pkg = name if is_pkg else name.rpartition(".")[0]
        out: set[str] = set()
        for n in ast.walk(tree):
            if id(n) in skip:
                continue
            if isinstance(n, ast.Import):
                out.update(a.name for a in n.names)
            elif isinstance(n, ast.ImportFrom):
                if n.level:
                    base = pkg.split(".")[: len(pkg.split(".")) - n.level + 1]
                    full = ".".join(base + ([n.module] if n.module else []))
                else:
                    full = n.module or ""
                for a in n.names:
                    sub = f"{full}.{a.name}"
                    out.add(sub if sub in mods else full)
        graph[name] = {m for m in out if m in mods and m != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
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
    return out


def _layer(mod: str) -> int:
    """The layer of the longest prefix that matches ``mod``."""
    best = [(len(p), i) for i, prefixes in enumerate(LAYERS) for p in prefixes
            if mod == p or mod.startswith(p + ".")]
    if not best:
        raise AssertionError(f"{mod} is in no layer of tests/test_architecture.py")
    return max(best)[1]


GRAPH = _import_graph()
GRAPH_TC = _import_graph(type_checking=True)


def test_the_graph_is_computed() -> None:
    # A broken graph (no edges found) would make every test below pass vacuously.
    assert len(GRAPH) > 60
    assert "pysycl._core.exceptions" in GRAPH["pysycl._commands.queue"]


def test_no_import_cycles() -> None:
    cycles = _cycles(GRAPH)
    assert cycles == [], "import cycles (counting imports inside functions):\n" + "\n".join(
        " -> ".join(c) for c in cycles)


def test_cycle_detection_finds_a_planted_cycle() -> None:
    g = {k: set(v) for k, v in GRAPH.items()}
    g["pysycl._core.exceptions"].add("pysycl._commands.queue")
    assert any("pysycl._core.exceptions" in c for c in _cycles(g))


def test_imports_point_down_the_layers() -> None:
    upward = [f"{a} -> {b}" for a, deps in sorted(GRAPH.items()) for b in sorted(deps)
              if _layer(b) > _layer(a)]
    assert upward == [], "imports against the layering:\n" + "\n".join(upward)


def test_the_compiler_never_imports_the_pysycl_package_root() -> None:
    bad = sorted(m for m, deps in GRAPH.items() if m.startswith("pysycl_numba") and "pysycl" in deps)
    assert bad == []
    allowed = ("pysycl._core.", "pysycl._kernels.kernel_api", "pysycl._kernels.group_algorithms",
               "pysycl._kernels.matrix")
    reach = sorted(f"{m} -> {d}" for m, deps in GRAPH.items() if m.startswith("pysycl_numba")
                   for d in deps if d.startswith("pysycl.") and not d.startswith(allowed))
    assert reach == []


def test_layer_packages_have_empty_inits() -> None:
    mods = _modules()
    for pkg in _PACKAGE_INITS_MAY_NOT_IMPORT:
        assert GRAPH[pkg] == set(), f"{mods[pkg][0]} imports {GRAPH[pkg]}"


def test_only_the_compat_module_imports_numba_internals() -> None:
    offenders = []
    for path in (REPO / "pysycl_numba").rglob("*.py"):
        if path.name == "_numba_compat.py":
            continue
        for n in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in n.names] if isinstance(n, ast.Import) else
                     [n.module or ""] if isinstance(n, ast.ImportFrom) and not n.level else [])
            offenders += [f"{path.relative_to(REPO)}: {x}" for x in names
                          if x.startswith(("numba.core", "numba.np", "numba.cpython", "numba.misc"))]
    assert offenders == []


MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 60
#: A function longer than MAX_FUNCTION_LINES says why in a comment on its ``def`` line
#: or right above it, starting with this.
LONG_MARK = "# long:"


@pytest.mark.parametrize("pkg", PACKAGES)
def test_modules_and_functions_stay_small(pkg: str) -> None:
    big, long_fns = [], []
    for path in sorted((REPO / pkg).rglob("*.py")):
        lines = path.read_text().splitlines()
        rel = path.relative_to(REPO)
        if len(lines) > MAX_MODULE_LINES:
            big.append(f"{rel}: {len(lines)} lines")
        for n in ast.walk(ast.parse("\n".join(lines))):
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                first = min([n.lineno, *(d.lineno for d in n.decorator_list)])
                size = (n.end_lineno or n.lineno) - first + 1
                marks = lines[max(first - 2, 0): n.lineno]
                if size > MAX_FUNCTION_LINES and not any(LONG_MARK in m for m in marks):
                    long_fns.append(f"{rel}:{n.lineno} {n.name}: {size} lines")
    assert big == [], "modules over the limit:\n" + "\n".join(big)
    assert long_fns == [], (f"functions over {MAX_FUNCTION_LINES} lines without a "
                            f"'{LONG_MARK} reason' comment:\n" + "\n".join(long_fns))


def test_the_architecture_document_lists_every_module() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("_arch_modules",
                                                  REPO / "tools" / "architecture_modules.py")
    assert spec is not None and spec.loader is not None
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    doc = gen.DOC.read_text()
    assert gen.render(doc) == doc, ("docs/design/architecture.md's module list is out of "
                                    "date: run python tools/architecture_modules.py")
    for f in (REPO / "pysycl").rglob("*.py"):
        assert f"`{f.relative_to(REPO)}`" in doc


# ------------------------------------------------------------- ratchets (issue 23)
# Today's offenders, to be removed by issue 23's steps (docs/design/launch.md §1.1, §1.5,
# §3). Each list may only shrink: a new offender fails, and an entry that no longer
# offends fails too, asking to be removed, so the list always says where the work is.

#: Imports against the layering that only ``if TYPE_CHECKING:`` makes (annotations).
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()

#: Import cycles of ``GRAPH_TC`` (strongly connected components). A cycle may lose
#: modules (then write the smaller one here), never gain any.
KNOWN_CYCLES: tuple[frozenset[str], ...] = ()

#: A backend's driver: the import names that are its driver (any depth: ``pyopencl``,
#: ``cuda.bindings``). Only the backend's own folder ``pysycl/_backends/<name>/`` may
#: name them (``import``, ``TYPE_CHECKING`` included, or an attribute of a name bound
#: to them: ``cl.Buffer``) or import its modules -- except the package root, which
#: registers backends, and the public interop module ``pysycl.<name>``.
#: (The rule of /work/shared/tools/backend_boundary.py, plus the folder's modules.)
DRIVERS: dict[str, tuple[str, ...]] = {"opencl": ("pyopencl",), "cuda": ("cuda",)}

#: Modules outside a backend's folder that name its driver or import its modules
#: (issue 23 moves them into pysycl/_backends/opencl/ or behind the Backend protocol).
KNOWN_DRIVER_USERS: frozenset[tuple[str, str]] = frozenset()


def _ratchet(what: str, found: set[Any], known: set[Any] | frozenset[Any]) -> list[str]:
    """Failure lines: offenders not in ``known``, and entries of ``known`` now gone."""
    new = [f"new {what}: {x}" for x in sorted(found - known, key=repr)]
    gone = [f"{what} no longer found, remove it from the list: {x}"
            for x in sorted(known - found, key=repr)]
    return new + gone


def _upward(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    return {(a, b) for a, deps in graph.items() for b in deps if _layer(b) > _layer(a)}


def _cycle_problems(graph: dict[str, set[str]],
                    known: tuple[frozenset[str], ...]) -> list[str]:
    """A cycle not inside one known cycle grew (or is new); a known cycle that is not
    exactly one of today's shrank or went (the list must follow)."""
    found = [frozenset(c) for c in _cycles(graph)]
    out = []
    for c in found:
        if not any(c <= k for k in known):
            grown = ", ".join(sorted(c - max(known, key=lambda k: len(k & c), default=frozenset())))
            out.append(f"import cycle of {len(c)} modules grew or is new (counting "
                       f"TYPE_CHECKING imports); modules not in a known cycle: {grown}")
    for k in known:
        if not any(k <= c for c in found):  # (a known cycle inside a grown one: said above)
            left = max(found, key=lambda c: len(k & c), default=frozenset())
            out.append(f"known cycle of {len(k)} modules is now {len(left & k)} "
                       f"(gone: {', '.join(sorted(k - left))}): shrink KNOWN_CYCLES")
    return out


def _driver_uses(tree: ast.AST, prefixes: tuple[str, ...]) -> int:
    """Imports of the driver (``prefixes``) and attributes of names bound to it."""
    def driver(name: str) -> bool:
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    bound, hits = set(), 0
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if driver(a.name):
                    hits += 1
                    bound.add((a.asname or a.name).split(".")[0])
        elif isinstance(n, ast.ImportFrom) and not n.level and driver(n.module or ""):
            hits += 1
            bound.update(a.asname or a.name for a in n.names)
    return hits + sum(1 for n in ast.walk(tree) if isinstance(n, ast.Attribute)
                      and isinstance(n.value, ast.Name) and n.value.id in bound)


def _driver_users(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    out = set()
    for name, (path, _) in _modules().items():
        tree = ast.parse(path.read_text(), str(path))
        for drv, prefixes in DRIVERS.items():
            home = f"pysycl._backends.{drv}"
            if name == home or name.startswith(home + ".") or name in ("pysycl", f"pysycl.{drv}"):
                continue
            if _driver_uses(tree, prefixes) or any(
                    d == home or d.startswith(home + ".") for d in graph[name]):
                out.add((drv, name))
    return out


def test_the_type_checking_graph_counts_annotation_imports() -> None:
    # the event annotates with the queue that made it (a protocol), importing it for
    # annotations only
    assert "pysycl._commands.refs" not in GRAPH["pysycl._commands.event"]
    assert "pysycl._commands.refs" in GRAPH_TC["pysycl._commands.event"]
    assert all(GRAPH[m] <= GRAPH_TC[m] for m in GRAPH)


def test_no_new_upward_imports_counting_type_checking() -> None:
    problems = _ratchet("upward import (counting TYPE_CHECKING)", _upward(GRAPH_TC),
                        KNOWN_UPWARD)
    assert problems == [], "\n".join(problems)


def test_no_new_import_cycles_counting_type_checking() -> None:
    problems = _cycle_problems(GRAPH_TC, KNOWN_CYCLES)
    assert problems == [], "\n".join(problems)


def test_driver_names_stay_in_their_backend() -> None:
    problems = _ratchet("module naming a driver outside its backend folder",
                        _driver_users(GRAPH_TC), KNOWN_DRIVER_USERS)
    assert problems == [], "\n".join(problems)


def test_the_ratchets_fail_on_planted_offenders() -> None:
    g = {k: set(v) for k, v in GRAPH_TC.items()}
    # an upward pair, which also closes a cycle through modules outside every known one
    g["pysycl._core.abi"].add("pysycl._commands.queue")
    assert _ratchet("up", _upward(g), KNOWN_UPWARD) == [
        "new up: ('pysycl._core.abi', 'pysycl._commands.queue')"]
    assert any("grew" in p and "pysycl._core.abi" in p for p in _cycle_problems(g, KNOWN_CYCLES))
    # an entry that went asks to shrink the list
    assert _ratchet("up", set(), {("a", "b")}) == [
        "up no longer found, remove it from the list: ('a', 'b')"]
    gone = frozenset({"pysycl._core.abi", "pysycl._commands.queue"})  # a known cycle now gone
    assert any("shrink" in p for p in _cycle_problems(GRAPH_TC, (gone,)))
    # a planted driver user: the import of pyopencl, and a backend module imported
    g["pysycl._objects.range"].add("pysycl._backends.opencl.exec")
    assert ("opencl", "pysycl._objects.range") in _driver_users(g)
    tree = ast.parse("import pyopencl as cl\nfrom cuda.bindings import driver\n"
                     "x = cl.Buffer\ny = driver.cuInit\n")
    assert _driver_uses(tree, DRIVERS["opencl"]) == 2
    assert _driver_uses(tree, DRIVERS["cuda"]) == 2
    assert _driver_uses(ast.parse("from numba import cuda\nimport cudaq"), DRIVERS["cuda"]) == 0
