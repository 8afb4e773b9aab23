"""``sycl.stream`` output: the manipulators, C++-style number formatting, flushes and limits.

One implementation serves both devices, so they print the same characters: the
host_debuggable device feeds each ``<<`` operand of a running kernel into a
:class:`StreamOutput`; compiled devices write records (``pysycl._core.abi.StreamType``)
that the runtime decodes into the same calls after the kernel
(``pysycl._kernels.kstream``).

Rules (SYCL 2020 §4.16, https://registry.khronos.org/SYCL/specs/sycl-2020/html/sycl-2020.html#subsec:stream):

* A *statement* is one ``out << a << b ...`` chain. Manipulators apply to the
  values after them in the same statement ("any subsequent values in the current
  statement"); each statement starts decimal, without base prefix or plus sign,
  ``defaultfloat``, precision 6, width 0.
* Numbers format as ``std::ostream`` formats them (printf's ``%d``/``%x``/``%o``,
  ``%g``/``%f``/``%e``/``%a``; negative integers in hex/octal as their two's
  complement in the value's width); ``bool`` prints ``true``/``false`` as DPC++
  does; ``setw(n)`` right-aligns numbers and bools (not string literals) in ``n``
  characters. Ids and ranges print ``{1, 2}``, items ``item(range: {..}, id: {..},
  offset: {..})`` (DPC++'s spelling).
* Text a work-item streams collects in its work-item buffer until a flush:
  ``endl`` (after a newline), ``flush``, and the end of the work-item. A flush
  writes the work-item's text in one piece, so lines of work-items never mix.
  Text past ``work_item_buffer_size`` bytes between flushes is cut, flushes past
  ``total_buffer_size`` bytes in all are dropped whole; :meth:`StreamOutput.notes`
  says how much.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from pysycl._core.abi import PRINT_DTYPES, PRINT_NUMBER


class stream_manipulator(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::stream_manipulator``; the value is its code in stream records."""

    flush = 0
    dec = 1
    hex = 2
    oct = 3
    noshowbase = 4
    showbase = 5
    noshowpos = 6
    showpos = 7
    endl = 8
    fixed = 9
    scientific = 10
    hexfloat = 11
    defaultfloat = 12

    def __repr__(self) -> str:
        return f"sycl.{self.name}"


M = stream_manipulator
# The spec's constants (``sycl::endl`` ...); ``hex`` and ``oct`` shadow the builtins
# only as ``sycl.hex``/``sycl.oct``, as ``std::hex`` does in C++.
flush = M.flush
dec = M.dec
hex = M.hex
oct = M.oct
noshowbase = M.noshowbase
showbase = M.showbase
noshowpos = M.noshowpos
showpos = M.showpos
endl = M.endl
fixed = M.fixed
scientific = M.scientific
hexfloat = M.hexfloat
defaultfloat = M.defaultfloat


@dataclass(frozen=True)
class precision_manipulator:  # noqa: N801 - the spec's __precision_manipulator__
    """What ``sycl.setprecision(n)`` returns (C++'s exposition-only ``__precision_manipulator__``)."""

    precision: int


@dataclass(frozen=True)
class width_manipulator:  # noqa: N801 - the spec's __width_manipulator__
    """What ``sycl.setw(n)`` returns (C++'s exposition-only ``__width_manipulator__``)."""

    width: int


def setprecision(precision: int) -> precision_manipulator:
    """``sycl::setprecision``: the precision of the later floating-point values of the statement."""
    return precision_manipulator(int(precision))


def setw(width: int) -> width_manipulator:
    """``sycl::setw``: the field width of the later numbers of the statement."""
    return width_manipulator(int(width))


#: Longest precision and width honoured: more text would be cut by any work-item buffer.
_MAX_FIELD = 1 << 12
#: What a composite SYCL object prints, as DPC++ spells it: its name and its parts
#: (each an id or range, printed ``{a, b}``).
COMPOSITES: dict[str, tuple[str, ...]] = {
    "item": ("range", "id", "offset"),
    "nd_item": ("global_id", "local_id"),
    "group": ("id", "global_range", "local_range", "group_range"),
    "nd_range": ("global_range", "local_range", "offset"),
}


def composite_texts(kind: str) -> list[str]:
    """The text pieces around the parts of a composite: ``["item(range: ", ", id: ", ..., ")"]``."""
    parts = COMPOSITES[kind]
    return [f"{kind}({parts[0]}: "] + [f", {p}: " for p in parts[1:]] + [")"]


@dataclass
class Format:
    """The format state of one statement."""

    base: int = 10
    showbase: bool = False
    showpos: bool = False
    floatfield: str = ""  # "", "fixed", "scientific" or "hexfloat"
    precision: int = 6
    width: int = 0

    def apply(self, m: stream_manipulator) -> None:
        """Apply a formatting manipulator (not ``endl``/``flush``)."""
        if m in (M.dec, M.hex, M.oct):
            self.base = {M.dec: 10, M.hex: 16, M.oct: 8}[m]
        elif m in (M.showbase, M.noshowbase):
            self.showbase = m is M.showbase
        elif m in (M.showpos, M.noshowpos):
            self.showpos = m is M.showpos
        else:
            self.floatfield = {M.fixed: "fixed", M.scientific: "scientific",
                               M.hexfloat: "hexfloat"}.get(m, "")


def format_number(fmt: Format, v: np.generic) -> str:
    """A bool, integer or float scalar as ``std::ostream`` prints it under ``fmt``."""
    kind = v.dtype.kind
    if kind == "b":
        s = "true" if v else "false"
    elif kind in "iu":
        s = _integer(fmt, int(v), v.dtype.itemsize)
    else:
        s = _float(fmt, float(v))
    return s.rjust(min(fmt.width, _MAX_FIELD))


def _integer(fmt: Format, n: int, nbytes: int) -> str:
    if fmt.base == 10:
        return ("-" if n < 0 else "+" if fmt.showpos else "") + str(abs(n))
    if n < 0:
        n += 1 << (8 * nbytes)  # the two's complement, as %x/%o of the value's bits
    digits = format(n, "x" if fmt.base == 16 else "o")
    if fmt.showbase and n:  # printf's "%#x"/"%#o": no prefix on 0
        return ("0x" if fmt.base == 16 else "0") + digits
    return digits


def _float(fmt: Format, x: float) -> str:
    if math.isnan(x):
        return ("+" if fmt.showpos else "") + "nan"
    sign = "-" if math.copysign(1.0, x) < 0 else "+" if fmt.showpos else ""
    a = abs(x)
    p = fmt.precision if 0 <= fmt.precision <= _MAX_FIELD else 6
    if math.isinf(a):
        body = "inf"
    elif fmt.floatfield == "fixed":
        body = "%.*f" % (p, a)  # noqa: UP031 - printf's rules, which format() does not follow
    elif fmt.floatfield == "scientific":
        body = "%.*e" % (p, a)  # noqa: UP031
    elif fmt.floatfield == "hexfloat":
        body = _hexfloat(a)
    else:
        body = "%.*g" % (p, a)  # noqa: UP031
    return sign + body


def _hexfloat(a: float) -> str:
    """C's ``%a`` of a finite non-negative double (glibc: trailing zero digits dropped)."""
    mant, _, exp = a.hex().partition("p")
    head, _, frac = mant.partition(".")
    frac = frac.rstrip("0")
    return f"{head}.{frac}p{exp}" if frac else f"{head}p{exp}"


_DTYPES = tuple(np.dtype(c) for c in PRINT_DTYPES)


def decode_number(tag: int, lo: int, hi: int) -> np.generic:
    """The scalar of a record's number piece: tag ``PRINT_NUMBER + k``, its 64 bits in two words."""
    dt = _DTYPES[(tag & 0xFF) - PRINT_NUMBER]
    bits = np.uint64(int(lo) | (int(hi) << 32))
    if dt.kind == "b":
        return np.bool_(bits != 0)
    if dt.kind in "iu":
        return np.array(bits).view(np.int64 if dt.kind == "i" else np.uint64).astype(dt)[()]
    return np.array(bits).astype(np.dtype(f"u{dt.itemsize}")).view(dt)[()]


def format_array(values: Sequence[int]) -> str:
    """An id's or range's components: ``{1, 2}``."""
    return "{" + ", ".join(str(int(v)) for v in values) + "}"


def unsupported(what: str) -> str:
    """The message for a ``<<`` operand a stream cannot write (both devices)."""
    return (f"sycl.stream cannot write a {what}: it writes string literals (and f-strings of "
            "numbers), bool, integers, floats (float16 to float64), sycl.id/range (and "
            "it.get_id()), items, nd_items, groups, nd_ranges, sycl.vec and the manipulators "
            "(sycl.endl, sycl.flush, sycl.hex, sycl.setprecision(n), ...); write a complex "
            "number's .real and .imag, and an accessor's elements one by one")


class StreamOutput:
    """One launch's output of one stream: work-item buffers, flushes, the two limits.

    Work-items are told apart by a hashable key (the compiled devices' global
    linear id, the host device's thread). ``write`` receives each flushed piece.
    """

    def __init__(self, total: int, per_item: int, write: Callable[[str], object]) -> None:
        self.total = total
        self.per_item = per_item
        self._write = write
        self._pending: dict[Hashable, list[str]] = {}  # insertion order: the implicit flushes
        self._used: dict[Hashable, int] = {}
        self._formats: dict[Hashable, Format] = {}
        self.written = 0
        self.cut = 0  # bytes past a work-item buffer
        self.dropped = 0  # bytes of flushes past the total buffer
        self.dropped_flushes = 0
        self._newline = True  # the output so far ends a line

    def statement(self, wid: Hashable, continues: bool = False) -> Format:
        """Start a statement of work-item ``wid`` (or continue its last one); its format."""
        fmt = self._formats.get(wid) if continues else None
        if fmt is None:
            fmt = self._formats[wid] = Format()
        return fmt

    def text(self, wid: Hashable, s: str, room: int = 0) -> None:
        """Append ``s`` to the work-item's buffer (cut at ``per_item + room`` bytes)."""
        data = s.encode("utf-8", "replace")
        used = self._used.get(wid, 0)
        room += self.per_item - used
        if len(data) > room:
            self.cut += len(data) - max(room, 0)
            if room <= 0:
                return
            data = data[:room]
            s = data.decode("utf-8", "ignore")  # never half a character
        self._pending.setdefault(wid, []).append(s)
        self._used[wid] = used + len(data)

    def manipulator(self, wid: Hashable, fmt: Format, m: stream_manipulator) -> None:
        """Apply ``m``: ``endl`` and ``flush`` flush the work-item, others change ``fmt``."""
        if m is M.endl:  # its newline ends the line even when the text before was cut
            self.text(wid, "\n", room=int(self._used.get(wid, 0) >= self.per_item))
            self.flush(wid)
        elif m is M.flush:
            self.flush(wid)
        else:
            fmt.apply(m)

    def flush(self, wid: Hashable) -> None:
        """Write the work-item's buffer in one piece, if the total buffer has room for it."""
        parts = self._pending.pop(wid, None)
        size = self._used.pop(wid, 0)
        if not parts:
            return
        if self.written + size > self.total:
            self.dropped += size
            self.dropped_flushes += 1
            return
        self.written += size
        text = "".join(parts)
        self._newline = text.endswith("\n")
        self._write(text)

    def end(self, wid: Hashable) -> None:
        """The work-item ended: its implicit flush; its next statement starts afresh."""
        self.flush(wid)
        self._formats.pop(wid, None)

    def finish(self) -> None:
        """The kernel ended: the implicit flush of every work-item, in order of first output."""
        for wid in list(self._pending):
            self.flush(wid)
        self._formats.clear()

    def notes(self, kernel: str) -> str:
        """What the limits cut or dropped, as lines for ``sys.stdout`` ("" if nothing)."""
        out = "" if self._newline else "\n"
        if self.cut:
            out += (f"[pysycl: sycl.stream of {kernel}: {self.cut} byte(s) beyond the "
                    f"work-item buffer size ({self.per_item} bytes between flushes) were cut; "
                    "flush more often (sycl.endl, sycl.flush) or pass a larger "
                    "work_item_buffer_size to sycl.stream]\n")
        if self.dropped:
            out += (f"[pysycl: sycl.stream of {kernel}: {self.dropped_flushes} flush(es), "
                    f"{self.dropped} byte(s), were dropped: the total buffer size "
                    f"({self.total} bytes) was full; pass a larger total_buffer_size to "
                    "sycl.stream]\n")
        return out if self.cut or self.dropped else ""
