"""CUDA programs for kernel bundles (:class:`pysycl._core.backends.Programs`) over PTX.

A CUDA device loads PTX (and the cubins the driver makes of it), never SPIR-V or OpenCL
C: :func:`from_il` and :func:`from_source` are ``errc.feature_not_supported`` (the bundle
layer never asks: a SPIR-V image is not compatible with a CUDA device, and
``device.ext_oneapi_can_compile`` answers false for those languages). A
:class:`Program` holds, per device handle, the PTX text (or a cubin) it was made of,
and once built the cubin and its loaded ``CUmodule``:

* ``compile``: keeps the PTX (an object; the options are checked);
* ``link``: merges the PTX texts (:func:`pysycl._core.ptx_link.link_ptx`) and builds
  the result once. The driver's JIT linker takes several PTX modules
  (``cuLinkAddData`` each), but every module pysycl emits defines the same helper
  symbols (libdevice's tables, the work-group scratch, ``__pysycl_dyn``), which the
  text merge renames; it is also what the bundle layer does for NVIDIA's OpenCL, so
  one merged image (one digest, one cache key) serves both paths;
* ``build``: :func:`pysycl._backends.cuda.build.for_driver`, then the cubin from the
  device-binary cache or the JIT linker (:meth:`pysycl._backends.cuda.build.Cache.cubin`),
  loaded with ``cuModuleLoadData`` into the device's primary context. A cubin given to
  :func:`from_binaries` (the bundle layer's binary cache) is loaded as it is.

Build options are NVIDIA OpenCL's, mapped onto JIT options (:func:`jit_options`).
Kernels are :class:`Kernel` objects, the backend's :class:`~pysycl._backends.cuda.build.Built`
(what ``CUDALaunch`` and ``launch_native`` launch) plus what the PTX says of them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda import objects as _obj
from pysycl._backends.cuda.build import Built, builds, for_driver
from pysycl._core.exceptions import errc, exception
from pysycl._core.ptx_link import link_ptx

ELF = b"\x7fELF"
_ENTRY = re.compile(r"\.entry\s+([\w$]+)\s*\(([^)]*)\)([^{]*)\{")
_REQNTID = re.compile(r"\.reqntid\s+(\d+)(?:\s*,\s*(\d+))?(?:\s*,\s*(\d+))?")
#: PTX scalar types -> OpenCL C type names (signedness is not in PTX: the signed name);
#: None: 64-bit integers, which may be pointers (unknown)
_TYPES = {"u8": "char", "s8": "char", "b8": "char", "u16": "short", "s16": "short",
          "b16": "short", "f16": "half", "u32": "int", "s32": "int", "b32": "int",
          "f32": "float", "f64": "double", "u64": None, "s64": None, "b64": None}
_SPACES = {"global": "global", "shared": "local", "const": "constant"}


def _not_here(what: str) -> exception:
    return exception(errc.feature_not_supported, f"pysycl: the CUDA backend loads PTX images "
                     f"and cubins, not {what}; use the OpenCL view of the device "
                     "(PYSYCL_DEVICE_FILTER=opencl:gpu)")


# ----------------------------------------------------------------- options
def jit_options(options: str | Sequence[str]) -> tuple[tuple[str, int], ...]:
    """NVIDIA OpenCL's build options as the driver's JIT options (``CUjit_option`` names).

    ``-cl-nv-maxrregcount=N`` (or ``-nv-maxrregcount=N``): ``CU_JIT_MAX_REGISTERS``;
    ``-cl-nv-opt-level=N``: ``CU_JIT_OPTIMIZATION_LEVEL`` (0-4); ``-cl-opt-disable``: level
    0; ``-cl-nv-verbose``: ``CU_JIT_LOG_VERBOSE``. The other OpenCL options (``-cl-...``,
    ``-w``, ``-Werror``) are the OpenCL C front end's and mean nothing to PTX: ignored, as
    NVIDIA's OpenCL does. Any other option is ``errc.invalid``.
    """
    words = options.split() if isinstance(options, str) else [w for o in options
                                                                  for w in o.split()]
    out: dict[str, int] = {}
    for w in words:
        base = w.removeprefix("-cl-nv-").removeprefix("-nv-") if w.startswith(
            ("-cl-nv-", "-nv-")) else None
        name, _, val = (base or "").partition("=")
        if base is not None and name in ("maxrregcount", "opt-level"):
            if not val.isdigit() or (name == "opt-level" and int(val) > 4):
                raise exception(errc.invalid, f"build option {w!r}: a number is expected "
                                + ("(0 to 4)" if name == "opt-level" else "of registers"))
            key = "CU_JIT_MAX_REGISTERS" if name == "maxrregcount" else \
                "CU_JIT_OPTIMIZATION_LEVEL"
            out[key] = int(val)
        elif base == "verbose":
            out["CU_JIT_LOG_VERBOSE"] = 1
        elif base is not None:
            raise exception(errc.invalid, f"build option {w!r} is not an option of the CUDA "
                            "JIT (it takes -cl-nv-maxrregcount=N, -cl-nv-opt-level=N, "
                            "-cl-nv-verbose)")
        elif w == "-cl-opt-disable":
            out["CU_JIT_OPTIMIZATION_LEVEL"] = 0
        elif not (w.startswith("-cl-") or w in ("-w", "-Werror")):
            raise exception(errc.invalid, f"build option {w!r} is not an OpenCL build option "
                            "(PTX images take -cl-... and NVIDIA's -cl-nv-... options)")
    return tuple(sorted(out.items()))


# ----------------------------------------------------------------- PTX facts
def is_cubin(data: bytes) -> bool:
    """Whether ``data`` is a cubin (an ELF image), not PTX text."""
    return data[:4] == ELF


def entries(ptx: bytes) -> list[str]:
    """The kernel entry points of a PTX text, in order."""
    return [m.group(1) for m in _ENTRY.finditer(ptx.decode(errors="replace"))]


def params_of(ptx: bytes, name: str) -> tuple[tuple[str, str] | None, ...] | None:
    """Per parameter of entry ``name``: ``(address qualifier, OpenCL C type name)``
    (``("global", "void*")``, ``("local", "void*")``, ``("private", "float")``), or None
    where PTX does not say (a 64-bit integer may be a pointer; a ``.b8`` array is a
    struct). None: no entry ``name``."""
    for m in _ENTRY.finditer(ptx.decode(errors="replace")):
        if m.group(1) != name:
            continue
        out: list[tuple[str, str] | None] = []
        for item in (p for p in m.group(2).split(",") if p.strip()):
            words = item.split()
            if "[" in words[-1]:
                out.append(None)
                continue
            if ".ptr" in words:
                i = words.index(".ptr")
                space = words[i + 1].lstrip(".") if i + 1 < len(words) else ""
                qual = _SPACES.get(space, "global" if space in ("", "align") else None)
                out.append((qual, "void*") if qual else None)
                continue
            types = [w.lstrip(".") for w in words if w.lstrip(".") in _TYPES]
            t = _TYPES.get(types[0]) if types else None
            out.append(("private", t) if t else None)
        return tuple(out)
    return None


def reqntid_of(ptx: bytes, name: str) -> tuple[int, int, int]:
    """Entry ``name``'s required block (``.reqntid``, x first), or (0, 0, 0)."""
    for m in _ENTRY.finditer(ptx.decode(errors="replace")):
        if m.group(1) == name:
            r = _REQNTID.search(m.group(3))
            if r:
                return tuple(int(g or 1) for g in r.groups())  # type: ignore[return-value]
    return (0, 0, 0)


# ----------------------------------------------------------------- objects
class Program:
    """A CUDA program: per device handle, the PTX text or cubin it is made of, and once
    built its cubin and loaded module (in the device's primary context)."""

    __slots__ = ("__weakref__", "ctx", "cubins", "inputs", "logs", "modules", "state")

    def __init__(self, ctx: Any, inputs: dict[int, bytes]) -> None:
        self.ctx = ctx                       # the sycl.context's CudaContext
        self.inputs = inputs                 # device handle -> PTX text or cubin
        self.cubins: dict[int, bytes] = {}
        self.modules: dict[int, Any] = {}
        self.logs: dict[int, str] = {}
        self.state = "input"                 # "object", "executable"

    def ptx(self) -> bytes | None:
        """The program's PTX text (None: it was made of cubins)."""
        return next((b for b in self.inputs.values() if not is_cubin(b)), None)


class Kernel(Built):
    """A kernel of a built program on one device: a :class:`Built` that the launches take,
    with what its PTX says (None: made of a cubin)."""

    __slots__ = ("params", "reqntid", "sizes")

    def __init__(self, module: Any, fn: Any, entry: str, ptx: bytes | None) -> None:
        super().__init__(module, fn, entry)
        self.params = params_of(ptx, entry) if ptx is not None else None
        self.reqntid = reqntid_of(ptx, entry) if ptx is not None else (0, 0, 0)
        self.sizes: tuple[int, ...] | None = None

    def param_sizes(self) -> tuple[int, ...]:
        """The byte size of each parameter (``cuFuncGetParamInfo``)."""
        if self.sizes is None:
            cu = d.cu
            out = []
            while True:
                r = cu.cuFuncGetParamInfo(self.fn, len(out))
                if r[0]:
                    break
                out.append(int(r[2]))
            self.sizes = tuple(out)
        return self.sizes


def handle(obj: Any) -> int:
    """The handle of a ``CUdevice`` (its ordinal), the key of :func:`binaries`."""
    return int(obj)


def _primary(ctx: Any, dev: Any) -> Any:
    """The primary context of device ``dev`` in CudaContext ``ctx``."""
    ordinal = handle(dev)
    c = ctx.primary.get(ordinal)
    if c is None:
        raise exception(errc.invalid, f"pysycl: CUDA device {ordinal} is not a device of the "
                        "program's context")
    _obj.make_current(c)
    return c


def from_il(ctx: Any, il: bytes) -> Program:
    raise _not_here("SPIR-V")


def from_il_specialized(ctx: Any, il: bytes, values: Sequence[Any]) -> Program:
    raise _not_here("SPIR-V")


def from_source(ctx: Any, source: str) -> Program:
    raise _not_here("OpenCL C source")


def from_binaries(ctx: Any, devices: Sequence[Any], binaries: Sequence[bytes]) -> Program:
    """A program of one PTX text or cubin per device (not built)."""
    inputs: dict[int, bytes] = {}
    for dev, b in zip(devices, binaries, strict=True):
        b = bytes(b)
        if not is_cubin(b) and not entries(b):
            raise exception(errc.build, f"pysycl: the binary for CUDA device {handle(dev)} is "
                            "neither a cubin nor PTX text with a kernel entry (.entry)")
        inputs[handle(dev)] = b
    return Program(ctx, inputs)


def _input(prg: Program, dev: Any) -> bytes:
    data = prg.inputs.get(handle(dev))
    if data is None:
        raise exception(errc.invalid, f"pysycl: the program was not made for CUDA device "
                        f"{handle(dev)}")
    return data


def compile_program(prg: Program, devices: Sequence[Any], options: Any = "") -> None:
    """An object: the PTX kept as it is (the options checked; nothing runs the JIT yet)."""
    jit_options(options)
    for dev in devices:
        _input(prg, dev)
    prg.state = "object"


def link_programs(ctx: Any, programs: Sequence[Program], devices: Sequence[Any],
                  options: Any = "") -> Program:
    """One executable of the PTX of ``programs``, merged by text, built for ``devices``."""
    inputs: dict[int, bytes] = {}
    for dev in devices:
        texts = [_input(p, dev) for p in programs]
        if len(texts) > 1 and any(is_cubin(t) for t in texts):
            raise exception(errc.build, "online link: a cubin is not relocatable, it cannot "
                            "be linked with other modules (link the PTX images)")
        try:
            inputs[handle(dev)] = link_ptx(texts)
        except ValueError as e:
            raise exception(errc.build, f"online link failed: {e}") from None
    exe = Program(ctx, inputs)
    build_program(exe, devices, options)
    return exe


def build_program(prg: Program, devices: Sequence[Any], options: Any = "") -> None:
    """Cubins of the program's PTX (the binary cache or the JIT), loaded per device."""
    opts = jit_options(options)
    cu = d.cu
    for dev in devices:
        h = handle(dev)
        data = _input(prg, dev)
        _primary(prg.ctx, dev)
        log: list[str] = []
        if is_cubin(data):
            cubin = data
            prg.modules[h] = d.call(cu.cuModuleLoadData, cubin, what="loading the program's "
                                    "module (cuModuleLoadData)", default=errc.build)
        else:  # PTX: the cached cubin, or a fresh one where the driver refuses the cached
            cc = _obj.compute_capability(dev)
            names = entries(data)
            prg.modules[h], cubin = builds.module(for_driver(data), f"sm_{cc[0]}{cc[1]}",
                                                  names[0] if names else "program", opts, log)
        prg.cubins[h] = cubin
        prg.logs[h] = "\n".join(t for t in log if t)
    prg.state = "executable"


def build_log(prg: Program, devices: Sequence[Any]) -> str:
    """The JIT's info logs of ``devices``, each headed by the device."""
    parts = []
    for dev in devices:
        text = prg.logs.get(handle(dev), "")
        if text:
            parts.append(f"--- CUDA device {handle(dev)} ---\n{text}")
    return "\n".join(parts)


def binaries(prg: Program) -> dict[int, bytes]:
    """The cubins of a built program by device handle."""
    return dict(prg.cubins)


def device_cache_key(device: Any) -> str:
    """What a cubin depends on besides its PTX: the driver (its JIT) and the compute
    capability."""
    cc = _obj.compute_capability(device)
    parts = ("cuda", str(d.driver_version()), f"sm_{cc[0]}{cc[1]}")
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def kernel_names(prg: Program) -> list[str]:
    """The kernels of a program: its PTX's entries, else its modules' functions."""
    ptx = prg.ptx()
    if ptx is not None:
        return entries(ptx)
    cu = d.cu
    names: list[str] = []
    for module in prg.modules.values():
        n = int(d.call(cu.cuModuleGetFunctionCount, module))
        for f in d.call(cu.cuModuleEnumerateFunctions, n, module):
            nm = d.call(cu.cuFuncGetName, f)
            nm = nm.decode() if isinstance(nm, bytes) else str(nm)
            if nm not in names:
                names.append(nm)
        break
    return names


def create_kernel(prg: Program, name: str, device: Any = None) -> Kernel:
    """Kernel ``name`` of a built program on ``device`` (default: its only device)."""
    if device is None:
        if len(prg.modules) != 1:
            raise exception(errc.invalid, "pysycl: a CUDA program of several devices: name "
                            "the device of the kernel")
        h = next(iter(prg.modules))
    else:
        h = handle(device)
    module = prg.modules.get(h)
    if module is None:
        raise exception(errc.invalid, f"pysycl: the program is not built for CUDA device {h}")
    _obj.make_current(prg.ctx.primary[h])
    fn = d.call(d.cu.cuModuleGetFunction, module, name.encode(),
                what=f"kernel {name!r} not found in the program", default=errc.kernel)
    data = prg.inputs.get(h)
    return Kernel(module, fn, name, data if data is not None and not is_cubin(data) else None)


def typed_kernel(prg: Program, name: str, arg_dtypes: Sequence[Any],
                 device: Any = None) -> Kernel:
    """:func:`create_kernel` (the launch packs a Python kernel's arguments by its dtypes)."""
    return create_kernel(prg, name, device)


def kernel_info(k: Kernel, key: str) -> Any:
    """``NUM_ARGS``, ``ATTRIBUTES`` (PTX has none: ``""``) or ``FUNCTION_NAME``."""
    if key == "NUM_ARGS":
        return len(k.params) if k.params is not None else len(k.param_sizes())
    if key == "ATTRIBUTES":
        return ""
    if key == "FUNCTION_NAME":
        return k.entry
    raise exception(errc.invalid, f"pysycl: kernel information {key!r} has no CUDA answer")


def _attr(k: Kernel, name: str) -> int:
    cu = d.cu
    return int(d.call(cu.cuFuncGetAttribute, getattr(cu.CUfunction_attribute,
                                                     "CU_FUNC_ATTRIBUTE_" + name), k.fn))


def kernel_work_group_info(k: Kernel, device: Any, key: str) -> Any:
    """OpenCL's work-group queries from ``cuFuncGetAttribute``: ``WORK_GROUP_SIZE``
    (MAX_THREADS_PER_BLOCK), ``COMPILE_WORK_GROUP_SIZE`` (the PTX's ``.reqntid``, x
    first), ``PREFERRED_WORK_GROUP_SIZE_MULTIPLE`` (the warp), ``PRIVATE_MEM_SIZE``
    (LOCAL_SIZE_BYTES), ``LOCAL_MEM_SIZE`` (SHARED_SIZE_BYTES)."""
    if key == "WORK_GROUP_SIZE":
        return _attr(k, "MAX_THREADS_PER_BLOCK")
    if key == "COMPILE_WORK_GROUP_SIZE":
        return list(k.reqntid)
    if key == "PREFERRED_WORK_GROUP_SIZE_MULTIPLE":
        return d.attribute(device, "WARP_SIZE") or 32
    if key == "PRIVATE_MEM_SIZE":
        return _attr(k, "LOCAL_SIZE_BYTES")
    if key == "LOCAL_MEM_SIZE":
        return _attr(k, "SHARED_SIZE_BYTES")
    raise exception(errc.invalid, f"pysycl: kernel work-group information {key!r} has no "
                    "CUDA answer")


def kernel_args_info(k: Kernel, device: Any) -> tuple[tuple[str, str] | None, ...]:
    """Per parameter, what the PTX says (:func:`params_of`); None each for a cubin."""
    if k.params is not None:
        return k.params
    return (None,) * len(k.param_sizes())
