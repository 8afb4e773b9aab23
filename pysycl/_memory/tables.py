"""Lookup tables: a captured numpy array on a device that cannot use host memory directly.

Where the device has fine-grained system SVM (``aspect.usm_system_allocations``:
Intel's CPU runtime, the host_debuggable device) a captured 1-D C-contiguous numpy
array is passed as it is (:func:`pysycl._memory.usm_api.adopt`). Elsewhere (NVIDIA
GPUs, PoCL) an array of at most :data:`TABLE_LIMIT` bytes is a *table*: each launch
gets a fresh read-only device copy of it (the backend's ``usm_table``; on OpenCL a
``CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR`` buffer, whose bytes are copied when it
is created, at submit, with nothing enqueued), passed as the pointer argument. So

* the kernel sees the array's values at submit; a change made to the array later is
  seen by the next launch (there is no cache to go stale);
* its capture type is a read-only :class:`~pysycl._core.abi.PointerType`: the
  compiler refuses stores and atomics through it (:func:`explain` adds the table's
  size and the alternatives to that error), and the same kernel with another table
  of the same dtype reuses the compiled code (a table is an argument, not a constant);
* the copy lives until the kernel completes: the launch holds the pointer
  (its queue's in-flight list, :mod:`pysycl._memory.usm_api`), the pointer its buffer.

Why 64 KiB: it is the smallest ``CL_DEVICE_MAX_CONSTANT_BUFFER_SIZE`` a (full
profile) OpenCL device may have, and CUDA's constant memory -- the size every device
is built to serve to all work-items at once from a cache. It also bounds what a launch
copies behind the user's back: data larger than that belongs in a ``sycl.buffer``
or USM, copied once and reused by every launch.

Why a buffer rather than coarse-grained SVM (``malloc_device``): the copy needs no
command on the queue (so there is no event to chain and a failing launch has enqueued
nothing), it works on devices without SVM, and OpenCL keeps a released buffer until
the commands using it complete.

``PYSYCL_COPY_HOST_ARRAYS=1`` makes every device take tables (host arrays are
copied even where the device could use them directly): a program that runs so on a
CPU runs on a GPU too. Tests flip :data:`forced` the same way.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

from pysycl._core import backends as _backends
from pysycl._core.exceptions import errc, exception, kernel_compile_error
from pysycl._memory.usm import Allocation, usm, usm_pointer
from pysycl._objects.aspects import aspect

if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence

    import numpy as np

#: The largest table (bytes) on a device that cannot use host memory directly.
TABLE_LIMIT = 64 * 1024
#: Copy host arrays as tables on every device (``PYSYCL_COPY_HOST_ARRAYS=1``; tests flip it).
forced = os.environ.get("PYSYCL_COPY_HOST_ARRAYS", "") not in ("", "0")

_ALTERNATIVES = ("put the data in a sycl.buffer and capture an accessor "
                 "(buf.get_access(h, sycl.access_mode.read); write / read_write to store), "
                 "or copy it into USM once (p = sycl.malloc_device(n, q, dtype=...); "
                 "q.memcpy(p, arr, arr.nbytes)) and capture the pointer")


class TableAllocation(Allocation):
    """The device copy of one table for one launch (never registered, freed with its pointer)."""

    __slots__ = ()


def passed_directly(q: Any) -> bool:
    """Whether a host array captured for queue ``q`` is passed as it is (else: a table)."""
    return not forced and q.get_device().has(aspect.usm_system_allocations)


def _describe(nbytes: int, n: int, dtype: np.dtype) -> str:
    return f"{nbytes} bytes ({n} x {dtype})"


def _why(dev: Any) -> str:
    """Why a host array is a table on ``dev``."""
    if forced:
        return "host arrays are copied to every device (PYSYCL_COPY_HOST_ARRAYS=1)"
    return (f"{dev.display_name!r} cannot use host memory directly (no "
            "aspect.usm_system_allocations)")


def table(arr: np.ndarray, n: int, q: Any, who: str) -> usm_pointer:
    """The read-only pointer to a fresh device copy of the 1-D C-contiguous ``arr``.

    ``n`` is its length; ``who`` names the capture (``file:line: kernel k captures 'x'``).
    Raises ``errc.kernel_argument`` for an array larger than :data:`TABLE_LIMIT`.
    """
    if arr.nbytes > TABLE_LIMIT:
        raise exception(errc.kernel_argument, f"{who}: a numpy array of "
                        f"{_describe(arr.nbytes, n, arr.dtype)} is larger than a lookup table "
                        f"may be ({TABLE_LIMIT} bytes, 64 KiB): {_why(q.get_device())}, so "
                        f"each launch would copy it; {_ALTERNATIVES}")
    ctx = q.get_context()
    native = _backends.get(ctx.get_backend()).usm_table(arr, ctx)
    a = TableAllocation(native, arr.nbytes, usm.alloc.unknown, ctx, q.get_device(), False)
    a.exported = True  # nothing to free by hand: the copy goes with its last reference
    return usm_pointer(a, 0, arr.dtype, n, True)


@contextlib.contextmanager
def explaining(names: Sequence[str], values: Sequence[Any]) -> Iterator[None]:
    """Compile a kernel whose captures are ``names``/``values``: a compile error about
    a store into one of its tables (a read-only pointer) says what the table is."""
    try:
        yield
    except kernel_compile_error as e:
        err = explain(e, names, values)
        if err is e:
            raise
        raise err from e.__cause__


def explain(e: kernel_compile_error, names: Sequence[str], values: Sequence[Any]
            ) -> kernel_compile_error:
    """``e`` with a note for each table it says the kernel writes through (else ``e``).

    ``names`` and ``values`` are the kernel's captures. The compiler names a store
    into a read-only pointer as ``read-only USM pointer 'x'``
    (:class:`pysycl_numba.passes.ValidateTypedKernel`); it does not know that ``x`` is
    a table, nor its size.
    """
    what = e.what()
    notes = []
    for name, v in zip(names, values, strict=False):
        a = getattr(v, "_alloc", None)
        if type(a) is TableAllocation and f"read-only USM pointer {name!r}" in what:
            notes.append(f"{name!r} is a numpy array of {_describe(a.nbytes, v.count, v.dtype)}"
                         f" and {_why(a.dev)}: each launch gets a read-only copy of it (a "
                         f"lookup table, at most {TABLE_LIMIT} bytes) that kernels can only "
                         f"read; to store results, {_ALTERNATIVES}")
    if not notes:
        return e
    new = kernel_compile_error(e.code(), "\n".join((what, *notes)))
    new.__cause__ = e.__cause__
    new.__suppress_context__ = True
    return new
