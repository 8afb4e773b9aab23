"""Unified shared memory (SYCL 2020 §4.8): allocations and the typed pointers to them.

An allocation (:class:`Allocation`) is one block of a backend's memory in one
context: OpenCL shared virtual memory (``clSVMAlloc``; coarse-grained for device
allocations, fine-grained for host and shared ones), or plain host memory on the
host_debuggable device. :func:`malloc <pysycl._memory.usm_api.malloc>` returns a
:class:`usm_pointer` to its first element: a typed pointer (``dtype``, ``count``
elements to the allocation's end) that kernels capture as an argument, that
supports C++'s pointer arithmetic (``p + k``, ``p - q``), and that host-accessible
allocations expose to numpy without copying (``__array_interface__``,
``__dlpack__``, and the buffer protocol's ``__buffer__`` on Python >= 3.12). Every
allocation describes itself with ``__sycl_usm_array_interface__`` (dpctl's
protocol), which pysycl's kernels and copies read; dpctl and dpnp themselves reject
pysycl's pointers (docs/memory.md, "dpctl and dpnp").

Lifetime: ``sycl.free`` releases an allocation at once -- after the context's
queues finish what they were given (a kernel still using it keeps running on valid
memory) -- unless numpy views of it exist: then its memory goes with the last view
(a still-referenced allocation is never freed behind the user's back). An
allocation nobody frees is released when its last pointer is garbage collected;
commands in flight hold their pointers (their queue's in-flight list,
:mod:`pysycl._memory.usm_api`), whatever threads submit or wait. A freed pointer
raises ``errc.invalid`` wherever it is used.
"""

from __future__ import annotations

import bisect
import enum
import operator
import threading
import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.exceptions import errc, exception
from pysycl._memory import dlpack as _dlpack
from pysycl._memory import mpi_guard as _mpi_guard
from pysycl._memory.buffer import check_dtype

if TYPE_CHECKING:
    from pysycl._objects.context import context
    from pysycl._objects.device import device


class usm:  # noqa: N801 - the spec's namespace ``sycl::usm``
    """The ``sycl::usm`` namespace: ``sycl.usm.alloc``."""

    class alloc(enum.Enum):  # noqa: N801
        """``sycl::usm::alloc``: the kind of a USM allocation."""

        host = 0
        device = 1
        shared = 2
        unknown = 3


class Allocation:
    """One live or freed USM allocation (pysycl's own; users hold :class:`usm_pointer`).

    ``native`` is the backend's memory (it has ``address``, ``kernel_arg(byte_offset)``
    and ``release()``); ``host`` tells whether the host may read and write it directly.
    """

    __slots__ = ("__weakref__", "address", "ctx", "ctx_key", "dev", "exported", "host", "kind",
                 "live", "native", "nbytes")

    def __init__(self, native: Any, nbytes: int, kind: usm.alloc, ctx: context, dev: device | None,
                 host: bool) -> None:
        self.native = native
        self.address: int = native.address
        self.nbytes = nbytes
        self.kind = kind
        self.ctx = ctx
        self.ctx_key: int = ctx.key
        self.dev = dev
        self.host = host
        self.live = True
        self.exported = False  # numpy views exist (or may): release with the last of them

    def bytes_view(self) -> np.ndarray:
        """A ``uint8`` numpy view of the whole allocation (host-accessible memory only)."""
        return np.asarray(_Memory(self))

    def release(self) -> None:
        """Mark freed; give the memory back now unless numpy views may still use it."""
        self.live = False
        unregister(self)
        if not self.exported and self.native is not None:
            native, self.native = self.native, None
            native.release()

    def where(self) -> str:
        """How messages name it."""
        return (f"{self.kind.name} allocation of {self.nbytes} bytes at {self.address:#x}")


class _Memory:
    """The numpy-visible bytes of an allocation (a view's base keeps the allocation alive)."""

    __slots__ = ("__array_interface__", "alloc")

    def __init__(self, a: Allocation) -> None:
        self.alloc = a
        self.__array_interface__ = {"data": (a.address, False), "shape": (a.nbytes,),
                                    "typestr": "|u1", "version": 3}


def bytes_at(address: int, nbytes: int, owner: object = None) -> np.ndarray:
    """A ``uint8`` numpy view of ``nbytes`` host-accessible bytes at ``address``.

    For memory pysycl checked: an allocation's, a host array's, or a foreign one its
    ``__sycl_usm_array_interface__`` says the host may use. The view keeps ``owner``
    alive (else the caller keeps the memory's owner alive while the view is used).
    """
    return np.asarray(_At(address, nbytes, owner))


class _At:
    __slots__ = ("__array_interface__", "owner")

    def __init__(self, address: int, nbytes: int, owner: object = None) -> None:
        self.__array_interface__ = {"data": (address, False), "shape": (nbytes,),
                                    "typestr": "|u1", "version": 3}
        self.owner = owner


# ------------------------------------------------------------------ registry
# Weak: an allocation nobody frees goes when its last pointer does.
_lock = threading.RLock()  # a weakref callback may run while this thread holds it
#: context key -> (sorted start addresses, weak allocation by start address)
_live: dict[int, tuple[list[int], dict[int, weakref.ref[Allocation]]]] = {}


def register(a: Allocation) -> None:
    """Record a new allocation (for pointer queries and for adopting foreign views)."""
    key, start = a.ctx_key, a.address
    with _lock:
        starts, by_start = _live.setdefault(key, ([], {}))
        bisect.insort(starts, start)
        by_start[start] = weakref.ref(a, lambda r: _drop(key, start, r))


def _drop(key: int, start: int, ref: weakref.ref[Allocation] | None) -> None:
    with _lock:
        entry = _live.get(key)
        if entry is None:
            return
        starts, by_start = entry
        if ref is not None and by_start.get(start) is not ref:
            return
        if by_start.pop(start, None) is not None:
            starts.pop(bisect.bisect_left(starts, start))


def unregister(a: Allocation) -> None:
    entry = _live.get(a.ctx_key)
    ref = entry[1].get(a.address) if entry is not None else None
    if ref is not None and ref() is a:
        _drop(a.ctx_key, a.address, ref)


def find(ctx_key: int, address: int) -> Allocation | None:
    """The live allocation of context ``ctx_key`` that contains ``address``, if any."""
    with _lock:
        entry = _live.get(ctx_key)
        if entry is None:
            return None
        starts, by_start = entry
        k = bisect.bisect_right(starts, address) - 1
        a = by_start[starts[k]]() if k >= 0 else None
    if a is None or not a.live:
        return None
    return a if address < a.address + max(a.nbytes, 1) else None


# ------------------------------------------------------------------ pointers
class usm_pointer:  # noqa: N801 - pysycl's name for C++'s ``T*`` to USM
    """A typed pointer into a USM allocation: ``sycl.malloc_*``'s result.

    C++'s ``T*`` becomes an object that knows its element type (``dtype``) and how
    many elements lie between it and the end of its allocation (``count``).
    ``p + k`` / ``p - k`` move it by ``k`` elements (within the allocation, or one
    past its end); ``p - q`` is the element distance of two pointers into one
    allocation; ``int(p)`` is the address. ``p.view(dtype)`` reinterprets the same
    bytes (C++'s ``reinterpret_cast``). Kernels capture it as an argument (``p[i]``,
    ``sycl.atomic_ref(p, i, ...)``); host code may index host and shared allocations
    (``p[i]``) and view them without copying: ``np.asarray(p)``, ``np.from_dlpack(p)``
    (every Python), ``memoryview(p)`` / ``np.frombuffer(p, p.dtype)`` (the buffer
    protocol, Python >= 3.12 only; on 3.10/3.11 ``memoryview(np.asarray(p))``).
    ``__sycl_usm_array_interface__`` describes any allocation to pysycl's own kernels
    and copies; dpctl and dpnp do not accept it (their runtime does not know pysycl's
    context, and OpenCL SVM is no Intel USM to it): give them ``np.asarray(p)``.
    """

    __slots__ = ("__weakref__", "_alloc", "_offset", "_view", "count", "dtype", "native_arg",
                 "readonly", "signature")

    def __init__(self, alloc: Allocation, byte_offset: int, dtype: np.dtype, count: int,
                 readonly: bool = False) -> None:
        self._alloc = alloc
        self._offset = byte_offset
        self.dtype = dtype
        self.count = count
        #: kernels may only read through it (a read-only array's memory)
        self.readonly = readonly
        #: the backend's kernel argument of this address (None until
        #: :meth:`make_native_arg`, on its first launch)
        self.native_arg: Any = None
        self._view: np.ndarray | None = None
        #: what a remembered launch compares (:func:`pysycl._kernels.argplan.refresh_for`):
        #: context, dtype, read-only
        self.signature = (alloc.ctx_key, dtype, readonly)

    # --- what launches read --------------------------------------------------
    def make_native_arg(self) -> Any:
        """The backend's kernel argument of this address, made on the first call and kept
        (:attr:`native_arg`; the launch paths read that first and call this only on None)."""
        a = self.native_arg
        if a is None:
            a = self.native_arg = self._alloc.native.kernel_arg(self._offset)
        return a

    @property
    def live(self) -> bool:
        """Whether the allocation has not been freed."""
        return self._alloc.live  # type: ignore[no-any-return]

    @property
    def allocation(self) -> Allocation:
        """The allocation this pointer points into (its ``ctx``, ``ctx_key``, ``host``)."""
        return self._alloc

    # --- identity and arithmetic ---------------------------------------------
    @property
    def address(self) -> int:
        """The address this pointer holds (``int(p)``)."""
        return self._alloc.address + self._offset

    @property
    def nbytes(self) -> int:
        """Bytes from this pointer to the end of its allocation."""
        return self.count * self.dtype.itemsize

    def __int__(self) -> int:
        return self._alloc.address + self._offset

    def __add__(self, k: int) -> usm_pointer:
        try:
            k = operator.index(k)
        except TypeError:
            return NotImplemented
        isz = self.dtype.itemsize
        off = self._offset + k * isz
        if off < 0 or k > self.count:
            raise IndexError(f"{self!r} + {k}: the result points outside its allocation "
                             f"({self._offset // isz} element(s) before, {self.count} after)")
        return usm_pointer(self._alloc, off, self.dtype, self.count - k, self.readonly)

    __radd__ = __add__

    def __sub__(self, other: int | usm_pointer) -> Any:
        if isinstance(other, usm_pointer):
            if other._alloc is not self._alloc or other.dtype != self.dtype:
                raise ValueError("p - q: both pointers must point into one allocation, with one "
                                 "dtype")
            return (self._offset - other._offset) // self.dtype.itemsize
        try:
            return self.__add__(-operator.index(other))
        except TypeError:
            return NotImplemented

    def view(self, dtype: Any) -> usm_pointer:
        """The same address as a pointer to ``dtype`` elements (C++'s ``reinterpret_cast``)."""
        dt = check_dtype(dtype, "usm_pointer.view", "USM pointers")
        if self._offset % dt.itemsize:
            raise ValueError(f"usm_pointer.view({dt}): the address is not aligned to "
                             f"{dt.itemsize} bytes")
        return usm_pointer(self._alloc, self._offset, dt, self.nbytes // dt.itemsize,
                           self.readonly)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, usm_pointer) and other._alloc is self._alloc
                and other._offset == self._offset and other.dtype == self.dtype)

    def __hash__(self) -> int:
        return hash((self._alloc.address + self._offset, self.dtype))

    def __bool__(self) -> bool:
        return True

    # --- checks ----------------------------------------------------------------
    def check_live(self, what: str) -> Allocation:
        """The allocation (``errc.invalid`` if it was freed)."""
        a = self._alloc
        if not a.live:
            raise exception(errc.invalid, f"{what}: {self!r} points into memory that was freed "
                            "with sycl.free")
        return a

    # --- host access -----------------------------------------------------------
    def _typed(self, what: str) -> np.ndarray:
        """The whole allocation as a numpy array of ``dtype`` (this pointer's element is
        ``[self._offset // itemsize]``)."""
        v = self._view
        if v is not None and self._alloc.live:
            return v
        a = self.check_live(what)
        if not a.host and not getattr(_host_kernel, "active", False):
            raise exception(errc.invalid, f"{what}: {self!r} is a device allocation, which the "
                            "host cannot access; copy it with q.memcpy/q.copy, or allocate "
                            "with sycl.malloc_shared / sycl.malloc_host")
        isz = self.dtype.itemsize
        v = a.bytes_view()[:a.nbytes - a.nbytes % isz].view(self.dtype)
        if a.host:
            self._view = v  # (a device allocation of the host device: only inside kernels)
        return v

    def host_array(self, what: str = "host access") -> np.ndarray:
        """The numpy view of the ``count`` elements (host-accessible allocations only)."""
        k = self._offset // self.dtype.itemsize
        arr = self._typed(what)[k:k + self.count]
        self._alloc.exported = True  # the view may outlive sycl.free: release with it
        return arr

    def _index(self, i: Any) -> int:
        j = self._offset // self.dtype.itemsize + operator.index(i)
        if not 0 <= j < self._alloc.nbytes // self.dtype.itemsize:
            raise IndexError(f"p[{i}] is outside the allocation of {self!r} (valid: "
                             f"{-(self._offset // self.dtype.itemsize)} .. {self.count - 1})")
        return j

    def __getitem__(self, i: Any) -> Any:
        return self._typed("p[i]")[self._index(i)]

    def __setitem__(self, i: Any, value: Any) -> None:
        self._typed("p[i] = v")[self._index(i)] = value

    # --- array protocols -------------------------------------------------------
    @property
    def __array_interface__(self) -> dict[str, Any]:
        arr = self.host_array("np.asarray(p)")
        return {"data": (arr.ctypes.data, False), "shape": (self.count,),
                "typestr": self.dtype.str, "version": 3}

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        arr = self.host_array("np.asarray(p)")
        if dtype is not None and np.dtype(dtype) != self.dtype:
            if copy is False:
                raise ValueError("np.asarray(p, dtype): a conversion needs a copy")
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def __buffer__(self, flags: int) -> memoryview:
        """The buffer protocol (PEP 688, Python >= 3.12): ``memoryview(p)``,
        ``np.frombuffer(p, p.dtype)``, ``bytes(p)`` see the ``count`` elements in place
        (host and shared allocations; on 3.10/3.11 use ``memoryview(np.asarray(p))``)."""
        if not self._alloc.host:
            raise BufferError(f"{self!r} is a device allocation, which the host cannot "
                              "access; copy it with q.memcpy, or allocate with "
                              "sycl.malloc_shared / sycl.malloc_host")
        return memoryview(self.host_array("memoryview(p)"))

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, dl_device: Any = None,
                   copy: bool | None = None) -> Any:
        """A DLPack capsule of the ``count`` elements, without copying: kDLCPU for host and
        shared allocations of backends whose memory is host memory; the backend's device
        type (``__dlpack_device__``) for others. ``stream``: the consumer's stream, made
        to wait for the context's queues (backends with streams)."""
        a = self.check_live("__dlpack__")
        dev = self.__dlpack_device__()
        if not a.host:  # device memory: never to an MPI that cannot read it
            _mpi_guard.check_dlpack_export(self, dev, stream)
        if dl_device is not None and tuple(dl_device) != dev:
            if tuple(dl_device) != (_dlpack.kDLCPU, 0) or not a.host:
                raise BufferError(f"__dlpack__: {self!r} is on DLPack device {dev}, not "
                                  f"{tuple(dl_device)}; copy it with q.memcpy")
            dev = (_dlpack.kDLCPU, 0)  # host-accessible memory, asked for as host memory
        if copy:
            if dev[0] == _dlpack.kDLCPU:
                return self.host_array("__dlpack__").copy().__dlpack__(max_version=max_version)
            raise BufferError(f"__dlpack__(copy=True): {self!r} is device memory; pysycl "
                              "exports it in place (copy=None or False)")
        sync = getattr(a.native, "sync_consumer", None)
        if sync is not None and dev[0] != _dlpack.kDLCPU:
            sync(a.ctx_key, stream)
        elif stream is not None and stream != -1:
            raise BufferError(f"__dlpack__: {self!r} is host memory; stream must be None")
        if dev[0] == _dlpack.kDLCPU:
            self.host_array("__dlpack__")  # checks host access; marks the allocation exported
        a.exported = True  # released with the last consumer
        return _dlpack.capsule(self.address, self.count, self.dtype, dev, self,
                               versioned=_dlpack.negotiate(max_version), readonly=self.readonly)

    def __dlpack_device__(self) -> tuple[int, int]:
        a = self._alloc
        dev = getattr(a.native, "dlpack_device", None)
        if dev is not None:
            return dev  # type: ignore[no-any-return]
        if not a.host:
            raise BufferError(f"{self!r} is a device allocation, not host memory; copy it "
                              "with q.memcpy, or allocate with sycl.malloc_shared / "
                              "sycl.malloc_host")
        return (_dlpack.kDLCPU, 0)  # host-accessible memory

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """``__cuda_array_interface__`` version 3 (CUDA allocations of every kind; an
        ``AttributeError`` elsewhere). ``stream`` is a stream that follows the context's
        queues (None when nothing was submitted): consumers order their work after it."""
        a = self._alloc
        producer = getattr(a.native, "cai_stream", None) if a.native is not None else None
        if producer is None:
            raise AttributeError(f"{self!r} is no CUDA allocation: no __cuda_array_interface__")
        self.check_live("__cuda_array_interface__")
        a.exported = True
        return {"data": (self.address, self.readonly), "shape": (self.count,),
                "typestr": self.dtype.str, "strides": None, "version": 3,
                "stream": producer(a.ctx_key)}

    @property
    def __sycl_usm_array_interface__(self) -> dict[str, Any]:
        self.check_live("__sycl_usm_array_interface__")
        return {"data": (self.address, False), "shape": (self.count,), "strides": None,
                "typestr": self.dtype.str, "version": 1, "syclobj": self._alloc.ctx}

    def __repr__(self) -> str:
        a = self._alloc
        state = "" if a.live else " (freed)"
        return (f"<sycl.usm_pointer {self.dtype}[{self.count}] {a.kind.name} "
                f"{self.address:#x}{state}>")


#: ``active`` while this thread runs a host_debuggable kernel: its kernels may access
#: device allocations (the host device's memory is host memory); host code may not.
_host_kernel = threading.local()


def set_host_kernel_active(active: bool) -> None:
    """Set whether this thread runs a host_debuggable kernel (``kernel_api`` calls it)."""
    _host_kernel.active = active


def new_pointer(a: Allocation, dtype: np.dtype, count: int) -> usm_pointer:
    """The pointer ``malloc`` returns: ``count`` elements of ``dtype`` at the start of ``a``."""
    register(a)
    return usm_pointer(a, 0, dtype, count)
