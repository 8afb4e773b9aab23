"""DLPack's C structures, built and read with ``ctypes`` (DLPack 1.0, ``dlpack.h``).

numpy makes capsules only of host memory; a backend's device memory needs its own. This
module is backend-neutral: it knows DLPack's device *codes*, never a driver.

* :func:`capsule` exports ``nbytes`` at an address as a 1-D tensor: a ``PyCapsule`` named
  ``"dltensor"`` (``DLManagedTensor``) or ``"dltensor_versioned"``
  (``DLManagedTensorVersioned``, for a consumer's ``max_version >= (1, 0)``). Its
  ``manager_ctx`` is a :class:`_Export` kept in :data:`_alive` -- with it the structures,
  the shape, and the exporter's ``owner`` (a USM pointer: the allocation stays alive) --
  until the consumer calls the deleter, or until the capsule is collected unconsumed.
* :func:`consume` reads a producer's capsule (either name), marks it used, and returns a
  :class:`Imported` describing the memory; the producer's deleter runs when that object
  goes.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from typing import Any

import numpy as np

#: DLDeviceType codes
kDLCPU = 1  # noqa: N816 - dlpack.h's names
kDLCUDA = 2  # noqa: N816
kDLCUDAHost = 3  # noqa: N816
kDLCUDAManaged = 13  # noqa: N816
#: DLManagedTensorVersioned.flags
FLAG_READ_ONLY = 1
FLAG_IS_COPIED = 2
#: the DLPack version this module writes
VERSION = (1, 0)

_NAME = b"dltensor"
_NAME_VERSIONED = b"dltensor_versioned"
_USED = b"used_dltensor"
_USED_VERSIONED = b"used_dltensor_versioned"


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", _DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


# ------------------------------------------------------------------ dtypes
#: numpy kind -> DLDataTypeCode (int, uint, float, complex, bool)
_CODES = {"i": 0, "u": 1, "f": 2, "c": 5, "b": 6}
_KINDS = {v: k for k, v in _CODES.items()}


def dl_dtype(dt: np.dtype) -> DLDataType:
    """The ``DLDataType`` of a numeric numpy dtype (``BufferError`` for others)."""
    code = _CODES.get(dt.kind)
    if code is None or not dt.isnative:
        raise BufferError(f"DLPack: no DLPack type for {dt}")
    return DLDataType(code, dt.itemsize * 8, 1)


def np_dtype(t: DLDataType) -> np.dtype:
    """The numpy dtype of a ``DLDataType`` (``BufferError`` for vector lanes, bfloat16...)."""
    kind = _KINDS.get(int(t.code))
    if kind is None or t.lanes != 1 or t.bits % 8:
        raise BufferError(f"DLPack: type code {t.code}, {t.bits} bits x {t.lanes} lanes has no "
                          "numpy dtype pysycl can use")
    return np.dtype("?" if kind == "b" else f"{kind}{t.bits // 8}")


# ------------------------------------------------------------------ the C API
_api = ctypes.pythonapi
_new = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p)(
    ("PyCapsule_New", _api))
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_IsValid", _api))
_get_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", _api))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_SetName", _api))

#: manager_ctx address -> the export it keeps alive (dropped by the deleter)
_alive: dict[int, _Export] = {}
_lock = threading.Lock()


class _Export:
    """What one exported capsule keeps alive: the structures, the shape and the owner."""

    __slots__ = ("__weakref__", "capsule", "managed", "owner", "shape")

    def __init__(self, managed: Any, shape: Any, owner: object) -> None:
        self.managed, self.shape, self.owner = managed, shape, owner
        self.capsule: Any = None


def _release(address: int | None) -> None:
    """The deleter of every exported tensor (both layouts): let the export go."""
    with _lock:
        _alive.pop(address or 0, None)


_deleter = _DELETER(_release)


def _sweep() -> None:
    """Let go of the exports whose capsule only this module still holds, unconsumed (a
    capsule dropped, or refused by its consumer); forget the capsules consumers took.

    The capsules have no destructor: one written in Python (a ``ctypes`` callback) cannot
    keep the exception of a consumer that refused a capsule, so this module holds each
    capsule until it is consumed or it alone holds it. Called at every export."""
    with _lock:
        alone = _alone()
        for key, e in list(_alive.items()):
            cap = e.capsule
            if cap is None:
                continue
            ref = id(cap)
            if not (_is_valid(ref, _NAME) or _is_valid(ref, _NAME_VERSIONED)):
                e.capsule = None  # consumed: the consumer calls the deleter
            elif sys.getrefcount(cap) <= alone:  # the export's slot and this loop's name only
                del _alive[key]


class _Probe:
    __slots__ = ("capsule",)


_PROBE = _Probe()
_PROBE.capsule = object()


def _alone() -> int:
    """The reference count :func:`_sweep` reads for a capsule only its export holds (the
    same reads, of an object only a slot holds: the interpreter's own counting included)."""
    cap = _PROBE.capsule
    return sys.getrefcount(cap)


def capsule(address: int, count: int, dtype: np.dtype, device: tuple[int, int], owner: object,
            *, versioned: bool, readonly: bool = False) -> Any:
    """A DLPack capsule of ``count`` elements of ``dtype`` at ``address`` on ``device``
    (``(device_type, device_id)``); ``owner`` stays alive until the consumer is done."""
    shape = (ctypes.c_int64 * 1)(count)
    managed: Any = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    t = managed.dl_tensor
    t.data = address
    t.device = DLDevice(*device)
    t.ndim = 1
    t.dtype = dl_dtype(dtype)
    t.shape = ctypes.cast(shape, ctypes.POINTER(ctypes.c_int64))
    t.strides = None  # compact, row-major
    t.byte_offset = 0
    managed.deleter = _deleter
    key = ctypes.addressof(managed)
    managed.manager_ctx = key
    if versioned:
        managed.version = DLPackVersion(*VERSION)
        managed.flags = FLAG_READ_ONLY if readonly else 0
    _sweep()
    e = _Export(managed, shape, owner)
    cap = _new(key, _NAME_VERSIONED if versioned else _NAME, None)
    e.capsule = cap
    with _lock:
        _alive[key] = e
    return cap


def exported() -> int:
    """How many exported tensors consumers (or unconsumed capsules) still hold."""
    _sweep()
    return len(_alive)


# ------------------------------------------------------------------ import
class Imported:
    """A producer's tensor read from its capsule: ``address`` (data + byte_offset),
    ``shape``, ``strides`` (elements; None: compact), ``dtype``, ``device``
    (``(type, id)``), ``readonly``. The producer's deleter runs when this object goes."""

    __slots__ = ("__weakref__", "_deleter", "_managed", "address", "capsule", "device", "dtype",
                 "readonly", "shape", "strides")

    def __init__(self) -> None:
        self._deleter: Any = None
        self._managed = 0

    def __del__(self) -> None:
        fn, self._deleter = self._deleter, None
        if fn:
            fn(self._managed)


def consume(cap: Any) -> Imported:
    """Read a producer's ``"dltensor"``/``"dltensor_versioned"`` capsule and mark it used
    (``BufferError`` if it is neither, or was consumed already)."""
    ref = id(cap)
    if _is_valid(ref, _NAME_VERSIONED):
        addr = _get_pointer(ref, _NAME_VERSIONED)
        m: Any = DLManagedTensorVersioned.from_address(addr)
        if m.version.major != VERSION[0]:
            raise BufferError(f"DLPack: the producer's tensor is version "
                              f"{m.version.major}.{m.version.minor}; pysycl reads 1.x")
        readonly = bool(m.flags & FLAG_READ_ONLY)
        _set_name(ref, _USED_VERSIONED)
    elif _is_valid(ref, _NAME):
        addr = _get_pointer(ref, _NAME)
        m = DLManagedTensor.from_address(addr)
        readonly = False
        _set_name(ref, _USED)
    else:
        raise BufferError("DLPack: __dlpack__ returned no unused DLPack capsule")
    out = Imported()
    out._managed = addr
    out._deleter = m.deleter if ctypes.cast(m.deleter, ctypes.c_void_p).value else None
    out.capsule = cap
    t = m.dl_tensor
    out.address = int(t.data or 0) + int(t.byte_offset)
    out.device = (int(t.device.device_type), int(t.device.device_id))
    out.shape = tuple(int(t.shape[i]) for i in range(t.ndim))
    out.strides = (None if not t.strides else tuple(int(t.strides[i]) for i in range(t.ndim)))
    out.dtype = np_dtype(t.dtype)
    out.readonly = readonly
    return out


def negotiate(max_version: Any) -> bool:
    """Whether a consumer's ``max_version`` asks for the versioned layout."""
    if max_version is None:
        return False
    if not isinstance(max_version, (tuple, list)):
        raise BufferError(f"__dlpack__: max_version must be a (major, minor) tuple, not "
                          f"{max_version!r}")
    try:
        return int(max_version[0]) >= VERSION[0]
    except (TypeError, ValueError, IndexError):
        raise BufferError(f"__dlpack__: max_version must be a (major, minor) tuple, not "
                          f"{max_version!r}") from None
