"""The compiler driver: :func:`compile_kernel`.

A kernel compile: the kernel's parameter types (item, reducers,
kernel_handler) and capture types; its helpers' hidden parameters
(:func:`lift_specs`); the kernel pipeline (:mod:`pysycl_numba.pipelines`);
the reductions' epilogues; the ``spir_kernel`` entry point
(:mod:`pysycl_numba.wrapper`); then link -> O3 -> IR guard -> SPIR-V
(:mod:`pysycl_numba.targets.spirv.codegen`).
"""

from __future__ import annotations

import dis
import logging
import re
import time
from collections.abc import Callable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

from llvmlite import ir as llir

from pysycl._core.abi import (
    FUNCTOR_ATTR,
    PROPS_ATTR,
    Capture,
    CompiledKernel,
    IndexSpace,
    PointerType,
    PrintType,
    ReductionType,
    SameAsType,
    ScalarType,
    SpecConstantType,
    StreamType,
    TupleType,
    single_pass_reduction,
    source_location,
)
from pysycl._core.abi import (
    AccessorType as AbiAccessor,
)
from pysycl._core.exceptions import errc, exception, kernel_compile_error, kernel_signature_error
from pysycl._core.launch_types import Target
from pysycl._core.sites import Site, code_table, site_of
from pysycl._core.vec_layout import vec_parts
from pysycl._core.where import location
from pysycl_numba._numba_compat import errors, global_compiler_lock, target_override, types
from pysycl_numba.asserts import AssertTable, ends_work_item, synchronizes_group
from pysycl_numba.asserts import table as asserts_table
from pysycl_numba.bounds import Sites, sites
from pysycl_numba.dispatcher import LiftedDispatcher, compile_scope
from pysycl_numba.epilogue import compile_epilogue, compile_fold, compile_last
from pysycl_numba.errors import CompilerDiagnostic, KernelSourceError, from_numba_error
from pysycl_numba.hier_types import HierGroupType
from pysycl_numba.lift import LiftSpec, hidden_kw
from pysycl_numba.looped import compile_looped, may_loop
from pysycl_numba.passes import needed_aspects
from pysycl_numba.pipelines import KernelPipeline, flags
from pysycl_numba.reduction_entry import build_reduction_wrapper
from pysycl_numba.stream_types import StreamBufferType
from pysycl_numba.target import TARGET_NAME, sycl_target
from pysycl_numba.targets.ptx.emit import emit_ptx
from pysycl_numba.targets.ptx.mma import ptx_arch, ptx_whole_warps
from pysycl_numba.targets.spirv.codegen import SPIRVCodeLibrary, emit_spirv, optimised_ir
from pysycl_numba.types import (
    AccessorType,
    ItemType,
    KernelHandlerType,
    NdItemType,
    PrintBufferType,
    ReducerType,
    SpanReducerType,
    SpecConstRefType,
    USMPointerType,
    numba_type_of_dtype,
)
from pysycl_numba.vec_types import VecType
from pysycl_numba.wrapper import build_kernel_wrapper

if TYPE_CHECKING:
    import numpy as np

    from pysycl._core.abi import CaptureType
    from pysycl_numba._numba_compat import CompileResult
    from pysycl_numba.target import SYCLTargetContext

_log = logging.getLogger("pysycl_numba.compiler")

_FP_TYPES = {"double": "fp64", "half": "fp16"}


def _hidden_of(g: int, helpers: Sequence[tuple[Callable[..., Any], tuple[int, ...]]],
               owners: dict[int, list[int]]) -> list[int]:
    """The captures helper ``g`` needs: its own and those of everything it calls."""
    out: list[int] = []
    seen = {0}
    stack = [g]
    while stack:
        n = stack.pop(0)
        if n in seen:
            continue
        seen.add(n)
        out.extend(owners.get(n, ()))
        stack.extend(helpers[n][1])
    return out


def _py_func(f: Callable[..., Any]) -> Callable[..., Any]:
    return getattr(f, "py_func", f)


def lift_specs(captures: tuple[Capture, ...],
               helpers: Sequence[tuple[Callable[..., Any], tuple[int, ...]]],
               ) -> tuple[LiftSpec, dict[Callable[..., Any], LiftedDispatcher]]:
    """The kernel's :class:`LiftSpec` and the dispatchers of its helpers (by Python function).

    ``helpers`` is the call graph (``pysycl._kernels.captures.call_graph``): entry ``k``
    is ``(function, entries it references)``, entry 0 the kernel; captures
    with ``owner == k`` are what helper ``k`` reads. Helper ``k`` gets hidden
    parameters for its captures and those of every helper it calls; each call
    passes them on from the caller's own parameters.
    """
    for c in captures:
        if c.owner and not 0 < c.owner < len(helpers):
            raise kernel_compile_error(errc.kernel, f"capture {c.name!r} belongs to function "
                                       f"#{c.owner}, but the kernel calls {len(helpers) - 1}")
    owners: dict[int, list[int]] = {}
    for i, c in enumerate(captures):
        owners.setdefault(c.owner, []).append(i)
    hidden = {g: _hidden_of(g, helpers, owners) for g in range(1, len(helpers))}
    specs: dict[int, LiftSpec] = {}
    disps: dict[int, LiftedDispatcher] = {}
    for g in range(1, len(helpers)):
        specs[g] = LiftSpec(names=tuple(hidden_kw(j) for j in range(len(hidden[g]))),
                            own={(captures[c].name, captures[c].source): j
                                 for j, c in enumerate(hidden[g]) if captures[c].owner == g})
        disps[g] = LiftedDispatcher(_py_func(helpers[g][0]), specs[g], len(hidden[g]))
    for g in range(1, len(helpers)):
        specs[g].calls.update(
            (id(helpers[e][0]), (disps[e], tuple(hidden[g].index(c) for c in hidden[e])))
            for e in helpers[g][1] if e)
    kernel = LiftSpec(
        names=tuple(c.name if not c.owner else f"_pysycl_c{i}_{c.name}"
                    for i, c in enumerate(captures)),
        own={(c.name, c.source): i for i, c in enumerate(captures) if not c.owner},
        calls={id(helpers[e][0]): (disps[e], tuple(hidden[e]))
               for e in (helpers[0][1] if helpers else ()) if e})
    return kernel, {_py_func(helpers[g][0]): disps[g] for g in disps}


def _element_type(dt: np.dtype) -> types.Type:
    """The Numba type of an accessor's element: a scalar, or a ``sycl::vec`` (an LLVM
    ``<N x T>``, as large as the record dtype of :mod:`pysycl._core.vec_layout`)."""
    parts = vec_parts(dt)
    if parts is None:
        return numba_type_of_dtype(dt)
    return VecType(numba_type_of_dtype(parts[0]), parts[1])


def capture_numba_type(capture: Capture, bounds_check: bool = False) -> types.Type:
    """The Numba type a capture is typed with inside the kernel."""
    ct = capture.type
    if isinstance(ct, AbiAccessor):
        if not 1 <= ct.ndim <= 3:
            raise kernel_compile_error(
                errc.kernel, f"accessor '{capture.name}' has {ct.ndim} dimensions; 1 to 3 allowed"
            )
        return AccessorType(_element_type(ct.dtype), ct.ndim, ct.mode, ct.space,
                            checked=bounds_check, shape=ct.shape)
    if isinstance(ct, ScalarType):
        return numba_type_of_dtype(ct.dtype)
    if isinstance(ct, PrintType):  # the builtin print: its output buffer
        return PrintBufferType()
    if isinstance(ct, StreamType):  # a sycl.stream: its output buffer
        return StreamBufferType()
    if isinstance(ct, PointerType):  # never bounds-checked: a pointer has no range
        return USMPointerType(numba_type_of_dtype(ct.dtype), ct.readonly)
    if isinstance(ct, TupleType):
        return _tuple_numba_type(ct)
    raise kernel_compile_error(
        errc.kernel, f"capture '{capture.name}' has an unsupported type {ct!r}"
    )


def capture_numba_types(captures: Sequence[Capture], bounds_check: bool) -> list[types.Type]:
    """Numba types of the captures; specialization ids are numbered 0.. in order.

    A ``sycl.specialization_id`` becomes ``SpecConstRefType(k, dtype, default)``,
    a tag with no OpenCL argument (``kh.get_specialization_constant``).
    """
    out: list[types.Type] = []
    k = 0
    for c in captures:
        if isinstance(c.type, SpecConstantType):
            out.append(SpecConstRefType(k, numba_type_of_dtype(c.type.dtype), c.type.default))
            k += 1
        elif isinstance(c.type, SameAsType):  # the object of an earlier capture
            out.append(out[c.type.index])
        else:
            out.append(capture_numba_type(c, bounds_check))
    return out


def reducer_type(rt: ReductionType, combiner: Callable[..., Any]
                 ) -> ReducerType | SpanReducerType:
    """The Numba type of the kernel parameter of reduction ``rt``."""
    make = SpanReducerType if rt.span else ReducerType
    return make(numba_type_of_dtype(rt.dtype), rt.op, combiner)


def _tuple_numba_type(ct: TupleType) -> types.Type:
    return types.Tuple([_tuple_numba_type(e) if isinstance(e, TupleType)
                        else numba_type_of_dtype(e.dtype) for e in ct.elements])


def _index_arg_types(index: IndexSpace, name: str) -> list[types.Type]:
    if index.kind == "range":
        if not 1 <= index.ndim <= 3:
            raise exception(errc.nd_range, f"kernel '{name}': a range has 1 to 3 dimensions")
        return [ItemType(index.ndim)]
    if index.kind == "single_task":
        return []
    if index.kind == "nd_range":
        if not 1 <= index.ndim <= 3:
            raise exception(errc.nd_range, f"kernel '{name}': an nd_range has 1 to 3 dimensions")
        return [NdItemType(index.ndim, index.looped)]
    if index.kind == "hierarchical":
        if not 1 <= index.ndim <= 3:
            raise exception(errc.nd_range, f"kernel '{name}': work-groups have 1 to 3 dimensions")
        return [HierGroupType(index.ndim)]
    raise exception(
        errc.feature_not_supported,
        f"kernel '{name}': {index.kind} kernels are not supported by the compiler yet",
    )


def _kernel_param_types(
    pyfunc: Callable[..., Any], index: IndexSpace,
    reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...], name: str, where: str,
) -> tuple[list[types.Type], list[ReducerType | SpanReducerType]]:
    """The kernel's own parameters (the item, a reducer per reduction, a kernel_handler), the reducers."""
    argtypes = _index_arg_types(index, name)
    reducers = [reducer_type(rt, comb) for rt, comb in reductions]
    if reducers and index.kind == "single_task":
        raise kernel_compile_error(errc.invalid, f"kernel '{name}' ({where}): a single_task "
                                   "has no reductions; use parallel_for")
    argtypes += reducers
    if _own_argcount(pyfunc) == len(argtypes) + 1:  # a trailing kernel_handler
        if reducers:
            raise kernel_compile_error(
                errc.feature_not_supported,
                f"kernel '{name}' ({where}): a kernel with sycl.reduction parameters cannot "
                "take a sycl.kernel_handler yet; read the specialization constant in a kernel "
                "without reductions")
        argtypes.append(KernelHandlerType())
    _check_arity(pyfunc, len(argtypes), index, name)
    _check_work_group_use(pyfunc, index, name)
    return argtypes, reducers


def _check_arity(pyfunc: Callable[..., Any], nparams: int, index: IndexSpace, name: str) -> None:
    code = pyfunc.__code__
    if _own_argcount(pyfunc) != nparams or code.co_kwonlyargcount or code.co_flags & 0x0C:
        what = "one parameter (the work-item)" if nparams == 1 else (
            "no parameters" if nparams == 0 else
            f"{nparams} parameters (the work-item and one reducer per sycl.reduction)")
        raise kernel_compile_error(
            errc.kernel,
            f"kernel '{name}' ({source_location(pyfunc)}): a {index.kind} kernel takes {what}; "
            f"it has {_own_argcount(pyfunc)}",
        )


def _own_argcount(pyfunc: Callable[..., Any]) -> int:
    """The kernel's parameters, without a function object's ``self``."""
    return int(pyfunc.__code__.co_argcount) - bool(getattr(pyfunc, FUNCTOR_ATTR, False))


#: Names that only make sense with work-groups (an nd_range kernel).
_WORK_GROUP_NAMES = frozenset((
    "group_barrier", "group_broadcast", "reduce_over_group", "any_of_group", "all_of_group",
    "none_of_group", "get_group", "get_sub_group", "barrier", "get_local_id",
    "get_local_linear_id", "get_local_range", "get_group_linear_id", "get_group_range",
    "get_global_id", "get_global_linear_id", "get_nd_range",
))
#: Methods an nd_range has too: a kernel that builds one (sycl.nd_range(...)) may call them.
_ND_RANGE_METHODS = frozenset(("get_local_range", "get_group_range"))


def _check_work_group_use(pyfunc: Callable[..., Any], index: IndexSpace, name: str) -> None:
    """A ``range``/``single_task`` kernel has no work-groups: say so at the line that asks."""
    if index.kind in ("nd_range", "hierarchical"):
        return
    code = pyfunc.__code__
    names = _WORK_GROUP_NAMES - _ND_RANGE_METHODS if "nd_range" in code.co_names \
        else _WORK_GROUP_NAMES
    if not names.intersection(code.co_names):
        return
    for ins in dis.get_instructions(code):
        if ins.opname in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_GLOBAL") and ins.argval in names:
            line = ins.positions.lineno if ins.positions else code.co_firstlineno
            raise kernel_compile_error(
                errc.kernel,
                f"cannot compile kernel '{name}' (defined at {source_location(pyfunc)}): "
                f"{location(code.co_filename, line)}: {ins.argval} needs work-groups, which only an "
                f"nd_range kernel has; this is a {index.kind} kernel. Launch it with "
                "h.parallel_for(sycl.nd_range(global_range, local_range), kernel) -- the kernel "
                "then receives a sycl.nd_item (it.get_group(), it.barrier(), ...)")


def _aspects_from_ir(ir_text: str) -> set[str]:
    found = set()
    for token, aspect in _FP_TYPES.items():
        if f" {token}" in ir_text or f"({token}" in ir_text:
            found.add(aspect)
    return found


def _compile_failure(name: str, where: str, e: BaseException,
                     ) -> kernel_compile_error | kernel_signature_error:
    """The user's error for compiler exception ``e``, chained to a :class:`CompilerDiagnostic`."""
    err = from_numba_error(name, where, e)
    text = e.message if isinstance(e, KernelSourceError) else str(e)
    _log.debug("kernel %s (%s) failed to compile; the compiler said:\n%s", name, where, text)
    cause = CompilerDiagnostic(text)
    cause.__suppress_context__ = True
    err.__cause__ = cause
    err.__suppress_context__ = True
    return err


# long: its docstring is the runtime/compiler contract; the body is short.
def compile_kernel(
    pyfunc: Callable[..., Any],
    index: IndexSpace,
    captures: tuple[Capture, ...],
    *,
    entry_name: str,
    reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...] = (),
    bounds_check: bool = False,
    helpers: Sequence[tuple[Callable[..., Any], tuple[int, ...]]] = (),
    target: Target | None = None,
    image_format: str = "spirv",
    arch: str = "",
) -> CompiledKernel:
    """Compile a Python kernel to a SPIR-V module (or PTX) with one kernel entry.

    (Past 60 lines only by this docstring: it is the runtime's contract.)

    Args:
        pyfunc: the kernel: a lambda or function taking a ``sycl.item``
            (``range`` kernels) or nothing (``single_task``).
        index: the launch's index space.
        captures: the kernel's captured variables, in kernel-argument order;
            each becomes the flat OpenCL arguments ``pysycl._core.abi``
            describes. Their values are never embedded.
        entry_name: the name of the entry point in the module.
        reductions: ``(type, combiner)`` of each ``sycl.reduction``, in the
            order of the kernel's reducer parameters (which follow the item);
            ``combiner`` is a Python function of two values.
        bounds_check: compile in bounds-checked mode: every accessor access
            is checked and the entry point takes the error buffer as its last
            argument (``pysycl._core.abi``).
        helpers: the kernel's call graph, ``pysycl._kernels.captures.call_graph(pyfunc)``:
            entry ``k`` is ``(function, indices of the entries it references)``
            and entry 0 the kernel. Needed when a capture has ``owner > 0``
            (a helper reads it); each compile compiles the helpers afresh.
        target: the image to produce: ``Target("spirv")`` (the default) or
            ``Target("ptx", "sm_90")`` -- the same lowering, retargeted to NVPTX
            (:mod:`pysycl_numba.targets.ptx`), compiled with the format's own target
            context (``sycl_target.context_for``).
        image_format, arch: the target as two strings, when ``target`` is None (the
            runtime's call until it passes ``target``).

    Returns:
        The compiled kernel (``format`` and ``arch`` those of ``target``).

    Raises:
        pysycl.kernel_signature_error: the kernel returns a value (``errc.invalid``):
            a kernel writes its results through accessors or pointers.
        pysycl.kernel_compile_error: the code cannot run on a device; the
            message names the kernel, the file:line and what to do instead.
        pysycl.exception: ``errc.nd_range`` for an index space of more than
            three dimensions.

    A looped ``index`` (``IndexSpace.looped``) compiles looped where the kernel allows it,
    else as the plain nd_range (:mod:`pysycl_numba.looped`): ``CompiledKernel.index`` says
    which.
    """
    def run(ix: IndexSpace) -> CompiledKernel:
        return _compile(pyfunc, ix, captures, entry_name, reductions, bounds_check, helpers,
                        target or Target(image_format, arch))

    if index.looped:
        return compile_looped(run, index, may_loop(
            pyfunc, captures, [rt for rt, _ in reductions], bounds_check, helpers))
    return run(index)


def _compile(pyfunc: Callable[..., Any], index: IndexSpace, captures: tuple[Capture, ...],
             entry_name: str, reductions: tuple[tuple[ReductionType, Callable[..., Any]], ...],
             bounds_check: bool, helpers: Sequence[tuple[Callable[..., Any], tuple[int, ...]]],
             target: Target) -> CompiledKernel:
    """:func:`compile_kernel` of one index space."""
    name = getattr(pyfunc, "__qualname__", repr(pyfunc))
    where = source_location(pyfunc)
    start = time.perf_counter()
    param_types, reducers = _kernel_param_types(pyfunc, index, reductions, name, where)
    if target.format not in ("spirv", "ptx") or (target.format == "ptx") != bool(target.arch):
        raise ValueError(f"no image format {target.format!r} for architecture {target.arch!r}")
    job = _KernelJob(pyfunc, index, captures, entry_name, bounds_check, param_types, reducers,
                     capture_numba_types(captures, bounds_check), target.arch)
    ctx = sycl_target.context_for(target)  # outside the try: its failure is no kernel's
    failure: kernel_compile_error | kernel_signature_error | None = None
    table = Sites()  # the source locations the kernel refers to (bounds checks, asserts)
    token = sites.set(table)
    asserts = AssertTable()
    tokens = (asserts_table.set(asserts),
              ends_work_item.set(not synchronizes_group(index, helpers or [(pyfunc, ())])))
    try:
        with global_compiler_lock, target_override(TARGET_NAME):
            lift, lifted = lift_specs(captures, helpers)
            with compile_scope(lifted, ctx):  # its helpers lower with ctx too
                binary, ir_text = job.compile(ctx, name, lift)
    except kernel_compile_error:
        raise
    except (KernelSourceError, errors.NumbaError, errors.UnsupportedBytecodeError,
            NotImplementedError, TypeError, ValueError, RuntimeError,
            ImportError) as e:  # ImportError: Numba types np.linalg only with scipy
        failure = _compile_failure(name, where, e)  # keeps no reference to e or its frames
    finally:
        sites.reset(token)
        asserts_table.reset(tokens[0])
        ends_work_item.reset(tokens[1])
    if failure is not None:
        # Raised outside the except block: the traceback is the user's call
        # chain, and the cause is what the compiler said, without its frames.
        raise failure
    _log.debug("compiled kernel %s (%s) in %.3f s", name, entry_name, time.perf_counter() - start)
    return CompiledKernel(
        binary=binary,
        format=target.format,
        arch=target.arch,
        entry=entry_name,
        captures=tuple(captures),
        index=index,
        required_aspects=frozenset(job.aspects(ir_text)),
        source_location=where,
        reductions=tuple(rt for rt, _ in reductions),
        direct_index=job.direct_index,
        bounds_checked=bounds_check,
        sites=_resolved(table, [f for f, _ in helpers] or [pyfunc]),
        asserts=tuple(asserts.entries),
        properties=getattr(pyfunc, PROPS_ATTR, ((), (), 0, 0)),
    )


def strided_blocks(arch: str, index: IndexSpace,
                   reducers: Sequence[ReducerType | SpanReducerType]) -> bool:
    """Whether a range reduction's entry point runs
    :func:`pysycl_numba.reduction_entry.strided_blocks` (PTX, a 1-D range, no span
    reduction; the runtime sizes its launch for it: ``pysycl._kernels.reduction``), not the
    plain loop. A span's combines (atomics, and branches) between the items kept their
    loads scalar, and the blocks only cost registers there (72 against 64 for a sum, a
    maximum and a histogram, sm_90)."""
    return (bool(arch) and (index.kind == "range" or index.looped) and index.ndim == 1
            and not any(isinstance(r, SpanReducerType) for r in reducers))


def _prints(captures: Sequence[Capture]) -> bool:
    """Whether a kernel prints (``print``, ``sycl.stream``): its output is collected per
    work-item, so each of its work-items runs one item (no coarsening)."""
    return any(isinstance(c.type, (PrintType, StreamType)) for c in captures)


def _entry_metadata(module: llir.Module, entry: str,
                    props: tuple[tuple[int, ...], tuple[int, ...], int]) -> None:
    """Kernel properties as the OpenCL kernel metadata LLVM's SPIR-V backend turns into
    execution modes: ``reqd_work_group_size`` -> ``LocalSize``, ``work_group_size_hint`` ->
    ``LocalSizeHint``, ``intel_reqd_sub_group_size`` -> ``SubgroupSize`` (sizes in OpenCL's
    order: SYCL's last dimension first, padded with 1s)."""
    fn = module.get_global(entry)
    i32 = llir.IntType(32)
    for key, dims in (("reqd_work_group_size", props[0]), ("work_group_size_hint", props[1])):
        if dims:
            xyz = list(dims[::-1]) + [1] * (3 - len(dims))
            fn.set_metadata(key, module.add_metadata([llir.Constant(i32, d) for d in xyz]))
    if props[2]:
        fn.set_metadata("intel_reqd_sub_group_size",
                        module.add_metadata([llir.Constant(i32, props[2])]))
    # llvmlite joins a function's attachments with ", " (LLVM wants them space-separated)
    fn._stringify_metadata = lambda leading_comma=False: " ".join(  # type: ignore[method-assign]
        f"!{k} {v.get_reference()}" for k, v in fn.metadata.items())


def with_reqntid(ptx: bytes, entry: str, dims: tuple[int, ...]) -> bytes:
    """``ptx`` with ``.reqntid`` (the required work-group size, OpenCL order) on ``entry``."""
    m = re.search(rb"\.entry[ \t]+" + re.escape(entry.encode()) + rb"[ \t]*\(", ptx)
    if m is None:
        raise ValueError(f"the PTX image has no entry point {entry!r}")
    body = ptx.find(b"{", ptx.find(b")", m.end()))
    directive = f".reqntid {', '.join(str(d) for d in dims[::-1])}\n".encode()
    return ptx[:body] + directive + ptx[body:]


def _resolved(table: Sites, functions: list[Callable[..., Any]]) -> tuple[Site, ...]:
    """The compile's numbered ``(file, line)``s as instructions of the kernel's code objects
    (``pysycl._core.sites``: the runtime reads the lines from the submitting program)."""
    codes = code_table(functions)
    return tuple(site_of(codes, f, line) for f, line in table.numbers)


class _KernelJob:
    """One kernel compile: Numba's pipeline, the entry point, the SPIR-V."""

    def __init__(self, pyfunc: Callable[..., Any], index: IndexSpace,
                 captures: tuple[Capture, ...], entry_name: str, bounds_check: bool,
                 param_types: list[types.Type], reducers: list[ReducerType | SpanReducerType],
                 capture_types: list[types.Type], arch: str = "") -> None:
        self.pyfunc, self.index, self.captures = pyfunc, index, captures
        self.entry_name, self.bounds_check = entry_name, bounds_check
        self.param_types, self.reducers, self.capture_types = param_types, reducers, capture_types
        self.arch = arch  # "" for SPIR-V, "sm_XY" for PTX
        self.library: SPIRVCodeLibrary | None = None
        self.direct_index: tuple[tuple[int, int, int, int, int], ...] = ()

    def compile(self, ctx: SYCLTargetContext, name: str, lift: LiftSpec) -> tuple[bytes, str]:
        """Type and lower the kernel with target context ``ctx``, build its entry point,
        emit SPIR-V or PTX: (binary, optimised SPIR-flavoured IR text)."""
        pipeline = KernelPipeline(sycl_target.typing_context, ctx, ctx.codegen().create_library(name),
                                  tuple(self.param_types + self.capture_types), None, flags(), {})
        pipeline.state.pysycl_lift = lift
        pipeline.state.pysycl_captures = self.captures
        pipeline.state.pysycl_index = self.index
        pipeline.state.pysycl_functor = getattr(self.pyfunc, FUNCTOR_ATTR, False)
        props = getattr(self.pyfunc, PROPS_ATTR, None)
        arch = ptx_arch.set(self.arch)  # joint_matrix's combinations (overloads/matrix_ptx.py)
        whole = ptx_whole_warps.set(bool(props and props[0]) and prod(props[0]) % 32 == 0)
        try:
            cres = pipeline.compile_extra(self.pyfunc)
        finally:
            ptx_whole_warps.reset(whole)
            ptx_arch.reset(arch)
        self.library = cres.library
        self.direct_index = getattr(pipeline.state, "pysycl_direct_index", ())
        abi_types = [c.type for c in self.captures]
        has_asserts = bool(asserts_table.get().entries)  # the kernel's and its helpers'
        if self.reducers:
            wrapper = self._reduction_wrapper(cres, abi_types, has_asserts)
        else:
            wrapper = build_kernel_wrapper(cres.target_context, cres.fndesc, self.index,
                                           self.capture_types, abi_types, self.entry_name,
                                           self.bounds_check, has_asserts, bool(self.arch),
                                           bool(self.arch) and not _prints(self.captures))
        if props is not None:
            _entry_metadata(wrapper, self.entry_name, props)
        if not self.arch:  # a range reduction's loop over items: see emit_spirv
            return emit_spirv(cres.library, wrapper, self.entry_name,
                              index_loops=bool(self.reducers) and (self.index.kind == "range"
                                                                   or self.index.looped))
        text = optimised_ir(cres.library, wrapper, self.entry_name, float_atomics=True,
                            odd_ints=True)
        ptx = emit_ptx(text, self.entry_name, self.arch, props[3] if props else 0)
        return (with_reqntid(ptx, self.entry_name, props[0]) if props and props[0] else ptx), text

    def _reduction_wrapper(self, cres: CompileResult, abi_types: list[CaptureType],
                           has_asserts: bool) -> llir.Module:
        """The entry point of a kernel with reductions, its epilogues (and a 1-D range's
        folds on PTX, :func:`strided_blocks`) linked to ``cres``'s library."""
        index = self.index
        group_ndim = 1 if index.kind == "range" or index.looped else index.ndim
        epilogues = [compile_epilogue(r, group_ndim) for r in self.reducers]  # (prologues)
        folds = None
        if strided_blocks(self.arch, index, self.reducers):
            folds = [None if isinstance(r, SpanReducerType) else compile_fold(r)
                     for r in self.reducers]
        lasts = None
        if single_pass_reduction(bool(self.arch), any(isinstance(r, SpanReducerType)
                                                      for r in self.reducers)):
            lasts = [compile_last(r, group_ndim) for r in self.reducers]  # (no spans)
        for extra in [*epilogues, *(f for f in folds or () if f is not None), *(lasts or ())]:
            cres.library.add_linking_library(extra.library)
        return build_reduction_wrapper(
            cres.target_context, cres.fndesc, index, self.capture_types, abi_types,
            self.reducers, epilogues, self.entry_name, self.bounds_check, has_asserts, folds,
            lasts)

    def aspects(self, ir_text: str) -> set[str]:
        """The optional device aspects the compiled code needs."""
        aspects: set[str] = set()
        assert self.library is not None, "aspects() after compile()"
        for lib in self.library.walk():
            aspects |= getattr(lib, "pysycl_aspects", set())
        for t in self.capture_types:
            needed_aspects(t, aspects)
        return aspects | _aspects_from_ir(ir_text)
