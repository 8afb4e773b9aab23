"""The Numba pipelines of kernels, helpers and device functions, and :func:`compile_device`.

Pipeline of a kernel (Numba's nopython pipeline plus pysycl's passes)::

    RejectStatements -> TranslateByteCode -> InlineNestedFunctions -> LiftCaptures
    -> RewriteAsserts -> RewritePrint -> RewriteStream -> RejectUnsupportedPython
    -> FixupArgs
    -> ... Numba's untyped passes ...
    -> NopythonTypeInference -> RejectKernelResult -> ValidateTypedKernel -> FindDirectIndexing
    -> ... -> LocLowering (Numba's NativeLowering + source locations)

A helper that reads captures uses the same pipeline without
``FindDirectIndexing``; a plain device function the device pipeline without
``LiftCaptures``. The driver (:mod:`pysycl_numba.compiler`) adds the entry
point, linking and SPIR-V emission; the dispatcher
(:mod:`pysycl_numba.dispatcher`) compiles device functions with
:func:`compile_device`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pysycl._core.plaincode import plain_function
from pysycl_numba._numba_compat import (
    CompilerBase,
    DefaultPassBuilder,
    Flags,
    Lower,
    NativeLowering,
    NopythonTypeInference,
    TranslateByteCode,
    ir,
    register_pass,
    target_override,
)
from pysycl_numba.asserts import RewriteAsserts
from pysycl_numba.functor import LiftSelf
from pysycl_numba.hierarchical import RewriteGroupScope
from pysycl_numba.lift import LiftSpec
from pysycl_numba.nested import InlineNestedFunctions
from pysycl_numba.passes import FindDirectIndexing, LiftCaptures, ValidateTypedKernel
from pysycl_numba.printing import RewritePrint
from pysycl_numba.reject import RejectKernelResult, RejectStatements, RejectUnsupportedPython
from pysycl_numba.streaming import RewriteStream
from pysycl_numba.strings import fold_strings_before_pruning
from pysycl_numba.target import TARGET_NAME, sycl_target
from pysycl_numba.weak_literals import MarkWeakLiterals

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import CompileResult, PassManager, StateDict, types
    from pysycl_numba.target import SYCLTargetContext


def flags() -> Flags:
    """Numba's compile flags of every pysycl pipeline."""
    f = Flags()
    f.no_compile = True  # we emit SPIR-V ourselves; no host code
    f.no_cpython_wrapper = True
    f.no_cfunc_wrapper = True
    f.nrt = False
    f.error_model = "numpy"  # no ZeroDivisionError checks on the device
    f.boundscheck = False
    f.enable_looplift = False
    f.enable_pyobject = False
    f.inline = "never"
    return f


class _LocLower(Lower):  # type: ignore[misc]
    def notify_loc(self, loc: ir.Loc) -> None:
        # Bounds-checked accesses report the line of the code they lower.
        self.builder.pysycl_loc = loc
        super().notify_loc(loc)


@register_pass(mutates_CFG=True, analysis_only=False)
class LocLowering(NativeLowering):  # type: ignore[misc]
    """Numba's native lowering with the source location on the IR builder."""

    _name = "pysycl_native_lowering"

    @property
    def lowering_class(self) -> type:
        """Numba's ``Lower`` that records each instruction's location."""
        return _LocLower


def _use_loc_lowering(pm: PassManager) -> None:
    """Lower with :class:`LocLowering` (source lines for bounds-checked accesses)."""
    pm.passes = [(LocLowering if p is NativeLowering else p, d) for p, d in pm.passes]


def _inline_nested_first(pm: PassManager) -> None:
    """Run :class:`InlineNestedFunctions` right after bytecode translation, before any
    pysycl pass reads the IR (call it after the others are added after TranslateByteCode)."""
    pm.add_pass_after(InlineNestedFunctions, TranslateByteCode)


def _reject_statements_first(pm: PassManager) -> None:
    """Run :class:`RejectStatements` before Numba reads the bytecode (try/with as written)."""
    pm.passes.insert(0, (RejectStatements, "pysycl: reject try/except/finally and with"))


def _mark_weak_literals(pm: PassManager) -> None:
    """Run :class:`MarkWeakLiterals` right before type inference (after SSA, inlining)."""
    k = [p for p, _ in pm.passes].index(NopythonTypeInference)
    pm.add_pass_after(MarkWeakLiterals, pm.passes[k - 1][0])


class _Pipeline(CompilerBase):  # type: ignore[misc]
    """Compiles the code Python makes of the function's source, not pytest's rewriting of it
    (:mod:`pysycl._core.plaincode`): a kernel behaves the same in a test file."""

    def compile_extra(self, func: Callable[..., Any]) -> CompileResult:
        """Numba's ``compile_extra`` of :func:`~pysycl._core.plaincode.plain_function`."""
        return super().compile_extra(plain_function(func))


class DevicePipeline(_Pipeline):
    """Numba's nopython pipeline plus pysycl's validation passes."""

    def define_pipelines(self) -> list[PassManager]:
        """One pipeline; there is no object-mode fallback on a device."""
        pm = DefaultPassBuilder.define_nopython_pipeline(self.state, name="pysycl")
        pm.add_pass_after(RejectUnsupportedPython, TranslateByteCode)
        pm.add_pass_after(RewriteStream, TranslateByteCode)  # a helper given a stream
        pm.add_pass_after(RewriteAsserts, TranslateByteCode)  # before RejectUnsupportedPython
        pm.add_pass_after(ValidateTypedKernel, NopythonTypeInference)
        _mark_weak_literals(pm)
        fold_strings_before_pruning(pm)
        _use_loc_lowering(pm)
        _inline_nested_first(pm)
        _reject_statements_first(pm)
        pm.finalize()
        return [pm]


def _lifting_pipeline(state: StateDict) -> PassManager:
    """Numba's nopython passes plus capture lifting right after bytecode analysis.

    Kernels and the helpers that read captures share it; each adds its own passes.
    """
    pm = DefaultPassBuilder.define_nopython_pipeline(state, name="pysycl")
    pm.add_pass_after(LiftCaptures, TranslateByteCode)
    pm.add_pass_after(RejectUnsupportedPython, LiftCaptures)
    pm.add_pass_after(RewritePrint, LiftCaptures)  # before RejectUnsupportedPython
    pm.add_pass_after(RewriteStream, RewritePrint)
    pm.add_pass_after(RewriteAsserts, LiftCaptures)  # before RejectUnsupportedPython
    pm.add_pass_after(ValidateTypedKernel, NopythonTypeInference)
    _mark_weak_literals(pm)
    fold_strings_before_pruning(pm)
    _reject_statements_first(pm)
    return pm


class KernelPipeline(_Pipeline):
    """The device pipeline with capture lifting right after bytecode analysis."""

    def define_pipelines(self) -> list[PassManager]:
        """Lift captures before anything looks at the function's arguments."""
        pm = _lifting_pipeline(self.state)
        pm.add_pass_after(LiftSelf, TranslateByteCode)  # before LiftCaptures (a functor's self)
        pm.add_pass_after(FindDirectIndexing, ValidateTypedKernel)
        pm.add_pass_after(RejectKernelResult, NopythonTypeInference)  # before ValidateTyped...
        _inline_nested_first(pm)
        pm.add_pass_after(RewriteGroupScope, TranslateByteCode)  # hierarchical kernels: first
        _use_loc_lowering(pm)
        pm.finalize()
        return [pm]


class HelperPipeline(_Pipeline):
    """The device pipeline of a helper that reads captures (hidden parameters)."""

    def define_pipelines(self) -> list[PassManager]:
        """Lift the helper's captures and pass its callees' on, as for a kernel."""
        pm = _lifting_pipeline(self.state)
        _inline_nested_first(pm)
        _use_loc_lowering(pm)  # bounds-checked accesses in the helper name its lines
        pm.finalize()
        return [pm]


def compile_device(py_func: Callable[..., Any], args: tuple[types.Type, ...],
                   return_type: types.Type | None, ctx: SYCLTargetContext,
                   lift: LiftSpec | None = None) -> CompileResult:
    """Compile a device function for argument types ``args`` (Numba's CompileResult).

    ``ctx``: the target context of the kernel that calls it (its image format's
    lowering: ``dispatcher.compile_scope``). ``lift``: the helper's hidden parameters
    (the trailing ``args``) and the hidden arguments it passes to the helpers it calls.
    """
    library = ctx.codegen().create_library(py_func.__qualname__)
    cls = DevicePipeline if lift is None else HelperPipeline
    pipeline = cls(sycl_target.typing_context, ctx, library, args, return_type, flags(), {})
    pipeline.state.pysycl_lift = lift
    with target_override(TARGET_NAME):
        return pipeline.compile_extra(py_func)
