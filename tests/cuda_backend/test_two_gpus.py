"""Issue 26: every GPU of a machine in one process, through the CUDA backend (skipped with
fewer than two CUDA GPUs, as in CI; the 2-GPU machine runs it).

A context of both GPUs; a buffer incremented alternately on each (one context, a context
each, the devices' default contexts), its data moving device to device where the GPUs have
peer access (``coherence.moves``, ``cuda.memory.between_devices``) and through the host
otherwise (``PYSYCL_CUDA_PEER=0`` in a subprocess); ``q.memcpy`` between the GPUs' USM of
every kind, both ways; a kernel on one GPU after an event of the other; the examples of
``examples/multi_device/`` on both GPUs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl

GPUS = [d for d in sycl.device.get_devices() if d.get_backend() is sycl.backend.ext_oneapi_cuda]
pytestmark = pytest.mark.skipif(len(GPUS) < 2, reason="fewer than two CUDA GPUs (the 2-GPU "
                                "machine runs these: NVIDIA driver and pip install pysycl[cuda])")
ROOT = Path(__file__).resolve().parents[2]
ROUNDS = 101  # odd: GPU 0 runs one step more than GPU 1
N = 1 << 16


def _peer() -> bool:
    from pysycl._backends.cuda import memory as cm

    return cm.peer_access(GPUS[0].ordinal, GPUS[1].ordinal)  # type: ignore[attr-defined]


def _counters() -> dict[str, int]:
    from pysycl._backends.cuda import memory as cm
    from pysycl._memory import coherence

    return {**coherence.moves, **cm.between_devices}


def _delta(before: dict[str, int]) -> dict[str, int]:
    return {k: v - before[k] for k, v in _counters().items()}


def _one_context() -> tuple[sycl.queue, sycl.queue]:
    ctx = sycl.context(GPUS[:2])
    return sycl.queue(ctx, GPUS[0]), sycl.queue(ctx, GPUS[1])


QUEUES: dict[str, Callable[[], tuple[sycl.queue, sycl.queue]]] = {
    "one_context": _one_context,
    "own_contexts": lambda: (sycl.queue(sycl.context(GPUS[0]), GPUS[0]),
                             sycl.queue(sycl.context(GPUS[1]), GPUS[1])),
    "default_contexts": lambda: (sycl.queue(GPUS[0]), sycl.queue(GPUS[1])),
}


def test_a_context_holds_both_gpus() -> None:
    qa, qb = _one_context()
    ctx = qa.get_context()
    assert ctx.get_devices() == GPUS[:2] and qb.get_context() == ctx
    pa = sycl.malloc_device(N, qa, dtype=np.int32)
    pb = sycl.malloc_device(N, qb, dtype=np.int32)
    assert sycl.get_pointer_device(pa, ctx) == GPUS[0]
    assert sycl.get_pointer_device(pb, ctx) == GPUS[1]
    from pysycl._backends.cuda.driver import cu

    for p, dev in ((pa, GPUS[0]), (pb, GPUS[1])):  # the driver agrees on where each lies
        attr = cu.CUpointer_attribute.CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL
        r = cu.cuPointerGetAttribute(attr, int(p))
        assert not r[0] and int(r[1]) == dev.ordinal  # type: ignore[attr-defined]
    ea = qa.parallel_for(sycl.range(N), lambda i: pa.__setitem__(i, i * 2))
    eb = qb.parallel_for(sycl.range(N), lambda i: pb.__setitem__(i, i * 3))
    ea.wait()
    eb.wait()
    out = np.empty(N, np.int32)
    qa.memcpy(out, pa, out.nbytes).wait()
    np.testing.assert_array_equal(out, np.arange(N, dtype=np.int32) * 2)
    qb.memcpy(out, pb, out.nbytes).wait()
    np.testing.assert_array_equal(out, np.arange(N, dtype=np.int32) * 3)
    sycl.free(pa, ctx)
    sycl.free(pb, ctx)


def _inc(q: sycl.queue, buf: sycl.buffer) -> None:
    def cg(h: sycl.handler) -> None:
        acc = buf.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(i, acc[i] + 1 + (i % 3)))
    q.submit(cg)


@pytest.mark.parametrize("which", list(QUEUES))
def test_a_buffer_incremented_alternately_on_each_gpu(which: str) -> None:
    qa, qb = QUEUES[which]()
    a = np.zeros(N, np.int64)
    before = _counters()
    with sycl.buffer(a) as A:
        for k in range(ROUNDS):
            _inc((qa, qb)[k % 2], A)
        devs = {key: int(mem) for key, mem in A.coherence.dev.items()}
        A.coherence.wait_all()
        moved = _delta(before)
    np.testing.assert_array_equal(a, ROUNDS * (1 + np.arange(N) % 3))
    assert len(devs) == 2  # a copy on each GPU
    nbytes = (ROUNDS - 1) * a.nbytes
    if _peer():
        assert moved["direct"] == nbytes and moved["through_host"] == 0
        assert moved["peer"] == nbytes and moved["staged"] == 0
    else:
        assert moved["through_host"] == nbytes and moved["direct"] == 0


_STAGED = """
import numpy as np
import pysycl as sycl
from pysycl._memory import coherence
from pysycl._backends.cuda import memory as cm
g = [d for d in sycl.device.get_devices() if d.get_backend() is sycl.backend.ext_oneapi_cuda]
ctx = sycl.context(g[:2])
qa, qb = sycl.queue(ctx, g[0]), sycl.queue(ctx, g[1])
assert not cm.peer_access(0, 1)
a = np.zeros(4096, np.int64)
with sycl.buffer(a) as A:
    for k in range(9):
        def cg(h, A=A):
            acc = A.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(4096), lambda i: acc.__setitem__(i, acc[i] + 1))
        (qa, qb)[k % 2].submit(cg)
assert (a == 9).all(), a
assert coherence.moves == {"direct": 0, "through_host": 8 * a.nbytes}, coherence.moves
src = sycl.malloc_device(4096, qa, dtype=np.int64)
dst = sycl.malloc_device(4096, qb, dtype=np.int64)
qa.memcpy(src, np.arange(4096), 4096 * 8).wait()
qb.memcpy(dst, src, 4096 * 8).wait()
out = np.empty(4096, np.int64)
qb.memcpy(out, dst, out.nbytes).wait()
assert (out == np.arange(4096)).all()
assert cm.between_devices == {"peer": 0, "staged": 4096 * 8}, cm.between_devices
print("staged ok")
"""


def test_without_peer_access_the_data_goes_through_the_host() -> None:
    r = subprocess.run([sys.executable, "-c", _STAGED], capture_output=True, text=True,
                       timeout=300, env={**os.environ, "PYSYCL_CUDA_PEER": "0"})
    assert r.returncode == 0 and "staged ok" in r.stdout, r.stdout + r.stderr


KINDS = ["device", "shared", "host"]


def _alloc(kind: str, ctx: sycl.context, dev: sycl.device, n: int) -> sycl.usm_pointer:
    if kind == "host":
        return sycl.malloc_host(n, ctx, dtype=np.float32)
    return getattr(sycl, f"malloc_{kind}")(n, dev, ctx, dtype=np.float32)


@pytest.mark.parametrize("src_kind", KINDS)
@pytest.mark.parametrize("dst_kind", KINDS)
@pytest.mark.parametrize("way", ["0to1", "1to0"])
def test_memcpy_between_the_gpus_usm(src_kind: str, dst_kind: str, way: str) -> None:
    qs = _one_context()
    ctx = qs[0].get_context()
    a, b = (0, 1) if way == "0to1" else (1, 0)
    n = (1 << 20) + 3
    src = _alloc(src_kind, ctx, GPUS[a], n)
    dst = _alloc(dst_kind, ctx, GPUS[b], n)
    want = np.random.default_rng(7).random(n, np.float32)
    qs[a].memcpy(src, want, want.nbytes).wait()
    qs[b].memset(dst, 0, want.nbytes).wait()
    before = _counters()
    for q in (qs[b], qs[a]):  # on the receiving GPU's queue, then on the sending one's
        q.memset(dst, 0, want.nbytes).wait()
        q.memcpy(dst, src, want.nbytes).wait()
        out = np.empty(n, np.float32)
        qs[b].memcpy(out, dst, out.nbytes).wait()
        np.testing.assert_array_equal(out, want)
    moved = _delta(before)
    if src_kind == dst_kind == "device":
        key = "peer" if _peer() else "staged"
        assert moved[key] == 2 * want.nbytes and moved["peer"] + moved["staged"] == moved[key]
    else:
        assert moved["peer"] == moved["staged"] == 0
    for p in (src, dst):
        sycl.free(p, ctx)


def _slow(p: sycl.usm_pointer, k: int) -> Callable[[sycl.id], None]:
    """``p[i] = 2 + i`` after ``k`` dependent float steps per work-item (milliseconds)."""
    def kern(i):  # type: ignore[no-untyped-def]
        x = 0.0
        for _ in range(k):
            x = x * 0.5 + 1.0
        p[i] = x + i
    return kern


@pytest.mark.parametrize("form", ["depends_on", "command_group"])
def test_a_command_on_one_gpu_after_an_event_of_the_other(form: str) -> None:
    # GPU 0's kernel takes milliseconds; GPU 1 copies its output and doubles it: the copy
    # must wait for the kernel (a stream wait across the GPUs, no host wait in between).
    qa, qb = _one_context()
    n = 1 << 20
    p0 = sycl.malloc_device(n, qa, dtype=np.float64)
    p1 = sycl.malloc_device(n, qb, dtype=np.float64)
    qa.memset(p0, 0, n * 8).wait()
    for _ in range(3):
        e0 = qa.parallel_for(sycl.range(n), _slow(p0, 200_000))
        if form == "depends_on":
            e1 = qb.memcpy(p1, p0, n * 8, e0)
        else:
            def cg(h: sycl.handler, e0: sycl.event = e0) -> None:
                h.depends_on(e0)
                h.memcpy(p1, p0, n * 8)
            e1 = qb.submit(cg)
        qb.parallel_for(sycl.range(n), e1, lambda i: p1.__setitem__(i, p1[i] * 2)).wait()
        out = np.empty(n)
        qb.memcpy(out, p1, out.nbytes).wait()
        np.testing.assert_array_equal(out, 2 * (2.0 + np.arange(n)))
        qa.memset(p0, 0, n * 8).wait()
        qb.memset(p1, 0, n * 8).wait()
    for p in (p0, p1):
        sycl.free(p, qa.get_context())


def test_a_buffer_written_slowly_on_one_gpu_read_on_the_other_in_own_contexts() -> None:
    # Contexts of their own: the reader's copy waits for the writer through a stream wait
    # (both CUDA) and takes the data device to device (or through the host).
    qa, qb = QUEUES["own_contexts"]()
    n = 1 << 20
    x = np.zeros(n)
    y = np.zeros(n)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y:
        for _ in range(2):
            def write(h: sycl.handler) -> None:
                w = X.get_access(h, sycl.access_mode.write)
                k = 100_000

                def kern(i):  # type: ignore[no-untyped-def]
                    v = 0.0
                    for _ in range(k):
                        v = v * 0.5 + 1.0
                    w[i] = v + i
                h.parallel_for(sycl.range(n), kern)

            def read(h: sycl.handler) -> None:
                r = X.get_access(h, sycl.access_mode.read)
                o = Y.get_access(h, sycl.access_mode.read_write)
                h.parallel_for(sycl.range(n), lambda i: o.__setitem__(i, o[i] + r[i]))
            qa.submit(write)
            qb.submit(read)
    np.testing.assert_array_equal(y, 2 * (2.0 + np.arange(n)))


def _example(script: str, *args: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    r = subprocess.run([sys.executable, "-W", "error", str(ROOT / "examples" / "multi_device" / script),
                        *args, "--backend", "cuda"], capture_output=True, text=True, timeout=600,
                       env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_the_examples_on_every_gpu() -> None:
    n = len(GPUS)
    out = _example("nstream.py", "5", str(1 << 24))
    assert f"across {n} device(s)" in out and "Solution validates" in out
    for exchange in ("device", "host"):
        out = _example("stencil.py", "12", "1031", "--exchange", exchange)
        assert f"across {n} device(s), {exchange} exchange: validates" in out
