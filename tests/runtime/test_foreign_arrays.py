"""Buffers over array objects that are not numpy arrays (issue 21, item 4).

SYCL 2020 §4.7.2.1: a buffer built over host memory uses that memory and writes
back into it when it is destroyed (§4.7.2.3); one built over a ``const T*`` never
writes back. pysycl uses an object's memory in place when it offers a zero-copy
view (the buffer protocol, ``__array_interface__``, DLPack on the CPU), treats a
read-only one as ``const T*``, and refuses what it could not write back into.
"""

from __future__ import annotations

import array
import ctypes
from typing import Any

import numpy as np
import pytest

import pysycl as sycl


def _fill(q: sycl.queue, obj: object, value: object, **kw: Any) -> None:
    with sycl.buffer(obj, **kw) as B:
        q.submit(lambda h: h.fill(B.get_access(h, sycl.access_mode.write), value))


class DLPackTensor:
    """A real DLPack producer (as a CPU tensor of another library is): numpy's
    ``__dlpack__`` of the array it wraps, plus ``__array__`` as torch has."""

    def __init__(self, a: np.ndarray, device: tuple[int, int] | None = None) -> None:
        self._a = a
        self._device = device

    def __dlpack__(self, **kw: Any) -> Any:
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device or self._a.__dlpack_device__()

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return self._a.copy()  # a copy, as many libraries' __array__ is


class ArrayOnly:
    """An object that offers its data only through ``__array__`` (here: a copy)."""

    def __init__(self, a: np.ndarray, copy: bool = True) -> None:
        self._a = a
        self._copy = copy

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        return self._a.copy() if self._copy else self._a


def test_buffer_over_bytearray_writes_back_into_it(clq: sycl.queue) -> None:
    b = bytearray(16)
    _fill(clq, b, 7)
    assert b == bytearray([7] * 16)


def test_buffer_over_array_array_writes_back_into_it(clq: sycl.queue) -> None:
    a = array.array("d", [1.0, 2.0, 3.0])
    _fill(clq, a, 2.5)
    assert a.tolist() == [2.5, 2.5, 2.5]
    i = array.array("i", range(5))
    with sycl.buffer(i) as B:
        assert B.dtype == np.dtype(np.intc) and B.get_range() == sycl.range(5)


def test_buffer_over_strided_memoryview_writes_back_into_its_elements(clq: sycl.queue) -> None:
    base = np.zeros(8, np.int32)
    _fill(clq, memoryview(base)[::2], 3)
    np.testing.assert_array_equal(base, [3, 0, 3, 0, 3, 0, 3, 0])


def test_buffer_over_ctypes_array_writes_back_into_it(clq: sycl.queue) -> None:
    c = (ctypes.c_float * 4)()
    _fill(clq, c, 1.5)
    assert list(c) == [1.5] * 4


def test_buffer_over_cpu_dlpack_tensor_writes_back_into_it(clq: sycl.queue) -> None:
    """A CPU tensor with DLPack and a copying ``__array__`` (as torch's): the buffer
    uses the tensor's memory (np.from_dlpack), so the results land in the tensor."""
    a = np.zeros((2, 3), np.float32)
    t = DLPackTensor(a)
    with sycl.buffer(t) as B:
        assert B.get_range() == sycl.range(2, 3)
        with sycl.host_accessor(B, sycl.access_mode.read) as ha:
            assert np.shares_memory(np.asarray(ha), a)  # zero copy: the tensor's memory
        clq.submit(lambda h: h.fill(B.get_access(h, sycl.access_mode.write), 4.0))
    np.testing.assert_array_equal(a, np.full((2, 3), 4.0, np.float32))


def test_buffer_over_transposed_dlpack_tensor_writes_back_elementwise(clq: sycl.queue) -> None:
    base = np.zeros((3, 2), np.int64)
    t = DLPackTensor(base.T)  # not C-contiguous: copied in, written back element-wise
    with sycl.buffer(t) as B:
        def cg(h: sycl.handler) -> None:
            h.copy(np.arange(6, dtype=np.int64).reshape(2, 3), B.get_access(h, sycl.access_mode.write))
        clq.submit(cg)
    np.testing.assert_array_equal(base.T, np.arange(6).reshape(2, 3))


def test_buffer_over_array_interface_object_writes_back_into_it(clq: sycl.queue) -> None:
    a = np.zeros(5, np.uint16)

    class Iface:
        __array_interface__ = a.__array_interface__

    _fill(clq, Iface(), 9)
    np.testing.assert_array_equal(a, np.full(5, 9, np.uint16))


def test_buffer_over_array_only_object_is_refused(clq: sycl.queue) -> None:
    """``__array__`` may return a copy: a buffer could not write back into the object,
    so pysycl refuses it and says what to pass (it used to copy silently)."""
    a = np.zeros(4, np.float32)
    with pytest.raises(TypeError, match=r"only through __array__.*np\.asarray\(x\)"):
        sycl.buffer(ArrayOnly(a))
    np.testing.assert_array_equal(a, np.zeros(4, np.float32))


def test_buffer_over_a_gpu_dlpack_tensor_is_refused(clq: sycl.queue) -> None:
    t = DLPackTensor(np.zeros(4, np.float32), device=(2, 0))  # kDLCUDA
    with pytest.raises(TypeError, match="lives on a CUDA GPU, not in host memory"):
        sycl.buffer(t)


def test_buffer_over_read_only_objects_is_a_const_pointer(clq: sycl.queue) -> None:
    """Read-only memory is ``const T*`` (§4.7.2.1): copied in, never written back."""
    b = b"\x01\x02\x03\x04"
    _fill(clq, b, 0)
    assert b == b"\x01\x02\x03\x04"
    ro = np.arange(4.0)
    ro.flags.writeable = False
    _fill(clq, DLPackTensor(ro), 0.0)  # DLPack says read-only
    np.testing.assert_array_equal(ro, np.arange(4.0))
    frozen = np.arange(3.0)
    frozen.flags.writeable = False
    _fill(clq, ArrayOnly(frozen, copy=False), 0.0)  # __array__ gives read-only memory
    np.testing.assert_array_equal(frozen, np.arange(3.0))
    with sycl.buffer(memoryview(bytes(range(8)))) as B:
        with sycl.host_accessor(B, sycl.access_mode.read) as ha:
            np.testing.assert_array_equal(np.asarray(ha), np.arange(8, dtype=np.uint8))


def test_buffer_over_foreign_object_checks_dtype() -> None:
    with pytest.raises(TypeError, match="the data has dtype uint8, dtype= says float32"):
        sycl.buffer(bytearray(8), dtype=np.float32)
    with pytest.raises(TypeError, match="cannot hold a object"):
        sycl.buffer(object())
