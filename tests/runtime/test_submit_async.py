"""A submit returns before its kernel ends: it enqueues, it does not wait.

Dropping a buffer's earlier host-to-device copy event (a pyopencl ``NannyEvent``, whose
destructor waits) inside the submit made it wait for the kernel behind the copy on the
Intel CPU device, about every other time (found in issue 22's CI runs).
"""

from __future__ import annotations

import numpy as np

import pysycl as sycl


def _spin(buf: sycl.buffer, m: int):
    def cg(h: sycl.handler) -> None:
        acc = buf.get_access(h, sycl.access_mode.write)

        def k(i: sycl.item) -> None:
            x = 0.0
            for _ in range(m):
                x = x * 0.5 + 1.0
            acc[i] = x + i[0]

        h.parallel_for(sycl.range(2), k)

    return cg


def test_a_submit_does_not_wait_for_its_kernel(kq: sycl.queue) -> None:
    m = 1 << 27  # about 0.2-0.5 s of a dependent loop per work-item on a CPU core
    kq.submit(_spin(sycl.buffer(np.zeros(2)), 1)).wait()  # compiled
    done = []
    for _ in range(5):
        a = np.zeros(2)
        buf = sycl.buffer(a)  # fresh: its first command copies the host data in first
        ev = kq.submit(_spin(buf, m))
        status = ev.get_info(sycl.info.event.command_execution_status)
        done.append(status is sycl.info.event_command_status.complete)
        ev.wait()
        with sycl.host_accessor(buf) as h:
            assert list(h) == [2.0, 3.0]
    assert not any(done), f"submits that returned after their kernel had ended: {done}"
