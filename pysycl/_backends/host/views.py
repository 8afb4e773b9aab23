"""What a kernel on the host device sees: numpy views of accessors' regions, and its errors.

(The views index with SYCL's rules: :class:`pysycl._kernels.kernel_api_host.KernelView`.)
"""

from __future__ import annotations

import builtins
import traceback

import numpy as np

from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._core.sites import in_package
from pysycl._core.where import location
from pysycl._kernels.kassert import assertion_error, host_message
from pysycl._memory.accessor import accessor

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks


def region_view(acc: accessor, writable: bool = True) -> np.ndarray:
    """The numpy view of an accessor's (ranged) region of its buffer's host copy.

    The same addressing as the device ABI (:mod:`pysycl._core.abi`): a linear
    offset, the access range, row-major strides of the root buffer's range.
    """
    host = acc.coherence.host
    if acc.dtype != host.dtype:  # a reinterpreted buffer (its offset counts its own elements)
        host = host.view(np.uint8).view(acc.dtype)
    rng = tuple(acc.get_range())
    mem = tuple(acc.root_range)
    strides = [host.itemsize] * len(mem)
    for d in builtins.range(len(mem) - 2, -1, -1):
        strides[d] = strides[d + 1] * mem[d + 1]
    if 0 in rng:
        return np.empty(rng, dtype=host.dtype)
    return np.lib.stride_tricks.as_strided(host[acc.kernel_tail[0]:], shape=rng, strides=strides,
                                           writeable=writable)


def user_line(e: BaseException) -> str:
    """``file:line`` of the innermost traceback frame outside pysycl (the kernel's code)."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not in_package(f.filename)]
    return location(frames[-1].filename, frames[-1].lineno or 0) if frames else "?"


def raise_from(desc: str, e: BaseException, who: str, failures: int | None = None) -> None:
    """Re-raise ``e`` (raised by the kernel as ``who``) as the kernel's error: a failed
    assert as the ``AssertionError`` a device reports (``failures``: how many work-items
    failed one, None when the kernel stopped at the first)."""
    if isinstance(e, AssertionError):
        where = user_line(e)
        raise assertion_error(host_message(e, where), where, who, desc, failures,
                              "host_debuggable device") from e
    if isinstance(e, exception):
        e.add_note(f"raised in {desc}, {who}, at {user_line(e)} (host_debuggable device)")
        raise e
    raise exception(errc.kernel, f"{desc} raised {type(e).__name__}: {e} in {who}, at "
                    f"{user_line(e)} (host_debuggable device)") from e
