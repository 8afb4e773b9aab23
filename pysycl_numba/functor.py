"""Function objects as kernels: the ``self`` parameter of a functor's body becomes its captures.

The runtime hands the compiler a copy of the class's ``__call__`` marked with
``pysycl._core.abi.FUNCTOR_ATTR`` (``pysycl._kernels.functor``); its first
parameter is the object, and each ``self.x`` it reads is the capture named
``"self.x"`` (``source="attr"``). :class:`LiftSelf` runs right after bytecode
translation, before :class:`~pysycl_numba.passes.LiftCaptures`: it drops the
``self`` parameter and rewrites every ``getattr(self, "x")`` into a read of that
capture's trailing parameter, so the attributes are typed and passed exactly
like closure cells. Any other use of ``self`` (passing it on, calling a
method) is a compile error at its line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pysycl_numba._numba_compat import FunctionPass, ir, register_pass
from pysycl_numba.errors import KernelSourceError

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import StateDict
    from pysycl_numba.lift import LiftSpec


def _other_use(stmt: ir.Stmt, selfname: str) -> KernelSourceError:
    return KernelSourceError(
        f"a function object's kernel can use {selfname} only to read attributes "
        f"({selfname}.x: its captures); passing {selfname} on, storing it or calling its "
        "methods is not supported -- read the attributes you need and pass them as values, "
        "and make methods plain functions", stmt.loc)


@register_pass(mutates_CFG=False, analysis_only=False)
class LiftSelf(FunctionPass):
    """A functor body's ``self.x`` reads become reads of its captures' parameters."""

    _name = "pysycl_lift_self"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Rewrite ``state.func_ir`` in place (only for a function object's body)."""
        if not getattr(state, "pysycl_functor", False):
            return False
        spec: LiftSpec = state.pysycl_lift
        func_ir = state.func_ir
        selfname = func_ir.arg_names[0]
        first = func_ir.arg_count - 1  # the parameters once self is gone
        names = tuple(func_ir.arg_names[1:]) + spec.names
        self_vars: set[str] = set()
        for label in sorted(func_ir.blocks):
            block = func_ir.blocks[label]
            body: list[ir.Stmt] = []
            for stmt in block.body:
                if isinstance(stmt, ir.Del) and stmt.value in self_vars:
                    continue
                if isinstance(stmt, ir.Assign):
                    value = stmt.value
                    if isinstance(value, ir.Arg):
                        if value.index == 0:
                            self_vars.add(stmt.target.name)
                            continue
                        stmt.value = ir.Arg(name=value.name, index=value.index - 1,
                                            loc=value.loc)
                    elif isinstance(value, ir.Var) and value.name in self_vars:
                        self_vars.add(stmt.target.name)  # an alias of self
                        continue
                    elif (isinstance(value, ir.Expr) and value.op == "getattr"
                          and value.value.name in self_vars):
                        pos = spec.own.get((f"self.{value.attr}", "attr"))
                        if pos is None:
                            raise _other_use(stmt, selfname)
                        stmt.value = ir.Arg(name=names[first + pos], index=first + pos,
                                            loc=value.loc)
                if any(v.name in self_vars for v in stmt.list_vars()):
                    raise _other_use(stmt, selfname)
                body.append(stmt)
            block.body = body
        func_ir.arg_names = tuple(func_ir.arg_names[1:])
        func_ir.arg_count = first
        state.nargs = first
        return True
