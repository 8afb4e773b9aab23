"""``print(...)`` in kernels: a per-launch output buffer, decoded into ``sys.stdout``.

A kernel (or a helper it calls) that calls the builtin ``print`` captures it as
a :class:`~pysycl._core.abi.PrintType` argument: each launch gets a fresh
buffer of :data:`~pysycl._core.abi.PRINT_BUFFER_WORDS` words (layout in
:class:`~pysycl._core.abi.PrintType`), into which every ``print`` call appends
one record. The buffer is read back after the kernel (non-blocking) and its
records are decoded and written to Python's ``sys.stdout`` -- so Jupyter cells
and pytest's capture see them -- at the next synchronization point:
``event.wait()``, ``queue.wait()``/``wait_and_throw()``, a buffer's write-back
or a host accessor (docs/debugging.md). The buffers of a kernel's ``sycl.stream``
captures travel the same way (:mod:`pysycl._kernels.kstream` sizes and decodes them).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import PRINT_BUFFER_WORDS, PRINT_FORMAT, PRINT_HEADER_WORDS, PRINT_STR, PrintType
from pysycl._core.streamfmt import decode_number
from pysycl._kernels import kstream as _kstream

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
_lock = threading.Lock()
#: Outputs not written yet, in launch order: (kernel event, read event, render() -> text).
pending: list[tuple[Any, Any, Callable[[], str]]] = []
#: A launch's output buffers: (host words, device buffer, render(host words) -> text).
Output = tuple[np.ndarray, "cl.Buffer", Callable[[np.ndarray], str]]


def bind(x: ModuleType, ctx: context, clq: cl.CommandQueue, values: list[Any], name: str,
         where: str) -> tuple[list[Any], list[Output]]:
    """``values`` with the print slot and each ``sycl.stream`` replaced by a fresh buffer.

    The kernel and its helpers capture them separately; each object gets one buffer.
    ``name`` and ``where`` (``kernel NAME (file:line)``) name the kernel in notes.
    """
    bound: list[Any] = []
    outs: list[Output] = []
    seen: dict[int, cl.Buffer] = {}
    for v in values:
        if id(v) in seen:
            bound.append(seen[id(v)])
            continue
        if v is SLOT:
            host = np.zeros(PRINT_BUFFER_WORDS, np.uint32)
            host[1] = PRINT_BUFFER_WORDS - PRINT_HEADER_WORDS
            render = partial(_print_text, name=name)
        elif type(v) is _kstream.stream:
            host = _kstream.launch_buffer(v)
            render = partial(_kstream.decode, s=v, kernel=where)
        else:
            bound.append(v)
            continue
        buf = x.alloc(ctx.native, host.nbytes)
        x.write(clq, buf, host[:PRINT_HEADER_WORDS])
        bound.append(buf)
        seen[id(v)] = buf
        outs.append((host, buf, render))
    return bound, outs


def watch(x: ModuleType, clq: cl.CommandQueue, ev: cl.Event, outs: list[Output]) -> None:
    """Read the buffers back after ``ev`` (non-blocking); their text waits for a sync point."""
    reads = [(x.read(clq, host, buf, blocking=False), host, render) for host, buf, render in outs]
    with _lock:
        pending.extend((ev, read, partial(render, host)) for read, host, render in reads)


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
    for _, read, render in done:
        x.wait([read])
        text = render()
        if text:
            sys.stdout.write(text)
    if done:
        sys.stdout.flush()


def _print_text(host: np.ndarray, name: str) -> str:
    """The text of a launch's print buffer, and a note on the records it dropped."""
    text, dropped = decode(host)
    if dropped:
        text += (f"[pysycl: {dropped} print record(s) of kernel {name} were dropped: the "
                 f"kernel print buffer holds {PRINT_BUFFER_WORDS * 4 // 1024} KiB per "
                 "launch; print less per launch]\n")
    return text


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
            v = decode_number(tag & ~PRINT_FORMAT, w[k + 1], w[k + 2])
            out.append(format(v, "") if tag & PRINT_FORMAT else str(v))
            k += 3
    return "".join(out)
