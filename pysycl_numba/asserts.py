"""``assert`` in kernels: the rewrite, the compile's table, the record and its calling convention.

A failing assert must tell the host which assert failed, for which work-item,
with the numbers of its message. How it gets there:

* :class:`RewriteAsserts` (untyped IR, user code only) turns ``raise
  AssertionError(msg)`` -- Python's ``assert cond, msg`` -- into
  ``assert_fail(AssertLayout(pieces), (numbers...))`` followed by a static raise.
  ``msg`` is a string literal or an f-string of numbers (fields without a format
  spec): its text becomes the layout, a compile-time constant, as for ``print``
  (:func:`pysycl_numba.printing.pieces_of`); anything else is a compile error at
  the assert's line.
* :class:`AssertCallConv`, the target's calling convention, is Numba's
  ``MinimalCallConv`` (an ``i32`` status return; a raise in a helper returns a
  status that every caller propagates, so the rest of the work-item does not run)
  with one hidden parameter after the return slot: a pointer to the work-item's
  private assert *record*, which the entry point allocates and every call passes on.
* ``assert_fail`` (``overloads/asserts.py``) numbers the assert in the compile's
  :class:`AssertTable` (site, message layout: ``CompiledKernel.asserts``) and, if it
  is the work-item's first failure, writes the number and the message's numbers
  into the record; it counts the failures.
* The entry point (:mod:`pysycl_numba.wrapper`) publishes a failed record into the
  launch's error buffer at its end (:func:`publish`), as bounds-checked mode does.

A kernel that synchronizes its work-group (barriers, group collectives) cannot
end one work-item early: the others would wait for it at the next barrier. There
(:data:`ends_work_item` is False) a failing assert records and the work-item goes
on after the assert statement (docs/debugging.md).
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

from llvmlite import ir as llir

from pysycl._core.abi import (
    ASSERT_COUNT_INT,
    ASSERT_FLAG_INT,
    ASSERT_GID_WORD,
    ASSERT_MAX_VALUES,
    ASSERT_NUMBER_WORD,
    ASSERT_VALUE_WORD,
    IndexSpace,
    nested_codes,
)
from pysycl_numba._numba_compat import (
    FunctionPass,
    MinimalCallConv,
    cgutils,
    ir,
    ir_utils,
    register_pass,
)
from pysycl_numba.errors import KernelSourceError, in_compiler
from pysycl_numba.printing import drop_dead, pieces_of
from pysycl_numba.targets.spirv import ocl

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from pysycl_numba._numba_compat import StateDict

_I32 = llir.IntType(32)
_I64 = llir.IntType(64)

#: The private record, ``long`` words: 1 + the first failure's assert number (0: none),
#: whether the current call of the user's function failed (0/1: a work-item that goes on
#: after a failed assert may fail another), the user's linear id (range kernels with
#: reductions; -1: none), the failed calls before the current one (the same), the numbers.
RECORD_WORDS = 4 + ASSERT_MAX_VALUES
_NUMBER, _FAILED, _LINEAR, _EARLIER, _VALUES = 0, 1, 2, 3, 4
#: The hidden parameter's type: a pointer to the record (private memory).
RECORD = _I64.as_pointer()
#: The entry point's out-of-line publishing function (never inlined, as bounds.PUBLISH).
PUBLISH = "pysycl.assert.publish"
#: ``StaticRaise.exc_args`` of a rewritten assert: what RejectUnsupportedPython lets through.
MARK = ("pysycl-assert",)

ALLOWED = ("an assert's message in a kernel is a string literal or an f-string of numbers "
           "(assert i < n, f\"i = {i}, n = {n}\": fields without format specs, values that are "
           "bool, integers or floats); the message is made on the host when the assert fails")


class AssertTable:
    """The asserts one kernel compile lowered: ``(site number, pieces)``, numbered in order."""

    def __init__(self) -> None:
        self.entries: list[tuple[int, tuple[str | int, ...] | None]] = []

    def add(self, site: int, pieces: tuple[str | int, ...] | None) -> int:
        """The number of a newly lowered assert."""
        self.entries.append((site, pieces))
        return len(self.entries) - 1


#: The asserts of the kernel being compiled (set by ``compiler.compile_kernel``).
table: contextvars.ContextVar[AssertTable] = contextvars.ContextVar("pysycl_asserts")
#: Whether a failing assert ends its work-item (False: the kernel synchronizes its group).
ends_work_item: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "pysycl_assert_ends_work_item", default=True)


def assert_fail(layout: Any, values: Any) -> None:
    """A failing assert's record (device only: typed and lowered in overloads/asserts.py)."""
    raise RuntimeError("assert_fail runs only inside compiled kernels")


class AssertLayout:
    """An assert's message: ``str`` pieces and value positions; None: no message."""

    __slots__ = ("pieces",)

    def __init__(self, pieces: tuple[str | int, ...] | None) -> None:
        self.pieces = pieces


# ---------------------------------------------------------------- the rewrite
@register_pass(mutates_CFG=True, analysis_only=False)
class RewriteAsserts(FunctionPass):
    """Rewrite the user's ``raise AssertionError(msg)`` into ``assert_fail`` and a static raise."""

    _name = "pysycl_rewrite_asserts"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Rewrite ``state.func_ir`` in place (functions with asserts only)."""
        func_ir = state.func_ir
        defs: dict[str, Any] = {}
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign):
                    defs[stmt.target.name] = stmt.value
        consumed: set[str] = set()
        changed = False
        for label, block in func_ir.blocks.items():
            raise_ = block.body[-1] if block.body else None
            static = _static_assert(raise_)
            if static is not None:  # a nested function's assert, made static by its inlining
                pieces, values = static, []
                consumed |= _static_leftovers(block)
            else:
                if (not isinstance(raise_, ir.Raise) or in_compiler(raise_.loc)
                        or raise_.exception is None):
                    continue
                message = _assertion(raise_.exception, defs, consumed)
                if message is False:
                    continue  # another exception: RejectUnsupportedPython says so
                pieces, values = _layout(message, defs, func_ir._definitions, consumed,
                                         raise_.loc)
            block.body[-1:] = _fail(block.scope, pieces, values, raise_.loc)
            block.body.append(_end(func_ir, label, raise_.loc))
            changed = True
        if changed:
            drop_dead(func_ir, consumed)
            func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)
        return changed


def _static_assert(raise_: Any) -> tuple[str, ...] | None:
    """The pieces of an ``assert`` that Numba's closure inlining already made a
    ``StaticRaise(AssertionError, (message,))`` (the assert of a function defined in the kernel
    and inlined): ``(message,)``, or ``()`` without one; None for any other statement."""
    if not isinstance(raise_, ir.StaticRaise) or raise_.exc_class is not AssertionError:
        return None
    args = raise_.exc_args
    if args == MARK or in_compiler(raise_.loc):
        return None
    if not args:
        return ()
    if len(args) == 1 and isinstance(args[0], str):
        return (args[0],)
    return None


def _static_leftovers(block: ir.Block) -> set[str]:
    """The variables a static assert's block still builds its exception with (the
    ``AssertionError`` global, the message constant, the call): dead once rewritten."""
    names: set[str] = set()
    for stmt in block.body[:-1]:
        if not isinstance(stmt, ir.Assign):
            continue
        v = stmt.value
        if (_is_assertion_error(v) or (isinstance(v, ir.Const) and isinstance(v.value, str))
                or (isinstance(v, ir.Expr) and v.op == "call" and v.func.name in names)):
            names.add(stmt.target.name)
    return names


def _chain(var: ir.Var, defs: dict[str, Any]) -> tuple[list[str], Any]:
    """The copies of ``var`` back to its definition, and that definition."""
    chain = [var.name]
    d = defs.get(var.name)
    while isinstance(d, ir.Var) and d.name not in chain:
        chain.append(d.name)
        d = defs.get(d.name)
    return chain, d


def _is_assertion_error(d: Any) -> bool:
    return isinstance(d, (ir.Global, ir.FreeVar)) and d.value is AssertionError


def _assertion(exc: ir.Var, defs: dict[str, Any], consumed: set[str]) -> ir.Var | bool | None:
    """The message of ``raise exc`` if it raises an AssertionError (None: no message);
    False if it raises something else."""
    chain, d = _chain(exc, defs)
    if _is_assertion_error(d):
        consumed.update(chain)
        return None
    if not (isinstance(d, ir.Expr) and d.op == "call"):
        return False
    fchain, fd = _chain(d.func, defs)
    if not _is_assertion_error(fd):
        return False
    if d.kws or d.vararg is not None or len(d.args) > 1:
        raise KernelSourceError(f"AssertionError in a kernel takes one message; {ALLOWED}", d.loc)
    consumed.update(chain + fchain)
    return d.args[0] if d.args else None


def _layout(message: ir.Var | None, defs: dict[str, Any], definitions: dict[str, list[Any]],
            consumed: set[str], loc: ir.Loc) -> tuple[tuple[str | int, ...] | None, list[ir.Var]]:
    """An assert message's pieces (text and value positions) and its values."""
    if message is None:
        return None, []
    chain, d = _chain(message, defs)
    literal = isinstance(d, ir.Const) and isinstance(d.value, str)
    fstring = any("build_string" in n or "format_value" in n for n in chain)
    once = all(len(definitions.get(n, ())) <= 1 for n in chain)  # not "a" if c else "b"
    if not ((literal or fstring) and once):
        raise KernelSourceError(f"this assert's message is not a string literal or an "
                                f"f-string: {ALLOWED}", loc)
    used: set[str] = set()
    parts = pieces_of(message, defs, used)
    fields = set()  # the values of f-string fields: f"{x}" is str(x)
    for n in used:
        e = defs.get(n)
        if isinstance(e, ir.Expr) and e.op == "call" and len(e.args) == 1:
            f = defs.get(e.func.name)
            if isinstance(f, ir.Global) and f.value is str:
                fields.add(e.args[0].name)
    consumed |= used | set(chain)
    pieces: list[str | int] = []
    values: list[ir.Var] = []
    for p in parts:
        if isinstance(p, str):
            if pieces and isinstance(pieces[-1], str):
                pieces[-1] += p
            elif p:
                pieces.append(p)
            continue
        if p.name not in fields:
            spec = defs.get(p.name)
            what = ("a format spec (f\"{x:.3f}\", f\"{x!r}\")" if isinstance(spec, ir.Expr)
                    and spec.op == "call" else "a value that is not an f-string's field")
            raise KernelSourceError(f"this assert's message has {what}: {ALLOWED}", loc)
        pieces.append(len(values))
        values.append(p)
    if len(values) > ASSERT_MAX_VALUES:
        raise KernelSourceError(f"this assert's message shows {len(values)} numbers; at most "
                                f"{ASSERT_MAX_VALUES} fit in a failing work-item's record", loc)
    return tuple(pieces), values


def _fail(scope: ir.Scope, pieces: tuple[str | int, ...] | None, values: list[ir.Var],
          loc: ir.Loc) -> list[ir.Stmt]:
    """``assert_fail(AssertLayout(pieces), (values...))``."""
    fn = scope.redefine("$pysycl_assert_fn", loc)
    lay = scope.redefine("$pysycl_assert_layout", loc)
    tup = scope.redefine("$pysycl_assert_values", loc)
    res = scope.redefine("$pysycl_assert_res", loc)
    return [
        ir.Assign(ir.Global("assert_fail", assert_fail, loc), fn, loc),
        ir.Assign(ir.Global("assert_layout", AssertLayout(pieces), loc), lay, loc),
        ir.Assign(ir.Expr.build_tuple(values, loc), tup, loc),
        ir.Assign(ir.Expr.call(fn, (lay, tup), (), loc), res, loc),
    ]


def _end(func_ir: ir.FunctionIR, label: int, loc: ir.Loc) -> ir.Stmt:
    """The end of a failed assert's block: a raise (the work-item ends), or in a kernel that
    synchronizes its work-group a jump to where the assert statement continues."""
    if not ends_work_item.get():
        for block in func_ir.blocks.values():
            term = block.body[-1] if block.body else None
            if isinstance(term, ir.Branch) and label in (term.truebr, term.falsebr):
                return ir.Jump(term.truebr if term.falsebr == label else term.falsebr, loc)
    return ir.StaticRaise(AssertionError, MARK, loc)


# ------------------------------------------------------ the calling convention
class AssertCallConv(MinimalCallConv):  # type: ignore[misc]
    """``MinimalCallConv`` with the work-item's assert record after the return slot.

    ``i32 f(ret*, i64* record, args...)``: every Numba function of the target takes
    it and passes its own on; the entry point passes the one it allocated.
    """

    def get_function_type(self, restype: Any, argtypes: Any) -> llir.FunctionType:
        """``i32 (ret*, i64*, args...)``."""
        fnty = super().get_function_type(restype, argtypes)
        return llir.FunctionType(fnty.return_type, [fnty.args[0], RECORD, *fnty.args[1:]])

    def decorate_function(self, fn: llir.Function, args: Any, fe_argtypes: Any,
                          noalias: bool = False) -> None:
        """Name the parameters; remember the function's record parameter."""
        super().decorate_function(fn, args, fe_argtypes, noalias)
        fn.args[1].name = ".assert"
        fn.pysycl_record = fn.args[1]

    def get_arguments(self, func: llir.Function) -> list[llir.Argument]:
        """The Python-level arguments: after the return slot and the record."""
        return func.args[2:]

    def call_function(self, builder: llir.IRBuilder, callee: llir.Function, resty: Any,
                      argtys: Any, args: Any) -> tuple[Any, llir.Value]:
        """Call a Numba function, passing the caller's record on (Numba's body, one more
        argument)."""
        retty = callee.args[0].type.pointee
        retvaltmp = cgutils.alloca_once(builder, retty)
        builder.store(cgutils.get_null_value(retty), retvaltmp)
        arginfo = self._get_arg_packer(argtys)
        realargs = [retvaltmp, record_of(builder), *arginfo.as_arguments(builder, args)]
        code = builder.call(callee, realargs)
        status = self._get_return_status(builder, code)
        out = self.context.get_returned_value(builder, resty, builder.load(retvaltmp))
        return status, out


def record_of(builder: llir.IRBuilder) -> llir.Value:
    """The assert record of the function being built: its parameter, the entry point's
    record, or (a function of neither kind) a scratch record no one reads."""
    fn = builder.function
    rec = getattr(fn, "pysycl_record", None)
    if rec is None:
        rec = cgutils.alloca_once(builder, llir.ArrayType(_I64, RECORD_WORDS))
        rec = builder.bitcast(rec, RECORD)
        fn.pysycl_record = rec
    return rec


# ------------------------------------------------------------- the record
def _word(builder: llir.IRBuilder, ptr: llir.Value, k: int) -> llir.Value:
    return builder.gep(ptr, [_I32(k)], inbounds=True)


def new_record(builder: llir.IRBuilder) -> llir.Value:
    """The work-item's record (entry point), cleared; calls from the entry pass it."""
    with builder.goto_entry_block():
        rec = builder.alloca(_I64, size=RECORD_WORDS, name="pysycl.assert.record")
    builder.store(_I64(0), _word(builder, rec, _NUMBER))
    builder.store(_I64(0), _word(builder, rec, _FAILED))
    builder.store(_I64(-1), _word(builder, rec, _LINEAR))
    builder.store(_I64(0), _word(builder, rec, _EARLIER))
    builder.function.pysycl_record = rec
    return rec


def record_failure(builder: llir.IRBuilder, number: int, bits: list[llir.Value]) -> None:
    """In the failing function: mark the call failed; the first failure writes its number
    and values."""
    rec = record_of(builder)
    first = builder.icmp_unsigned("==", builder.load(_word(builder, rec, _NUMBER)), _I64(0))
    with builder.if_then(first):
        builder.store(_I64(number + 1), _word(builder, rec, _NUMBER))
        for k, v in enumerate(bits):
            builder.store(v, _word(builder, rec, _VALUES + k))
    builder.store(_I64(1), _word(builder, rec, _FAILED))


def note_linear_id(builder: llir.IRBuilder, rec: llir.Value, lin: llir.Value) -> None:
    """After a call of the user's function for linear id ``lin`` (range kernels with
    reductions, one call per item): the id of the record's first failure, if it just
    happened; the call's failure counted."""
    failed = builder.icmp_unsigned("!=", builder.load(_word(builder, rec, _NUMBER)), _I64(0))
    p = _word(builder, rec, _LINEAR)
    old = builder.load(p)
    unset = builder.icmp_signed("==", old, _I64(-1))
    builder.store(builder.select(builder.and_(failed, unset), lin, old), p)
    now, earlier = _word(builder, rec, _FAILED), _word(builder, rec, _EARLIER)
    builder.store(builder.add(builder.load(earlier), builder.load(now)), earlier)
    builder.store(_I64(0), now)


def publish(builder: llir.IRBuilder, rec: llir.Value, err: llir.Value) -> None:
    """At the end of the entry point: a failed record into the error buffer ``err``.

    The atomics live in an out-of-line function (as :func:`pysycl_numba.bounds.publish`'s),
    so that the device compiler's vectoriser never runs them lane by lane when no
    work-item failed, and the record goes to it by value, so that the record itself never
    leaves registers. Unlike bounds-checked mode's, the branch is not made uniform with
    ``sub_group_any``: after the control flow a failing assert adds (the rest of the
    work-item skipped) that collective kept Intel's CPU compiler from vectorising the
    kernel (a triad 2.1x slower; 1.15x without it), and on a GPU a collective after
    divergent code is a hazard.
    """
    words = [builder.load(_word(builder, rec, k)) for k in range(RECORD_WORDS)]
    failed = builder.icmp_unsigned("!=", words[_NUMBER], _I64(0))  # (the branch: never taken)
    with builder.if_then(failed, likely=False):
        call = builder.call(_publish_function(builder.module, err.type), [err, *words])
        call.calling_convention = "spir_func"


def _publish_function(module: llir.Module, err_type: llir.Type) -> llir.Function:
    """``publish(err, record words...)``: count the failures; the first work-item copies
    its record."""
    fn = module.globals.get(PUBLISH)
    if fn is not None:
        return fn
    fn = llir.Function(module, llir.FunctionType(llir.VoidType(), [err_type, *[_I64] * RECORD_WORDS]),
                       name=PUBLISH)
    fn.calling_convention = "spir_func"
    fn.linkage = "internal"
    fn.attributes.add("noinline")
    err, *rec = fn.args
    b = llir.IRBuilder(fn.append_basic_block("entry"))
    failures = b.trunc(b.add(rec[_EARLIER], rec[_FAILED]), _I32)  # failed work-items (or items)
    b.atomic_rmw("add", _word(b, err, ASSERT_COUNT_INT), failures, "monotonic")
    pair = b.cmpxchg(_word(b, err, ASSERT_FLAG_INT), _I32(0), _I32(1), "monotonic", "monotonic")
    with b.if_then(b.extract_value(pair, 1)):
        words = b.bitcast(err, _I64.as_pointer(addrspace=err.type.addrspace))
        b.store(rec[_NUMBER], _word(b, words, ASSERT_NUMBER_WORD))
        given = b.icmp_signed("!=", rec[_LINEAR], _I64(-1))
        for d in range(3):
            gid = ocl.work_item_query(b, "get_global_id", d)  # OpenCL order
            if d == 0:
                gid = b.select(given, rec[_LINEAR], gid)
            b.store(gid, _word(b, words, ASSERT_GID_WORD + d))
        for k in range(ASSERT_MAX_VALUES):
            b.store(rec[_VALUES + k], _word(b, words, ASSERT_VALUE_WORD + k))
    b.ret_void()
    return fn


#: Names of the functions and methods that synchronize a work-group or sub-group.
GROUP_SYNC = frozenset((
    "barrier", "group_barrier", "group_broadcast", "reduce_over_group", "any_of_group",
    "all_of_group", "none_of_group", "inclusive_scan_over_group", "exclusive_scan_over_group",
    "joint_reduce", "joint_any_of", "joint_all_of", "joint_none_of", "joint_inclusive_scan",
    "joint_exclusive_scan", "shift_group_left", "shift_group_right", "permute_group_by_xor",
    "select_from_group",
))


def synchronizes_group(index: IndexSpace, helpers: Sequence[tuple[Callable[..., Any], Any]],
                       ) -> bool:
    """Whether an ``nd_range`` kernel's code (its helpers' included) names a barrier or a
    group collective: its failing asserts cannot end a work-item (the module docstring)."""
    if index.kind == "hierarchical":  # parallel_for_work_item synchronizes the group
        return True
    if index.kind != "nd_range":
        return False
    for f, _ in helpers:
        code = getattr(getattr(f, "py_func", f), "__code__", None)
        if code is not None and any(GROUP_SYNC.intersection(c.co_names)
                                    for c in nested_codes(code)):
            return True
    return False
