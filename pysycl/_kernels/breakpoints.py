"""``breakpoint()`` in a kernel on a compiled device: it does nothing there (a device has no
debugger to stop in; the compiler types it as a no-op), and this module warns once per
``breakpoint()`` line and process, so that a kernel debugged on the host_debuggable device
runs unchanged elsewhere and the user still learns that it did not stop (docs/debugging.md).

The warning is issued at the ``breakpoint()`` line itself (``warnings.warn_explicit``), when
the kernel is first compiled or loaded from the disk cache for a device in this process.
"""

from __future__ import annotations

import dis
import warnings
from typing import TYPE_CHECKING

from pysycl._core.abi import nested_codes
from pysycl._core.exceptions import KernelWarning
from pysycl._core.where import location
from pysycl._kernels.captures import call_graph

if TYPE_CHECKING:
    import types

#: The ``breakpoint()`` lines warned about in this process.
_warned: set[tuple[str, int]] = set()


def breakpoint_lines(fn: types.FunctionType) -> list[tuple[str, int]]:
    """``(file, line)`` of each ``breakpoint`` a kernel, the functions defined in it and the
    functions it calls read, in code order."""
    found: list[tuple[str, int]] = []
    codes = [c for f in _functions(fn) for c in nested_codes(f.__code__)]
    for code in codes:
        if "breakpoint" not in code.co_names:
            continue
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_GLOBAL", "LOAD_NAME") and ins.argval == "breakpoint":
                line = ins.positions.lineno if ins.positions and ins.positions.lineno else \
                    code.co_firstlineno
                if (code.co_filename, line) not in found:
                    found.append((code.co_filename, line))
    return found


def _functions(fn: types.FunctionType) -> list[types.FunctionType]:
    """The kernel and the Python functions it calls (its call graph)."""
    return [f for f in (getattr(g, "py_func", g) for g, _ in call_graph(fn))
            if hasattr(f, "__code__")]


def warn_breakpoints(fn: types.FunctionType, name: str) -> None:
    """Warn (:class:`pysycl.ext.KernelWarning`, once per line and process) about each
    ``breakpoint()`` of kernel ``fn`` (named ``name``) compiled for a device."""
    for filename, line in breakpoint_lines(fn):
        if (filename, line) in _warned:
            continue
        _warned.add((filename, line))
        warnings.warn_explicit(
            f"breakpoint() at {location(filename, line)} does nothing in kernel {name!r} on a "
            "compiled device (no debugger runs there); to stop there, submit the command "
            "group to the host_debuggable device: sycl.queue(sycl.aspect_selector("
            "sycl.aspect.host_debuggable)) (docs/debugging.md)",
            KernelWarning, filename, line)
