"""Work-group ``joint_matrix_mad`` products in flight on the host_debuggable device.

On sm_90 a work-group mad is ``wgmma.mma_async``: it reads its A and B tiles from local
memory some time between the call and the wait for it (docs/matrix.md, "Products in
flight"). The host device keeps that contract visible instead of hiding it: a work-group
A or B ``joint_matrix_load`` only names the memory, a work-group mad is queued here (per
work-item: each runs in a thread of its own), and the queued products run -- reading the
tiles then -- when the GPU would have waited for them:

* before anything else touches an accumulator (fill, load, store, copy, apply): all;
* at a work-group barrier (``group_barrier``, ``wait_for``, group algorithms): all but
  the last ``n``, the kernel's ``ext_pysycl_mads_in_flight(n)`` (0 unless given).

A kernel that overwrites a tile a product may still read gets on this device what the
GPU may give it -- the new values -- rather than a result that hides the race.
"""

from __future__ import annotations

import collections
import contextvars
import threading
from collections.abc import Callable

#: the launched kernel's ``ext_pysycl_mads_in_flight`` (the host executor sets it; the
#: work-item threads run in copies of the launching context)
mads_in_flight: contextvars.ContextVar[int] = contextvars.ContextVar("pysycl_mads_in_flight",
                                                                    default=0)
_local = threading.local()


def issue(product: Callable[[], None]) -> None:
    """Queue a work-group mad's product (the calling work-item's)."""
    q = getattr(_local, "mads", None)
    if q is None:
        q = _local.mads = collections.deque()
    q.append(product)


def complete(keep: int = 0) -> None:
    """Run the work-item's queued products, oldest first, until ``keep`` are left."""
    q = getattr(_local, "mads", None)
    while q and len(q) > keep:
        q.popleft()()


def at_barrier() -> None:
    """A work-group barrier: the products older than the kernel's last ``n`` done."""
    if getattr(_local, "mads", None):
        complete(mads_in_flight.get())
