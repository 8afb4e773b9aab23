"""Captured USM pointers (``pysycl._core.abi.PointerType``): ``p[i]``, stores, atomics, helpers.

The harness passes a :class:`~tests.compiler.conftest.Ptr` as one SVM pointer
argument (``clSetKernelArgSVMPointer`` of the element it points at), the way
the runtime passes a ``sycl.usm_pointer``; results are compared with numpy.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl
import pysycl as sycl
from pysycl._core.abi import Capture, IndexSpace, PointerType
from pysycl._kernels.captures import call_graph
from pysycl_numba import compile_kernel
from tests.conftest import ptxas_check

from . import conftest
from .conftest import RW, Ptr, W, compile_for, make_captures, spirv_validate

F32 = np.float32
#: Every element dtype accessors take (float16 runs only where the device has fp16).
DTYPES = [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64,
          np.float16, np.float32, np.float64, np.complex64, np.complex128]
RELAXED, DEVICE = sycl.memory_order.relaxed, sycl.memory_scope.device
GLOBAL = sycl.access.address_space.global_space


def test_load_and_store_match_numpy(run: Any, tmp_path: Any) -> None:
    a = np.arange(100, dtype=F32)
    out = np.zeros(100, F32)
    pa, po = Ptr(a, readonly=True), Ptr(out)

    def k(i: Any) -> None:
        po[i] = pa[i] * F32(2) + F32(1)

    ck = run(k, a.size)
    np.testing.assert_array_equal(out, a * 2 + 1)
    assert [c.type for c in ck.captures] == [PointerType(np.dtype(F32), True),
                                             PointerType(np.dtype(F32))]
    assert ck.required_aspects == frozenset()
    spirv_validate(ck.binary, tmp_path)


def test_lambda_uses_setitem_and_getitem_methods(run: Any) -> None:
    a = np.arange(16, dtype=np.int32)
    out = np.zeros(16, np.int32)
    pa, po = Ptr(a), Ptr(out)
    run(lambda i: po.__setitem__(i, pa.__getitem__(i) + pa[15 - i]), 16)
    np.testing.assert_array_equal(out, a + a[::-1])


@pytest.mark.parametrize("ity", [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                 np.int64, np.uint64])
def test_any_integer_index_type(run: Any, ity: type) -> None:
    a = np.arange(50, dtype=np.float64)
    out = np.zeros(50, np.float64)
    pa, po = Ptr(a), Ptr(out)

    def k(i: Any) -> None:
        j = ity(int(i))
        po[j] = pa[j] + 0.5

    run(k, 50)
    np.testing.assert_array_equal(out, a + 0.5)


def test_item_and_id_tuple_index(run: Any) -> None:
    out = np.zeros(32, np.int64)
    twice = np.zeros(32, np.int64)
    po, pt = Ptr(out), Ptr(twice)

    def k(it: Any) -> None:
        po[it] = it.get_linear_id() * 3
        pt[it.get_id()] = po[it] * 2

    run(k, 32)
    np.testing.assert_array_equal(out, np.arange(32) * 3)
    np.testing.assert_array_equal(twice, np.arange(32) * 6)


def test_augmented_assignment_and_stored_values_convert(run: Any) -> None:
    acc = np.arange(20, dtype=np.int32)
    conv = np.zeros(20, np.int16)
    pa, pc = Ptr(acc), Ptr(conv)

    def k(i: Any) -> None:
        pa[i] += 7
        pa[i] *= 2
        pc[i] = i * 1.75 - 3.0  # float64 -> int16, as accessors convert (truncation)

    run(k, 20)
    np.testing.assert_array_equal(acc, (np.arange(20) + 7) * 2)
    np.testing.assert_array_equal(conv, (np.arange(20) * 1.75 - 3.0).astype(np.int16))


@pytest.mark.parametrize("dt", DTYPES, ids=lambda d: np.dtype(d).name)
def test_every_accessor_dtype(run: Any, dt: type) -> None:
    n = 24
    a = (np.arange(n) % 11).astype(dt)
    if np.dtype(dt).kind == "c":
        a = a + (1j * np.arange(n)).astype(dt)
    out = np.zeros(n, dt)
    pa, po = Ptr(a, readonly=True), Ptr(out)

    def k(i: Any) -> None:
        po[i] = pa[i] + pa[n - 1 - i]

    ck = run(k, n)
    np.testing.assert_array_equal(out, (a + a[::-1]).astype(dt))
    want = {np.float16: {"fp16"}, np.float64: {"fp64"}, np.complex128: {"fp64"}}.get(dt, set())
    assert ck.required_aspects == frozenset(want)


def test_pointer_at_an_offset_reads_before_it(run: Any) -> None:
    # C++'s p[-1]: no wraparound, no bounds; the element before the one p points at.
    a = np.arange(10, dtype=F32)
    out = np.zeros(8, F32)
    pa, po = Ptr(a, offset=1), Ptr(out)
    run(lambda i: po.__setitem__(i, pa[i - 1] + pa[i + 1]), 8)
    np.testing.assert_array_equal(out, a[0:8] + a[2:10])


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(dt=st.sampled_from([np.int8, np.uint16, np.int32, np.uint64, np.float32, np.float64,
                           np.complex64]),
       size=st.integers(1, 64), data=st.data())
def test_offsets_into_an_allocation(device: Any, dt: type, size: int, data: Any) -> None:
    off = data.draw(st.integers(0, size - 1), label="offset")
    n = data.draw(st.integers(1, size - off), label="work-items")
    a = np.arange(size).astype(dt)
    want = a.copy()
    p = Ptr(a, offset=off)

    def k(i: Any) -> None:
        p[i] = p[i] * 3 + 1

    _, values = make_captures(k)
    device.launch(compile_for(k, 1), values, (n,))
    want[off:off + n] = want[off:off + n] * 3 + 1
    np.testing.assert_array_equal(a, want)  # nothing outside [off, off + n) changed


def test_pointer_arithmetic(run: Any) -> None:
    a = np.arange(40, dtype=np.int32)
    out = np.zeros(10, np.int32)
    pa, po = Ptr(a), Ptr(out)
    k8 = 8

    def k(i: Any) -> None:
        q = pa + k8
        q += 2
        po[i] = (q - 1)[i] + (3 + pa)[i] + (pa + np.int16(20))[i]

    run(k, 10)
    i = np.arange(10)
    np.testing.assert_array_equal(out, a[9 + i] + a[3 + i] + a[20 + i])


def test_atomics_on_a_pointer(run: Any) -> None:
    n = 256
    keys = (np.arange(n) * 7 % 16).astype(np.int32)
    hist = np.zeros(16, np.int32)
    fsum = np.zeros(1, F32)
    lo_hi = np.array([1 << 30, -(1 << 30)], np.int32)
    cas = np.zeros(1, np.uint32)
    pk, ph, pf, pm, pc = Ptr(keys, readonly=True), Ptr(hist), Ptr(fsum), Ptr(lo_hi), Ptr(cas)

    def k(i: Any) -> None:
        sycl.atomic_ref(ph, pk[i], RELAXED, DEVICE).fetch_add(1)
        sycl.atomic_ref(pf, 0, RELAXED, DEVICE, GLOBAL).fetch_add(0.5)
        sycl.atomic_ref(pm, 0, RELAXED, DEVICE).fetch_min(pk[i] - 3)
        sycl.atomic_ref(pm + 1, 0, RELAXED, DEVICE).fetch_max(pk[i] * 2)
        r = sycl.atomic_ref(pc, 0, sycl.memory_order.acq_rel, DEVICE)
        seen = r.load()
        ok = False
        while not ok:
            ok, seen = r.compare_exchange_strong(seen, seen + np.uint32(1))

    ck = run(k, n)
    np.testing.assert_array_equal(hist, np.bincount(keys, minlength=16))
    assert fsum[0] == n * 0.5
    assert list(lo_hi) == [keys.min() - 3, keys.max() * 2]
    assert cas[0] == n
    assert "atomic64" not in ck.required_aspects


@pytest.mark.parametrize("dt", [np.int64, np.uint64, np.float64, np.uint32, np.float32])
def test_atomic_operations_by_dtype(run: Any, dt: type) -> None:
    n = 64
    vals = (np.arange(n) % 9 + 1).astype(dt)
    res = np.array([0, 0, 100, 0, 0], dt)
    loaded = np.zeros(n, dt)
    pv, pr, pl = Ptr(vals), Ptr(res), Ptr(loaded)

    def k(i: Any) -> None:
        sycl.atomic_ref(pr, 0, RELAXED, DEVICE).fetch_add(pv[i])
        sycl.atomic_ref(pr, 1, RELAXED, DEVICE).fetch_max(pv[i])
        sycl.atomic_ref(pr, 2, RELAXED, DEVICE).fetch_min(pv[i])
        sycl.atomic_ref(pr, 3, RELAXED, DEVICE).store(pv[3])
        old = sycl.atomic_ref(pr, 4, RELAXED, DEVICE).exchange(pv[5])
        sycl.atomic_ref(pr, 0, RELAXED, DEVICE).fetch_sub(old - old)
        pl[i] = sycl.atomic_ref(pv, i, sycl.memory_order.acquire, DEVICE).load()

    ck = run(k, n)
    np.testing.assert_array_equal(res, np.array([vals.sum(), vals.max(), vals.min(), vals[3],
                                                 vals[5]], dt))
    np.testing.assert_array_equal(loaded, vals)
    assert ("atomic64" in ck.required_aspects) == (np.dtype(dt).itemsize == 8)


def test_integer_bit_atomics(run: Any) -> None:
    bits = np.array([0, -1, 0], np.int64)
    pb = Ptr(bits)

    def k(i: Any) -> None:
        sycl.atomic_ref(pb, 0, RELAXED, DEVICE).fetch_or(np.int64(1) << i)
        sycl.atomic_ref(pb, 1, RELAXED, DEVICE).fetch_and(~(np.int64(1) << i))
        sycl.atomic_ref(pb, 2, RELAXED, DEVICE).fetch_xor(np.int64(3) << i)

    run(k, 40)
    x = 0
    for i in range(40):
        x ^= 3 << i
    assert list(bits) == [(1 << 40) - 1, -(1 << 40), x]


def test_atomic_ref_in_local_space_is_rejected() -> None:
    p = Ptr(np.zeros(4, np.int32))

    def k(i: Any) -> None:
        sycl.atomic_ref(p, i, RELAXED, DEVICE, sycl.access.address_space.local_space).fetch_add(1)

    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_for(k, 1)
    assert f"{__file__}:{k.__code__.co_firstlineno + 1}" in str(info.value)


def test_pointer_passed_to_helpers(device: Any) -> None:
    a = np.arange(12, dtype=F32)
    out = np.zeros(12, F32)
    cnt = np.zeros(1, np.int32)
    pa, po, pc = Ptr(a, readonly=True), Ptr(out), Ptr(cnt)

    def read(p: Any, i: Any) -> Any:
        return p[i] * 2

    def write(p: Any, i: Any, v: Any) -> None:
        p[i] += v
        sycl.atomic_ref(pc, 0, RELAXED, DEVICE).fetch_add(1)  # the helper's own capture

    def k(i: Any) -> None:
        j = i if i < 11 else 0
        write(po, i, read(pa, i) + read(pa + 1, j))

    graph = call_graph(k)
    owner = [g[0] for g in graph].index(write)
    caps, values = make_captures(k)  # the kernel's own: pa, po
    caps += (Capture("pc", "freevar", PointerType(np.dtype(np.int32)), owner=owner),)
    ck = compile_kernel(k, IndexSpace("range", 1), caps, entry_name="k_helpers", helpers=graph,
                        image_format=conftest.TARGET[0], arch=conftest.TARGET[1])
    device.launch(ck, [*values, pc], (12,))
    nxt = np.where(np.arange(12) < 11, np.roll(a, -1), a[1])
    np.testing.assert_array_equal(out, a * 2 + nxt * 2)
    assert cnt[0] == 12


def test_bounds_checked_mode_leaves_pointers_unchecked(device: Any) -> None:
    a = np.arange(10, dtype=np.int32)
    out = np.zeros(8, np.int32)
    acc_out = np.zeros(8, np.int32)
    pa, po, wo = Ptr(a, offset=1), Ptr(out), W(acc_out)

    def k(i: Any) -> None:
        po[i] = pa[i - 1] + pa[i + 1]  # p[-1]: no bounds, as in C++
        sycl.atomic_ref(po, i, RELAXED, DEVICE).fetch_add(1)
        wo[i] = po[i]

    caps, values = make_captures(k)
    ck = compile_kernel(k, IndexSpace("range", 1), caps, entry_name="k_checked",
                        bounds_check=True, image_format=conftest.TARGET[0], arch=conftest.TARGET[1])
    assert ck.bounds_checked
    device.launch(ck, values, (8,))
    want = a[0:8] + a[2:10] + 1
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(acc_out, want)
    assert device.last_error()[0] == 0  # no violation recorded


# ------------------------------------------------------------ read-only pointers
def _readonly_error(fn: Any, offset: int, ndim: int = 1, **kw: Any) -> str:
    with pytest.raises(pysycl.kernel_compile_error) as info:
        if kw:
            compile_kernel(fn, IndexSpace("range", ndim), entry_name="k", **kw)
        else:
            compile_for(fn, ndim)
    err = info.value
    msg = str(err)
    code = fn.__code__
    assert f"{code.co_filename}:{code.co_firstlineno + offset}" in msg, msg
    assert "read-only USM pointer" in msg, msg
    assert isinstance(err, TypeError) and err.code() == pysycl.errc.kernel
    assert "$" not in msg.split("\n")[0], msg
    return msg


def test_store_into_readonly_pointer_names_file_line_and_variable() -> None:
    ro = Ptr(np.zeros(4, F32), readonly=True)

    def k(i: Any) -> None:
        x = 1.0
        ro[i] = x

    msg = _readonly_error(k, 2)
    assert "'ro'" in msg and "accessor" in msg and "lookup table" in msg, msg


def test_readonly_pointer_rejects_augmented_assignment_setitem_and_atomics() -> None:
    ro = Ptr(np.zeros(4, np.int32), readonly=True)

    def aug(i: Any) -> None:
        ro[i] += 1

    _readonly_error(aug, 1)
    lam = lambda i: ro.__setitem__(i, 1)  # noqa: E731
    _readonly_error(lam, 0)

    def atomic(i: Any) -> None:
        v = sycl.atomic_ref(ro, i, RELAXED, DEVICE).load()
        ro[0] = v

    msg = _readonly_error(atomic, 1)
    assert "atomic_ref" in msg, msg


def test_store_into_readonly_pointer_in_helper_names_helper_line() -> None:
    ro = Ptr(np.zeros(4, F32), readonly=True)

    def store(p: Any, i: Any) -> None:
        p[i] = 3.0

    def k(i: Any) -> None:
        store(ro, i)

    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_for(k, 1)
    msg = str(info.value)
    assert "read-only USM pointer 'p'" in msg, msg
    assert f"{__file__}:{store.__code__.co_firstlineno + 1}" in msg, msg


def test_readonly_pointer_loads_compile_and_run(run: Any) -> None:
    a = np.arange(8, dtype=np.uint8)
    a.flags.writeable = False
    out = np.zeros(8, np.uint8)
    pa, po = Ptr(a, readonly=True), Ptr(out)
    run(lambda i: po.__setitem__(i, pa[7 - i]), 8)
    np.testing.assert_array_equal(out, a[::-1])


# ------------------------------------------------------------------------ PTX
def _ptx(fn: Any, caps: Any = None, **kw: Any) -> tuple[str, Any]:
    caps = make_captures(fn)[0] if caps is None else caps
    ck = compile_kernel(fn, IndexSpace("range", 1), caps, entry_name="k_ptr",
                        image_format="ptx", arch="sm_90", **kw)
    assert ck.format == "ptx" and ck.arch == "sm_90"
    text = ck.binary.decode()
    params = [ln.strip() for ln in text.splitlines()
              if "k_ptr_param_" in ln and ln.strip().startswith(".param")]
    # the captures', the range's (one dimension), the error buffer in bounds-checked mode
    assert len(params) == sum(c.type.flat_arg_count() for c in caps) + 1 + ck.bounds_checked
    ptxas_check(ck.binary)
    return text, params


def test_ptx_pointer_is_one_global_parameter() -> None:
    a, out = Ptr(np.zeros(8, F32), readonly=True), Ptr(np.zeros(8, np.float64))
    n = 3

    def k(i: Any) -> None:
        out[i] = a[i] * n + a[i + 1]

    text, params = _ptx(k)  # captures in order a, n, out: pointer, int64, pointer
    assert ".ptr .global" in params[0] and ".ptr .global" in params[2], params
    assert ".ptr" not in params[1], params
    assert "ld.global.b32" in text and "st.global.b64" in text, text
    assert not re.search(r"\b(ld|st)\.(b|f|u|s)\d+", text), text  # no generic-space access


def test_ptx_pointer_atomics_helpers_and_bounds_check() -> None:
    h = Ptr(np.zeros(16, np.int32))
    f = Ptr(np.zeros(2, np.float64))
    acc = RW(np.zeros(8, F32))

    def bump(p: Any, i: Any) -> None:
        sycl.atomic_ref(p, i % 16, RELAXED, DEVICE).fetch_add(1)

    def k(i: Any) -> None:
        bump(h, i)
        sycl.atomic_ref(f, 0, RELAXED, DEVICE, GLOBAL).fetch_add(1.5)
        acc[i] = h[i] + (f + 1)[0]

    text, _ = _ptx(k, bounds_check=True)
    assert "atom.global.add.u32" in text or "red.global.add.u32" in text \
        or "atom.global.add.s32" in text or "red.global.add.s32" in text, text
    assert re.search(r"(atom|red)\.global\.add\.f64", text), text


def test_pointer_capture_type_from_abi() -> None:
    from pysycl_numba.compiler import capture_numba_type
    from pysycl_numba.types import USMPointerType

    t = capture_numba_type(Capture("p", "freevar", PointerType(np.dtype(np.uint16), True)),
                           bounds_check=True)
    assert isinstance(t, USMPointerType) and t.readonly and str(t.dtype) == "uint16"
    assert str(t) == "sycl.usm_pointer<uint16, readonly>"


@pytest.mark.parametrize("body, fragment", [
    ("q = p * 2\n    q[i] = 1.0", "p + k"),
    ("p[i] = len(p)", "len() of a USM pointer"),
    ("p[1.5] = 1.0", "an index must be an integer, not a float64 -- compute it with integers"),
    ("p[i] = 1j", "storing a complex128 through a float32 USM pointer"),
    ("for x in p:\n        p[i] = x", "iterating over a USM pointer"),
])
def test_unsupported_pointer_uses_are_named(body: str, fragment: str) -> None:
    ns: dict[str, Any] = {}
    src = f"def make(p):\n  def k(i):\n    {body}\n  return k\n"
    exec(compile(src, __file__ + ":pointer_uses", "exec"), ns)
    k = ns["make"](Ptr(np.zeros(8, F32)))
    with pytest.raises(pysycl.kernel_compile_error) as info:
        compile_for(k, 1)
    msg = str(info.value)
    assert fragment in msg and ":3" in msg, msg


def _add(a: Any, b: Any) -> Any:
    return a + b


@pytest.mark.parametrize("fmt, arch", [("spirv", ""), ("ptx", "sm_90")])
def test_nd_range_and_reduction_kernels_take_pointers(fmt: str, arch: str) -> None:
    from pysycl._core.abi import ReductionType

    p = Ptr(np.zeros(64, F32))

    def nd(it: Any) -> None:
        g = it.get_global_id(0)
        p[g] = p[g] + it.get_local_id(0)
        it.barrier()

    def red(it: Any, r: Any) -> None:
        r.combine(p[it])

    idx = [IndexSpace("nd_range", 1), IndexSpace("range", 1)]
    for fn, index, reds in ((nd, idx[0], ()),
                            (red, idx[1], ((ReductionType(np.dtype(F32), "custom"), _add),))):
        ck = compile_kernel(fn, index, make_captures(fn)[0], entry_name="k_" + fn.__name__,
                            reductions=reds, image_format=fmt, arch=arch)
        assert ck.format == fmt
        if fmt == "ptx":
            ptxas_check(ck.binary)
