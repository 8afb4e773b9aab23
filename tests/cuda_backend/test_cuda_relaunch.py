"""The remembered CUDA launch in one C call (``_native.Relaunch``, ``CUDAExecutor.launch``), on
any machine: the executor and its ``CUDALaunch`` are the real classes with their fields set as
their constructors set them (no driver here), the kernel is compiled for the device Python
kernels run on (its captures and arguments are the same on every target), and the driver's
``cuLaunchKernel``/``cuEventRecord`` are C-callable functions that record each call and the
argument buffer they were given. The first launch takes the Python way and primes the C call;
the C call then launches while nothing changed and refuses (``try_launch`` gives None, the
Python way takes over) for every change. The GPU runs it in test_cuda_launch_path.py."""

from __future__ import annotations

import ctypes
import gc
import struct
import threading
import types
import weakref
from collections import deque
from typing import Any

import numpy as np
import pytest

import pysycl as sycl
from pysycl._core.abi import PROPS_ATTR
from pysycl._kernels import bounds
from pysycl._kernels.argplan import refresh_for
from pysycl._kernels.cache import kernels

native = pytest.importorskip("pysycl._backends.cuda._native",
                             reason="the C extension was not built (no compiler at install)")
cl = pytest.importorskip("pysycl._backends.cuda.launch")
from pysycl._backends.cuda import objects as cobj  # noqa: E402
from pysycl._backends.cuda.executor import CUDAExecutor  # noqa: E402
from pysycl._backends.cuda.graphs import Node  # noqa: E402

N = 64
U, P = ctypes.c_uint, ctypes.c_void_p
LAUNCH = ctypes.CFUNCTYPE(ctypes.c_int, P, U, U, U, U, U, U, U, P, P, P)
RECORD = ctypes.CFUNCTYPE(ctypes.c_int, P, P)
FUNCTION, STREAM = 0xF00, 0x5700


class Driver:
    """``cuLaunchKernel`` and ``cuEventRecord`` as C callables: each call and the argument
    buffer's bytes at the launch are recorded; ``codes`` is what they return."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.codes = {"launch": 0, "record": 0}
        self.ln: Any = None

        def launch(fn, gx, gy, gz, bx, by, bz, shm, stream, params, extra):  # type: ignore[no-untyped-def]
            self.calls.append(("launch", fn, stream, bytes(self.ln.buf)))
            return self.codes["launch"]

        def record(event, stream):  # type: ignore[no-untyped-def]
            self.calls.append(("record", event, stream))
            return self.codes["record"]

        self.entries = (LAUNCH(launch), RECORD(record))

    def addresses(self) -> list[int]:
        return [ctypes.cast(f, P).value for f in self.entries]  # type: ignore[misc]

    def launched(self) -> list[bytes]:
        return [c[3] for c in self.calls if c[0] == "launch"]


def cuda_view(p: Any) -> Any:
    """``p``'s memory as a CUDA kernel takes it: a pointer whose kernel argument is the
    address (what the CUDA allocation's ``kernel_arg`` gives)."""
    v = p + 0
    v.native_arg = int(p)
    return v


class Stub:
    """A CUDA executor and the remembered launch of ``fn``'s code on it, its driver a
    :class:`Driver`; ``fn0`` (same code) is launched on ``kq`` first, for its kernel."""

    def __init__(self, kq: sycl.queue, fn0: Any, fn: Any) -> None:
        r = sycl.range(N)
        kq.parallel_for(r, fn0)
        kq.parallel_for(r, fn0).wait()
        ln0 = kq.executor.launches[fn0.__code__]
        self.kq, self.fn, self.r = kq, fn, r
        self.driver = drv = Driver()
        ex = self.ex = object.__new__(CUDAExecutor)
        ex.launches, ex.inflight, ex.pool = {}, deque(), [0xE0 + i for i in range(4)]
        ex.last = ex.shape = ex.quick = ex.started = ex.ref = None
        ex.cuctx, ex.native, ex.profiling, ex.since = object(), STREAM, False, 0.0
        ex.submitted = ex.ref_ns = 0
        ln = self.ln = drv.ln = object.__new__(cl.CUDALaunch)
        for a in ("k", "kind", "space", "gsize", "lsize", "tail", "kinds", "floats",
                  "pointers", "printer", "gen"):
            setattr(ln, a, getattr(ln0, a))
        ln.ex, ln.clk, ln.bound = ex, None, {}
        ln.grid, ln.block = (1, 1, 1), (N, 1, 1)
        ln.layout(ln0.k.arg_dtypes)
        ln.head, ln.shmem, ln.last = (FUNCTION, 1, 1, 1, N, 1, 1), 0, None
        ln.primed, ln.primer, ln.primes = None, None, True
        ln.rec = np.array([*drv.addresses(), FUNCTION, *ln.grid, *ln.block, 0, STREAM, ln.argp],
                          np.uint64)
        ln.reca = ln.rec.ctypes.data
        ln.refresh, ln.want = refresh_for(fn, ln0.k, ln.tail, True)
        ex.launches[fn.__code__] = ln
        cobj._current.ctx = ex.cuctx

    def launch(self, fn: Any = None, space: Any = None) -> Any:
        """``q.parallel_for(r, fn)`` as the queue calls the executor: C, else Python."""
        return self.ex.launch(self.kq, "range", space or self.r, fn or self.fn, None)

    def fast(self, fn: Any = None, space: Any = None, kind: str = "range",
             name: str | None = None) -> Any:
        """The C call alone: the event, or None (refused)."""
        return native.try_launch(self.ex, self.kq, kind, space or self.r, fn or self.fn, name)

    def expected(self, fn: Any = None) -> bytes:
        """The argument buffer the Python way packs for ``fn``'s captures now."""
        args = self.ln.refresh(fn or self.fn, self.ln.want)[0]
        return struct.pack(self.ln.fmt, *args)


def _adder(p: Any, v: Any) -> Any:
    def k(i):  # type: ignore[no-untyped-def]
        p[i] = p[i] + v
    return k


@pytest.fixture
def mem(kq: sycl.queue):  # type: ignore[no-untyped-def]
    ps = [sycl.malloc_device(N, kq, dtype=np.float32) for _ in range(2)]
    yield ps
    for p in ps:
        if p.live:
            sycl.free(p, kq)


@pytest.fixture
def stub(kq: sycl.queue, mem: list[Any]) -> Stub:
    s = Stub(kq, _adder(mem[0], np.float32(1)), _adder(cuda_view(mem[0]), np.float32(1)))
    s.launch()  # the Python way: packs and primes
    assert s.ln.primed is not None
    s.driver.calls.clear()
    return s


def test_the_c_call_launches_a_primed_launch_as_the_python_way_does(stub: Stub) -> None:
    ex, ln, drv = stub.ex, stub.ln, stub.driver
    hits = kernels.stats["memory_hits"]
    ev = stub.fast()
    assert type(ev) is cl.Event and ex.last is ev and ex.shape is ln
    assert drv.calls == [("launch", FUNCTION, STREAM, stub.expected()), ("record", ev.h, STREAM)]
    assert kernels.stats["memory_hits"] == hits + 1
    assert len(ex.inflight) == 1 and ex.inflight[-1][0] is ev  # the pointer held until done
    assert ex.inflight[-1][1] == (stub.fn.__closure__[0].cell_contents,)
    held = ev
    again = stub.fast()  # the previous event is held here: a new one from the pool
    assert again is not held and again.h != held.h and len(ex.inflight) == 1
    del held, ev
    h = again.h
    del again
    ref = weakref.ref(ex.last)
    assert stub.launch() is ref() and ref().h == h  # referred to by the queue only: again
    assert len(drv.launched()) == 3 and ln.primed is not None


def test_an_unobserved_event_is_reused_and_a_kept_one_never(stub: Stub) -> None:
    ex = stub.ex
    pool = len(ex.pool)
    for _ in range(50):
        stub.launch()
    assert len(ex.pool) == pool  # one event, recorded again and again
    kept = [stub.launch() for _ in range(3)]
    assert len({e.h for e in kept}) == 3 and len(ex.pool) == pool - 2
    ex.pool.clear()
    assert stub.fast() is None  # a new CUevent: the Python way makes it


def test_a_changed_capture_takes_the_python_way_and_primes_again(stub: Stub,
                                                                 mem: list[Any]) -> None:
    drv = stub.driver
    other_ptr = _adder(cuda_view(mem[1]), np.float32(1))
    other_num = _adder(stub.fn.__closure__[0].cell_contents, np.float32(2))
    for fn in (other_ptr, other_num, stub.fn):
        drv.calls.clear()
        assert stub.fast(fn) is None and drv.calls == []
        stub.launch(fn)  # the Python way
        assert drv.launched() == [stub.expected(fn)] and stub.ln.primed is not None
        assert stub.fast(fn) is not None and drv.launched()[-1] == stub.expected(fn)
    assert stub.expected(other_ptr) != stub.expected(other_num) != stub.expected()


def test_an_equal_number_of_another_object_is_checked_the_python_way(stub: Stub) -> None:
    p = stub.fn.__closure__[0].cell_contents
    same = _adder(p, np.float32(1))  # equal, another object: identity vouches for nothing
    assert stub.fast(same) is None
    stub.launch(same)
    assert stub.fast(same) is not None


def test_a_freed_pointer_is_refused(stub: Stub, kq: sycl.queue, mem: list[Any]) -> None:
    kq.wait()
    sycl.free(mem[0], kq)
    assert stub.fast() is None and stub.driver.calls == []
    assert stub.ln.refresh(stub.fn, stub.ln.want) is None  # the whole way raises (GPU test)


def test_generation_bounds_mode_properties_name_and_context_are_checked(stub: Stub) -> None:
    assert stub.fast() is not None
    kernels.generation += 1
    try:
        assert stub.fast() is None
    finally:
        kernels.generation -= 1
    bounds.mode[0] = True
    try:
        assert stub.fast() is None
    finally:
        bounds.mode[0] = False
    assert stub.fast(name="named") is None
    assert stub.fast(kind="nd_range") is None
    assert stub.fast(space=sycl.range(N // 2)) is None
    assert stub.fast(space=sycl.range(N)) is not None  # another object, the same range
    fn = types.FunctionType(stub.fn.__code__, stub.fn.__globals__, closure=stub.fn.__closure__)
    assert stub.fast(fn) is not None  # another function object of the same captures
    setattr(fn, PROPS_ATTR, ("a property",))
    assert stub.fast(fn) is None
    cobj._current.ctx = object()  # another context made current last on this thread
    try:
        assert stub.fast() is None
    finally:
        cobj._current.ctx = stub.ex.cuctx
    empty = types.FunctionType(stub.fn.__code__, stub.fn.__globals__,
                               closure=(types.CellType(), stub.fn.__closure__[1]))
    assert stub.fast(empty) is None
    assert len(stub.driver.launched()) == 3


def test_another_thread_holding_the_enqueue_lock_sends_the_launch_the_python_way(
        stub: Stub) -> None:
    held, done = threading.Event(), threading.Event()

    def hold() -> None:
        with cl._lock:
            held.set()
            done.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    held.wait(10)
    try:
        assert stub.fast() is None and stub.driver.calls == []
    finally:
        done.set()
        t.join()
    assert stub.fast() is not None


def test_repacking_the_buffer_drops_the_prime(stub: Stub, mem: list[Any]) -> None:
    ln, drv = stub.ln, stub.driver
    other = [mem[1].native_arg or int(mem[1]), *stub.ln.refresh(stub.fn, ln.want)[0][1:]]
    with cl._lock:  # a CUDA graph's capture launches its nodes holding the lock
        ln.launch_bare(other)
    assert ln.primed is None and stub.fast() is None
    stub.launch()
    assert stub.fast() is not None and drv.launched()[-1] == stub.expected()
    Node(ln, other)()  # a graph's node replayed one by one: its own arguments
    assert ln.primed is None and drv.launched()[-1] == struct.pack(ln.fmt, *other)
    assert stub.fast() is None
    stub.launch()
    assert drv.launched()[-1] == stub.expected() and stub.fast() is not None


def test_a_launch_without_a_prime_never_takes_the_c_call(stub: Stub) -> None:
    """A profiling queue's launches (``primes`` False: timed events around each) and a
    launch whose C call was switched off take the Python way every time."""
    stub.ln.primes, stub.ln.primed = False, None
    for _ in range(3):
        stub.launch()
        assert stub.ln.primed is None and stub.fast() is None
    assert len(stub.driver.launched()) == 3


def test_a_failed_launch_changes_nothing_and_a_failed_record_raises(stub: Stub) -> None:
    ex, drv = stub.ex, stub.driver
    stub.fast()
    last, pool, held = ex.last, list(ex.pool), list(ex.inflight)
    keep = last  # observed: the next launch takes an event from the pool
    drv.codes["launch"] = 701  # CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES: the Python way raises it
    assert stub.fast() is None
    assert ex.last is last and ex.pool == pool and list(ex.inflight) == held
    with pytest.raises(sycl.exception) as e:
        stub.launch()
    assert e.value.code() == sycl.errc.nd_range
    drv.codes["launch"] = 0
    stub.launch()  # primed again
    last, pool = ex.last, list(ex.pool)
    drv.codes["record"] = 400  # launched, its event not recorded: raised as the Python way
    with pytest.raises(sycl.exception) as e:
        stub.fast()
    assert e.value.code() == sycl.errc.kernel and "kernel launch failed" in str(e.value)
    assert ex.last is last and sorted(ex.pool) == sorted(pool)
    drv.codes["record"] = 0
    assert keep is not None and stub.fast() is not None


def test_a_new_held_entry_past_the_prune_mark_takes_the_python_way(stub: Stub) -> None:
    ex = stub.ex
    ex.inflight.extend((object(), ()) for _ in range(cl.PRUNE_AT))
    ex.shape = None  # another command was the newest: this launch's pointers need an entry
    assert stub.fast() is None
    ex.inflight.clear()
    assert stub.fast() is not None and len(ex.inflight) == 1


def test_a_prime_keeps_no_user_memory_alive(kq: sycl.queue, mem: list[Any]) -> None:
    view = cuda_view(mem[0])
    s = Stub(kq, _adder(mem[0], np.float32(1)), _adder(view, np.float32(1)))
    s.launch()
    assert s.ln.primed is not None
    gone = weakref.ref(view)
    s.ex.inflight.clear()  # the launches completed
    del view
    s.fn = None
    gc.collect()
    assert gone() is None  # only the weak reference of the prime was left


def test_a_prime_refuses_values_identity_cannot_vouch_for(stub: Stub) -> None:
    ln = stub.ln
    base = ("range", ln.space, ln.gen, None, ln.k, ln.reca)
    six = native.Primed(*base, b"vvvvvv", ())
    assert six.update((1.5, 2, True, 1j, np.float32(1), np.bool_(True))) is True
    one = native.Primed(*base, b"v", ())
    assert one.update((np.zeros(()),)) is False  # a mutable 0-d array
    assert one.update((np.zeros(1, [("x", np.int32)])[0],)) is False  # a structured scalar
    assert native.Primed(*base, b"p", ()).update((3,)) is False  # a "pointer" that is none
    assert native.Primed(*base, b"c", ()).update((np,)) is True
    with pytest.raises(TypeError):
        one.update((1, 2))
    with pytest.raises(ValueError):
        native.Primed(*base, b"v", ("a", "b"))


def test_a_prime_that_cannot_vouch_refuses_until_the_next_update(stub: Stub) -> None:
    """An update that fails halfway leaves the prime refusing, not half-updated."""
    pr = stub.ln.primer
    assert stub.ln.primed is pr and stub.fast() is not None
    cells = stub.fn.__closure__
    assert pr.update((cells[0].cell_contents, np.zeros(()))) is False
    assert stub.fast() is None
    assert pr.update(tuple(c.cell_contents for c in cells)) is True
    assert stub.fast() is not None


def test_the_prime_is_one_object_updated_in_place(stub: Stub, mem: list[Any]) -> None:
    pr = stub.ln.primer
    other = _adder(cuda_view(mem[1]), np.float32(5))
    stub.launch(other)
    assert stub.ln.primed is pr and stub.fast(other) is not None and stub.fast() is None
    stub.launch()
    assert stub.ln.primed is pr and stub.fast() is not None and stub.fast(other) is None


def test_the_executors_launch_is_a_method_descriptor_of_the_c_call(stub: Stub) -> None:
    assert type(CUDAExecutor.__dict__["launch"]) is native.Relaunch
    assert CUDAExecutor.launch is cl.relaunch
    bound = stub.ex.launch
    assert bound.__self__ is stub.ex
    assert bound(stub.kq, "range", stub.r, stub.fn, None) is stub.ex.last
    stub.launch()  # keyword arguments: the Python way, which takes them
    stub.ex.launch(stub.kq, "range", stub.r, stub.fn, name=None)
    assert len(stub.driver.launched()) == 3


def test_a_seen_refresh_returns_every_value_it_read(kq: sycl.queue, mem: list[Any]) -> None:
    fn = _adder(mem[0], np.float32(3))
    kq.parallel_for(sycl.range(N), fn)
    kq.parallel_for(sycl.range(N), fn).wait()
    ln = kq.executor.launches[fn.__code__]
    r, want = refresh_for(fn, ln.k, ln.tail, True)
    args, held, seen = r(fn, want)
    assert seen == tuple(c.cell_contents for c in fn.__closure__) and held == (mem[0],)
    assert r.modes == b"pv" and r.names == ()
    plain = refresh_for(fn, ln.k, ln.tail)
    assert plain is not None and len(plain[0](fn, plain[1])) == 2
    assert plain[0](fn, plain[1])[0] == args


def test_the_c_launch_has_the_executor_protocols_signature() -> None:
    """``inspect.signature`` of the C ``launch`` (bound, as ``ex.launch`` is) names
    ``Executor.launch``'s parameters: the backend conformance test reads them."""
    import inspect

    from pysycl._core.backends import Executor

    class Host:
        launch = native.Relaunch()

    want = list(inspect.signature(Executor.launch).parameters)[1:]
    assert list(inspect.signature(Host().launch).parameters) == want
