"""The ``pysycl`` Numba target: hardware class, typing and target contexts.

The target sits in Numba's target hierarchy as ``Generic -> GPU -> SYCL``
(:mod:`numba.core.target_extension`), so ``@overload(..., target="generic")``
and ``target="gpu"`` implementations apply to kernels and CPU-only ones do not.

* :class:`SYCLTypingContext` types OpenCL math, the SYCL kernel objects, and
  resolves plain Python functions to device-function dispatchers (a plain
  function is otherwise untypeable in Numba).
* :class:`SYCLTargetContext` lowers with Numba's builtin implementations plus
  ours, the "minimal" calling convention (status code return, no Python
  objects) with a hidden assert record (:mod:`pysycl_numba.asserts`), no NRT,
  no bounds checks, and a SPIR-V code generator.

Both install the registries of every module of :data:`OVERLOADS`, the one
list of what kernels can use (:mod:`pysycl_numba.overloads`). Dependencies
point down: the overloads know nothing of the target, and the dispatcher,
which compiles device functions with this target, registers its class in
Numba's ``dispatcher_registry[SYCL]``, where the typing context looks it up.
"""

from __future__ import annotations

import types as pytypes
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl_numba import stream_types
from pysycl_numba._numba_compat import (
    GPU,
    BaseContext,
    Dispatcher,
    MinimalCallConv,
    TargetDescriptor,
    dispatcher_registry,
    global_compiler_lock,
    load_builtin_lowerings,
    math_typing_registries,
    target_registry,
    types,
    typing,
)
from pysycl_numba.asserts import AssertCallConv
from pysycl_numba.explain_calls import unsupported_global
from pysycl_numba.hier_types import register_hier_models
from pysycl_numba.overloads import (
    accessor,
    asserts,
    async_copy,
    atomics,
    bfloat16,
    clip,
    collectives,
    complex_math,
    constants,
    float32,
    group_algorithms,
    half,
    hierarchical,
    index,
    index_ops,
    index_types,
    integers,
    joint_algorithms,
    math_extras,
    matrix,
    multi_ptr,
    ndrange,
    pointer,
    printing,
    private_array,
    reduction,
    specconst,
    stream,
    sycl_intrel,
    sycl_math,
    vec,
    vec_ops,
)
from pysycl_numba.overloads import math as math_overloads
from pysycl_numba.overloads.constants import resolve_kernel_value
from pysycl_numba.overloads.vec import resolve_vec_value
from pysycl_numba.targets.spirv.codegen import SPIRVCodegen
from pysycl_numba.type_models import make_data_model_manager

if TYPE_CHECKING:
    import llvmlite.binding as ll
    from llvmlite import ir as llir

    from pysycl._core.launch_types import Target
    from pysycl_numba._numba_compat import CodeLibrary, Environment, FunctionDescriptor, types

TARGET_NAME = "pysycl"

#: Every overload module, in installation order: each has a ``typing_registry``
#: and a ``lowering_registry`` (:mod:`pysycl_numba.overloads`).
OVERLOADS: tuple[pytypes.ModuleType, ...] = (
    index, accessor, pointer, multi_ptr, ndrange, async_copy, collectives, group_algorithms,
    joint_algorithms, constants,
    atomics, private_array, matrix, specconst, reduction, math_overloads, complex_math, printing, stream,
    vec, vec_ops, index_types, index_ops, half, float32, integers, bfloat16, clip, math_extras,
    sycl_math,
    sycl_intrel,
    asserts,
    hierarchical,
)


class SYCL(GPU):
    """Numba hardware class of SYCL devices reached through SPIR-V/OpenCL."""


target_registry[TARGET_NAME] = SYCL

_UNSUPPORTED_GLOBALS: dict[type, str] = {
    np.ndarray: (
        "numpy arrays cannot be captured by a kernel; wrap the data in a "
        "sycl.buffer and capture an accessor (buf.get_access(h, mode))"
    ),
    list: "lists cannot be captured by a kernel; use a tuple or a buffer accessor",
    dict: "dicts cannot be used in kernels",
    set: "sets cannot be used in kernels",
    str: "strings cannot be used in kernels",
    bytes: "bytes cannot be used in kernels",
}


class SYCLTypingContext(typing.BaseContext):
    """Typing context of SYCL kernels and device functions."""

    def load_additional_registries(self) -> None:
        """Install Numba's math typing and the typing half of :data:`OVERLOADS`."""
        # float16's, float32's and the integers' templates first: they take precedence over Numba's
        # (mathdecl and the builtins, installed after this), which would promote them.
        self.install_registry(half.typing_registry)
        self.install_registry(float32.typing_registry)
        self.install_registry(integers.typing_registry)
        self.install_registry(math_extras.early_typing_registry)
        for registry in math_typing_registries():
            self.install_registry(registry)
        for module in OVERLOADS:
            self.install_registry(module.typing_registry)

    def resolve_value_type(self, val: Any) -> types.Type:
        """Type a global or closure value that the kernel uses as a constant.

        Plain Python functions become device functions of this target; Numba
        CPU dispatchers are recompiled for the device from their ``py_func``.
        """
        sycl_type = (resolve_kernel_value(val) or resolve_vec_value(val)
                     or half.resolve_half_value(val))
        if sycl_type is not None:
            return sycl_type

        for pytype, message in _UNSUPPORTED_GLOBALS.items():
            if isinstance(val, pytype):
                # ValueError: Numba turns it into a TypingError at the
                # statement's location.
                raise ValueError(message)
        device_dispatcher = dispatcher_registry[SYCL]  # pysycl_numba.dispatcher registers it
        if isinstance(val, pytypes.FunctionType):
            if not self._is_registered_global(val):
                return device_dispatcher.for_function(val)._type
        if isinstance(val, Dispatcher) and not isinstance(val, device_dispatcher):
            return device_dispatcher.for_function(val.py_func)._type
        try:
            return super().resolve_value_type(val)
        except ValueError:
            message = unsupported_global(val)
            if message is None:
                raise
            raise ValueError(message) from None  # Numba names the statement's line

    def _is_registered_global(self, val: Any) -> bool:
        # Functions with typing registered (math.*, @overload targets, ...)
        # keep their registered typing.
        return self._lookup_global(val) is not None


class SYCLTargetContext(BaseContext):
    """Target context lowering kernels to LLVM IR for the SPIR-V backend."""

    implement_powi_as_math_call = True
    strict_alignment = True
    allow_dynamic_globals = False
    #: The image format this context lowers for: ``"spirv"`` here, ``"ptx"`` on the
    #: per-format copy :meth:`SYCLTargetDescriptor.context_for` makes once (and nothing
    #: writes it after): the lowering differs only where a target has a better
    #: instruction (PTX's native float atomic add).
    image_format = "spirv"

    def __init__(self, typingctx: SYCLTypingContext, target: str = TARGET_NAME) -> None:
        super().__init__(typingctx, target)
        self.data_model_manager = make_data_model_manager()
        register_hier_models(self.data_model_manager)
        half.register_models(self.data_model_manager)
        stream_types.register_models(self.data_model_manager)

    def init(self) -> None:
        """Create the SPIR-V code generator."""
        self._internal_codegen = SPIRVCodegen()

    @property
    def enable_nrt(self) -> bool:
        """Kernels never allocate: no Numba runtime."""
        return False

    @property
    def enable_boundscheck(self) -> bool:
        """SYCL accessors are not bounds-checked."""
        return False

    @enable_boundscheck.setter
    def enable_boundscheck(self, value: bool) -> None:
        return

    def load_additional_registries(self) -> None:
        """Load Numba's builtin lowerings; install the lowering half of :data:`OVERLOADS`."""
        load_builtin_lowerings()
        for module in OVERLOADS:
            self.install_registry(module.lowering_registry)

    def refresh(self) -> None:
        """Install the registries, then our overrides of Numba's builtin lowerings."""
        super().refresh()
        self.install_registry(math_overloads.override_registry)

    def get_constant_generic(self, builder: llir.IRBuilder, ty: types.Type, val: Any) -> Any:
        """A device function is a compile-time callee, never an address: numba's
        ``numba.experimental.function_type`` (imported by some of numba's own overloads)
        would lower a dispatcher constant as a host pointer, which a device cannot have."""
        if isinstance(ty, types.Dispatcher):
            return self.get_dummy_value()
        return super().get_constant_generic(builder, ty, val)

    def codegen(self) -> SPIRVCodegen:
        """The SPIR-V code generator."""
        return self._internal_codegen

    @property
    def target_data(self) -> ll.TargetData:
        """spirv64 sizes and alignments."""
        return self._internal_codegen.target_data

    def create_module(self, name: str) -> llir.Module:
        """A new LLVM module with the spirv64 triple and data layout."""
        return self._internal_codegen._create_empty_module(name)

    @cached_property
    def call_conv(self) -> MinimalCallConv:
        """Status-code calling convention without Python objects, with the work-item's
        assert record (:class:`pysycl_numba.asserts.AssertCallConv`)."""
        return AssertCallConv(self)

    def post_lowering(self, mod: llir.Module, library: CodeLibrary) -> None:
        """Nothing to link: no NRT, no CPython helpers."""
        return

    def get_executable(self, library: CodeLibrary, fndesc: FunctionDescriptor, env: Environment,
                       ) -> None:
        """Kernels never run on the host."""
        raise NotImplementedError("pysycl kernels cannot be called from the host")


class SYCLTargetDescriptor(TargetDescriptor):
    """Lazily created, process-wide typing and target contexts of the target."""

    def __init__(self, target_name: str) -> None:
        super().__init__(target_name)
        self._formats: dict[str, SYCLTargetContext] = {}  # context_for's, but SPIR-V's

    @cached_property
    def typing_context(self) -> SYCLTypingContext:
        """The typing context."""
        return SYCLTypingContext()

    @cached_property
    def target_context(self) -> SYCLTargetContext:
        """The target context: SPIR-V's (:meth:`context_for` gives the other formats')."""
        return SYCLTargetContext(self.typing_context, TARGET_NAME)

    def context_for(self, target: Target) -> SYCLTargetContext:
        """The target context that lowers for ``target``'s image format.

        SPIR-V's is :attr:`target_context`; another format's is Numba's copy-with-options
        of it (``BaseContext.subtarget``), made once per format and kept: it shares the
        implementations and the registered device functions, and has its own calling
        convention and internal-function cache (their code is the format's). The compile
        hands it to the kernel's pipeline and its device functions
        (``pysycl_numba.dispatcher.compile_scope``): nothing is flipped on a shared context,
        so a compile for one format never changes what another thread sees.
        """
        base = self.target_context
        if target.format == base.image_format:
            return base
        with global_compiler_lock:  # one per format, even when two threads ask first
            ctx = self._formats.get(target.format)
            if ctx is None:
                ctx = base.subtarget(image_format=target.format)
                ctx.cached_internal_func = {}  # subroutines compiled for this format only
                ctx.__dict__.pop("call_conv", None)  # its own, of this context (cached_property)
                self._formats[target.format] = ctx
            return ctx


sycl_target = SYCLTargetDescriptor(TARGET_NAME)
