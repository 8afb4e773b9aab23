"""pysycl: SYCL 2020 for Python.

Kernels are Python lambdas or nested functions handed to
``handler.parallel_for``; ``pysycl_numba`` compiles them to SPIR-V and the
OpenCL backend runs them. ``import pysycl`` neither imports Numba nor touches
an OpenCL device: the compiler loads the first time a kernel must be compiled.
"""

from __future__ import annotations

from pysycl._core.log import configure_from_env as _configure_logging

_configure_logging()  # PYSYCL_LOG=debug|info|warning|error: a stderr handler on "pysycl"

from pysycl._backends.opencl.icd import setup_icd_loader as _setup_icd_loader  # noqa: E402

_setup_icd_loader()

# The backends, in platform enumeration order (a new backend is one more line here).
from pysycl._core import backends as _backends  # noqa: E402
from pysycl._backends.cuda.backend import CUDABackend as _CUDABackend  # noqa: E402
from pysycl._backends.host.backend import HostBackend as _HostBackend  # noqa: E402
from pysycl._backends.opencl.backend import OpenCLBackend as _OpenCLBackend  # noqa: E402

# CUDA first: a GPU's CUDA view before its OpenCL one (no platform without a driver)
_backends.register(_CUDABackend())
_backends.register(_OpenCLBackend())
_backends.register(_HostBackend())

# --- namespaces ---------------------------------------------------------------------
from pysycl import ext, opencl, property  # noqa: E402

# --- errors (§4.13) -----------------------------------------------------------------
from pysycl._core.backend import backend  # noqa: E402
from pysycl._core.exceptions import (  # noqa: E402
    errc,
    exception,
    exception_list,
    kernel_compile_error,
    kernel_signature_error,
)
from pysycl._core.memory_model import memory_order, memory_scope  # noqa: E402

# --- platforms, devices, contexts, selectors, info (§4.6) ---------------------------
from pysycl._objects.aspects import aspect  # noqa: E402
from pysycl._objects.context import context  # noqa: E402
from pysycl._objects.device import device  # noqa: E402
from pysycl._objects.info import info  # noqa: E402
from pysycl._objects.platform import platform  # noqa: E402
from pysycl._objects.hierarchical import h_item, private_memory  # noqa: E402
from pysycl._objects.device_event import device_event  # noqa: E402
from pysycl._objects.multi_ptr import multi_ptr  # noqa: E402
from pysycl._objects.range import group, id, item, nd_item, nd_range, range  # noqa: E402
from pysycl._objects.selector import (  # noqa: E402
    accelerator_selector,
    accelerator_selector_v,
    aspect_selector,
    cpu_selector,
    cpu_selector_v,
    default_selector,
    default_selector_v,
    gpu_selector,
    gpu_selector_v,
)

# --- memory: buffers and accessors (§4.7) -------------------------------------------
from pysycl._memory.accessor import access_mode, accessor, host_accessor, target  # noqa: E402
from pysycl._memory.buffer import buffer  # noqa: E402
from pysycl.property import no_init, property_list  # noqa: E402

# --- memory: unified shared memory (§4.8) -------------------------------------------
from pysycl._memory.usm import usm, usm_pointer  # noqa: E402
from pysycl._memory.span import span  # noqa: E402
from pysycl._memory.usm_api import (  # noqa: E402
    aligned_alloc,
    aligned_alloc_device,
    aligned_alloc_host,
    aligned_alloc_shared,
    free,
    get_pointer_device,
    get_pointer_type,
    malloc,
    malloc_device,
    malloc_host,
    malloc_shared,
)

# --- command groups: queue, handler, event (§4.6.5, §4.9) ---------------------------
from pysycl._commands.event import event  # noqa: E402
from pysycl._commands.handler import handler  # noqa: E402
from pysycl._commands.host_task import interop_handle  # noqa: E402
from pysycl._commands.queue import queue  # noqa: E402

# --- the kernel API: what kernels call (§4.10, §4.15, §4.17) ------------------------
from pysycl._kernels.kernel_api import (  # noqa: E402
    access,
    all_of_group,
    any_of_group,
    atomic_fence,
    atomic_ref,
    bit_and,
    bit_or,
    bit_xor,
    group_barrier,
    group_broadcast,
    local_accessor,
    logical_and,
    logical_or,
    maximum,
    minimum,
    multiplies,
    none_of_group,
    plus,
    private_array,
    reduce_over_group,
)
from pysycl._kernels.group_algorithms import (  # noqa: E402
    exclusive_scan_over_group,
    inclusive_scan_over_group,
    joint_all_of,
    joint_any_of,
    joint_exclusive_scan,
    joint_inclusive_scan,
    joint_none_of,
    joint_reduce,
    permute_group_by_xor,
    select_from_group,
    shift_group_left,
    shift_group_right,
)
from pysycl._kernels.reduction import known_identity, reduction  # noqa: E402

# --- stream (§4.16) -----------------------------------------------------------------
from pysycl._kernels.kstream import stream  # noqa: E402

# --- kernel attributes (§5.8.1), as decorators of the kernel function -------------------
from pysycl._kernels.kprops import (  # noqa: E402
    reqd_sub_group_size,
    reqd_work_group_size,
    work_group_size_hint,
)
from pysycl._core.streamfmt import (  # noqa: E402
    dec,
    defaultfloat,
    endl,
    fixed,
    flush,
    hex,
    hexfloat,
    noshowbase,
    noshowpos,
    oct,
    scientific,
    setprecision,
    setw,
    showbase,
    showpos,
    stream_manipulator,
)

# --- vectors (§4.14.2), marray (§4.14.3), geometric functions (§4.17.8) -------------
from pysycl._objects.vec import (  # noqa: E402
    cross,
    distance,
    dot,
    length,
    marray,
    normalize,
    vec,
    vec_type,
)
# --- integer functions (§4.17.7) and relational functions (§4.17.9) -----------------
from pysycl._kernels.sycl_intrel import (  # noqa: E402 - the spec's abs, any, all
    abs,
    abs_diff,
    add_sat,
    all,
    any,
    bitselect,
    clz,
    ctz,
    hadd,
    isequal,
    isfinite,
    isgreater,
    isgreaterequal,
    isinf,
    isless,
    islessequal,
    islessgreater,
    isnan,
    isnormal,
    isnotequal,
    isordered,
    isunordered,
    mad24,
    mad_hi,
    mad_sat,
    mul24,
    mul_hi,
    popcount,
    rhadd,
    rotate,
    select,
    signbit,
    sub_sat,
    upsample,
)
from pysycl._objects.vec_aliases import *  # noqa: E402, F403 - float4 ... mbool16, the spec's aliases
from pysycl._objects.vec_aliases import __all__ as _vec_aliases  # noqa: E402

# --- math (§4.17.5) and common (§4.17.6) functions; sycl::native, sycl::half_precision ---
from pysycl import half_precision, native  # noqa: E402
from pysycl._objects.sycl_math import *  # noqa: E402, F403 - sqrt ... smoothstep, the spec's names
from pysycl._objects.sycl_math import __all__ as _math_functions  # noqa: E402
from pysycl._kernels.specconst import kernel_handler  # noqa: E402

# --- kernel bundles (§4.11) ---------------------------------------------------------
from pysycl._bundles.bundle import (  # noqa: E402
    build,
    bundle_state,
    compile,
    device_image,
    get_kernel_bundle,
    has_kernel_bundle,
    is_compatible,
    join,
    kernel_bundle,
    link,
    specialization_id,
)
from pysycl._bundles.kernel import kernel  # noqa: E402
from pysycl._bundles.kernel_id import get_kernel_id, get_kernel_ids, kernel_id  # noqa: E402

# --- backend interop (OpenCL's appendix, intel/llvm's CUDA extension) ------------------
from pysycl._backends.interop import (  # noqa: E402
    get_native,
    make_context,
    make_device,
    make_event,
    make_kernel,
    make_kernel_bundle,
    make_platform,
    make_queue,
)

from pysycl._core.version import __version__ as __version__  # noqa: E402

__all__ = [
    "accelerator_selector",
    "accelerator_selector_v",
    "access",
    "access_mode",
    "accessor",
    "aligned_alloc",
    "aligned_alloc_device",
    "aligned_alloc_host",
    "aligned_alloc_shared",
    "all_of_group",
    "any_of_group",
    "aspect",
    "aspect_selector",
    "atomic_fence",
    "atomic_ref",
    "backend",
    "bit_and",
    "bit_or",
    "bit_xor",
    "buffer",
    "build",
    "bundle_state",
    "compile",
    "context",
    "cpu_selector",
    "cpu_selector_v",
    "default_selector",
    "default_selector_v",
    "device",
    "device_image",
    "errc",
    "event",
    "exception",
    "exception_list",
    "exclusive_scan_over_group",
    "ext",
    "free",
    "get_kernel_bundle",
    "get_kernel_id",
    "get_kernel_ids",
    "get_native",
    "get_pointer_device",
    "get_pointer_type",
    "gpu_selector",
    "gpu_selector_v",
    "device_event",
    "multi_ptr",
    "group",
    "group_barrier",
    "h_item",
    "group_broadcast",
    "handler",
    "has_kernel_bundle",
    "host_accessor",
    "id",
    "inclusive_scan_over_group",
    "info",
    "interop_handle",
    "is_compatible",
    "item",
    "join",
    "joint_all_of",
    "joint_any_of",
    "joint_exclusive_scan",
    "joint_inclusive_scan",
    "joint_none_of",
    "joint_reduce",
    "kernel",
    "kernel_bundle",
    "kernel_compile_error",
    "kernel_handler",
    "kernel_id",
    "kernel_signature_error",
    "known_identity",
    "link",
    "local_accessor",
    "logical_and",
    "logical_or",
    "make_context",
    "make_device",
    "make_event",
    "make_kernel",
    "make_kernel_bundle",
    "make_platform",
    "make_queue",
    "malloc",
    "malloc_device",
    "malloc_host",
    "malloc_shared",
    "maximum",
    "memory_order",
    "memory_scope",
    "minimum",
    "multiplies",
    "nd_item",
    "nd_range",
    "no_init",
    "none_of_group",
    "opencl",
    "permute_group_by_xor",
    "platform",
    "plus",
    "private_array",
    "private_memory",
    "property",
    "property_list",
    "queue",
    "range",
    "reduce_over_group",
    "reduction",
    "reqd_sub_group_size",
    "reqd_work_group_size",
    "work_group_size_hint",
    "select_from_group",
    "shift_group_left",
    "shift_group_right",
    "span",
    "specialization_id",
    "target",
    "usm",
    "usm_pointer",
    # stream (§4.16)
    "dec",
    "defaultfloat",
    "endl",
    "fixed",
    "flush",
    "hex",
    "hexfloat",
    "noshowbase",
    "noshowpos",
    "oct",
    "scientific",
    "setprecision",
    "setw",
    "showbase",
    "showpos",
    "stream",
    "stream_manipulator",
    # vectors
    "cross",
    "distance",
    "dot",
    "length",
    "marray",
    "normalize",
    "vec",
    "vec_type",
    *_vec_aliases,
    *_math_functions,
    "half_precision",
    "native",
    # integer functions (§4.17.7)
    "abs",
    "abs_diff",
    "add_sat",
    "clz",
    "ctz",
    "hadd",
    "mad24",
    "mad_hi",
    "mad_sat",
    "mul24",
    "mul_hi",
    "popcount",
    "rhadd",
    "rotate",
    "sub_sat",
    "upsample",
    # relational functions (§4.17.9)
    "all",
    "any",
    "bitselect",
    "isequal",
    "isfinite",
    "isgreater",
    "isgreaterequal",
    "isinf",
    "isless",
    "islessequal",
    "islessgreater",
    "isnan",
    "isnormal",
    "isnotequal",
    "isordered",
    "isunordered",
    "select",
    "signbit",
]
