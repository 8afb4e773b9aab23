"""The architecture holds: imports point down the layers, no cycles, modules stay small.

The import graph is computed from the source with ``ast``, counting imports inside
functions too (a deferred import is still a dependency); only imports under
``if TYPE_CHECKING:`` are left out. See docs/design/architecture.md.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGES = ("pysycl", "pysycl_numba")

#: Layers, lowest first. A module may import its own layer and the layers below it.
#: The longest matching prefix decides a module's layer.
LAYERS: list[tuple[str, ...]] = [
    ("pysycl._core",),
    ("pysycl._backends.base", "pysycl.property",
     # the OpenCL driver wrappers: thin pyopencl calls, used by every layer that builds programs
     "pysycl._backends.opencl.discovery", "pysycl._backends.opencl.exec",
     "pysycl._backends.opencl.programs", "pysycl._backends.opencl.icd"),
    ("pysycl._objects",),
    ("pysycl._memory",),
    ("pysycl._kernels.kernel_api", "pysycl._kernels.group_algorithms",
     "pysycl._kernels.sycl_intrel"),
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


def _import_graph() -> dict[str, set[str]]:
    mods = _modules()
    graph: dict[str, set[str]] = {}
    for name, (path, is_pkg) in mods.items():
        tree = ast.parse(path.read_text(), str(path))
        skip = _type_checking_nodes(tree)
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
    allowed = ("pysycl._core.", "pysycl._kernels.kernel_api", "pysycl._kernels.group_algorithms")
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
