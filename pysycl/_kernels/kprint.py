"""``print(...)`` in kernels: a per-launch output buffer, decoded into ``sys.stdout``.

A kernel (or a helper it calls) that calls the builtin ``print`` captures it as
a :class:`~pysycl._core.abi.PrintType` argument: each launch gets a fresh
buffer of :data:`~pysycl._core.abi.PRINT_BUFFER_WORDS` words (layout in
:class:`~pysycl._core.abi.PrintType`), into which every ``print`` call appends
one record. The buffer is read back after the kernel (non-blocking) and its
records are decoded and written to Python's ``sys.stdout`` -- so Jupyter cells
and pytest's capture see them -- at the next synchronization point:
``event.wait()``, ``queue.wait()``/``wait_and_throw()``, a buffer's write-back
or a host accessor (docs/debugging.md).
"""

from __future__ import annotations

import sys
import threading
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import (
    PRINT_BUFFER_WORDS,
    PRINT_DTYPES,
    PRINT_HEADER_WORDS,
    PRINT_NUMBER,
    PRINT_STR,
    PrintType,
)

if TYPE_CHECKING:
    from types import ModuleType

    import pyopencl as cl

    from pysycl._objects.context import context

PRINT_TYPE = PrintType()


class PrintSlot:
    """The value of a ``print`` capture until a launch binds its buffer."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<kernel print buffer>"


SLOT = PrintSlot()
_DTYPES = tuple(np.dtype(c) for c in PRINT_DTYPES)
_lock = threading.Lock()
#: Launches whose output has not been written yet: (kernel event, read event, host words, name).
pending: list[tuple[Any, Any, np.ndarray, str]] = []


def bind(x: ModuleType, ctx: context, clq: cl.CommandQueue, values: list[Any]
         ) -> tuple[list[Any], np.ndarray, cl.Buffer]:
    """``values`` with each print slot replaced by a fresh initialised buffer."""
    host = np.zeros(PRINT_BUFFER_WORDS, np.uint32)
    host[1] = PRINT_BUFFER_WORDS - PRINT_HEADER_WORDS
    buf = x.alloc(ctx.native, host.nbytes)
    x.write(clq, buf, host[:PRINT_HEADER_WORDS])
    return [buf if v is SLOT else v for v in values], host, buf


def watch(x: ModuleType, clq: cl.CommandQueue, ev: cl.Event, host: np.ndarray, buf: cl.Buffer,
          name: str) -> None:
    """Read the buffer back after ``ev`` (non-blocking); its text waits for a sync point."""
    read = x.read(clq, host, buf, blocking=False)
    with _lock:
        pending.append((ev, read, host, name))


def flush() -> None:
    """Write the output of every finished printing launch to ``sys.stdout``, in launch order."""
    from pysycl._backends.opencl import exec as x

    with _lock:
        done = []
        for p in pending:
            if x.status(p[0]) != x.COMPLETE:
                break  # keep launch order: a later launch waits for this one
            done.append(p)
        del pending[:len(done)]
    for _, read, host, name in done:
        x.wait([read])
        text, dropped = decode(host)
        if dropped:
            text += (f"[pysycl: {dropped} print record(s) of kernel {name} were dropped: the "
                     f"kernel print buffer holds {PRINT_BUFFER_WORDS * 4 // 1024} KiB per "
                     "launch; print less per launch]\n")
        if text:
            sys.stdout.write(text)
    if done:
        sys.stdout.flush()


def decode(words: np.ndarray) -> tuple[str, int]:
    """The text of a print buffer and the number of records it dropped."""
    used = min(int(words[0]), int(words[1]))
    end = PRINT_HEADER_WORDS + used
    out: list[str] = []
    p = PRINT_HEADER_WORDS
    while p < end:
        n = int(words[p])
        if n <= 0 or p + n > end:
            break  # a record still being written when space ran out: never happens (reserved)
        out.append(_record(words[p + 1:p + n]))
        p += n
    return "".join(out), int(words[2])


def _record(w: np.ndarray) -> str:
    out: list[str] = []
    k = 0
    while k < len(w):
        tag = int(w[k])
        if tag & 0xFF == PRINT_STR:
            nbytes = tag >> 8
            nw = (nbytes + 3) // 4
            out.append(w[k + 1:k + 1 + nw].tobytes()[:nbytes].decode("utf-8", "replace"))
            k += 1 + nw
        else:
            dt = _DTYPES[(tag & 0xFF) - PRINT_NUMBER]
            bits = w[k + 1:k + 3].copy().view(np.uint64)[0]
            if dt.kind in "iu":
                v = np.array(bits).view(np.int64 if dt.kind == "i" else np.uint64).astype(dt)
            elif dt.kind == "b":
                v = np.array(bits != 0)
            else:
                v = np.array(bits, np.uint64).astype(np.dtype(f"u{dt.itemsize}")).view(dt)
            out.append(str(v[()]))
            k += 3
    return "".join(out)
