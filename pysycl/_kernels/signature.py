"""A kernel function's parameters checked against its launch (once per code object)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any

from pysycl._core.exceptions import errc, kernel_signature_error
from pysycl._kernels.functor import body_of

if TYPE_CHECKING:
    import types

_checked: dict[types.CodeType | None, int] = {}  # code object -> the parameter count it was checked for

#: Calling such a function only makes a coroutine (or generator) object: its body never runs.
_ASYNC = inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | inspect.CO_ASYNC_GENERATOR
_NOT_PLAIN = _ASYNC | inspect.CO_GENERATOR


def check_kernel(kernel: Any, nparams: int, where: str | Callable[[], str]) -> None:
    """Check a kernel's parameters against its launch (once per code object).

    ``where`` names the launch in the message; a callable is called only on failure,
    so the per-submit fast path builds no string.

    A function object's ``__call__`` (or a bound method) is checked without its
    first parameter (``self``).

    Raises:
        TypeError: ``kernel`` is not a Python function or function object.
        kernel_signature_error: it takes other parameters than ``nparams`` (and
            optionally a trailing ``sycl.kernel_handler``), or is a generator or async
            function (its body would never run).
    """
    code = getattr(kernel, "__code__", None)
    self_param = 0
    if code is None or type(kernel) is MethodType:  # a function object (functor)
        body = body_of(kernel)
        if body is not None:
            kernel, code, self_param = body[0], body[0].__code__, 1
    if _checked.get(code) == nparams + self_param:
        return
    if callable(where):
        where = where()
    if code is None:
        raise TypeError(f"{where}: the kernel must be a Python function or lambda, or an "
                        f"object whose class defines __call__ in Python, got "
                        f"{type(kernel).__name__}")
    if code.co_flags & _NOT_PLAIN:
        what = "an async function" if code.co_flags & _ASYNC else "a generator function (yield)"
        raise kernel_signature_error(
            errc.invalid,
            f"{code.co_filename}:{code.co_firstlineno}: kernel {kernel.__qualname__} is {what}: "
            "calling it would not run its body; a kernel is a plain def or lambda (write results "
            "to an accessor or a USM pointer)")
    got = code.co_argcount - self_param
    # nparams + 1: a trailing sycl.kernel_handler (specialization constants)
    if got not in (nparams, nparams + 1) or code.co_kwonlyargcount \
            or code.co_flags & 0x0C:  # *args/**kwargs
        loc = f"{code.co_filename}:{code.co_firstlineno}"
        want = "no parameters" if nparams == 0 else (
            "one parameter (the work-item)" if nparams == 1 else
            f"{nparams} parameters (the work-item, then one reducer per reduction)")
        raise kernel_signature_error(
            errc.invalid,
            f"{loc}: kernel {kernel.__qualname__} takes {got} parameter(s) but {where} passes "
            f"{want} (and optionally a trailing sycl.kernel_handler)")
    if got == nparams + 1 and getattr(kernel, "__defaults__", None):
        # lambda i, c=c: ... binds c the way Python loops do; here c would be the handler
        extra = code.co_varnames[code.co_argcount - 1]
        raise kernel_signature_error(
            errc.invalid,
            f"{code.co_filename}:{code.co_firstlineno}: kernel {kernel.__qualname__}: parameter "
            f"{extra!r} has a default value, but a kernel's parameter after the work-item is "
            f"the sycl.kernel_handler; read {extra!r} from the enclosing scope instead (a "
            "captured number is a kernel argument), or pass it through a helper function's "
            "default (def g(x, c=c))")
    _checked[code] = nparams + self_param
