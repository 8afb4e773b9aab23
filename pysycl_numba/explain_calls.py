"""What to say about a call or value the compiler refused, named as the user wrote it.

The construct (``pow() with a modulus``, ``math.sqrt of complex numbers``,
``tuple.index()``, ``tab.size of a captured numpy array``, ``the class Pt``) and
what to write instead, for :mod:`pysycl_numba.errors` (which finds the user's
``file:line``) and the typing context (:func:`unsupported_global`). Pure text:
no Numba imports.
"""

from __future__ import annotations

import builtins
import math
import re

import numpy as np

from pysycl_numba.explain_types import (
    OPERATORS,
    a,
    explain_operator,
    split_args,
    typed_args,
    user_type,
)

__all__ = ["split_args"]  # re-exported: errors.py reads Numba's argument lists with it

#: How the reject pass reports a raise statement in a library implementation the kernel calls
#: (``tuple.index``, ``hash``): a Numba typing error, so that Numba names the user's call.
LIBRARY_RAISES = "pysycl: the library implementation of this call raises "


NUMPY_INSTEAD = (
    "kernels compute on numbers: numpy's math functions on numbers work (np.sqrt, np.exp, "
    "np.floor, ... -- see docs/kernels.md), as do numpy scalar types (np.float32(x)); "
    "arrays live in sycl.buffers and kernels index accessors")
NO_DEVICE_IMPL = ("there is no device implementation for these arguments; kernels can call "
                   "the math module, numpy's math functions on numbers, abs/min/max/int/float/"
                   "round, SYCL functions and plain Python functions (docs/kernels.md)")
_STRINGS = ("a device has no strings: write numbers to an accessor, or print them "
            "(print(\"x =\", x) works in kernels: docs/debugging.md)")


#: What to write instead of the truth value of a vector (pysycl/_objects/vec.py says the same).
VECTOR_TRUTH = ("a vector comparison is elementwise (of a vec an int vector, -1 where true; of "
                "an marray a bool marray): test the components, if v[0] == 1.0 and v[1] == "
                "1.0, or index the comparison, if (v == 1.0)[k]")


#: Python's order comparisons (as Numba names them): the operator and the elementwise
#: method of ids and ranges that is the spec's operator (pysycl/_objects/range.py)
_ORDER = {"lt": ("<", "elementwise_lt"), "le": ("<=", "elementwise_le"),
          "gt": (">", "elementwise_gt"), "ge": (">=", "elementwise_ge")}
_MIRROR = {"lt": "gt", "le": "ge", "gt": "lt", "ge": "le"}


def explain_call(kind: str, fname: str, call: str) -> tuple[str, str]:
    """(construct, what to write instead) of a call Numba found no implementation for:
    ``kind`` as Numba names the callee (``built-in function``, ``ufunc``, ``class``)."""
    if kind == "built-in function" and _is_operator(fname, call):
        return explain_operator(fname, call)
    if kind != "ufunc" and (hasattr(builtins, fname) or hasattr(math, fname)):
        # math.log, pow, bool: not numpy's ufunc or type of the same name (np.zeros is
        # numpy's built-in function)
        return builtin_call(fname, call)
    return unsupported_call(fname, call)


def _is_operator(fname: str, call: str) -> bool:
    """Whether Numba's ``fname(...)`` is one of Python's operators as the user wrote it, to be
    said so -- but not ``pow(a, b, m)``, nor what has its own words: arithmetic on a USM
    pointer, the order of ids and ranges."""
    nargs = len(split_args(call.partition("(")[2].removesuffix(")")))
    return (fname in OPERATORS and "sycl.usm_pointer<" not in call
            and not (fname == "pow" and nargs == 3)
            and not (fname in _ORDER and ("sycl.id<" in call or "sycl.range<" in call)))


def unsupported_call(fname: str, call: str) -> tuple[str, str]:
    """(construct, what to write instead) of a call Numba found no implementation for."""
    if fname == "len" and "sycl.accessor" in call:
        return ("len() of an accessor", "use acc.get_range()[0] (the extent of dimension 0, "
                "numpy's len) or acc.size() (all its elements)")
    if fname in ("setitem", "getitem") and call.startswith(f"{fname}(sycl.accessor<"):
        return _accessor_item(fname, call)
    if "sycl.usm_pointer<" in call:
        return _pointer_use(fname, call)
    if fname in ("setitem", "getitem"):
        args = split_args(call.partition("(")[2].removesuffix(")"))
        what = f"{a(user_type(args[0]))} with {a(user_type(args[1]))}" if len(args) > 1 else \
            "this value"
        return (f"indexing {what}", "kernels index accessors, local accessors, USM pointers, "
                "private arrays and tuples with integers (a constant index for a tuple of "
                "mixed types)")
    if fname in ("str", "repr", "format"):
        return f"{fname}()", _STRINGS
    if fname in _ORDER and ("sycl.id<" in call or "sycl.range<" in call):
        return (f"{_ORDER[fname][0]} of ids or ranges", "comparisons of sycl.id and sycl.range "
                f"are elementwise in SYCL (an id or range of 0/1): write x.{_ORDER[fname][1]}(y); "
                f"a number on the left mirrors it: n {_ORDER[fname][0]} x is "
                f"x.{_ORDER[_MIRROR[fname]][1]}(n) (docs/mapping.md)")
    ufunc = getattr(np, fname, None)
    if isinstance(ufunc, np.ufunc):
        if "complex" in call:
            return (f"numpy.{fname} of complex numbers",
                    "use the cmath module (cmath.exp(z), cmath.sqrt(z), ...), arithmetic, "
                    "abs(z), z.real, z.imag, z.conjugate()")
        if fname == "power":
            return "numpy.power of integers", "use x ** y"
        return f"numpy.{fname}() with the arguments {_typed(call)}", NUMPY_INSTEAD
    if ufunc is not None:
        return f"numpy.{fname}()", NUMPY_INSTEAD
    return f"{fname}() with the arguments {_typed(call)}", NO_DEVICE_IMPL


def _typed(call: str) -> str:
    """The argument types of Numba's ``name(t1, t2)``, as a user names them: ``(int, tuple)``."""
    return typed_args(call.partition("(")[2].removesuffix(")"))


def builtin_call(fname: str, call: str) -> tuple[str, str]:
    """A Python built-in or ``math`` function called with what it does not take, named as
    written (``pow(a, b, m)``, ``math.sqrt(complex128)``) -- never as a numpy ufunc."""
    nargs = len(split_args(call.partition("(")[2].removesuffix(")")))
    if fname == "pow" and nargs == 3:
        return ("pow() with a modulus (pow(a, b, m))",
                "compute (a ** b) % m where a ** b fits the type, or multiply and reduce "
                "modulo m in a loop over the bits of b")
    if fname == "bool" and call.startswith(("bool(sycl.vec<", "bool(sycl.marray<")):
        return ("the truth value of a vector (if v == x:, if v:)", VECTOR_TRUTH)
    if fname == "bool":
        return (f"the truth value of {a(user_type(call[5:-1]))} (if x:, while x:, not x)",
                NO_DEVICE_IMPL)
    in_math = hasattr(math, fname) and not hasattr(builtins, fname)  # pow: either
    name = f"math.{fname}" if in_math else fname
    rest = call.partition("(")[2]
    if "complex" in call and in_math:
        return (f"{name} of complex numbers", "use the cmath module (cmath.exp(z), cmath.sqrt(z), "
                "...), arithmetic, abs(z), z.real, z.imag, z.conjugate()")
    if fname in ("str", "repr", "format"):
        return f"{fname}()", _STRINGS
    if "sycl.usm_pointer<" in call or call.startswith(("getitem", "setitem", "len")):
        return unsupported_call(fname, call)
    return f"{name}() with the arguments {typed_args(rest.removesuffix(')'))}", NO_DEVICE_IMPL


def _accessor_item(fname: str, call: str) -> tuple[str, str]:
    """An accessor indexed or assigned with what it does not take."""
    acc, _, rest = call[len(fname) + 1:-1].partition(">, ")
    elem, ndim = acc.removeprefix("sycl.accessor<").split(", ")[:2]
    if fname == "setitem":
        index, _, value = rest.rpartition(", ")
        if value.startswith("complex") and not elem.startswith("complex"):
            return (f"storing a {value} in a {elem} accessor",
                    "store z.real, z.imag or abs(z) (numpy would drop the imaginary part)")
    else:
        index = rest
    return (f"indexing a {ndim}-D accessor with {index}",
            f"index it with {ndim} integer(s), a sycl.item or a tuple of {ndim} integers")


def _pointer_use(fname: str, call: str) -> tuple[str, str]:
    """A USM pointer used in a way kernels do not support."""
    if fname == "len":
        return ("len() of a USM pointer or captured numpy array", "a pointer has no length: "
                "capture the element count as a number beside it (n = len(arr) before the "
                "kernel)")
    if fname in ("setitem", "getitem") and call.startswith(f"{fname}(sycl.usm_pointer<"):
        ptr, _, rest = call[len(fname) + 1:-1].partition(">, ")
        elem = ptr.removeprefix("sycl.usm_pointer<").split(", ")[0]
        index, _, value = rest.rpartition(", ") if fname == "setitem" else (rest, "", "")
        if value.startswith("complex") and not elem.startswith("complex"):
            return (f"storing a {value} through a {elem} USM pointer",
                    "store z.real, z.imag or abs(z) (numpy would drop the imaginary part)")
        return (f"indexing a USM pointer with {index}",
                "index it with one integer (p[i]), a 1-D sycl.item or it.get_id()")
    return (f"{call} on a USM pointer",
            "kernels index pointers (p[i], sycl.atomic_ref(p, i, ...)) and offset them by an "
            "integer (p + k, p - k); compute the index instead")


#: Python builtins a kernel cannot call -> what to write instead.
_BUILTINS_INSTEAD = {
    "any": "write the condition out: a or b or c, or loop: found = False, then for j in "
           "range(n): found = found or c(j)",
    "all": "write the condition out: a and b and c, or loop over range() with and",
    "sum": "add in a loop over range() (or a + b + c for a tuple)",
    "sorted": "sort on the host, or compare and swap in a loop",
    "id": "a device has no object identities; compare values instead",
    "input": "read the input on the host before submitting and capture the value",
    "open": "read files on the host before submitting; kernels read buffers",
}


def unsupported_global(val: object) -> str | None:
    """What to say about a global the kernel uses that has no device type (a class, an
    untyped builtin), or None: ``Untyped global name`` is Numba's wording."""
    name = getattr(val, "__name__", None)
    if isinstance(val, type) and name:
        return (f"the class {name} cannot be used in kernels (no objects are created on a "
                f"device, nor class attributes read): read a class attribute into a variable "
                f"before the kernel (k = {name}.K) and use k; pass an object's fields as "
                "numbers, or make it a function object (its attributes become captures)")
    if type(val).__name__ == "builtin_function_or_method" and getattr(
            val, "__module__", None) == "builtins" and name:
        instead = _BUILTINS_INSTEAD.get(name, "docs/kernels.md lists the Python built-ins "
                                        "kernels can call (abs, min, max, int, float, round, "
                                        "len, range, print, ...)")
        return f"the builtin {name}() cannot be used in kernels -- {instead}"
    return None


#: What to write instead of a library call whose implementation raises (a device cannot).
_RAISING = {
    "tuple.index": ("its ValueError for a value not in the tuple cannot be raised on a device; "
                    "search with a loop: k = -1, then for j in range(len(t)): if k < 0 and "
                    "t[j] == x: k = j"),
    "hash": ("a device has no hash(); mix the bits of a number yourself, e.g. "
             "(np.uint32(x) * np.uint32(2654435761)) >> 16, or hash on the host and capture "
             "the result"),
}


def _callee(described: str) -> str:
    """A callee as Numba's typing describes it, named for a user: ``tuple.index``, ``hash``."""
    m = re.match(r"BoundFunction\(\(<class '[\w.]*?(\w+)'>, '(\w+)'\) for ([^(\s]+)", described)
    if m:
        owner = {"BaseTuple": "tuple"}.get(m.group(1), m.group(3))
        return f"{owner}.{m.group(2)}"
    m = re.match(r"Function\(<(?:built-in )?function (\w+)", described)
    return m.group(1) if m else described


def explain_library_raise(message: str) -> tuple[str, str] | None:
    """A library implementation the kernel calls raises (``tup.index(x)``, ``hash(x)``): the
    reject pass refused its raise statement (``reject.py``).

    Returns:
        (the construct, what to write instead), or None for another message.
    """
    _, found, rest = message.partition(LIBRARY_RAISES)
    if not found:
        return None
    m = re.search(r"During: resolving callee type: ([^\n]+)", rest)
    name = _callee(m.group(1)) if m else "this call"
    instead = _RAISING.get(name, "its implementation raises an exception for some arguments, "
                           "and a device cannot raise: compute the result with if-statements "
                           "and arithmetic (docs/kernels.md lists what kernels can call)")
    return f"{name}()", instead


def explain_pointer_attr(message: str, source: str) -> tuple[str, str] | None:
    """An array attribute (``.size``, ``.shape``) of a captured numpy array (a lookup table)
    or a USM pointer: a pointer in the kernel, without its extent (``source``: the line).

    Returns:
        (the construct, what to write instead), or None for another message.
    """
    m = re.search(r"Unknown attribute '(size|shape|ndim|nbytes|dtype|itemsize|strides|T|flat)' "
                  r"of type sycl\.usm_pointer<", message)
    if m is None:
        return None
    attr = m.group(1)
    found = re.search(rf"([A-Za-z_][\w.]*)\.{attr}\b", source)
    name = found.group(1) if found else "the array"
    how = (f"t = {name}.dtype.type before the kernel, then t(x)" if attr == "dtype" else
           f"n = {name}.{attr} before the kernel, then use n"
           + (" (a tuple of numbers)" if attr in ("shape", "strides") else ""))
    return (f"{name}.{attr} of a captured numpy array (a lookup table) or USM pointer",
            f"the kernel gets a pointer to its first element, without its {attr}: read it on "
            f"the host and capture the value as well: {how}")


def explain_scalar_type(message: str) -> tuple[str, str] | None:
    """A numpy scalar type called with what it does not convert (``np.int64(it)``).

    Returns:
        (the construct, what to write instead), or None for another message.
    """
    m = re.search(r"No implementation of function Function\((u?int\d+|float\d+|bool|complex\d+)\) "
                  r"found for signature:\s*>>> (?:\w+|<unknown function>)\(([^\n]*)\)", message)
    if m is None:
        return None
    return (f"np.{m.group(1).replace('bool', 'bool_')}({m.group(2)})",
            "numpy scalar types convert numbers (integers, floats, bools); for a sycl.item "
            "or id convert a component: it[0]")


def explain_sycl_math(message: str) -> tuple[str, str] | None:
    """A SYCL math function (``sycl.sqrt``) called with what it does not take: its own reason.

    Returns:
        (the call as typed, the function's reason and where the list is), or None.
    """
    m = re.search(r"TypingError: (sycl\.[\w.]+): ([^\n]+)", message)
    call = re.search(r">>> (\w+\([^\n]*\))", message)
    if m is None:
        return None
    what = f"{m.group(1)}({call.group(1).partition('(')[2]}" if call else m.group(1)
    return what, (f"{m.group(1)} {m.group(2).strip()}; docs/kernels.md lists the SYCL "
                  "functions and the types they take")
