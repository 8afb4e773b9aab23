"""Arrays of other CUDA libraries, both ways, without copies (CuPy, PyTorch, JAX, numba-cuda).

Export (the hooks of :class:`pysycl._backends.cuda.memory.USMMemory`): DLPack's stream
protocol makes the consumer's stream wait for every queue of the pointer's context
(:func:`consumer_waits`: an event recorded on each queue's stream, ``cuStreamWaitEvent``
on the consumer's); ``__cuda_array_interface__``'s ``stream`` is one stream per device
that follows those queues the same way (:func:`export_stream`).

Import (:func:`foreign_memory`, the backend's hook for ``pysycl._memory.usm_api``): an
object with ``__cuda_array_interface__`` (preferred: no capsule) or ``__dlpack__`` on a
CUDA device type is used where it lies. Its producer's work comes first: CAI's ``stream``
(the legacy default stream for an interface before version 3, as PyTorch's) is recorded
into an event the queue's stream waits for; DLPack's producer gets the queue's stream and
orders itself. Device memory of another GPU is ``errc.invalid``
naming both devices. :func:`pointer_kind` answers ``sycl.get_pointer_type`` for raw CUDA
addresses of the context's primary contexts.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from pysycl._backends.cuda import driver as d
from pysycl._backends.cuda import objects as _obj
from pysycl._core.exceptions import errc, exception
from pysycl._memory import dlpack as _dlpack
from pysycl._memory.usm_api import executors_of

#: DLPack device types of CUDA memory
CUDA_TYPES = (_dlpack.kDLCUDA, _dlpack.kDLCUDAHost, _dlpack.kDLCUDAManaged)
_DISABLE_TIMING = 2
_HOST, _DEVICE = 1, 2  # CUmemorytype

_lock = threading.Lock()
#: (ordinal, CUcontext handle) -> the stream ``__cuda_array_interface__`` names
_export_streams: dict[tuple[int, int], Any] = {}


# ------------------------------------------------------------------ export
def _record_all(ctx_key: int) -> list[Any]:
    """An event recorded now on every queue of context ``ctx_key`` (its pending work)."""
    events = []
    for ex in executors_of(ctx_key):
        if getattr(ex, "cuctx", None) is None:
            continue
        _obj.make_current(ex.cuctx)
        ev = ex.pending()
        if ev is not None:
            events.append(ev)
    return events


def _stream(value: Any, who: str) -> Any:
    """A CUstream of a stream protocol's integer (1: legacy default, 2: per-thread default)."""
    try:
        s = int(value)
    except (TypeError, ValueError):
        raise BufferError(f"{who}: stream must be an integer or None, not {value!r}") from None
    if s == 0:
        raise BufferError(f"{who}: stream 0 is ambiguous and disallowed by the protocol; pass "
                          "1 (legacy default stream), 2 (per-thread default) or a stream handle")
    return d.cu.CUstream(s)


def consumer_waits(ctx_key: int, ordinal: int, stream: Any) -> None:
    """DLPack export: the consumer's ``stream`` (None: the legacy default stream; -1: no
    synchronization) waits for the work the context's queues have in flight."""
    if stream == -1:
        return
    s = _stream(1 if stream is None else stream, "__dlpack__")
    for ev in _record_all(ctx_key):
        d.call(d.cu.cuStreamWaitEvent, s, ev.h, 0, what="__dlpack__: ordering the consumer's "
               "stream after pysycl's queues")


def export_stream(ctx_key: int, ordinal: int) -> int | None:
    """``__cuda_array_interface__``'s ``stream``: device ``ordinal``'s export stream, made
    to wait for every queue of the context (None when the context has no queue)."""
    events = _record_all(ctx_key)
    if not events:
        return None
    cuctx = _obj.primary_context(ordinal)
    key = (ordinal, int(cuctx))
    with _lock:
        s = _export_streams.get(key)
        if s is None:
            _obj.make_current(cuctx)
            s = _export_streams[key] = d.call(
                d.cu.cuStreamCreate, d.cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value,
                what="__cuda_array_interface__: creating the export stream")
    for ev in events:
        d.call(d.cu.cuStreamWaitEvent, s, ev.h, 0, what="__cuda_array_interface__: ordering "
               "the export stream after pysycl's queues")
    return int(s)


# ------------------------------------------------------------------ pointer queries
def _attributes(address: int) -> tuple[int, bool, int, int] | None:
    """(memory type, is managed, device ordinal, CUcontext handle) of a CUDA address, or
    None for memory CUDA does not know."""
    cu = d.cu
    A = cu.CUpointer_attribute  # noqa: N806
    names = [A.CU_POINTER_ATTRIBUTE_MEMORY_TYPE, A.CU_POINTER_ATTRIBUTE_IS_MANAGED,
             A.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, A.CU_POINTER_ATTRIBUTE_CONTEXT]
    r = cu.cuPointerGetAttributes(len(names), names, address)
    if r[0]:
        return None
    mtype, managed, ordinal, ctx = r[1]
    mtype = int(getattr(mtype, "value", mtype) or 0)
    if not mtype:
        return None
    return mtype, bool(managed), int(ordinal), (0 if ctx is None else int(ctx))


def pointer_kind(address: int, ctx: Any) -> tuple[str, Any] | None:
    """``(usm kind name, device)`` of a raw CUDA address of ``ctx``'s primary contexts, or
    None (memory of no CUDA context of ``ctx``)."""
    try:
        _obj.make_current(ctx.native.primary[ctx.devices[0].ordinal])
        att = _attributes(address)
    except Exception:
        return None
    if att is None:
        return None
    mtype, managed, ordinal, handle = att
    devs = {dv.ordinal: dv for dv in ctx.devices}
    if not any(int(c) == handle for c in ctx.native.primary.values()) and handle:
        return None
    kind = "shared" if managed else "host" if mtype == _HOST else "device"
    dev = devs.get(ordinal)
    if dev is None:
        if kind != "host":
            return None
        dev = ctx.devices[0]
    return kind, dev


# ------------------------------------------------------------------ import
def _device_name(ordinal: int) -> str:
    try:
        raw = d.call(d.cu.cuDeviceGetName, 256, d.call(d.cu.cuDeviceGet, ordinal))
        return repr(bytes(raw).split(b"\0")[0].decode(errors="replace"))
    except exception:
        return "an unknown device"


def _check_device(ordinal: int, q: Any, address: int, who: str) -> None:
    dev = q.get_device()
    if ordinal != dev.ordinal:
        raise exception(errc.invalid, f"{who}: the memory at {address:#x} is on CUDA device "
                        f"{ordinal} ({_device_name(ordinal)}), not on the queue's device "
                        f"{dev.display_name!r} (CUDA device {dev.ordinal}); copy it to this "
                        "device first (e.g. CuPy's arr.copy() under cupy.cuda.Device"
                        f"({dev.ordinal}))", q.get_context())


def _queue_waits_for(q: Any, producer: Any, who: str) -> None:
    """The queue's stream waits for what ``producer`` (a CAI ``stream``) has enqueued."""
    cu = d.cu
    ex = q.executor
    _obj.make_current(ex.cuctx)
    ev = d.call(cu.cuEventCreate, _DISABLE_TIMING, what=f"{who}: an ordering event")
    try:
        d.call(cu.cuEventRecord, ev, _stream(producer, who), what=f"{who}: recording the "
               "producer's stream (the __cuda_array_interface__ stream)")
        d.call(cu.cuStreamWaitEvent, ex.native, ev, 0, what=f"{who}: ordering the queue after "
               "the producer's stream")
    finally:
        cu.cuEventDestroy(ev)  # the driver keeps it until the wait is done


def _from_cai(v: Any, cai: dict[str, Any], q: Any, who: str) -> tuple[Any, ...]:
    try:
        address, ro = int(cai["data"][0]), bool(cai["data"][1])
        dt = np.dtype(cai["typestr"])
        shape = tuple(int(n) for n in cai["shape"])
        strides = cai.get("strides")
        strides = None if strides is None else tuple(int(s) for s in strides)
        mask = cai.get("mask")
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise exception(errc.invalid, f"{who}: a malformed __cuda_array_interface__ ({e})"
                        ) from None
    if mask is not None:
        raise exception(errc.invalid, f"{who}: a masked __cuda_array_interface__; pass the "
                        "unmasked data")
    _obj.make_current(q.executor.cuctx)
    if address:
        att = _attributes(address)
        if att is None:
            raise exception(errc.invalid, f"{who}: its __cuda_array_interface__ points at "
                            f"{address:#x}, which is no CUDA memory")
        if att[0] == _DEVICE and not att[1]:
            _check_device(att[2], q, address, who)
    # Version 3 names the producer's stream (None: nothing to wait for); before it (PyTorch
    # says 2) producers relied on the legacy default stream, which pysycl's non-blocking
    # streams do not follow by themselves: wait for it.
    legacy = int(cai.get("version", 3) or 3) < 3
    stream = cai.get("stream", 1 if legacy else None)
    if stream is not None:
        try:
            _queue_waits_for(q, stream, who)
        except BufferError as e:
            raise exception(errc.invalid, str(e)) from None
    return address, shape, strides, dt, ro, v


def _from_dlpack(v: Any, dev: tuple[int, int], q: Any, who: str) -> tuple[Any, ...]:
    if dev[0] == _dlpack.kDLCUDA:
        _check_device(dev[1], q, 0, who)
    stream = int(q.executor.native)  # the producer orders itself before the queue's work
    try:
        try:
            cap = v.__dlpack__(stream=stream, max_version=_dlpack.VERSION)
        except TypeError:  # a producer before DLPack 1.0
            cap = v.__dlpack__(stream=stream)
        imp = _dlpack.consume(cap)
    except (BufferError, RuntimeError, ValueError) as e:  # e.g. PyTorch: a tensor needing grad
        raise exception(errc.invalid, f"{who}: its __dlpack__ failed: {e}") from None
    strides = None if imp.strides is None else tuple(s * imp.dtype.itemsize for s in imp.strides)
    return imp.address, imp.shape, strides, imp.dtype, imp.readonly, (v, imp)


def foreign_memory(v: Any, q: Any, who: str) -> tuple[Any, ...] | None:
    """``(address, shape, strides in bytes or None, dtype, read-only, owner)`` of another
    library's CUDA array on the queue's device, ordered before what the queue runs next;
    None when ``v`` is no CUDA array."""
    try:
        cai = getattr(v, "__cuda_array_interface__", None)
    except Exception:  # e.g. PyTorch's for a tensor that requires grad: try DLPack
        cai = None
    if isinstance(cai, dict):
        return _from_cai(v, cai, q, who)
    if not (hasattr(v, "__dlpack__") and hasattr(v, "__dlpack_device__")):
        return None
    try:
        dev = tuple(int(x) for x in v.__dlpack_device__())
    except Exception:
        return None
    if dev[0] not in CUDA_TYPES:
        return None
    return _from_dlpack(v, dev, q, who)
