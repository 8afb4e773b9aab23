"""The USM free functions (SYCL 2020 §4.8.3-4.8.5): malloc, aligned_alloc, free, queries.

C++'s template parameter becomes the ``dtype=`` keyword (DESIGN.md's mapping
rules): ``sycl::malloc_device<float>(n, q)`` is ``sycl.malloc_device(n, q,
dtype=np.float32)``; without ``dtype`` the count is in bytes (C++'s ``void*``
forms) and the pointer's elements are ``uint8``. Each function takes a queue, or
the ``(device, context)`` pair (``malloc_host``: a context), as in C++.

Deviations (docs/memory.md): an allocation that fails raises
``errc.memory_allocation`` instead of returning ``nullptr`` (also for a count
larger than the device's largest allocation, however large); a zero or negative
count raises ``ValueError``; ``free`` waits for the context's queues
before it releases memory (C++ leaves freeing memory in use undefined).
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl import property as _prop
from pysycl._core import backends as _backends
from pysycl._core.exceptions import errc, exception
from pysycl._memory import tables as _tables
from pysycl._memory.buffer import check_dtype
from pysycl._memory.usm import Allocation, bytes_at, find, new_pointer, usm, usm_pointer
from pysycl._objects.aspects import aspect
from pysycl._objects.context import context, default_context_for
from pysycl._objects.device import device

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

_ASPECTS = {usm.alloc.device: aspect.usm_device_allocations,
            usm.alloc.host: aspect.usm_host_allocations,
            usm.alloc.shared: aspect.usm_shared_allocations}


# ------------------------------------------------------------------ allocation
def _where(q_or_dev: Any, ctx: Any, fn: str, host: bool = False) -> tuple[device | None, context]:
    """The device and context of an allocation call's ``(queue)`` or ``(device, context)``."""
    if ctx is None and hasattr(q_or_dev, "get_context") and hasattr(q_or_dev, "get_device"):
        return q_or_dev.get_device(), q_or_dev.get_context()  # a sycl.queue
    if host and ctx is None and isinstance(q_or_dev, context):
        return None, q_or_dev  # malloc_host(count, ctx)
    if isinstance(q_or_dev, device):
        if ctx is None:
            ctx = default_context_for(q_or_dev)
        if not isinstance(ctx, context):
            raise TypeError(f"sycl.{fn}: expected a sycl.context after the device, got "
                            f"{type(ctx).__name__}")
        if q_or_dev not in ctx.devices:
            raise exception(errc.invalid, f"sycl.{fn}: device {q_or_dev.display_name!r} is not "
                            f"in context {ctx!r}")
        return q_or_dev, ctx
    want = "a sycl.queue, or a sycl.context" if host else "a sycl.queue, or a device and context"
    raise TypeError(f"sycl.{fn}: expected {want}, got {type(q_or_dev).__name__}")


def _count(count: Any, itemsize: int, fn: str) -> int:
    if isinstance(count, bool):
        raise TypeError(f"sycl.{fn}: the count must be an integer, not {count!r}")
    try:
        n = operator.index(count)
    except TypeError:
        raise TypeError(f"sycl.{fn}: the count must be an integer, not "
                        f"{type(count).__name__}") from None
    if n <= 0:
        raise ValueError(f"sycl.{fn}: the count must be positive, got {n}")
    return n  # too large for the device (however large): errc.memory_allocation in allocate


def _alignment(alignment: Any, fn: str) -> int:
    a = operator.index(alignment)
    if a < 0 or (a & (a - 1)):
        raise ValueError(f"sycl.{fn}: the alignment must be 0 or a power of two, got {a}")
    return a


# long: the one place every allocation form goes through (checks, then the backend call).
def allocate(count: Any, q_or_dev: Any, ctx: Any, kind: Any, dtype: DTypeLike | None,
             alignment: Any = 0, fn: str = "malloc", properties: Iterable[Any] = ()
             ) -> usm_pointer:
    """Allocate ``count`` elements of ``dtype`` (bytes when None) of ``kind``.

    ``properties``: SYCL 2020 defines none for USM allocations (another class's
    property is ``errc.invalid``).
    """
    _prop.checked(properties, (), f"sycl.{fn}")
    if not isinstance(kind, usm.alloc) or kind is usm.alloc.unknown:
        raise TypeError(f"sycl.{fn}: kind must be sycl.usm.alloc.device, .host or .shared, "
                        f"not {kind!r}")
    dt = check_dtype(np.uint8 if dtype is None else dtype, f"sycl.{fn}", "USM allocations")
    dev, c = _where(q_or_dev, ctx, fn, host=kind is usm.alloc.host)
    n = _count(count, dt.itemsize, fn)
    align = _alignment(alignment, fn)
    nbytes = n * dt.itemsize
    devs = [dev] if dev is not None else list(c.devices)
    asp = _ASPECTS[kind]
    lacking = [d for d in devs if not d.has(asp)]
    if lacking:
        raise exception(errc.feature_not_supported, f"sycl.{fn}: device "
                        f"{lacking[0].display_name!r} has no aspect.{asp.name}: it cannot make "
                        f"{kind.name} allocations (see device.has(sycl.aspect.{asp.name}))")
    limit = min(d.get_info(_MAX_ALLOC) for d in devs)
    if nbytes > limit:
        raise exception(errc.memory_allocation, f"sycl.{fn}: {n} elements of {dt} "
                        f"({nbytes} bytes) exceed the device's largest allocation "
                        f"(info.device.max_mem_alloc_size = {limit} bytes)")
    backend = _backends.get(c.get_backend())
    native = backend.usm_alloc(c, dev, kind.name, nbytes, align)
    host_ok = kind is not usm.alloc.device
    a = Allocation(native, nbytes, kind, c, dev, host_ok)
    return new_pointer(a, dt, n)


def _max_alloc() -> Any:
    from pysycl._objects.info import info

    return info.device.max_mem_alloc_size


_MAX_ALLOC = _max_alloc()


def malloc_device(count: int, q_or_dev: Any, ctx: context | None = None, *,
                  dtype: DTypeLike | None = None, properties: Iterable[Any] = ()) -> usm_pointer:
    """``sycl::malloc_device``: ``count`` elements of ``dtype`` (bytes if None) on the device.

    ``malloc_device(count, q, dtype=...)`` or ``malloc_device(count, dev, ctx, dtype=...)``.
    The host cannot read or write it directly: copy with ``q.memcpy``/``q.copy``.
    """
    return allocate(count, q_or_dev, ctx, usm.alloc.device, dtype, 0, "malloc_device",
                    properties)


def malloc_host(count: int, q_or_ctx: Any, *, dtype: DTypeLike | None = None,
                properties: Iterable[Any] = ()) -> usm_pointer:
    """``sycl::malloc_host``: host memory the context's devices can read and write."""
    return allocate(count, q_or_ctx, None, usm.alloc.host, dtype, 0, "malloc_host", properties)


def malloc_shared(count: int, q_or_dev: Any, ctx: context | None = None, *,
                  dtype: DTypeLike | None = None, properties: Iterable[Any] = ()) -> usm_pointer:
    """``sycl::malloc_shared``: memory both the host and the device read and write."""
    return allocate(count, q_or_dev, ctx, usm.alloc.shared, dtype, 0, "malloc_shared",
                    properties)


def malloc(count: int, q_or_dev: Any, *args: Any, dtype: DTypeLike | None = None,
           properties: Iterable[Any] = ()) -> usm_pointer:
    """``sycl::malloc(count, q, kind)`` or ``malloc(count, dev, ctx, kind)``."""
    ctx, kind = (None, args[0]) if len(args) == 1 else _two(args, "malloc")
    return allocate(count, q_or_dev, ctx, kind, dtype, 0, "malloc", properties)


def aligned_alloc_device(alignment: int, count: int, q_or_dev: Any, ctx: context | None = None,
                         *, dtype: DTypeLike | None = None,
                         properties: Iterable[Any] = ()) -> usm_pointer:
    """``sycl::aligned_alloc_device``: as ``malloc_device``, aligned to ``alignment`` bytes."""
    return allocate(count, q_or_dev, ctx, usm.alloc.device, dtype, alignment,
                    "aligned_alloc_device", properties)


def aligned_alloc_host(alignment: int, count: int, q_or_ctx: Any, *,
                       dtype: DTypeLike | None = None,
                       properties: Iterable[Any] = ()) -> usm_pointer:
    """``sycl::aligned_alloc_host``: as ``malloc_host``, aligned to ``alignment`` bytes."""
    return allocate(count, q_or_ctx, None, usm.alloc.host, dtype, alignment, "aligned_alloc_host",
                    properties)


def aligned_alloc_shared(alignment: int, count: int, q_or_dev: Any, ctx: context | None = None,
                         *, dtype: DTypeLike | None = None,
                         properties: Iterable[Any] = ()) -> usm_pointer:
    """``sycl::aligned_alloc_shared``: as ``malloc_shared``, aligned to ``alignment`` bytes."""
    return allocate(count, q_or_dev, ctx, usm.alloc.shared, dtype, alignment,
                    "aligned_alloc_shared", properties)


def aligned_alloc(alignment: int, count: int, q_or_dev: Any, *args: Any,
                  dtype: DTypeLike | None = None, properties: Iterable[Any] = ()) -> usm_pointer:
    """``sycl::aligned_alloc(alignment, count, q, kind)`` or ``(..., dev, ctx, kind)``."""
    ctx, kind = (None, args[0]) if len(args) == 1 else _two(args, "aligned_alloc")
    return allocate(count, q_or_dev, ctx, kind, dtype, alignment, "aligned_alloc", properties)


def _two(args: tuple[Any, ...], fn: str) -> tuple[Any, Any]:
    if len(args) != 2:
        raise TypeError(f"sycl.{fn}(count, q, kind) or sycl.{fn}(count, device, context, kind)")
    return args[0], args[1]


# ------------------------------------------------------------------ free and queries
def _context(q_or_ctx: Any, fn: str) -> context:
    if isinstance(q_or_ctx, context):
        return q_or_ctx
    if hasattr(q_or_ctx, "get_context") and hasattr(q_or_ctx, "submit"):
        return q_or_ctx.get_context()  # type: ignore[no-any-return]
    raise TypeError(f"sycl.{fn}: expected a sycl.queue or sycl.context, got "
                    f"{type(q_or_ctx).__name__}")


def free(ptr: usm_pointer | None, q_or_ctx: Any) -> None:
    """``sycl::free``: release the allocation ``ptr`` (``malloc``'s result) points to.

    ``None`` is ignored (C++'s ``free(nullptr)``). The context's queues finish
    first, so a kernel still using the memory completes on valid memory.

    Raises:
        exception: ``errc.invalid`` for a pointer of another context, a double
            free, or a pointer that is not the start of its allocation.
    """
    c = _context(q_or_ctx, "free")
    if ptr is None:
        return
    if not isinstance(ptr, usm_pointer):
        raise TypeError(f"sycl.free takes a pointer sycl.malloc_* returned, not "
                        f"{type(ptr).__name__}")
    a = ptr._alloc
    if a.ctx_key != c.key:
        raise exception(errc.invalid, f"sycl.free: {ptr!r} was allocated in {a.ctx!r}, not in "
                        f"{c!r}")
    if not a.live:
        raise exception(errc.invalid, f"sycl.free: {ptr!r} was already freed (double free)")
    if ptr._offset:
        raise exception(errc.invalid, f"sycl.free: {ptr!r} is not the start of its allocation "
                        f"({a.where()}); free the pointer sycl.malloc_* returned")
    finish_context(a.ctx_key)
    a.release()


def get_pointer_type(ptr: Any, ctx: context) -> usm.alloc:
    """``sycl::get_pointer_type``: the kind of the allocation ``ptr`` points into.

    ``usm.alloc.unknown`` for anything else: memory of another context, freed
    memory, a host array, an address (``int``) outside every allocation.
    """
    a = _lookup(ptr, ctx, "get_pointer_type")
    if a is not None:
        return a.kind
    native = _native_kind(ptr, ctx)
    return usm.alloc.unknown if native is None else usm.alloc[native[0]]


def get_pointer_device(ptr: Any, ctx: context) -> device:
    """``sycl::get_pointer_device``: the device of a device or shared allocation; for a
    host allocation, the context's first device.

    Raises:
        exception: ``errc.invalid`` when ``ptr`` is no USM allocation of ``ctx``.
    """
    a = _lookup(ptr, ctx, "get_pointer_device")
    native = _native_kind(ptr, ctx) if a is None else None
    if native is not None:
        return native[1]  # type: ignore[no-any-return]
    if a is None:
        raise exception(errc.invalid, f"sycl.get_pointer_device: {ptr!r} points into no USM "
                        f"allocation of {ctx!r}")
    return a.dev if a.dev is not None else ctx.devices[0]


def _native_kind(ptr: Any, ctx: context) -> tuple[str, device] | None:
    """A raw address's ``(kind, device)`` from the backend (memory another library
    allocated in the context's native contexts; backends with ``pointer_kind``)."""
    if isinstance(ptr, usm_pointer) or isinstance(ptr, bool):
        return None
    try:
        address = operator.index(ptr)
    except TypeError:
        try:  # another library's device array: its address
            address = int(ptr.__cuda_array_interface__["data"][0])
        except Exception:
            return None
    hook = getattr(_backends.get(ctx.get_backend()), "pointer_kind", None)
    return None if hook is None else hook(address, ctx)  # type: ignore[no-any-return]


def _lookup(ptr: Any, ctx: context, fn: str) -> Allocation | None:
    if not isinstance(ctx, context):
        raise TypeError(f"sycl.{fn}: the second argument must be a sycl.context, not "
                        f"{type(ctx).__name__}")
    if isinstance(ptr, usm_pointer):
        a = ptr._alloc
        return a if a.live and a.ctx_key == ctx.key else None
    try:
        address = operator.index(ptr)
    except TypeError:
        iface = getattr(ptr, "__sycl_usm_array_interface__", None)
        if not isinstance(iface, dict):
            return None
        address = int(iface["data"][0])
    return find(ctx.key, address)


# ------------------------------------------------------------------ queues of a context
_executors: dict[int, weakref.WeakSet[Any]] = {}
_executors_lock = threading.Lock()


def track_executor(ctx_key: int, ex: Any) -> None:
    """Remember a queue's executor of context ``ctx_key`` (``free`` finishes them first)."""
    with _executors_lock:
        _executors.setdefault(ctx_key, weakref.WeakSet()).add(ex)


def executors_of(ctx_key: int) -> list[Any]:
    """The live queues' executors of context ``ctx_key``."""
    with _executors_lock:
        return list(_executors.get(ctx_key, ()))


def finish_context(ctx_key: int) -> None:
    """Wait for every live queue of context ``ctx_key``."""
    with _executors_lock:
        exs = list(_executors.get(ctx_key, ()))
    for ex in exs:
        ex.wait()


# ------------------------------------------------------------------ commands in flight
# Each OpenCL executor has ``inflight``, a deque of ``(native event, objects)`` of its
# commands that use USM or host memory and may still run, and ``lock``, the process's
# enqueue lock. Whatever threads submit to a queue, a command is enqueued and appended
# in one step under the lock, so the deque's order is the queue's order (in order: the
# entries complete from the left); entries leave only under the lock, and only once
# known to be complete. Waits never block on the lock (a wait may run inside a locked
# enqueue, from a garbage-collected buffer): when it is taken, what completed stays
# held a little longer, until the next wait or prune.
#: how many entries a deque holds before a submit drops the completed ones
PRUNE_AT = 64


def prune(ex: Any) -> None:
    """Drop the entries of commands that completed (from the left: the queue is in order)."""
    d = ex.inflight
    with ex.lock:
        while d:
            try:
                done = ex.status(d[0][0]) == "complete"
            except exception:
                done = True  # a failed command runs no more
            if not done:
                return
            d.popleft()


def same_holds(a: Any, b: Any) -> bool:
    """Two launches' held memory is the same objects: tuples (as remembered launches pass
    them, :mod:`pysycl._backends.launching`) of identical items. Identity, not ``==``: an
    item compared with ``==`` may be a numpy value, whose comparison would read the other
    item as an array (a device allocation cannot be)."""
    if type(a) is not tuple or type(b) is not tuple or len(a) != len(b):
        return False
    for x, y in zip(a, b, strict=True):  # a loop, not a generator: a launch-cost hot path
        if x is not y:
            return False
    return True


def forget_until(ex: Any, native: Any) -> None:
    """``native``, a command of ``ex``, completed: drop what it and the commands before it held."""
    lock = ex.lock
    if lock.acquire(blocking=False):
        try:
            drop_through(ex.inflight, native)
        finally:
            lock.release()


def drop_through(d: Any, native: Any) -> None:
    """Drop the entries of ``d`` up to ``native``'s (none if it holds nothing); under the lock."""
    if d and d[-1][0] is native:  # the common case: the newest command was waited for
        d.clear()
        return
    n = next((i for i, e in enumerate(d, 1) if e[0] is native), 0)  # 0: not held
    for _ in range(n):
        d.popleft()


# ------------------------------------------------------------------ foreign memory
def _usm_interface(v: Any) -> dict[str, Any] | None:
    try:
        iface = getattr(v, "__sycl_usm_array_interface__", None)
    except Exception:
        return None
    return iface if isinstance(iface, dict) else None


def _flat(shape: Any, strides: Any, dt: np.dtype, who: str) -> int:
    shape = tuple(int(n) for n in shape)
    if len(shape) != 1:
        raise exception(errc.invalid, f"{who}: a {len(shape)}-D array; USM pointers are "
                        "1-D: pass a 1-D view (arr.reshape(-1)) and index it flat, or wrap the "
                        "array in a sycl.buffer and capture an accessor")
    if strides is not None and tuple(strides) not in ((dt.itemsize,), ()) and shape[0] > 1:
        raise exception(errc.invalid, f"{who}: the array is not contiguous (strides "
                        f"{tuple(strides)} in bytes); pass a contiguous copy")
    return shape[0]


def _from_interface(v: Any, iface: dict[str, Any], q: Any, who: str) -> usm_pointer | np.ndarray:
    """What a ``__sycl_usm_array_interface__`` describes: a pointer into a pysycl
    allocation of the queue's context, or a numpy view of another SYCL runtime's
    allocation that the host can use (:func:`_foreign_host`); else ``errc.invalid``."""
    ctx = q.get_context()
    try:
        address, ro = int(iface["data"][0]), bool(iface["data"][1])
        dt = np.dtype(iface["typestr"])
        # the protocol counts strides and the offset in elements, not bytes
        address += int(iface.get("offset") or 0) * dt.itemsize
        strides = iface.get("strides")
        n = _flat(iface["shape"], None if strides is None else
                  tuple(int(k) * dt.itemsize for k in strides), dt, who)
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise exception(errc.invalid, f"{who}: a malformed __sycl_usm_array_interface__ "
                        f"({e})") from None
    a = find(ctx.key, address)
    if a is not None and address + n * dt.itemsize <= a.address + a.nbytes:
        return usm_pointer(a, address - a.address, dt, n, ro)
    owner = iface.get("syclobj")
    if not isinstance(owner, context) and hasattr(owner, "get_context"):  # a sycl.queue
        try:
            owner = owner.get_context()
        except Exception:
            pass
    if isinstance(owner, context):
        raise exception(errc.invalid, f"{who}: its __sycl_usm_array_interface__ (address "
                        f"{address:#x}, {n} x {dt}) is no USM memory of the queue's "
                        f"context {ctx!r} (its syclobj is {owner!r}): USM pointers belong to "
                        "their context; copy the data with q.memcpy, or allocate it in the "
                        "queue's context")
    return _foreign_host(v, address, n, dt, ro, who)


#: ``usm_type`` values of memory the host can read and write (dpctl's and dpnp's names)
_HOST_ACCESSIBLE = ("shared", "host")


def _usm_type(v: Any) -> str | None:
    """The allocation kind an object reports: ``v.usm_type`` (dpctl's and dpnp's arrays)
    or ``v.get_usm_type()`` (dpctl's memory objects); None when it says nothing."""
    try:
        t = getattr(v, "usm_type", None)
        if t is None and callable(getattr(v, "get_usm_type", None)):
            t = v.get_usm_type()
    except Exception:
        return None
    return t if isinstance(t, str) else None


def _foreign_host(v: Any, address: int, n: int, dt: np.dtype, ro: bool, who: str) -> np.ndarray:
    """A numpy view of another SYCL runtime's allocation that the object says is host or
    shared memory: host memory to pysycl (passed as it is where the device has
    ``usm_system_allocations``, else as a host array is); the view keeps ``v`` alive."""
    kind = _usm_type(v)
    if kind not in _HOST_ACCESSIBLE:
        said = f"its usm_type is {kind!r}" if kind is not None else "it has no usm_type"
        raise exception(errc.invalid, f"{who}: its __sycl_usm_array_interface__ (address "
                        f"{address:#x}, {n} x {dt}) points into another SYCL runtime's "
                        f"memory, which pysycl can use only as host memory, when the object "
                        f"says the host may access it (usm_type 'shared' or 'host'); {said}. "
                        "Copy it to a numpy array, or allocate it as shared or host USM")
    arr = bytes_at(address, n * dt.itemsize, v).view(dt)
    if ro:
        arr.flags.writeable = False
    return arr


def _host_array(v: Any) -> np.ndarray | None:
    """``v`` as a numpy view of host memory, without copying (None when it is none)."""
    if isinstance(v, np.ndarray):
        return v
    try:
        if hasattr(v, "__dlpack__") and v.__dlpack_device__()[0] == 1:  # kDLCPU
            return np.from_dlpack(v)
        if hasattr(v, "__array_interface__"):
            return np.asarray(v)
    except (BufferError, TypeError, ValueError, RuntimeError):
        return None
    return None


def device_array(v: Any, q: Any, who: str) -> usm_pointer | None:
    """Another library's device array (CuPy, PyTorch, JAX... through
    ``__cuda_array_interface__`` or ``__dlpack__``, on backends with ``foreign_memory``)
    as a pointer into its memory, no copy; None when ``v`` is none. The backend orders the
    producer's pending work before the queue's next command. Memory of a pysycl
    allocation of the queue's context (an export coming back) is that allocation's."""
    ctx = q.get_context()
    hook = getattr(_backends.get(ctx.get_backend()), "foreign_memory", None)
    got = None if hook is None else hook(v, q, who)
    if got is None:
        return None
    native, shape, strides, dt, ro = got
    if dt.kind not in "biufc" or not dt.isnative:
        raise exception(errc.invalid, f"{who}: a device array of {dt}: kernels read native "
                        "numbers (bool, integers, floats, complex)")
    n = _flat(shape, strides, dt, who)
    own = find(ctx.key, native.address)
    if own is not None and native.address + n * dt.itemsize <= own.address + own.nbytes:
        return usm_pointer(own, native.address - own.address, dt, n, ro)
    a = Allocation(native, n * dt.itemsize, usm.alloc.unknown, ctx, q.get_device(), False)
    a.exported = True  # the other library owns the memory
    return usm_pointer(a, 0, dt, n, ro)


def _borrow(arr: np.ndarray, n: int, q: Any) -> usm_pointer:
    """A pointer to a host array's memory (unregistered: the array owns it)."""
    ctx = q.get_context()
    native = _backends.get(ctx.get_backend()).usm_borrow(arr)
    a = Allocation(native, max(arr.nbytes, 0), usm.alloc.unknown, ctx, None, True)
    a.exported = True  # the array owns the memory: never released by pysycl
    return usm_pointer(a, 0, arr.dtype, n, not arr.flags.writeable)


def adopt(v: Any, q: Any, who: str) -> usm_pointer | None:
    """A kernel capture that is foreign USM or host memory, as a pointer (None: neither).

    Objects with ``__sycl_usm_array_interface__`` point into a pysycl allocation of
    the queue's context, or into another SYCL runtime's host or shared allocation
    (its ``usm_type`` says so), which is host memory here. Host memory (numpy, any
    DLPack producer of host memory, such foreign allocations; 1-D, C-contiguous) is
    passed as it is where the device can use any host memory
    (``aspect.usm_system_allocations``), elsewhere as read-only lookup tables copied
    for the launch (:mod:`pysycl._memory.tables`).
    """
    iface = _usm_interface(v)
    if iface is not None:
        end = _from_interface(v, iface, q, who)
        if isinstance(end, usm_pointer):
            return end
        arr: np.ndarray | None = end
    else:
        dev_ptr = device_array(v, q, who)
        if dev_ptr is not None:
            return dev_ptr
        arr = _host_array(v)
    if arr is None:
        return None
    if arr.dtype.kind not in "biufc" or arr.dtype.itemsize == 0:
        raise exception(errc.invalid, f"{who}: arrays of {arr.dtype} cannot be passed to a "
                        "device (a kernel reads numbers: bool, integers, floats, complex)")
    if not arr.dtype.isnative:
        raise exception(errc.invalid, f"{who}: the array's elements are in non-native byte "
                        f"order ({arr.dtype.str}), which a device cannot read; pass "
                        "arr.astype(arr.dtype.newbyteorder('='))")
    n = _flat(arr.shape, arr.strides, arr.dtype, who)
    if _tables.passed_directly(q):
        return _borrow(arr, n, q)
    return _tables.table(arr, n, q, who)


def endpoint(v: Any, q: Any, nbytes: int, writes: bool, who: str) -> tuple[int, Any]:
    """``(address, owner)`` of one end of a USM copy/fill: ``nbytes`` must fit in it.

    A pointer (live, of the queue's context), an object with
    ``__sycl_usm_array_interface__`` (into such a pointer's memory, or another SYCL
    runtime's host or shared allocation: host memory), or host memory (a numpy array
    or a host DLPack producer; C-contiguous). The owner keeps the memory alive.
    """
    ctx_key = q.get_context().key
    if isinstance(v, usm_pointer):
        a = v.check_live(who)
        if a.ctx_key != ctx_key:
            raise exception(errc.invalid, f"{who}: {v!r} was allocated in {a.ctx!r}, not in the "
                            f"queue's context {q.get_context()!r}")
        if nbytes > v.nbytes:
            raise exception(errc.invalid, f"{who}: {nbytes} bytes do not fit in {v!r} "
                            f"({v.nbytes} bytes to the end of its allocation)")
        if writes and v.readonly:
            raise exception(errc.invalid, f"{who}: {v!r} is read-only memory")
        return v.address, v
    iface = _usm_interface(v)
    arr = None if iface is None else _from_interface(v, iface, q, who)
    if iface is None:
        arr = device_array(v, q, who)
    if isinstance(arr, usm_pointer):
        return endpoint(arr, q, nbytes, writes, who)
    if arr is None:
        arr = _host_array(v)
    if arr is None:
        raise TypeError(f"{who}: expected a USM pointer (sycl.malloc_*), an object with "
                        f"__sycl_usm_array_interface__, or a host array; got {type(v).__name__}")
    if not arr.flags.c_contiguous:
        raise exception(errc.invalid, f"{who}: the host array is not C-contiguous; pass "
                        "np.ascontiguousarray(...)")
    if writes and not arr.flags.writeable:
        raise exception(errc.invalid, f"{who}: the destination array is read-only")
    if nbytes > arr.nbytes:
        raise exception(errc.invalid, f"{who}: {nbytes} bytes do not fit in the host array "
                        f"({arr.nbytes} bytes, {arr.size} x {arr.dtype})")
    return arr.ctypes.data, arr
