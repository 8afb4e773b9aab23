"""``sycl::kernel`` (§4.11.13) and launching kernels given as ``sycl.kernel`` objects.

A ``sycl.kernel`` comes from an executable bundle (``get_kernel``,
``ext_oneapi_get_kernel``) or from OpenCL interop (``sycl.make_kernel``). Kernels
built from OpenCL C / SPIR-V source or taken from OpenCL objects get their
arguments from ``handler.set_arg``/``set_args`` and launch with
``parallel_for(range | nd_range, kernel)`` or ``single_task(kernel)``; the SYCL
index order is reversed into OpenCL's (dimension 0 is OpenCL's last). On a CUDA device
such kernels come from PTX source (``source_language.ext_pysycl_ptx``) and the same
sizes go to ``cuLaunchKernel`` (x fastest).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import prod
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.backend import backend
from pysycl._core.exceptions import errc, exception
from pysycl._core.launch_types import native_order, sycl_order
from pysycl._kernels.ndrange import SMALL, check_global_size

if TYPE_CHECKING:
    from pysycl._bundles.kernel_id import kernel_id
    from pysycl._bundles.refs import BundleRef, ImageRef
    from pysycl._core.backends import DeviceExecutor, Programs
    from pysycl._core.launch_types import KernelCommandRef, Submission
    from pysycl._objects.context import context
    from pysycl._objects.device import device
    from pysycl._objects.info import _kernel_device_specific, _kernel_info
    from pysycl._objects.range import nd_range
    from pysycl._objects.range import range as sycl_range

# OpenCL C scalar type names -> numpy dtypes (for Python int/float/bool arguments).
_CL_TYPES = {
    "char": np.int8, "uchar": np.uint8, "unsigned char": np.uint8,
    "short": np.int16, "ushort": np.uint16, "unsigned short": np.uint16,
    "int": np.int32, "uint": np.uint32, "unsigned int": np.uint32,
    "long": np.int64, "ulong": np.uint64, "unsigned long": np.uint64,
    "half": np.float16, "float": np.float32, "double": np.float64,
    "size_t": np.uint64, "bool": np.uint8,
}


class kernel:  # noqa: N801 - the spec's spelling
    """A kernel of an executable bundle (common reference semantics)."""

    __slots__ = ("_bundle", "_image", "_kid", "_name")

    def __init__(self) -> None:
        raise TypeError("sycl.kernel has no public constructor: use kernel_bundle.get_kernel, "
                        "ext_oneapi_get_kernel or sycl.make_kernel")

    @classmethod
    def _make(cls, kb: BundleRef, img: ImageRef, name: str, kid: kernel_id | None) -> kernel:
        self = object.__new__(cls)
        self._bundle = kb
        self._image = img
        self._name = name
        self._kid = kid
        return self

    # What interop and the launcher read (pysycl's own; not in the spec).
    @property
    def is_python(self) -> bool:
        """Whether this is a Python kernel (launched through ``use_kernel_bundle``, not ``set_arg``)."""
        return self._name in self._image.variants

    def native_for(self, dev: device) -> Any:
        """The backend kernel on ``dev`` (a ``pyopencl.Kernel``; on CUDA a loaded
        ``CUfunction``: :class:`pysycl._backends.cuda.programs.Kernel`).

        Raises:
            exception: ``errc.kernel_not_supported`` when the kernel is not built for ``dev``.
        """
        if dev not in self._image.programs:
            raise exception(errc.kernel_not_supported, f"kernel {self._name!r} is not built for "
                            f"device {dev!r} (its bundle's devices: "
                            f"{self._bundle.get_devices()})", self._bundle.get_context())
        return self._image.cl_kernel(dev, self._name)

    def args_info(self, dev: device) -> tuple[tuple[str, str] | None, ...]:
        """Per argument: ``(address qualifier, OpenCL C type name)`` (``("global", "int*")``),
        or None where the driver keeps no argument info."""
        self.native_for(dev)
        return self._image.arg_info(dev, self._name)

    def native_any(self) -> Any:
        """The backend kernel on the first device the kernel is built for."""
        dev = next(iter(self._image.programs))
        return self.native_for(dev)

    def _programs(self) -> Programs:
        """The bundle operations of the kernel's backend."""
        from pysycl._core.backends import get

        return get(self.get_backend()).programs  # type: ignore[return-value]  # it built this kernel

    def get_backend(self) -> backend:
        """The backend of the kernel's bundle (``backend.opencl``, ``backend.ext_oneapi_cuda``)."""
        return self._bundle.get_backend()

    def get_context(self) -> context:
        """The kernel's context."""
        return self._bundle.get_context()

    def get_kernel_bundle(self) -> BundleRef:
        """The executable bundle the kernel comes from."""
        return self._bundle

    def get_info(self, param: _kernel_info | _kernel_device_specific,
                 dev: device | None = None) -> int | str | sycl_range:
        """``info.kernel.*`` (no device) or ``info.kernel_device_specific.*`` (with ``dev``).

        Raises:
            exception: ``errc.invalid`` — ``global_work_size`` (not a built-in or
                custom-device kernel), or ``dev`` not associated with the kernel.
            TypeError: not a kernel descriptor, or a device-specific one without ``dev``.
        """
        from pysycl._objects.info import _kernel_device_specific as kds
        from pysycl._objects.info import _kernel_info as kinfo
        from pysycl._objects.range import range as _range

        clp = self._programs()
        if isinstance(param, kinfo):
            k = self.native_any()
            if param is kinfo.num_args:
                return int(clp.kernel_info(k, "NUM_ARGS"))
            return str(clp.kernel_info(k, "ATTRIBUTES"))
        if not isinstance(param, kds):
            raise TypeError(f"kernel.get_info takes a sycl.info.kernel or "
                            f"sycl.info.kernel_device_specific descriptor, not {param!r}")
        if dev is None:
            raise TypeError(f"{param!r} needs a device: kernel.get_info(param, dev)")
        if dev not in self._bundle.devices:
            raise exception(errc.invalid, f"device {dev!r} is not associated with the kernel's "
                            "bundle", self._bundle.get_context())
        k = self.native_for(dev)
        if param is kds.global_work_size:
            raise exception(errc.invalid, "info.kernel_device_specific.global_work_size is "
                            "only defined for built-in kernels or custom devices")
        if param is kds.work_group_size:
            return int(clp.kernel_work_group_info(k, dev.native, "WORK_GROUP_SIZE"))
        if param is kds.compile_work_group_size:
            sizes = list(clp.kernel_work_group_info(k, dev.native, "COMPILE_WORK_GROUP_SIZE"))
            return _range(*sycl_order(sizes))
        if param is kds.preferred_work_group_size_multiple:
            return int(clp.kernel_work_group_info(k, dev.native,
                                                "PREFERRED_WORK_GROUP_SIZE_MULTIPLE"))
        if param is kds.private_mem_size:
            return int(clp.kernel_work_group_info(k, dev.native, "PRIVATE_MEM_SIZE"))
        raise exception(errc.feature_not_supported, f"{param!r} is not supported by pysycl yet")

    def ext_pysycl_name(self) -> str:
        """The OpenCL function name of the kernel."""
        return self._name

    def __repr__(self) -> str:
        return f"<sycl.kernel {self._name!r}>"


def new_kernel(kb: BundleRef, img: ImageRef, name: str, kid: kernel_id | None) -> kernel:
    """The ``sycl.kernel`` ``name`` of image ``img`` of bundle ``kb`` (``kid``: its id, or None)."""
    return kernel._make(kb, img, name, kid)


def _cl_size(tname: str) -> int | None:
    """Bytes of a value of OpenCL C type ``tname`` (``int``, ``float4``); None if unknown."""
    base = tname.rstrip("0123456789")
    dt = _CL_TYPES.get(base)
    if dt is None or base == "bool":  # bool's size is the driver's own
        return None
    lanes = int(tname[len(base):] or 1)
    return np.dtype(dt).itemsize * (4 if lanes == 3 else lanes)


_WANTS = {"global": "memory", "constant": "memory", "local": "local"}  # else: a value
_PASS = {"memory": "an accessor or USM pointer", "local": "a sycl.local_accessor"}


def _check_kind(name: str, i: int, v: Any, given: str, info: tuple[str, str] | None,
                ctx: context) -> None:
    """``errc.kernel_argument`` unless ``v`` (a ``given``: "memory", "local" or "value") fits
    the kernel's parameter ``info`` (address qualifier, type name); no info: not checked."""
    if info is None:
        return
    qual, tname = info
    want = _WANTS.get(qual, "value")
    size = None
    if given == want:
        if not isinstance(v, np.generic):  # Python numbers are converted to the parameter's type
            return
        size = _cl_size(tname)
        if size is None or v.nbytes == size:
            return
    expect = f"`{tname}`" if qual == "private" else f"`__{qual} {tname}`"
    dt = _CL_TYPES.get(tname)
    hint = _PASS.get(want) or (f"a number (np.{np.dtype(dt).name}(...))" if dt is not None
                               else "a numpy value of that type")
    if size is not None:
        raise exception(errc.kernel_argument, f"kernel {name!r} argument {i} ({v.dtype}, "
                        f"{v.nbytes} bytes) does not fit its parameter {i}, {expect} ({size} "
                        f"bytes): pass {hint}", ctx)
    raise exception(errc.kernel_argument, f"kernel {name!r} argument {i} "
                    f"({type(v).__name__} {v!r}) does not fit its parameter {i}, {expect}: "
                    f"pass {hint}", ctx)


def _scalar(v: Any, i: int, info: tuple[str, str] | None) -> np.generic:
    if isinstance(v, np.generic):
        return v
    if isinstance(v, (bool, int, float)):
        dt = _CL_TYPES.get(info[1].strip()) if info is not None else None
        if dt is None:
            raise exception(errc.kernel_argument, f"kernel argument {i} is a Python "
                            f"{type(v).__name__}, and the kernel's argument type is not known "
                            f"({info[1] if info else 'no argument info'}): pass a numpy scalar "
                            f"such as np.int32({v!r}) or np.float32({v!r})")
        return dt(v)
    raise exception(errc.kernel_argument, f"kernel argument {i}: {type(v).__name__} cannot be "
                    "passed; use an accessor, a local_accessor or a numpy scalar")


def _arg_plan(kobj: kernel, dev: device, given: dict[int, Any], n: int, ctx: context
              ) -> list[tuple[str, Any]]:
    """How each ``set_arg`` argument is passed: ``("acc", accessor)``, ``("local", bytes)``,
    ``("ptr", usm_pointer)`` (an SVM pointer argument) or ``("val", numpy scalar)``; each
    checked against the kernel's parameter where the driver keeps argument info."""
    from pysycl._kernels.kernel_api import local_accessor
    from pysycl._memory.accessor import accessor
    from pysycl._memory.usm import usm_pointer

    infos = kobj.args_info(dev)
    name = kobj.ext_pysycl_name()
    plan: list[tuple[str, Any]] = []
    for i in range(n):
        v = given[i]
        info = infos[i] if i < len(infos) else None
        _check_kind(name, i, v, "memory" if isinstance(v, (accessor, usm_pointer)) else
                    "local" if isinstance(v, local_accessor) else "value", info, ctx)
        if isinstance(v, accessor):
            if v.kernel_tail[0] != 0:
                raise exception(errc.feature_not_supported, f"kernel argument {i}: an accessor "
                                "with an offset cannot be passed to an interop kernel", ctx)
            plan.append(("acc", v))
        elif isinstance(v, local_accessor):
            plan.append(("local", v.byte_size()))
        elif isinstance(v, usm_pointer):
            a = v.check_live(f"kernel argument {i}")
            if a.ctx_key != ctx.key:
                raise exception(errc.invalid, f"kernel argument {i}: {v!r} was allocated in "
                                f"{a.ctx!r}, not in the queue's context", ctx)
            plan.append(("ptr", v))
        else:
            plan.append(("val", _scalar(v, i, info)))
    return plan


def _interop_sizes(kind: str, index_space: sycl_range | nd_range | None, ctx: context,
                   dev: device, name: str) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """OpenCL global and local sizes (SYCL's order reversed), nd_range divisibility and the
    device's size_t checked."""
    from pysycl._objects.range import nd_range

    if kind == "single_task":
        return (1,), None
    g = (index_space.get_global_range() if isinstance(index_space, nd_range)
         else index_space).values
    if prod(g) > SMALL:
        check_global_size(f"kernel {name!r}", g, dev, None)
    if not isinstance(index_space, nd_range):
        return native_order(index_space), None
    gsize = native_order(index_space.get_global_range())
    lsize = native_order(index_space.get_local_range())
    for g, loc in zip(gsize, lsize, strict=False):
        if loc == 0 or g % loc:
            raise exception(errc.nd_range, f"nd_range: global range "
                            f"{tuple(index_space.get_global_range())} is not divisible by "
                            f"the local range {tuple(index_space.get_local_range())}", ctx)
    return gsize, lsize


def interop_plan(ex: DeviceExecutor, sub: Submission, cmd: KernelCommandRef
                 ) -> tuple[Any, tuple[int, ...], tuple[int, ...] | None,
                            list[tuple[str, Any]]]:
    """Check a ``sycl.kernel`` command (its ``set_arg`` arguments in ``sub.kernel_args``) for
    executor ``ex``: ``(native kernel, global size, local size, plan)`` in native order,
    ``plan`` one ``(what, value)`` per argument -- ``"acc"`` an accessor (its device copy
    for ``ex.key``), ``"local"`` bytes of local memory, ``"ptr"`` a USM pointer
    (``make_native_arg()``), else the value itself (what :func:`prepare_interop` launches
    with, and a backend's command graph records)."""
    from pysycl._objects.info import _kernel_info as kinfo

    kind, index_space, kobj = cmd.kind, cmd.index_space, cmd.fn
    ctx, dev = sub.queue.get_context(), sub.queue.get_device()
    if kobj.get_context() != ctx:
        raise exception(errc.invalid, "the kernel's context is not the queue's context", ctx)
    name = kobj.ext_pysycl_name()
    if kobj.is_python:
        raise exception(errc.invalid, f"kernel {name!r} is a Python kernel: submit the "
                        "Python function with h.use_kernel_bundle(kb); sycl.kernel objects with "
                        "set_arg are for kernels built from source or OpenCL interop", ctx)
    native = kobj.native_for(dev)
    n = kobj.get_info(kinfo.num_args)
    given = dict(sub.kernel_args or {})
    missing = [i for i in range(n) if i not in given]
    if missing:
        raise exception(errc.kernel_argument, f"kernel {name!r} takes {n} argument(s); "
                        f"set_arg was not called for index {missing}", ctx)
    extra = [i for i in given if i >= n]
    if extra:
        raise exception(errc.kernel_argument, f"kernel {name!r} takes {n} argument(s); "
                        f"set_arg index {extra} is out of range", ctx)
    plan = _arg_plan(kobj, dev, given, n, ctx)
    gsize, lsize = _interop_sizes(kind, index_space, ctx, dev, name)
    return native, gsize, lsize, plan


def interop_args(plan: Sequence[tuple[str, Any]], key: Any) -> list[Any]:
    """The native arguments of an :func:`interop_plan` plan (``key``: the executor's, what
    the buffers' device copies are keyed by); ``("local", nbytes)`` for local memory."""
    args: list[Any] = []
    for what, v in plan:
        if what == "acc":
            args.append(v.coherence.dev[key])
        elif what == "local":
            args.append(("local", v))
        elif what == "ptr":
            args.append(v.make_native_arg())
        else:
            args.append(v)
    return args


def prepare_interop(ex: DeviceExecutor, sub: Submission, cmd: KernelCommandRef
                    ) -> Callable[[Sequence[Any] | None], Any]:
    """Check a ``sycl.kernel`` command (:func:`interop_plan`) for executor ``ex``; return
    ``launch(wait_for) -> native event`` (``DeviceExecutor.launch_native``)."""
    native, gsize, lsize, plan = interop_plan(ex, sub, cmd)
    key = ex.key  # what the buffers' copies for this queue are keyed by
    ptrs = tuple(v for what, v in plan if what == "ptr")

    def launch(wait_for: Sequence[Any] | None) -> Any:
        # the pointers' memory lives until the kernel completes
        return ex.launch_native(native, gsize, lsize, interop_args(plan, key), wait_for,
                                ptrs or None)

    return launch
