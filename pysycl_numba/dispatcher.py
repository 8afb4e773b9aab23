"""Device functions: plain Python functions called from kernels.

A kernel may call any plain Python function (module-level or a closure,
without a decorator); :class:`SYCLTypingContext` resolves such a function to
a :class:`DeviceDispatcher`, which compiles it for the argument types at the
call site with the device pipeline and registers the result with the target
context so that the call lowers to a direct call (inlined later). Globals and
closure cells a device function reads are frozen as constants (Numba
semantics); only the kernel's own captures are kernel arguments.

The dispatcher also serves Numba's ``@overload(..., target="generic")``
implementations, which Numba compiles through the target's
``jit_registry`` entry.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

from pysycl_numba._numba_compat import (
    Dispatcher,
    dispatcher_registry,
    global_compiler_lock,
    jit_registry,
    sigutils,
)
from pysycl_numba.target import SYCL, sycl_target

_by_function: weakref.WeakKeyDictionary[Callable[..., Any], DeviceDispatcher] = (
    weakref.WeakKeyDictionary()
)


class DeviceDispatcher(Dispatcher):
    """Compiles one Python function as a device function, per signature."""

    targetdescr = sycl_target

    def __init__(self, py_func: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(py_func, targetoptions={"nopython": True})

    def compile(self, sig: Any) -> Any:
        """Compile for ``sig`` (argument types) if not done yet; return the key."""
        from pysycl_numba.compiler import compile_device

        with global_compiler_lock, self._compiling_counter:
            args, return_type = sigutils.normalize_signature(sig)
            existing = self.overloads.get(tuple(args))
            if existing is not None:
                return existing.entry_point
            cres = compile_device(self.py_func, tuple(args), return_type)
            # The entry point is only a lookup key: device functions are
            # never called from the host. Numba's target context maps it to
            # the lowered function for calls from other device code.
            cres = cres._replace(entry_point=("pysycl.device", cres.fndesc.mangled_name))
            self.overloads[tuple(args)] = cres
            self.targetctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            return cres.entry_point

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # A device function is still the user's function on the host.
        return self.py_func(*args, **kwargs)


def device_dispatcher_for(py_func: Callable[..., Any]) -> DeviceDispatcher:
    """The (cached) device dispatcher of a plain Python function."""
    disp = _by_function.get(py_func)
    if disp is None:
        disp = DeviceDispatcher(py_func)
        _by_function[py_func] = disp
    return disp


class _DeviceJit:
    """``jit_registry`` entry: how Numba compiles overload implementations."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._kwargs = kwargs

    def __call__(self, py_func: Callable[..., Any]) -> DeviceDispatcher:
        return DeviceDispatcher(py_func, **self._kwargs)


dispatcher_registry[SYCL] = DeviceDispatcher
jit_registry[SYCL] = _DeviceJit
