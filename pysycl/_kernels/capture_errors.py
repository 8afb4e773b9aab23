"""The messages of capture mistakes: which function reads what, at which file:line.

:mod:`pysycl._kernels.captures` classifies what a kernel and its helpers read
(closure cells, globals, ``self`` attributes, helpers' parameter defaults);
these build the error for a value that cannot be read, named the way the user
wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pysycl._core.exceptions import errc, exception, kernel_compile_error
from pysycl._core.where import location
from pysycl._memory.buffer import buffer

if TYPE_CHECKING:
    import types

    from pysycl._core.launch_types import CommandGroupRef
    from pysycl._memory.usm import usm_pointer


class CodeRef(Protocol):
    """What a message reads of a function's code (a :class:`pysycl._kernels.captures.CodeInfo`,
    which lies above this module): the first line reading each name, and ``file:line`` of
    the definition."""

    @property
    def lines(self) -> Mapping[str, int]: ...
    @property
    def location(self) -> str: ...


def who(fn: types.FunctionType, owner: int, name: str, source: str = "") -> str:
    """How a message names a value read by ``fn`` (the kernel, or helper ``owner``).

    ``source == "default"``: the default value of ``fn``'s parameter ``name``.
    """
    if source == "default":
        return (f"the default value of parameter {name!r} of function {fn.__qualname__}"
                " (called by the kernel)")
    if owner:
        return f"function {fn.__qualname__} (called by the kernel) reads {name!r}"
    return f"kernel {fn.__qualname__} captures {name!r}"


def where(fn: types.FunctionType, info: CodeRef, name: str) -> str:
    """``file:line`` where ``fn`` first reads ``name`` (its definition's line otherwise)."""
    return location(fn.__code__.co_filename, info.lines.get(name, fn.__code__.co_firstlineno))


def unassigned(fn: types.FunctionType, info: CodeRef, name: str, owner: int
               ) -> kernel_compile_error:
    """The error of a closure cell read before assignment."""
    what = (f"function {fn.__qualname__} (called by the kernel)" if owner
            else f"kernel {fn.__qualname__}")
    return kernel_compile_error(errc.kernel, f"{info.location}: {what} uses {name!r} before "
                                "it is assigned")


def too_big(fn: types.FunctionType, info: CodeRef, name: str, v: int, owner: int,
            source: str) -> kernel_compile_error:
    """The error of a Python int that does not fit in a kernel's int64 argument."""
    return kernel_compile_error(errc.kernel_argument, f"{where(fn, info, name)}: "
                                f"{who(fn, owner, name, source)}: {v} does not fit in "
                                "int64")


def _foreign(fn: types.FunctionType, info: CodeRef, name: str, owner: int, source: str,
             what: str, how: str) -> exception:
    if source == "default":
        text = f"{who(fn, owner, name, source)} is {what} that {how}"
    else:
        reads = "reads" if owner else "captures"
        kind = f"function {fn.__qualname__} (called by the kernel)" if owner \
            else f"kernel {fn.__qualname__}"
        text = f"{kind} {reads} {what.split(' ', 1)[1]} {name!r} that {how}"
    return exception(errc.invalid, f"{where(fn, info, name)}: {text}")


def foreign_accessor(fn: types.FunctionType, info: CodeRef, name: str, is_global: bool,
                     owner: int, source: str) -> exception:
    """The error of an accessor of another command group."""
    if is_global:
        return _foreign(fn, info, name, owner, source, "an accessor",
                        "was not created in (or required by) this command group")
    return _foreign(fn, info, name, owner, source, "a local_accessor",
                    "was not created in this command group")


def foreign_stream(fn: types.FunctionType, info: CodeRef, name: str, owner: int,
                   source: str) -> exception:
    """The error of a ``sycl.stream`` of another command group."""
    return _foreign(fn, info, name, owner, source, "a sycl.stream",
                    "was not created in this command group")


def bad_pointer(fn: types.FunctionType, info: CodeRef, name: str, v: usm_pointer,
                group: CommandGroupRef, owner: int, source: str) -> exception:
    """The error of a USM pointer that is freed or of another context."""
    if not v._alloc.live:
        why = "points into memory that was freed with sycl.free"
    else:
        why = (f"was allocated in {v._alloc.ctx!r}, not in the queue's context "
               f"{group.queue.get_context()!r}")
    return exception(errc.invalid, f"{where(fn, info, name)}: {who(fn, owner, name, source)}: "
                     f"{v!r} {why}")


def bad_capture(fn: types.FunctionType, info: CodeRef, name: str, value: Any,
                owner: int = 0, source: str = "") -> kernel_compile_error:
    """The error of a value that is neither a kernel argument nor a compile-time constant."""
    if isinstance(value, buffer):
        hint = "capture an accessor of the buffer (buf.get_access(h, mode)), not the buffer"
    elif isinstance(value, tuple):
        hint = ("a tuple in a kernel may hold numbers (and tuples of numbers) only; capture "
                "accessors and functions one by one")
    else:
        t = type(value)
        tname = f"sycl.{t.__name__}" if t.__module__.startswith("pysycl") else t.__name__
        article = "an" if tname[:1] in "aeiouAEIOU" else "a"
        hint = (f"{article} {tname} cannot be a kernel argument; kernels capture accessors, "
                "numbers, bools and tuples of numbers (and call functions)")
        if tname in ("sycl.id", "sycl.range"):
            hint += f"; capture tuple({name}) and make the {tname} in the kernel"
    return kernel_compile_error(errc.kernel, f"{where(fn, info, name)}: "
                                f"{who(fn, owner, name, source)}: {hint}")
