"""Compile errors: every failure becomes a ``pysycl.kernel_compile_error``.

The message names the kernel (its ``__qualname__``), the ``file:line`` of the
offending code (from Numba's ``ir.Loc``), what went wrong and what to do
instead. The Numba exception that caused it is chained (``raise ... from e``)
for debugging, never shown as the only information.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from pysycl import errc, kernel_compile_error
from pysycl_numba._numba_compat import errors as nb_errors

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
    (
        r"\bi(add|mul|and|or|xor)\(sycl\.reducer<",
        "a reducer has no operator op= for its combiner: += needs sycl.plus(), *= "
        "sycl.multiplies(), &= |= ^= sycl.bit_and()/bit_or()/bit_xor(); use r.combine(x)",
    ),
    (r"generator|yield", "generators are not supported in kernels"),
    (r"objmode|object mode|pyobject", "Python objects cannot be used in kernels"),
]


class KernelSourceError(Exception):
    """Raised inside the compiler with the source location of the problem.

    Converted to :class:`pysycl.kernel_compile_error` by the compiler driver,
    which knows the kernel's name. Attributes are kept apart from ``args``
    because Numba's pass manager rewrites ``args`` of exceptions passing
    through it.
    """

    def __init__(self, message: str, loc: Any = None, code: errc = errc.kernel) -> None:
        super().__init__(message)
        self.message = message
        self.loc = loc
        self.code = code


def format_loc(loc: Any) -> str:
    """``file:line`` of a Numba ``ir.Loc`` (``"<unknown>"`` without one)."""
    if loc is None or getattr(loc, "filename", None) is None:
        return "<unknown location>"
    return f"{loc.filename}:{loc.line}"


def _source_line(loc: Any) -> str:
    try:
        line = loc.strformat().strip().splitlines()
    except Exception:
        return ""
    code = [ln for ln in line if ln.lstrip().startswith(">")]
    return code[0].strip().lstrip(">").strip() if code else ""


def make_error(kernel: str, kernel_loc: str, exc: KernelSourceError) -> kernel_compile_error:
    """Build the user-facing error from a :class:`KernelSourceError`."""
    where = format_loc(exc.loc) if exc.loc is not None else kernel_loc
    src = _source_line(exc.loc) if exc.loc is not None else ""
    text = f"cannot compile kernel '{kernel}' (defined at {kernel_loc}): {where}: {exc.message}"
    if src:
        text += f"\n    {src}"
    return kernel_compile_error(exc.code, text)


def _summarize_numba_message(message: str) -> str:
    # Drop Numba's pipeline banner and the "During: ..." trailers, keep the
    # first lines that say what is wrong.
    lines = [ln.rstrip() for ln in message.splitlines()]
    keep: list[str] = []
    for ln in lines:
        s = ln.strip()
        if not s or s.startswith(("Failed in", "During:", "File ", "^", "Enable logging")):
            continue
        if s.startswith(">>>"):
            keep.append(s.lstrip("> "))
            continue
        if s.startswith(">") or re.match(r"^\d+\s*\|", s) or s.startswith("<source"):
            continue
        keep.append(s)
        if len(keep) >= 3:
            break
    return " ".join(keep) if keep else message.strip()[:400]


@dataclass(frozen=True)
class _Loc:
    filename: str
    line: int

    def strformat(self) -> str:
        return ""


def _loc_from_message(message: str) -> _Loc | None:
    # Numba names the failing statement as 'File "path", line N:' (path
    # relative to the working directory); its exception's .loc is often the
    # function's first line instead.
    m = re.search(r'File "([^"]+)", line (\d+)', message)
    if m is None:
        return None
    path = m.group(1)
    if not path.startswith("<") and os.path.exists(path):
        path = os.path.abspath(path)
    return _Loc(path, int(m.group(2)))


def hint_for(message: str) -> str:
    """What to do instead, for a Numba error message (may be empty)."""
    if re.search(r"cannot be (captured by a kernel|used in kernels)", message):
        return ""  # our own typing message already says what to do
    for pattern, hint in _HINTS:
        if re.search(pattern, message):
            return hint
    return ""


def from_numba_error(
    kernel: str, kernel_loc: str, exc: BaseException
) -> kernel_compile_error:
    """Translate a Numba typing/lowering error into a kernel compile error."""
    if isinstance(exc, KernelSourceError):
        return make_error(kernel, kernel_loc, exc)
    message = str(exc)
    loc = _loc_from_message(message) or getattr(exc, "loc", None)
    summary = _summarize_numba_message(message)
    hint = hint_for(message)
    code = errc.kernel if isinstance(exc, nb_errors.NumbaError) else errc.build
    text = f"{summary}"
    if hint:
        text += f" -- {hint}"
    return make_error(kernel, kernel_loc, KernelSourceError(text, loc, code))
