"""A failed ``assert`` in a kernel, as the ``AssertionError`` the host raises.

On a device (``CompiledKernel.asserts``, the error buffer's assert words in
``pysycl._core.abi``) the first failing work-item's assert number, global id and
message numbers are read back after the kernel and reported at the next
synchronization point with bounds-checked mode's machinery
(:mod:`pysycl._kernels.bounds`). The host_debuggable device runs the plain Python
``assert``; both report the same text (:func:`assertion_error`)::

    AssertionError: i = 7 is out of range -- kernel.py:12, work-item (7,)
    kernel 'fill' (kernel.py:10, submitted at main.py:30): 3 work-items failed an assert;
    the first one found is shown (on Intel(R) Xeon(R) Processor)
"""

from __future__ import annotations

import linecache
import sys
import types
from typing import TYPE_CHECKING

import numpy as np

from pysycl._core.abi import (
    ASSERT_COUNT_INT,
    ASSERT_GID_WORD,
    ASSERT_NUMBER_WORD,
    ASSERT_VALUE_WORD,
    PRINT_FORMAT,
)
from pysycl._core.exceptions import device_report
from pysycl._core.sites import in_package, site_location
from pysycl._core.streamfmt import decode_number
from pysycl._core.where import location

if TYPE_CHECKING:
    from pysycl._core.abi import CompiledKernel

_in_package: dict[types.CodeType, bool] = {}


def submit_site() -> str:
    """``file:line`` of the innermost caller outside pysycl (each code object's test cached:
    it runs at every launch of a kernel with asserts)."""
    f = sys._getframe(1)
    while f is not None:
        code = f.f_code
        inside = _in_package.get(code)
        if inside is None:
            inside = _in_package[code] = in_package(code.co_filename)
        if not inside:
            return location(code.co_filename, f.f_lineno)
        f = f.f_back  # type: ignore[assignment]
    return "<unknown>"


def source_text(where: str) -> str:
    """The assert statement at ``file:line`` as written (its first line), for an assert
    without a message."""
    filename, _, line = where.rpartition(":")
    text = linecache.getline(filename, int(line)).strip() if line.isdigit() else ""
    return text if text.startswith("assert") else "assert <condition>"


def assertion_error(message: str, where: str, work_item: str, kernel: str,
                    count: int | None, device: str) -> AssertionError:
    """The ``AssertionError`` of a failed kernel assert (the module docstring's text).

    Args:
        message: the assert's message, or its source text when it has none.
        where: ``file:line`` of the assert.
        work_item: the failing work-item (``"work-item (7,)"``).
        kernel: the kernel, and where it was defined and submitted.
        count: how many work-items failed (None: unknown, the host device stops at the first).
        device: the device's words for the rest of the sentence.
    """
    if count is None:
        tail = f"the first failing work-item stops the kernel ({device})"
    elif count == 1:
        tail = f"1 work-item failed an assert ({device})"
    else:
        tail = f"{count} work-items failed an assert; the first one found is shown ({device})"
    err = AssertionError(f"{message} -- {where}, {work_item}\n{kernel}: {tail}")
    device_report(err)
    return err


def host_message(e: AssertionError, where: str) -> str:
    """The message of an ``AssertionError`` the interpreter raised for an assert at ``where``."""
    text = str(e)
    return text if text else source_text(where)


def from_error_buffer(compiled: CompiledKernel, host: np.ndarray, codes: tuple[types.CodeType, ...],
                      gid: tuple[int, ...], kernel: str, device: str) -> AssertionError:
    """The error of a launch whose error buffer (read into ``host``, int32 words) holds a
    failed assert; ``gid`` is the failing work-item's id (SYCL order), ``codes`` the
    submitting program's code (``pysycl._core.sites``)."""
    words = host.view(np.int64)
    number = int(words[ASSERT_NUMBER_WORD]) - 1
    count = int(host[ASSERT_COUNT_INT]) & 0xFFFFFFFF
    if not 0 <= number < len(compiled.asserts):
        return assertion_error("assert <unknown>", "<unknown location>", f"work-item {gid}",
                               kernel, count, device)
    site, pieces = compiled.asserts[number]
    where = (site_location(compiled.sites[site], codes) if site < len(compiled.sites)
             else "<unknown location>")
    if pieces is None:
        message = source_text(where)
    else:
        out: list[str] = []
        k = 0
        for p in pieces:
            if isinstance(p, str):
                out.append(p)
                continue
            bits = int(words[ASSERT_VALUE_WORD + k]) & 0xFFFFFFFFFFFFFFFF
            k += 1
            v = decode_number(p & ~PRINT_FORMAT, bits & 0xFFFFFFFF, bits >> 32)
            out.append(format(v, "") if p & PRINT_FORMAT else str(v))
        message = "".join(out)
    return assertion_error(message, where, f"work-item {gid}", kernel, count, device)


def gid_words(host: np.ndarray) -> tuple[int, int, int]:
    """The failing work-item's ``get_global_id(0..2)`` (OpenCL order) from the error buffer."""
    words = host.view(np.int64)
    return (int(words[ASSERT_GID_WORD]), int(words[ASSERT_GID_WORD + 1]),
            int(words[ASSERT_GID_WORD + 2]))

