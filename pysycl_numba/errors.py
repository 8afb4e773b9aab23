"""Compile errors: every failure becomes a ``pysycl.kernel_compile_error``.

The message names the kernel (its ``__qualname__``), the ``file:line`` of the
offending code in the user's file (from Numba's ``ir.Loc`` or message, never a
line inside Numba), the construct, and what to write instead. What Numba said
is kept, without Numba's frames, in the :class:`CompilerDiagnostic` the error
is chained to (``e.__cause__.text``), and logged with ``PYSYCL_LOG=debug``.
"""

from __future__ import annotations

import linecache
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pysycl._core.exceptions import errc, kernel_compile_error, kernel_signature_error
from pysycl._core.where import location
from pysycl_numba._numba_compat import errors as nb_errors
from pysycl_numba.explain_calls import (
    NO_DEVICE_IMPL,
    NUMPY_INSTEAD,
    explain_call,
    explain_library_raise,
    explain_pointer_attr,
    explain_scalar_type,
    explain_sycl_math,
    split_args,
)
from pysycl_numba.explain_types import (
    REDUCER_OPS,
    explain_method,
    explain_unify,
    float_index,
    typed_args,
)

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import ir

# Numba message fragments -> what the user should do instead.
_HINTS: list[tuple[str, str]] = [
    (
        r"Cannot determine Numba type of <class 'numpy\.ndarray'>|ndarray",
        "numpy arrays cannot be used inside a kernel; wrap the data in a "
        "sycl.buffer and capture an accessor (buf.get_access(h, mode))",
    ),
    (
        r"reflected list|List\(|<class 'list'>|build_list",
        "lists are not supported in kernels; use a tuple, or a buffer accessor",
    ),
    (
        r"DictType|<class 'dict'>|build_map",
        "dicts are not supported in kernels",
    ),
    (r"<class 'set'>|build_set|reflected set", "sets are not supported in kernels"),
    (
        r"unicode|UnicodeType|<class 'str'>",
        "strings are not supported in kernels",
    ),
    (
        r"NRT|Memory allocation|allocat",
        "kernels cannot allocate memory; use an accessor",
    ),
    (
        r"Untyped global name|Cannot determine Numba type",
        "a kernel can use captured accessors and scalars, numbers, tuples, the "
        "math module and plain Python functions (compiled as device functions)",
    ),
    (r"\bi(add|mul|and|or|xor)\(sycl\.reducer<", REDUCER_OPS),
    (r"generator|yield", "generators are not supported in kernels"),
    (r"objmode|object mode|pyobject", "Python objects cannot be used in kernels"),
]

#: terminal colour codes (Numba highlights with termcolor where it is installed)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


class KernelSourceError(Exception):
    """Raised inside the compiler with the source location of the problem.

    Converted to :class:`pysycl.kernel_compile_error` by the compiler driver,
    which knows the kernel's name. Attributes are kept apart from ``args``
    because Numba's pass manager rewrites ``args`` of exceptions passing
    through it.
    """

    def __init__(self, message: str, loc: ir.Loc | None = None, code: errc = errc.kernel,
                 signature: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.code = code
        self.signature = signature  # a kernel_signature_error (the kernel's own signature)


def format_loc(loc: ir.Loc | None) -> str:
    """``file:line`` of a Numba ``ir.Loc`` (``"<unknown>"`` without one)."""
    if loc is None or getattr(loc, "filename", None) is None:
        return "<unknown location>"
    return location(loc.filename, loc.line)


def _source_line(loc: ir.Loc) -> str:
    """The text of the source line at ``loc`` (empty when unknown)."""
    filename, line = getattr(loc, "filename", None), getattr(loc, "line", None)
    if not filename or not line:
        return ""
    return linecache.getline(filename, line).strip()


class CompilerDiagnostic(Exception):  # noqa: N818 - a diagnostic, raised only as a cause
    """What the compiler itself said: the ``__cause__`` of a :class:`pysycl.kernel_compile_error`.

    Carries no traceback (Numba's frames are noise to a user), and ``str()`` says where the
    compiler's words are rather than quoting them: a traceback shows the cause above the
    error, and Numba's wording (``No implementation of function ...``) never reaches a
    user unasked. :attr:`text` is the full text (Numba's message, with its source excerpts
    and typing trail), also logged at debug level (``PYSYCL_LOG=debug``).

    Attributes:
        text: the compiler's full message.
    """

    def __init__(self, text: str) -> None:
        super().__init__(DIAGNOSTIC)
        self.text = _ANSI.sub("", text)


#: ``str()`` of every :class:`CompilerDiagnostic`.
DIAGNOSTIC = ("the compiler's own message is e.__cause__.text of the error below (PYSYCL_LOG=debug "
              "logs it)")


def make_error(kernel: str, kernel_loc: str, exc: KernelSourceError,
               ) -> kernel_compile_error | kernel_signature_error:
    """Build the user-facing error from a :class:`KernelSourceError`."""
    where = format_loc(exc.loc) if exc.loc is not None else kernel_loc
    src = _source_line(exc.loc) if exc.loc is not None else ""
    # Numba colours its messages where termcolor is installed: plain text for users and logs.
    text = _ANSI.sub("", f"cannot compile kernel '{kernel}' (defined at {kernel_loc}): {where}: "
                         f"{exc.message}")
    if src:
        text += f"\n    {src}"
    if exc.signature:
        return kernel_signature_error(exc.code, text)
    return kernel_compile_error(exc.code, text)


def _summarize_numba_message(message: str) -> str:
    # Drop Numba's pipeline banner, source excerpts and "During: ..." trailers,
    # keep the first lines that say what is wrong.
    keep: list[str] = []
    for ln in message.splitlines():
        s = ln.strip()
        if not s or s.startswith(("Failed in", "During:", "File ", "^", "Enable logging",
                                  "<source", "raised from")):
            if keep and not s:
                break  # the first paragraph says what is wrong
            continue
        if s.startswith(">>>"):
            keep.append(s.lstrip("> "))
            continue
        if ln.startswith("    ") or re.match(r"^\d+\s*\|", s):
            continue  # a source excerpt
        keep.append(s)
        if len(keep) >= 2:
            break
    return " ".join(keep) if keep else message.strip()[:400]


@dataclass(frozen=True)
class _Loc:
    filename: str
    line: int


_NUMBA_DIR = os.path.dirname(os.path.dirname(os.path.abspath(nb_errors.__file__)))
_OWN_DIR = os.path.dirname(os.path.abspath(__file__))


def _loc_from_message(message: str) -> _Loc | None:
    """The first location in the user's code that Numba's message names.

    Numba names statements as ``File "path", line N`` (path relative to the
    working directory) and ``at /abs/path (N)``; its exception's ``.loc`` is
    often the function's first line instead, and an error raised inside one
    of Numba's own implementations names Numba's file first (the f-string of
    issue 9 reported a line of numba/cpython/builtins.py). Locations inside
    Numba or pysycl_numba are skipped.
    """
    for m in re.finditer(r'File "([^"]+)", line (\d+)|\b(?:at|Raised from) (\S[^\n]*?) \((\d+)\)\s*$',
                         message, re.MULTILINE):
        path, line = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if not path.startswith("<") and os.path.exists(path):
            path = os.path.abspath(path)
        if path.startswith((_NUMBA_DIR, _OWN_DIR)):
            continue
        return _Loc(path, int(line))
    return None


def in_compiler(loc: ir.Loc | None) -> bool:
    """Whether ``loc`` is inside Numba or pysycl_numba (a library implementation, not the
    user's code)."""
    path = getattr(loc, "filename", None)
    return bool(path) and os.path.abspath(path).startswith((_NUMBA_DIR, _OWN_DIR))


def hint_for(message: str) -> str:
    """What to do instead, for a Numba error message (may be empty)."""
    if re.search(r"cannot be (captured by a kernel|used in kernels)", message):
        return ""  # our own typing message already says what to do
    for pattern, hint in _HINTS:
        if re.search(pattern, message):
            return hint
    return ""


_VALUE = ("x a number (int32, uint32, int64, uint64, float32, float64; narrower integers "
          "widen) or a bool")
_OPS = ("op a SYCL function object: sycl.plus(), multiplies(), minimum(), maximum(), "
        "bit_and/bit_or/bit_xor() (integers), logical_and/logical_or() (also bools)")
_SHUFFLE = ("sg a sycl.sub_group (it.get_sub_group(); a work-group has no shuffles: exchange "
            f"through a local_accessor), {_VALUE}, {{}} an integer")
_JOINT = ("data a 1-D accessor, local accessor or USM pointer, first and last integers "
          "(C++'s pointer pair p, p + n is data, 0, n)")
#: How each group function is called (docs/ndrange.md), for a call the compiler refused.
GROUP_USAGE = {
    "group_barrier": "group_barrier(g[, fence_scope]): g a sycl.group or sycl.sub_group",
    "group_broadcast": (f"group_broadcast(g, x[, local_id]): g a group or sub-group, {_VALUE}, "
                        "local_id a local linear id, a sycl.id or a tuple of g's dimensions"),
    "shift_group_left": "shift_group_left(sg, x[, delta]): " + _SHUFFLE.format("delta"),
    "shift_group_right": "shift_group_right(sg, x[, delta]): " + _SHUFFLE.format("delta"),
    "permute_group_by_xor": "permute_group_by_xor(sg, x, mask): " + _SHUFFLE.format("mask"),
    "select_from_group": ("select_from_group(sg, x, remote_local_id): "
                          + _SHUFFLE.format("remote_local_id")),
    "reduce_over_group": f"reduce_over_group(g, x[, init], op): {_VALUE}, {_OPS}",
    "inclusive_scan_over_group": f"inclusive_scan_over_group(g, x, op[, init]): {_VALUE}, {_OPS}",
    "exclusive_scan_over_group": f"exclusive_scan_over_group(g, x[, init], op): {_VALUE}, {_OPS}",
    "joint_reduce": f"joint_reduce(g, data, first, last, op[, init]): {_JOINT}, {_OPS}",
    "joint_inclusive_scan": ("joint_inclusive_scan(g, data, first, last, out, out_first, op"
                             f"[, init]): {_JOINT}, out likewise, {_OPS}"),
    "joint_exclusive_scan": ("joint_exclusive_scan(g, data, first, last, out, out_first[, init]"
                             f", op): {_JOINT}, out likewise, {_OPS}"),
    **{f"{v}_of_group": f"{v}_of_group(g, flag) or {v}_of_group(g, x, pred): pred a plain "
       "Python function or lambda of x" for v in ("any", "all", "none")},
    **{f"joint_{v}_of": f"joint_{v}_of(g, data, first, last, pred): {_JOINT}, pred a plain "
       "Python function or lambda of an element" for v in ("any", "all", "none")},
}


def _explain_stream(message: str) -> tuple[str, str] | None:
    """A ``sycl.stream`` statement the compiler rejected (``overloads/stream.py`` says why)."""
    if re.search(r"Cannot unify sycl\.stream_manipulator\.", message):
        return ("choosing a stream manipulator at run time", "write the manipulator in the << "
                "statement itself, in each branch: if c: out << sycl.hex << x, else: out << x")
    if "Function(<function stream_record" in message or ">>> lshift(sycl.stream" in message:
        m = re.search(r"TypingError: ([^\n]+)", message)
        return ("this `<<` statement on a sycl.stream",
                m.group(1) if m else "a stream writes string literals, numbers, ids, items "
                "and manipulators (docs/kernels.md)")
    return None


def _explain_clip(message: str) -> tuple[str, str] | None:
    """np.clip's refusal of a Python int bound (``overloads/clip.py``), as :func:`_explain`."""
    m = re.search(r"np\.clip: Python integer (-?\d+) out of bounds for (\w+)", message)
    if m is None:
        return None
    return (f"np.clip with the bound {m.group(1)}, which does not fit {m.group(2)} (numpy "
            "raises OverflowError)", f"use a bound within {m.group(2)}'s range, or clip a "
            "wider type (np.clip(np.int64(x), ...))")


def explain_nested(message: str) -> tuple[str, str] | None:
    """A function defined inside a kernel that Numba cannot compile, as :func:`_explain`."""
    if "Unsupported use of cell variable" in message:  # the bytecode reads an unset cell
        return ("a function defined inside the kernel that calls itself, or that reads a "
                "variable of the kernel assigned after the def",
                "recursion cannot run on a device: write it as a loop; assign what a nested "
                "function reads before its def")
    return None


def _explain_numba_limits(message: str) -> tuple[str, str] | None:
    """Numba's own limits (np.linalg's scipy import, f-string format specs), as
    :func:`_explain`."""
    if "required for linear algebra" in message:  # Numba types np.linalg with scipy only
        return "numpy.linalg", NUMPY_INSTEAD
    if "format spec in f-strings" in message:
        return ("an f-string field with a format spec or conversion ({x:.2f}, {x!r})",
                "write the plain field {x} (formatted as Python's f\"{x}\"), or round the "
                "number first; sycl.stream formats numbers with sycl.setprecision(n), "
                "sycl.fixed, sycl.scientific, sycl.hex and sycl.setw(n) (docs/kernels.md)")
    return None


#: Numba's names of values print() takes (Literal[int](1), int64, float32, bool, ...).
_PRINTABLE = re.compile(r"(Literal\[(int|bool)\]\(.*\)|u?int\d+|float\d+|bool)$")


def _printed(values: str) -> str:
    """The first value of a ``print_record`` values tuple that print() cannot print, named
    for a user (``UniTuple(complex128 x 1)`` -> ``a complex128 value``)."""
    m = re.fullmatch(r"UniTuple\((.+) x \d+\)", values)
    parts = [m.group(1)] if m else split_args(values.removeprefix("Tuple(").removesuffix(")"))
    bad = next((p for p in parts if not _PRINTABLE.match(p)), values)
    if bad == "none":
        return "None"
    if bad.startswith(("Tuple(", "UniTuple(")):
        return "a tuple"
    return f"a {bad} value"


def _explain_group(message: str) -> tuple[str, str] | None:
    """A group function called with what it does not take, as :func:`_explain`."""
    m = re.search(r"No implementation of function Function\(<function (\w+) at 0x[0-9a-f]+>\) "
                  r"found for signature:\s*>>> ([^\n]+)", message)
    if m and m.group(1) in GROUP_USAGE:
        return f"sycl.{m.group(2).strip()}", f"call sycl.{GROUP_USAGE[m.group(1)]}"
    return None


def _explain_record(message: str) -> tuple[str, str] | None:
    """A ``print`` call or an assert message with a value that is no number, as :func:`_explain`."""
    if "Function(<function print_record" in message:
        m = re.search(r">>> print_record\([^,]+, sycl\.print_layout[^)]*\), ([^\n]+)\)", message)
        what = f" of {_printed(m.group(1))}" if m else ""
        return (f"print(){what}",
                "print() in a kernel prints numbers (bool, integers, floats), string "
                "literals, ids, ranges, items, nd_items, groups and nd_ranges: print z.real "
                "and z.imag of a complex number, values read from accessors")
    if "Function(<function assert_fail" in message:
        m = re.search(r">>> assert_fail\(sycl\.assert_layout.*?, ([^\n]+)\)\s*$", message, re.M)
        what = f" of {_printed(m.group(1))}" if m else ""
        return (f"an assert message{what}",
                "an assert's message in a kernel shows numbers (bool, integers, floats) and "
                "text: show int(i) or it[0] of a sycl.item, z.real and z.imag of a complex "
                "number, values read from accessors")
    return None


def _explain(message: str) -> tuple[str, str] | None:
    """(the construct the user wrote, what to write instead) for a known Numba failure."""
    m = re.search(r"unsupported opcode \((STORE_GLOBAL|STORE_DEREF|DELETE_\w+)\)", message)
    if m:
        return (f"assigning a global or enclosing variable ({m.group(1)}: global/nonlocal)",
                "captured variables are read-only kernel arguments; write results to an "
                "accessor or a USM pointer")
    if re.search(r"Unknown attribute 'append' of type list", message):
        return ("a list comprehension", "use a for loop over range(); keep values in a "
                "tuple, a sycl.private_array or an accessor")
    m = re.search(r"Unknown attribute '(\w+)' of type Module\(<module '([\w.]+)'", message)
    if m:
        attr, mod = m.groups()
        if mod.partition(".")[0] == "numpy":
            return f"{mod}.{attr}", NUMPY_INSTEAD
        if mod in ("math", "cmath"):  # e.g. math.factorial, cmath.exp2
            return (f"{mod}.{attr}", "it has no device implementation; docs/kernels.md lists "
                    "the math functions kernels support")
        return (f"{mod}.{attr}", f"the {mod} module is host code: call {mod}.{attr} on the "
                "host before submitting and capture the result (a number becomes a kernel "
                "argument)")
    m = re.search(r"Use of unsupported NumPy function '([\w.]+)'", message)
    if m:
        return m.group(1), NUMPY_INSTEAD
    found = _explain_record(message)
    if found is not None:
        return found
    m = re.search(r"No implementation of function Function\(<(built-in function|ufunc|class) "
                  r"'?(\w+)'?>\) found for signature:\s*>>> ([^\n]+)", message)
    if m:
        return explain_call(m.group(1), m.group(2), m.group(3).strip())
    m = re.search(r"Invalid use of getiter with parameters \(([^\n]+)\)", message)
    if m:
        what = m.group(1)
        if what.startswith("sycl.accessor"):
            return ("iterating over an accessor (for x in acc)",
                    "loop over its indices: for j in range(acc.get_range()[0]): x = acc[j]")
        if what.startswith("sycl.usm_pointer"):
            return ("iterating over a USM pointer (for x in p)",
                    "loop over indices: for j in range(n): x = p[j] (n captured beside p)")
        return f"iterating over a {what}", "loop over indices with range()"
    m = re.search(r"Cannot bind 'args=[^\n]*' to signature '(\([^\n]*\))'", message)
    if m:
        sig = re.sub(r",?\s*_pysycl_h\d+", "", m.group(1)).replace(", *)", ")")
        if "*," in sig or "(*," in sig:
            return (f"a call of a function with keyword-only parameters {sig}",
                    "Numba compiles keyword-only parameters (after *) only when passed as "
                    "the last positional arguments; make them ordinary parameters")
        return (f"a call whose arguments do not fit the parameters {sig}",
                "pass the arguments the function takes")
    m = re.search(r"Unknown attribute '(\w+)' of type (sycl\.[^\n]+)", message)
    if m:
        return (f"{m.group(2).split('<')[0]}.{m.group(1)}",
                "docs/kernels.md lists what accessors, items and ranges offer in kernels")
    return explain_method(message) or explain_unify(message) or _explain_any_call(message)


def _explain_any_call(message: str) -> tuple[str, str] | None:
    """Any other function Numba has no implementation of for these arguments: its name and
    the argument types, as a user names them."""
    m = re.search(r"No implementation of function (.+?) found for signature:\s*>>> "
                  r"([^\n(]+)\(([^\n]*)\)\s*$", message, re.M)
    if m is None:
        return None
    name = m.group(2).strip()
    if not name.isidentifier():  # <unknown function>: Numba's description of the callee
        d = re.search(r"<(?:built-in )?(?:function|class|method) '?([\w.]+)'?", m.group(1))
        name = d.group(1) if d else "this function"
    return f"{name}() with the arguments {typed_args(m.group(3))}", NO_DEVICE_IMPL


def _explain_span_reducer(message: str) -> tuple[str, str] | None:
    """A span reducer (``sycl.reduction(sycl.span(p, n), op)``'s kernel parameter) used as
    a whole, or indexed with a non-integer."""
    if re.search(r"sycl\.reducer<[^,<>]+\[\], ", message) is None:
        return None
    if re.search(r"\b(get|set)item\b", message):
        return ("indexing a span reducer with anything but an integer",
                "r[i] takes an integer i (or a 1-D item or id), the element of the span: "
                "r[i].combine(x), r[i] += x")
    m = re.search(r"attribute '(\w+)'", message)
    what = f"r.{m.group(1)}" if m else "this use"
    return (f"{what} of a span reducer",
            "a span reduction's kernel parameter holds one reducer per element of the span: "
            "r[i].combine(x) or r[i] += x")


def from_numba_error(
    kernel: str, kernel_loc: str, exc: BaseException
) -> kernel_compile_error | kernel_signature_error:
    """Translate a Numba typing/lowering error into a kernel compile error."""
    if isinstance(exc, KernelSourceError):
        return make_error(kernel, kernel_loc, exc)
    message = _ANSI.sub("", str(exc))
    loc = _loc_from_message(message) or getattr(exc, "loc", None)
    m = re.search(r"\[pysycl\.matrix:(\w+):(.*?):pysycl\.matrix\]", message, re.S)
    if m:  # a joint_matrix check (overloads/matrix.py): its errc and words, at the call
        return make_error(kernel, kernel_loc, KernelSourceError(m.group(2), loc,
                                                                errc[m.group(1)]))
    code = (errc.kernel if isinstance(exc, (nb_errors.NumbaError, ImportError,
                                            nb_errors.UnsupportedBytecodeError)) else errc.build)
    nested = explain_nested(message)
    if nested is not None:
        code = errc.kernel  # the user's code, not a failed build
    explained = (nested or _explain_span_reducer(message)
                 or float_index(message, _source_line(loc))
                 or explain_library_raise(message)
                 or explain_pointer_attr(message, _source_line(loc))
                 or explain_scalar_type(message) or explain_sycl_math(message)
                 or _explain_stream(message) or _explain_clip(message)
                 or _explain_numba_limits(message) or _explain_group(message)
                 or _explain(message))
    hint = hint_for(message)
    if explained is not None:
        construct, instead = explained
        if hint and instead is NO_DEVICE_IMPL:  # the hint says more about these arguments
            instead = hint
        # an empty construct: the explanation is the whole sentence
        text = f"{construct} is not supported in kernels -- {instead}" if construct else instead
    else:
        # Numba's "Untyped global name 'x': " before the message of unsupported_global
        text = re.sub(r"^Untyped global name '\w+': (?=.* cannot be used in kernels)", "",
                      _summarize_numba_message(message))
        if hint:
            text += f" -- {hint}"
    return make_error(kernel, kernel_loc, KernelSourceError(text, loc, code))
