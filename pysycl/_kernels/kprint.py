"""``print(...)`` in kernels: a per-launch output buffer, decoded into ``sys.stdout``.

A kernel (or a helper it calls) that calls the builtin ``print`` captures it as
a :class:`~pysycl._core.abi.PrintType` argument: each launch gets a fresh
buffer of :data:`~pysycl._core.abi.PRINT_BUFFER_WORDS` words (layout in
:class:`~pysycl._core.abi.PrintType`), into which every ``print`` call appends
one record. The buffer is read back after the kernel (non-blocking;
:class:`pysycl._kernels.steps.PrintStep`) and its records are decoded and written to
Python's ``sys.stdout`` -- so Jupyter cells and pytest's capture see them -- at the
next synchronization point: ``event.wait()``, ``queue.wait()``/``wait_and_throw()``,
a buffer's write-back or a host accessor (docs/debugging.md). The buffers of a kernel's ``sycl.stream``
captures travel the same way (:mod:`pysycl._kernels.kstream` sizes and decodes them).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from pysycl._core.abi import PRINT_BUFFER_WORDS, PRINT_FORMAT, PRINT_HEADER_WORDS, PRINT_STR, PrintType
from pysycl._core.streamfmt import decode_number
from pysycl._kernels import kstream as _kstream

PRINT_TYPE = PrintType()


class PrintSlot:
    """The value of a ``print`` capture until a launch binds its buffer."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<kernel print buffer>"


SLOT = PrintSlot()
_lock = threading.Lock()
#: Outputs not written yet, in launch order: (kernel event, read event, render() -> text,
#: the executor of both events).
pending: list[tuple[Any, Any, Callable[[], str], Any]] = []


def output_of(v: Any, name: str, where: str) -> tuple[np.ndarray, Callable[[np.ndarray], str]] | None:
    """The host words of a launch's buffer for capture value ``v`` (the print slot or a
    ``sycl.stream``; header filled) and how its words become text; None for other values.

    ``name`` and ``where`` (``kernel NAME (file:line)``) name the kernel in notes.
    """
    if v is SLOT:
        host = np.zeros(PRINT_BUFFER_WORDS, np.uint32)
        host[1] = PRINT_BUFFER_WORDS - PRINT_HEADER_WORDS
        return host, partial(_print_text, name=name)
    if type(v) is _kstream.stream:
        return _kstream.launch_buffer(v), partial(_kstream.decode, s=v, kernel=where)
    return None


def add_pending(ex: Any, ev: Any, reads: list[tuple[Any, np.ndarray, Callable[[np.ndarray], str]]]
                ) -> None:
    """Outputs of a launch (``ev``, of executor ``ex``): ``(read event, host words,
    render)`` each, written at the next synchronization point."""
    with _lock:
        pending.extend((ev, read, partial(render, host), ex) for read, host, render in reads)


def flush() -> None:
    """Write the output of every finished printing launch to ``sys.stdout``, in launch order."""
    with _lock:
        done = []
        for p in pending:
            try:
                finished = p[3].status(p[0]) == "complete"
            except Exception:  # the kernel failed: its output never comes
                finished = False
            if not finished:
                break  # keep launch order: a later launch waits for this one
            done.append(p)
        del pending[:len(done)]
    for _, read, render, ex in done:
        ex.wait_event(read)
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
