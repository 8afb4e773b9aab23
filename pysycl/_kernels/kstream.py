"""``sycl.stream`` (SYCL 2020 §4.16): kernel output with ``out << "x = " << x << sycl.endl``.

``out = sycl.stream(total_buffer_size, work_item_buffer_size, h)`` is created in
a command group and captured by its kernel. On compiled devices the capture is
a :class:`~pysycl._core.abi.StreamType` argument: each launch gets a fresh buffer
(:func:`launch_buffer`) into which every ``<<`` statement appends one record
(``pysycl_numba.streaming``); the runtime reads it back after the kernel and
decodes it (:func:`decode`) at the next synchronization point, as for kernel
``print`` (:mod:`pysycl._kernels.kprint`). On the host_debuggable device the
kernel runs in the interpreter and ``<<`` formats each operand itself
(:func:`run_on_host`). Both feed one :class:`~pysycl._core.streamfmt.StreamOutput`,
which formats, flushes and applies the limits -- the same characters on every device.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from pysycl import property as _prop
from pysycl._core.abi import (
    PRINT_DTYPES,
    PRINT_FORMAT,
    PRINT_HEADER_WORDS,
    PRINT_NUMBER,
    PRINT_STR,
    STREAM_ARRAY,
    STREAM_CONTINUES,
    STREAM_MANIP,
    STREAM_SETPRECISION,
    STREAM_SETW,
    StreamType,
)
from pysycl._core.exceptions import errc, exception
from pysycl._core.streamfmt import (
    Format,
    StreamOutput,
    decode_number,
    format_array,
    format_number,
    precision_manipulator,
    stream_manipulator,
    unsupported,
    width_manipulator,
)
from pysycl._objects.range import _Vec, group, item, nd_item, nd_range
from pysycl._objects.vec import vec

if TYPE_CHECKING:
    from pysycl._core.launch_types import CommandGroupRef
    from pysycl.property import _Property

STREAM_TYPE = StreamType()
#: Record words a launch's buffer holds per byte of ``total_buffer_size`` (a record
#: carries a 3-word header and a tag per piece: some 4-8 bytes per character printed),
#: at least :data:`_MIN_WORDS`, at most :data:`_MAX_WORDS` (64 MiB).
_WORDS_PER_BYTE = 2
_MIN_WORDS, _MAX_WORDS = 1 << 12, 1 << 24


def _size(v: object, what: str) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
        raise TypeError(f"sycl.stream: {what} must be a non-negative integer (bytes), got {v!r}")
    return int(v)


class stream:  # noqa: N801 - the spec's spelling
    """``sycl::stream``: buffered output from a kernel to ``sys.stdout``.

    ``out = sycl.stream(1024, 256, h)`` in a command group; the kernel writes
    ``out << "i = " << i[0] << sycl.endl``. Each work-item's text is written in
    one piece at ``sycl.endl``, ``sycl.flush`` and the end of the work-item, at
    the next synchronization point after the kernel (docs/kernels.md#streams).
    Common reference semantics: copies are the same stream.

    Args:
        total_buffer_size: bytes the kernel may print in all (later flushes are dropped).
        work_item_buffer_size: bytes a work-item may print between flushes (the rest is cut).
        handler: the command group's handler.
        properties: a property list (the spec defines none for streams).
    """

    __slots__ = ("__weakref__", "_handler", "_props", "_run", "_total", "_wi")

    def __init__(self, total_buffer_size: SupportsIndex, work_item_buffer_size: SupportsIndex,
                 handler: CommandGroupRef, properties: Iterable[_Property] = ()) -> None:
        self._total = _size(total_buffer_size, "total_buffer_size")
        self._wi = _size(work_item_buffer_size, "work_item_buffer_size")
        if handler is None or not hasattr(handler, "requirements"):
            raise TypeError("sycl.stream(total_buffer_size, work_item_buffer_size, h) needs the "
                            "command group's handler as third argument")
        self._handler = handler
        self._props = _prop.checked(properties, (), "sycl.stream")
        self._run: _HostRun | None = None  # set while the host device runs the kernel

    def size(self) -> int:
        """The total buffer size, in bytes."""
        return self._total

    def get_size(self) -> int:
        """The total buffer size, in bytes (deprecated in SYCL 2020: use :meth:`size`)."""
        return self._total

    def get_work_item_buffer_size(self) -> int:
        """The buffer size per work-item, in bytes."""
        return self._wi

    def get_max_statement_size(self) -> int:
        """Deprecated in SYCL 2020: :meth:`get_work_item_buffer_size`."""
        return self._wi

    def has_property(self, kind: type[_Property]) -> bool:
        """Whether the stream was created with a property of class ``kind``."""
        return self._props.has_property(kind)

    def get_property(self, kind: type[_Property]) -> _Property:
        """The property of class ``kind`` (``errc.invalid`` if absent)."""
        return self._props.get_property(kind)

    # What the launcher and the host device read (pysycl's own; not in the spec).
    @property
    def handler(self) -> CommandGroupRef:
        """The command group's handler the stream was created with."""
        return self._handler

    @property
    def kernel_type(self) -> StreamType:
        """The stream's type in the runtime/compiler ABI."""
        return STREAM_TYPE

    def __lshift__(self, value: Any) -> _statement:
        run = self._run
        if run is None:
            raise exception(errc.invalid, "sycl.stream: `<<` works only inside the kernel that "
                            "captures the stream (the lambda or def handed to parallel_for or "
                            "single_task), not in the command group or on the host")
        return _statement(run, False) << value

    def __repr__(self) -> str:
        return f"sycl.stream(total_buffer_size={self._total}, work_item_buffer_size={self._wi})"


# ------------------------------------------------------------- compiled devices
def launch_buffer(s: stream) -> np.ndarray:
    """The host side of a launch's stream buffer: its words, the header initialised."""
    cap = min(max(_WORDS_PER_BYTE * s.size(), _MIN_WORDS), _MAX_WORDS)
    host = np.zeros(PRINT_HEADER_WORDS + cap, np.uint32)
    host[1] = cap
    return host


def decode(words: np.ndarray, s: stream, kernel: str) -> str:
    """The text of a launch's stream buffer, and notes on what the limits cut or dropped."""
    parts: list[str] = []
    out = StreamOutput(s.size(), s.get_work_item_buffer_size(), parts.append)
    end = PRINT_HEADER_WORDS + min(int(words[0]), int(words[1]))
    p = PRINT_HEADER_WORDS
    while p < end:
        head = int(words[p])
        n = head & ~STREAM_CONTINUES
        if n < 3 or p + n > end:
            break  # never: records are reserved whole
        wid = int(words[p + 1]) | (int(words[p + 2]) << 32)
        _record(words[p + 3:p + n], wid, out.statement(wid, bool(head & STREAM_CONTINUES)), out)
        p += n
    out.finish()
    text = "".join(parts) + out.notes(kernel)
    if words[2]:
        text += ("" if not text or text.endswith("\n") else "\n") + (
                 f"[pysycl: sycl.stream of {kernel}: {int(words[2])} statement(s) were dropped: "
                 f"the launch's record buffer ({(len(words) * 4) >> 10} KiB for a "
                 f"total_buffer_size of {s.size()} bytes) was full; pass a larger "
                 "total_buffer_size to sycl.stream]\n")
    return text


def _record(w: np.ndarray, wid: int, fmt: Format, out: StreamOutput) -> None:
    """Feed one record's pieces to ``out``."""
    k = 0
    while k < len(w):
        tag = int(w[k])
        kind = tag & 0xFF
        if kind == PRINT_STR:
            nbytes = tag >> 8
            nw = (nbytes + 3) // 4
            out.text(wid, w[k + 1:k + 1 + nw].tobytes()[:nbytes].decode("utf-8", "replace"))
            k += 1 + nw
        elif PRINT_NUMBER <= kind < PRINT_NUMBER + len(PRINT_DTYPES):
            v = decode_number(kind, w[k + 1], w[k + 2])
            out.text(wid, format(v, "") if tag & PRINT_FORMAT else format_number(fmt, v))
            k += 3
        elif kind == STREAM_MANIP:
            out.manipulator(wid, fmt, stream_manipulator(tag >> 8))
            k += 1
        elif kind in (STREAM_SETPRECISION, STREAM_SETW):
            v = int(w[k + 1:k + 2].view(np.int32)[0])
            if kind == STREAM_SETW:
                fmt.width = v
            else:
                fmt.precision = v
            k += 2
        elif kind == STREAM_ARRAY:
            count = tag >> 8
            out.text(wid, format_array(w[k + 1:k + 1 + 2 * count].copy().view(np.int64)))
            k += 1 + 2 * count
        else:
            return  # never: the compiler writes only these pieces


# ---------------------------------------------------------- host_debuggable device
class _HostRun:
    """A stream while the host device runs its kernel: work-items are threads."""

    __slots__ = ("lock", "out")

    def __init__(self, s: stream) -> None:
        self.lock = threading.Lock()
        self.out = StreamOutput(s.size(), s.get_work_item_buffer_size(),
                                lambda text: sys.stdout.write(text))  # capsys swaps stdout

    @staticmethod
    def key() -> Hashable:
        return threading.get_ident()


class _statement:  # noqa: N801 - what ``out << x`` returns in the interpreter
    """One ``out << a << b ...`` statement of a host-device kernel: its format state."""

    __slots__ = ("_fmt", "_run", "_wid")

    def __init__(self, run: _HostRun, continues: bool) -> None:
        self._run = run
        self._wid = run.key()
        with run.lock:
            self._fmt = run.out.statement(self._wid, continues)

    def __lshift__(self, value: Any) -> _statement:
        with self._run.lock:
            _put(self._run.out, self._wid, self._fmt, value)
        return self

    def __repr__(self) -> str:
        return "<sycl.stream statement>"


def _put(out: StreamOutput, wid: Hashable, fmt: Format, v: Any) -> None:
    """One ``<<`` operand in the interpreter: what the compiled devices' records say."""
    t = type(v)
    if t is str:
        out.text(wid, v)
    elif t is stream_manipulator:
        out.manipulator(wid, fmt, v)
    elif t is precision_manipulator:
        fmt.precision = v.precision
    elif t is width_manipulator:
        fmt.width = v.width
    elif t is bool or t is int or t is float:
        out.text(wid, format_number(fmt, _host_number(v)))
    elif isinstance(v, np.generic) and v.dtype.kind in "biuf":
        out.text(wid, format_number(fmt, v))
    elif isinstance(v, _Vec) or (t is tuple and v and all(
            isinstance(e, (int, np.integer)) and not isinstance(e, bool) for e in v)):
        out.text(wid, format_array(tuple(v)))
    elif isinstance(v, (item, nd_item, group, nd_range)):
        out.text(wid, str(v))  # DPC++'s text: item(range: {..}, id: {..}, offset: {..})
    elif isinstance(v, vec):
        for k, e in enumerate(v):
            out.text(wid, (", " if k else "") + format_number(fmt, e))
    else:
        raise TypeError(unsupported(t.__name__))


def _host_number(v: bool | int | float) -> np.generic:
    """A Python number as the compiled devices type it: bool, int64, float64."""
    if type(v) is bool:
        return np.bool_(v)
    if type(v) is int:
        if not -(1 << 63) <= v < (1 << 63):
            raise OverflowError(f"sycl.stream: {v} does not fit in int64, as kernels compute")
        return np.int64(v)
    return np.float64(v)


def is_stream_value(v: object) -> bool:
    """Whether ``v`` is a stream or what ``out << x`` gives in the interpreter (a kernel
    whose lambda ends in a ``<<`` statement returns it: no value lost)."""
    return type(v) is stream or type(v) is _statement


def run_on_host(streams: list[stream], kernel: str,
                run: Callable[[Callable[..., object]], None], fn: Callable[..., object]) -> None:
    """Run a host-device kernel that captures ``streams``: ``run(work_item_function)``.

    Each work-item's end is its implicit flush; at the kernel's end the notes
    on what the limits cut or dropped are written.
    """
    runs = [_HostRun(s) for s in streams]

    def work_item(*args: Any) -> object:
        try:
            return fn(*args)
        finally:
            wid = _HostRun.key()
            for r in runs:
                with r.lock:
                    r.out.end(wid)

    for s, r in zip(streams, runs, strict=True):
        s._run = r
    try:
        run(work_item)
    finally:
        for s, r in zip(streams, runs, strict=True):
            s._run = None
            r.out.finish()
            notes = r.out.notes(kernel)
            if notes:
                sys.stdout.write(notes)
        sys.stdout.flush()
