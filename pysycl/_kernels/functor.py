"""Function objects as kernels: ``h.parallel_for(r, Saxpy(x, y, a))`` (C++'s functors).

A kernel may be any object whose class defines ``__call__`` as a plain Python
function (or a bound method, ``obj.method``): the method's body is the kernel,
its first parameter the object, and the attributes it reads as ``self.name``
are its captures -- kernel arguments exactly like closure cells (accessors, USM
pointers, numbers, tuples, arrays), never constants. Another instance of the same
class with attributes of the same types reuses the compiled kernel.

The compiler gets a *copy* of the method's function marked with
:data:`pysycl._core.abi.FUNCTOR_ATTR` (made once per method, held weakly by
the method's function): code, globals and closure only, never the user's
object, so no registry keeps the object (and the buffers it references)
alive.
"""

from __future__ import annotations

import dis
import types
import weakref
from typing import Any

from pysycl._core.abi import FUNCTOR_ATTR, nested_codes
from pysycl._core.exceptions import errc, kernel_compile_error
from pysycl._core.where import location

_FunctionType = types.FunctionType
_MethodType = types.MethodType

#: method function -> its marked copy (weak: a class that goes away takes its entry).
_bodies: weakref.WeakKeyDictionary[types.FunctionType, types.FunctionType] = (
    weakref.WeakKeyDictionary())
#: code of a method -> the attribute names it reads off its first parameter.
_attrs: dict[types.CodeType, tuple[str, ...]] = {}


def body_of(kernel: Any) -> tuple[types.FunctionType, Any] | None:
    """``(marked function, self)`` of a function object or bound method; None for others.

    ``None`` for plain functions (the common case: callers test ``type(k) is
    FunctionType`` first) and for objects without a Python ``__call__``.
    """
    if type(kernel) is _MethodType:
        fn, obj = kernel.__func__, kernel.__self__
    else:
        fn, obj = type(kernel).__dict__.get("__call__") or _inherited_call(type(kernel)), kernel
    if type(fn) is not _FunctionType or fn.__code__.co_argcount < 1:
        return None
    body = _bodies.get(fn)
    if body is None:
        body = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                                  fn.__closure__)
        body.__qualname__ = fn.__qualname__
        body.__module__ = fn.__module__
        setattr(body, FUNCTOR_ATTR, True)
        _bodies[fn] = body
    return body, obj


def _inherited_call(cls: type) -> Any:
    """``__call__`` as the class's MRO defines it (None when only ``object`` has one)."""
    for c in cls.__mro__[1:]:
        f = c.__dict__.get("__call__")
        if f is not None:
            return f
    return None


def is_body(fn: Any) -> bool:
    """Whether ``fn`` is a function object's marked kernel body (:func:`body_of`)."""
    return getattr(fn, FUNCTOR_ATTR, False) is True


def self_attrs(code: types.CodeType) -> tuple[str, ...]:
    """The attribute names ``code`` reads off its first parameter (``self.x``), in order."""
    names = _attrs.get(code)
    if names is not None:
        return names
    out: list[str] = []
    me = code.co_varnames[0] if code.co_argcount else None
    for c in nested_codes(code):  # a nested lambda reads self through its closure cell
        ins = list(dis.get_instructions(c))
        for k, i in enumerate(ins[:-1]):
            if (i.opname == "LOAD_FAST" and i.arg == 0 and c is code) or (
                    i.opname == "LOAD_DEREF" and i.argval == me):
                nxt = ins[k + 1]
                if nxt.opname in ("LOAD_ATTR", "LOAD_METHOD") and nxt.argval not in out:
                    out.append(nxt.argval)
    names = _attrs[code] = tuple(out)
    return names


def missing_attribute(fn: types.FunctionType, obj: Any, name: str) -> kernel_compile_error:
    """The error of a ``self.name`` the object does not have."""
    code = fn.__code__
    return kernel_compile_error(
        errc.kernel, f"{location(code.co_filename, code.co_firstlineno)}: kernel {fn.__qualname__} "
        f"reads self.{name}, but the {type(obj).__name__} object has no attribute {name!r}: "
        "set it in __init__ (attributes are the kernel's captures)")


def not_an_argument(fn: types.FunctionType, name: str, v: Any) -> kernel_compile_error:
    """The error of a ``self.name`` that cannot be a kernel argument (a method, a module ...)."""
    code = fn.__code__
    if callable(v):
        what = (f"self.{name} is a {type(v).__name__}: a function object's methods and "
                "callable attributes cannot be called in its kernel; make it a plain function "
                "(module level or nested) and call it with the values it needs")
    else:
        what = (f"self.{name} is a {type(v).__name__}, which cannot be a kernel argument; "
                "a function object's attributes are its captures: accessors, USM pointers, "
                "numbers, tuples of numbers and small numpy arrays")
    return kernel_compile_error(errc.kernel, f"{location(code.co_filename, code.co_firstlineno)}: kernel "
                                f"{fn.__qualname__}: {what}")


def forget() -> None:
    """Drop the per-code analyses (with the memory cache of kernels)."""
    _attrs.clear()
