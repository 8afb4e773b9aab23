"""OpenCL programs for kernel bundles: create, compile, link, build, binaries, interop.

The bundle layer (:mod:`pysycl._bundles.bundle`) maps SYCL bundle states onto these
calls (input → ``clCompileProgram`` → object → ``clLinkProgram`` → executable).
Every OpenCL failure becomes a :class:`pysycl.exception`: ``errc.build`` with the
full per-device build log for a failed compile/link/build, ``errc.invalid`` for
options the driver rejects (``CL_INVALID_*_OPTIONS``).

Programs are handled as raw ``pyopencl._cl._Program`` objects (wrapped in
``pyopencl.Program`` only where pyopencl requires it): pyopencl's source-program
wrapper caches builds itself and warns on pre-build access, which pysycl does not
want — it has its own caches.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyopencl as cl
from pyopencl import _cl as _rawcl

from pysycl._backends.opencl.exec import cl_error_code, launch_lock, quiet, translate
from pysycl._backends.opencl.exec import create_kernel as create_typed
from pysycl._core.exceptions import errc, exception
from pysycl._core.spirv_check import check as check_spirv

if TYPE_CHECKING:
    from collections import deque

    from pysycl._backends.opencl.discovery import HasIntPtr

_log = logging.getLogger("pysycl.opencl")

# pyopencl's raw program class and IL constructor have no public spelling: named once here.
_RawProgram = _rawcl._Program
_create_program_with_il = _rawcl._create_program_with_il

#: OpenCL status codes meaning "these options are not valid".
_BAD_OPTIONS = frozenset((-43, -66, -67))  # INVALID_BUILD/COMPILER/LINKER_OPTIONS

BINARY_TYPE_NONE = 0
BINARY_TYPE_COMPILED_OBJECT = 1
BINARY_TYPE_LIBRARY = 2
BINARY_TYPE_EXECUTABLE = 4
BINARY_TYPE_INTERMEDIATE = 0x40E1


def _opts(options: str | Sequence[str]) -> bytes:
    if isinstance(options, str):
        return options.encode()
    return " ".join(options).encode()


def from_il(ctx: cl.Context, il: bytes) -> _RawProgram:
    """``clCreateProgramWithIL``, after the structural check of :mod:`pysycl._core.spirv_check`."""
    check_spirv(il)
    try:
        return _create_program_with_il(ctx, il)
    except cl.Error as e:
        raise translate(e, "clCreateProgramWithIL rejected the SPIR-V module", errc.build) from e


def from_il_specialized(ctx: cl.Context, il: bytes, values: Sequence[Any]) -> _RawProgram:
    """:func:`from_il` with specialization constant values set natively
    (``clSetProgramSpecializationConstant(SpecId i, values[i])`` for each value not None;
    bool as one ``uchar``), before the build."""
    prg = from_il(ctx, il)
    for i, v in enumerate(values):
        if v is None:
            continue
        raw = bytes([1 if v else 0]) if v.dtype == bool else v.tobytes()
        try:
            prg.set_specialization_constant(i, raw)
        except Exception as e:  # pyopencl.Error
            raise translate(e, f"clSetProgramSpecializationConstant(SpecId {i})",
                            errc.build) from e
    return prg


def from_source(ctx: cl.Context, source: str) -> _RawProgram:
    """``clCreateProgramWithSource`` (OpenCL C)."""
    try:
        return _RawProgram(ctx, source)
    except cl.Error as e:
        raise translate(e, "clCreateProgramWithSource failed", errc.build) from e


def from_binaries(ctx: cl.Context, devices: Sequence[cl.Device],
                  binaries: Sequence[bytes]) -> _RawProgram:
    """``clCreateProgramWithBinary`` (one binary per device)."""
    try:
        return _RawProgram(ctx, list(devices), list(binaries))
    except cl.Error as e:
        raise translate(e, "clCreateProgramWithBinary rejected the binary", errc.build) from e


def from_int_ptr(ptr: int, retain: bool = True) -> _RawProgram:
    """A program object from a raw ``cl_program`` handle."""
    return _RawProgram.from_int_ptr(int(ptr), retain)


def raw(prg: cl.Program | _RawProgram) -> _RawProgram:
    """The raw program behind a ``pyopencl.Program`` (or the raw program itself)."""
    if isinstance(prg, cl.Program):
        return prg._get_prg()
    return prg


def build_log(prg: _RawProgram, devices: Sequence[cl.Device]) -> str:
    """The build logs of ``devices``, each headed by the device's name."""
    parts = []
    for d in devices:
        try:
            text = prg.get_build_info(d, cl.program_build_info.LOG)
        except cl.Error:
            continue
        text = (text or "").strip()
        if text:
            parts.append(f"--- {d.name} ---\n{text}")
    return "\n".join(parts)


def _fail(e: BaseException, prg: _RawProgram | None, devices: Sequence[cl.Device],
          what: str) -> exception:
    status = cl_error_code(e)
    log = build_log(prg, devices) if prg is not None else ""
    # NVIDIA reports an option it does not know as a build failure with this log line.
    if status in _BAD_OPTIONS or "processing command line" in log:
        return exception(errc.invalid, f"{what}: the OpenCL driver rejected the options ({e})"
                         + (f"\n{log}" if log else ""), cl_error=status)
    if status in (-4, -5, -6):
        return translate(e, what)
    return exception(errc.build, f"{what} failed:\n{log or e}", cl_error=status)


def compile_program(prg: _RawProgram, devices: Sequence[cl.Device],
                    options: str | Sequence[str] = "") -> None:
    """``clCompileProgram`` for ``devices`` (IL or source → compiled object)."""
    try:
        quiet(prg.compile, _opts(options), list(devices), [])
    except cl.Error as e:
        raise _fail(e, prg, devices, "online compile (clCompileProgram)") from e


def link_programs(ctx: cl.Context, programs: Sequence[_RawProgram], devices: Sequence[cl.Device],
                  options: str | Sequence[str] = "") -> _RawProgram:
    """``clLinkProgram`` of compiled objects into one executable for ``devices``."""
    try:
        return quiet(_RawProgram.link, ctx, list(programs), _opts(options), list(devices))
    except cl.Error as e:
        raise _fail(e, None, devices, "online link (clLinkProgram)") from e


def build_program(prg: _RawProgram, devices: Sequence[cl.Device],
                  options: str | Sequence[str] = "") -> None:
    """``clBuildProgram`` (source, IL or binary → executable)."""
    try:
        quiet(prg.build, _opts(options), list(devices))
    except cl.Error as e:
        raise _fail(e, prg, devices, "online build (clBuildProgram)") from e
    if _log.isEnabledFor(logging.DEBUG):
        _log.debug("build log: %s", build_log(prg, devices))


def binary_type(prg: _RawProgram, device: cl.Device) -> int:
    """``CL_PROGRAM_BINARY_TYPE`` of ``prg`` for ``device``."""
    return int(prg.get_build_info(device, cl.program_build_info.BINARY_TYPE))


def binaries(prg: _RawProgram) -> dict[int, bytes]:
    """``CL_PROGRAM_BINARIES`` keyed by device handle.

    Empty when the driver gives none: Intel's CPU runtime refuses the query
    (``CL_INVALID_PROGRAM``) for an IL program of a context of several devices
    built for only some of them (a kernel built for one of two sub-devices).
    """
    devs = prg.get_info(cl.program_info.DEVICES)
    try:
        bins = prg.get_info(cl.program_info.BINARIES)
    except cl.Error:
        return {}
    return {d.int_ptr: bytes(b) for d, b in zip(devs, bins, strict=False)}


def program_context(prg: _RawProgram) -> cl.Context:
    """``CL_PROGRAM_CONTEXT``."""
    return prg.get_info(cl.program_info.CONTEXT)


def kernel_names(prg: _RawProgram) -> list[str]:
    """``CL_PROGRAM_KERNEL_NAMES`` of a built program."""
    try:
        names = prg.get_info(cl.program_info.KERNEL_NAMES)
    except cl.Error:
        return []
    return [n for n in str(names).split(";") if n]


def create_kernel(prg: _RawProgram, name: str, device: Any = None) -> cl.Kernel:
    """A ``cl_kernel`` (pyopencl ``Kernel``) of a built program (one for all its devices:
    ``device`` is not needed)."""
    try:
        return cl.Kernel(cl.Program(prg), name)
    except cl.Error as e:
        raise translate(e, f"kernel {name!r} not found in the program", errc.kernel) from e


def typed_kernel(prg: _RawProgram, name: str, arg_dtypes: Sequence[Any],
                 device: Any = None) -> cl.Kernel:
    """Kernel ``name`` of a built program, with its scalar argument dtypes set (a Python
    kernel's: launched through pyopencl's fast invoker)."""
    return create_typed(wrap_program(prg), name, arg_dtypes)


def kernel_program(k: cl.Kernel) -> _RawProgram:
    """The raw program a ``cl_kernel`` belongs to."""
    return raw(k.get_info(cl.kernel_info.PROGRAM))


def kernel_name(k: cl.Kernel) -> str:
    """``CL_KERNEL_FUNCTION_NAME``."""
    return str(k.get_info(cl.kernel_info.FUNCTION_NAME))


def kernel_context(k: cl.Kernel) -> cl.Context:
    """``CL_KERNEL_CONTEXT``."""
    return k.get_info(cl.kernel_info.CONTEXT)


def kernel_info(k: cl.Kernel, key: str) -> Any:
    """``clGetKernelInfo`` by ``pyopencl.kernel_info`` name."""
    return k.get_info(getattr(cl.kernel_info, key))


def kernel_work_group_info(k: cl.Kernel, device: cl.Device, key: str) -> Any:
    """``clGetKernelWorkGroupInfo`` by ``pyopencl.kernel_work_group_info`` name."""
    return k.get_work_group_info(getattr(cl.kernel_work_group_info, key), device)


_QUALIFIERS = {cl.kernel_arg_address_qualifier.GLOBAL: "global",
               cl.kernel_arg_address_qualifier.LOCAL: "local",
               cl.kernel_arg_address_qualifier.CONSTANT: "constant",
               cl.kernel_arg_address_qualifier.PRIVATE: "private"}


def _args_info(k: cl.Kernel) -> tuple[tuple[str, str] | None, ...]:
    out: list[tuple[str, str] | None] = []
    for i in range(int(k.get_info(cl.kernel_info.NUM_ARGS))):
        try:
            q = k.get_arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
            out.append((_QUALIFIERS.get(int(q), "?"),
                        str(k.get_arg_info(i, cl.kernel_arg_info.TYPE_NAME))))
        except cl.Error:
            out.append(None)
    return tuple(out)


def kernel_args_info(k: cl.Kernel, device: cl.Device) -> tuple[tuple[str, str] | None, ...]:
    """Per argument, ``(address qualifier, type name)`` (``("global", "int*")``,
    ``("private", "float")``), or None where the driver has no argument info.

    A program built from source without ``-cl-kernel-arg-info`` keeps none on some
    drivers (PoCL), which then take any 8 bytes for a pointer: its source is built
    again with that option, for the argument info only. A program from a binary or IL
    without it has none.
    """
    info = _args_info(k)
    if None not in info:
        return info
    try:
        prg = k.get_info(cl.kernel_info.PROGRAM)
        src = str(prg.get_info(cl.program_info.SOURCE) or "")
        if not src.strip():
            return info
        opts = str(prg.get_build_info(device, cl.program_build_info.OPTIONS) or "")
        again = cl.Program(k.get_info(cl.kernel_info.CONTEXT), src)
        quiet(again.build, options=f"{opts} -cl-kernel-arg-info", devices=[device])
        return _args_info(cl.Kernel(again, kernel_name(k)))
    except cl.Error:
        return info


#: What ``clSetKernelArg``'s errors say about the argument given.
_SET_ARG_WHY = {
    -51: "its size is not the parameter's (a memory object or pointer for a value parameter, "
         "or a number of another width: np.int64 for an int)",
    -38: "the parameter is a pointer and this is no memory object: pass an accessor or a USM "
         "pointer",
    -50: "the driver refuses this value for the parameter (a local_accessor goes to a "
         "__local parameter, a memory object to a pointer)",
}


def _described(a: Any) -> str:
    if isinstance(a, tuple) and a and a[0] == "local":
        return "a local_accessor"
    if isinstance(a, cl.MemoryObjectHolder):
        return "an accessor's memory object"
    if isinstance(a, (cl.SVMPointer, cl.SVM)):
        return "a USM pointer"
    return f"a numpy {a.dtype}" if hasattr(a, "dtype") else f"a {type(a).__name__}"


def launch_interop(q: cl.CommandQueue, k: cl.Kernel, gsize: tuple[int, ...],
                   lsize: tuple[int, ...] | None, args: Sequence[Any],
                   wait_for: Sequence[cl.Event] | None,
                   inflight: deque[tuple[cl.Event, Any]] | None = None,
                   holds: Any = None) -> cl.Event:
    """Set the arguments of an interop kernel and enqueue it (OpenCL-ordered sizes); with
    ``inflight``, append ``(event, holds)`` to it in the same step (as ``Launch.enqueue``).

    An argument the driver refuses is ``errc.kernel_argument`` naming its index.
    """
    try:
        with launch_lock:
            set_interop_args(k, args)
            ev = cl.enqueue_nd_range_kernel(q, k, gsize, lsize, wait_for=wait_for)
            if inflight is not None:
                inflight.append((ev, holds))
            return ev
    except cl.Error as e:
        raise translate(e, "kernel launch failed", errc.kernel) from e


def set_interop_args(k: cl.Kernel, args: Sequence[Any]) -> None:
    """Set the arguments of an interop kernel by index (``("local", nbytes)``: local
    memory); one the driver refuses is ``errc.kernel_argument`` naming its index. The
    caller holds the enqueue lock where other threads may use ``k``."""
    for i, a in enumerate(args):
        try:
            if isinstance(a, tuple) and a and a[0] == "local":
                k.set_arg(i, cl.LocalMemory(max(int(a[1]), 1)))
            else:
                k.set_arg(i, a)
        except cl.Error as e:
            why = _SET_ARG_WHY.get(cl_error_code(e), "the driver refuses it")
            raise translate(e, f"kernel {kernel_name(k)!r} argument {i} "
                            f"({_described(a)}): {why}", errc.kernel_argument) from e
        except (TypeError, ValueError) as e:
            raise exception(errc.kernel_argument, f"kernel {kernel_name(k)!r} argument "
                            f"{i} ({_described(a)}): {e}") from e


def device_cache_key(device: cl.Device) -> str:
    """What makes a device binary reusable: platform, device, versions, driver."""
    p = device.platform
    parts = (p.name, p.vendor, p.version, device.name, device.vendor, device.version,
             device.driver_version, str(device.address_bits))
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


# ----------------------------------------------------------------- interop
_CLASSES = {
    "platform": cl.Platform,
    "device": cl.Device,
    "context": cl.Context,
    "queue": cl.CommandQueue,
    "event": cl.Event,
    "buffer": cl.Buffer,
    "program": cl.Program,
    "kernel": cl.Kernel,
}


def is_cl_object(obj: object, kind: str) -> bool:
    """Whether ``obj`` is a pyopencl object of ``kind`` (``"program"`` accepts raw programs)."""
    if kind == "program" and isinstance(obj, _RawProgram):
        return True
    if kind == "buffer":
        return isinstance(obj, cl.MemoryObject)
    return isinstance(obj, _CLASSES[kind])


def wrap_program(prg: cl.Program | _RawProgram) -> cl.Program:
    """A ``pyopencl.Program`` for a raw program (what users get from ``get_native``)."""
    return prg if isinstance(prg, cl.Program) else cl.Program(prg)


def reference_count(obj: object) -> int:
    """``CL_*_REFERENCE_COUNT`` of a pyopencl object."""
    infos = {
        cl.Context: (cl.context_info, "REFERENCE_COUNT"),
        cl.CommandQueue: (cl.command_queue_info, "REFERENCE_COUNT"),
        cl.Event: (cl.event_info, "REFERENCE_COUNT"),
        cl.Kernel: (cl.kernel_info, "REFERENCE_COUNT"),
        cl.Device: (cl.device_info, "REFERENCE_COUNT"),
    }
    if isinstance(obj, cl.Program) or isinstance(obj, _RawProgram):
        return int(obj.get_info(cl.program_info.REFERENCE_COUNT))
    if isinstance(obj, cl.MemoryObject):
        return int(obj.get_info(cl.mem_info.REFERENCE_COUNT))
    for cls, (ns, key) in infos.items():
        if isinstance(obj, cls):
            return int(obj.get_info(getattr(ns, key)))
    if isinstance(obj, cl.Platform):
        raise TypeError("an OpenCL platform id is not reference counted")
    raise TypeError(f"get_reference_count takes a pyopencl object, not {type(obj).__name__}")


def queue_context_device(q: cl.CommandQueue) -> tuple[cl.Context, cl.Device]:
    """(context, device) of a pyopencl queue."""
    return q.context, q.device


def event_context(ev: cl.Event) -> cl.Context:
    """The context of a pyopencl event."""
    return ev.get_info(cl.event_info.CONTEXT)


def handle(obj: HasIntPtr) -> int:
    """The raw handle (``int_ptr``) of a pyopencl object."""
    return int(obj.int_ptr)
