"""The host_debuggable device's executor: command groups run in the Python interpreter.

A queue on the host device (:mod:`pysycl._backends.host.device`) has a
:class:`HostExecutor`; its ``submit`` runs each command group to completion.
Design: docs/design/host-device.md.

* **Data**: for the host device a buffer's "device copy" is its host copy. Each
  requirement calls ``Coherence.acquire_host`` (:mod:`pysycl._memory.coherence`), which waits for
  OpenCL work on the buffer and copies newer device data back; the buffer is
  then current on the host (and OpenCL queues copy it again when they need it).
  Commands complete before ``submit`` returns: events are complete host events.
* **Kernels** are the user's Python function itself. The capture rules are the
  compiled path's (:func:`pysycl._kernels.launch._capture_values`), so the same kernel is
  accepted or rejected with the same error on both devices. While the kernel runs,
  each accessor is bound to a numpy view of its (ranged) region, each
  ``local_accessor`` to a fresh array per work-group.
* **range** kernels run as a loop in the calling thread (pdb works as anywhere).
  **nd_range** kernels run one work-group at a time, one thread per work-item,
  scheduled deterministically by :class:`_GroupRun`: exactly one work-item runs
  at a time, in local-linear-id order, until it reaches a barrier or returns,
  so ``print`` output is ordered and a pdb session is never interleaved with
  another work-item. A barrier that not every work-item reaches (some returned,
  or they wait at different barriers) is detected exactly and raises
  ``errc.kernel`` naming the kernel and the lines -- no timeout, which would fire
  while a user sits in pdb.
* **Errors**: an exception raised by the kernel is re-raised from ``submit`` as
  ``sycl.exception(errc.kernel)`` chained to the original (whose traceback shows
  the kernel's line); a ``sycl.exception`` raised inside the kernel (such as
  ``errc.accessor`` for a write through a read accessor) is re-raised itself with a
  note naming the kernel and work-item. Buffers the kernel writes are restored
  to their previous contents, so a failed kernel leaves them as they were.
"""

from __future__ import annotations

import builtins
import contextvars
import itertools
import operator
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np

from pysycl._commands.commands import (
    CopyCommand,
    FillCommand,
    HostTaskCommand,
    KernelCommand,
)
from pysycl._commands.event import event
from pysycl._commands.host_task import run_host_task
from pysycl._core.exceptions import errc, exception
from pysycl._core.sites import in_package
from pysycl._kernels import kernel_api as _kernel_api
from pysycl._kernels.kernel_api import local_accessor
from pysycl._memory.accessor import accessor
from pysycl._objects.range import group, item, nd_item, nd_range
from pysycl._objects.range import np_index as _np_index
from pysycl._objects.range import range as _range

_atomic_lock = threading.Lock()


# ------------------------------------------------------------------ submit
class HostExecutor:
    """The executor of a queue on the host device: every command completes at submit.

    It holds no device memory: buffers' host copies are the device copies.
    """

    __slots__ = ("__weakref__",)
    native = None  # no backend queue

    def __init__(self, ctx: Any, dev: Any, *, profiling: bool) -> None:
        pass

    def submit(self, q: Any, h: Any) -> event:
        return submit(q, h)

    def wait(self) -> None:
        pass  # each command group completed at submit

    def wait_events(self, natives: Any) -> None:
        pass

    def status(self, native: Any) -> str:
        return "complete"

    def profile(self, native: Any, which: str) -> int:
        raise exception(errc.invalid, "the host device has no profiling timestamps")

    def read(self, host: np.ndarray, mem: Any, wait_for: Any) -> None:
        raise exception(errc.invalid, "the host device holds no device copies")


def submit(q: Any, h: Any) -> event:
    """Execute the command group recorded in ``h`` on the host device queue ``q``."""
    cmd = h._cmd
    # may raise: nothing moved yet
    run = _prepare(q, h, cmd) if type(cmd) is KernelCommand else None
    for e in h._deps:
        e.wait()
    if type(cmd) is HostTaskCommand:
        return run_host_task(q, h, cmd)
    for acc in h._reqs:
        acc._buf._storage.acquire_host(writes=acc._ktype.mode != "read", no_init=acc._no_init)
    match cmd:
        case KernelCommand():
            run()  # type: ignore[misc]
        case FillCommand(dest=acc, value=value):
            region_view(acc)[...] = np.asarray(value, dtype=acc.dtype)
        case CopyCommand(src=src, dest=dest):
            _copy(src, dest)
        case _:  # update_host: acquire_host above made the host copy current; empty: nothing
            pass
    return event._make(q, None, deps=h._deps)


def region_view(acc: accessor, writable: bool = True) -> np.ndarray:
    """The numpy view of an accessor's (ranged) region of its buffer's host copy.

    The same addressing as the device ABI (:mod:`pysycl._core.abi`): a linear
    offset, the access range, row-major strides of the root buffer's range.
    """
    host = acc._buf._storage.host
    rng = tuple(acc._range)
    mem = tuple(acc._buf._root_range())
    strides = [host.itemsize] * len(mem)
    for d in builtins.range(len(mem) - 2, -1, -1):
        strides[d] = strides[d + 1] * mem[d + 1]
    if 0 in rng:
        return np.empty(rng, dtype=host.dtype)
    return np.lib.stride_tricks.as_strided(host[acc._tail[0]:], shape=rng, strides=strides,
                                           writeable=writable)


class KernelView(np.ndarray):
    """A numpy array indexed with SYCL's rules: a negative index is out of bounds.

    Accessors, local accessors and private arrays are bound to such views while
    a kernel runs, so ``acc[-1]`` raises ``IndexError`` (reported as ``errc.kernel``)
    like ``acc[n]`` does, instead of wrapping around as numpy would.
    """

    def __getitem__(self, idx: Any) -> Any:
        check_index(idx, self.shape)
        return super().__getitem__(idx)

    def __setitem__(self, idx: Any, value: Any) -> None:
        check_index(idx, self.shape)
        super().__setitem__(idx, value)


def check_index(idx: Any, shape: tuple[int, ...], past_end: bool = False) -> None:
    """Raise ``IndexError`` for a negative index component (and one past the end if asked)."""
    for d, i in enumerate(idx if type(idx) is tuple else (idx,)):
        try:
            v = operator.index(i)
        except TypeError:
            continue  # a slice or Ellipsis: numpy's own rules (host code only)
        if v < 0 or (past_end and d < len(shape) and v >= shape[d]):
            size = shape[d] if d < len(shape) else 0
            why = " (SYCL indices do not wrap around)" if v < 0 else ""
            raise IndexError(f"index {v} is out of bounds for axis {d} with size {size}{why}")


def _copy(src: Any, dst: Any) -> None:
    if isinstance(src, accessor):
        s = region_view(src, writable=False).reshape(-1)
    else:
        s = np.asarray(src).reshape(-1)
    if isinstance(dst, accessor):
        d = region_view(dst)
        flat = d.reshape(-1).copy()
        flat[:s.size] = s[:flat.size]
        d[...] = flat.reshape(d.shape)
    else:
        if not dst.flags.c_contiguous or dst.dtype != src.dtype:
            raise exception(errc.invalid, "copy(accessor, array): the destination must be a "
                            f"C-contiguous {src.dtype} array")
        dst.reshape(-1)[:s.size] = s


# ----------------------------------------------------------------- kernels
def _describe(fn: Any) -> str:
    code = getattr(fn, "__code__", None)
    where = f" ({code.co_filename}:{code.co_firstlineno})" if code is not None else ""
    return f"kernel {getattr(fn, '__qualname__', fn)!r}{where}"


def _prepare(q: Any, h: Any, cmd: KernelCommand) -> Callable[[], None]:
    """Check a kernel command as the compiled path does; return the function that runs it."""
    from pysycl._bundles import kernel as _kernel
    from pysycl._kernels import launch as _launch
    from pysycl._kernels import specconst as _specconst

    kind, index_space, fn, reds, kernel_name = (
        cmd.kind, cmd.index_space, cmd.fn, cmd.reductions, cmd.name)
    if type(fn) is _kernel.kernel:
        raise exception(errc.kernel_not_supported, f"{fn!r} is an OpenCL kernel object; the "
                        "host_debuggable device runs Python kernels only")
    if h._bundle is not None:
        raise exception(errc.kernel_not_supported, "use_kernel_bundle: kernel bundles hold "
                        "device images for OpenCL devices; the host_debuggable device runs the "
                        "Python kernel itself (submit it without use_kernel_bundle)")
    desc = _describe(fn) if kernel_name is None else f"kernel {kernel_name!r}"
    for r in reds:
        if r._handler is not h:
            raise exception(errc.invalid, f"{r._where}: the reduction was created in another "
                            "command group")
    _, values, _, _ = _launch._capture_values(fn, h)  # the compiled path's capture rules
    locals_ = [v for v in values if type(v) is local_accessor]
    if locals_ and kind != "nd_range":
        raise exception(errc.kernel_argument, f"{desc} captures a sycl.local_accessor, but "
                        "local memory exists only in nd_range kernels: launch it with "
                        "h.parallel_for(sycl.nd_range(global_range, local_range), kernel)")
    if kind == "nd_range":
        _check_nd_range(desc, index_space, locals_, reds)
    nparams = 0 if kind == "single_task" else 1 + len(reds)
    extra: list[Any] = []
    if fn.__code__.co_argcount == nparams + 1:  # a trailing sycl.kernel_handler
        kh = object.__new__(_specconst.kernel_handler)
        kh._values = dict(h._spec or {})
        extra.append(kh)
    reqs = list(h._reqs)

    def run() -> None:
        reducers = [_HostReducer(r) for r in reds]
        backups = {}
        for acc in reqs:
            st = acc._buf._storage
            if acc._ktype.mode != "read" and id(st) not in backups:
                backups[id(st)] = (st.host, st.host.copy())
        for acc in reqs:
            acc._hostview = region_view(acc, writable=acc._ktype.mode != "read").view(KernelView)
        try:
            if kind == "single_task":
                _call(desc, fn, (*extra,), "the single task")
            elif kind == "range":
                _run_range(desc, fn, index_space, reducers, extra)
            else:
                with np.errstate(all="ignore"):  # device arithmetic: wrap-around, inf/nan
                    _run_nd_range(desc, fn, index_space, locals_, reducers, extra)
            for r in reducers:
                r.write_back()
        except BaseException:
            for host, saved in backups.values():
                host[...] = saved  # a failed kernel leaves its buffers as they were
            raise
        finally:
            for acc in reqs:
                acc._hostview = None
            for la in locals_:
                la._hostview = None

    return run


def _check_nd_range(desc: str, nd: nd_range, locals_: list[Any], reds: Any) -> None:
    """The compiled path's launch checks (§4.9.4.2.2), with the host device's limits."""
    from pysycl._backends.host.device import LOCAL_MEM_SIZE, MAX_WORK_GROUP_SIZE

    def describe(what: str) -> str:
        if what == "where":
            return desc
        if what == "wg":
            return (f"the {MAX_WORK_GROUP_SIZE} of the host_debuggable device "
                    "(info.device.max_work_group_size); use a smaller local range")
        return (f"the {LOCAL_MEM_SIZE} bytes of the host_debuggable device "
                "(info.device.local_mem_size)")

    from pysycl._kernels import launch as _launch

    _launch.check_nd_range(nd, MAX_WORK_GROUP_SIZE, None,
                           sum(la.byte_size() for la in locals_), LOCAL_MEM_SIZE, describe)


def _user_line(e: BaseException) -> str:
    """``file:line`` of the innermost traceback frame outside pysycl (the kernel's code)."""
    frames = [f for f in traceback.extract_tb(e.__traceback__)
              if not in_package(f.filename)]
    return f"{frames[-1].filename}:{frames[-1].lineno}" if frames else "?"


def _raise_from(desc: str, e: BaseException, who: str) -> None:
    """Re-raise ``e`` (raised by the kernel as ``who``) as the kernel's error."""
    if isinstance(e, exception):
        e.add_note(f"raised in {desc}, {who}, at {_user_line(e)} (host_debuggable device)")
        raise e
    raise exception(errc.kernel, f"{desc} raised {type(e).__name__}: {e} in {who}, at "
                    f"{_user_line(e)} (host_debuggable device)") from e


def _call(desc: str, fn: Any, args: tuple[Any, ...], who: str) -> None:
    prev = getattr(_kernel_api._host, "active", False)
    _kernel_api._host.active = True
    try:
        with np.errstate(all="ignore"):  # device arithmetic: wrap-around, inf/nan, no warnings
            fn(*args)
    except Exception as e:
        _raise_from(desc, e, who)
    finally:
        _kernel_api._host.active = prev


class _HostItem(item):
    """A range kernel's work-item; a 1-D item also acts as an integer (as in kernels)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, item):
            return super().__eq__(other)
        return bool(operator.index(self) == other)

    __hash__ = item.__hash__


def _int_op(op: Callable[[Any, Any], Any], reflected: bool = False) -> Callable[..., Any]:
    if reflected:
        return lambda self, other: op(other, operator.index(self))
    return lambda self, other: op(operator.index(self), other)


for _name, _op in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                   ("floordiv", operator.floordiv), ("truediv", operator.truediv),
                   ("mod", operator.mod), ("lshift", operator.lshift),
                   ("rshift", operator.rshift), ("and", operator.and_), ("or", operator.or_),
                   ("xor", operator.xor)):
    setattr(_HostItem, f"__{_name}__", _int_op(_op))
    setattr(_HostItem, f"__r{_name}__", _int_op(_op, reflected=True))
for _name, _op in (("lt", operator.lt), ("le", operator.le), ("gt", operator.gt),
                   ("ge", operator.ge)):
    setattr(_HostItem, f"__{_name}__", _int_op(_op))
_HostItem.__int__ = item.__index__  # type: ignore[method-assign]
_HostItem.__neg__ = lambda self: -operator.index(self)  # type: ignore[attr-defined]


def _run_range(desc: str, fn: Any, rng: _range, reducers: list[Any], extra: list[Any]) -> None:
    prev = getattr(_kernel_api._host, "active", False)
    _kernel_api._host.active = True
    idx: tuple[int, ...] = ()
    try:
        with np.errstate(all="ignore"):
            for idx in itertools.product(*(builtins.range(n) for n in rng)):
                fn(_HostItem(idx, rng), *reducers, *extra)
    except Exception as e:
        _raise_from(desc, e, f"work-item {idx}")
    finally:
        _kernel_api._host.active = prev


# ---------------------------------------------------------------- nd_range
class _Abort(BaseException):
    """Unwinds a work-item whose work-group failed (not an ``Exception``: kernels can't catch it)."""


_READY, _WAITING, _DONE = 0, 1, 2


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

    def __init__(self, n: int, desc: str, group_id: tuple[int, ...]) -> None:
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
        self.snapshot: list[Any] = []
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
        done = [j for j in builtins.range(self.n) if state[j] == _DONE]
        sites = {self.sites[j] for j in waiting}
        if done:
            file, line = self.sites[waiting[0]]  # type: ignore[misc]
            self._fail(exception(
                errc.kernel, f"{self.desc}: in work-group {self.group_id}, work-items "
                f"{_ids(waiting)} wait at the barrier at {file}:{line}, but work-items "
                f"{_ids(done)} returned without reaching it; every work-item of a work-group "
                "must reach each group barrier and group function (work-group uniform "
                "control flow)"), "the work-group")
            return
        if len(sites) > 1:
            where = "; ".join(f"work-items {_ids([j for j in waiting if self.sites[j] == s])} "
                              f"at {s[0]}:{s[1]}" for s in sorted(sites))  # type: ignore[index]
            self._fail(exception(
                errc.kernel, f"{self.desc}: in work-group {self.group_id}, work-items wait at "
                f"different barriers ({where}); every work-item of a work-group must reach "
                "the same group barriers and group functions in the same order"),
                "the work-group")
            return
        self.snapshot = list(self.values)
        for j in waiting:
            state[j] = _READY
        self.turn = waiting[0]
        self.conds[self.turn].notify()

    def barrier(self, j: int, value: Any = None) -> list[Any]:
        """Work-item ``j`` reaches a barrier; returns every work-item's ``value``."""
        site = _site()
        cond = self.conds[j]
        with self.lock:
            if self.turn != j:  # only after the group failed
                raise _Abort
            self.state[j] = _WAITING
            self.sites[j] = site
            self.values[j] = value
            self._advance()
            while self.turn != j and self.error is None:
                cond.wait()
            if self.error is not None:
                raise _Abort
            return self.snapshot

    def work_item(self, j: int, fn: Any, args: tuple[Any, ...], who: str) -> None:
        """Thread body of work-item ``j``: never lets an exception escape the thread."""
        _kernel_api._host.active = True
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


class _HostGroup(group):
    """A work-group seen from one work-item, with the host barrier behind it."""

    __slots__ = ("_lin", "_run")

    def _host_barrier(self) -> None:
        self._run.barrier(self._lin)

    def _host_collective(self, x: Any) -> list[Any]:
        return self._run.barrier(self._lin, x)


class _HostSubGroup:
    """``sycl.sub_group`` on the host device: every work-item is a sub-group of one."""

    __slots__ = ("_it",)

    def __init__(self, it: _HostNdItem) -> None:
        self._it = it

    def get_local_id(self) -> int:
        return 0

    get_local_linear_id = get_local_id

    def get_local_range(self) -> _range:
        return _range(1)

    get_max_local_range = get_local_range

    def get_local_linear_range(self) -> int:
        return 1

    def get_group_id(self) -> int:
        return int(self._it._lin)

    get_group_linear_id = get_group_id

    def get_group_range(self) -> _range:
        return _range(self._it.get_local_range().size())

    def get_group_linear_range(self) -> int:
        return int(self._it.get_local_range().size())

    def leader(self) -> bool:
        return True

    def _host_barrier(self) -> None:
        pass

    def _host_collective(self, x: Any) -> list[Any]:
        return [x]


class _HostNdItem(nd_item):
    """An nd_range kernel's work-item on the host device."""

    __slots__ = ("_group_id", "_lin", "_run")

    def get_group(self, dimension: int | None = None) -> Any:
        if dimension is not None:
            return self._group_id[dimension]
        g = _HostGroup(self._group_id, tuple(self.get_local_id()), self._nd)
        g._run = self._run
        g._lin = self._lin
        return g

    def get_sub_group(self) -> _HostSubGroup:
        return _HostSubGroup(self)

    def barrier(self, fence_space: Any = None) -> None:
        self._run.barrier(self._lin)


def _run_nd_range(desc: str, fn: Any, nd: nd_range, locals_: list[Any],
                  reducers: list[Any], extra: list[Any]) -> None:
    loc = tuple(nd._local)
    groups = tuple(nd.get_group_range())
    n = int(np.prod(loc))
    local_ids = list(itertools.product(*(builtins.range(e) for e in loc)))
    for gid in itertools.product(*(builtins.range(g) for g in groups)):
        for la in locals_:  # fresh local memory per work-group; NaN shows uninitialized reads
            la._hostview = np.full(tuple(la._range), np.nan if la.dtype.kind in "fc" else 0,
                                   dtype=la.dtype).view(KernelView)
        run = _GroupRun(n, desc, gid)
        threads = []
        for j, lid in enumerate(local_ids):
            it = _HostNdItem([g * e + i for g, e, i in zip(gid, loc, lid, strict=True)], nd)
            it._run, it._lin, it._group_id = run, j, gid
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
                _raise_from(desc, e, who)
            raise e


# ------------------------------------------------------------------ atomics
_ATOMIC_KINDS = "iuf"


class _HostAtomicRef:
    """``sycl.atomic_ref`` on the host device: each operation under one lock."""

    __slots__ = ("_arr", "_idx")

    def __init__(self, arr: np.ndarray, idx: Any) -> None:
        self._arr = arr
        self._idx = idx

    def load(self) -> Any:
        with _atomic_lock:
            return self._arr[self._idx]

    def store(self, v: Any) -> None:
        with _atomic_lock:
            self._arr[self._idx] = v

    def exchange(self, v: Any) -> Any:
        with _atomic_lock:
            old = self._arr[self._idx]
            self._arr[self._idx] = v
            return old

    def compare_exchange_strong(self, expected: Any, desired: Any) -> tuple[bool, Any]:
        a = self._arr
        with _atomic_lock:
            old = a[self._idx]
            # Compare bit patterns, as C++ does (and the device's compare-exchange).
            exp = np.asarray(expected, dtype=a.dtype)
            same = np.asarray(old).tobytes() == exp.tobytes()
            if same:
                a[self._idx] = desired
            return bool(same), old

    compare_exchange_weak = compare_exchange_strong

    def _fetch(self, op: Callable[[Any, Any], Any], v: Any) -> Any:
        a = self._arr
        with _atomic_lock:
            old = a[self._idx]
            a[self._idx] = op(old, a.dtype.type(v))
            return old

    def fetch_add(self, v: Any) -> Any:
        return self._fetch(operator.add, v)

    def fetch_sub(self, v: Any) -> Any:
        return self._fetch(operator.sub, v)

    def fetch_min(self, v: Any) -> Any:
        return self._fetch(lambda a, b: b if b < a else a, v)

    def fetch_max(self, v: Any) -> Any:
        return self._fetch(lambda a, b: b if b > a else a, v)

    def fetch_and(self, v: Any) -> Any:
        return self._int_fetch(operator.and_, v, "fetch_and")

    def fetch_or(self, v: Any) -> Any:
        return self._int_fetch(operator.or_, v, "fetch_or")

    def fetch_xor(self, v: Any) -> Any:
        return self._int_fetch(operator.xor, v, "fetch_xor")

    def _int_fetch(self, op: Callable[[Any, Any], Any], v: Any, name: str) -> Any:
        if self._arr.dtype.kind not in "iu":
            raise TypeError(f"atomic_ref.{name} needs an integer element type, not "
                            f"{self._arr.dtype}")
        return self._fetch(op, v)


def host_atomic_ref(acc: Any, index: Any) -> _HostAtomicRef:
    """An ``atomic_ref`` to ``acc[index]`` of a bound accessor or local accessor."""

    if isinstance(acc, accessor) and acc._ktype.mode == "read":
        raise exception(errc.kernel, "sycl.atomic_ref on an accessor with access_mode.read: "
                        "atomics write; use access_mode.read_write")
    arr = acc._hostview
    if arr.dtype.kind not in _ATOMIC_KINDS or arr.dtype.itemsize not in (4, 8):
        raise TypeError(f"sycl.atomic_ref: element type {arr.dtype} is not supported (int32, "
                        "uint32, int64, uint64, float32, float64)")
    idx = _np_index(index)
    check_index(idx, arr.shape, past_end=True)
    return _HostAtomicRef(arr, idx)


# --------------------------------------------------------------- reductions
class _HostReducer:
    """A reducer for one ``sycl.reduction``: one host accumulator, combined under a lock.

    The result is ``combine(old value, every combined value)``, or the combination
    starting at the identity with ``initialize_to_identity`` (§4.10.2).
    """

    __slots__ = ("_acc", "_dt", "_fn", "_lock", "_op", "_r")

    def __init__(self, r: Any) -> None:
        self._r = r
        self._dt = r._dtype.type
        self._fn = r._combiner
        self._op = r._op
        self._acc = r._identity
        self._lock = threading.Lock()

    def combine(self, x: Any) -> _HostReducer:
        with self._lock:
            self._acc = self._dt(self._fn(self._acc, self._dt(x)))
        return self

    def _only(self, op: str, symbol: str, x: Any) -> _HostReducer:
        if self._op != op:
            raise exception(errc.kernel, f"reducer {symbol} x: a reducer of "
                            f"{'sycl.' + self._op + '()' if self._op != 'custom' else 'a custom combiner'}"
                            f" has no operator {symbol} (no operator op=; it is for "
                            f"sycl.{op}()); use r.combine(x)")
        return self.combine(x)

    def __iadd__(self, x: Any) -> _HostReducer:
        return self._only("plus", "+=", x)

    def __imul__(self, x: Any) -> _HostReducer:
        return self._only("multiplies", "*=", x)

    def __iand__(self, x: Any) -> _HostReducer:
        return self._only("bit_and", "&=", x)

    def __ior__(self, x: Any) -> _HostReducer:
        return self._only("bit_or", "|=", x)

    def __ixor__(self, x: Any) -> _HostReducer:
        return self._only("bit_xor", "^=", x)

    def write_back(self) -> None:
        out = self._r._acc._hostview
        flat = out.reshape(-1)
        with np.errstate(all="ignore"):
            flat[0] = self._acc if self._r._init else self._dt(self._fn(flat[0], self._acc))

    def __repr__(self) -> str:
        return f"<sycl reducer {self._r!r} on the host device>"


_kernel_api.install_host_implementation(atomic_ref=host_atomic_ref, array_view=KernelView)
