"""The compiler's own layers (``pysycl_numba``'s docstring): its imports point down them.

Counted on ``tests/test_architecture.py``'s graph with ``if TYPE_CHECKING:`` imports and
imports inside functions (``GRAPH_TC``): an annotation naming a higher module's type is a
dependency all the same. Together with that file's cycle check this keeps the compiler
free of import cycles (issue 23).
"""

from __future__ import annotations

from tests.test_architecture import GRAPH_TC

#: Layers of ``pysycl_numba``, lowest first; a module imports its own layer and those
#: below. The longest matching prefix decides (the package ``pysycl_numba`` is the top).
COMPILER_LAYERS: list[tuple[str, ...]] = [
    # Numba's seam, compile errors, the kernel language's Numba types, the bounds
    # check's device side, a function's LiftSpec, and the OpenCL built-in declarations
    ("pysycl_numba._numba_compat", "pysycl_numba.errors", "pysycl_numba.explain_calls",
     "pysycl_numba.explain_types",
     "pysycl_numba.types", "pysycl_numba.type_models", "pysycl_numba.vec_types",
     "pysycl_numba.stream_types",
     "pysycl_numba.reducer_types", "pysycl_numba.hier_types",
     "pysycl_numba.bounds", "pysycl_numba.lift", "pysycl_numba.targets.spirv.ocl"),
    # the features with a record the runtime reads: assert, print, stream (rewrite + layout)
    ("pysycl_numba.asserts", "pysycl_numba.printing", "pysycl_numba.streaming"),
    # code generation: LLVM IR to SPIR-V and PTX
    ("pysycl_numba.targets",),
    # typing and lowering of the kernel API, one module per concept
    ("pysycl_numba.overloads",),
    # the IR passes of the pipelines
    ("pysycl_numba.nested", "pysycl_numba.functor", "pysycl_numba.reject",
     "pysycl_numba.passes", "pysycl_numba.strings", "pysycl_numba.weak_literals",
     "pysycl_numba.hierarchical"),
    # the typing and target contexts: they register the overloads by importing them
    ("pysycl_numba.target",),
    ("pysycl_numba.pipelines",),
    # device functions: compiled with the pipelines, lowered with the target context
    ("pysycl_numba.dispatcher",),
    # the driver: compile_kernel, its entry-point wrapper and reduction epilogue
    ("pysycl_numba",),
]


def _layer(mod: str) -> int:
    best = [(len(p), i) for i, prefixes in enumerate(COMPILER_LAYERS) for p in prefixes
            if mod == p or mod.startswith(p + ".")]
    return max(best)[1]


def _upward(graph: dict[str, set[str]]) -> list[str]:
    return [f"{a} -> {b}" for a, deps in sorted(graph.items()) if a.startswith("pysycl_numba")
            for b in sorted(deps) if b.startswith("pysycl_numba") and _layer(b) > _layer(a)]


def test_the_compiler_imports_point_down_its_layers() -> None:
    upward = _upward(GRAPH_TC)
    assert upward == [], ("imports against the compiler's layering (counting TYPE_CHECKING "
                          "and function-local imports):\n" + "\n".join(upward))


def test_every_layer_names_a_module() -> None:
    for prefixes in COMPILER_LAYERS:
        for p in prefixes:
            assert any(m == p or m.startswith(p + ".") for m in GRAPH_TC), p


def test_a_planted_upward_import_fails() -> None:
    g = {k: set(v) for k, v in GRAPH_TC.items()}
    g["pysycl_numba.passes"].add("pysycl_numba.dispatcher")  # the annotation this issue removed
    assert _upward(g) == ["pysycl_numba.passes -> pysycl_numba.dispatcher"]
