"""The one place that imports NVIDIA's driver API (``cuda.bindings.driver``).

Every call goes through :func:`call`, which turns a failed ``CUresult`` into a
:class:`pysycl.exception` with the errc a SYCL program expects
(``CUDA_ERROR_OUT_OF_MEMORY`` -> ``memory_allocation``, the faults a kernel leaves behind
-> ``runtime``, PTX the driver cannot take -> ``build``) and keeps the driver's code
(``exception.cuda_error``). :func:`available` says whether the backend can run at all:
the package is installed and ``cuInit`` found a driver.
"""

from __future__ import annotations

import ctypes
import logging
import os
import threading
from typing import Any

from pysycl._core.exceptions import errc, exception

_log = logging.getLogger("pysycl.cuda")

#: ``cuda.bindings.driver`` once :func:`available` loaded it (the modules of this backend
#: that call the driver are imported only after that)
cu: Any = None

#: Sticky errors: the context is unusable after them (a kernel faulted)
_STICKY = frozenset({700, 710, 714, 715, 716, 717, 718, 719, 720})
_BUILD = frozenset({200, 209, 218, 221, 222, 223, 224, 225})
_MEMORY = frozenset({2})

_state: dict[str, Any] = {}
_lock = threading.Lock()


def available() -> bool:
    """``cuda-bindings`` is installed and ``cuInit`` succeeded (once per process)."""
    ok = _state.get("ok")
    if ok is None:
        with _lock:
            ok = _state.get("ok")
            if ok is None:
                ok = _state["ok"] = _init()
    return ok


def _init() -> bool:
    """Load the driver and the bindings: False (silently) without an NVIDIA driver; with one
    but without ``cuda-bindings``, one info-level hint naming the extra."""
    global cu
    if os.environ.get("PYSYCL_DISABLE_CUDA"):
        return False
    try:  # cheap first: no driver library, no 90 ms import of the bindings
        _state["lib"] = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    try:
        from cuda.bindings import driver
    except ImportError:
        _log.info("pysycl: an NVIDIA driver is installed but not cuda-bindings: "
                  "`pip install pysycl[cuda]` runs kernels through CUDA (shared and host USM, "
                  "zero-copy with CuPy/PyTorch/JAX); until then NVIDIA GPUs run through "
                  "NVIDIA's OpenCL")
        return False
    try:
        r = driver.cuInit(0)
    except Exception as e:
        _log.debug("cuInit: %s", e)
        return False
    if r[0] != driver.CUresult.CUDA_SUCCESS:
        _log.debug("cuInit failed: %s", r[0])
        return False
    cu = driver
    _bind_loaded(driver)
    return True


def _bind_loaded(driver: Any) -> None:
    """Modules of this backend imported before the driver loaded (``from ...driver import
    cu`` bound None there) get it now, with their aliases of driver functions."""
    import sys

    for name, mod in list(sys.modules.items()):
        if name.startswith("pysycl._backends.cuda.") and mod is not None:
            if getattr(mod, "cu", driver) is None:
                mod.cu = driver
            rebind = getattr(mod, "bind_driver", None)
            if rebind is not None:
                rebind(driver)


def code_of(r: Any) -> int:
    """The ``CUresult`` of a call's result as an int."""
    return int(r[0] if isinstance(r, tuple) else r)


def error_name(code: int) -> str:
    """``CUDA_ERROR_...`` of a code, and the driver's sentence for it."""
    try:
        name = cu.cuGetErrorName(cu.CUresult(code))[1].decode()
        text = cu.cuGetErrorString(cu.CUresult(code))[1].decode()
    except Exception:
        return f"CUDA error {code}"
    return f"{name} ({text})"


def error(code: int, what: str, default: errc = errc.runtime) -> exception:
    """The ``sycl.exception`` of driver code ``code`` for ``what``."""
    if code in _MEMORY:
        kind = errc.memory_allocation
    elif code in _STICKY:
        kind = errc.runtime
    elif code in _BUILD:
        kind = errc.build
    else:
        kind = default
    e = exception(kind, f"{what}: {error_name(code)}")
    e.cuda_error = code
    return e


def is_sticky(code: int) -> bool:
    """A kernel fault: the context is unusable until it is reset."""
    return code in _STICKY


def call(fn: Any, *args: Any, what: str = "", default: errc = errc.runtime) -> Any:
    """``fn(*args)`` of the driver API: its value (None, one value, or a tuple), or a
    ``sycl.exception`` naming ``what`` (default: the function's name)."""
    r = fn(*args)
    if isinstance(r, tuple):
        c = r[0]
        if c:
            raise error(int(c), what or fn.__name__, default)
        return r[1] if len(r) == 2 else (r[1:] if len(r) > 2 else None)
    if r:
        raise error(int(r), what or fn.__name__, default)
    return None


def attribute(dev: int, name: str) -> int:
    """``cuDeviceGetAttribute(CU_DEVICE_ATTRIBUTE_<name>)`` (0 where the driver lacks it)."""
    a = getattr(cu.CUdevice_attribute, "CU_DEVICE_ATTRIBUTE_" + name, None)
    if a is None:
        return 0
    r = cu.cuDeviceGetAttribute(a, dev)
    return int(r[1]) if not r[0] else 0


def driver_version() -> int:
    """``cuDriverGetVersion`` (e.g. 13000)."""
    return int(call(cu.cuDriverGetVersion))


def entry_points(*names: str) -> tuple[int, ...]:
    """The addresses of driver functions ``names`` in the loaded ``libcuda`` (for
    ``_native.launch``, which calls them without the bindings)."""
    lib = _state.get("lib")
    if lib is None:  # not loaded (yet)
        return tuple(0 for _ in names)
    return tuple(int(ctypes.cast(getattr(lib, n), ctypes.c_void_p).value or 0) for n in names)
