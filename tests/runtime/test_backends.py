"""The backend interface: registry, executors, and the launch path's argument reuse."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl._commands.commands import FillCommand, KernelCommand
from pysycl._core import backends as base


def test_every_platform_comes_from_a_registered_backend() -> None:
    kinds = [b.kind for b in base.registered()]
    # enumeration order: a GPU's CUDA view before its OpenCL one (CUDA lists nothing
    # without a driver)
    assert kinds == [sycl.backend.ext_oneapi_cuda, sycl.backend.opencl,
                     sycl.backend.ext_pysycl_host]
    for p in sycl.platform.get_platforms():
        assert base.get(p.get_backend()).kind is p.get_backend()
        assert p in base.get(p.get_backend()).platforms()


def test_a_backend_registered_twice_is_refused() -> None:
    with pytest.raises(sycl.exception) as e:
        base.register(base.registered()[0])
    assert e.value.code() == sycl.errc.invalid
    assert len(base.registered()) == 3


def test_each_queue_has_its_backends_executor() -> None:
    for d in sycl.device.get_devices():
        q = sycl.queue(d)
        ex = q.executor
        for name in ("submit", "wait", "wait_events", "status", "profile", "read"):
            assert callable(getattr(ex, name)), name
        assert type(ex) is type(base.get(d.get_backend()).executor(q.get_context(), d,
                                                                    profiling=False))
        q.wait()


def test_handlers_record_typed_commands() -> None:
    q = sycl.queue()
    a = np.zeros(4, np.float32)
    seen = []
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            acc = A.get_access(h, sycl.access_mode.write)
            h.fill(acc, 2.0)
            seen.append(h.command)

        q.submit(cg).wait()
    (cmd,) = seen
    assert type(cmd) is FillCommand and cmd.value == 2.0
    with pytest.raises(AttributeError):
        cmd.value = 3.0  # type: ignore[misc]  # commands are frozen
    np.testing.assert_array_equal(a, np.full(4, 2.0, np.float32))

    def cg2(h: sycl.handler) -> None:
        h.single_task(lambda: None)
        seen.append(h.command)

    q.submit(cg2).wait()
    assert type(seen[-1]) is KernelCommand and seen[-1].kind == "single_task"


def test_a_kernel_relaunched_with_other_buffers_and_scalars_sees_them(any_kernel_queue) -> None:
    """A kernel object keeps its arguments between launches; a changed one must be set."""
    q = any_kernel_queue
    arrays = [np.zeros(8, np.int32) for _ in range(3)]
    bufs = [sycl.buffer(x) for x in arrays]
    rng = np.random.default_rng(7)
    expect = [np.zeros(8, np.int32) for _ in range(3)]
    for _ in range(30):  # the same code each time; buffer and value change at random
        j = int(rng.integers(3))
        v = np.int32(rng.integers(-100, 100))
        buf = bufs[j]

        def cg(h: sycl.handler, buf: sycl.buffer = buf, v: np.int32 = v) -> None:
            acc = buf.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(8), lambda i: acc.__setitem__(i, acc[i] + v))

        q.submit(cg).wait()
        expect[j] += v
    for b in bufs:
        b._flush()
    for got, want in zip(arrays, expect, strict=True):
        np.testing.assert_array_equal(got, want)


def test_a_kernel_remembers_its_last_arguments_only_while_cached(kernel_device) -> None:
    from pysycl._kernels.cache import kernels

    if kernel_device.get_backend() is not sycl.backend.opencl:
        pytest.skip("a cl_kernel's remembered arguments (OpenCL's); a CUDA launch packs its own")
    q = sycl.queue(kernel_device)
    sycl.ext.clear_kernel_memory_cache()  # only this test's kernel in memory
    a = np.zeros(4, np.int32)
    with sycl.buffer(a) as A:
        def cg(h: sycl.handler) -> None:
            acc = A.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, 1))

        q.submit(cg).wait()
        last = q.executor.last_args  # the backend's: built kernel -> its last arguments
        k = next(k for k in kernels.memory.values() if last(k))
        (_clk, args), = last(k).items()  # its one cl_kernel, with the buffer it was launched with
        assert args[0] == A._storage.dev[q.get_context().key]
    sycl.ext.clear_kernel_memory_cache()
    assert k not in kernels.memory.values()  # the remembered arguments went with the entry
    np.testing.assert_array_equal(a, np.ones(4, np.int32))


def test_a_filter_of_backend_tokens_asks_only_those_backends() -> None:
    """``PYSYCL_DEVICE_FILTER=host:`` lists the host device only, and the process never
    starts the OpenCL ICD loader's drivers (pyopencl is not even imported)."""
    import subprocess
    import sys

    code = ("import sys, pysycl as s; print([p.get_backend().value for p in "
            "s.platform.get_platforms()], 'pyopencl' in sys.modules)")
    env = {**__import__("os").environ, "PYSYCL_DEVICE_FILTER": "host:"}
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["['ext_pysycl_host']", "False"]
