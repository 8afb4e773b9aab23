"""Where the user's code is: the innermost frame outside the pysycl package, and the source
locations a compiled kernel refers to, resolved against the submitting program's code.

A compiled kernel is shared by every program whose kernel has the same bytecode: the memory
cache compares code objects (which ignore the file name), the disk cache hashes bytecode
(not lines). So a location baked into the kernel as ``file:line`` names the program that
compiled it first. Instead a kernel's :data:`Site` names an instruction of one of its code
objects -- numbered by :func:`code_table`: the kernel's, then its helpers' in call-graph
order, each followed by the functions defined in it -- and :func:`site_location` reads the
line from the code of the program that submitted it.
"""

from __future__ import annotations

import dis
import os
import sys
import types
from collections.abc import Callable, Iterable
from typing import Any

from pysycl._core.abi import nested_codes
from pysycl._core.where import location

#: The ``pysycl/`` folder (with a trailing separator): frames under it are pysycl's own.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def in_package(filename: str) -> bool:
    """Whether ``filename`` is one of pysycl's own source files."""
    return os.path.abspath(filename).startswith(PACKAGE_DIR)


def user_site(depth: int = 1) -> str:
    """``file:line`` of the innermost caller outside the pysycl package."""
    f = sys._getframe(depth)
    while f is not None and in_package(f.f_code.co_filename):
        f = f.f_back  # type: ignore[assignment]
    return "<unknown>" if f is None else location(f.f_code.co_filename, f.f_lineno)


def user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel, for a warning issued in the function that calls this,
    of the innermost frame outside the pysycl package (the user's line)."""
    f = sys._getframe(1)
    level = 1
    while f.f_back is not None and in_package(f.f_code.co_filename):
        f = f.f_back
        level += 1
    return level


#: A source location a compiled kernel refers to: ``(code, offset, "")`` -- instruction
#: ``offset`` of code object ``code`` of :func:`code_table` --, or ``(-1, line, file)`` for
#: code outside that table (a library's implementation).
Site = tuple[int, int, str]


def code_table(functions: Iterable[Callable[..., Any]]) -> tuple[types.CodeType, ...]:
    """The code objects of ``functions`` (a kernel, then its helpers in call-graph order),
    each followed by the code of the functions defined in it, depth first."""
    return tuple(c for f in functions for c in nested_codes(getattr(f, "py_func", f).__code__))


def site_of(codes: tuple[types.CodeType, ...], filename: str, line: int) -> Site:
    """The :data:`Site` of ``filename:line``: the first instruction at that line of the first
    code object of ``codes`` in that file that has one."""
    for k, c in enumerate(codes):
        if c.co_filename != filename:
            continue
        for ins in dis.get_instructions(c):
            if ins.positions is not None and ins.positions.lineno == line:
                return (k, ins.offset, "")
    return (-1, line, filename or "<unknown>")


def site_location(site: Site, codes: tuple[types.CodeType, ...]) -> str:
    """``file:line`` of ``site`` in the program whose :func:`code_table` is ``codes``."""
    k, where, filename = site
    if k < 0:
        return location(filename, where)
    if k < len(codes):
        for ins in dis.get_instructions(codes[k]):
            if ins.offset == where and ins.positions is not None and ins.positions.lineno:
                return location(codes[k].co_filename, ins.positions.lineno)
    return "<unknown location>"
