"""``atomic_ref.load/store/exchange`` at run time: a kernel and the host hand a flag back
and forth through shared USM while the kernel runs.

SYCL 2020 §3.8.3.3: device code accesses memory atomically through ``atomic_ref``;
§4.6.4.3, ``aspect::usm_atomic_shared_allocations``: the host and the device may access
and atomically modify a shared allocation concurrently. A kernel that spins on
``atomic_ref(flag).load()`` must see the host's store: its load was a plain ``OpLoad``
(issue 21, item 12), which Intel's CPU compiler hoisted out of the loop, and the
kernel never ended. The handshake runs in a child process with a timeout (on a
regression it would hang). The instruction-level checks of both targets are in
tests/compiler/test_atomic_load_store.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pysycl as sycl

MO, MS = sycl.memory_order, sycl.memory_scope

_HANDSHAKE = textwrap.dedent("""
    import sys, time
    import numpy as np
    import pysycl as sycl
    MO, MS = sycl.memory_order, sycl.memory_scope
    devs = [d for d in sycl.device.get_devices()
            if d.image_targets and d.has(sycl.aspect.usm_atomic_shared_allocations)]
    if not devs:
        print("no device"); sys.exit(0)
    q = sycl.queue(devs[0])
    flags = sycl.malloc_shared(4, q, dtype=np.int32)
    host = np.asarray(flags)
    host[:] = 0

    def k():
        sycl.atomic_ref(flags, 1, MO.release, MS.system).store(1)   # "started"
        go = sycl.atomic_ref(flags, 0, MO.acquire, MS.system)
        spins = 0
        while go.load() == 0:                                       # the host's store ends it
            spins += 1
        old = sycl.atomic_ref(flags, 2, MO.acq_rel, MS.system).exchange(spins % 2 + 7)
        sycl.atomic_ref(flags, 3, MO.seq_cst, MS.system).store(old + 40)

    e = q.single_task(k)
    t = time.monotonic()
    while host[1] == 0:                                             # the kernel's store
        assert time.monotonic() - t < 30, "the kernel's store never reached the host"
        time.sleep(0.001)
    time.sleep(0.05)
    host[0] = 1
    e.wait()
    print("done", host.tolist())
""")


def test_a_kernel_spinning_on_a_flag_sees_the_hosts_store() -> None:
    r = subprocess.run([sys.executable, "-c", _HANDSHAKE], capture_output=True, text=True,
                       timeout=120, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    if r.stdout.startswith("no device"):
        pytest.skip("no device with aspect.usm_atomic_shared_allocations runs Python kernels")
    done, flags = r.stdout.split(" ", 1)
    assert done == "done"
    f = [int(v) for v in flags.strip("[]\n").split(",")]
    assert f[0] == 1 and f[1] == 1 and f[2] in (7, 8) and f[3] == 40


@pytest.mark.parametrize("dtype", [np.int32, np.uint64, np.float32, np.float64])
def test_every_order_and_scope_of_load_store_exchange(kq: sycl.queue, dtype: type) -> None:
    """Each ``memory_order`` the operation allows, at each ``memory_scope`` (§3.8.3.1-2)."""
    n = 64
    cells = np.zeros(16, dtype=dtype)
    seen = np.zeros((n, 3), dtype=dtype)
    with sycl.buffer(cells) as C, sycl.buffer(seen) as S:
        def cg(h: sycl.handler) -> None:
            c = C.get_access(h, sycl.access_mode.read_write)
            s = S.get_access(h, sycl.access_mode.write)

            def k(i):  # type: ignore[no-untyped-def]
                if i == 0:
                    sycl.atomic_ref(c, 0, MO.relaxed, MS.work_item).store(1)
                    sycl.atomic_ref(c, 1, MO.release, MS.sub_group).store(2)
                    sycl.atomic_ref(c, 2, MO.seq_cst, MS.work_group).store(3)
                    sycl.atomic_ref(c, 3, MO.relaxed, MS.device).store(4)
                    sycl.atomic_ref(c, 4, MO.release, MS.system).store(5)
                sycl.atomic_ref(c, 5, MO.relaxed, MS.device).exchange(6)
                sycl.atomic_ref(c, 6, MO.acquire, MS.work_group).exchange(7)
                sycl.atomic_ref(c, 7, MO.release, MS.system).exchange(8)
                sycl.atomic_ref(c, 8, MO.acq_rel, MS.sub_group).exchange(9)
                sycl.atomic_ref(c, 9, MO.seq_cst, MS.work_item).exchange(10)
                s[i, 0] = sycl.atomic_ref(c, 5, MO.relaxed, MS.system).load()
                s[i, 1] = sycl.atomic_ref(c, 6, MO.acquire, MS.device).load()
                s[i, 2] = sycl.atomic_ref(c, 9, MO.seq_cst, MS.work_item).load()

            h.parallel_for(sycl.range(n), k)

        kq.submit(cg)
    np.testing.assert_array_equal(cells[:10], np.arange(1, 11, dtype=dtype))
    np.testing.assert_array_equal(seen, np.tile(np.array([6, 7, 10], dtype=dtype), (n, 1)))
