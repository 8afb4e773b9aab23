"""Numba compiler passes of the pysycl pipelines.

* :class:`LiftCaptures` -- turns the kernel's captured variables into kernel
  parameters. Numba freezes closure cells (``ir.FreeVar``) and globals
  (``ir.Global``) as compile-time constants; a kernel compiled that way would
  have to be recompiled for every buffer and every scalar value. This pass
  rewrites each load of a captured name into an ``ir.Arg`` read of a new
  trailing parameter, so the function is typed with the captures' *types*
  and the values travel as kernel arguments.
* :class:`RejectUnsupportedPython` -- reports Python that cannot run on a
  device (raise/assert, generators, lists, dicts, print, with) with its
  source line, before Numba's rewrites obscure it.
* :class:`ValidateTypedKernel` -- after type inference: writes through read
  accessors, recursion, and the optional device aspects the code needs.
"""

from __future__ import annotations

from typing import Any

from pysycl import errc
from pysycl_numba._numba_compat import (
    AnalysisPass,
    FunctionPass,
    ir,
    ir_utils,
    register_pass,
    types,
)
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.types import AccessorType, AtomicRefType, GlobalPointer


@register_pass(mutates_CFG=False, analysis_only=False)
class LiftCaptures(FunctionPass):
    """Rewrite loads of captured names into reads of trailing parameters.

    Reads ``state.pysycl_captures`` (a tuple of ``pysycl._kernel_abi.Capture``).
    Parameter ``len(params) + k`` is capture ``k``, so the typed signature is
    ``(*param_types, *capture_types)`` in capture order -- the order of the
    flat OpenCL arguments.
    """

    _name = "pysycl_lift_captures"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: Any) -> bool:
        """Rewrite ``state.func_ir`` in place."""
        captures = state.pysycl_captures
        func_ir = state.func_ir
        first = func_ir.arg_count
        index = {
            (c.name, ir.FreeVar if c.source == "freevar" else ir.Global): first + k
            for k, c in enumerate(captures)
        }
        changed = False
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if not isinstance(stmt, ir.Assign):
                    continue
                value = stmt.value
                if not isinstance(value, (ir.FreeVar, ir.Global)):
                    continue
                pos = index.get((value.name, type(value)))
                if pos is None:
                    continue
                stmt.value = ir.Arg(name=value.name, index=pos, loc=value.loc)
                changed = True
        # The definitions table still maps each rewritten variable to the
        # ir.FreeVar/ir.Global (with the value of the first compile): Numba's
        # dead-branch pruning reads it, and would fold `if captured_flag:` to
        # that value for every later launch. Rebuild it from the rewritten IR.
        func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)
        func_ir.arg_names = tuple(func_ir.arg_names) + tuple(c.name for c in captures)
        func_ir.arg_count = first + len(captures)
        # Numba's FixupArgs checks len(args) against this count.
        state.nargs = func_ir.arg_count
        return changed or bool(captures)


_UNSUPPORTED_EXPR = {
    "build_list": "lists cannot be created in kernels; use a tuple",
    "build_map": "dicts cannot be created in kernels",
    "build_set": "sets cannot be created in kernels",
    "list_comprehension": "list comprehensions cannot be used in kernels; use a loop",
}


@register_pass(mutates_CFG=False, analysis_only=True)
class RejectUnsupportedPython(AnalysisPass):
    """Report constructs a device cannot run, at their source line."""

    _name = "pysycl_reject_unsupported_python"

    def __init__(self) -> None:
        AnalysisPass.__init__(self)

    def run_pass(self, state: Any) -> bool:
        """Raise :class:`KernelSourceError` on the first unsupported statement."""
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                self._check(stmt)
        return False

    @staticmethod
    def _check(stmt: ir.Stmt) -> None:
        if isinstance(stmt, (ir.Raise, ir.StaticRaise, ir.DynamicRaise, ir.TryRaise)):
            raise KernelSourceError(
                "exceptions cannot be raised in a kernel (raise/assert); check "
                "conditions with if-statements and write an error flag to an "
                "accessor instead",
                stmt.loc,
            )
        if isinstance(stmt, ir.Print):
            raise KernelSourceError("print() is not supported in kernels", stmt.loc)
        if isinstance(stmt, ir.EnterWith):
            raise KernelSourceError("with-statements are not supported in kernels", stmt.loc)
        if isinstance(stmt, ir.Assign):
            value = stmt.value
            if isinstance(value, ir.Yield):
                raise KernelSourceError(
                    "generators (yield) are not supported in kernels", stmt.loc
                )
            if isinstance(value, (ir.Global, ir.FreeVar)) and value.value is print:
                raise KernelSourceError("print() is not supported in kernels", stmt.loc)
            if isinstance(value, ir.Expr):
                message = _UNSUPPORTED_EXPR.get(value.op)
                if message is not None:
                    raise KernelSourceError(message, stmt.loc)


def needed_aspects(ty: types.Type, out: set[str]) -> None:
    """Add to ``out`` the device aspects values of Numba type ``ty`` need."""
    stack = [ty]
    seen: set[int] = set()
    while stack:
        t = stack.pop()
        if id(t) in seen:
            continue
        seen.add(id(t))
        if isinstance(t, types.Float):
            if t.bitwidth == 64:
                out.add("fp64")
            elif t.bitwidth == 16:
                out.add("fp16")
        elif isinstance(t, types.Complex):
            if t.bitwidth == 128:
                out.add("fp64")
        elif isinstance(t, AtomicRefType):
            if t.dtype.bitwidth == 64:  # 64-bit atomics (a float64 one is a 64-bit CAS loop)
                out.add("atomic64")
            stack.append(t.dtype)
        elif isinstance(t, (AccessorType, GlobalPointer)):
            stack.append(t.dtype)
        elif isinstance(t, types.BaseTuple):
            stack.extend(t.types)
        elif isinstance(t, types.NumberClass):
            stack.append(t.instance_type)
        elif isinstance(t, (types.Optional, types.Omitted)):
            inner = getattr(t, "type", None)
            if isinstance(inner, types.Type):
                stack.append(inner)


@register_pass(mutates_CFG=False, analysis_only=True)
class ValidateTypedKernel(AnalysisPass):
    """Checks that need types; records required aspects on the library."""

    _name = "pysycl_validate_typed_kernel"

    def __init__(self) -> None:
        AnalysisPass.__init__(self)

    def run_pass(self, state: Any) -> bool:
        """Raise on read-only writes and recursion; collect aspects."""
        typemap = state.typemap
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                self._check_write(stmt, typemap)
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
                    if stmt.value.op == "call":
                        self._check_recursive_call(stmt, typemap)
        aspects: set[str] = set()
        for ty in typemap.values():
            if isinstance(ty, types.RecursiveCall):
                raise KernelSourceError(
                    "recursion is not supported on OpenCL devices; rewrite the "
                    "recursive function as a loop",
                    _first_loc(state.func_ir),
                )
            needed_aspects(ty, aspects)
        state.library.pysycl_aspects = getattr(state.library, "pysycl_aspects", set()) | aspects
        return False

    @staticmethod
    def _check_write(stmt: ir.Stmt, typemap: dict) -> None:
        target = None
        if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
            target = stmt.target
        elif (
            isinstance(stmt, ir.Assign)
            and isinstance(stmt.value, ir.Expr)
            and stmt.value.op == "getattr"
            and stmt.value.attr == "__setitem__"
        ):
            target = stmt.value.value
        if target is None:
            return
        ty = typemap.get(target.name)
        if isinstance(ty, AccessorType) and not ty.writable:
            raise KernelSourceError(
                f"cannot write through the read-only accessor '{_user_name(target)}'; "
                "request it with sycl.access_mode.write or read_write",
                stmt.loc,
            )

    @staticmethod
    def _check_recursive_call(stmt: ir.Assign, typemap: dict) -> None:
        fnty = typemap.get(stmt.value.func.name)
        if isinstance(fnty, types.RecursiveCall):
            raise KernelSourceError(
                "recursion is not supported on OpenCL devices; rewrite the "
                "recursive function as a loop",
                stmt.loc,
                errc.kernel,
            )


def _user_name(var: ir.Var) -> str:
    # Numba names temporaries "$..."; the user's name survives in unversioned form.
    name = var.name
    return name.split(".")[0] if not name.startswith("$") else name


def _first_loc(func_ir: ir.FunctionIR) -> Any:
    return func_ir.loc
