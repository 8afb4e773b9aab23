"""Buffers of ``sycl::vec`` elements (SYCL 2020 §4.14.2: ``vec<T, N>`` is ``N * sizeof(T)``
bytes, ``vec<T, 3>`` as large as ``vec<T, 4>``) and ``buffer.reinterpret`` between scalar and
vector element types (§4.7.2.2): kernels through either buffer see the same bytes, on every
device that runs Python kernels, compared with numpy views of the same bytes."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ptxas_check

RW = sycl.access_mode.read_write
VECS = [sycl.float4, sycl.float3, sycl.int2, sycl.double2, sycl.uchar16, sycl.short8,
        sycl.half4]


def _lanes(vt: sycl.vec_type) -> int:
    return 4 if vt.num_elements == 3 else vt.num_elements


@pytest.mark.parametrize("vt", VECS, ids=lambda v: v.name)
def test_reinterpret_as_vectors_sizes_and_host_views(vt) -> None:
    n, lanes = 6, _lanes(vt)
    a = np.arange(n * lanes).astype(vt.dtype)
    with sycl.buffer(a) as B:
        V = B.reinterpret(vt, sycl.range(n))
        assert V.byte_size() == B.byte_size() == n * lanes * vt.dtype.itemsize
        assert V.size() == n and tuple(V.get_range()) == (n,)
        assert V.dtype.itemsize == lanes * vt.dtype.itemsize
        assert repr(V) == f"sycl.buffer(range=({n},), dtype=vec<{vt.dtype}, {vt.num_elements}>)"
        assert tuple(B.reinterpret(vt).get_range()) == (n,)     # no range: 1-D, all the bytes
        with sycl.host_accessor(V, sycl.access_mode.read) as h:
            want = a.reshape(n, lanes)[:, :vt.num_elements]
            assert np.array_equal(np.asarray(h), want)
        back = V.reinterpret(vt.dtype, sycl.range(n * lanes))
        assert back.dtype == vt.dtype
        with sycl.host_accessor(back, sycl.access_mode.read) as h:
            assert np.array_equal(np.asarray(h), a)


def test_the_issue_case_float4_is_16_bytes() -> None:
    # "1764 x float32 != 28224 bytes": 1764 float4 are 28224 bytes.
    with sycl.buffer(np.zeros(4 * 1764, np.float32)) as B:
        V = B.reinterpret(sycl.float4, sycl.range(1764))
        assert V.byte_size() == 28224
        with pytest.raises(sycl.exception) as ei:
            B.reinterpret(sycl.float4, sycl.range(1765))
        assert ei.value.code() == sycl.errc.invalid
        assert str(ei.value) == ("[errc.invalid] buffer.reinterpret: 1765 x vec<float32, 4> "
                                 "(16 bytes each) != the buffer's 28224 bytes")
    with sycl.buffer(np.zeros(5, np.float32)) as B, pytest.raises(sycl.exception) as ei:
        B.reinterpret(sycl.float4)
    assert "20 bytes are not a whole number of vec<float32, 4> (16 bytes)" in str(ei.value)


@pytest.mark.parametrize("vt", VECS, ids=lambda v: v.name)
def test_kernels_through_a_vector_view_see_the_scalar_bytes(any_kernel_queue, vt) -> None:
    q = any_kernel_queue
    if vt.dtype == np.float16 and not q.get_device().has(sycl.aspect.fp16):
        pytest.skip("half vectors need aspect.fp16")
    n, lanes, k = 8, _lanes(vt), vt.num_elements
    a = (np.arange(n * lanes) % 50).astype(vt.dtype)
    want = a.copy().reshape(n, lanes)
    want[:, :k] = want[:, :k] * 2 + 1     # the padding lane of a 3-vector is never written
    with sycl.buffer(a) as B:
        V = B.reinterpret(vt, sycl.range(n))

        def cg(h: sycl.handler) -> None:
            acc = V.get_access(h, RW)

            def kern(i):
                v = acc[i]
                acc[i] = v * vt(2) + vt(1)
            h.parallel_for(sycl.range(n), kern)
        q.submit(cg)
    assert np.array_equal(a.reshape(n, lanes), want)


def test_scalar_kernel_after_vector_kernel_and_2d(any_kernel_queue) -> None:
    # A float4 kernel writes, an int32 kernel (another reinterpretation) reads the same bytes.
    q = any_kernel_queue
    a = np.zeros(4 * 6, np.float32)
    bits = np.zeros(4 * 6, np.int32)
    with sycl.buffer(a) as B, sycl.buffer(bits) as O:
        V = B.reinterpret(sycl.float4, sycl.range(2, 3))
        I = B.reinterpret(np.int32, sycl.range(24))

        def vec_cg(h: sycl.handler) -> None:
            acc = V.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(2, 3), lambda i: acc.__setitem__(
                i, sycl.float4(i[0], i[1], 0.5, -1.0)))
        q.submit(vec_cg)

        def int_cg(h: sycl.handler) -> None:
            src = I.get_access(h, sycl.access_mode.read)
            dst = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(24), lambda i: dst.__setitem__(i, src[i]))
        q.submit(int_cg)
    want = np.array([[r, c, 0.5, -1.0] for r in range(2) for c in range(3)], np.float32)
    assert np.array_equal(a.reshape(6, 4), want)
    assert np.array_equal(bits, want.reshape(-1).view(np.int32))


def test_buffer_of_vectors_from_a_range(any_kernel_queue) -> None:
    n = 5
    with sycl.buffer(sycl.range(n), dtype=sycl.int2) as V:
        def cg(h: sycl.handler) -> None:
            acc = V.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(n), lambda i: acc.__setitem__(i, sycl.int2(i[0], -i[0])))
        any_kernel_queue.submit(cg)
        with sycl.host_accessor(V, sycl.access_mode.read) as h:
            assert np.asarray(h).tolist() == [[i, -i] for i in range(n)]
        with V.reinterpret(np.int32).get_host_access(sycl.access_mode.read) as h:
            assert np.asarray(h).tolist() == [v for i in range(n) for v in (i, -i)]


def test_reinterpret_of_a_sub_buffer_and_misaligned_offsets() -> None:
    a = np.arange(16, dtype=np.float32)
    with sycl.buffer(a) as B:
        sub = sycl.buffer(B, sycl.id(8), sycl.range(8))
        V = sub.reinterpret(sycl.float4)
        with sycl.host_accessor(V, sycl.access_mode.read) as h:
            assert np.asarray(h).tolist() == a[8:].reshape(2, 4).tolist()
        odd = sycl.buffer(B, sycl.id(2), sycl.range(8))
        with pytest.raises(sycl.exception, match="starts at byte 8, not a whole number") as ei:
            odd.reinterpret(sycl.float4)
        assert ei.value.code() == sycl.errc.invalid


def test_vector_element_types_elsewhere_are_type_errors(kq) -> None:
    with pytest.raises(TypeError, match=r"USM allocations of sycl\.float4 elements are not "
                       r"supported; use the element dtype float32"):
        sycl.malloc_device(4, kq, dtype=sycl.float4)
    with sycl.buffer(np.zeros(8, np.float32)) as B, pytest.raises(TypeError, match="marray"):
        B.reinterpret(sycl.mfloat4)


def test_vector_accessor_kernel_compiles_to_ptx(kq, ptx_images) -> None:
    a = np.arange(12, dtype=np.float32)
    with sycl.buffer(a) as B:
        V = B.reinterpret(sycl.float3)

        def cg(h: sycl.handler) -> None:
            acc = V.get_access(h, RW)
            h.parallel_for(sycl.range(3), lambda i: acc.__setitem__(i, acc[i] + sycl.float3(1)))
        kq.submit(cg)
    assert a.tolist() == [1, 2, 3, 3, 5, 6, 7, 7, 9, 10, 11, 11]
    (img,) = ptx_images
    ptx = img.binary.decode()
    assert "ld.global" in ptx and "st.global" in ptx
    ptxas_check(img.binary)


def test_fill_and_copy_with_vector_accessors(any_kernel_queue) -> None:
    q = any_kernel_queue
    a = np.zeros(16, np.float32)
    out = np.zeros((4, 4), np.float32)
    with sycl.buffer(a) as B:
        V = B.reinterpret(sycl.float4, sycl.range(4))
        q.submit(lambda h: h.fill(V.get_access(h, sycl.access_mode.write),
                                  sycl.float4(1, 2, 3, 4)))
        q.submit(lambda h: h.copy(V.get_access(h, sycl.access_mode.read), out)).wait()
        assert out.tolist() == [[1, 2, 3, 4]] * 4
        src = np.arange(8, dtype=np.float32).reshape(2, 4)
        q.submit(lambda h: h.copy(src, V.get_access(h, sycl.access_mode.write,
                                                    access_range=(2,), access_offset=(1,))))
        with pytest.raises(sycl.exception, match=r"a vec<float32, 4> accessor copies with a "
                           r"C-contiguous float32 array whose last axis is 4 elements, not a "
                           r"float32 array of shape \(4, 3\)") as ei:
            q.submit(lambda h: h.copy(V.get_access(h, sycl.access_mode.read),
                                      np.zeros((4, 3), np.float32)))
        assert ei.value.code() == sycl.errc.invalid
    assert a.reshape(4, 4).tolist() == [[1, 2, 3, 4], [0, 1, 2, 3], [4, 5, 6, 7], [1, 2, 3, 4]]


def test_fill_of_a_scalar_reinterpretation_uses_its_type(any_kernel_queue) -> None:
    a = np.zeros(4, np.float32)
    with sycl.buffer(a) as B:
        bits = B.reinterpret(np.int32)
        any_kernel_queue.submit(lambda h: h.fill(bits.get_access(h, sycl.access_mode.write),
                                                 0x3F800000))
    assert a.tolist() == [1.0] * 4  # the int32 bits of 1.0f, not 1065353216.0
