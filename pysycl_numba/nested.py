"""Functions defined inside a kernel or helper (nested ``def``, ``lambda``): inlined where called.

A nested function is an ordinary closure over the kernel's variables: its captured
accessors, pointers and numbers (kernel arguments) and the kernel's own locals.

* **Called directly** (``pred = lambda x: x > 3; ... pred(v)``): :func:`inline_nested_calls`
  inlines it at each call with Numba's ``inline_closure_call`` *before* capture lifting, so
  what its body reads (closure cells, globals, helpers) is lifted like the kernel's own code
  and ``print``/``sycl.stream`` statements in it are rewritten like the kernel's. The vote
  ``any_of_group(g, x, pred)`` (and ``all_of``/``none_of``) with a nested ``pred`` is the
  spec's ``any_of_group(g, pred(x))`` (SYCL 2020 §4.17.4) and is written that way first, so
  its ``pred`` is inlined too.
* **Passed to a function that only calls it** (a plain helper reading no kernel arguments of
  its own, or ``joint_any_of``/``all_of``/``none_of``): when it reads kernel values, the
  receiver is inlined at the call first (:func:`_receiver`, closure conversion by inlining),
  and its calls of the function are then direct calls, inlined as above.
* **Used as a value** otherwise (stored, passed to anything else): Numba compiles it on its own
  (``MakeFunctionToJitFunction``), with what it reads frozen as constants. It may therefore
  read only constants; :func:`check_escaping` refuses one that reads a kernel argument, a
  kernel variable, a helper that reads kernel arguments, or ``print``, naming its line.

Why inline here rather than leave it to Numba's ``InlineClosureLikes``: that pass runs dead-code
elimination afterwards, which keeps a store ``v[i] = x`` only when ``v`` is a parameter *by
name*; lifted captures were read into temporaries, so every store through a captured accessor
of a kernel that called a nested function vanished. :func:`read_params_once` gives each
parameter the variable of its name (the pass's last step), which keeps those stores under any
later elimination.
"""

from __future__ import annotations

import dis
import inspect
import types as pytypes
from typing import TYPE_CHECKING, Any

from pysycl._core.abi import nested_codes
from pysycl._kernels.group_algorithms import joint_all_of, joint_any_of, joint_none_of
from pysycl._kernels.kernel_api import (
    all_of_group,
    any_of_group,
    group_broadcast,
    none_of_group,
)
from pysycl_numba._numba_compat import (
    FunctionPass,
    callee_ir_validator,
    inline_closure_call,
    ir,
    ir_utils,
    register_pass,
)
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.overloads.hierarchical import INLINED

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import StateDict
    from pysycl_numba.lift import LiftSpec

_VOTES = (any_of_group, all_of_group, none_of_group)


def _defined_function(func_ir: ir.FunctionIR, var: ir.Var) -> ir.Expr | None:
    """The ``make_function`` that defines ``var`` (a nested function), or None."""
    d = ir_utils.guard(ir_utils.get_definition, func_ir, var)
    return d if isinstance(d, ir.Expr) and d.op == "make_function" else None


def _global_value(func_ir: ir.FunctionIR, var: ir.Var) -> Any:
    """The value of ``var`` when it is a global or an attribute of a global module."""
    d = ir_utils.guard(ir_utils.get_definition, func_ir, var)
    if isinstance(d, (ir.Global, ir.FreeVar)):
        return d.value
    if isinstance(d, ir.Expr) and d.op == "getattr":
        mod = _global_value(func_ir, d.value)
        if isinstance(mod, pytypes.ModuleType):
            return getattr(mod, d.attr, None)
    return None


def _votes_on_nested_predicates(func_ir: ir.FunctionIR) -> None:
    """``any_of_group(g, x, pred)`` with a nested ``pred`` -> ``any_of_group(g, bool(pred(x)))``."""
    for block in func_ir.blocks.values():
        body: list[ir.Stmt] = []
        for stmt in block.body:
            call = stmt.value if isinstance(stmt, ir.Assign) else None
            if (isinstance(call, ir.Expr) and call.op == "call" and len(call.args) == 3
                    and not call.kws and call.vararg is None
                    and any(_global_value(func_ir, call.func) is v for v in _VOTES)
                    and _defined_function(func_ir, call.args[2]) is not None):
                loc = stmt.loc
                got = block.scope.redefine("$pysycl_pred", loc)
                flag = block.scope.redefine("$pysycl_flag", loc)
                to_bool = block.scope.redefine("$pysycl_bool", loc)
                body += [ir.Assign(ir.Expr.call(call.args[2], [call.args[1]], (), loc), got, loc),
                         ir.Assign(ir.Global("bool", bool, loc), to_bool, loc),
                         ir.Assign(ir.Expr.call(to_bool, [got], (), loc), flag, loc)]
                call.args = [call.args[0], flag]
            body.append(stmt)
        block.body = body
    func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)


@register_pass(mutates_CFG=True, analysis_only=False)
class InlineNestedFunctions(FunctionPass):
    """Inline the directly called functions defined in the function being compiled.

    The first pass after bytecode translation in every pysycl pipeline: what the
    inlined bodies read is then lifted, rewritten (``print``, streams, a functor's
    ``self.x``) and checked like the function's own code.
    """

    _name = "pysycl_inline_nested_functions"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Inline in ``state.func_ir``; whether anything was."""
        return inline_nested_calls(state.func_ir, getattr(state, "pysycl_lift", None))


def inline_nested_calls(func_ir: ir.FunctionIR, spec: LiftSpec | None = None,
                        receivers: bool = True, force: bool = False) -> bool:
    """Inline every direct call of a function defined in ``func_ir`` (before lifting).

    A call that passes such a function reading kernel values to a plain helper (or to a
    ``joint_`` vote) inlines the receiver first (:func:`_receiver`), whose calls of it are
    then inlined too. The definition (``make_function``) goes away when nothing else uses it.
    ``receivers=False`` inlines only direct calls; ``force`` looks for calls to inline
    even in a function that defines none (a hierarchical kernel's rewritten calls).
    """
    if not force and not any(isinstance(c, pytypes.CodeType)
                             for c in func_ir.func_id.code.co_consts):
        return False  # the common case: no nested function
    _votes_on_nested_predicates(func_ir)
    glbls = func_ir.func_id.func.__globals__
    work = list(func_ir.blocks.items())
    inlined = False
    taken = 0 if receivers else _MAX_RECEIVERS  # receivers inlined so far
    while work:
        _, block = work.pop()
        for i, stmt in enumerate(block.body):
            if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                    and stmt.value.op == "call"):
                continue
            fdef: Any = _defined_function(func_ir, stmt.value.func)
            if fdef is None and taken < _MAX_RECEIVERS:
                fdef = _receiver(func_ir, stmt.value, spec)
                taken += fdef is not None and not any(fdef is f for f in INLINED)
            if fdef is None:
                _check_not_chosen(func_ir, stmt.value.func, stmt.loc)
                continue
            blocks, renamed = inline_closure_call(func_ir, glbls, block, i, fdef,
                                                  work_list=work,
                                                  callee_validator=callee_ir_validator)
            _check_stores_kept(fdef.__code__ if callable(fdef) else fdef.code, blocks)
            _keep_temporaries(blocks, renamed, block.scope)
            _prints_as_calls(blocks)
            func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)
            inlined = True
            break  # the block was split; its rest is on the work list
    if inlined:
        ir_utils.remove_dels(func_ir.blocks)  # Numba's IR of the inlined bodies has them
        _drop_unused_definitions(func_ir)
        func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)
    return inlined


#: How many receivers one function inlines at most (a helper passing its function on to
#: itself would never end; past this the function stays a value and is refused).
_MAX_RECEIVERS = 64


def _joint_any_of(g: Any, data: Any, first: Any, last: Any, pred: Any) -> bool:
    found = False
    for j in range(first, last):
        if pred(data[j]):
            found = True
    group_broadcast(g, 0)  # a group algorithm: every work-item of g meets here
    return found


def _joint_all_of(g: Any, data: Any, first: Any, last: Any, pred: Any) -> bool:
    held = True
    for j in range(first, last):
        if not pred(data[j]):
            held = False
    group_broadcast(g, 0)
    return held


def _joint_none_of(g: Any, data: Any, first: Any, last: Any, pred: Any) -> bool:
    found = False
    for j in range(first, last):
        if pred(data[j]):
            found = True
    group_broadcast(g, 0)
    return not found


#: The ``joint_`` votes written in Python, inlined when their ``pred`` reads kernel values:
#: each work-item tests the whole range with its own ``pred`` (as the host device does).
_JOINT_VOTES = {joint_any_of: _joint_any_of, joint_all_of: _joint_all_of,
                joint_none_of: _joint_none_of}


def _receiver(func_ir: ir.FunctionIR, call: ir.Expr,
              spec: LiftSpec | None) -> pytypes.FunctionType | None:
    """The function to inline for ``call`` when it passes a nested function that reads
    kernel values (closure conversion by inlining: the receiver's calls of it become
    direct calls, compiled in place). Only a plain Python helper reading no kernel
    arguments of its own and closing over nothing, or a ``joint_`` vote, is a receiver;
    anything else leaves the nested function a value, which :func:`check_escaping`
    refuses."""
    fn = _global_value(func_ir, call.func)
    if any(fn is f for f in INLINED):  # a hierarchical kernel's: compiled in place always
        return fn  # type: ignore[no-any-return]
    if call.kws or call.vararg is not None or not any(
            _reads_kernel_values(func_ir, fdef, spec) for fdef in
            (_defined_function(func_ir, a) for a in call.args) if fdef is not None):
        return None
    fn = _global_value(func_ir, call.func)
    if not isinstance(fn, pytypes.FunctionType):
        return None
    if fn in _JOINT_VOTES:
        return _JOINT_VOTES[fn]
    if (fn.__module__ or "").startswith(("pysycl.", "pysycl_numba.", "numba.")) \
            or fn.__code__.co_flags & (inspect.CO_GENERATOR | inspect.CO_COROUTINE
                                       | inspect.CO_VARARGS | inspect.CO_VARKEYWORDS) \
            or fn.__code__.co_kwonlyargcount or fn.__closure__ \
            or _shadows_a_capture(fn, func_ir, spec):
        return None
    hidden = spec.calls.get(id(fn)) if spec is not None else None
    return fn if hidden is None or not hidden[1] else None


def _shadows_a_capture(fn: pytypes.FunctionType, func_ir: ir.FunctionIR,
                       spec: LiftSpec | None) -> bool:
    """Whether ``fn``, from another module, reads a global by the name of one the kernel
    captures (inlined, the lifting would read the kernel's by that name)."""
    if spec is None or fn.__globals__ is func_ir.func_id.func.__globals__:
        return False
    return any((ins.argval, "global") in spec.own for c in nested_codes(fn.__code__)
               for ins in dis.get_instructions(c) if ins.opname == "LOAD_GLOBAL")


def _reads_kernel_values(func_ir: ir.FunctionIR, fdef: ir.Expr, spec: LiftSpec | None) -> bool:
    """Whether a nested function reads anything but constants (a value compiled on its
    own could not)."""
    glbls = func_ir.func_id.func.__globals__
    if _closure_reads(func_ir, fdef) is not None or (
            spec is not None and _global_reads(fdef.code, glbls, spec) is not None):
        return True
    items = ir_utils.guard(ir_utils.get_definition, func_ir, fdef.closure) \
        if fdef.closure is not None else None
    return spec is not None and isinstance(items, ir.Expr) and items.op == "build_tuple" and any(
        isinstance(d, ir.FreeVar) and (d.name, "freevar") in spec.own
        for d in (ir_utils.guard(ir_utils.get_definition, func_ir, v) for v in items.items))


def _check_not_chosen(func_ir: ir.FunctionIR, callee: ir.Var, loc: ir.Loc) -> None:
    """Refuse a call of a variable that holds one of several nested functions.

    Numba would try its experimental first-class function values, whose lowering needs
    host machinery no device has (it failed in ways that depended on what ran before).
    """
    seen: set[str] = set()
    stack, defs = [callee.name], []
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        for d in func_ir._definitions.get(name, ()):
            if isinstance(d, ir.Var):
                stack.append(d.name)
            else:
                defs.append(d)
    if len(defs) > 1 and any(isinstance(d, ir.Expr) and d.op == "make_function" for d in defs):
        raise KernelSourceError(
            "choosing between functions defined in the kernel at run time (f = g if c else "
            "h) is not supported on a device -- call each function in its own branch: "
            "r = g(x) if c else h(x)", loc)


def _keep_temporaries(blocks: dict[int, ir.Block], renamed: dict[str, ir.Var],
                      scope: ir.Scope) -> None:
    """Numba names the inlined variables ``<function>_<name>`` with ``$`` spelled ``_v``;
    give its temporaries their ``$`` back: pysycl's passes tell a user's variable from a
    temporary by it (a stream chain's links, the names in messages)."""
    back = {new.name: scope.redefine("$" + new.name, new.loc)
            for old, new in renamed.items() if old.startswith("$")}
    ir_utils.replace_vars(blocks, back)


def _prints_as_calls(blocks: dict[int, ir.Block]) -> None:
    """Numba's IR of a nested function has ``print(...)`` as an ``ir.Print`` statement;
    make it the call again, which the kernel's print rewriting takes
    (:mod:`pysycl_numba.printing`)."""
    for block in blocks.values():
        body: list[ir.Stmt] = []
        for stmt in block.body:
            if isinstance(stmt, ir.Print):
                fn = block.scope.redefine("$pysycl_print", stmt.loc)
                res = block.scope.redefine("$pysycl_printed", stmt.loc)
                body += [ir.Assign(ir.Global("print", print, stmt.loc), fn, stmt.loc),
                         ir.Assign(ir.Expr.call(fn, list(stmt.args), (), stmt.loc), res,
                                   stmt.loc)]
                continue
            body.append(stmt)
        block.body = body


def _check_stores_kept(code: pytypes.CodeType, blocks: dict[int, ir.Block]) -> None:
    """Refuse an inlined function whose IR lost a ``v[i] = x`` of its source.

    Numba builds the IR of a nested function with its own nested functions inlined and
    dead code removed (``ir_utils.get_ir_of_code``); a store through the outer function's
    closure cell is dead to it. So a function defined inside a nested function and called
    there must not be the one that stores (it is refused, never run without its store).
    """
    if not any(isinstance(c, pytypes.CodeType) for c in code.co_consts):
        return  # nothing was inlined into it, nothing removed
    stmts = [s for b in blocks.values() for s in b.body]
    kept = {s.loc.line for s in stmts if isinstance(s, (ir.SetItem, ir.StaticSetItem))}
    # functions still defined there (used as values) keep their stores in their own compile
    apart = {c for s in stmts if isinstance(s, ir.Assign) and isinstance(s.value, ir.Expr)
             and s.value.op == "make_function" for c in nested_codes(s.value.code)}
    for c in nested_codes(code):
        if c in apart:
            continue
        for ins in dis.get_instructions(c):
            line = ins.positions.lineno if ins.positions else None
            if ins.opname == "STORE_SUBSCR" and line and line not in kept:
                raise KernelSourceError(
                    f"this store is in '{code.co_name}', a nested function that itself defines "
                    "and calls a function: Numba builds such a function with its own nested "
                    "functions inlined and drops the stores it sees no use of, so this one "
                    "would be lost. Define the functions one level deep, directly in the "
                    "kernel (those are compiled in place with their stores), or make "
                    f"'{code.co_name}' a plain Python function outside the kernel",
                    ir.Loc(c.co_filename, line))


def _drop_unused_definitions(func_ir: ir.FunctionIR) -> None:
    """Remove ``make_function`` statements (and their code constant and closure tuple) that
    no statement uses any more: Numba would try to compile them on their own."""
    while True:
        used = {v.name for b in func_ir.blocks.values() for s in b.body
                for v in s.list_vars() if not (isinstance(s, ir.Assign) and v is s.target)}
        dropped = False
        for block in func_ir.blocks.values():
            body = [s for s in block.body if not (
                isinstance(s, ir.Assign) and s.target.name not in used and _droppable(s.value))]
            dropped |= len(body) != len(block.body)
            block.body = body
        if not dropped:
            return


def _droppable(value: Any) -> bool:
    """A value that has no effect: a function definition, its code, its closure tuple, its
    annotations (a tuple of strings under ``from __future__ import annotations``), a copy
    (``s = store`` of a function whose calls were inlined)."""
    if isinstance(value, ir.Var):
        return True
    if isinstance(value, ir.Expr):
        return value.op in ("make_function", "build_tuple")
    if not isinstance(value, ir.Const):
        return False
    v = value.value  # (Numba loads an annotations tuple as one string constant a name)
    return isinstance(v, (pytypes.CodeType, str)) or (
        isinstance(v, tuple) and all(isinstance(x, str) for x in v))


def check_escaping(func_ir: ir.FunctionIR, spec: LiftSpec) -> None:
    """Refuse a nested function used as a value that reads anything but constants.

    Runs after capture lifting: a closure cell the kernel filled from a captured variable
    now reads a parameter, which a function compiled on its own cannot see.
    """
    glbls = func_ir.func_id.func.__globals__
    for block in func_ir.blocks.values():
        for stmt in block.body:
            fdef = stmt.value if isinstance(stmt, ir.Assign) else None
            if not (isinstance(fdef, ir.Expr) and fdef.op == "make_function"):
                continue
            why = _closure_reads(func_ir, fdef) or _global_reads(fdef.code, glbls, spec)
            if why is not None:
                raise KernelSourceError(
                    f"the function '{fdef.code.co_name}' defined here is used as a value "
                    f"(passed to a function, stored or returned), not called: such a function "
                    f"is compiled on its own and can read only constants, but it reads {why}. "
                    "Call it directly in the kernel (the call is then compiled in place), or "
                    "pass what it reads as an argument", stmt.loc)


def _closure_reads(func_ir: ir.FunctionIR, fdef: ir.Expr) -> str | None:
    """What a nested function reads through its closure that is not a constant."""
    items = ir_utils.guard(ir_utils.get_definition, func_ir, fdef.closure) \
        if fdef.closure is not None else None
    if not isinstance(items, ir.Expr) or items.op != "build_tuple":
        return None
    for name, var in zip(fdef.code.co_freevars, items.items, strict=False):
        d = ir_utils.guard(ir_utils.get_definition, func_ir, var)
        if isinstance(d, ir.Arg):
            return f"'{name}', a variable the kernel captures (a kernel argument)"
        if not isinstance(d, (ir.Const, ir.Global, ir.FreeVar)):
            return f"'{name}', a variable of the kernel computed when it runs"
    return None


def _global_reads(code: pytypes.CodeType, glbls: dict[str, Any], spec: LiftSpec) -> str | None:
    """A global a nested function reads that is a kernel argument (or a helper reading some)."""
    for c in nested_codes(code):
        for ins in dis.get_instructions(c):
            if ins.opname != "LOAD_GLOBAL":
                continue
            name = ins.argval
            if (name, "global") in spec.own:
                return f"'{name}', which the kernel receives as an argument"
            if id(glbls.get(name)) in spec.calls:
                return (f"'{name}', a function that reads global or closure variables (kernel "
                        "arguments)")
    return None


def read_params_once(func_ir: ir.FunctionIR, names: tuple[str, ...]) -> None:
    """Make every read of parameter ``k`` a copy of one variable named ``names[k]``.

    Numba's own IR reads a parameter as ``x = arg(k, name=x)``, and its dead-code
    elimination (``ir_utils.remove_dead``, run after any inlining) keeps a store
    ``v[i] = ...`` only when ``v`` is live or an alias of a parameter *by that name*.
    A lifted capture read as ``$t = arg(k)`` is neither. So each parameter is read once,
    at the top of the entry block, into the variable of its name, and the other reads
    become copies of it (aliases of the parameter).
    """
    entry = func_ir.blocks[min(func_ir.blocks)]
    params: dict[int, ir.Var] = {}
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Arg)
                    and stmt.target.name != names[stmt.value.index]):
                k = stmt.value.index
                var = params.get(k)
                if var is None:
                    var = params[k] = ir.Var(entry.scope, names[k], stmt.value.loc)
                stmt.value = var
    entry.body[:0] = [ir.Assign(ir.Arg(name=names[k], index=k, loc=var.loc), var, var.loc)
                      for k, var in sorted(params.items())]
