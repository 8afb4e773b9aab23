"""``out << a << b`` on a ``sycl.stream`` in kernels: each statement becomes one record write.

A stream reaches a function as a parameter typed
:class:`~pysycl_numba.stream_types.StreamBufferType` (the kernel's capture after
:class:`~pysycl_numba.passes.LiftCaptures`, or a helper's argument).
:class:`RewriteStream` finds every ``<<`` whose left operand holds a stream and
rewrites each chain -- one Python statement, ``out << "x = " << x << sycl.endl`` --
into ``stream_record(out, StreamLayout(pieces, continues), (values...))``: string
literals, f-string text and manipulators (``sycl.endl``, ``sycl.hex``, ...) are
the layout, a compile-time constant; numbers, ids, items, vectors and the
arguments of ``sycl.setprecision``/``sycl.setw`` are the values. It must run on
the untyped IR: Numba's dead-code elimination drops unused ``<<`` results, but
never calls. ``overloads/stream.py`` types and lowers ``stream_record``.

A chain split by a conditional expression (``out << (a if c else b)``) becomes
two records, the second marked as continuing the first (its format state). The
value of a ``<<`` expression (the stream, in C++) cannot be kept or passed on.
"""

from __future__ import annotations

import operator
import types as pytypes
from typing import TYPE_CHECKING, Any

from pysycl._core.streamfmt import (
    precision_manipulator,
    setprecision,
    setw,
    stream_manipulator,
    width_manipulator,
)
from pysycl_numba._numba_compat import FunctionPass, ir, ir_utils, register_pass
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.printing import drop_dead, pieces_of
from pysycl_numba.stream_types import Piece, StreamBufferType

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import StateDict


def stream_record(stream: Any, layout: Any, values: Any) -> Any:
    """One ``<<`` statement's record (device only: typed and lowered in overloads/stream.py)."""
    raise RuntimeError("stream_record runs only inside compiled kernels")


class StreamLayout:
    """A statement's layout, a compile-time constant of type ``StreamLayoutType``."""

    __slots__ = ("continues", "pieces")

    def __init__(self, pieces: tuple[Piece, ...], continues: bool) -> None:
        self.pieces = pieces
        self.continues = continues


_KEPT = ("the value of a sycl.stream `<<` expression (the stream itself) cannot be kept or "
         "passed on in a kernel; write each output as a statement of its own: out << a << b")


class _Chain:
    """One statement being collected: its stream, pieces and values, its last link."""

    __slots__ = ("continues", "index", "loc", "pieces", "root", "target", "values")

    def __init__(self, root: ir.Var, continues: bool, loc: ir.Loc) -> None:
        self.root = root
        self.continues = continues
        self.loc = loc
        self.pieces: list[Piece] = []
        self.values: list[ir.Var] = []
        self.target: ir.Var = root
        self.index = -1

    def value(self, var: ir.Var) -> int:
        self.values.append(var)
        return len(self.values) - 1


@register_pass(mutates_CFG=False, analysis_only=False)
class RewriteStream(FunctionPass):
    """Rewrite ``<<`` chains on streams into ``stream_record`` calls."""

    _name = "pysycl_rewrite_stream"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Rewrite ``state.func_ir`` in place (functions that receive a stream only)."""
        func_ir = state.func_ir
        origin = _stream_vars(func_ir, tuple(state.args))
        if not origin:
            return False
        defs: dict[str, Any] = {}
        count: dict[str, int] = {}
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    defs[stmt.target.name] = stmt.value
                    count[stmt.target.name] = count.get(stmt.target.name, 0) + 1
        single = {n: v for n, v in defs.items() if count[n] == 1}  # literals are defined once
        _check_uses(func_ir, origin)
        consumed: set[str] = set()
        for block in func_ir.blocks.values():
            block.body = _rewrite_block(block, origin, single, consumed)
        drop_dead(func_ir, consumed)
        func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)
        return True


def _is_link(stmt: ir.Stmt, origin: dict[str, str]) -> bool:
    """``t = s << x`` with ``s`` holding a stream."""
    return (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
            and stmt.value.op == "binop" and stmt.value.fn is operator.lshift
            and stmt.value.lhs.name in origin)


def _stream_vars(func_ir: ir.FunctionIR, args: tuple[Any, ...]) -> dict[str, str]:
    """Variables holding a stream: ``"root"`` (a parameter, or a copy of one) or ``"chain"``
    (a ``<<`` result, or a copy of one)."""
    origin: dict[str, str] = {}
    stmts = [s for b in func_ir.blocks.values() for s in b.body if isinstance(s, ir.Assign)]
    changed = True
    while changed:
        changed = False
        for s in stmts:
            v, name = s.value, s.target.name
            if isinstance(v, ir.Arg) and v.index < len(args) and isinstance(args[v.index],
                                                                             StreamBufferType):
                kind = "root"
            elif isinstance(v, ir.Var) and v.name in origin:
                kind = origin[v.name]
            elif _is_link(s, origin):
                kind = "chain"
            else:
                if (isinstance(v, ir.Expr) and v.op == "inplace_binop"
                        and v.lhs.name in origin):
                    raise KernelSourceError("`out <<= x` is not a stream statement in kernels; "
                                            "write out << x", s.loc)
                continue
            if origin.get(name) != kind and origin.get(name) != "chain":
                origin[name] = kind
                changed = True
    return origin


def _check_uses(func_ir: ir.FunctionIR, origin: dict[str, str]) -> None:
    """A ``<<`` result may only continue its statement (``<<``, or a copy across blocks)."""
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Del):
                continue
            link_lhs = stmt.value.lhs.name if _is_link(stmt, origin) else None
            copy = isinstance(stmt, ir.Assign) and (  # across blocks, or a lambda's value:
                (isinstance(stmt.value, ir.Var) and stmt.target.name.startswith("$"))
                or (isinstance(stmt.value, ir.Expr)  # lambda: (out << a, out << b)
                    and stmt.value.op in ("cast", "build_tuple")))
            for var in stmt.list_vars():
                if origin.get(var.name) != "chain" or (
                        var.name.startswith("$") and (var.name == link_lhs or copy)):
                    continue  # Python's own temporaries continue a statement
                if isinstance(stmt, ir.Assign) and var is stmt.target:
                    continue
                raise KernelSourceError(_KEPT, stmt.loc)


def _rewrite_block(block: ir.Block, origin: dict[str, str], defs: dict[str, Any],
                   consumed: set[str]) -> list[ir.Stmt]:
    """The block's statements with each chain's links replaced by its record call."""
    body: list[ir.Stmt | _Chain | None] = []
    chains: dict[str, _Chain] = {}  # the last link's target -> its open chain
    for stmt in block.body:
        if not _is_link(stmt, origin):
            body.append(stmt)
            continue
        expr = stmt.value
        lhs = expr.lhs
        chain = chains.pop(lhs.name, None)
        if chain is None:
            if origin[lhs.name] == "chain" and not lhs.name.startswith("$"):
                raise KernelSourceError(_KEPT, stmt.loc)
            chain = _Chain(lhs, origin[lhs.name] == "chain", stmt.loc)
        else:
            body[chain.index] = None  # the chain's record goes where its last link is
        _operand(chain, expr.rhs, defs, consumed)
        chain.target = stmt.target
        chain.index = len(body)
        body.append(chain)
        chains[stmt.target.name] = chain
    out: list[ir.Stmt] = []
    for s in body:
        if isinstance(s, _Chain):
            out.extend(_record(s, block.scope))
        elif s is not None:
            out.append(s)
    return out


def _operand(chain: _Chain, var: ir.Var, defs: dict[str, Any], consumed: set[str]) -> None:
    """Add one ``<<`` operand to the chain: text, a manipulator or values."""
    obj = _static(var, defs)
    if isinstance(obj, stream_manipulator):
        chain.pieces.append(("m", obj.value))
        consumed.add(var.name)
        return
    d = defs.get(var.name)
    if isinstance(d, ir.Expr) and d.op == "call" and not d.kws and len(d.args) == 1:
        fn = _static(d.func, defs)
        if fn is setprecision or fn is setw:  # its argument is a value
            chain.pieces.append(("p" if fn is setprecision else "w", chain.value(d.args[0])))
            consumed.update((var.name, d.func.name))
            return
    if isinstance(obj, (precision_manipulator, width_manipulator)):
        raise KernelSourceError("write sycl.setprecision(n) / sycl.setw(n) in the << statement "
                                "itself; a kernel cannot keep their result", chain.loc)
    fstring = "build_string" in var.name or "format_value" in var.name
    for p in pieces_of(var, defs, consumed):  # an f-string's fields format as in Python
        chain.pieces.append(p if isinstance(p, str) else
                            ("f", chain.value(p)) if fstring else chain.value(p))


def _static(var: ir.Var, defs: dict[str, Any]) -> Any:
    """The Python object a variable holds at compile time (a global, ``module.attr``), or None."""
    d = defs.get(var.name)
    if isinstance(d, (ir.Global, ir.FreeVar)):
        return d.value
    if isinstance(d, ir.Expr) and d.op == "getattr":
        mod = _static(d.value, defs)
        if isinstance(mod, pytypes.ModuleType):
            return getattr(mod, d.attr, None)
    return None


def _record(chain: _Chain, scope: ir.Scope) -> list[ir.Stmt]:
    """The statements of one chain's record call; its value (the stream) is the last link's."""
    loc = chain.loc
    merged: list[Piece] = []
    for p in chain.pieces:  # adjacent text is one piece
        if isinstance(p, str) and merged and isinstance(merged[-1], str):
            merged[-1] += p
        elif p != "":
            merged.append(p)
    fn = scope.redefine("$pysycl_stream_fn", loc)
    lay = scope.redefine("$pysycl_stream_layout", loc)
    tup = scope.redefine("$pysycl_stream_values", loc)
    layout = StreamLayout(tuple(merged), chain.continues)
    return [
        ir.Assign(ir.Global("stream_record", stream_record, loc), fn, loc),
        ir.Assign(ir.Global("stream_layout", layout, loc), lay, loc),
        ir.Assign(ir.Expr.build_tuple(chain.values, loc), tup, loc),
        ir.Assign(ir.Expr.call(fn, (chain.root, lay, tup), (), loc), chain.target, loc),
    ]
