"""Kernels capturing another SYCL runtime's memory through ``__sycl_usm_array_interface__``
(issue 21, item 25).

An object whose ``usm_type`` says ``"shared"`` or ``"host"`` (as dpctl's and dpnp's
arrays report it) points into memory the host can use: pysycl passes it as it is on a
device with ``aspect.usm_system_allocations`` (zero copy: the kernel writes into the
object's memory) and as a read-only lookup table elsewhere, exactly as a numpy array.
``"device"`` memory of another runtime is refused before anything is enqueued.
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl._memory import tables


class ForeignUSMArray:
    """What a dpnp/dpctl array in host or shared USM offers pysycl (host memory here)."""

    def __init__(self, arr: np.ndarray, usm_type: str) -> None:
        self._arr = arr  # the owner of the memory
        self.usm_type = usm_type
        self.__sycl_usm_array_interface__ = {
            "data": (arr.ctypes.data, False), "shape": arr.shape, "strides": None,
            "typestr": arr.dtype.str, "version": 1, "syclobj": object()}


def _system(q: sycl.queue) -> bool:
    return q.get_device().has(sycl.aspect.usm_system_allocations)


def test_foreign_shared_memory_is_a_zero_copy_capture(kq: sycl.queue) -> None:
    if not _system(kq):
        pytest.skip("the device cannot use host memory directly (the table test covers it)")
    mem = np.arange(16, dtype=np.float32)
    f = ForeignUSMArray(mem, "shared")

    def k(i: sycl.item) -> None:
        f[i] = f[i] * 2 + 1  # type: ignore[index]

    kq.parallel_for(sycl.range(16), k).wait()
    np.testing.assert_array_equal(mem, np.arange(16, dtype=np.float32) * 2 + 1)


def test_foreign_host_memory_is_a_table_where_host_memory_is_copied(
        kq: sycl.queue, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tables, "forced", _system(kq))  # the copying path on every device
    f = ForeignUSMArray(np.arange(8, dtype=np.int64), "host")
    out = sycl.malloc_device(8, kq, dtype=np.int64)
    kq.parallel_for(sycl.range(8), lambda i: out.__setitem__(i, f[i] * 3)).wait()  # type: ignore[index]
    got = np.zeros(8, np.int64)
    kq.copy(out, got, 8).wait()
    np.testing.assert_array_equal(got, np.arange(8) * 3)
    sycl.free(out, kq)


def test_foreign_device_memory_capture_is_refused(kq: sycl.queue) -> None:
    mem = np.zeros(4, np.int32)
    f = ForeignUSMArray(mem, "device")
    with pytest.raises(sycl.exception, match=r"test_usm_foreign_kernels\.py:\d+.*'f'.*"
                       r"its usm_type is 'device'") as e:
        kq.parallel_for(sycl.range(4), lambda i: f.__setitem__(i, 1)).wait()  # type: ignore[attr-defined]
    assert e.value.code() == sycl.errc.invalid and not mem.any()
