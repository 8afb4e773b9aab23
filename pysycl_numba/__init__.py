"""pysycl_numba: compiles Python kernels to SPIR-V with Numba and llvmlite.

The runtime (``pysycl``) imports this package lazily, the first time a Python
kernel must be compiled, and calls :func:`compile_kernel`; the contract
between the two is ``pysycl._core.abi``.

Layers, lowest first; a module imports its own layer and those below, never above --
``if TYPE_CHECKING:`` and function-local imports included, so the package has no import
cycle (``tests/test_compiler_layers.py`` holds the list):

1. foundations: ``_numba_compat`` (the only module touching Numba internals),
   ``errors``, ``explain_calls``, ``types`` and ``type_models`` (their data models),
   ``vec_types``, ``stream_types``,
   ``reducer_types``, ``bounds``, ``lift`` (a function's ``LiftSpec``) and
   ``targets.spirv.ocl`` (built-in declarations);
2. the features with a record the runtime reads: ``asserts``, ``printing``, ``streaming``;
3. code generation: ``targets/`` (SPIR-V, PTX);
4. ``overloads/``: typing and lowering of the kernel API, one module per concept;
5. the IR passes: ``nested``, ``functor``, ``reject``, ``passes``, ``weak_literals``;
6. ``target``: the typing and target contexts; it registers the overloads by importing
   them (nothing below names it);
7. ``pipelines``, then 8. ``dispatcher`` (device functions, compiled with the pipelines);
9. the driver: ``compiler`` (:func:`compile_kernel`), ``looped`` (nd_range reductions that
   loop), ``wrapper``, ``epilogue``, this package.
"""

from __future__ import annotations

from pysycl_numba.targets.spirv import emit_worker as _emit_worker

# Start the SPIR-V emission worker now: its start-up overlaps Numba's import
# and the typing/lowering of the first kernel.
_emit_worker.client.start()

from pysycl_numba.compiler import compile_kernel  # noqa: E402

__all__ = ["compile_kernel"]
