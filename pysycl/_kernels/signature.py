"""A kernel function's parameters checked against its launch (once per code object)."""

from __future__ import annotations

import dis
import inspect
from collections.abc import Callable
from types import MethodType
from typing import TYPE_CHECKING, Any

from pysycl._core.abi import KERNEL_RESULT_HINT, nested_codes
from pysycl._core.exceptions import errc, exception, kernel_signature_error
from pysycl._core.where import location
from pysycl._kernels.captures import call_graph
from pysycl._kernels.functor import body_of
from pysycl._kernels.kstream import is_stream_value
from pysycl._kernels.specconst import kernel_handler

if TYPE_CHECKING:
    import types

_checked: dict[types.CodeType | None, int] = {}  # code object -> the parameter count it was checked for
#: ``checked_params[code]``: the parameter count a plain function of ``code`` was checked for
#: (:func:`check_kernel` returns at once for another of the same count: a caller may skip it)
checked_params = _checked

#: Calling such a function only makes a coroutine (or generator) object: its body never runs.
_ASYNC = inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | inspect.CO_ASYNC_GENERATOR
_NOT_PLAIN = _ASYNC | inspect.CO_GENERATOR


def check_kernel(kernel: Any, nparams: int, where: str | Callable[[], str],
                 kind: str = "") -> None:
    """Check a kernel's parameters against its launch (once per code object).

    ``where`` names the launch in the message; a callable is called only on failure,
    so the per-submit fast path builds no string. ``kind`` (``"range"``, ``"nd_range"``,
    ``"single_task"``) adds how to read the work-item's ids to the message.

    A function object's ``__call__`` (or a bound method) is checked without its
    first parameter (``self``). A parameter after the ``nparams`` the launch passes is
    the ``sycl.kernel_handler`` only when the kernel reads specialization constants
    (:func:`takes_kernel_handler`): ``def k(i, j)`` over a 2-D range is a mistake,
    not a kernel_handler named ``j``.

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
            f"{location(code.co_filename, code.co_firstlineno)}: kernel {kernel.__qualname__} is {what}: "
            "calling it would not run its body; a kernel is a plain def or lambda (write results "
            "to an accessor or a USM pointer)")
    got = code.co_argcount - self_param
    # nparams + 1: a trailing sycl.kernel_handler (specialization constants)
    if got not in (nparams, nparams + 1) or code.co_kwonlyargcount \
            or code.co_flags & 0x0C or (  # *args/**kwargs
                got == nparams + 1 and not getattr(kernel, "__defaults__", None)
                and not takes_kernel_handler(kernel)):
        raise _wrong_count(kernel, code, self_param, nparams, where, kind)
    if got == nparams + 1 and getattr(kernel, "__defaults__", None):
        # lambda i, c=c: ... binds c the way Python loops do; here c would be the handler
        extra = code.co_varnames[code.co_argcount - 1]
        raise kernel_signature_error(
            errc.invalid,
            f"{location(code.co_filename, code.co_firstlineno)}: kernel {kernel.__qualname__}: parameter "
            f"{extra!r} has a default value, but a kernel's parameter after the work-item is "
            f"the sycl.kernel_handler; read {extra!r} from the enclosing scope instead (a "
            "captured number is a kernel argument), or pass it through a helper function's "
            "default (def g(x, c=c))")
    _checked[code] = nparams + self_param


#: How the kernel reads its work-item's ids, by launch kind (for the message).
_IDS = {"range": ("def k(item)", "item[0], item[1] (or item.get_id(d))"),
        "nd_range": ("def k(it)", "it.get_global_id(0), it.get_global_id(1), "
                                  "it.get_local_id(d)"),
        "hierarchical": ("def k(g)", "g.get_group_id(d) at group scope, and h.get_global_id(d) "
                                     "in g.parallel_for_work_item(lambda h: ...)")}


def _wrong_count(kernel: Any, code: types.CodeType, self_param: int, nparams: int, where: str,
                 kind: str) -> kernel_signature_error:
    """The error of a kernel whose parameters do not fit its launch."""
    got = code.co_argcount - self_param
    names = ", ".join(code.co_varnames[self_param:code.co_argcount])
    want = "no parameters" if nparams == 0 else (
        "one parameter, the work-item" if nparams == 1 else
        f"{nparams} parameters (the work-item, then one reducer per reduction)")
    text = (f"{location(code.co_filename, code.co_firstlineno)}: kernel {kernel.__qualname__} takes "
            f"{got} parameter(s) ({names}) but {where} passes {want}")
    if kind in _IDS and got > nparams:
        sig, ids = _IDS[kind]
        text += (f". The work-item is one parameter however many dimensions the index space "
                 f"has: write {sig} and read {ids}")
    if got == nparams + 1:
        text += (". An extra last parameter is a sycl.kernel_handler only in a kernel that "
                 "reads specialization constants (kh.get_specialization_constant(...), in the "
                 "kernel or a function it calls) or annotates it (kh: sycl.kernel_handler)")
    else:
        text += " (and optionally a trailing sycl.kernel_handler)"
    return kernel_signature_error(errc.invalid, text)


def takes_kernel_handler(kernel: Any) -> bool:
    """Whether a kernel's last parameter is a ``sycl.kernel_handler`` (SYCL 2020 §4.9.4.4).

    The rule, documented in docs/kernels.md: the parameter is annotated
    ``sycl.kernel_handler``, or the kernel reads specialization constants -- the
    kernel, a function defined in it or a helper function it calls (however deep)
    calls ``get_specialization_constant``, the one thing a kernel_handler is for.
    """
    code = kernel.__code__
    ann = getattr(kernel, "__annotations__", {}).get(code.co_varnames[code.co_argcount - 1])
    if ann is kernel_handler or (isinstance(ann, str)
                                 and ann.rpartition(".")[2] == "kernel_handler"):
        return True
    for fn, _ in call_graph(kernel):
        f = getattr(fn, "py_func", fn)
        if any(_SPEC_READ in c.co_names for c in nested_codes(f.__code__)):
            return True
    return False


_SPEC_READ = "get_specialization_constant"


def returned(desc: str, value: object) -> kernel_signature_error:
    """The host_debuggable device's error for a work-item of kernel ``desc`` (``kernel 'k'
    (file:line)``) that returned ``value`` (the compiler refuses such a kernel:
    ``pysycl_numba.reject.RejectKernelResult``)."""
    return kernel_signature_error(errc.invalid, f"{desc} returned a {type(value).__name__} "
                                  f"value, but {KERNEL_RESULT_HINT} (host_debuggable device)")


def no_value(v: object, reducer: type) -> bool:
    """A work-item's result that loses nothing on the host device: ``None``, a
    ``sycl.stream`` (what ``out << x`` gives), a ``reducer`` (what the host device's
    ``r.combine(x)`` gives), or a tuple of such (the compiler's rule)."""
    return v is None or is_stream_value(v) or type(v) is reducer or (
        type(v) is tuple and all(no_value(e, reducer) for e in v))


#: Code objects whose ``return`` gives a computed value (``lambda i: ra[i] * 2``) -> True.
_computed: dict[types.CodeType, bool] = {}


def returns_computed(code: types.CodeType) -> bool:
    """Whether a kernel's ``return`` (a lambda's body) may give a computed value: an
    operand other than a call's result, a tuple or ``None``.

    A lambda ending in a call (``sycl.atomic_ref(...).fetch_add(1)``,
    ``o.__setitem__(i, v)``) discards the result, as a C++ expression statement does;
    a tuple sequences such calls. The compiler's rule
    (``pysycl_numba.reject.RejectKernelResult``) reads the same from the typed code.
    """
    got = _computed.get(code)
    if got is None:
        ins = list(dis.get_instructions(code))
        got = _computed[code] = any(
            (i.opname == "RETURN_CONST" and i.argval is not None)
            or (i.opname == "RETURN_VALUE" and k and not (
                ins[k - 1].opname.startswith(("CALL", "BUILD_TUPLE"))
                or (ins[k - 1].opname == "LOAD_CONST" and ins[k - 1].argval is None)))
            for k, i in enumerate(ins))
    return got


def offset_error(kernel: Any, offset: Any) -> exception:
    """``parallel_for(range, offset, kernel)``: the work-item offset SYCL 2020 deprecates
    (docs/mapping.md says why pysycl has none): ``errc.feature_not_supported``, naming the
    kernel's file:line and how to add the offset in the kernel."""
    code = getattr(kernel, "__code__", None)
    where = f"{location(code.co_filename, code.co_firstlineno)}: " if code is not None else ""
    name = getattr(kernel, "__qualname__", type(kernel).__name__)
    dims = range(len(offset))
    before = ", ".join(f"o{d} = offset[{d}]" for d in dims)
    index = ", ".join(f"i[{d}] + o{d}" for d in dims)
    return exception(errc.feature_not_supported, (
        f"{where}kernel {name}: parallel_for(range, offset, kernel) -- a work-item offset "
        f"({offset!r}) is deprecated in SYCL 2020 and pysycl does not support it: run the "
        f"kernel over the range and add the offset in it ({before} before the kernel, then "
        f"{index} where the kernel uses its id)"))
