"""is_compatible / has_kernel_bundle / get_kernel_bundle as SYCL 2020 §4.11.7-§4.11.9 define
them and the SYCL-CTS checks them (has_kernel_bundle_core.h, sycl_is_compatible.cpp): for
``executable``, ``has_kernel_bundle`` is true exactly when the kernel is compatible with the
device (its aspects, ``device_has``); ``input``/``object`` need ``online_compiler`` /
``online_linker``; an empty kernel-id list is compatible and has a bundle. On every device
that runs Python kernels, the host_debuggable device included (its images hold the Python
kernel: ``ext_pysycl_format() == "python"``)."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from bundles._decl import RD, WR, vadd_factory

S = sycl.bundle_state
A = sycl.aspect
OPTIONAL = [A.fp16, A.fp64, A.atomic64, A.gpu, A.cpu, A.accelerator, A.custom, A.image,
            A.online_compiler, A.online_linker, A.queue_profiling, A.usm_device_allocations,
            A.usm_host_allocations, A.usm_shared_allocations, A.usm_system_allocations,
            A.host_debuggable]


@pytest.fixture(params=["compiled", "host"])
def dev(request: pytest.FixtureRequest) -> sycl.device:
    """A device that runs Python kernels: the compiled one and the host_debuggable one."""
    return request.getfixturevalue("kernel_device" if request.param == "compiled"
                                   else "host_device")


def _spec_has_kernel_bundle(d: sycl.device, compatible: bool, state: sycl.bundle_state) -> bool:
    """The spec's answer for one device and one kernel (§4.11.8)."""
    need = {S.input: A.online_compiler, S.object: A.online_linker}.get(state)
    return compatible and (need is None or d.has(need))


@pytest.mark.parametrize("asp", OPTIONAL, ids=lambda a: a.name)
def test_device_has_decides_compatibility_in_every_state(dev, asp) -> None:
    kid = sycl.ext.declare_kernel(vadd_factory, kernel_name=f"compat.{asp.name}",
                                  index_space=sycl.range(1),
                                  captures={"a": RD, "b": RD, "c": WR}, device_has=[asp])
    ctx = sycl.context(dev)
    compatible = dev.has(asp)
    assert sycl.is_compatible([kid], dev) is compatible
    assert sycl.is_compatible(f"compat.{asp.name}", dev) is compatible
    for state in (S.input, S.object, S.executable):
        want = _spec_has_kernel_bundle(dev, compatible, state)
        assert sycl.has_kernel_bundle(ctx, [kid], state=state) is want, state
        assert sycl.has_kernel_bundle(ctx, [dev], [kid], state=state) is want, state
        assert sycl.has_kernel_bundle(ctx, kernel_name=f"compat.{asp.name}", state=state) is want
        if want:  # what has_kernel_bundle promises, get_kernel_bundle gives
            kb = sycl.get_kernel_bundle(ctx, [kid], state=state)
            assert kb.has_kernel(kid) and kb.has_kernel(kid, dev)
        else:
            with pytest.raises(sycl.exception) as ei:
                sycl.get_kernel_bundle(ctx, [kid], state=state)
            assert ei.value.code() == sycl.errc.invalid


def test_empty_kernel_id_lists(dev) -> None:
    # CTS sycl_is_compatible "zero kernels", has_kernel_bundle_zero_kernels (ctx_kid, dev_kid)
    ctx = sycl.context(dev)
    assert sycl.is_compatible([], dev)
    assert sycl.has_kernel_bundle(ctx, kernel_ids=[], state=S.executable)
    assert sycl.has_kernel_bundle(ctx, [dev], kernel_ids=[], state=S.executable)
    assert sycl.get_kernel_bundle(ctx, kernel_ids=[], state=S.executable).empty()


def test_host_device_bundle_runs_the_kernel(host_device) -> None:
    kid = sycl.ext.declare_kernel(vadd_factory, kernel_name="compat.host_vadd",
                                  index_space=sycl.range(1), captures={"a": RD, "b": RD, "c": WR})
    ctx = sycl.context(host_device)
    kb = sycl.get_kernel_bundle(ctx, [kid], state=S.executable)
    assert kb.get_backend() is sycl.backend.ext_pysycl_host
    (img,) = list(kb)
    assert img.ext_pysycl_format() == "python" and img.has_kernel(kid, host_device)
    assert sycl.join([kb, kb]).get_kernel_ids() == [kid]
    a = np.arange(8, dtype=np.float32)
    c = np.zeros_like(a)
    q = sycl.queue(ctx, host_device)
    with sycl.buffer(a) as Ab, sycl.buffer(c) as Cb:
        def cg(h: sycl.handler) -> None:
            h.use_kernel_bundle(kb)
            ra = Ab.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(8), vadd_factory(ra, ra, Cb.get_access(
                h, sycl.access_mode.write)), kernel_name="compat.host_vadd")
        q.submit(cg)
    assert np.array_equal(c, 2 * a)
    with pytest.raises(sycl.exception) as ei:
        kb.get_kernel(kid)
    assert ei.value.code() == sycl.errc.feature_not_supported
    assert "runs the Python kernel itself" in str(ei.value)


def test_host_device_bundle_without_the_kernel(host_device) -> None:
    ctx = sycl.context(host_device)
    q = sycl.queue(ctx, host_device)
    kb = sycl.get_kernel_bundle(ctx, kernel_ids=[], state=S.executable)
    out = np.zeros(4, np.float32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            h.use_kernel_bundle(kb)
            acc = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, 1.0),
                           kernel_name="compat.not_in_bundle")
        with pytest.raises(sycl.exception) as ei:
            q.submit(cg)
    assert ei.value.code() == sycl.errc.kernel_not_supported
    assert ("cannot run this kernel: it does not contain kernel 'compat.not_in_bundle'"
            in str(ei.value))
    assert out.tolist() == [0.0] * 4


def test_a_kernel_submitted_to_the_host_device_gets_a_kernel_id(host_device) -> None:
    # "the application defines" it: has_kernel_bundle and bundles of the host device see it
    q = sycl.queue(host_device)
    out = np.zeros(3, np.float32)
    with sycl.buffer(out) as O:
        def cg(h: sycl.handler) -> None:
            acc = O.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(3), lambda i: acc.__setitem__(i, 7.0),
                           kernel_name="compat.host_only")
        q.submit(cg)
    kid = sycl.get_kernel_id("compat.host_only")
    assert kid in sycl.get_kernel_ids()
    ctx = q.get_context()
    assert sycl.has_kernel_bundle(ctx, [kid], state=S.executable)
    assert sycl.get_kernel_bundle(ctx, [kid], state=S.executable).has_kernel(kid, host_device)
    assert out.tolist() == [7.0] * 3


@pytest.mark.parametrize("where", ["compiled", "host"])
def test_a_kernel_with_reductions_gets_no_kernel_id(where, request) -> None:
    """As on compiled devices, a kernel with reductions joins no registry on the host device
    either: a bundle of every kernel would compile it without its reducers and fail."""
    d = request.getfixturevalue("kernel_device" if where == "compiled" else "host_device")
    q = sycl.queue(d)
    x = np.arange(8, dtype=np.int32)
    total = np.zeros(1, np.int32)
    with sycl.buffer(x) as X, sycl.buffer(total) as T:
        def cg(h: sycl.handler) -> None:
            xs = X.get_access(h, sycl.access_mode.read)
            h.parallel_for(sycl.range(8), sycl.reduction(T, h, sycl.plus()),
                           lambda i, r: r.combine(xs[i]))
        q.submit(cg)
    assert total[0] == 28
    assert not any("test_a_kernel_with_reductions_gets_no_kernel_id" in k.get_name()
                   for k in sycl.get_kernel_ids())


def test_one_code_with_other_device_has_is_another_image(kctx) -> None:
    # Two names of one function, one of them with device_has: two images, each with its
    # own required aspects (one merged image would give both names the same aspects).
    plain = sycl.ext.declare_kernel(vadd_factory, kernel_name="compat.same_code",
                                    index_space=sycl.range(1), captures={"a": RD, "b": RD, "c": WR})
    needy = sycl.ext.declare_kernel(vadd_factory, kernel_name="compat.same_code_linker",
                                    index_space=sycl.range(1), captures={"a": RD, "b": RD, "c": WR},
                                    device_has=[A.online_linker])
    kb = sycl.get_kernel_bundle(kctx, [plain, needy], state=S.input)
    by_id = {k.get_name(): img.ext_pysycl_required_aspects() for img in kb
             for k in (plain, needy) if img.has_kernel(k)}
    assert A.online_linker in by_id["compat.same_code_linker"]
    assert A.online_linker not in by_id["compat.same_code"]


def test_reductions_with_use_kernel_bundle_answer_alike(dev) -> None:
    ctx = sycl.context(dev)
    q = sycl.queue(ctx, dev)
    kb = sycl.get_kernel_bundle(ctx, kernel_ids=[], state=S.executable)
    total = np.zeros(1, np.float32)
    with sycl.buffer(total) as T:
        def cg(h: sycl.handler) -> None:
            h.use_kernel_bundle(kb)
            red = sycl.reduction(T, h, sycl.plus())
            h.parallel_for(sycl.range(8), red, lambda i, s: s.combine(1.0))
        with pytest.raises(sycl.exception) as ei:
            q.submit(cg)
    assert ei.value.code() == sycl.errc.feature_not_supported
    assert "not with sycl.kernel objects or use_kernel_bundle" in str(ei.value)
