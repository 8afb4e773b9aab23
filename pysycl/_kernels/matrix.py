"""``sycl_ext_oneapi_matrix`` (``sycl::ext::oneapi::experimental::matrix``): the API and the
host_debuggable device's numpy reference (the oracle every device is compared with).

C++ template parameters are Python arguments::

    a = joint_matrix(sg, np.float16, use.a, 16, 16, layout.row_major)
    c = joint_matrix(sg, np.float32, use.accumulator, 16, 16)      # layout.dynamic
    joint_matrix_fill(sg, c, 0.0)
    joint_matrix_load(sg, a, pA + off, lda)                          # USM pointer + offset
    joint_matrix_load(sg, b, (accB, off), ldb)                       # accessor + offset
    joint_matrix_mad(sg, c, a, b, c)
    joint_matrix_store(sg, c, (accC, off), ldc, layout.row_major)

Element types (``T``): ``np.float16``, ``bfloat16`` (the module ``sycl.ext.oneapi.bfloat16``
or ``matrix_type.bf16``; stored as ``np.uint16`` bits, as everywhere in pysycl),
``precision.tf32`` (float32 memory), ``np.float32``, ``np.int8``, ``np.uint8``,
``np.int32``. A joint_matrix belongs to the sub-group: every work-item of it holds the
whole tile (the same values), loads read the whole tile, ``joint_matrix_store`` writes
row ``r`` from work-item ``r % sub-group size`` (see docs/matrix.md for why). In kernels
these names are typed and lowered by ``pysycl_numba/overloads/matrix.py`` with the same
semantics.
"""

from __future__ import annotations

import enum
import inspect
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from pysycl._core import bfloat16 as _bf16
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import kernel_api_host as _host
from pysycl._kernels import matrix_flight as _flight
from pysycl._objects.multi_ptr import memory_operand


class use(enum.Enum):  # noqa: N801 - the spec's spelling
    """``matrix::use``: the operand a joint_matrix is."""

    a = "a"
    b = "b"
    accumulator = "accumulator"


class layout(enum.Enum):  # noqa: N801 - the spec's spelling
    """``matrix::layout``: how a tile lies in memory (``dynamic``: given at load/store)."""

    row_major = "row_major"
    col_major = "col_major"
    dynamic = "dynamic"
    #: pysycl's own (docs/matrix.md "Work-group matrices"): an A or B tile stored K-major
    #: (A row-major, B column-major) in 128-byte rows whose 16-byte chunks are permuted by
    #: the 128-byte swizzle -- the byte at offset ``x`` from the memory's element 0 lies at
    #: ``x ^ (((x >> 7) & 7) << 4)`` -- the layout ``wgmma`` reads local memory in.
    ext_pysycl_swizzle128 = "ext_pysycl_swizzle128"


_SWZ = layout.ext_pysycl_swizzle128


class matrix_type(enum.Enum):  # noqa: N801 - the spec's spelling
    """``matrix::matrix_type``: element types in ``info.device.ext_oneapi_matrix_combinations``."""

    bf16 = "bf16"
    fp16 = "fp16"
    tf32 = "tf32"
    fp32 = "fp32"
    fp64 = "fp64"
    sint8 = "sint8"
    sint16 = "sint16"
    sint32 = "sint32"
    sint64 = "sint64"
    uint8 = "uint8"
    uint16 = "uint16"
    uint32 = "uint32"
    uint64 = "uint64"


class precision(enum.Enum):  # noqa: N801 - the spec's namespace ``matrix::precision``
    """``matrix::precision::tf32``: a joint_matrix element type on float32 memory."""

    tf32 = "tf32"


#: element kind -> the numpy storage type of its elements (in memory and in the tile)
STORAGE: dict[matrix_type, np.dtype] = {
    matrix_type.fp16: np.dtype(np.float16), matrix_type.bf16: np.dtype(np.uint16),
    matrix_type.tf32: np.dtype(np.float32), matrix_type.fp32: np.dtype(np.float32),
    matrix_type.sint8: np.dtype(np.int8), matrix_type.uint8: np.dtype(np.uint8),
    matrix_type.sint32: np.dtype(np.int32),
}
_NUMPY_KINDS = {np.dtype(np.float16): matrix_type.fp16, np.dtype(np.float32): matrix_type.fp32,
                np.dtype(np.int8): matrix_type.sint8, np.dtype(np.uint8): matrix_type.uint8,
                np.dtype(np.int32): matrix_type.sint32}


@dataclass(frozen=True)
class combination:  # noqa: N801 - the spec's spelling
    """``matrix::combination``: one (A, B, C, D) type set a device multiplies.

    ``msize``/``nsize``/``ksize`` 0: any size up to ``max_msize``/``max_nsize``/``max_ksize``
    (the extension's spelling for devices without fixed shapes); else the one shape.
    """

    max_msize: int
    max_nsize: int
    max_ksize: int
    msize: int
    nsize: int
    ksize: int
    atype: matrix_type
    btype: matrix_type
    ctype: matrix_type
    dtype: matrix_type

    def __str__(self) -> str:
        shape = (f"m{self.msize}n{self.nsize}k{self.ksize}" if self.msize else
                 f"m,n,k <= {self.max_msize},{self.max_nsize},{self.max_ksize}")
        return (f"{self.atype.name} x {self.btype.name} + {self.ctype.name} -> "
                f"{self.dtype.name} ({shape})")


_T = matrix_type
#: The loop implementation's sizes (host_debuggable and SPIR-V devices): any shape up to 32.
LOOP_MAX = 32
_LOOP_KINDS = ((_T.fp16, _T.fp32), (_T.bf16, _T.fp32), (_T.tf32, _T.fp32),
               (_T.sint8, _T.sint32), (_T.uint8, _T.sint32))
LOOP_COMBINATIONS: tuple[combination, ...] = tuple(
    combination(LOOP_MAX, LOOP_MAX, LOOP_MAX, 0, 0, 0, a, a, c, c) for a, c in _LOOP_KINDS)
#: Work-group matrices (``joint_matrix(it.get_group(), ...)``) by loops: any shape up to
#: 128 x 256 (k up to 32).
WG_LOOP_COMBINATIONS: tuple[combination, ...] = tuple(
    combination(128, 256, 32, 0, 0, 0, a, a, c, c) for a, c in _LOOP_KINDS)

#: the joint_matrix scopes: the sub-group's (the extension's) and the work-group's (pysycl's)
SUB_GROUP, WORK_GROUP = "sub_group", "work_group"


def swizzled(i: int, itemsize: int) -> int:
    """Element ``i`` of memory in :attr:`layout.ext_pysycl_swizzle128`: where it lies."""
    x = i * itemsize
    return (x ^ (((x >> 7) & 7) << 4)) // itemsize


def element_kind(t: Any) -> matrix_type | None:
    """The ``matrix_type`` that a joint_matrix's ``T`` argument stands for, else None."""
    if isinstance(t, matrix_type):
        return t
    if t is precision.tf32:
        return matrix_type.tf32
    if isinstance(t, ModuleType) and t.__name__ == "pysycl.ext.oneapi.bfloat16":
        return matrix_type.bf16
    try:
        return _NUMPY_KINDS.get(np.dtype(t))
    except TypeError:
        return None


def offered(combos: tuple[combination, ...] | list[combination]) -> str:
    """``combos`` as the sentence listing what a device offers."""
    return "; ".join(str(c) for c in combos) or "no joint_matrix combinations"


def check_matrix(kind: matrix_type | None, t: Any, u: use, rows: int, cols: int, lay: layout,
                 combos: tuple[combination, ...], where: str) -> None:
    """Raise unless a ``joint_matrix(sg, t, u, rows, cols, lay)`` is one ``combos`` offer
    (a :attr:`layout.ext_pysycl_swizzle128` tile: and :func:`check_swizzled`)."""
    check_swizzled(u, lay, rows, cols, STORAGE[kind].itemsize if kind in STORAGE else 0, where)
    if lay is layout.dynamic and u is not use.accumulator:
        raise exception(errc.invalid, f"{where}: a use.{u.name} joint_matrix needs "
                        "layout.row_major or layout.col_major (layout.dynamic is for "
                        "use.accumulator)")
    if lay is not layout.dynamic and u is use.accumulator:
        raise exception(errc.invalid, f"{where}: a use.accumulator joint_matrix has "
                        "layout.dynamic (the layout is given to joint_matrix_load/store)")
    for c in combos:
        if u is use.a:
            ok, dims = kind == c.atype, ((c.msize, c.max_msize), (c.ksize, c.max_ksize))
        elif u is use.b:
            ok, dims = kind == c.btype, ((c.ksize, c.max_ksize), (c.nsize, c.max_nsize))
        else:
            ok, dims = kind in (c.ctype, c.dtype), ((c.msize, c.max_msize), (c.nsize, c.max_nsize))
        if ok and all((n == fixed) if fixed else (1 <= n <= most)
                      for n, (fixed, most) in zip((rows, cols), dims, strict=True)):
            return
    name = kind.name if kind else repr(t)
    raise exception(errc.kernel_not_supported,
                    f"{where}: joint_matrix of {name}, use.{u.name}, {rows}x{cols} is not a "
                    f"combination the device offers (info.device.ext_oneapi_matrix_combinations:"
                    f" {offered(combos)})")


def check_mad(kinds: tuple[matrix_type, ...], shapes: tuple[tuple[int, int], ...],
              combos: tuple[combination, ...], where: str) -> None:
    """Raise unless ``D = A*B + C`` with these element kinds and shapes is offered."""
    (m, k), (k2, n), (cm, cn), (dm, dn) = shapes[1], shapes[2], shapes[3], shapes[0]
    if k != k2 or (m, n) != (cm, cn) or (m, n) != (dm, dn):
        raise exception(errc.invalid, f"{where}: joint_matrix_mad shapes do not agree: "
                        f"D {dm}x{dn} = A {m}x{k} * B {k2}x{n} + C {cm}x{cn}")
    d, a, b, c = kinds
    for co in combos:
        if (co.atype, co.btype, co.ctype, co.dtype) == (a, b, c, d) and all(
                (x == f) if f else x <= most for x, f, most in
                ((m, co.msize, co.max_msize), (n, co.nsize, co.max_nsize),
                 (k, co.ksize, co.max_ksize))):
            return
    raise exception(errc.kernel_not_supported,
                    f"{where}: joint_matrix_mad of {a.name} x {b.name} + {c.name} -> {d.name} "
                    f"(m{m}n{n}k{k}) is not a combination the device offers "
                    f"(info.device.ext_oneapi_matrix_combinations: {offered(combos)})")


def check_swizzled(u: use, lay: layout, rows: int, cols: int, itemsize: int,
                   where: str) -> None:
    """Raise unless a ``layout.ext_pysycl_swizzle128`` tile is an A or B whose K-major rows
    fit its 128-byte rows."""
    if lay is not layout.ext_pysycl_swizzle128:
        return
    if u is use.accumulator:
        raise exception(errc.invalid, f"{where}: layout.ext_pysycl_swizzle128 is a layout of "
                        "use.a and use.b tiles (an accumulator is stored row_major or col_major)")
    k = cols if u is use.a else rows
    if k * itemsize > 128:
        raise exception(errc.invalid, f"{where}: a layout.ext_pysycl_swizzle128 tile's K "
                        f"({k} elements of {itemsize} bytes) must fit its 128-byte rows")


def check_stride(stride: int, rows: int, cols: int, lay: layout, where: str,
                 itemsize: int = 0) -> None:
    """Raise unless ``stride`` leaves the rows (columns) of a tile apart (a swizzled tile:
    unless its rows are 128 bytes)."""
    if lay is layout.ext_pysycl_swizzle128:
        if stride * itemsize != 128:
            raise exception(errc.invalid, f"{where}: layout.ext_pysycl_swizzle128 tiles have "
                            f"128-byte rows: the stride is {128 // max(itemsize, 1)} elements "
                            f"of {itemsize} bytes, not {stride}")
        return
    need = cols if lay is layout.row_major else rows
    if stride < need:
        raise exception(errc.invalid, f"{where}: stride {stride} is less than the {need} "
                        f"elements of one {'row' if lay is layout.row_major else 'column'} of a "
                        f"{rows}x{cols} {lay.name} tile (tiles would overlap)")


# ==================================================================== the host API
def _where(name: str, up: int = 2) -> str:
    """``name at file:line`` of the user's call: ``up`` frames above this one."""
    frame = inspect.stack()[up]
    return f"{name} at {frame.filename}:{frame.lineno}"


def _check_in_kernel(g: Any, name: str, *ms: Any) -> str:
    """The scope of ``g`` (a sub-group's or a work-group's), which ``ms`` must share."""
    if not _host.active():
        raise exception(errc.invalid, f"sycl.ext.oneapi.experimental.matrix.{name} can only "
                        "be called inside an nd_range kernel")
    scope = {"_HostSubGroup": SUB_GROUP, "_HostGroup": WORK_GROUP}.get(type(g).__name__)
    if scope is None or not hasattr(g, "get_local_linear_id"):
        raise exception(errc.invalid, f"{name} takes the kernel's sub-group "
                        "(it.get_sub_group() of an nd_range kernel) or its work-group "
                        f"(it.get_group()), not {g!r}")
    for m in ms:
        if m.scope != scope:  # (the user's call: 3 frames up, through the API function)
            raise exception(errc.invalid, f"{_where(name, 3)}: {m!r} belongs to a "
                            f"{m.scope.replace('_', '-')}, not to the "
                            f"{scope.replace('_', '-')} passed")
    return scope


class joint_matrix:  # noqa: N801 - the spec's spelling
    """``joint_matrix<Group, T, Use, Rows, Cols, Layout>`` (host: a numpy tile); ``Group``
    the sub-group (the extension's) or the work-group (pysycl's: docs/matrix.md)."""

    def __init__(self, sg: Any, T: Any, use: use, rows: int, cols: int,  # noqa: N803
                 layout: layout = layout.dynamic) -> None:
        self.scope = _check_in_kernel(sg, "joint_matrix")
        self.kind = element_kind(T)
        self.use, self.rows, self.cols, self.layout = use, int(rows), int(cols), layout
        check_matrix(self.kind, T, use, self.rows, self.cols, layout,
                     WG_LOOP_COMBINATIONS if self.scope == WORK_GROUP else LOOP_COMBINATIONS,
                     _where("joint_matrix"))
        assert self.kind is not None
        self.data = np.zeros((self.rows, self.cols), STORAGE[self.kind])
        #: a work-group A or B tile's memory as loaded, read when a product needs it
        #: (as wgmma reads local memory: :mod:`pysycl._kernels.matrix_flight`)
        self.view: tuple[Any, int, int, layout] | None = None

    def __repr__(self) -> str:
        return (f"joint_matrix({self.kind.name if self.kind else '?'}, use.{self.use.name}, "
                f"{self.rows}, {self.cols}, layout.{self.layout.name})")


def _read(m: joint_matrix, view: tuple[Any, int, int, layout]) -> np.ndarray:
    """The ``rows x cols`` tile of ``m``'s shape and use that ``view`` names in memory."""
    mem, off, stride, lay = view
    isz = m.data.dtype.itemsize
    out = np.empty_like(m.data)
    for r in range(m.rows):
        for c in range(m.cols):
            i = off + _index(r, c, stride, lay, m.use)
            out[r, c] = mem[swizzled(i, isz) if lay is _SWZ else i]
    return out


def _data(m: joint_matrix) -> np.ndarray:
    """The tile's elements (a work-group A or B tile read from the memory it was loaded from)."""
    if m.view is not None:
        m.data[...] = _read(m, m.view)
        m.view = None
    return m.data


def _numbers(m: joint_matrix, data: np.ndarray) -> np.ndarray:
    return _bf16.to_float(data) if m.kind is matrix_type.bf16 else data


def _values(m: joint_matrix) -> np.ndarray:
    """The tile's values as numbers (bfloat16 bits widened to float32)."""
    return _numbers(m, _data(m))


def _assign(m: joint_matrix, v: Any) -> None:
    m.view = None
    m.data[...] = _bf16.from_float(v) if m.kind is matrix_type.bf16 else v


def _settle(*ms: joint_matrix) -> None:
    """A work-group accumulator among ``ms``: the work-item's products in flight done first
    (as ``wgmma.wait_group 0`` before an accumulator is touched)."""
    if any(m.scope == WORK_GROUP and m.use is use.accumulator for m in ms):
        _flight.complete()


def joint_matrix_fill(sg: Any, m: joint_matrix, v: Any) -> None:
    """Every element of ``m`` := ``v`` (converted to the element type)."""
    _check_in_kernel(sg, "joint_matrix_fill", m)
    _settle(m)
    _assign(m, np.full(m.data.shape, v, np.float32 if m.kind is matrix_type.bf16 else m.data.dtype))


def _dtype_of(mem: Any) -> np.dtype:
    return np.dtype(mem.dtype)


def _resolve_layout(m: joint_matrix, lay: layout | None, name: str) -> layout:
    if m.use is use.accumulator:
        if lay not in (layout.row_major, layout.col_major):
            raise exception(errc.invalid, f"{name}: a use.accumulator joint_matrix needs the "
                            "layout argument (layout.row_major or layout.col_major)")
        return lay
    if lay is not None and lay is not m.layout:
        raise exception(errc.invalid, f"{name}: layout.{lay.name} differs from the "
                        f"joint_matrix's layout.{m.layout.name}")
    return m.layout


def _check_memory(m: joint_matrix, mem: Any, name: str) -> None:
    want = STORAGE[m.kind] if m.kind else None
    if _dtype_of(mem) != want:
        raise exception(errc.invalid, f"{name}: memory of {_dtype_of(mem)} for a joint_matrix "
                        f"of {m.kind.name if m.kind else '?'} (its elements are {want})")


def _index(r: int, c: int, stride: int, lay: layout, u: use | None = None) -> int:
    if lay is _SWZ:  # K-major: A row-major, B column-major (then swizzled, _element)
        return r * stride + c if u is use.a else c * stride + r
    return r * stride + c if lay is layout.row_major else c * stride + r


def joint_matrix_load(sg: Any, m: joint_matrix, src: Any, stride: int,
                      layout: layout | None = None) -> None:
    """``m`` := the ``rows x cols`` tile at ``src`` whose rows (columns, col_major) lie
    ``stride`` elements apart."""
    _check_in_kernel(sg, "joint_matrix_load", m)
    where = _where("joint_matrix_load")
    lay = _resolve_layout(m, layout, where)
    mem, off = memory_operand(src, where)
    _check_memory(m, mem, where)
    check_stride(int(stride), m.rows, m.cols, lay, where, m.data.dtype.itemsize)
    view = (mem, off, int(stride), lay)
    if m.scope == WORK_GROUP and m.use is not use.accumulator:
        m.view = view  # read by the products that use it (matrix_flight)
        return
    _settle(m)
    m.data[...] = _read(m, view)
    m.view = None


def joint_matrix_store(sg: Any, m: joint_matrix, dst: Any, stride: int, layout: layout) -> None:
    """The tile ``m`` to ``dst``: work-item ``i`` of the sub-group writes rows ``i``,
    ``i + sub-group size``, ... (together: the whole tile)."""
    _check_in_kernel(sg, "joint_matrix_store", m)
    where = _where("joint_matrix_store")
    if m.use is not use.accumulator:
        raise exception(errc.invalid, f"{where}: joint_matrix_store stores a use.accumulator "
                        f"joint_matrix, not use.{m.use.name}")
    lay = _resolve_layout(m, layout, where)
    mem, off = memory_operand(dst, where)
    _check_memory(m, mem, where)
    check_stride(int(stride), m.rows, m.cols, lay, where)
    _settle(m)
    n, lid = sg.get_local_linear_range(), sg.get_local_linear_id()
    for r in range(lid, m.rows, n):
        for c in range(m.cols):
            mem[off + _index(r, c, int(stride), lay)] = m.data[r, c]


def joint_matrix_mad(sg: Any, d: joint_matrix, a: joint_matrix, b: joint_matrix,
                     c: joint_matrix) -> None:
    """``D = A * B + C``: float kinds multiply and add in float32 (tf32 at float32
    precision), integer kinds in int32 (wrapping)."""
    scope = _check_in_kernel(sg, "joint_matrix_mad", d, a, b, c)
    where = _where("joint_matrix_mad")
    for m, u in ((d, use.accumulator), (a, use.a), (b, use.b), (c, use.accumulator)):
        if m.use is not u:
            raise exception(errc.invalid, f"{where}: joint_matrix_mad(sg, D, A, B, C) takes "
                            f"use.{u.name} where {m!r} was passed")
    kinds = tuple(m.kind for m in (d, a, b, c))
    check_mad(kinds, tuple((m.rows, m.cols) for m in (d, a, b, c)),
              WG_LOOP_COMBINATIONS if scope == WORK_GROUP else LOOP_COMBINATIONS, where)
    def product(va: np.ndarray, vb: np.ndarray) -> None:
        if a.kind in (matrix_type.sint8, matrix_type.uint8):
            acc = c.data.astype(np.int64) + va.astype(np.int64) @ vb.astype(np.int64)
            d.data[...] = acc.astype(np.int32)  # wraps as int32 does
        else:
            d.data[...] = (c.data + _numbers(a, va).astype(np.float32)
                           @ _numbers(b, vb).astype(np.float32))

    if scope != WORK_GROUP:
        product(a.data, b.data)
        return
    # a work-group product runs when the GPU's would have been waited for (matrix_flight),
    # reading A and B then; the tiles' memory (or elements) as they are named now
    ta, tb = (m.view if m.view is not None else m.data.copy() for m in (a, b))
    _flight.issue(lambda: product(*(x if isinstance(x, np.ndarray) else _read(m, x)
                                    for m, x in ((a, ta), (b, tb)))))


def joint_matrix_copy(sg: Any, src: joint_matrix, dest: joint_matrix) -> None:
    """``dest`` := ``src``'s elements converted to ``dest``'s type (same shape)."""
    _check_in_kernel(sg, "joint_matrix_copy", src, dest)
    _settle(src, dest)
    if (src.rows, src.cols) != (dest.rows, dest.cols):
        raise exception(errc.invalid, f"{_where('joint_matrix_copy')}: joint_matrix_copy of a "
                        f"{src.rows}x{src.cols} tile into a {dest.rows}x{dest.cols} one")
    _assign(dest, _values(src).astype(np.float32 if dest.kind is matrix_type.bf16
                                      else dest.data.dtype))


def joint_matrix_apply(sg: Any, m: joint_matrix, fn: Any) -> None:
    """Every element ``x`` of ``m`` := ``fn(x)``, or ``fn(x, row, col)`` for a function of
    three parameters (C++ changes ``x`` through a reference; Python returns the new value).
    bfloat16 elements are passed as float32 and the result rounded back."""
    _check_in_kernel(sg, "joint_matrix_apply", m)
    _settle(m)
    try:
        three = len(inspect.signature(fn).parameters) == 3
    except (TypeError, ValueError):
        three = False
    vals = _values(m)
    out = np.empty(vals.shape, np.float32 if m.kind is matrix_type.bf16 else m.data.dtype)
    for r in range(m.rows):
        for c in range(m.cols):
            out[r, c] = fn(vals[r, c], r, c) if three else fn(vals[r, c])
    _assign(m, out)


def round_to_tf32(x: Any) -> np.float32:
    """``matrix::round_to_tf32``: ``x`` (float32) rounded to 10 mantissa bits, ties to even."""
    u = np.array(x, np.float32).view(np.uint32)
    r = (u + np.uint32(0xFFF) + ((u >> np.uint32(13)) & np.uint32(1))) & np.uint32(0xFFFFE000)
    return np.float32(r.view(np.float32))
