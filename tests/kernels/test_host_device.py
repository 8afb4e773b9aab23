"""The host_debuggable device: selection, data path, and kernels run in the interpreter.

The kernel tests that double as an oracle (the same test on the SPIR-V device and
on this one) use the ``any_kernel_queue`` fixture in the other test modules; this
module tests what is particular to the interpreter device.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl
from pysycl._backends.opencl import discovery as _disc
from pysycl._backends.opencl import exec as _clexec

HOST = sycl.aspect.host_debuggable
MO, MS = sycl.memory_order, sycl.memory_scope


# ------------------------------------------------------------------ device
def test_device_platform_and_aspects(host_device: sycl.device) -> None:
    d = host_device
    assert d.has(HOST) and d.has(sycl.aspect.emulated) and d.has(sycl.aspect.custom)
    for a in (sycl.aspect.fp16, sycl.aspect.fp64, sycl.aspect.atomic64):
        assert d.has(a)
    for a in (sycl.aspect.cpu, sycl.aspect.gpu, sycl.aspect.ext_pysycl_spirv,
              sycl.aspect.queue_profiling, sycl.aspect.online_compiler):
        assert not d.has(a)
    assert d.get_info(sycl.info.device.device_type) is sycl.info.device_type.custom
    assert d.get_backend() is sycl.backend.ext_pysycl_host
    p = d.get_platform()
    assert p.get_info(sycl.info.platform.name) == "pysycl host interpreter"
    assert p.get_backend() is sycl.backend.ext_pysycl_host
    assert p in sycl.platform.get_platforms() and p.get_devices() == [d]
    assert d in sycl.device.get_devices() and d in sycl.device.get_devices(
        sycl.info.device_type.custom)
    assert d.get_info(sycl.info.device.aspects) == [
        sycl.aspect.custom, sycl.aspect.emulated, sycl.aspect.host_debuggable,
        sycl.aspect.fp16, sycl.aspect.fp64, sycl.aspect.atomic64,
        sycl.aspect.usm_device_allocations, sycl.aspect.usm_host_allocations,
        sycl.aspect.usm_atomic_host_allocations, sycl.aspect.usm_shared_allocations,
        sycl.aspect.usm_atomic_shared_allocations, sycl.aspect.usm_system_allocations]
    for desc in sycl.info.device:  # every descriptor answers (or raises the spec's errc)
        if desc is sycl.info.device.parent_device:
            with pytest.raises(sycl.exception) as e:
                d.get_info(desc)
            assert e.value.code() == sycl.errc.invalid
        else:
            d.get_info(desc)
    assert d.get_info(sycl.info.device.max_work_group_size) == 256
    with pytest.raises(sycl.exception) as e:
        d.create_sub_devices(sycl.info.partition_property.partition_equally, 2)
    assert e.value.code() == sycl.errc.feature_not_supported
    assert "ext_pysycl_host" in repr(d) and "ext_pysycl_host" in repr(p)


def test_selection(host_device: sycl.device) -> None:
    assert sycl.device() != host_device
    assert sycl.default_selector_v(host_device) < 0
    for sel in (sycl.cpu_selector_v, sycl.gpu_selector_v, sycl.accelerator_selector_v):
        assert sel(host_device) < 0
    assert sycl.device(sycl.aspect_selector(HOST)) is host_device
    assert sycl.device(sycl.aspect_selector([HOST], [sycl.aspect.cpu])) is host_device
    assert sycl.device(sycl.aspect_selector([sycl.aspect.fp64], [HOST])) != host_device
    assert sycl.queue(sycl.aspect_selector(HOST)).get_device() is host_device


def test_device_filter_hides_it(monkeypatch: pytest.MonkeyPatch, host_device: sycl.device
                                ) -> None:
    monkeypatch.setenv("PYSYCL_DEVICE_FILTER", "intel")
    assert host_device not in sycl.device.get_devices()
    with pytest.raises(sycl.exception) as e:
        sycl.device(sycl.aspect_selector(HOST))
    assert e.value.code() == sycl.errc.runtime
    monkeypatch.setenv("PYSYCL_DEVICE_FILTER", "host interpreter")
    assert sycl.device.get_devices() == [host_device]


def test_pysycl_ls_shows_it() -> None:
    r = subprocess.run([sys.executable, "-m", "pysycl"], capture_output=True, text=True,
                       check=True)
    assert "[ext_pysycl_host:custom][ext_pysycl_host:0] pysycl host interpreter" in r.stdout
    assert "host_debuggable" in r.stdout


def test_context_queue_event_without_opencl(monkeypatch: pytest.MonkeyPatch,
                                            host_device: sycl.device) -> None:
    """Nothing calls OpenCL for the host device: queue, buffers, kernels, commands, events."""
    def forbidden(*a: object, **k: object) -> None:
        raise AssertionError("OpenCL called for the host device")

    for mod in (_clexec, _disc):
        for name in dir(mod):
            if not name.startswith("_") and callable(getattr(mod, name)) and name not in (
                    "platforms_and_devices", "handle", "translate", "translate_cl_error",
                    "device_info", "extensions", "il_version", "platform_info", "cl",
                    "default_devices", "usm_capabilities", "sub_group_sizes") \
                    and not isinstance(getattr(mod, name), type):
                monkeypatch.setattr(mod, name, forbidden)
    ctx = sycl.context(host_device)
    assert ctx.get_backend() is sycl.backend.ext_pysycl_host and ctx != sycl.context(host_device)
    assert ctx.get_platform() is host_device.get_platform()
    q = sycl.queue(ctx, host_device)
    a = np.arange(8, dtype=np.int32)
    b = np.zeros(8, np.int32)
    with sycl.buffer(a) as A, sycl.buffer(b) as B:
        def cg(h: sycl.handler) -> None:
            ra = A.get_access(h, sycl.access_mode.read)
            wb = B.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(8), lambda i: wb.__setitem__(i, ra[i] * 2))
        ev = q.submit(cg)
        ev.wait()
        assert ev.get_info(sycl.info.event.command_execution_status) is \
            sycl.info.event_command_status.complete
        assert ev.get_backend() is sycl.backend.ext_pysycl_host
        q.fill(B.get_access(None, sycl.access_mode.write), np.int32(5),
               depends_on=[ev]).wait()
        with B.get_host_access() as hb:
            assert list(np.asarray(hb)) == [5] * 8
        out = np.zeros(8, np.int32)
        q.copy(A.get_access(None, sycl.access_mode.read), out).wait()
        assert np.array_equal(out, a)
        q.copy(out + 1, B.get_access(None, sycl.access_mode.write)).wait()
        q.update_host(B.get_access(None, sycl.access_mode.read))
        seen = []
        q.submit(lambda h: (lambda acc: h.host_task(lambda: seen.append(acc[3])))(
            A.get_access(h, sycl.access_mode.read))).wait()
        assert seen == [3]
        q.wait_and_throw()
    assert np.array_equal(b, a + 1)
    with pytest.raises(sycl.exception) as e:
        sycl.queue(host_device, properties=[sycl.property.queue.enable_profiling()])
    assert e.value.code() == sycl.errc.feature_not_supported


def test_data_moves_between_host_device_and_opencl(hq: sycl.queue, kq: sycl.queue) -> None:
    x = np.arange(64, dtype=np.float32)
    with sycl.buffer(x) as X:
        for q, k in ((kq, 2), (hq, 3), (kq, 5), (hq, 7)):
            def cg(h: sycl.handler, k: int = k) -> None:
                a = X.get_access(h, sycl.access_mode.read_write)
                kk = np.float32(k)
                h.parallel_for(sycl.range(64), lambda i: a.__setitem__(i, a[i] * kk))
            q.submit(cg)
    np.testing.assert_array_equal(x, np.arange(64, dtype=np.float32) * 210)


def test_ranged_accessor_and_sub_buffer(hq: sycl.queue) -> None:
    m = np.zeros((4, 6), np.int32)
    with sycl.buffer(m) as M:
        sub = sycl.buffer(M, sycl.id(1, 0), sycl.range(2, 6))

        def cg(h: sycl.handler) -> None:
            a = M.get_access(h, sycl.access_mode.read_write, access_range=sycl.range(2, 3),
                             access_offset=sycl.id(2, 2))
            h.parallel_for(sycl.range(2, 3),
                           lambda it: a.__setitem__(it, it[0] * 10 + it[1] + 1))
        hq.submit(cg)

        def cg2(h: sycl.handler) -> None:
            s = sub.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(2, 6), lambda it: s.__setitem__(it, s[it] + 100))
        hq.submit(cg2)
    want = np.zeros((4, 6), np.int32)
    want[2:4, 2:5] = [[1, 2, 3], [11, 12, 13]]
    want[1:3] += 100
    np.testing.assert_array_equal(m, want)


# ----------------------------------------------------------- debuggability
def test_print_inside_a_kernel(hq: sycl.queue, capsys: pytest.CaptureFixture[str]) -> None:
    def cg(h: sycl.handler) -> None:
        def k(it):
            print("work-item", it.get_global_id(0), "of group", it.get_group(0))
            it.barrier()
        h.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(2)), k)
    hq.submit(cg)
    hq.submit(lambda h: h.parallel_for(sycl.range(2), lambda i: print("range item", int(i))))
    out = capsys.readouterr().out.splitlines()
    # One work-item runs at a time, in order: the output is deterministic.
    assert out == ["work-item 0 of group 0", "work-item 1 of group 0",
                   "work-item 2 of group 1", "work-item 3 of group 1",
                   "range item 0", "range item 1"]


def test_breakpoint_stops_in_the_kernel(hq: sycl.queue, monkeypatch: pytest.MonkeyPatch
                                        ) -> None:
    """``breakpoint()`` calls the breakpoint hook in the kernel's frame, with its locals."""
    seen = []

    def hook(*a: object, **k: object) -> None:
        f = sys._getframe(1)
        seen.append((f.f_code.co_name, f.f_locals.get("lid")))

    monkeypatch.setattr(sys, "breakpointhook", hook)

    def cg(h: sycl.handler) -> None:
        def kern(it):
            lid = it.get_local_id(0)
            if lid == 1:
                breakpoint()
        h.parallel_for(sycl.nd_range(sycl.range(4), sycl.range(2)), kern)
    hq.submit(cg)
    assert seen == [("kern", 1), ("kern", 1)]


def test_pdb_session_in_a_kernel() -> None:
    """A real pdb session: the debugger stops in the kernel and prints its variables."""
    script = textwrap.dedent("""
        import numpy as np
        import pysycl as sycl
        q = sycl.queue(sycl.aspect_selector(sycl.aspect.host_debuggable))
        x = np.arange(4, dtype=np.float32)
        with sycl.buffer(x) as X:
            def cg(h):
                a = X.get_access(h, sycl.access_mode.read_write)
                def kern(i):
                    v = a[i] * 2
                    if i == 2:
                        breakpoint()
                    a[i] = v
                h.parallel_for(sycl.range(4), kern)
            q.submit(cg)
        print("result", x.tolist())
    """)
    env = {**os.environ, "PYTHONBREAKPOINT": "pdb.set_trace"}
    r = subprocess.run([sys.executable, "-c", script], input="p int(i), float(v)\ncontinue\n",
                       capture_output=True, text=True, env=env, timeout=120, check=False)
    assert r.returncode == 0, r.stderr
    assert "(2, 4.0)" in r.stdout and "result [0.0, 2.0, 4.0, 6.0]" in r.stdout


def test_exception_in_kernel_surfaces_with_the_users_line(hq: sycl.queue) -> None:
    x = np.arange(8, dtype=np.float64)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.read_write)

            def kern(i):
                a[i] = -1.0           # written before the failure: must be undone
                if i == 5:
                    raise ValueError("bad value")

            h.parallel_for(sycl.range(8), kern)

        with pytest.raises(sycl.exception, match=r"kernel .*kern.* raised ValueError: bad "
                           r"value in work-item \(5,\), at .*test_host_device.py:\d+") as e:
            hq.submit(cg)
    assert e.value.code() == sycl.errc.kernel
    assert isinstance(e.value.__cause__, ValueError)
    assert "raise ValueError" in "".join(
        __import__("traceback").format_tb(e.value.__cause__.__traceback__))
    np.testing.assert_array_equal(x, np.arange(8))   # buffers intact after the failure


def test_exception_in_nd_range_kernel_and_thread_hygiene(hq: sycl.queue) -> None:
    """A work-item thread that raises never leaks (filterwarnings=error would catch it)."""
    y = np.zeros(8, np.int32)
    with sycl.buffer(y) as Y:
        def cg(h: sycl.handler) -> None:
            o = Y.get_access(h, sycl.access_mode.write)

            def kern(it):
                o[it.get_global_id(0)] = 1
                it.barrier()
                if it.get_global_id(0) == 6:
                    _ = 1 // 0

            h.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)), kern)

        with pytest.raises(sycl.exception, match=r"ZeroDivisionError.*work-item \(6,\)") as e:
            hq.submit(cg)
    assert e.value.code() == sycl.errc.kernel
    assert list(y) == [0] * 8


def test_write_through_read_accessor_raises_at_the_line(hq: sycl.queue) -> None:
    x = np.zeros(4, np.int32)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            r = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(4), lambda i: r.__setitem__(i, 1))
        with pytest.raises(sycl.exception, match="read accessor") as e:
            hq.submit(cg)
    assert e.value.code() == sycl.errc.accessor
    assert any("test_host_device.py" in n for n in e.value.__notes__)


@pytest.mark.parametrize("kind", ["returned", "different"])
def test_barrier_not_reached_by_every_work_item(hq: sycl.queue, kind: str) -> None:
    def cg(h: sycl.handler) -> None:
        if kind == "returned":
            def kern(it):
                if it.get_local_id(0) < 2:
                    return
                it.barrier()
        else:
            def kern(it):
                if it.get_local_id(0) < 2:
                    it.barrier()
                else:
                    sycl.group_barrier(it.get_group())
        h.parallel_for(sycl.nd_range(sycl.range(8), sycl.range(4)), kern)

    what = "returned without reaching it" if kind == "returned" else "different barriers"
    with pytest.raises(sycl.exception, match=f"kern.*work-group \\(0,\\).*{what}") as e:
        hq.submit(cg)
    assert e.value.code() == sycl.errc.kernel
    assert "test_host_device.py:" in str(e.value)


def test_capture_rules_are_the_compiled_paths(hq: sycl.queue) -> None:
    arr = np.zeros((2, 2))  # a 2-D array is no pointer (a 1-D one is system USM memory)

    def cg(h: sycl.handler) -> None:
        h.parallel_for(sycl.range(4), lambda i: arr[i, 0])
    with pytest.raises(sycl.exception, match=r"wrap the array in a sycl\.buffer") as e:
        hq.submit(cg)
    assert e.value.code() == sycl.errc.invalid


def test_launch_checks(hq: sycl.queue) -> None:
    for glob, loc, code in (((10,), (4,), sycl.errc.nd_range), ((512,), (512,), sycl.errc.nd_range),
                            ((4,), (0,), sycl.errc.nd_range)):
        with pytest.raises(sycl.exception) as e:
            hq.parallel_for(sycl.nd_range(sycl.range(*glob), sycl.range(*loc)), lambda it: None)
        assert e.value.code() == code

    def cg(h: sycl.handler) -> None:
        la = sycl.local_accessor(np.float32, sycl.range(4), h)
        h.parallel_for(sycl.range(4), lambda i: la.__setitem__(0, 1))
    with pytest.raises(sycl.exception) as e:
        hq.submit(cg)
    assert e.value.code() == sycl.errc.kernel_argument


def test_spec_constants_single_task_and_kernel_handler(hq: sycl.queue) -> None:
    scale = sycl.specialization_id(np.int32, 3)
    out = np.zeros(3, np.int32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.write)
            h.set_specialization_constant(scale, 7)
            h.parallel_for(sycl.range(2), lambda i, kh: o.__setitem__(
                i, kh.get_specialization_constant(scale) * (int(i) + 1)))
        hq.submit(cg)

        def cg2(h: sycl.handler) -> None:
            o = O.get_access(h, sycl.access_mode.read_write)

            def once(kh):
                o[2] = kh.get_specialization_constant(scale)
            h.single_task(once)
        hq.submit(cg2)
    assert list(out) == [7, 14, 3]


def test_atomics_compare_exchange_and_fence(hq: sycl.queue) -> None:
    cell = np.array([0.0, 0.0], np.float32)
    flags = np.zeros(4, np.int32)
    with sycl.buffer(cell) as C, sycl.buffer(flags) as F:
        def cg(h: sycl.handler) -> None:
            c = C.get_access(h, sycl.access_mode.read_write)
            f = F.get_access(h, sycl.access_mode.read_write)

            def k(i):
                a = sycl.atomic_ref(c, 0, MO.relaxed, MS.device)
                while True:
                    old = a.load()
                    ok, _seen = a.compare_exchange_strong(old, old + np.float32(1.5))
                    if ok:
                        break
                sycl.atomic_fence(MO.seq_cst, MS.device)
                f[i] = sycl.atomic_ref(c, 1, MO.relaxed, MS.device).exchange(np.float32(i))
                sycl.atomic_ref(f, 0, MO.relaxed, MS.device).fetch_or(0)
            h.parallel_for(sycl.range(4), k)
        hq.submit(cg)
    assert cell[0] == 6.0 and cell[1] == 3.0
    assert list(flags) == [0, 0, 1, 2]


def test_device_functions_outside_kernels_still_raise() -> None:
    for call in (lambda: sycl.private_array(np.float32, 4),
                 lambda: sycl.atomic_fence(MO.relaxed, MS.device),
                 lambda: sycl.group_barrier(None)):
        with pytest.raises(sycl.exception) as e:
            call()
        assert e.value.code() == sycl.errc.invalid


def test_kernel_bundles_and_opencl_kernels_are_not_supported(hq: sycl.queue) -> None:
    src = "__kernel void k(__global int* x) { x[get_global_id(0)] = 1; }"
    lang = sycl.ext.oneapi.experimental.source_language
    kq_dev = sycl.device()
    if not kq_dev.ext_oneapi_can_compile(lang.opencl):  # a CUDA device: the kernel in PTX
        src, lang = (".version 7.8\n.target sm_60\n.address_size 64\n.visible .entry k("
                     ".param .u64 .ptr .global .align 4 k_p0)\n{\n ret;\n}\n"), lang.ext_pysycl_ptx
    else:
        lang = lang.opencl
    kb = sycl.ext.oneapi.experimental.create_kernel_bundle_from_source(
        sycl.context(kq_dev), lang, src)
    exe = sycl.ext.oneapi.experimental.build(kb)
    k = exe.ext_oneapi_get_kernel("k")
    x = np.zeros(4, np.int32)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            h.set_arg(0, X.get_access(h, sycl.access_mode.write))
            h.parallel_for(sycl.range(4), k)
        with pytest.raises(sycl.exception) as e:
            hq.submit(cg)
    assert e.value.code() == sycl.errc.kernel_not_supported
