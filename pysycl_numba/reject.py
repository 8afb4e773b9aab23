"""Reject Python a device cannot run, at the user's file:line, with what to write instead.

* :class:`RejectStatements` -- the first pass of every pipeline, before Numba
  reads the bytecode: ``try``/``except``/``finally`` and ``with`` statements,
  found in the function's source (:func:`statement_error`), so that the
  message names the construct the user wrote -- not what Numba's bytecode
  translation makes of it, which differs between Python versions. Without
  source (``exec``), the bytecode is looked at instead.
* :class:`RejectUnsupportedPython` -- after bytecode analysis: raise (but asserts),
  generators, lists, dicts, sets, str()/f-strings, host-only standard-library
  modules, before Numba's rewrites obscure them.
* :class:`RejectKernelResult` -- after type inference, kernels only: a kernel that returns
  a computed value (``lambda i: ra[i] * 2``) would run and write nothing (a lambda ending
  in a call discards the call's result).
"""

from __future__ import annotations

import ast
import dis
import inspect
import os
import sys
import sysconfig
import textwrap
import types as pytypes
from typing import TYPE_CHECKING

from pysycl._core.abi import KERNEL_RESULT_HINT
from pysycl._core.exceptions import errc
from pysycl_numba._numba_compat import AnalysisPass, errors, ir, register_pass, types
from pysycl_numba.asserts import MARK
from pysycl_numba.errors import KernelSourceError, in_compiler
from pysycl_numba.explain_calls import LIBRARY_RAISES, NUMPY_INSTEAD
from pysycl_numba.stream_types import StreamBufferType
from pysycl_numba.types import ReducerType

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import StateDict

#: What to write instead of try/except: a device has no exceptions to catch.
TRY_HINT = ("a device has no exceptions to catch (a failing operation in a kernel does not "
            "raise); check conditions with if-statements and write an error flag to an "
            "accessor instead")
#: What to write instead of ``with``.
WITH_HINT = ("a kernel has no context managers; open buffers and other context managers on "
             "the host, around q.submit, and write the kernel's body without 'with'")


def _try_name(node: ast.Try | ast.TryStar) -> str:
    """``try/except``, ``try/finally``, ``try/except/else/finally``, ... as written."""
    parts = ["try"]
    if node.handlers:
        parts.append("except*" if isinstance(node, ast.TryStar) else "except")
    if node.orelse:
        parts.append("else")
    if node.finalbody:
        parts.append("finally")
    return "/".join(parts)


#: Other constructs found in the source, and what to write instead.
_OTHER = {
    ast.NamedExpr: ("the walrus operator (:=)",
                    "is not supported in kernels (Numba cannot type an assignment expression); "
                    "assign the value in a statement of its own first: n = x * 2, then if n > 1:"),
    ast.ClassDef: ("a class statement",
                   "is not supported inside kernels: define classes on the host (a function "
                   "object's class is defined outside its kernel); kernels compute on numbers, "
                   "tuples, accessors and USM pointers"),
    ast.Import: ("an import statement",
                 "is not supported inside kernels: import the module at the top of the file; "
                 "kernels read math, cmath, numpy and your modules as globals"),
    ast.ImportFrom: ("an import statement",
                     "is not supported inside kernels: import at the top of the file; kernels "
                     "read the imported names as globals"),
    ast.Delete: ("a del statement",
                 "is not supported in kernels: leave the name bound (a kernel's local variables "
                 "end with the work-item)"),
}


def _message(what: str) -> str:
    if what.startswith("try"):
        then = ("; the code of a finally block can simply follow the code it guards"
                if what.endswith("finally") else "")
        return f"{what} is not supported in kernels: {TRY_HINT}{then}"
    for name, hint in _OTHER.values():
        if what == name:
            return f"{name} {hint}"
    return f"{what} statements are not supported in kernels: {WITH_HINT}"


def _from_source(fn: pytypes.FunctionType) -> list[tuple[int, str]] | None:
    """``(line, what)`` of each try/with statement (and :data:`_OTHER` construct) in ``fn``'s
    source (None: no source)."""
    try:
        lines, start = inspect.getsourcelines(fn)
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (OSError, TypeError, SyntaxError):
        return None
    if not (tree.body and isinstance(tree.body[0], (ast.FunctionDef, ast.AsyncFunctionDef))
            and tree.body[0].name == fn.__code__.co_name):
        return None  # not the function's text (the file changed since): the bytecode tells
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Try, ast.TryStar)):
            found.append((start + node.lineno - 1, _try_name(node)))
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            found.append((start + node.lineno - 1, "with"))
        elif type(node) in _OTHER:
            found.append((start + node.lineno - 1, _OTHER[type(node)][0]))
    return found


#: Opcodes of a with-statement (3.10: SETUP_WITH; 3.11-3.13: BEFORE_WITH; 3.14: LOAD_SPECIAL)
_WITH_OPS = frozenset({"SETUP_WITH", "BEFORE_WITH", "SETUP_ASYNC_WITH", "BEFORE_ASYNC_WITH",
                       "LOAD_SPECIAL"})
#: Opcodes of an except/finally handler (what an inlined comprehension's cleanup has not)
_TRY_OPS = frozenset({"SETUP_FINALLY", "SETUP_EXCEPT", "PUSH_EXC_INFO", "CHECK_EXC_MATCH",
                      "JUMP_IF_NOT_EXC_MATCH", "CHECK_EG_MATCH"})


def _from_bytecode(code: pytypes.CodeType) -> list[tuple[int, str]]:
    """The fallback without source: ``(line, what)`` of the first with/try opcode.

    An except/finally handler is reported at the first line of the code it guards
    (the exception table's range that jumps to it), or else the line before it.
    """
    bc = dis.Bytecode(code)
    ins = list(bc)
    guarded = {e.target: e.start for e in getattr(bc, "exception_entries", ())}
    lines = {i.offset: i.positions.lineno for i in ins if i.positions and i.positions.lineno}
    for ops, what in ((_WITH_OPS, "with"), (_TRY_OPS, "try/except/finally")):
        line = code.co_firstlineno
        for i in ins:
            line = lines.get(i.offset, line)
            if i.opname in ops:
                start = guarded.get(i.offset)
                first = min((o for o in lines if start is not None and o >= start), default=None)
                return [(lines[first] if first is not None else line, what)]
    return []


def statement_error(fn: pytypes.FunctionType) -> KernelSourceError | None:
    """The error of a try/except/finally or with statement in ``fn``, or None.

    A lambda is one expression: it has no statements.
    """
    code = fn.__code__
    if code.co_name == "<lambda>":
        return None
    found = _from_source(fn)
    if not found:  # no source, or none there: the bytecode (a stale source file says nothing)
        found = _from_bytecode(code)
    if not found:
        return None
    line, what = min(found)
    return KernelSourceError(_message(what), ir.Loc(code.co_filename, line))


@register_pass(mutates_CFG=False, analysis_only=True)
class RejectStatements(AnalysisPass):
    """Report try/except/finally and with statements, before Numba translates the bytecode."""

    _name = "pysycl_reject_statements"

    def __init__(self) -> None:
        AnalysisPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Raise :class:`KernelSourceError` at the first such statement."""
        fn = getattr(state.func_id, "func", None)
        if isinstance(fn, pytypes.FunctionType):
            err = statement_error(fn)
            if err is not None:
                raise err
        return False


_UNSUPPORTED_EXPR = {
    "build_list": "lists cannot be created in kernels; use a tuple",
    "build_map": "dicts cannot be created in kernels",
    "build_set": "sets cannot be created in kernels",
}
_LISTCOMP = ("a list comprehension is not supported in kernels (nor lists: []); use a for loop "
             "over range() and keep values in a tuple, a sycl.private_array or an accessor")


def _raised(stmt: ir.Stmt) -> str:
    """The exception a raise statement of a library implementation raises (``ValueError``)."""
    cls = getattr(stmt, "exc_class", None)
    return cls.__name__ if isinstance(cls, type) else "an exception"


@register_pass(mutates_CFG=False, analysis_only=True)
class RejectUnsupportedPython(AnalysisPass):
    """Report constructs a device cannot run, at their source line."""

    _name = "pysycl_reject_unsupported_python"

    def __init__(self) -> None:
        AnalysisPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Raise :class:`KernelSourceError` on the first unsupported statement."""
        modules: dict[str, pytypes.ModuleType] = {}
        consts: dict[str, object] = {}  # float, int and string constants, by variable
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                self._check(stmt)
                if isinstance(stmt, ir.Assign):
                    value = stmt.value
                    _check_number_of_string(value, consts, stmt.loc)
                    if isinstance(value, ir.Const) or (
                            isinstance(value, (ir.Global, ir.FreeVar))
                            and (value.value is float or value.value is int)):
                        consts[stmt.target.name] = value.value
                    if (isinstance(value, (ir.Global, ir.FreeVar))
                            and isinstance(value.value, pytypes.ModuleType)):
                        modules[stmt.target.name] = value.value
                    elif (isinstance(value, ir.Expr) and value.op == "getattr"
                          and value.value.name in modules):
                        mod = modules[value.value.name]
                        _check_host_module(mod, value.attr, stmt.loc)
                        sub = getattr(mod, value.attr, None)
                        if isinstance(sub, pytypes.ModuleType):  # np.linalg, np.random
                            modules[stmt.target.name] = sub
        return False

    @staticmethod
    def _check(stmt: ir.Stmt) -> None:
        if isinstance(stmt, (ir.Raise, ir.StaticRaise, ir.DynamicRaise, ir.TryRaise)):
            if isinstance(stmt, ir.StaticRaise) and stmt.exc_args == MARK:
                return  # an assert (pysycl_numba.asserts): reported on the host
            if in_compiler(stmt.loc):
                raise errors.TypingError(f"{LIBRARY_RAISES}{_raised(stmt)}", stmt.loc)
            raise KernelSourceError("exceptions other than AssertionError cannot be raised in a "
                                    "kernel; use assert (reported on the host at the next "
                                    "synchronization point), or check conditions with "
                                    "if-statements and write an error flag to an accessor",
                                    stmt.loc)
        if isinstance(stmt, ir.Print):
            raise KernelSourceError("print() is not supported in kernels", stmt.loc)
        if isinstance(stmt, ir.EnterWith):  # (RejectStatements finds them first)
            raise KernelSourceError(_message("with"), stmt.loc)
        if isinstance(stmt, ir.Assign):
            value = stmt.value
            if isinstance(value, ir.Yield):
                raise KernelSourceError("generators (yield) are not supported in kernels", stmt.loc)
            if isinstance(value, (ir.Global, ir.FreeVar)) and value.value is print:
                raise KernelSourceError("print() is not supported in kernels", stmt.loc)
            if isinstance(value, (ir.Global, ir.FreeVar)) and any(
                    value.value is f for f in (str, repr, format)):
                # Python compiles f"{x}" to a call of str (Numba's FORMAT_VALUE).
                what = ("f-strings" if "format_value" in stmt.target.name
                        else f"{value.value.__name__}()")
                raise KernelSourceError(
                    f"{what} cannot be used in kernels: a device has no strings; write numbers "
                    "to an accessor, or print them: print(\"x =\", x) and f-strings inside "
                    "print() work in kernels (docs/debugging.md)", stmt.loc)
            if isinstance(value, ir.Expr):
                # Python 3.12 inlines comprehensions (PEP 709): an empty list, then appends.
                message = (_LISTCOMP if value.op == "build_list" and not value.items
                           else _UNSUPPORTED_EXPR.get(value.op))
                if message is not None:
                    raise KernelSourceError(message, stmt.loc)


def _check_number_of_string(value: ir.Inst, consts: dict[str, object], loc: ir.Loc) -> None:
    """``float("inf")``, ``int("3")``: a string a device cannot have, where a constant does."""
    if not (isinstance(value, ir.Expr) and value.op == "call" and len(value.args) == 1):
        return
    fn = consts.get(value.func.name)
    if fn is not float and fn is not int:  # identity: a constant may be an array
        return
    text = consts.get(value.args[0].name)
    if not isinstance(text, str):
        return
    spelled = {"inf": "math.inf", "+inf": "math.inf", "-inf": "-math.inf", "nan": "math.nan",
               "infinity": "math.inf", "-infinity": "-math.inf"}.get(text.strip().lower())
    instead = (f"write {spelled} (or {spelled.replace('math.', 'np.')})" if spelled
               else "write the number itself, or convert on the host and capture the value")
    raise KernelSourceError(f"{fn.__name__}({text!r}) is not supported in kernels (a device has no "
                            f"strings to convert) -- {instead}", loc)


#: Standard-library modules whose functions a device can run (Numba types them).
_DEVICE_STDLIB = frozenset({"math", "cmath", "operator"})
_STDLIB = os.path.normcase(sysconfig.get_paths()["stdlib"])
#: numpy's submodules of array functions, host code in a kernel.
_HOST_NUMPY = frozenset({"numpy.linalg", "numpy.fft", "numpy.random", "numpy.polynomial"})


def _check_host_module(mod: pytypes.ModuleType, attr: str, loc: ir.Loc) -> None:
    """``mod.attr`` of a standard-library module that is host code (``time``, ``random``).

    Numba types some of them (``random.random`` calls a host runtime symbol
    that no device has), others not; either way the user gets this message at
    the line, not a link error naming a symbol of Numba's runtime.
    """
    name = mod.__name__
    if name in _HOST_NUMPY:  # Numba types np.linalg only with scipy, np.random on the host
        raise KernelSourceError(f"{name}.{attr} is not supported in kernels -- {NUMPY_INSTEAD}",
                                loc)
    if name.partition(".")[0] in _DEVICE_STDLIB:
        return
    path = getattr(mod, "__file__", None)
    in_stdlib = (name.partition(".")[0] in sys.builtin_module_names
                 or (path is not None and os.path.normcase(path).startswith(_STDLIB)
                     and "site-packages" not in path))
    if in_stdlib:
        raise KernelSourceError(
            f"{name}.{attr} is not supported in kernels -- the {name} module is host code: "
            f"call {name}.{attr} on the host before submitting and capture the result (a "
            "number becomes a kernel argument)", loc)




@register_pass(mutates_CFG=False, analysis_only=True)
class RejectKernelResult(AnalysisPass):
    """Refuse a kernel that returns a computed value, at the ``return`` (``kernel_signature_error``).

    The same rule as the host device's (``pysycl._kernels.signature.returns_computed``): a
    value that is a call's result or a tuple is discarded; ``None``, a stream and a reducer
    are no values.
    """

    _name = "pysycl_reject_kernel_result"

    def __init__(self) -> None:
        AnalysisPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Raise :class:`KernelSourceError` (a signature error) on a value-returning kernel."""
        rt = state.return_type
        if _no_value(rt):
            return False
        func_ir = state.func_ir
        for block in func_ir.blocks.values():
            ret = block.terminator
            if not isinstance(ret, ir.Return) or _no_value(state.typemap.get(ret.value.name)) \
                    or _discarded(func_ir, ret.value, set()):
                continue
            what = (f"a {types.unliteral(rt.type)} value on some paths"
                    if isinstance(rt, types.Optional) else f"a {types.unliteral(rt)} value")
            raise KernelSourceError(f"this kernel returns {what}, but {KERNEL_RESULT_HINT}",
                                    ret.loc, errc.invalid, signature=True)
        return False


def _no_value(t: types.Type | None) -> bool:
    """A kernel's result that loses nothing: ``None``, a ``sycl.stream`` (what ``out << x``
    gives), a reducer (``r += x``), or a tuple of such -- ``lambda i: (r.combine(x), out << x)``
    sequences calls."""
    if t is None or t in (types.none, types.void) or isinstance(t, (StreamBufferType,
                                                                      ReducerType)):
        return True
    return isinstance(t, types.BaseTuple) and all(_no_value(e) for e in t.types)


def _discarded(func_ir: ir.FunctionIR, var: ir.Var, seen: set[str]) -> bool:
    """Whether a returned value is a call's result or a tuple (a lambda ending in
    ``ref.fetch_add(1)`` discards it, as a C++ expression statement does): followed through
    casts and Python's temporaries, never through a variable the user named."""
    if var.name in seen:
        return True
    seen.add(var.name)
    defs = func_ir._definitions.get(var.name, ())
    for d in defs:
        if isinstance(d, ir.Expr) and d.op == "cast":
            d = d.value
        if isinstance(d, ir.Var) and d.name.startswith("$"):
            if not _discarded(func_ir, d, seen):
                return False
        elif not (isinstance(d, ir.Expr) and d.op in ("call", "build_tuple")):
            return False
    return bool(defs)
