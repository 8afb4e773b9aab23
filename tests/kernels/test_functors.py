"""Function objects (C++ functors) as kernels: attributes are captures, never constants.

``any_kernel_queue`` runs each test on the compiled device (SPIR-V / PTX) and on the
host_debuggable interpreter (the oracle).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import pysycl as sycl
from pysycl._kernels.cache import kernels

RW, R = sycl.access_mode.read_write, sycl.access_mode.read


class Saxpy:
    """``y = a * x + y``, spelled as a C++ SYCL function object."""

    def __init__(self, x: object, y: object, a: object) -> None:
        self.x = x
        self.y = y
        self.a = a

    def __call__(self, i: sycl.item) -> None:
        self.y[i] = self.a * self.x[i] + self.y[i]


def _saxpy(q: sycl.queue, x: np.ndarray, y: np.ndarray, a: object) -> np.ndarray:
    y = y.copy()
    with sycl.buffer(x) as X, sycl.buffer(y) as Y:
        q.submit(lambda h: h.parallel_for(sycl.range(x.size),
                                          Saxpy(X.get_access(h, R), Y.get_access(h, RW), a)))
    return y


def test_saxpy_functor_matches_numpy(any_kernel_queue: sycl.queue) -> None:
    x = np.arange(100, dtype=np.float32)
    y = np.linspace(0, 1, 100, dtype=np.float32)
    for a in (np.float32(2.0), np.float32(-0.5)):  # another value: the same kernel
        np.testing.assert_allclose(_saxpy(any_kernel_queue, x, y, a), a * x + y, rtol=1e-6)


def test_instances_share_one_compiled_kernel(kq: sycl.queue) -> None:
    x = np.arange(16, dtype=np.float32)
    kernels.clear_memory()
    before = sycl.ext.kernel_cache_stats()
    for a in (1.0, 2.0, 3.0):
        np.testing.assert_allclose(_saxpy(kq, x, x, np.float32(a)), (a + 1) * x)
    after = sycl.ext.kernel_cache_stats()
    assert after["compiles"] + after["disk_hits"] - before["compiles"] - before["disk_hits"] == 1
    assert after["memory_hits"] - before["memory_hits"] == 2
    # another attribute type is another kernel (float64 needs fp64, which the CPU has)
    if kq.get_device().has(sycl.aspect.fp64):
        xd = np.arange(16, dtype=np.float64)
        np.testing.assert_allclose(_saxpy(kq, xd, xd, 2.0), 3 * xd)
        assert sycl.ext.kernel_cache_stats()["compiles"] + sycl.ext.kernel_cache_stats()[
            "disk_hits"] == after["compiles"] + after["disk_hits"] + 1


def test_attribute_values_are_arguments_not_constants(kq: sycl.queue) -> None:
    """A changed attribute value is seen by the cached kernel; the disk cache serves it too."""
    x = np.ones(8, np.float32)
    assert _saxpy(kq, x, x, np.float32(2))[0] == 3
    kernels.clear_memory()  # the next submit finds the kernel on disk, runs it with a = 5
    before = sycl.ext.kernel_cache_stats()
    assert _saxpy(kq, x, x, np.float32(5))[0] == 6
    after = sycl.ext.kernel_cache_stats()
    assert after["compiles"] == before["compiles"] and after["disk_hits"] == before["disk_hits"] + 1


class Poly:
    """Tuple and scalar attributes, a single_task and a helper call."""

    def __init__(self, out: object, coeffs: tuple[float, ...], n: int) -> None:
        self.out, self.coeffs, self.n = out, coeffs, n

    def __call__(self) -> None:
        for k in range(self.n):
            self.out[k] = _horner(self.coeffs, k)


def _horner(c: tuple[float, ...], x: int) -> float:
    return (c[2] * x + c[1]) * x + c[0]


def test_single_task_tuple_attributes_and_helpers(any_kernel_queue: sycl.queue) -> None:
    out = np.zeros(5, np.float32)
    c = (np.float32(1), np.float32(-2), np.float32(0.5))
    with sycl.buffer(out) as O:
        any_kernel_queue.submit(lambda h: h.single_task(Poly(O.get_access(h, RW), c, 5)))
    k = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(out, (c[2] * k + c[1]) * k + c[0])


class Counter:
    """A functor with USM pointer attributes, for the q.parallel_for shortcut."""

    def __init__(self, src: sycl.usm_pointer, dst: sycl.usm_pointer, bias: int) -> None:
        self.src, self.dst, self.bias = src, dst, bias

    def __call__(self, it: sycl.item) -> None:
        self.dst[it] = self.src[it] * 2 + self.bias


def test_usm_functor_through_the_queue_shortcut(any_kernel_queue: sycl.queue) -> None:
    q = any_kernel_queue
    n = 64
    src = sycl.malloc_shared(n, q, dtype=np.int32) if q.get_device().has(
        sycl.aspect.usm_shared_allocations) else None
    if src is None:
        pytest.skip("no shared USM")
    dst = sycl.malloc_shared(n, q, dtype=np.int32)
    try:
        host = np.arange(n, dtype=np.int32)
        q.memcpy(src, host, host.nbytes).wait()
        q.parallel_for(sycl.range(n), Counter(src, dst, 7)).wait()
        out = np.empty(n, np.int32)
        q.memcpy(out, dst, out.nbytes).wait()
        np.testing.assert_array_equal(out, host * 2 + 7)
    finally:
        sycl.free(src, q)
        sycl.free(dst, q)


class Scaler:
    def __init__(self, acc: object, k: object) -> None:
        self.acc, self.k = acc, k

    def scale(self, it: sycl.nd_item) -> None:  # a bound method is a kernel too
        i = it.get_global_id(0)
        self.acc[i] = self.acc[i] * self.k + it.get_local_id(0)


def test_bound_method_on_an_nd_range(any_kernel_queue: sycl.queue) -> None:
    a = np.ones(32, np.int32)
    with sycl.buffer(a) as A:
        any_kernel_queue.submit(lambda h: h.parallel_for(
            sycl.nd_range(sycl.range(32), sycl.range(8)), Scaler(A.get_access(h, RW), 3).scale))
    np.testing.assert_array_equal(a, 3 + np.arange(32) % 8)


class Summer:
    def __init__(self, x: object) -> None:
        self.x = x

    def __call__(self, i: sycl.item, s: object) -> None:
        s += self.x[i]


def test_functor_with_a_reduction(any_kernel_queue: sycl.queue) -> None:
    x = np.arange(100, dtype=np.int32)
    total = np.zeros(1, np.int32)
    with sycl.buffer(x) as X, sycl.buffer(total) as T:
        any_kernel_queue.submit(lambda h: h.parallel_for(
            sycl.range(100), sycl.reduction(T, h, sycl.plus()), Summer(X.get_access(h, R))))
    assert total[0] == x.sum()


def test_no_registry_keeps_the_object(kq: sycl.queue) -> None:
    x = np.ones(8, np.float32)
    with sycl.buffer(x) as X:
        holder: list[weakref.ref[Saxpy]] = []

        def cg(h: sycl.handler) -> None:
            f = Saxpy(X.get_access(h, R), X.get_access(h, RW), np.float32(1))
            holder.append(weakref.ref(f))
            h.parallel_for(sycl.range(8), f)

        kq.submit(cg).wait()
        gc.disable()
        try:  # reference counting alone frees it: no cycle, no registry
            assert holder[0]() is None
        finally:
            gc.enable()
    assert x.tolist() == [2.0] * 8


class _Method:
    def __init__(self, acc: object) -> None:
        self.acc = acc

    def twice(self, v: int) -> int:
        return 2 * v

    def __call__(self, i: sycl.item) -> None:
        self.acc[i] = self.twice(i)


class _PassSelf:
    def __init__(self, acc: object) -> None:
        self.acc = acc

    def __call__(self, i: sycl.item) -> None:
        _store(self, i)


def _store(f: _PassSelf, i: int) -> None:
    f.acc[i] = i


class _Missing:
    def __call__(self, i: sycl.item) -> None:
        self.acc[i] = 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(("cls", "says"), [
    (_Method, "methods and callable attributes cannot be called"),
    (_PassSelf, "can use self only to read attributes"),
    (_Missing, "has no attribute 'acc'"),
])
def test_unsupported_functors_name_the_line(kq: sycl.queue, cls: type, says: str) -> None:
    a = np.zeros(4, np.int32)
    with sycl.buffer(a) as A:
        with pytest.raises(sycl.kernel_compile_error, match=says) as e:
            kq.submit(lambda h: h.parallel_for(sycl.range(4), cls(A.get_access(h, RW))
                                               if cls is not _Missing else cls()))
    assert "test_functors.py:" in str(e.value)
    assert a.tolist() == [0] * 4


def test_wrong_arity_and_non_python_callables(kq: sycl.queue) -> None:
    class Three:
        def __call__(self, a: int, b: int, c: int) -> None:
            pass

    with pytest.raises(sycl.kernel_signature_error, match="takes 3 parameter"):
        kq.submit(lambda h: h.single_task(Three()))
    with pytest.raises(TypeError, match="defines __call__ in Python"):
        kq.submit(lambda h: h.single_task(len))
