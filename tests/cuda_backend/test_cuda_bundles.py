"""Kernel bundles on the CUDA backend (:mod:`pysycl._backends.cuda.programs`).

The pure half runs on any machine (no driver): NVIDIA OpenCL's build options as JIT
options, what a PTX entry says of its parameters, ``sycl.kernel`` argument packing,
programs refused before the driver is asked. The GPU half (skipped without a CUDA
device, as in CI): a bundle's cubin reloaded from the binary cache in a fresh process,
join of two bundles, specialization constants, ``use_kernel_bundle`` with a 1024-wide
nd_range, and a PTX kernel object launched with ``set_arg`` and local memory.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from bundles._sources import PTX_BROKEN, PTX_KERNELS

import pysycl as sycl
from pysycl._backends.cuda import programs as cp
from pysycl._backends.cuda.launch import pack_native

S = sycl.bundle_state
syclex = sycl.ext.oneapi.experimental
L = syclex.source_language
CUDA = [d for d in sycl.device.get_devices() if d.get_backend() is sycl.backend.ext_oneapi_cuda]
gpu = pytest.mark.skipif(not CUDA, reason="no CUDA device (NVIDIA driver and cuda-bindings: "
                         "pip install pysycl[cuda])")

#: the parameter list LLVM writes for a Python kernel (a struct by value, a local accessor)
LLVM_PTX = b""".version 8.5
.target sm_90
.address_size 64

.visible .entry pysycl_k(
\t.param .u64 .ptr .global .align 4 pysycl_k_param_0,
\t.param .u64 pysycl_k_param_1,
\t.param .align 8 .b8 pysycl_k_param_2[16],
\t.param .u64 .ptr .shared .align 16 pysycl_k_param_3,
\t.param .f64 pysycl_k_param_4,
\t.param .u16 pysycl_k_param_5
)
.reqntid 128, 2, 1
{
\tret;
}
"""


# ------------------------------------------------------------------ pure
def test_build_options_become_jit_options() -> None:
    assert cp.jit_options("") == ()
    assert cp.jit_options("-cl-fast-relaxed-math -w -Werror -cl-mad-enable") == ()
    assert cp.jit_options(["-cl-nv-maxrregcount=32", "-cl-nv-opt-level=2"]) == (
        ("CU_JIT_MAX_REGISTERS", 32), ("CU_JIT_OPTIMIZATION_LEVEL", 2))
    assert cp.jit_options("-nv-maxrregcount=64 -cl-opt-disable -cl-nv-verbose") == (
        ("CU_JIT_LOG_VERBOSE", 1), ("CU_JIT_MAX_REGISTERS", 64),
        ("CU_JIT_OPTIMIZATION_LEVEL", 0))
    for bad in ("-O3", "-cl-nv-arch", "-cl-nv-opt-level=9", "-cl-nv-maxrregcount=lots",
                "--use_fast_math"):
        with pytest.raises(sycl.exception) as ei:
            cp.jit_options(bad)
        assert ei.value.code() == sycl.errc.invalid and bad.split("=")[0] in str(ei.value)


def test_what_ptx_says_of_an_entry() -> None:
    assert cp.entries(LLVM_PTX) == ["pysycl_k"]
    assert cp.entries(PTX_KERNELS.encode()) == ["scale", "fill2d", "wgsum", "one"]
    assert cp.params_of(LLVM_PTX, "pysycl_k") == (
        ("global", "void*"), None, None, ("local", "void*"), ("private", "double"),
        ("private", "short"))
    assert cp.params_of(LLVM_PTX, "missing") is None
    assert cp.reqntid_of(LLVM_PTX, "pysycl_k") == (128, 2, 1)
    assert cp.reqntid_of(PTX_KERNELS.encode(), "wgsum") == (0, 0, 0)
    assert cp.params_of(PTX_KERNELS.encode(), "wgsum") == (
        ("global", "void*"), ("global", "void*"), ("local", "void*"))
    assert cp.is_cubin(b"\x7fELF\x02\x01") and not cp.is_cubin(LLVM_PTX)


def test_programs_refused_before_the_driver() -> None:
    with pytest.raises(sycl.exception) as ei:
        cp.from_binaries(None, [0], [b"neither PTX nor an ELF image"])
    assert ei.value.code() == sycl.errc.build and "neither a cubin nor PTX" in str(ei.value)
    for fn, arg in ((cp.from_il, b"\x03\x02\x23\x07"), (cp.from_source, "__kernel void f(){}")):
        with pytest.raises(sycl.exception) as ei:
            fn(None, arg)
        assert ei.value.code() == sycl.errc.feature_not_supported
    prg = cp.from_binaries(None, [0], [PTX_KERNELS.encode()])
    assert prg.ptx() == PTX_KERNELS.encode() and cp.kernel_names(prg) == cp.entries(prg.ptx())
    cp.compile_program(prg, [0], "-cl-fast-relaxed-math")  # an object: the PTX kept
    assert prg.state == "object" and cp.binaries(prg) == {}
    with pytest.raises(sycl.exception) as ei:
        cp.compile_program(prg, [0], "-cl-nv-no-such")
    assert ei.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as ei:
        cp.compile_program(prg, [1])  # not made for device 1
    assert ei.value.code() == sycl.errc.invalid
    cubin = cp.from_binaries(None, [0], [b"\x7fELF" + bytes(60)])
    with pytest.raises(sycl.exception) as ei:  # a cubin is not relocatable
        cp.link_programs(None, [prg, cubin], [0])
    assert ei.value.code() == sycl.errc.build and "cubin" in str(ei.value)
    other = cp.from_binaries(None, [0], [LLVM_PTX])  # another PTX version and target
    with pytest.raises(sycl.exception) as ei:
        cp.link_programs(None, [prg, other], [0])
    assert ei.value.code() == sycl.errc.build and "different targets" in str(ei.value)


def test_kernel_object_arguments_are_packed() -> None:
    args = [0x7F00_0000_1000, ("local", 100), np.float32(2.5), ("local", 16), np.int8(-3),
            np.bool_(True)]
    buf, offsets, shm = pack_native("k", args, None)
    assert offsets == [0, 8, 16, 24, 32, 40]  # each value 8-byte aligned in the buffer
    raw = buf.tobytes()
    assert int.from_bytes(raw[0:8], "little") == 0x7F00_0000_1000
    assert int.from_bytes(raw[8:16], "little") == 0  # the first local block's offset
    assert np.frombuffer(raw[16:20], np.float32)[0] == 2.5
    assert int.from_bytes(raw[24:32], "little") == 112  # 100 rounded up to 16
    assert raw[32] == 0xFD and raw[40] == 1
    assert shm == 128
    pack_native("k", args, [8, 8, 4, 8, 1, 1])  # the kernel's parameter sizes: they fit
    with pytest.raises(sycl.exception) as ei:
        pack_native("k", [np.int64(3)], [4])
    assert ei.value.code() == sycl.errc.kernel_argument
    assert "argument 0 (a numpy int64, 8 bytes) does not fit its parameter 0 (4 bytes)" \
        in str(ei.value)
    with pytest.raises(sycl.exception) as ei:
        pack_native("k", [np.int32(1), "two"], None)
    assert ei.value.code() == sycl.errc.kernel_argument and "argument 1" in str(ei.value)


# ------------------------------------------------------------------ GPU
@pytest.fixture
def cq() -> sycl.queue:
    return sycl.queue(CUDA[0])


def _fac2(x):
    def k(i):
        x[i] = x[i] * 2 + i[0]
    return k


def _fac3(x):
    def k(i):
        x[i] = x[i] * 3 + i[0]
    return k


FAC = {2: _fac2, 3: _fac3}


@pytest.fixture(scope="module")
def kids() -> dict[int, sycl.kernel_id]:
    """The two kernels, declared (on a GPU run only: declared kernels join every bundle)."""
    rw = sycl.ext.accessor_type(np.float32, 1, sycl.access_mode.read_write)
    return {n: sycl.ext.declare_kernel(f, kernel_name=f"cuda_bundles.fac{n}",
                                       index_space=sycl.range(1), captures={"x": rw})
            for n, f in FAC.items()}


def _run_fac(q: sycl.queue, n: int, kb: sycl.kernel_bundle | None) -> list[float]:
    x = np.ones(8, np.float32)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            if kb is not None:
                h.use_kernel_bundle(kb)
            h.parallel_for(sycl.range(8), FAC[n](X.get_access(h, sycl.access_mode.read_write)))
        q.submit(cg)
    return x.tolist()


@gpu
def test_a_cuda_device_compiles_and_links_ptx_only(cq: sycl.queue) -> None:
    d = cq.get_device()
    assert d.has(sycl.aspect.online_compiler) and d.has(sycl.aspect.online_linker)
    assert d.get_info(sycl.info.device.is_compiler_available)
    assert d.ext_oneapi_can_compile(L.ext_pysycl_ptx)
    assert not d.ext_oneapi_can_compile(L.opencl) and not d.ext_oneapi_can_compile(L.spirv)
    with pytest.raises(sycl.exception) as ei:
        syclex.create_kernel_bundle_from_source(sycl.context(d), L.opencl,
                                                "__kernel void f(__global int* x) {}")
    assert ei.value.code() == sycl.errc.invalid


@gpu
def test_compile_link_build_and_the_kernels_cubin(cq: sycl.queue, kids: dict) -> None:
    ctx, dev = cq.get_context(), cq.get_device()
    kb_in = sycl.get_kernel_bundle(ctx, list(kids.values()), state=S.input)
    assert kb_in.get_backend() is sycl.backend.ext_oneapi_cuda
    assert {i.ext_pysycl_format() for i in kb_in} == {"ptx"}
    obj = sycl.compile(kb_in)
    assert obj.get_state() is S.object and len(list(obj)) == 2
    exe = sycl.link(obj)
    (img,) = exe.images  # the two PTX modules merged, built once
    (prg,) = {id(p): p for p in img.programs.values()}.values()
    cubin = cp.binaries(prg)[cp.handle(dev.native)]
    assert cp.is_cubin(cubin)
    assert _run_fac(cq, 2, exe) == [float(1 * 2 + i) for i in range(8)]
    assert _run_fac(cq, 3, exe) == [float(1 * 3 + i) for i in range(8)]
    k = exe.get_kernel(kids[2])
    assert k.get_backend() is sycl.backend.ext_oneapi_cuda
    kd = sycl.info.kernel_device_specific
    assert k.get_info(sycl.info.kernel.num_args) == 3 + 1  # base, offset, range; the range
    assert k.get_info(kd.preferred_work_group_size_multiple, dev) == 32
    assert k.get_info(kd.work_group_size, dev) == 1024
    cwg = k.get_info(kd.compile_work_group_size, dev)  # no .reqntid in the PTX
    assert [cwg[i] for i in range(3)] == [0, 0, 0]
    opts = sycl.build(kb_in, properties=[syclex.build_options("-cl-nv-maxrregcount=32")])
    assert _run_fac(cq, 3, opts)[7] == 3.0 + 7
    with pytest.raises(sycl.exception) as ei:
        sycl.build(kb_in, properties=[syclex.build_options("-cl-nv-no-such-option")])
    assert ei.value.code() == sycl.errc.invalid


@gpu
def test_join_of_two_bundles(cq: sycl.queue, kids: dict) -> None:
    ctx = cq.get_context()
    a = sycl.get_kernel_bundle(ctx, [kids[2]], state=S.input)
    b = sycl.get_kernel_bundle(ctx, [kids[3]], state=S.input)
    j = sycl.join([a, b])
    assert j.has_kernel(kids[2]) and j.has_kernel(kids[3]) and len(list(j)) == 2
    exe = sycl.build(j)
    assert len(exe.images) == 1  # one executable image: the same (no) aspects
    assert _run_fac(cq, 2, exe)[5] == 2.0 + 5 and _run_fac(cq, 3, exe)[5] == 3.0 + 5
    ea = sycl.get_kernel_bundle(ctx, [kids[2]], state=S.executable)
    eb = sycl.get_kernel_bundle(ctx, [kids[3]], state=S.executable)
    both = sycl.join([ea, eb])
    assert both.get_state() is S.executable and len(both.images) == 2
    assert _run_fac(cq, 2, both)[0] == 2.0 and _run_fac(cq, 3, both)[0] == 3.0


SCALE = sycl.specialization_id(np.int32, 3)


def _run_spec(q: sycl.queue, kb: sycl.kernel_bundle | None) -> np.ndarray:
    out = np.zeros(16, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            acc = O.get_access(h, sycl.access_mode.write)
            if kb is not None:
                h.use_kernel_bundle(kb)
            h.parallel_for(sycl.range(16), lambda i, kh: acc.__setitem__(
                i, kh.get_specialization_constant(SCALE) * i[0]), kernel_name="cuda_bundles.spec")
        q.submit(cg)
    return out


@gpu
def test_specialization_constants_in_a_bundle(cq: sycl.queue) -> None:
    assert _run_spec(cq, None).tolist() == [3 * i for i in range(16)]  # registers the kernel
    kb = sycl.get_kernel_bundle(cq.get_context(), kernel_name="cuda_bundles.spec",
                                state=S.input)
    assert kb.has_specialization_constant(SCALE)
    assert not kb.native_specialization_constant()  # PTX: the .const initializers
    kb.set_specialization_constant(SCALE, 7)
    assert _run_spec(cq, sycl.build(kb)).tolist() == [7 * i for i in range(16)]
    kb.set_specialization_constant(SCALE, -2)
    assert _run_spec(cq, sycl.link(sycl.compile(kb))).tolist() == [-2 * i for i in range(16)]


def _reverse_groups(q: sycl.queue, x: np.ndarray, wg: int,
                    kb: sycl.kernel_bundle | None) -> None:
    """Reverse each work-group's part of ``x`` through local memory (an nd_range kernel)."""
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            if kb is not None:
                h.use_kernel_bundle(kb)
            a = X.get_access(h, sycl.access_mode.read_write)
            tmp = sycl.local_accessor(np.int32, sycl.range(wg), h)

            def k(it):
                l = it.get_local_id(0)
                tmp[l] = a[it.get_global_id(0)]
                it.barrier()
                a[it.get_global_id(0)] = tmp[wg - 1 - l]
            h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(wg)), k,
                           kernel_name="cuda_bundles.reverse")
        q.submit(cg)


@gpu
def test_use_kernel_bundle_with_a_1024_wide_nd_range(cq: sycl.queue) -> None:
    n, wg = 4096, 1024
    want = np.arange(n, dtype=np.int32).reshape(-1, wg)[:, ::-1].reshape(-1)
    x = np.arange(n, dtype=np.int32)
    _reverse_groups(cq, x, wg, None)  # submitted once: the kernel has an id
    assert np.array_equal(x, want)
    exe = sycl.get_kernel_bundle(cq.get_context(), kernel_name="cuda_bundles.reverse",
                                 state=S.executable)
    k = exe.get_kernel(sycl.get_kernel_id("cuda_bundles.reverse"))
    assert k.get_info(sycl.info.kernel_device_specific.work_group_size, cq.get_device()) == 1024
    sycl.ext.reset_kernel_cache_stats()
    x = np.arange(n, dtype=np.int32)
    _reverse_groups(cq, x, wg, exe)  # the bundle's kernel, in blocks of 1024
    assert np.array_equal(x, want)
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] == 0 and s["cl_builds"] == 0  # nothing compiled or built


@gpu
def test_a_ptx_kernel_object_with_set_arg_and_local_memory(cq: sycl.queue) -> None:
    exe = syclex.build(syclex.create_kernel_bundle_from_source(cq.get_context(),
                                                               L.ext_pysycl_ptx, PTX_KERNELS))
    assert sorted(n for n in ("scale", "fill2d", "wgsum", "one") if exe.ext_oneapi_has_kernel(n)) \
        == ["fill2d", "one", "scale", "wgsum"]
    wgsum = exe.ext_oneapi_get_kernel("wgsum")
    assert wgsum.get_info(sycl.info.kernel.num_args) == 3
    for n, wg in ((64, 16), (4096, 1024)):  # a 1024-wide work-group: 4 KiB of local memory
        data = np.arange(n, dtype=np.int32)
        sums = np.zeros(n // wg, np.int32)
        with sycl.buffer(data) as D, sycl.buffer(sums) as Sb:
            def cg(h: sycl.handler, wg: int = wg, n: int = n, D=D, Sb=Sb) -> None:
                tmp = sycl.local_accessor(np.int32, sycl.range(wg), h)
                h.set_args(D.get_access(h, sycl.access_mode.read),
                           Sb.get_access(h, sycl.access_mode.write), tmp)
                h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), wgsum)
            cq.submit(cg)
        assert sums.tolist() == [int(data[i * wg:(i + 1) * wg].sum()) for i in range(n // wg)]
    out = np.zeros((3, 5), np.int32)
    one = np.zeros(1, np.int64)
    x = np.arange(1000, dtype=np.float32)  # a range no 256-block divides: blocks of 250
    with sycl.buffer(out) as O, sycl.buffer(one) as One, sycl.buffer(x) as X:
        cq.submit(lambda h: (h.set_args(O.get_access(h, sycl.access_mode.write), 5),
                             h.parallel_for(sycl.range(3, 5), exe.ext_oneapi_get_kernel(
                                 "fill2d"))))
        cq.submit(lambda h: (h.set_args(One.get_access(h, sycl.access_mode.write),
                                        np.int64(41)),
                             h.single_task(exe.ext_oneapi_get_kernel("one"))))
        cq.submit(lambda h: (h.set_args(X.get_access(h, sycl.access_mode.read_write),
                                        np.float32(2)),
                             h.parallel_for(sycl.range(1000), exe.ext_oneapi_get_kernel(
                                 "scale"))))
    rows, cols = np.indices((3, 5))
    assert np.array_equal(out, rows * 100 + cols)
    assert one[0] == 42 and np.array_equal(x, 2 * np.arange(1000, dtype=np.float32))
    p = sycl.malloc_device(16, cq, dtype=np.float32)  # a USM pointer argument
    try:
        cq.fill(p, np.float32(3), 16).wait()
        cq.submit(lambda h: (h.set_args(p, np.float32(2)),
                             h.parallel_for(sycl.range(16), exe.ext_oneapi_get_kernel(
                                 "scale")))).wait()
        host = np.zeros(16, np.float32)
        cq.memcpy(host, p, 64).wait()
        assert (host == 6).all()
    finally:
        sycl.free(p, cq)
    with pytest.raises(sycl.exception) as ei:  # 1025 work-items: more than a block takes
        with sycl.buffer(np.zeros(2050, np.int32)) as D, sycl.buffer(sums) as Sb:
            def big(h: sycl.handler) -> None:
                h.set_args(D.get_access(h, sycl.access_mode.read),
                           Sb.get_access(h, sycl.access_mode.write),
                           sycl.local_accessor(np.int32, sycl.range(1025), h))
                h.parallel_for(sycl.nd_range(sycl.range(2050), sycl.range(1025)), wgsum)
            cq.submit(big)
    assert ei.value.code() == sycl.errc.nd_range


@gpu
def test_a_ptx_kernel_object_with_local_memory_past_48_kib(cq: sycl.queue) -> None:
    """A ``sycl.kernel`` launch (``set_arg``) may take up to ``info.device.local_mem_size``
    (the opt-in maximum) of local memory; one element more is ``errc.nd_range``."""
    top = cq.get_device().get_info(sycl.info.device.local_mem_size)
    if top <= 100 * 1024:
        pytest.skip(f"this GPU has {top} bytes of shared memory a block")
    exe = syclex.build(syclex.create_kernel_bundle_from_source(cq.get_context(),
                                                               L.ext_pysycl_ptx, PTX_KERNELS))
    wgsum = exe.ext_oneapi_get_kernel("wgsum")
    n, wg = 4096, 1024
    data = np.arange(n, dtype=np.int32)

    def run(elems: int) -> np.ndarray:
        sums = np.zeros(n // wg, np.int32)
        with sycl.buffer(data) as D, sycl.buffer(sums) as Sb:
            def cg(h: sycl.handler) -> None:  # the kernel uses the first wg elements
                h.set_args(D.get_access(h, sycl.access_mode.read),
                           Sb.get_access(h, sycl.access_mode.write),
                           sycl.local_accessor(np.int32, sycl.range(elems), h))
                h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), wgsum)
            cq.submit(cg)
        return sums

    want = data.reshape(-1, wg).sum(axis=1)
    for elems in (25600, wg, top // 4):  # 100 KiB, 4 KiB, all of it
        assert run(elems).tolist() == want.tolist(), elems
    with pytest.raises(sycl.exception) as ei:
        run(top // 4 + 1)
    assert ei.value.code() == sycl.errc.nd_range and "local memory" in str(ei.value)


@gpu
def test_ptx_the_jit_refuses_is_a_build_error_with_its_log(cq: sycl.queue) -> None:
    kb = syclex.create_kernel_bundle_from_source(cq.get_context(), L.ext_pysycl_ptx,
                                                 PTX_BROKEN)
    with pytest.raises(sycl.exception) as ei:
        syclex.build(kb)
    assert ei.value.code() == sycl.errc.build and "undeclared_name" in str(ei.value)
    log: list[str] = []
    syclex.build(syclex.create_kernel_bundle_from_source(cq.get_context(), L.ext_pysycl_ptx,
                                                         PTX_KERNELS),
                 properties=[syclex.save_log(log)])
    assert len(log) == 1 and log[0]


FRESH = textwrap.dedent("""
    import json, sys
    import numpy as np
    import pysycl as sycl

    dev = next(d for d in sycl.device.get_devices()
               if d.get_backend() is sycl.backend.ext_oneapi_cuda)
    from pysycl._backends.cuda import programs as cp  # once the driver is loaded
    def fac(x):
        def k(i):
            x[i] = x[i] * 5 + i[0]
        return k
    kid = sycl.ext.declare_kernel(fac, kernel_name="fresh.fac", index_space=sycl.range(1),
        captures={"x": sycl.ext.accessor_type(np.float32, 1, "read_write")})
    q = sycl.queue(dev)
    kb = sycl.build(sycl.get_kernel_bundle(q.get_context(), [kid], state=sycl.bundle_state.input))
    (img,) = kb.images
    (prg,) = {id(p): p for p in img.programs.values()}.values()
    x = np.ones(4, np.float32)
    with sycl.buffer(x) as X:
        def cg(h):
            h.use_kernel_bundle(kb)
            h.parallel_for(sycl.range(4), fac(X.get_access(h, sycl.access_mode.read_write)))
        q.submit(cg)
    out = sycl.ext.kernel_cache_stats()
    out["numba_imported"] = "numba" in sys.modules
    out["from_cubin"] = prg.ptx() is None
    out["cubin"] = cp.is_cubin(cp.binaries(prg)[cp.handle(dev.native)])
    out["result"] = x.tolist()
    print(json.dumps(out))
""")


@gpu
def test_a_bundles_cubin_is_reloaded_in_a_fresh_process(tmp_path: Path) -> None:
    env = dict(os.environ, PYSYCL_CACHE_DIR=str(tmp_path))
    runs = []
    for _ in range(2):
        r = subprocess.run([sys.executable, "-c", FRESH], env=env, capture_output=True,
                           text=True, timeout=300, check=False)
        assert r.returncode == 0, r.stderr[-3000:]
        runs.append(json.loads(r.stdout.strip().splitlines()[-1]))
    cold, warm = runs
    want = [5.0 + i for i in range(4)]
    assert cold["result"] == warm["result"] == want
    assert cold["binary_writes"] == 1 and cold["cl_compiles"] == 1 and cold["cubin"]
    assert not cold["from_cubin"]
    # warm: the executable's cubin from the cache, loaded as it is: no Numba, no JIT
    assert warm["binary_hits"] == 1 and warm["cl_compiles"] == 0 and warm["compiles"] == 0
    assert warm["from_cubin"] and warm["cubin"] and not warm["numba_imported"]
