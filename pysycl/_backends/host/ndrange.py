"""nd_range kernels on the host device: one work-group at a time, one thread per work-item.

:class:`_GroupRun` schedules the work-items of a group deterministically: exactly
one runs at a time, in local-linear-id order, until it reaches a barrier or
returns (see :mod:`pysycl._backends.host.executor` and docs/design/host-device.md).
"""

from __future__ import annotations

import builtins
import contextvars
import itertools
import operator
import sys
import threading
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._backends.host.views import raise_from
from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._core.sites import in_package
from pysycl._core.where import location
from pysycl._kernels import kernel_api_host as _host
from pysycl._kernels import matrix_flight as _flight
from pysycl._kernels.kernel_api_host import KernelView
from pysycl._objects.hierarchical import hierarchical_group
from pysycl._objects.multi_ptr import memory_operand
from pysycl._objects.range import group, nd_item, nd_range
from pysycl._objects.range import id as _id
from pysycl._objects.range import range as _range

if TYPE_CHECKING:
    from pysycl._backends.host.atomics import AnyHostReducer
    from pysycl._kernels.kernel_api import local_accessor
    from pysycl._kernels.specconst import kernel_handler

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks


class _Abort(BaseException):
    """Unwinds a work-item whose work-group failed (not an ``Exception``: kernels can't catch it)."""


_READY, _WAITING, _DONE = 0, 1, 2

#: Work-items per sub-group on the host device (the last one of a work-group may be
#: smaller): consecutive local linear ids, as OpenCL CPU devices and CUDA warps form them.
SUB_GROUP_SIZE = 8


def _site() -> tuple[str, int]:
    """(file, line) of the kernel code that called into pysycl (a barrier or collective)."""
    f = sys._getframe(1)
    while f is not None and in_package(f.f_code.co_filename):
        f = f.f_back  # type: ignore[assignment]
    return (f.f_code.co_filename, f.f_lineno) if f is not None else ("?", 0)


class _GroupRun:
    """One work-group: its work-items' threads, run one at a time in local-id order.

    The running work-item holds the turn until it reaches a barrier (or a group
    collective, which is a barrier that also exchanges values) or returns; the
    turn then passes to the lowest-numbered ready work-item. When none is ready,
    every work-item still running waits at a barrier: they are released together,
    unless some have returned or they wait at different lines -- a kernel bug
    (non-uniform control flow around a barrier), reported as ``errc.kernel``.
    """

    def __init__(self, n: int, desc: str, group_id: tuple[int, ...],
                 sub_group_size: int = 0) -> None:
        #: the kernel's reqd_sub_group_size, else :data:`SUB_GROUP_SIZE`
        self.sg = sub_group_size or SUB_GROUP_SIZE
        self.lock = threading.Lock()
        # One condition per work-item, sharing the lock: passing the turn wakes
        # exactly the work-item whose turn it is (not all of them).
        self.conds = [threading.Condition(self.lock) for _ in builtins.range(n)]
        self.n = n
        self.desc = desc
        self.group_id = group_id
        self.state = [_READY] * n
        self.sites: list[tuple[str, int] | None] = [None] * n
        self.values: list[Any] = [None] * n
        # the members (lo, hi) of the sub-group a work-item waits with; None: the work-group
        self.scopes: list[tuple[int, int] | None] = [None] * n
        self.snapshots: list[list[Any]] = [[]] * n
        self.turn = 0
        self.error: tuple[BaseException, str] | None = None

    def _fail(self, e: BaseException, who: str) -> None:
        if self.error is None:
            self.error = (e, who)
        self.turn = -1
        for c in self.conds:
            c.notify()

    def _advance(self) -> None:
        """Pass the turn on (the condition's lock is held)."""
        state = self.state
        for j in builtins.range(self.n):
            if state[j] == _READY:
                self.turn = j
                self.conds[j].notify()
                return
        waiting = [j for j in builtins.range(self.n) if state[j] == _WAITING]
        if not waiting:
            self.turn = -1  # every work-item returned
            return
        scoped = [j for j in waiting if self.scopes[j] is not None]
        if scoped:
            self._release_sub_group(scoped)
            return
        done = [j for j in builtins.range(self.n) if state[j] == _DONE]
        sites = {self.sites[j] for j in waiting}
        if done:
            file, line = self.sites[waiting[0]]  # type: ignore[misc]
            self._fail(exception(
                errc.kernel, f"{self.desc}: in work-group {self.group_id}, work-items "
                f"{_ids(waiting)} wait at the barrier at {location(file, line)}, but work-items "
                f"{_ids(done)} returned without reaching it; every work-item of a work-group "
                "must reach each group barrier and group function (work-group uniform "
                "control flow)"), "the work-group")
            return
        if len(sites) > 1:
            self._fail_sites(waiting, sites, "a work-group")
            return
        self._release(waiting, list(self.values))

    def _release(self, members: list[int], values: list[Any]) -> None:
        for j in members:
            self.state[j] = _READY
            self.snapshots[j] = values
            self.scopes[j] = None
        self.turn = members[0]
        self.conds[self.turn].notify()

    def _fail_sites(self, waiting: list[int], sites: set[Any], what: str) -> None:
        where = "; ".join(f"work-items {_ids([j for j in waiting if self.sites[j] == s])} "
                          f"at {location(*s)}" for s in sorted(sites))
        self._fail(exception(
            errc.kernel, f"{self.desc}: in work-group {self.group_id}, work-items wait at "
            f"different barriers ({where}); every work-item of {what} must reach "
            "the same group barriers and group functions in the same order"), "the work-group")

    def _release_sub_group(self, scoped: list[int]) -> None:
        """Release the first sub-group whose members all wait at its barrier; else fail."""
        for lo, hi in sorted({self.scopes[j] for j in scoped}):  # type: ignore[type-var]
            members = list(builtins.range(lo, hi))
            if all(self.state[k] == _WAITING and self.scopes[k] == (lo, hi) for k in members):
                sites = {self.sites[k] for k in members}
                if len(sites) > 1:
                    self._fail_sites(members, sites, "a sub-group")
                else:
                    self._release(members, self.values[lo:hi])
                return
        lo, hi = self.scopes[scoped[0]]  # type: ignore[misc]
        file, line = self.sites[scoped[0]]  # type: ignore[misc]
        absent = [k for k in builtins.range(lo, hi) if self.scopes[k] != (lo, hi)
                  or self.state[k] != _WAITING]
        self._fail(exception(
            errc.kernel, f"{self.desc}: in work-group {self.group_id}, work-items "
            f"{_ids([k for k in scoped if self.scopes[k] == (lo, hi)])} wait at the sub-group "
            f"function or barrier at {location(file, line)}, but work-items {_ids(absent)} of their "
            "sub-group returned or wait elsewhere; every work-item of a sub-group must reach "
            "each sub-group function (sub-group uniform control flow)"), "the work-group")

    def barrier(self, j: int, value: Any = None,
                sub_group: tuple[int, int] | None = None) -> list[Any]:
        """Work-item ``j`` reaches a barrier; returns every work-item's ``value``.

        ``sub_group``: the local linear ids ``(lo, hi)`` of the sub-group whose barrier
        it is (then the values are the sub-group's); None for the work-group's.
        """
        if sub_group is None:  # work-group matrix products the barrier waits for
            _flight.at_barrier()
        site = _site()
        cond = self.conds[j]
        with self.lock:
            if self.turn != j:  # only after the group failed
                raise _Abort
            self.state[j] = _WAITING
            self.sites[j] = site
            self.values[j] = value
            self.scopes[j] = sub_group
            self._advance()
            while self.turn != j and self.error is None:
                cond.wait()
            if self.error is not None:
                raise _Abort
            return self.snapshots[j]

    def work_item(self, j: int, fn: Callable[..., object], args: tuple[Any, ...], who: str) -> None:
        """Thread body of work-item ``j``: never lets an exception escape the thread."""
        _host.set_active(True)
        cond = self.conds[j]
        try:
            with self.lock:
                while self.turn != j and self.error is None:
                    cond.wait()
                if self.error is not None:
                    return
            fn(*args)  # in a copy of the launching thread's context: numpy's errstate
        except _Abort:
            pass
        except BaseException as e:  # recorded, re-raised by the launching thread
            with self.lock:
                self._fail(e, who)
        finally:
            with self.lock:
                self.state[j] = _DONE
                if self.turn == j and self.error is None:
                    self._advance()

    def abort(self) -> None:
        with self.lock:
            self._fail(_Abort(), "interrupted")


def _ids(items: list[int]) -> str:
    if len(items) > 8:
        return f"[{', '.join(map(str, items[:8]))}, ... ({len(items)} in all)]"
    return f"[{', '.join(map(str, items))}]"


def _async_copy(lin: int, dest: Any, src: Any, num_elements: int, stride: int) -> None:
    """``async_work_group_copy`` on the host device: checked as the compiler checks it; the
    group's first work-item copies (the others reach ``wait_for``'s barrier after it)."""
    from pysycl._kernels.kernel_api import local_accessor

    d, doff = memory_operand(dest, "async_work_group_copy")
    s, soff = memory_operand(src, "async_work_group_copy")
    n, step = operator.index(num_elements), operator.index(stride)
    if isinstance(d, local_accessor) == isinstance(s, local_accessor):
        where = "local" if isinstance(d, local_accessor) else "global"
        raise TypeError(f"async_work_group_copy copies between local and global memory; dest "
                        f"and src are both {where} memory")
    dt, st = (np.dtype(getattr(x, "dtype", None)) for x in (d, s))
    if dt != st:
        raise TypeError(f"async_work_group_copy: dest holds {dt}, src {st} (the element types "
                        "must be the same)")
    if lin != 0:
        return
    dstep, sstep = (1, step) if isinstance(d, local_accessor) else (step, 1)
    for k in builtins.range(n):
        d[doff + k * dstep] = s[soff + k * sstep]


class _Copies:
    """``async_work_group_copy`` / ``wait_for`` of a host work-item (its group's barrier)."""

    __slots__ = ()
    _lin: int
    _run: _GroupRun

    def async_work_group_copy(self, dest: Any, src: Any, num_elements: int,
                              stride: int = 1) -> Any:
        """SYCL 2020's copy between global and local memory, shared by the group."""
        from pysycl._objects.device_event import device_event

        _async_copy(self._lin, dest, src, num_elements, stride)
        return device_event(lambda e: self.wait_for(e))

    def wait_for(self, *events: Any) -> None:
        """The group's copies complete: every work-item waits (a barrier)."""
        _check_events(events)
        if events:
            self._run.barrier(self._lin)


def _check_events(events: tuple[Any, ...]) -> None:
    from pysycl._objects.device_event import device_event

    for e in events:
        if not isinstance(e, device_event):
            raise TypeError("wait_for(*events) takes the sycl.device_event values "
                            f"async_work_group_copy returned; got {type(e).__name__}")


class HostHierGroup(_Copies, hierarchical_group):
    """A hierarchical kernel's group on the host device: group-scope code runs once (as the
    group's first work-item), so ``async_work_group_copy`` copies at once and ``wait_for``
    only checks its events."""

    __slots__ = ()
    _lin = 0

    def wait_for(self, *events: Any) -> None:
        """The copies are complete already (group scope runs once): the events checked."""
        _check_events(events)


class _HostGroup(_Copies, group):
    """A work-group seen from one work-item, with the host barrier behind it."""

    __slots__ = ("_lin", "_run")

    def __init__(self, group_id: Iterable[int], local_id: Iterable[int], nd: nd_range, run: _GroupRun,
                 lin: int) -> None:
        super().__init__(group_id, local_id, nd)
        self._run = run
        self._lin = lin

    def _host_barrier(self) -> None:
        self._run.barrier(self._lin)

    def _host_collective(self, x: Any) -> list[Any]:
        return self._run.barrier(self._lin, x)

    def get_linear_id(self) -> int:
        """The group's linear id (SYCL 2020's deprecated name of get_group_linear_id)."""
        return self.get_group_linear_id()

    def get_global_range(self, dimension: int | None = None) -> _range | int:
        """The launch's global range (deprecated in SYCL 2020)."""
        r = self._nd.get_global_range()
        return r if dimension is None else r[dimension]

    def parallel_for_work_item(self, *args: Any) -> None:
        """Refused: an nd_range kernel's group has no hierarchical work-items."""
        raise exception(errc.invalid, "parallel_for_work_item is for hierarchical kernels: "
                        "launch the kernel with h.parallel_for_work_group(num_groups, "
                        "[group_size,] kernel), whose kernel receives the sycl.group")


class _HostSubGroup:
    """``sycl.sub_group`` on the host device: :data:`SUB_GROUP_SIZE` consecutive work-items
    (the kernel's ``reqd_sub_group_size`` when it has one)."""

    __slots__ = ("_it", "_lin", "_n", "_run", "_sg")
    dimensions = 1

    def __init__(self, it: _HostNdItem, lin: int, run: _GroupRun) -> None:
        self._it = it
        self._lin = lin
        self._run = run
        self._n = run.n
        self._sg = run.sg

    def _bounds(self) -> tuple[int, int]:
        lo = self._lin - self._lin % self._sg
        return lo, min(lo + self._sg, self._n)

    def get_local_id(self) -> _id:
        return _id(self._lin % self._sg)

    def get_local_linear_id(self) -> int:
        return self._lin % self._sg

    def get_local_range(self) -> _range:
        return _range(self.get_local_linear_range())

    def get_max_local_range(self) -> _range:
        return _range(min(self._sg, self._n))

    def get_local_linear_range(self) -> int:
        lo, hi = self._bounds()
        return hi - lo

    def get_group_id(self) -> _id:
        return _id(self._lin // self._sg)

    def get_group_linear_id(self) -> int:
        return self._lin // self._sg

    def get_group_range(self) -> _range:
        return _range(self.get_group_linear_range())

    def get_group_linear_range(self) -> int:
        return -(-self._n // self._sg)

    def leader(self) -> bool:
        return self.get_local_linear_id() == 0

    def _host_barrier(self) -> None:
        self._run.barrier(self._lin, None, self._bounds())

    def _host_collective(self, x: Any) -> list[Any]:
        return self._run.barrier(self._lin, x, self._bounds())


class _HostNdItem(_Copies, nd_item):
    """An nd_range kernel's work-item on the host device."""

    __slots__ = ("_group_id", "_lin", "_run")

    def __init__(self, global_id: Iterable[int], nd: nd_range, run: _GroupRun, lin: int,
                 group_id: tuple[int, ...]) -> None:
        super().__init__(global_id, nd)
        self._run = run
        self._lin = lin
        self._group_id = group_id

    def get_group(self, dimension: int | None = None) -> _HostGroup | int:
        if dimension is not None:
            return self._group_id[dimension]
        return _HostGroup(self._group_id, tuple(self.get_local_id()), self._nd, self._run,
                          self._lin)

    def get_sub_group(self) -> _HostSubGroup:
        return _HostSubGroup(self, self._lin, self._run)

    def barrier(self, fence_space: object = None) -> None:
        self._run.barrier(self._lin)


def _run_nd_range(desc: str, fn: Callable[..., object], nd: nd_range,
                  locals_: list[local_accessor], reducers: list[AnyHostReducer],
                  extra: list[kernel_handler], sub_group_size: int = 0) -> None:

    loc = tuple(nd.get_local_range())
    groups = tuple(nd.get_group_range())
    n = int(np.prod(loc))
    local_ids = list(itertools.product(*(builtins.range(e) for e in loc)))
    for gid in itertools.product(*(builtins.range(g) for g in groups)):
        for la in locals_:  # fresh local memory per work-group; NaN shows uninitialized reads
            la.host_view = np.full(tuple(la.get_range()), np.nan if la.dtype.kind in "fc" else 0,
                                   dtype=la.dtype).view(KernelView)
        run = _GroupRun(n, desc, gid, sub_group_size)
        threads = []
        for j, lid in enumerate(local_ids):
            it = _HostNdItem([g * e + i for g, e, i in zip(gid, loc, lid, strict=True)], nd,
                             run, j, gid)
            who = f"work-item {tuple(it.get_global_id())} (local {lid}) of work-group {gid}"
            # Each thread runs in a copy of this context, which holds numpy's errstate
            # (the caller entered it; entering it afresh in a new thread costs ~1 ms).
            ctx = contextvars.copy_context()
            threads.append(threading.Thread(target=ctx.run, daemon=True,
                                            args=(run.work_item, j, fn,
                                                  (it, *reducers, *extra), who),
                                            name=f"pysycl work-item {j}"))
        try:
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        except BaseException:  # KeyboardInterrupt while joining: release the work-items
            run.abort()
            raise
        if run.error is not None:
            e, who = run.error
            if isinstance(e, Exception):
                raise_from(desc, e, who)
            raise e
