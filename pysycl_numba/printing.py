"""``print(...)`` in kernels: each call becomes one record write into the launch's buffer.

The runtime lifts the builtin ``print`` a kernel (or helper) reads into a
``PrintType`` capture (``pysycl._kernels.kprint``); after
:class:`~pysycl_numba.passes.LiftCaptures` it is a parameter. :class:`RewritePrint`
rewrites each call of it, ``print(a, "x", b, sep=..., end=...)``, into
``print_record(buffer, PrintLayout(pieces), (a, b))``: the string literals, ``sep``
and ``end`` (literals only) and the pieces of an f-string (``f"x = {x}"``, fields
without format specs) become the layout, a compile-time constant; the numbers are
the values. ``overloads/printing.py`` types and lowers ``print_record`` (layout
in ``pysycl._core.abi.PrintType``).
"""

from __future__ import annotations

import operator
from typing import TYPE_CHECKING, Any

from pysycl_numba._numba_compat import FunctionPass, ir, register_pass
from pysycl_numba.errors import KernelSourceError

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import StateDict
    from pysycl_numba.lift import LiftSpec


def print_record(buffer: Any, layout: Any, values: Any) -> None:
    """One ``print`` call's record (device only: typed and lowered in overloads/printing.py)."""
    raise RuntimeError("print_record runs only inside compiled kernels")


class PrintLayout:
    """A ``print`` call's layout, a compile-time constant of type ``PrintLayoutType``."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: tuple[str | int | tuple[str, int], ...]) -> None:
        self.pieces = pieces


_KWS = ("sep", "end")


@register_pass(mutates_CFG=False, analysis_only=False)
class RewritePrint(FunctionPass):
    """Rewrite calls of the lifted ``print`` into ``print_record`` calls."""

    _name = "pysycl_rewrite_print"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Rewrite ``state.func_ir`` in place (functions that call ``print`` only)."""
        spec: LiftSpec | None = getattr(state, "pysycl_lift", None)
        pos = spec.own.get(("print", "global")) if spec is not None else None
        if pos is None:
            return False
        func_ir = state.func_ir
        index = func_ir.arg_count - len(spec.names) + pos  # type: ignore[union-attr]
        defs: dict[str, Any] = {}
        printers: set[str] = set()
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    defs[stmt.target.name] = stmt.value
                    if isinstance(stmt.value, ir.Arg) and stmt.value.index == index:
                        printers.add(stmt.target.name)
        aliases = _aliases(func_ir, printers)  # print carried across blocks (print(a if c else b))
        printers |= aliases
        consumed: set[str] = set()
        for block in func_ir.blocks.values():
            body: list[ir.Stmt] = []
            for stmt in block.body:
                value = stmt.value if isinstance(stmt, ir.Assign) else None
                if (isinstance(value, ir.Expr) and value.op == "call"
                        and value.func.name in printers):
                    body.extend(_rewrite(stmt, value, defs, consumed, block.scope))
                    continue
                if isinstance(stmt, ir.Assign) and stmt.target.name in aliases:
                    body.append(stmt)  # a copy of print, the buffer its calls write to
                    continue
                if not (isinstance(stmt, ir.Assign) and stmt.target.name in printers) and any(
                        v.name in printers for v in stmt.list_vars()):
                    raise KernelSourceError("print can only be called in a kernel, not used as "
                                            "a value", stmt.loc)
                body.append(stmt)
            block.body = body
        drop_dead(func_ir, consumed)
        return True


def _aliases(func_ir: ir.FunctionIR, printers: set[str]) -> set[str]:
    """Variables that are copies of ``print`` (Numba copies the callee into the block of a
    call whose arguments branch, as in ``print("a" if c else "b")``)."""
    found: set[str] = set()
    changed = True
    while changed:
        changed = False
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Var)
                        and stmt.value.name in printers | found
                        and stmt.target.name not in found | printers):
                    found.add(stmt.target.name)
                    changed = True
    return found


def _rewrite(stmt: ir.Assign, call: ir.Expr, defs: dict[str, Any], consumed: set[str],
             scope: ir.Scope) -> list[ir.Stmt]:
    """The statements of one ``print(...)`` call's record."""
    loc = stmt.loc
    if call.vararg is not None or getattr(call, "varkwarg", None) is not None:
        raise KernelSourceError("print(*args) is not supported in kernels; pass the values "
                                "one by one", loc)
    text = {"sep": " ", "end": "\n"}
    for name, var in call.kws:
        if name not in _KWS:
            raise KernelSourceError(f"print(..., {name}=...) is not supported in kernels: "
                                    "output goes to sys.stdout (sep= and end= work)", loc)
        d = defs.get(var.name)
        if not (isinstance(d, ir.Const) and isinstance(d.value, str)):
            raise KernelSourceError(f"print(..., {name}=...) in a kernel takes a string "
                                    "literal", loc)
        text[name] = d.value
        consumed.add(var.name)
    pieces: list[str | int | tuple[str, int]] = []
    values: list[ir.Var] = []
    for k, arg in enumerate(call.args):
        if k:
            pieces.append(text["sep"])
        fstring = "build_string" in arg.name or "format_value" in arg.name
        for p in pieces_of(arg, defs, consumed):
            if isinstance(p, str):
                pieces.append(p)
            else:  # an f-string's field formats as f"{x}" does (as in stream layouts)
                pieces.append(("f", len(values)) if fstring else len(values))
                values.append(p)
    pieces.append(text["end"])
    merged: list[str | int | tuple[str, int]] = []
    for p in pieces:  # adjacent text is one piece
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        elif p != "":
            merged.append(p)
    fn = scope.redefine("$pysycl_print_fn", loc)
    lay = scope.redefine("$pysycl_print_layout", loc)
    tup = scope.redefine("$pysycl_print_values", loc)
    return [
        ir.Assign(ir.Global("print_record", print_record, loc), fn, loc),
        ir.Assign(ir.Global("print_layout", PrintLayout(tuple(merged)), loc), lay, loc),
        ir.Assign(ir.Expr.build_tuple(values, loc), tup, loc),
        ir.Assign(ir.Expr.call(fn, (call.func, lay, tup), (), loc), stmt.target, loc),
    ]


def pieces_of(var: ir.Var, defs: dict[str, Any], consumed: set[str]) -> list[str | ir.Var]:
    """A print argument as text and values: a literal, an f-string's parts, or a value."""
    chain = [var.name]
    d = defs.get(var.name)
    while isinstance(d, ir.Var) and d.name not in chain:  # a copy into another block
        chain.append(d.name)
        d = defs.get(d.name)
    if isinstance(d, ir.Const) and isinstance(d.value, str):
        consumed.update(chain)
        return [d.value]
    if (isinstance(d, ir.Expr) and d.op == "binop" and d.fn is operator.add
            and "build_string" in chain[-1]):  # an f-string: its parts, concatenated
        consumed.update(chain)
        return pieces_of(d.lhs, defs, consumed) + pieces_of(d.rhs, defs, consumed)
    if (isinstance(d, ir.Expr) and d.op == "call" and "format_value" in var.name
            and len(d.args) == 1 and isinstance(defs.get(d.func.name), ir.Global)
            and defs[d.func.name].value is str):  # f"{x}": the value itself
        consumed.update((var.name, d.func.name))
        return [d.args[0]]
    return [var]


def drop_dead(func_ir: ir.FunctionIR, consumed: set[str]) -> None:
    """Remove the definitions of the literals and f-string parts only print calls used."""
    used: set[str] = set()
    for block in func_ir.blocks.values():
        for stmt in block.body:
            own = stmt.target.name if isinstance(stmt, ir.Assign) else None
            if own in consumed or isinstance(stmt, ir.Del):
                continue
            used.update(v.name for v in stmt.list_vars() if v.name != own)
    dead = consumed - used
    for block in func_ir.blocks.values():
        block.body = [s for s in block.body
                      if not ((isinstance(s, ir.Assign) and s.target.name in dead)
                              or (isinstance(s, ir.Del) and s.value in dead))]
