"""Issue 21, items 2 and 3: one buffer and one kernel used from queues of two contexts or devices.

SYCL 2020 §3.8.1: "memory objects are bound to all devices in which they are used,
regardless of the SYCL context where they reside" -- a buffer may be used by queues of
any contexts, and the runtime moves its data; "USM allocations ... are bound to a SYCL
context". So a buffer incremented alternately by two contexts' queues must hold the
sum, and the same kernel submitted to two devices must run on each with that queue's
own allocations.

Every test runs over *pairs of queues*: two contexts of one device (always there: the
CPU device), two sub-devices (``partition_equally``) in one context and in a context
each, two devices of one platform (two GPUs: the platform's default context, then a
context each) and, for buffers, the host_debuggable device and an OpenCL device. A pair
the machine cannot make is skipped with the reason.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl
from tests.conftest import ALL_DEVICES

ROOT = Path(__file__).resolve().parents[2]
N = 1024
ROUNDS = 40

# ------------------------------------------------------------------ pairs of queues
_pp = sycl.info.partition_property


def _two_sub_devices(dev: sycl.device) -> list[sycl.device]:
    """Two sub-devices of ``dev`` (partition_equally), or a skip."""
    if _pp.partition_equally not in dev.get_info(sycl.info.device.partition_properties):
        pytest.skip(f"{dev.display_name} cannot be partitioned equally")
    cus = dev.get_info(sycl.info.device.max_compute_units)
    if cus < 2:
        pytest.skip(f"{dev.display_name} has {cus} compute unit: no two sub-devices")
    return dev.create_sub_devices(_pp.partition_equally, cus // 2)[:2]


def _two_devices() -> list[sycl.device]:
    """Two devices of one platform that run Python kernels (two GPUs), or a skip."""
    by_platform: dict[sycl.platform, list[sycl.device]] = {}
    for d in ALL_DEVICES:
        if d.image_targets:
            by_platform.setdefault(d.get_platform(), []).append(d)
    for devs in by_platform.values():
        if len(devs) >= 2:
            return devs[:2]
    pytest.skip("no platform with two devices that run Python kernels (two GPUs)")


def _own_contexts(devs: list[sycl.device]) -> tuple[sycl.queue, sycl.queue]:
    return sycl.queue(sycl.context(devs[0]), devs[0]), sycl.queue(sycl.context(devs[1]), devs[1])


def _one_context(devs: list[sycl.device]) -> tuple[sycl.queue, sycl.queue]:
    ctx = sycl.context(devs)
    return sycl.queue(ctx, devs[0]), sycl.queue(ctx, devs[1])


PAIRS: dict[str, Callable[[sycl.device], tuple[sycl.queue, sycl.queue]]] = {
    "two_contexts_one_device": lambda d: _own_contexts([d, d]),
    "sub_devices_one_context": lambda d: _one_context(_two_sub_devices(d)),
    "sub_devices_own_contexts": lambda d: _own_contexts(_two_sub_devices(d)),
    # two GPUs as users make them: queues from the devices alone (on NVIDIA's OpenCL a
    # context each, since its SVM works only in a context of one device; elsewhere the
    # platform's default context)
    "two_devices_default_context": lambda d: (sycl.queue(_two_devices()[0]),
                                              sycl.queue(_two_devices()[1])),
    "two_devices_one_context": lambda d: _one_context(_two_devices()),
    "two_devices_own_contexts": lambda d: _own_contexts(_two_devices()),
}


def _usm_refused_here(pair: tuple[sycl.queue, sycl.queue]) -> bool:
    """NVIDIA's OpenCL in a context of several devices: USM is refused, clearly (measured
    on two H100s: kernels on such memory fail with CL_INVALID_KERNEL_ARGS on one GPU and
    write nothing on the other). Checks the refusal; True when it happened."""
    ctx = pair[0].get_context()
    devs = ctx.get_devices()
    vendor = devs[0].get_platform().get_info(sycl.info.platform.vendor).lower()
    if len(devs) < 2 or "nvidia" not in vendor:
        return False
    with pytest.raises(sycl.exception, match="context of one device") as ei:
        sycl.malloc_device(N, pair[0], dtype=np.float32)
    assert ei.value.code() == sycl.errc.feature_not_supported
    return True


@pytest.fixture(params=list(PAIRS))
def pair(request: pytest.FixtureRequest, kernel_device: sycl.device) -> tuple[sycl.queue, sycl.queue]:
    """Two queues on different contexts and/or devices (see the module docstring)."""
    return PAIRS[request.param](kernel_device)


@pytest.fixture(params=[*PAIRS, "host_device_and_opencl"])
def buffer_pair(request: pytest.FixtureRequest, kernel_device: sycl.device,
                host_device: sycl.device) -> tuple[sycl.queue, sycl.queue]:
    """The pairs, and the host_debuggable device with an OpenCL device (buffers only)."""
    if request.param == "host_device_and_opencl":
        return sycl.queue(host_device), sycl.queue(kernel_device)
    return PAIRS[request.param](kernel_device)


# ------------------------------------------------------------------ item 2: buffers
def _step(q: sycl.queue, buf: sycl.buffer, k: int) -> None:
    """``a[i] = a[i] + (i % 7) + k`` on ``q``."""
    def cg(h: sycl.handler) -> None:
        acc = buf.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(N), lambda i: acc.__setitem__(i, acc[i] + (i % 7) + k))

    q.submit(cg)


def _model_step(a: np.ndarray, k: int) -> None:
    a += np.arange(N) % 7 + k


def test_a_buffer_alternating_between_two_contexts_matches_numpy(
        buffer_pair: tuple[sycl.queue, sycl.queue]) -> None:
    # §3.8.1: one buffer, used by queues of two contexts (or devices) in turn.
    a = np.zeros(N, np.int64)
    model = a.copy()
    with sycl.buffer(a) as A:
        for k in range(ROUNDS):
            _step(buffer_pair[k % 2], A, k)
            _model_step(model, k)
            if k % 10 == 9:  # the host sees the current data in between, from either context
                with sycl.host_accessor(A, sycl.access_mode.read) as ha:
                    np.testing.assert_array_equal(np.asarray(ha), model)
    np.testing.assert_array_equal(a, model)


def test_a_write_in_one_context_waits_for_a_read_in_the_other(
        buffer_pair: tuple[sycl.queue, sycl.queue]) -> None:
    # Write-after-read across contexts: the second context's write must not reach the
    # data before the first context's kernel read it (the host waits for that read).
    qa, qb = buffer_pair
    x = np.arange(N, dtype=np.int64)
    y = np.zeros(N, np.int64)
    with sycl.buffer(x) as X, sycl.buffer(y) as Y:
        for k in range(ROUNDS // 2):
            def read_x(h: sycl.handler) -> None:
                r = X.get_access(h, sycl.access_mode.read)
                w = Y.get_access(h, sycl.access_mode.read_write)
                h.parallel_for(sycl.range(N), lambda i: w.__setitem__(i, w[i] + r[i]))

            (qa if k % 2 == 0 else qb).submit(read_x)
            _step(qb if k % 2 == 0 else qa, X, k)
    expect_x, expect_y = np.arange(N, dtype=np.int64), np.zeros(N, np.int64)
    for k in range(ROUNDS // 2):
        expect_y += expect_x
        _model_step(expect_x, k)
    np.testing.assert_array_equal(y, expect_y)
    np.testing.assert_array_equal(x, expect_x)


def _direct_between(qa: sycl.queue, qb: sycl.queue) -> bool:
    """Whether a buffer's copy moves between the two queues' devices without the host: the
    CUDA backend, one GPU (two contexts) or two GPUs with peer access."""
    da, db = qa.get_device(), qb.get_device()
    if not all(d.get_backend() is sycl.backend.ext_oneapi_cuda for d in (da, db)):
        return False
    from pysycl._backends.cuda import memory as cuda_memory

    return cuda_memory.peer_access(da.ordinal, db.ordinal)  # type: ignore[attr-defined]


def test_the_bytes_a_buffer_moves_between_two_copies_are_counted(
        pair: tuple[sycl.queue, sycl.queue]) -> None:
    # Every turn after the first brings the other copy up to date from the current one:
    # device to device where the backend can (CUDA), else through the host copy.
    from pysycl._memory.coherence import moves

    rounds = 10
    a = np.zeros(N, np.int64)
    model = a.copy()
    before = dict(moves)
    with sycl.buffer(a) as A:
        for k in range(rounds):
            _step(pair[k % 2], A, k)
            _model_step(model, k)
        A.coherence.wait_all()
        moved = {w: moves[w] - before[w] for w in moves}
    np.testing.assert_array_equal(a, model)
    way = "direct" if _direct_between(*pair) else "through_host"
    assert moved == {"direct": 0, "through_host": 0, way: (rounds - 1) * a.nbytes}


@pytest.mark.parametrize("pair_name", ["sub_devices_one_context", "two_devices_one_context"])
def test_a_context_of_two_devices_keeps_a_copy_per_device(
        pair_name: str, kernel_device: sycl.device) -> None:
    # Not one allocation that the driver would have to migrate between the devices: a
    # copy each, the data moving through the host as between contexts, or device to
    # device on CUDA GPUs with peer access (docs/memory.md).
    qa, qb = PAIRS[pair_name](kernel_device)
    assert qa.get_context() == qb.get_context()
    a = np.zeros(N, np.int64)
    with sycl.buffer(a) as A:
        _step(qa, A, 1)
        _step(qb, A, 2)
        assert len(A.coherence.dev) == 2
    model = np.zeros(N, np.int64)
    _model_step(model, 1)
    _model_step(model, 2)
    np.testing.assert_array_equal(a, model)


_EXIT_SCRIPT = """
import sys
import numpy as np
import pysycl as sycl
sys.path.insert(0, {root!r})
from tests.safety.test_contexts_and_devices import PAIRS, _step, _model_step, N

qa, qb = PAIRS[{pair!r}](sycl.device.get_devices()[{device!r}])
a = np.zeros(N, np.int64)
model = a.copy()
A = sycl.buffer(a)          # module-level, never closed: still in use at exit
for k in range(30):
    _step((qa, qb)[k % 2], A, k)
    _model_step(model, k)
with sycl.host_accessor(A, sycl.access_mode.read) as ha:
    assert (np.asarray(ha) == model).all(), "wrong result"
_step(qb, A, 99)            # still running, maybe, when the interpreter exits
print("ok")
"""


@pytest.mark.parametrize("pair_name", list(PAIRS))
def test_a_program_using_a_buffer_from_two_contexts_exits_cleanly(
        pair_name: str, kernel_device: sycl.device) -> None:
    # The abort at exit ("Pure virtual function called!"): a child process whose
    # buffer moved between two contexts (or devices), still in use when it exits.
    PAIRS[pair_name](kernel_device)  # skips here when the machine cannot make the pair
    script = _EXIT_SCRIPT.format(root=str(ROOT), pair=pair_name,
                                 device=sycl.device.get_devices().index(kernel_device))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                       timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().endswith("ok")
    for bad in ("Traceback", "pure virtual", "Abort", "Segmentation"):
        assert bad.lower() not in r.stderr.lower(), r.stderr[-3000:]


# ------------------------------------------------------------------ item 3: one kernel, USM
def _usm_round_trip(pair: tuple[sycl.queue, sycl.queue], launch: Callable[..., None]) -> None:
    """Alternate ``launch(q, p, k)`` (``p[i] += i + k`` on ``q``) between the two queues,
    each with a device allocation of its own; check both allocations against numpy."""
    if _usm_refused_here(pair):
        return
    ptrs = [sycl.malloc_device(N, q, dtype=np.float32) for q in pair]
    try:
        for q, p in zip(pair, ptrs, strict=True):
            q.fill(p, np.float32(0), N).wait()
        model = [np.zeros(N, np.float32), np.zeros(N, np.float32)]
        for k in range(ROUNDS):
            j = k % 2
            launch(pair[j], ptrs[j], k)
            model[j] += np.arange(N, dtype=np.float32) + k
        for q, p, m in zip(pair, ptrs, model, strict=True):
            out = np.empty(N, np.float32)
            q.memcpy(out, p, out.nbytes).wait()
            np.testing.assert_array_equal(out, m)
    finally:
        for q, p in zip(pair, ptrs, strict=True):
            sycl.free(p, q)


def _add(p: sycl.usm_pointer, k: int) -> Callable[[sycl.id], None]:
    def kern(i: sycl.id) -> None:
        p[i] = p[i] + i[0] + k
    return kern


def test_the_same_kernel_alternates_between_two_devices_shortcut(
        pair: tuple[sycl.queue, sycl.queue]) -> None:
    # q.parallel_for(range, kernel): launch plans, built kernels and remembered arguments
    # are per queue/context/device. (A fresh closure of one code object each time.)
    _usm_round_trip(pair, lambda q, p, k: q.parallel_for(sycl.range(N), _add(p, k)).wait())


def test_the_same_kernel_alternates_between_two_devices_command_group(
        pair: tuple[sycl.queue, sycl.queue]) -> None:
    _usm_round_trip(pair, lambda q, p, k: q.submit(
        lambda h: h.parallel_for(sycl.range(N), _add(p, k))).wait())


def test_one_kernel_object_alternates_between_two_devices(
        pair: tuple[sycl.queue, sycl.queue]) -> None:
    # The very same function object, its cells rebound between launches, as a loop that
    # keeps one kernel and changes what it captures: both the shortcut and submit forms.
    p: sycl.usm_pointer | None = None
    k = 0

    def kern(i: sycl.id) -> None:
        p[i] = p[i] + i[0] + k

    def launch(q: sycl.queue, ptr: sycl.usm_pointer, kk: int) -> None:
        nonlocal p, k
        p, k = ptr, kk
        if kk % 4 < 2:
            q.parallel_for(sycl.range(N), kern).wait()
        else:
            q.submit(lambda h: h.parallel_for(sycl.range(N), kern)).wait()

    _usm_round_trip(pair, launch)


def test_an_event_of_the_other_queue_orders_a_command(pair: tuple[sycl.queue, sycl.queue]) -> None:
    # depends_on an event of another context (the host waits for it) or of another
    # device of the same context (a wait list): a device -> host copy on one queue, then
    # host -> device on the other, without waiting in between.
    if _usm_refused_here(pair):
        return
    qa, qb = pair
    pa = sycl.malloc_device(N, qa, dtype=np.float32)
    pb = sycl.malloc_device(N, qb, dtype=np.float32)
    try:
        for k in range(ROUNDS // 4):
            host = np.zeros(N, np.float32)
            e1 = qa.parallel_for(sycl.range(N), _set(pa, k))
            e2 = qa.memcpy(host, pa, host.nbytes, e1)
            e3 = qb.memcpy(pb, host, host.nbytes, e2)
            out = np.zeros(N, np.float32)
            qb.memcpy(out, pb, out.nbytes, e3).wait()
            np.testing.assert_array_equal(out, np.arange(N, dtype=np.float32) + k)
    finally:
        sycl.free(pa, qa)
        sycl.free(pb, qb)


def _set(p: sycl.usm_pointer, k: int) -> Callable[[sycl.id], None]:
    def kern(i: sycl.id) -> None:
        p[i] = i[0] + k
    return kern


@pytest.mark.parametrize("pair_name", ["sub_devices_one_context", "two_devices_one_context"])
def test_a_kernel_first_built_in_a_context_of_two_devices_runs_on_both(
        pair_name: str, kernel_device: sycl.device, monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    # The first build of a kernel (no device binary cached yet) in a context of two
    # devices, for one of them: Intel's CPU runtime refuses CL_PROGRAM_BINARIES of such
    # a program, which must cost the binary cache entry, not the launch.
    pair = PAIRS[pair_name](kernel_device)
    monkeypatch.setenv("PYSYCL_CACHE_DIR", str(tmp_path))
    sycl.ext.clear_kernel_memory_cache()
    _usm_round_trip(pair, lambda q, p, k: q.parallel_for(sycl.range(N), _add(p, k)).wait())


def test_a_pointer_of_one_context_is_refused_by_the_others_queue(kernel_device: sycl.device) -> None:
    # A launch plan made on context A's queue must not launch A's pointer on B's queue
    # (USM allocations are bound to their context, §3.8.1): errc.invalid before anything
    # is enqueued, both forms; B's own pointer then runs, and A's plan still works.
    qa, qb = PAIRS["two_contexts_one_device"](kernel_device)
    pa = sycl.malloc_device(N, qa, dtype=np.float32)
    pb = sycl.malloc_device(N, qb, dtype=np.float32)
    try:
        p = pa

        def kern(i: sycl.id) -> None:
            p[i] = 2.0

        for _ in range(3):  # the second launch on qa is from its plan
            qa.parallel_for(sycl.range(N), kern).wait()
        with pytest.raises(sycl.exception, match="not in the queue's context") as ei:
            qb.parallel_for(sycl.range(N), kern)
        assert ei.value.code() == sycl.errc.invalid
        with pytest.raises(sycl.exception, match="not in the queue's context"):
            qb.submit(lambda h: h.parallel_for(sycl.range(N), kern))
        p = pb
        qb.parallel_for(sycl.range(N), kern).wait()
        p = pa
        qa.parallel_for(sycl.range(N), kern).wait()
        for q, ptr in ((qa, pa), (qb, pb)):
            out = np.zeros(N, np.float32)
            q.memcpy(out, ptr, out.nbytes).wait()
            np.testing.assert_array_equal(out, np.full(N, 2.0, np.float32))
    finally:
        sycl.free(pa, qa)
        sycl.free(pb, qb)
