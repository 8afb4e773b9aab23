"""The one module of pysycl_numba that imports ``numba.core`` internals.

Numba's internal API (contexts, passes, IR, data models, call conventions)
changes between releases; every other module imports these names from here so
that a Numba upgrade is a change in one file. Public Numba API (``numba.types``)
is re-exported too so that the rest of the package has one import site.

Tested with Numba 0.68 / llvmlite 0.50.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from numba.core import (
    cgutils,
    compiler,
    datamodel,
    errors,
    ir,
    ir_utils,
    sigutils,
    types,
    typing,
)
from numba.core.analysis import compute_cfg_from_blocks
from numba.core.base import BaseContext
from numba.core.callconv import MinimalCallConv
from numba.core.codegen import CodeLibrary
from numba.core.compiler import CompilerBase, DefaultPassBuilder, Flags
from numba.core.compiler_lock import global_compiler_lock
from numba.core.compiler_machinery import AnalysisPass, FunctionPass, register_pass
from numba.core.datamodel import models
from numba.core.datamodel.registry import DataModelManager
from numba.core.descriptors import TargetDescriptor
from numba.core.dispatcher import Dispatcher
from numba.core.imputils import RefType, iternext_impl, lower_cast
from numba.core.imputils import Registry as LoweringRegistry
from numba.core.inline_closurecall import callee_ir_validator, inline_closure_call
from numba.core.lowering import Lower
from numba.core.target_extension import (
    GPU,
    dispatcher_registry,
    jit_registry,
    target_override,
    target_registry,
)
from numba.core.typeconv import Conversion
from numba.core.typed_passes import NativeLowering, NopythonTypeInference
from numba.core.typing import templates
from numba.core.typing.templates import (
    AbstractTemplate,
    AttributeTemplate,
    ConcreteTemplate,
    bound_function,
    signature,
)
from numba.core.typing.templates import Registry as TypingRegistry
from numba.core.untyped_passes import DeadBranchPrune, TranslateByteCode
from numba.np import numpy_support

if TYPE_CHECKING:  # names used only in annotations
    from collections.abc import Callable, Sequence

    from llvmlite import ir as llir
    from numba.core.cgutils import _StructProxy as StructProxy
    from numba.core.compiler import CompileResult, StateDict
    from numba.core.compiler_machinery import PassManager
    from numba.core.environment import Environment
    from numba.core.funcdesc import FunctionDescriptor
    from numba.core.typing.context import BaseContext as TypingContext
    from numba.core.typing.templates import Signature

    #: A lowering implementation: ``impl(context, builder, sig, args) -> value``.
    LoweringImpl = Callable[[BaseContext, llir.IRBuilder, Signature, Sequence[llir.Value]], llir.Value]


def math_typing_registries() -> tuple[TypingRegistry, ...]:
    """Numba's typing of the ``math`` and ``cmath`` modules (the target installs them)."""
    from numba.core.typing import cmathdecl, mathdecl

    return mathdecl.registry, cmathdecl.registry


def cmath_lowering_registry() -> LoweringRegistry:
    """Numba's lowering of the ``cmath`` module (CPython's algorithms over ``math.*``).

    Importing it also registers Numba's generic ``@overload``s of ``cmath.sinh``,
    ``cosh``, ``tanh``, ``acosh``, ``log10``, ``phase``, ``polar`` and ``rect``.
    """
    from numba.cpython import cmathimpl

    return cmathimpl.registry


def load_builtin_lowerings() -> None:
    """Import Numba's lowering modules for numbers, tuples, ranges, iterators.

    They register into ``builtin_registry`` when imported (the CPU target
    imports them in its context). Modules needing NRT or CPython (lists,
    strings, sets, arrays) are deliberately not loaded.
    """
    from numba.core import optional  # noqa: F401
    from numba.cpython import (  # noqa: F401
        builtins,
        enumimpl,
        iterators,
        numbers,
        rangeobj,
        slicing,
        tupleobj,
    )
    from numba.misc import literal  # noqa: F401


__all__ = [
    "GPU",
    "AbstractTemplate",
    "AnalysisPass",
    "AttributeTemplate",
    "BaseContext",
    "CodeLibrary",
    "CompileResult",
    "CompilerBase",
    "ConcreteTemplate",
    "Conversion",
    "DataModelManager",
    "DeadBranchPrune",
    "DefaultPassBuilder",
    "Dispatcher",
    "Environment",
    "Flags",
    "FunctionDescriptor",
    "FunctionPass",
    "Lower",
    "LoweringImpl",
    "LoweringRegistry",
    "MinimalCallConv",
    "NativeLowering",
    "NopythonTypeInference",
    "PassManager",
    "RefType",
    "Signature",
    "StateDict",
    "StructProxy",
    "TargetDescriptor",
    "TranslateByteCode",
    "TypingContext",
    "TypingRegistry",
    "bound_function",
    "callee_ir_validator",
    "cgutils",
    "cmath_lowering_registry",
    "compiler",
    "compute_cfg_from_blocks",
    "datamodel",
    "dispatcher_registry",
    "errors",
    "global_compiler_lock",
    "inline_closure_call",
    "ir",
    "ir_utils",
    "iternext_impl",
    "jit_registry",
    "load_builtin_lowerings",
    "lower_cast",
    "math_typing_registries",
    "models",
    "numpy_support",
    "register_pass",
    "signature",
    "sigutils",
    "target_override",
    "target_registry",
    "templates",
    "types",
    "typing",
]
