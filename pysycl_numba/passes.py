"""Numba compiler passes of the pysycl pipelines.

* :class:`LiftCaptures` -- turns the kernel's captured variables into kernel
  parameters. Numba freezes closure cells (``ir.FreeVar``) and globals
  (``ir.Global``) as compile-time constants; a kernel compiled that way would
  have to be recompiled for every buffer and every scalar value. This pass
  rewrites each load of a captured name into an ``ir.Arg`` read of a new trailing
  parameter: the function is typed with the captures' *types*; values are arguments.
* (:mod:`pysycl_numba.reject` reports Python that cannot run on a device.)
* :class:`ValidateTypedKernel` -- after type inference: writes through read
  accessors and read-only USM pointers, recursion, and the optional device aspects the code needs.
* :class:`FindDirectIndexing` -- after type inference: which accessor
  dimensions every work-item indexes with its own id (the launcher's static
  bounds check, ``CompiledKernel.direct_index``).
"""

from __future__ import annotations

import inspect
import types as pytypes
from typing import TYPE_CHECKING, Any

from pysycl._core.abi import ID_GLOBAL, ID_LOCAL
from pysycl._core.exceptions import errc
from pysycl._kernels.kernel_api import atomic_ref
from pysycl_numba._numba_compat import (
    AnalysisPass,
    FunctionPass,
    compute_cfg_from_blocks,
    ir,
    ir_utils,
    register_pass,
    types,
)
from pysycl_numba.bounds import site_number
from pysycl_numba.errors import KernelSourceError
from pysycl_numba.lift import LIFTED_DEFAULT, LiftSpec
from pysycl_numba.nested import check_escaping, read_params_once
from pysycl_numba.overloads.integers import literal_overflow
from pysycl_numba.types import (
    AccessorType,
    AtomicRefType,
    ElementReducerType,
    GlobalPointer,
    IdType,
    ItemType,
    MultiPtrType,
    NdItemType,
    PrivateArrayType,
    RangeType,
    SpanReducerType,
    USMPointerType,
)
from pysycl_numba.vec_types import VecType

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import StateDict


@register_pass(mutates_CFG=False, analysis_only=False)
class LiftCaptures(FunctionPass):
    """Rewrite loads of captured names into reads of trailing parameters.

    Reads ``state.pysycl_lift`` (a :class:`LiftSpec`). Parameter
    ``len(params) + j`` is ``names[j]``, so the typed signature is
    ``(*param_types, *capture_types)`` -- for a kernel, in capture order, the
    order of the flat OpenCL arguments. Calls of helper functions that read
    captures themselves get those captures as hidden keyword arguments.
    """

    _name = "pysycl_lift_captures"

    def __init__(self) -> None:
        FunctionPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Rewrite ``state.func_ir`` in place."""
        spec: LiftSpec = state.pysycl_lift
        func_ir = state.func_ir
        first = func_ir.arg_count
        names = tuple(func_ir.arg_names) + spec.names
        changed = False
        defs: dict[str, Any] = {}  # variable -> the value it was assigned (single assignments)
        helper_vars: dict[str, tuple[int, ...]] = {}
        helper_names: dict[str, str] = {}
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if not isinstance(stmt, ir.Assign):
                    continue
                value = stmt.value
                if isinstance(value, ir.Arg) and value.index < first \
                        and state.args[value.index] is LIFTED_DEFAULT:
                    value = stmt.value = self._read_default(state, spec, value, first, names)
                    if isinstance(value, ir.Arg):
                        changed = True
                        continue
                if isinstance(value, (ir.FreeVar, ir.Global)):
                    kind = "freevar" if isinstance(value, ir.FreeVar) else "global"
                    pos = spec.own.get((value.name, kind))
                    if pos is not None:
                        stmt.value = ir.Arg(name=names[first + pos], index=first + pos,
                                            loc=value.loc)
                        changed = True
                        continue
                    target = value.value
                elif (isinstance(value, ir.Expr) and value.op == "getattr"
                      and isinstance(defs.get(value.value.name), pytypes.ModuleType)):
                    target = getattr(defs[value.value.name], value.attr, None)  # mod.helper
                else:
                    continue
                defs[stmt.target.name] = target
                call = spec.calls.get(id(target))
                if call is not None:
                    disp, passed = call
                    stmt.value = ir.Global(getattr(target, "__name__", "helper"), disp,
                                           stmt.loc)
                    helper_vars[stmt.target.name] = passed
                    helper_names[stmt.target.name] = getattr(target, "__qualname__", "helper")
                    changed = True
        if helper_vars:
            self._check_only_called(func_ir, helper_vars, helper_names)
            self._pass_hidden(func_ir, first, names, helper_vars)
        read_params_once(func_ir, names)
        # The definitions table still maps each rewritten variable to the
        # ir.FreeVar/ir.Global (with the value of the first compile): Numba's
        # dead-branch pruning reads it, and would fold `if captured_flag:` to
        # that value for every later launch. Rebuild it from the rewritten IR.
        func_ir._definitions = ir_utils.build_definitions(func_ir.blocks)
        check_escaping(func_ir, spec)
        func_ir.arg_names = names
        func_ir.arg_count = first + len(spec.names)
        # Numba's FixupArgs checks len(args) against this count.
        state.nargs = func_ir.arg_count
        return changed or bool(spec.names)

    @staticmethod
    def _read_default(state: StateDict, spec: LiftSpec, arg: ir.Arg, first: int,
                      names: tuple[str, ...]) -> ir.Arg | ir.Global:
        """What a left-out parameter reads instead of Numba's frozen ``Omitted`` default.

        A default that is a kernel argument: that trailing parameter; a function:
        the function, as a global (a helper call then passes its hidden arguments).
        """
        pos = spec.own.get((arg.name, "default"))
        if pos is not None:
            return ir.Arg(name=names[first + pos], index=first + pos, loc=arg.loc)
        default = inspect.signature(state.func_id.func).parameters[arg.name].default
        return ir.Global(arg.name, default, arg.loc)

    @staticmethod
    def _check_only_called(func_ir: ir.FunctionIR, helper_vars: dict[str, tuple[int, ...]],
                           helper_names: dict[str, str]) -> None:
        """A helper with hidden parameters can be called, not passed around as a value."""
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if isinstance(stmt, ir.Assign) and stmt.target.name in helper_vars:
                    continue  # its definition
                called = (stmt.value.func.name if isinstance(stmt, ir.Assign)
                          and isinstance(stmt.value, ir.Expr) and stmt.value.op == "call"
                          else None)
                for var in stmt.list_vars():
                    if (helper_vars.get(var.name) and var.name != called
                            and not (isinstance(stmt, ir.Assign) and stmt.target is var)):
                        raise KernelSourceError(
                            f"function {helper_names[var.name]} reads captured variables "
                            "(closure variables or globals, which are kernel arguments), so a "
                            "kernel can only call it directly, not pass it as a value; call "
                            "it, or pass the values it needs as arguments", stmt.loc)

    @staticmethod
    def _pass_hidden(func_ir: ir.FunctionIR, first: int, names: tuple[str, ...],
                     helper_vars: dict[str, tuple[int, ...]]) -> None:
        """Add the hidden keyword arguments to every call of a rewritten helper."""
        entry = func_ir.blocks[min(func_ir.blocks)]
        scope = entry.scope
        loc = func_ir.loc
        params: dict[int, ir.Var] = {}
        for block in func_ir.blocks.values():
            for stmt in block.body:
                if not (isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr)
                        and stmt.value.op == "call"):
                    continue
                passed = helper_vars.get(stmt.value.func.name)
                if passed is None:
                    continue
                if stmt.value.vararg is not None and passed:
                    raise KernelSourceError(
                        "a function that reads captured variables cannot be called with "
                        "*args; pass its arguments one by one", stmt.loc)
                # Numba passes keyword-only parameters as the last positional
                # arguments (typing.templates.fold_arguments).
                args = list(stmt.value.args)
                for pos in passed:
                    var = params.get(pos)
                    if var is None:
                        var = params[pos] = scope.redefine(f"$pysycl_hidden{pos}", loc)
                    args.append(var)
                stmt.value.args = args
        # Read each passed parameter once, at the top of the function.
        entry.body[:0] = [ir.Assign(ir.Arg(name=names[first + pos], index=first + pos, loc=loc),
                                    var, loc) for pos, var in sorted(params.items())]


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
        elif isinstance(t, (SpanReducerType, ElementReducerType)):
            if t.dtype.bitwidth == 64:  # its combines are 64-bit compare-exchange loops
                out.add("atomic64")
            stack.append(t.dtype)
        elif isinstance(t, (AccessorType, GlobalPointer, USMPointerType)):
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

    def run_pass(self, state: StateDict) -> bool:
        """Raise on read-only writes and recursion; collect aspects."""
        typemap = state.typemap
        for block in state.func_ir.blocks.values():
            for stmt in block.body:
                self._check_write(stmt, typemap, state.func_ir)
                _check_constant_index(stmt, typemap, state.func_ir)
                _check_unpack(stmt, typemap)
                if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
                    if stmt.value.op == "call":
                        self._check_recursive_call(stmt, typemap)
                    why = literal_overflow(stmt.value, typemap)
                    if why is not None:
                        raise KernelSourceError(why, stmt.loc)
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
    def _check_write(stmt: ir.Stmt, typemap: dict, func_ir: ir.FunctionIR) -> None:
        target = None
        what = "write through"
        if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
            target = stmt.target
        elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
            e = stmt.value
            if e.op == "getattr" and e.attr == "__setitem__":
                target = e.value
            elif e.op == "call" and e.args \
                    and getattr(typemap.get(e.func.name), "typing_key", None) is atomic_ref:
                target, what = e.args[0], "make a sycl.atomic_ref to"
        if target is None:
            return
        ty = typemap.get(target.name)
        name = f"the read-only accessor '{_user_name(target, func_ir)}'"
        if isinstance(ty, MultiPtrType):  # p = acc.get_multi_ptr(): the accessor's rules
            ty, name = ty.acc, f"'{_user_name(target, func_ir)}', a read-only accessor's multi_ptr"
        if isinstance(ty, AccessorType) and not ty.writable:
            raise KernelSourceError(
                f"cannot write through {name}; request it with sycl.access_mode.write or "
                "read_write",
                stmt.loc,
            )
        if isinstance(ty, USMPointerType) and ty.readonly:
            raise KernelSourceError(
                f"cannot {what} the read-only USM pointer '{_user_name(target, func_ir)}': it "
                "points at read-only memory (a numpy array with flags.writeable False, or a "
                "lookup table); store into an accessor or a sycl.malloc_* pointer", stmt.loc)

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


def _check_constant_index(stmt: ir.Stmt, typemap: dict, func_ir: ir.FunctionIR) -> None:
    """Reject a constant index outside a vector or a private array (``v[7]`` of a ``float4``,
    ``t[-1]``): it would read or write past the value unchecked, where the host_debuggable
    device raises ``IndexError``. SYCL indices do not wrap around."""
    if isinstance(stmt, (ir.SetItem, ir.StaticSetItem)):
        target, index = stmt.target, stmt.index
    elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) \
            and stmt.value.op in ("getitem", "static_getitem"):
        target, index = stmt.value.value, stmt.value.index
    else:
        return
    ty = typemap.get(target.name)
    if isinstance(ty, VecType):
        shape, what = (ty.n,), f"a {ty.n}-element vector"
    elif isinstance(ty, PrivateArrayType):
        shape, what = ty.shape or (ty.size,), f"a private array of shape {ty.shape or ty.size}"
    else:
        return
    k = _const(index, func_ir)
    ks = k if isinstance(k, tuple) else (k,)
    for d, (v, n) in enumerate(zip(ks, shape, strict=False)):
        if isinstance(v, int) and not 0 <= v < n:
            raise KernelSourceError(
                f"index {v} is out of bounds for dimension {d} of {what} ({_user_name(target, func_ir)}"
                f"); valid indices are 0 to {n - 1} (SYCL indices do not wrap around)",
                stmt.loc, errc.kernel)


def _check_unpack(stmt: ir.Stmt, typemap: dict) -> None:
    """``i, j = it.get_id()``: an id or range unpacks into exactly its dimensions (Numba
    checks tuples at typing, other iterables only when the kernel runs)."""
    if isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr) \
            and stmt.value.op == "exhaust_iter":
        ty = typemap.get(stmt.value.value.name)
        if isinstance(ty, (IdType, RangeType)) and stmt.value.count != ty.ndim:
            raise KernelSourceError(
                f"cannot unpack a {ty} into {stmt.value.count} names: it has {ty.ndim} "
                "components", stmt.loc, errc.kernel)


def _assigned(func_ir: ir.FunctionIR, name: str) -> ir.AbstractRHS | None:
    """The value assigned to variable ``name`` (a temporary is assigned once), or None."""
    for block in func_ir.blocks.values():
        for stmt in block.body:
            if isinstance(stmt, ir.Assign) and stmt.target.name == name:
                return stmt.value
    return None


def _user_name(var: ir.Var, func_ir: ir.FunctionIR) -> str:
    """The name the user wrote for ``var`` (Numba names its temporaries ``$6load_deref.0``).

    A temporary is followed to what it was loaded from: a captured variable
    (a parameter after capture lifting), a closure cell or global, a user's
    variable, or an attribute of one.
    """
    for _ in range(16):
        name = var.name
        value = _assigned(func_ir, name)
        if isinstance(value, (ir.Arg, ir.FreeVar, ir.Global)):
            return value.name
        if not name.startswith("$"):
            return name.split(".")[0]  # the user's variable, in Numba's versioned form
        if isinstance(value, ir.Var):
            var = value
            continue
        if isinstance(value, ir.Expr) and value.op == "getattr":
            return f"{_user_name(value.value, func_ir)}.{value.attr}"
        break
    return "an expression's result"


def _first_loc(func_ir: ir.FunctionIR) -> ir.Loc:
    return func_ir.loc


# ------------------------------------------------------------ direct indexing
#: Methods of the kernel's item / nd_item that return its own ids, and which ids.
_ID_METHODS = {"get_id": ID_GLOBAL, "get_global_id": ID_GLOBAL, "get_local_id": ID_LOCAL}
_LINEAR_ID_METHODS = {"get_linear_id": ID_GLOBAL, "get_global_linear_id": ID_GLOBAL,
                      "get_local_linear_id": ID_LOCAL}

Dim = tuple[int, int] | None  # (ID_GLOBAL or ID_LOCAL, launch dimension), or not an id


@register_pass(mutates_CFG=False, analysis_only=True)
class FindDirectIndexing(AnalysisPass):
    """Record the accessor dimensions every work-item indexes with its own id.

    Sets ``state.pysycl_direct_index`` to ``CompiledKernel.direct_index``: an
    access counts when the accessor is a capture, the index (or one of its
    components) is the work-item's id exactly as the kernel received it
    (``acc[i]``, ``acc[it]``, ``acc[it[0], it[1]]``, ``acc[it.get_global_id(0)]``,
    ``tmp[it.get_local_id(0)]``), and the statement lies on every path through
    the kernel (a guarded ``if i < n: acc[i] = ...`` does not count). Helper
    functions are not looked into. What is recorded is certain to be executed
    by every work-item, so a launch range larger than such an accessor is
    certain to index outside it.
    """

    _name = "pysycl_find_direct_indexing"

    def __init__(self) -> None:
        AnalysisPass.__init__(self)

    def run_pass(self, state: StateDict) -> bool:
        """Compute ``state.pysycl_direct_index``."""
        state.pysycl_direct_index = ()
        index = getattr(state, "pysycl_index", None)
        if index is None or index.kind == "single_task":
            return False
        func_ir, typemap = state.func_ir, state.typemap
        ncap = len(state.pysycl_captures)
        first = func_ir.arg_count - ncap
        everyone = compute_cfg_from_blocks(func_ir.blocks).backbone()
        found: dict[tuple[int, int, int, int], tuple[int, ir.Loc]] = {}  # the first line
        for label in sorted(everyone):
            for stmt in func_ir.blocks[label].body:
                access = _access(stmt, func_ir, typemap)
                if access is None:
                    continue
                acc, idx = access
                defn = ir_utils.guard(func_ir.get_definition, acc)
                if not isinstance(defn, ir.Arg) or not first <= defn.index < first + ncap:
                    continue
                accty = typemap[acc.name]
                for ad, dim in enumerate(_index_dims(idx, accty.ndim, func_ir, typemap)):
                    if dim is not None:
                        key = (defn.index - first, ad, dim[0], dim[1])
                        at = (stmt.loc.line or 0, stmt.loc)
                        found[key] = min(found.get(key, at), at, key=lambda a: a[0])
        state.pysycl_direct_index = tuple(sorted((*k, site_number(at[1]))
                                                 for k, at in found.items()))
        return False


def _access(stmt: ir.Stmt, func_ir: ir.FunctionIR, typemap: dict) -> tuple[ir.Var, ir.Var] | None:
    """(accessor variable, index variable) of an element access statement."""
    if isinstance(stmt, ir.SetItem):
        acc, idx = stmt.target, stmt.index
    elif isinstance(stmt, ir.Assign) and isinstance(stmt.value, ir.Expr):
        e = stmt.value
        if e.op == "getitem":
            acc, idx = e.value, e.index
        elif e.op == "call" and e.args:
            fdef = ir_utils.guard(func_ir.get_definition, e.func)
            if isinstance(fdef, ir.Expr) and fdef.op == "getattr" \
                    and fdef.attr in ("__getitem__", "__setitem__"):
                acc, idx = fdef.value, e.args[0]
            elif getattr(typemap.get(e.func.name), "typing_key", None) is atomic_ref \
                    and len(e.args) >= 2:
                acc, idx = e.args[0], e.args[1]
            else:
                return None
        else:
            return None
    else:
        return None
    if not isinstance(typemap.get(acc.name), AccessorType) or not isinstance(idx, ir.Var):
        return None
    return acc, idx


def _is_id_param(var: ir.Var, func_ir: ir.FunctionIR, typemap: dict) -> bool:
    """Whether ``var`` is the kernel's item / nd_item parameter itself."""
    defn = ir_utils.guard(func_ir.get_definition, var)
    return isinstance(defn, ir.Arg) and defn.index == 0 \
        and isinstance(typemap.get(var.name), (ItemType, NdItemType))


def _const(var: Any, func_ir: ir.FunctionIR) -> Any:
    return ir_utils.guard(ir_utils.find_const, func_ir, var) if isinstance(var, ir.Var) else var


def _id_call(defn: ir.AbstractRHS | None, func_ir: ir.FunctionIR, typemap: dict,
             ) -> tuple[str, ir.Var, list[ir.Var]] | None:
    """(method, receiver, args) of a call of a method of the kernel's item/nd_item."""
    if not (isinstance(defn, ir.Expr) and defn.op == "call"):
        return None
    fdef = ir_utils.guard(func_ir.get_definition, defn.func)
    if isinstance(fdef, ir.Expr) and fdef.op == "getattr" \
            and _is_id_param(fdef.value, func_ir, typemap):
        return fdef.attr, fdef.value, list(defn.args)
    return None


def _id_tuple(var: ir.Var, func_ir: ir.FunctionIR, typemap: dict) -> list[Dim] | None:
    """The dims of an id tuple: the item itself, ``it.get_id()``, ``it.get_global_id()``."""
    if _is_id_param(var, func_ir, typemap):
        ty = typemap[var.name]
        return [(ID_GLOBAL, d) for d in range(ty.ndim)] if isinstance(ty, ItemType) else None
    defn = ir_utils.guard(func_ir.get_definition, var)
    if isinstance(defn, ir.Expr) and defn.op == "exhaust_iter":
        return _id_tuple(defn.value, func_ir, typemap)
    call = _id_call(defn, func_ir, typemap)
    if call is not None and call[0] in _ID_METHODS and not call[2]:
        ndim = typemap[call[1].name].ndim
        return [(_ID_METHODS[call[0]], d) for d in range(ndim)]
    return None


def _scalar_dim(var: ir.Var, func_ir: ir.FunctionIR, typemap: dict) -> Dim:
    """The id dimension a scalar index is, exactly, or None."""
    if _is_id_param(var, func_ir, typemap):
        ty = typemap[var.name]
        return (ID_GLOBAL, 0) if isinstance(ty, ItemType) and ty.ndim == 1 else None
    defn = ir_utils.guard(func_ir.get_definition, var)
    if not isinstance(defn, ir.Expr):
        return None
    if defn.op in ("static_getitem", "getitem"):
        k = defn.index if defn.op == "static_getitem" else _const(defn.index, func_ir)
        dims = _id_tuple(defn.value, func_ir, typemap)
        if dims is not None and isinstance(k, int) and 0 <= k < len(dims):
            return dims[k]
        return None
    call = _id_call(defn, func_ir, typemap)
    if call is None:
        return None
    method, recv, args = call
    ndim = typemap[recv.name].ndim
    if method in _ID_METHODS and len(args) == 1:
        d = _const(args[0], func_ir)
        return (_ID_METHODS[method], d) if isinstance(d, int) and 0 <= d < ndim else None
    if method in _LINEAR_ID_METHODS and not args and ndim == 1:
        return (_LINEAR_ID_METHODS[method], 0)
    return None


def _index_dims(idx: ir.Var, ndim: int, func_ir: ir.FunctionIR, typemap: dict) -> list[Dim]:
    """Per accessor dimension, the id dimension its index component is, or None."""
    whole = _id_tuple(idx, func_ir, typemap)
    if whole is not None:
        return whole if len(whole) == ndim else [None] * ndim
    defn = ir_utils.guard(func_ir.get_definition, idx)
    if isinstance(defn, ir.Expr) and defn.op == "build_tuple":
        if len(defn.items) != ndim:
            return [None] * ndim
        return [_scalar_dim(v, func_ir, typemap) for v in defn.items]
    return [_scalar_dim(idx, func_ir, typemap)] if ndim == 1 else [None] * ndim
