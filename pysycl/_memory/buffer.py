"""``sycl::buffer`` (SYCL 2020 §4.7.2).

A buffer owns one host copy (a C-contiguous, flat numpy array) and at most one
device allocation per context; its :class:`~pysycl._memory.coherence.Coherence`
says which copies hold the current data. Data moves only when the copy a
command needs is stale, and the buffer writes back to the user's array exactly once, when the buffer is
destroyed or its ``with`` block exits (§4.7.2.3).

Sub-buffers share their root's storage and state; dependencies are tracked per
root buffer, which orders more than strictly needed but never too little.
"""

from __future__ import annotations

import _thread
import builtins
import logging
import sys
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl import property as _prop
from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._core.sites import user_site as _user_site
from pysycl._core.vec_layout import describe, vec_dtype, vec_parts
from pysycl._memory.accessor import BufferBase, access_mode, accessor, host_accessor
from pysycl._memory.coherence import HOST, Coherence
from pysycl._objects.range import id as _id
from pysycl._objects.range import linear_index
from pysycl._objects.range import range as _range
from pysycl._objects.vec import vec_type

if TYPE_CHECKING:
    from numpy.typing import ArrayLike, DTypeLike

    from pysycl._core.launch_types import CommandGroupRef
    from pysycl._memory.accessor import Extent
    from pysycl.property import P, _Property

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks

_log = logging.getLogger("pysycl.buffer")

# dtype kinds a kernel can use: bool, signed, unsigned, float, complex.
_NUMERIC_KINDS = frozenset("biufc")


def check_dtype(dtype: DTypeLike | vec_type, who: str = "sycl.buffer", what: str = "buffers",
                vectors: bool = False) -> np.dtype:
    """Return ``dtype`` as a numpy dtype, or raise TypeError for non-numeric ones.

    The one rule for the element types of memory kernels use (buffers, USM
    allocations and pointers): numbers in native byte order; with ``vectors``, also
    ``sycl::vec`` types (``sycl.float4``: :func:`pysycl._core.vec_layout.vec_dtype`).
    ``who`` names the call in the message, ``what`` the memory.
    """
    if isinstance(dtype, vec_type):
        if vectors and not dtype.is_marray:
            return vec_dtype(dtype.dtype, dtype.num_elements)
        hint = ("make a buffer of vectors with buf.reinterpret(sycl.float4, r) or "
                "sycl.buffer(r, dtype=sycl.float4)" if not dtype.is_marray else
                "marray elements are not supported in memory")
        raise TypeError(f"{who}: {what} of {dtype!r} elements are not supported; use the "
                        f"element dtype {dtype.dtype} and {dtype!r}.load / .store ({hint})")
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"{who}: {dtype!r} is not a numpy dtype") from e
    if vectors and vec_parts(dt) is not None:
        return dt
    if dt.kind not in _NUMERIC_KINDS or dt.hasobject or dt.fields is not None:
        raise TypeError(
            f"{who}: dtype {dt} is not supported; {what} hold numbers "
            "(bool, int8..int64, uint8..uint64, float16/32/64, complex64/128)"
        )
    if not dt.isnative:
        raise TypeError(f"{who}: dtype {dt} is not in native byte order; use .astype()")
    return dt


#: DLPack device types (``__dlpack_device__()[0]``) by name, for messages.
_DL_DEVICES = {1: "the CPU", 2: "a CUDA GPU", 3: "CUDA pinned host memory", 4: "an OpenCL device",
               7: "a Vulkan device", 8: "a Metal device", 10: "a ROCm GPU", 13: "CUDA managed memory",
               14: "a oneAPI (SYCL USM) device"}


def host_array_of(data: object) -> np.ndarray:
    """A numpy view of the memory of ``data`` (not an ndarray), never a copy.

    The buffer protocol (``bytearray``, ``array.array``, ``memoryview``, ctypes
    arrays), ``__array_interface__``/``__array_struct__`` and DLPack on the CPU
    (``np.from_dlpack``) give zero-copy views, so a buffer over ``data`` writes back
    into ``data`` itself. A read-only view is fine (a ``const T*``: never written
    back); an object that only offers ``__array__`` (which may return a copy) or
    lives on another device gets a TypeError that says what to pass instead.
    """
    name = type(data).__name__
    instead = ("pass a numpy array instead (a = np.asarray(x), a copy where x is not host "
               "memory) and, once the buffer is destroyed, copy the results back into x yourself")
    try:
        return np.asarray(memoryview(data))  # type: ignore[arg-type]  # the buffer protocol
    except TypeError:
        pass
    except ValueError as e:  # a format numpy cannot read
        raise TypeError(f"sycl.buffer: the buffer of the {name} has no numeric numpy dtype "
                        f"({e})") from None
    if hasattr(data, "__array_interface__") or hasattr(data, "__array_struct__"):
        arr = np.asarray(data)  # numpy wraps the address it is given: a view
        iface = getattr(data, "__array_interface__", None)
        address = iface.get("data") if isinstance(iface, dict) else None
        if isinstance(address, tuple) and arr.size and arr.ctypes.data != address[0]:
            raise TypeError(f"sycl.buffer: np.asarray gave a copy of the {name}, not a view "
                            f"of its memory; {instead}")
        return arr
    if hasattr(data, "__dlpack__") and hasattr(data, "__dlpack_device__"):
        kind = data.__dlpack_device__()[0]
        if kind != 1:  # not kDLCPU
            where = _DL_DEVICES.get(int(kind), f"DLPack device type {kind}")
            raise TypeError(f"sycl.buffer: the {name} lives on {where}, not in host memory, "
                            f"so a buffer cannot use or write back to it; {instead}")
        try:
            return np.from_dlpack(data)
        except (BufferError, TypeError, ValueError, RuntimeError) as e:
            raise TypeError(f"sycl.buffer: the {name} refused a DLPack view of its memory "
                            f"({e}); {instead}") from e
    if hasattr(data, "__array__"):
        arr = np.asarray(data)
        if not arr.flags.writeable:
            return arr  # read-only data: a const T*, never written back
        raise TypeError(f"sycl.buffer: a {name} offers its data only through __array__, "
                        "which may be a copy, so the buffer could not write its results back "
                        f"into it; {instead}. Objects with the buffer protocol, "
                        "__array_interface__ or DLPack on the CPU are used in place.")
    raise TypeError(f"sycl.buffer cannot hold a {name}; give a numpy array, a list, or an "
                    "object with the buffer protocol, __array_interface__ or CPU DLPack")


class buffer(BufferBase):  # noqa: N801 - the spec's spelling
    """``sycl::buffer``: data shared between the host and devices.

    Constructors (C++ overloads → one function with optional arguments)::

        sycl.buffer(ndarray)                      # shares the array, writes back
        sycl.buffer(ndarray, sycl.range(...))     # same storage viewed with another range
        sycl.buffer(sycl.range(...), dtype=np.float32)   # uninitialized, no host data
        sycl.buffer([1, 2, 3], dtype=np.int32)    # from a container (written back to a list)
        sycl.buffer(bytearray(64))                # buffer protocol / DLPack (CPU): in place
        sycl.buffer(parent, sycl.id(...), sycl.range(...))  # sub-buffer

    A C-contiguous writable array is used in place as the buffer's host storage;
    any other array (non-contiguous, read-only) is copied, and written back to
    the original (element-wise assignment) only when it is writable. Other array
    objects are used through a zero-copy view (:func:`host_array_of`). The host
    array must not be touched while the buffer is alive except through
    ``host_accessor`` (§4.7.2.3).

    Use it as a context manager (``with sycl.buffer(a) as A:``) to write back
    deterministically on exit; otherwise write-back happens when the buffer is
    garbage-collected.
    """

    _closed_at = ""  # file:line where the buffer was closed
    _elem: np.dtype | None = None  # a reinterpreted buffer's element type, when not its storage's
    # What accessors read on every submit (coherence, closed, accessor_parts): BufferBase.

    def __init__(
        self,
        data: ArrayLike | _range | buffer | None = None,
        range: Extent | None = None,
        sub_range: Extent | None = None,
        *,
        dtype: DTypeLike | None = None,
        properties: Iterable[_Property] = (),
    ) -> None:
        # Closed until fully built: a constructor that raises leaves nothing for
        # __del__ to write back (and no second error printed during collection).
        self.closed = True
        self._props = _prop.checked(properties, _prop.BUFFER, "sycl.buffer")
        self._init(data, range, sub_range, dtype)
        self.closed = False
        if self.coherence.origin and not hasattr(self, "_parent"):
            _live.add(self)  # written back at exit, should it still be alive then

    def _init(self, data: ArrayLike | _range | buffer | None, range: Extent | None,
              sub_range: Extent | None, dtype: DTypeLike | None) -> None:
        if isinstance(data, buffer):
            self._init_sub(data, range, sub_range)
            return
        if isinstance(data, _range):
            if range is not None:
                raise TypeError("sycl.buffer(range, ...): give the dtype as dtype=")
            if dtype is None:
                raise TypeError("sycl.buffer(sycl.range(...)) needs the element type: dtype=np.float32")
            dt = check_dtype(dtype, vectors=True)
            nbytes = data.size() * dt.itemsize
            if nbytes > sys.maxsize:  # more than any host or device can address
                raise exception(errc.memory_allocation, f"sycl.buffer: a range {tuple(data)} "
                                f"of {dt} is {nbytes} bytes, more than any memory can hold (at "
                                f"most {sys.maxsize} bytes; a device allows "
                                "info.device.max_mem_alloc_size)")
            self.coherence = Coherence(None, None, write_back=False, dtype=dt, size=data.size())
            self._range = data
            self._mem_range = data
            self._offset = 0
            return
        if data is None:
            raise TypeError("sycl.buffer needs host data, a sycl.range, or a parent buffer")
        self._init_host(data, range, dtype)

    def _init_host(self, data: ArrayLike, rng: Extent | None, dtype: DTypeLike | None) -> None:
        user: np.ndarray | list[Any] | None = None
        write_back = True
        if isinstance(data, (list, tuple)):
            arr = np.asarray(data, dtype=dtype)
            check_dtype(arr.dtype)
            host = np.ascontiguousarray(arr).reshape(-1).copy()
            shape = arr.shape if arr.ndim else (1,)
            if isinstance(data, list) and arr.ndim == 1:
                user = data
            else:
                write_back = False
        else:
            arr = data if isinstance(data, np.ndarray) else host_array_of(data)
            if dtype is not None and np.dtype(dtype) != arr.dtype:
                raise TypeError(f"sycl.buffer: the data has dtype {arr.dtype}, dtype= says "
                                f"{np.dtype(dtype)}")
            check_dtype(arr.dtype)
            if arr.flags.c_contiguous and arr.flags.writeable:
                host = arr.reshape(-1)  # a view: the user's memory is the host copy
            else:
                host = np.ascontiguousarray(arr).reshape(-1).copy()
                if arr.flags.writeable:
                    user = arr
                else:
                    write_back = False  # like a const T*: never written back
            shape = arr.shape if arr.ndim else (1,)
        if rng is not None:
            rng = rng if isinstance(rng, _range) else _range(rng)
            if rng.size() != host.size:
                raise exception(errc.invalid, f"sycl.buffer: range {tuple(rng)} has {rng.size()} "
                                f"elements but the data has {host.size}")
        else:
            if len(shape) > 3:
                raise TypeError(f"sycl.buffer: at most 3 dimensions, the array has {len(shape)}")
            rng = _range(*shape)
        self.coherence = Coherence(host, user, write_back)
        self.coherence.valid.add(HOST)
        self._range = rng
        self._mem_range = rng
        self._offset = 0

    def _init_sub(self, parent: buffer, base_index: Extent | None, sub_range: Extent | None) -> None:
        if parent.is_sub_buffer():
            raise exception(errc.invalid, "cannot create a sub-buffer of a sub-buffer (§4.7.2.1)")
        if base_index is None or sub_range is None:
            raise TypeError("sub-buffer: sycl.buffer(parent, sycl.id(...), sycl.range(...))")
        base = base_index if isinstance(base_index, _id) else _id(base_index)
        sub = sub_range if isinstance(sub_range, _range) else _range(sub_range)
        prange = parent.get_range()
        if len(base) != len(prange) or len(sub) != len(prange):
            raise exception(errc.invalid, "sub-buffer: base index and range need the parent's "
                            f"{len(prange)} dimensions")
        for d in builtins.range(len(prange)):
            if base[d] < 0 or base[d] + sub[d] > prange[d]:
                raise exception(
                    errc.invalid,
                    f"sub-buffer exceeds its parent in dimension {d}: base {tuple(base)} + range "
                    f"{tuple(sub)} > parent range {tuple(prange)} (§4.7.2.1)")
        # Contiguity: after the first dimension whose extent is partial, every
        # later dimension must span the parent fully.
        for d in builtins.range(1, len(prange)):
            if sub[d] != prange[d] and any(sub[k] > 1 for k in builtins.range(d)):
                raise exception(errc.invalid, f"sub-buffer range {tuple(sub)} at {tuple(base)} is "
                                f"not contiguous in the parent of range {tuple(prange)} (§4.7.2.1)")
        self.coherence = parent.coherence
        self._range = sub
        self._mem_range = prange
        self._offset = linear_index(base, prange)
        self._parent = parent  # keep the parent (and its write-back) alive

    # ----------------------------------------------------------------- queries
    @property
    def dtype(self) -> np.dtype:
        """Element type (the C++ template parameter ``T``; a ``sycl::vec`` is a record dtype,
        see :mod:`pysycl._core.vec_layout`)."""
        return self.coherence.dtype if self._elem is None else self._elem

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return len(self._range)

    def get_range(self) -> _range:
        """The buffer's range."""
        return self._range

    def size(self) -> int:
        """Number of elements."""
        return self._range.size()

    get_count = size

    def byte_size(self) -> int:
        """Size in bytes."""
        return self.size() * self.dtype.itemsize

    get_size = byte_size

    @property
    def root_range(self) -> _range:
        """The range that row-major strides are computed from (the root buffer's; pysycl's own)."""
        return self._mem_range

    @property
    def root_offset(self) -> int:
        """The linear element offset of this (sub-)buffer in its root buffer (pysycl's own)."""
        return self._offset

    # The former spelling of ``coherence`` (tests read it).
    _storage = property(lambda self: self.coherence)

    def is_sub_buffer(self) -> bool:
        """Whether this is a sub-buffer."""
        return hasattr(self, "_parent")

    def has_property(self, kind: type[_Property]) -> bool:
        """Whether the buffer was built with a property of class ``kind``."""
        return self._props.has_property(kind)

    def get_property(self, kind: type[P]) -> P:
        """The property of class ``kind`` (``errc.invalid`` when absent)."""
        return self._props.get_property(kind)

    def set_final_data(self, final_data: np.ndarray | None = None) -> None:
        """Where to write back on destruction: a numpy array, or ``None`` for nowhere."""
        st = self.coherence
        if final_data is None:
            st.write_back = False
            st.final = None
            return
        if not isinstance(final_data, np.ndarray) or final_data.size < st.size:
            raise TypeError("set_final_data takes a numpy array with at least as many elements, or None")
        st.final = final_data
        st.write_back = True
        if not self.is_sub_buffer():
            _live.add(self)

    def set_write_back(self, flag: bool = True) -> None:
        """Enable or disable write-back on destruction."""
        st = self.coherence
        st.write_back = bool(flag) and (st.origin or st.final is not None)

    # --------------------------------------------------------------- accessors
    def get_access(self, handler: CommandGroupRef | access_mode | str | None = None,
                   mode: access_mode | str | None = None, *, access_range: Extent | None = None,
                   access_offset: Extent | None = None,
                   properties: Iterable[_Property] = ()) -> accessor:
        """An accessor in command group ``handler`` (``buf.get_access(h, sycl.access_mode.read)``)."""
        if mode is None:
            mode = access_mode.read_write
        if access_range is None and access_offset is None and not properties:
            if type(mode) is access_mode and hasattr(handler, "requirements"):
                return accessor.bound(self, handler, mode)  # a submit's: the short way
            return accessor(self, handler, mode)
        return accessor(self, handler, mode, access_range=access_range,
                        access_offset=access_offset, properties=properties)

    def get_host_access(self, mode: access_mode | str | None = None, *,
                        access_range: Extent | None = None, access_offset: Extent | None = None,
                        properties: Iterable[_Property] = ()) -> host_accessor:
        """A ``host_accessor`` (blocks until the data is on the host); ranged with
        ``access_range=``/``access_offset=``."""
        return host_accessor(self, access_mode.read_write if mode is None else mode,
                             access_range=access_range, access_offset=access_offset,
                             properties=properties)

    def reinterpret(self, dtype: DTypeLike | vec_type, range: Extent | None = None) -> buffer:
        """A buffer of the same storage with another element type and/or range (§4.7.2.2).

        ``dtype`` is a numpy dtype or a vector type (``sycl.float4``: 16 bytes, as is
        ``sycl.float3``); the bytes stay where they are, so a kernel through either buffer
        sees the same memory. Without ``range`` the result is 1-D, as many elements as
        the bytes hold.

        Raises:
            exception: ``errc.invalid`` -- the range's bytes differ from the buffer's,
                or a sub-buffer's offset is not a whole number of the new elements.
        """
        dt = check_dtype(dtype, "buffer.reinterpret", vectors=True)
        nbytes = self.byte_size()
        if range is None:
            if nbytes % dt.itemsize:
                raise exception(errc.invalid, f"buffer.reinterpret: {nbytes} bytes are not a "
                                f"whole number of {describe(dt)} ({dt.itemsize} bytes)")
            range = _range(nbytes // dt.itemsize)
        rng = range if isinstance(range, _range) else _range(range)
        if rng.size() * dt.itemsize != nbytes:
            raise exception(errc.invalid, f"buffer.reinterpret: {rng.size()} x {describe(dt)} "
                            f"({dt.itemsize} bytes each) != the buffer's {nbytes} bytes")
        byte_offset = self.root_offset * self.dtype.itemsize  # a sub-buffer's start
        if byte_offset % dt.itemsize:
            raise exception(errc.invalid, f"buffer.reinterpret: the sub-buffer starts at byte "
                            f"{byte_offset}, not a whole number of {describe(dt)}")
        offset = byte_offset // dt.itemsize
        out = object.__new__(buffer)
        out._props = self._props
        out.closed = False
        out.coherence = self.coherence
        out._range = rng
        out._mem_range = rng  # strides of the new range (a sub-buffer is contiguous)
        out._offset = offset
        out._elem = None if dt == self.coherence.dtype else dt
        out._keep = self
        return out

    # ------------------------------------------------------------- write-back
    def _flush(self) -> None:
        """Wait for all work on the buffer and write back (once) — §4.7.2.3.

        Interrupted (Ctrl-C while waiting for a kernel), the buffer stays open: its
        commands go on, and the next flush (its destruction, or exit) writes back.
        """
        if self.closed:
            return
        self.closed = True
        self._closed_at = _user_site()
        if self.is_sub_buffer():
            return
        st = self.coherence
        st.closed = self._closed_at
        try:
            self._write_back(st)
        except KeyboardInterrupt:  # Ctrl-C while waiting: still open, the next flush writes back
            self.closed = False
            st.closed = None
            raise

    def _write_back(self, st: Coherence) -> None:
        st.wait_all()
        if not st.write_back:
            return
        st.sync_to_host()
        target = st.final if st.final is not None else st.user
        if target is None:
            return  # the host copy is the user's array itself
        if isinstance(target, list):
            target[:] = st.host.tolist()
        elif isinstance(target, np.ndarray):
            if target.shape == tuple(self._range) or (target.size == st.size and target.ndim == 1):
                target[...] = st.host.reshape(target.shape)
            else:
                target.reshape(-1)[: st.size] = st.host
        st.write_back = False

    def closed_message(self) -> str:
        """Why a command group may not use this closed buffer (its error's message)."""
        where = self._closed_at if self.closed else self.coherence.closed
        what = "it" if self.closed else "its parent buffer"
        return (f"{self!r} is used in a command group at {_user_site()}, but {what} was "
                f"already closed at {where} (the end of its with block, or its destruction) "
                "and its data written back: work submitted now could not reach the host. "
                "Create a new sycl.buffer over the data to use it again")

    def __enter__(self) -> buffer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._flush()
        if not self.is_sub_buffer():  # the block's end is the buffer's destruction (§4.7.2.3)
            self.coherence.release_device()

    def __del__(self) -> None:
        if sys.is_finalizing():
            return  # interpreter shutdown: written back before it (write_back_at_exit)
        try:
            self._flush()
        except Exception:
            _log.exception("pysycl: write-back of a buffer failed during garbage collection")
        except KeyboardInterrupt:  # Ctrl-C while waiting: Python drops it, inside __del__
            _interrupted.append(self)  # kept, and written back at exit
            # The program gets its KeyboardInterrupt again once the destructor returned
            # (raised here, it would be dropped again), from a thread.
            _thread.start_new_thread(_interrupt_main_soon, ())

    def __repr__(self) -> str:
        return f"sycl.buffer(range={tuple(self._range)}, dtype={describe(self.dtype)})"

    # Common reference semantics: buffers compare by identity of their storage view.
    def __eq__(self, other: object) -> bool:
        if isinstance(other, buffer):
            return (self.coherence is other.coherence and self._offset == other._offset
                    and self._range == other._range)
        return NotImplemented

    def __hash__(self) -> int:
        return hash((id(self.coherence), self._offset, self._range))




#: Root buffers that may write back; at exit, those still open are written back.
_live: weakref.WeakSet[buffer] = weakref.WeakSet()
#: Buffers whose write-back at destruction was interrupted (Ctrl-C): written back at exit.
_interrupted: list[buffer] = []


def _interrupt_main_soon() -> None:
    time.sleep(0.01)  # the main thread has left the destructor by then
    _thread.interrupt_main()


def write_back_at_exit() -> None:
    """Write back every buffer still open, before the interpreter finalizes (called at exit).

    A buffer that is alive at exit -- a module's global, one in a reference cycle -- is
    destroyed only while the interpreter shuts down, too late to write back: its host
    array may already be gone. SYCL writes back when a buffer is destroyed (§4.7.2.3),
    and a program's end destroys it: so pysycl writes back here, from an exit hook.
    """
    for buf in list(_live) + _interrupted:
        if buf.closed:
            continue
        try:
            buf._flush()
        except Exception:
            _log.exception("pysycl: write-back of a buffer at exit failed")
    _interrupted.clear()
