"""Specialization constants: kernel_handler.get_specialization_constant compiled to SPIR-V
OpSpecConstant, values from the handler or a kernel bundle, native and emulated, never
re-running Numba; every throw."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import pysycl as sycl
from pysycl._kernels import specconst as _specconst
from pysycl._kernels.cache import kernels as _kernel_cache

S = sycl.bundle_state
SCALE = sycl.specialization_id(np.int32, 3)
OFFSET = sycl.specialization_id(np.float32, 0.5)
WIDE = sycl.specialization_id(np.float64, 0.25)
FLAG = sycl.specialization_id(bool, True)


def _stats() -> dict[str, int]:
    return sycl.ext.kernel_cache_stats()


def _run(q, n, vals, *, kb=None, name="spec.kern"):
    """out[i] = SCALE * i + OFFSET (+ WIDE when FLAG) with handler values ``vals``."""
    out = np.zeros(n, np.float64)
    buf = sycl.buffer(out)

    def cg(h):
        acc = buf.get_access(h, sycl.access_mode.write)
        if kb is not None:
            h.use_kernel_bundle(kb)
        for sid, v in vals.items():
            h.set_specialization_constant(sid, v)

        def kern(i, kh):
            x = kh.get_specialization_constant(SCALE) * i[0] + kh.get_specialization_constant(OFFSET)
            if kh.get_specialization_constant(FLAG):
                x += kh.get_specialization_constant(WIDE)
            acc[i] = x

        h.parallel_for(sycl.range(n), kern, kernel_name=name)

    q.submit(cg).wait()
    with buf.get_host_access() as h:
        return np.array(h)


def _expect(n, scale=3, offset=0.5, wide=0.25, flag=True):
    return np.arange(n) * scale + np.float32(offset) + (wide if flag else 0.0)


@pytest.fixture(params=["native", "emulated"])
def mode(request, monkeypatch):
    """Run a test with native spec constants, then with the emulation forced."""
    monkeypatch.setattr(_specconst, "_force_emulation", request.param == "emulated")
    return request.param


def test_handler_values_change_results_without_recompiling(kq, mode):
    n = 16
    _run(kq, n, {})
    before = _stats()
    np.testing.assert_allclose(_run(kq, n, {}), _expect(n))
    np.testing.assert_allclose(_run(kq, n, {SCALE: 7}), _expect(n, scale=7))
    np.testing.assert_allclose(_run(kq, n, {OFFSET: -2, FLAG: False}),
                               _expect(n, offset=-2, flag=False))
    np.testing.assert_allclose(_run(kq, n, {WIDE: 1e10, SCALE: -1}),
                               _expect(n, scale=-1, wide=1e10))
    np.testing.assert_allclose(_run(kq, n, {SCALE: 7}), _expect(n, scale=7))
    after = _stats()
    assert after["compiles"] == before["compiles"]  # Numba never ran again
    assert after["disk_hits"] == before["disk_hits"]
    # one OpenCL build per new set of values; the repeated set is a memory hit
    assert after["cl_builds"] - before["cl_builds"] <= 3


def test_first_use_compiles_once(kq):
    sid = sycl.specialization_id(np.int32, 1)
    out = np.zeros(4, np.int32)
    buf = sycl.buffer(out)
    sycl.ext.reset_kernel_cache_stats()
    for v in (1, 2, 3):
        def cg(h, v=v):
            a = buf.get_access(h, sycl.access_mode.write)
            h.set_specialization_constant(sid, v)
            h.parallel_for(4, lambda i, kh: a.__setitem__(i, kh.get_specialization_constant(sid)))

        kq.submit(cg).wait()
        with buf.get_host_access() as h:
            assert list(h) == [v] * 4
    s = _stats()
    assert s["compiles"] + s["disk_hits"] == 1
    assert s["cl_builds"] == 3


@pytest.mark.parametrize("dtype,default,value", [
    (np.int32, -5, 123456), (np.int64, 1 << 40, -(1 << 50)), (np.uint16, 7, 65535),
    (np.uint8, 1, 255), (np.float32, 1.5, -0.125), (np.float64, 1e-300, 1e300),
    (bool, False, True),
])
def test_dtypes_default_and_value(kq, mode, dtype, default, value):
    sid = sycl.specialization_id(dtype, default)
    dt = np.dtype(dtype)
    store = np.uint8 if dt == np.bool_ else dt
    out = np.zeros(2, store)
    buf = sycl.buffer(out)

    def go(vals):
        def cg(h):
            a = buf.get_access(h, sycl.access_mode.write)
            for k, v in vals.items():
                h.set_specialization_constant(k, v)
            if dt == np.bool_:
                h.single_task(lambda kh: a.__setitem__(0, 1 if kh.get_specialization_constant(sid)
                                                      else 2))
            else:
                h.single_task(lambda kh: a.__setitem__(0, kh.get_specialization_constant(sid)))

        kq.submit(cg).wait()
        with buf.get_host_access() as h:
            return h[0]

    want = (lambda v: 1 if v else 2) if dt == np.bool_ else (lambda v: dt.type(v))
    assert go({}) == want(default)
    assert go({sid: value}) == want(value)


def test_nd_range_kernel_with_kernel_handler(kq):
    sid = sycl.specialization_id(np.int32, 10)
    out = np.zeros(8, np.int32)
    buf = sycl.buffer(out)

    def cg(h):
        a = buf.get_access(h, sycl.access_mode.write)
        h.set_specialization_constant(sid, 4)
        h.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)),
                       lambda it, kh: a.__setitem__(it.get_global_id(0),
                                                    kh.get_specialization_constant(sid)
                                                    + it.get_local_id(0)))

    kq.submit(cg).wait()
    with buf.get_host_access() as h:
        assert list(h) == [4, 5, 6, 7, 4, 5, 6, 7]


def test_spirv_has_spec_constants_and_validates(kq, tmp_path):
    if not kq.get_device().has(sycl.aspect.ext_pysycl_spirv):
        pytest.skip("PTX images: tests/compiler/test_ptx*.py check their .const globals")
    _run(kq, 4, {}, name="spec.kern")
    ks = [k for k in _kernel_cache.memory.values()
          if {"SCALE", "OFFSET", "FLAG", "WIDE"} <= {c.name for c in k.compiled.captures}]
    assert ks
    il = ks[0].compiled.binary
    patched = _specconst.patch_spirv(il, _specconst.values_for(
        [SCALE, OFFSET, FLAG, WIDE], {SCALE: np.int32(-9), FLAG: np.bool_(False)}))
    if not shutil.which("spirv-dis"):
        pytest.skip("spirv-dis not installed")
    for data, want in ((il, ("OpSpecConstant %uint 3", "OpSpecConstantTrue")),
                       (patched, ("OpSpecConstant %uint 4294967287", "OpSpecConstantFalse"))):
        f = tmp_path / "k.spv"
        f.write_bytes(data)
        text = subprocess.run(["spirv-dis", str(f)], capture_output=True, text=True,
                              check=True).stdout
        assert text.count("SpecId") == 4
        for w in want:
            assert w in text
        if shutil.which("spirv-val"):
            subprocess.run(["spirv-val", "--target-env", "opencl2.2", str(f)], check=True)


# -------------------------------------------------------------------- bundles
def test_bundle_set_in_input_state_then_build(kq, mode):
    ctx = kq.get_context()
    n = 8
    _run(kq, n, {}, name="spec.kern")  # registers the kernel (met at a submit)
    kb = sycl.get_kernel_bundle(ctx, kernel_name="spec.kern", state=S.input)
    assert kb.contains_specialization_constants()
    assert kb.has_specialization_constant(SCALE) and kb.has_specialization_constant(FLAG)
    assert not kb.has_specialization_constant(sycl.specialization_id(np.int32, 3))
    # PTX has no specialization constants: always emulated (the .const initializers).
    assert kb.native_specialization_constant() == (
        mode == "native" and kq.get_device().has(sycl.aspect.ext_pysycl_spirv))
    kb.set_specialization_constant(SCALE, 5)
    kb.set_specialization_constant(FLAG, False)
    before = _stats()
    exe = sycl.build(kb)
    assert exe.get_specialization_constant(SCALE) == 5
    assert exe.contains_specialization_constants()
    assert exe.native_specialization_constant() == (
        mode == "native" and kq.get_device().has(sycl.aspect.ext_pysycl_spirv))
    np.testing.assert_allclose(_run(kq, n, {}, kb=exe, name="spec.kern"),
                               _expect(n, scale=5, flag=False))
    # an executable bundle with default values (spec: get_kernel_bundle(executable))
    exe_default = sycl.get_kernel_bundle(ctx, kernel_name="spec.kern", state=S.executable)
    np.testing.assert_allclose(_run(kq, n, {}, kb=exe_default, name="spec.kern"),
                               _expect(n))
    # compile + link carry the values too
    kb.set_specialization_constant(OFFSET, 4)
    linked = sycl.link(sycl.compile(kb))
    np.testing.assert_allclose(_run(kq, n, {}, kb=linked, name="spec.kern"),
                               _expect(n, scale=5, offset=4, flag=False))
    assert _stats()["compiles"] == before["compiles"]


def test_bundles_without_spec_constants_report_none(kctx, declared):
    kb = sycl.get_kernel_bundle(kctx, [declared["vadd"]], state=S.input)
    assert not kb.contains_specialization_constants()
    assert not kb.native_specialization_constant()
    assert not kb.has_specialization_constant(SCALE)


def test_native_reporting_follows_the_device(kq):
    dev = kq.get_device()
    if dev.get_backend() is sycl.backend.opencl:
        major, minor = (int(x) for x in dev._cl.version.split()[1].split(".")[:2])
        assert _specconst.is_native(dev) == ((major, minor) >= (2, 2)
                                             and dev.has(sycl.aspect.ext_pysycl_spirv))
    else:  # a CUDA device: PTX has no specialization constants
        assert not _specconst.is_native(dev)
    for d in sycl.device.get_devices():
        if not d.has(sycl.aspect.ext_pysycl_spirv):
            assert not _specconst.is_native(d)  # no SPIR-V: no clSetProgramSpecializationConstant


# --------------------------------------------------------------------- errors
def test_handler_set_after_use_kernel_bundle_is_invalid(kq):
    _run(kq, 4, {}, name="spec.kern")
    exe = sycl.get_kernel_bundle(kq.get_context(), kernel_name="spec.kern", state=S.executable)

    def cg(h):
        h.use_kernel_bundle(exe)
        h.set_specialization_constant(SCALE, 1)

    with pytest.raises(sycl.exception) as ei:
        kq.submit(cg)
    assert ei.value.code() == sycl.errc.invalid

    def cg2(h):
        h.use_kernel_bundle(exe)
        h.get_specialization_constant(SCALE)

    with pytest.raises(sycl.exception) as ei:
        kq.submit(cg2)
    assert ei.value.code() == sycl.errc.invalid

    def cg3(h):
        h.set_specialization_constant(SCALE, 1)
        h.use_kernel_bundle(exe)

    with pytest.raises(sycl.exception) as ei:
        kq.submit(cg3)
    assert ei.value.code() == sycl.errc.invalid


def test_handler_get_specialization_constant(kq):
    seen = []

    def cg(h):
        seen.append(h.get_specialization_constant(SCALE))
        h.set_specialization_constant(SCALE, 11)
        seen.append(h.get_specialization_constant(SCALE))
        h.single_task(lambda: None)

    kq.submit(cg).wait()
    assert seen == [3, 11]


def test_type_errors():
    with pytest.raises(TypeError, match="specialization_id"):
        sycl.specialization_id(np.complex64, 0)
    with pytest.raises(TypeError, match="bad value"):
        sycl.specialization_id(np.int32, "x")
    with pytest.raises(TypeError, match="no public constructor"):
        sycl.kernel_handler()


def test_bundle_set_on_non_input_bundle(kq):
    _run(kq, 4, {}, name="spec.kern")
    exe = sycl.get_kernel_bundle(kq.get_context(), kernel_name="spec.kern", state=S.executable)
    with pytest.raises(TypeError, match=r"bundle_state\.input"):  # ill formed in C++
        exe.set_specialization_constant(SCALE, 1)
    obj = sycl.get_kernel_bundle(kq.get_context(), kernel_name="spec.kern", state=S.object)
    with pytest.raises(TypeError, match=r"bundle_state\.input"):
        obj.set_specialization_constant(SCALE, 1)
    with pytest.raises(TypeError, match="specialization_id"):
        exe.has_specialization_constant(3)


def test_handler_set_errors(kq):
    def bad_id(h):
        h.set_specialization_constant("SCALE", 1)

    with pytest.raises(TypeError, match="specialization_id"):
        kq.submit(bad_id)

    def bad_value(h):
        h.set_specialization_constant(SCALE, "many")

    with pytest.raises(TypeError, match="bad value"):
        kq.submit(bad_value)


def test_get_specialization_constant_of_a_value_names_the_line(kq):
    out = np.zeros(1, np.int32)
    buf = sycl.buffer(out)
    k = 3

    def cg(h):
        a = buf.get_access(h, sycl.access_mode.write)
        h.single_task(lambda kh: a.__setitem__(0, kh.get_specialization_constant(k)))

    with pytest.raises(sycl.kernel_compile_error) as ei:
        kq.submit(cg)
    assert "test_spec_constants.py:" in str(ei.value)
    assert "specialization_id" in str(ei.value)


def test_too_many_parameters_still_rejected(kq):
    with pytest.raises(sycl.exception) as ei:
        kq.submit(lambda h: h.single_task(lambda kh, extra: None))
    assert ei.value.code() == sycl.errc.invalid
    assert "kernel_handler" in str(ei.value)
