"""Every registered backend implements the backend protocols (``pysycl/_core/backends.py``).

Structural first, with no ``isinstance``: each member of ``Backend`` and ``Executor``
exists on every registered backend and on an executor of each of its devices, methods
with the protocol's parameters (``inspect.signature``: same names in the same order;
extra parameters only with defaults). Then the memory half of ``Executor`` as
behaviour: bytes written come back, a waited event is complete, timestamps are
ordered. A new backend folder gets these checks with no new test code
(docs/design/launch.md §2.9).
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import pysycl as sycl
import pysycl.testing
from pysycl._core import backends as base

_EXECUTORS = [(b, d) for b in base.registered() for p in b.platforms() for d in p.get_devices()]


def _members(proto: type) -> tuple[list[str], list[str]]:
    """(methods, data attributes) a protocol declares."""
    methods = [n for n, v in vars(proto).items() if not n.startswith("_") and callable(v)]
    return methods, [n for n in vars(proto).get("__annotations__", {}) if n not in methods]


def protocol_problems(obj: Any, proto: type) -> list[str]:
    """What ``obj`` lacks of ``proto``: missing attributes, methods, or their parameters."""
    who = type(obj).__name__
    methods, attrs = _members(proto)
    out = [f"{who} has no attribute {a!r} of {proto.__name__}" for a in attrs
           if not hasattr(obj, a)]
    for name in methods:
        impl = getattr(obj, name, None)
        if not callable(impl):
            out.append(f"{who} lacks {proto.__name__}.{name}")
            continue
        want = list(inspect.signature(getattr(proto, name)).parameters.values())[1:]
        have = list(inspect.signature(impl).parameters.values())
        names = [p.name for p in have]
        if [p.name for p in want] != names[:len(want)] or any(
                p.kind != w.kind for p, w in zip(have, want, strict=False)):
            out.append(f"{who}.{name}{inspect.signature(impl)} does not take "
                       f"{proto.__name__}.{name}'s parameters {[p.name for p in want]}")
        out += [f"{who}.{name}: extra parameter {p.name!r} has no default"
                for p in have[len(want):] if p.default is p.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return out


def _id(pair: tuple[Any, sycl.device]) -> str:
    b, d = pair
    return f"{b.kind.name}:{d.get_info(sycl.info.device.name)}"


def test_every_backend_has_devices_to_check() -> None:
    kinds = {b.kind for b, _ in _EXECUTORS}
    # every backend with visible platforms (OpenCL, the host device; CUDA where a driver is)
    assert kinds == {p.get_backend() for p in sycl.platform.get_platforms()}
    assert sycl.backend.ext_pysycl_host in kinds


@pytest.mark.parametrize("b", base.registered(), ids=lambda b: b.kind.name)
def test_the_backend_implements_the_backend_protocol(b: Any) -> None:
    assert protocol_problems(b, base.Backend) == []
    assert isinstance(b.kind, sycl.backend)
    assert all(p.get_backend() is b.kind for p in b.platforms())


@pytest.fixture(params=_EXECUTORS, ids=[_id(x) for x in _EXECUTORS])
def executor(request: pytest.FixtureRequest) -> Any:
    b, d = request.param
    ex = b.executor(sycl.context(d), d, profiling=True)
    yield ex
    ex.wait()


def test_the_executor_implements_the_executor_protocol(executor: Any) -> None:
    assert protocol_problems(executor, base.Executor) == []
    hash(executor.key)  # keys name buffer copies: they must be hashable


@pytest.mark.parametrize("pair", _EXECUTORS, ids=[_id(x) for x in _EXECUTORS])
def test_device_backends_implement_the_device_executor_protocol(pair: tuple[Any, Any]) -> None:
    """A backend with programs (one that runs compiled kernels) has ``DeviceExecutor``
    executors: what reductions, ``sycl.kernel`` objects and the launch code ask of them."""
    b, d = pair
    ex = b.executor(sycl.context(d), d, profiling=False)
    if b.kind is sycl.backend.ext_pysycl_host:
        assert protocol_problems(ex, base.DeviceExecutor) != []  # the host device runs none
    else:
        assert protocol_problems(ex, base.DeviceExecutor) == []
    ex.wait()


_KERNEL_DEVICES = pysycl.testing.devices()


@pytest.mark.parametrize("dev", _KERNEL_DEVICES, ids=[d.display_name for d in _KERNEL_DEVICES])
def test_executor_launch_runs_a_kernel_without_a_command_group(dev: sycl.device) -> None:
    """``Executor.launch`` (``q.parallel_for(r, k)``'s way in), the whole way and then
    remembered, on every device that runs Python kernels: the kernel writes its pointer,
    and the native event it returns is one the executor waits for."""
    q = sycl.queue(dev)
    p = sycl.malloc_device(4, q, dtype=np.int32)
    try:
        for add in (5, 7):
            def k(i: sycl.item) -> None:
                p[i[0]] = i[0] + add

            native = q.executor.launch(q, "range", sycl.range(4), k, None)
            if native is not None:
                q.executor.wait_event(native)
                assert q.executor.status(native) == "complete"
            out = np.zeros(4, np.int32)
            q.memcpy(out, p, 16).wait()
            assert list(out) == [add, add + 1, add + 2, add + 3]
    finally:
        q.wait()
        sycl.free(p, q)


def test_memory_round_trips_through_the_executor(executor: Any) -> None:
    data = np.arange(37, dtype=np.int32) * 3 - 50
    mem = executor.alloc(data.nbytes)
    ev = executor.write(mem, data, None)
    executor.wait_event(ev)
    assert executor.status(ev) == "complete"
    executor.wait_events([ev])
    back = np.zeros_like(data)
    executor.read(back, mem, [ev] if ev is not None else None)
    np.testing.assert_array_equal(back, data)
    if ev is not None:  # a native event (the host device's are None: done at submit)
        t = [executor.profile(ev, w) for w in ("submit", "start", "end")]
        assert all(isinstance(x, int) for x in t) and t == sorted(t)
    executor.wait()
    executor.free(mem)


def test_a_backend_lacking_the_protocol_is_named() -> None:
    class Partial:
        native = None

        def submit(self, q: Any, h: Any) -> None: ...  # the protocol's before B2
        def wait(self, timeout: float) -> None: ...

    problems = protocol_problems(Partial(), base.Executor)
    assert "Partial has no attribute 'key' of Executor" in problems
    assert "Partial lacks Executor.alloc" in problems
    assert any(p.startswith("Partial.submit") and "['sub']" in p for p in problems)
    assert "Partial.wait: extra parameter 'timeout' has no default" in problems


def test_a_submission_names_native_events_and_their_executors() -> None:
    """``handler.submission().waits``: another queue's native events with the executor that
    made them; the queue's own events and events done on the host left out. The queue
    wraps ``Executor.submit``'s native event (step B2)."""
    q, other = sycl.queue(), sycl.queue()
    p = sycl.malloc_device(4, q)
    try:
        mine, theirs = q.memset(p, 0, 4), other.memset(p, 1, 4)
        seen = []

        def cg(h: sycl.handler) -> None:
            h.depends_on([mine, theirs, sycl.event()])
            seen.append(list(h.submission().waits))
            h.memset(p, 2, 4)

        ev = q.submit(cg)
        if theirs.native is None:  # the host device: every command done at submit
            assert seen == [[]] and ev.native is None
        else:
            assert seen == [[(theirs.native, other.executor)]]
            assert ev.native is not None and ev.native is q.executor.last
        ev.wait()
        deps = ev.get_wait_list()  # every event given to depends_on, wrapped by the queue
        assert len(deps) == 3 and deps[:2] == [mine, theirs]
    finally:
        q.wait()
        other.wait()
        sycl.free(p, q)


def test_every_backends_programs_implement_the_programs_protocol() -> None:
    """The bundle layer's driver surface (``Programs``): OpenCL's and CUDA's modules (the
    CUDA one checked on any machine: its module imports without a driver)."""
    from pysycl._backends.cuda import programs as cuda_programs
    from pysycl._backends.opencl import programs as opencl_programs

    for mod in (opencl_programs, cuda_programs):
        assert protocol_problems(mod, base.Programs) == [], mod.__name__
    for b in base.registered():
        if b.programs is not None:
            assert protocol_problems(b.programs, base.Programs) == [], b.kind
