"""Kernel properties (SYCL 2020 §5.8.1, ``sycl_ext_oneapi_kernel_properties``): required
work-group size, its hint and the required sub-group size, on the compiled device and the
host_debuggable one (issue 25, item 2).

The oneAPI sub-group lab's per-sub-group sums must come out as wide as the kernel asks
(numpy sums over that width); a launch the properties forbid is ``errc.nd_range`` or
``errc.kernel_not_supported``; the images carry the sizes (SPIR-V execution modes, PTX
``.reqntid``).

The sub-group sizes tested are those the devices report (``info.device.sub_group_sizes``:
Intel's CPU [4, 8, 16, 32, 64], the host_debuggable device [8, 16, 32], an NVIDIA GPU
[32]); a device lacking a size skips it with its sizes in the reason.
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from pysycl._core.abi import IndexSpace
from pysycl.ext.oneapi import experimental as syclex
from tests.conftest import ALL_DEVICES

N, L = 256, 64


def _sizes(d: sycl.device) -> list[int]:
    """The device's sub-group sizes that divide the work-group size ``L``."""
    return [w for w in d.get_info(sycl.info.device.sub_group_sizes) if L % w == 0]


def _collected_sizes() -> list[int]:
    """Every size of the kernel device (the ``kernel_device`` fixture's choice) or the
    host_debuggable device: each test runs the sizes its device has."""
    devs = [d for d in ALL_DEVICES if d.image_targets]
    devs = [max(devs, key=sycl.default_selector_v)] if devs else []
    devs += sycl.device.get_devices(sycl.info.device_type.custom)
    return sorted({w for d in devs for w in _sizes(d)})


def _need_size(q: sycl.queue, width: int) -> None:
    d = q.get_device()
    if width not in _sizes(d):
        pytest.skip(f"{d.get_info(sycl.info.device.name)}: info.device.sub_group_sizes "
                    f"{list(d.get_info(sycl.info.device.sub_group_sizes))} has no {width}")


def _sub_group_sums(q: sycl.queue, width: int, spelling: str, wg: int | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """The sub-group lab: each work-item writes its sub-group's sum and the sub-group's size
    (``wg``: also the extension's ``work_group_size(wg)``)."""
    data = np.arange(N, dtype=np.int32) * 3 + 1
    sums = np.zeros(N, np.int32)
    sizes = np.zeros(N, np.int32)
    with sycl.buffer(data) as bd, sycl.buffer(sums) as bs, sycl.buffer(sizes) as bz:
        def cg(h: sycl.handler) -> None:
            a = bd.get_access(h, sycl.access_mode.read)
            s = bs.get_access(h, sycl.access_mode.write)
            z = bz.get_access(h, sycl.access_mode.write)

            def kernel(it: sycl.nd_item) -> None:
                sg = it.get_sub_group()
                i = it.get_global_id(0)
                s[i] = sycl.reduce_over_group(sg, a[i], sycl.plus())
                z[i] = sg.get_local_range()[0]

            if spelling == "attribute":
                k = sycl.reqd_sub_group_size(width)(kernel)
            else:
                more = () if wg is None else (syclex.work_group_size(wg),)
                k = syclex.properties(syclex.sub_group_size(width), *more)(kernel)
            h.parallel_for(sycl.nd_range(sycl.range(N), sycl.range(L)), k)

        q.submit(cg)
    return sums, sizes


@pytest.mark.parametrize("spelling", ["attribute", "extension"])
@pytest.mark.parametrize("width", _collected_sizes())
def test_sub_group_sums_are_as_wide_as_the_kernel_requires(
        any_kernel_queue: sycl.queue, width: int, spelling: str) -> None:
    _need_size(any_kernel_queue, width)
    sums, sizes = _sub_group_sums(any_kernel_queue, width, spelling)
    data = np.arange(N, dtype=np.int32) * 3 + 1
    assert (sizes == width).all()
    np.testing.assert_array_equal(sums, np.repeat(data.reshape(-1, width).sum(1), width))


def test_the_same_code_with_other_properties_is_another_kernel(kq: sycl.queue) -> None:
    """Other properties compile another image, the same ones find it again; where the
    device has two sub-group sizes, each run is as wide as its own property says."""
    widths = _sizes(kq.get_device())
    w = widths[-1]
    for width in (w, widths[0], w) if len(widths) > 1 else ():
        _, sizes = _sub_group_sums(kq, width, "extension")
        assert set(sizes.tolist()) == {width}
    _sub_group_sums(kq, w, "extension")
    for wg, new in ((L, True), (None, False), (L, False)):
        before = sycl.ext.kernel_cache_stats()
        sums, sizes = _sub_group_sums(kq, w, "extension", wg)
        after = sycl.ext.kernel_cache_stats()
        assert (after["memory_hits"] == before["memory_hits"]) == new, (wg, before, after)
        assert set(sizes.tolist()) == {w}
        assert sums[0] == (np.arange(w) * 3 + 1).sum()


def _launch(q: sycl.queue, k, space) -> None:  # type: ignore[no-untyped-def]
    out = np.zeros(64, np.int32)
    with sycl.buffer(out) as bo:
        def cg(h: sycl.handler) -> None:
            o = bo.get_access(h, sycl.access_mode.write)
            h.parallel_for(space, k(o))

        q.submit(cg)


def _wg(dims: tuple[int, ...]):  # type: ignore[no-untyped-def]
    def make(o):  # type: ignore[no-untyped-def]
        @sycl.reqd_work_group_size(*dims)
        def kernel(it: sycl.nd_item) -> None:
            o[it.get_global_linear_id()] = it.get_local_linear_id()
        return kernel
    return make


def test_a_matching_local_range_runs(any_kernel_queue: sycl.queue) -> None:
    _launch(any_kernel_queue, _wg((4, 8)), sycl.nd_range(sycl.range(8, 8), sycl.range(4, 8)))


def test_another_local_range_is_errc_nd_range(any_kernel_queue: sycl.queue) -> None:
    with pytest.raises(sycl.exception, match=r"local range \(8, 4\) is not the kernel's "
                       r"reqd_work_group_size \(4, 8\)") as e:
        _launch(any_kernel_queue, _wg((4, 8)), sycl.nd_range(sycl.range(8, 8), sycl.range(8, 4)))
    assert e.value.code() == sycl.errc.nd_range
    assert "test_kernel_properties.py" in str(e.value)


def test_a_range_launch_of_a_required_size_is_errc_nd_range(any_kernel_queue: sycl.queue) -> None:
    def make(o):  # type: ignore[no-untyped-def]
        return sycl.reqd_work_group_size(8)(lambda i: o.__setitem__(i, 1))

    with pytest.raises(sycl.exception, match=r"launch it over a sycl\.nd_range") as e:
        _launch(any_kernel_queue, make, sycl.range(64))
    assert e.value.code() == sycl.errc.nd_range


def test_a_work_group_wider_than_the_device_is_kernel_not_supported(
        any_kernel_queue: sycl.queue) -> None:
    big = int(any_kernel_queue.get_device().get_info(sycl.info.device.max_work_group_size)) * 2
    with pytest.raises(sycl.exception, match="allows at most") as e:
        _launch(any_kernel_queue, _wg((big,)), sycl.nd_range(sycl.range(big), sycl.range(big)))
    assert e.value.code() == sycl.errc.kernel_not_supported


def test_a_sub_group_size_the_device_lacks_is_kernel_not_supported(
        any_kernel_queue: sycl.queue) -> None:
    sizes = any_kernel_queue.get_device().get_info(sycl.info.device.sub_group_sizes)
    with pytest.raises(sycl.exception, match=r"reqd_sub_group_size\(3\) is not a sub-group "
                       r"size of device .*" + str(list(sizes)).replace("[", r"\[")) as e:
        _sub_group_sums(any_kernel_queue, 3, "attribute")
    assert e.value.code() == sycl.errc.kernel_not_supported


def test_property_arguments_are_checked() -> None:
    with pytest.raises(TypeError, match="1 to 3 positive int sizes"):
        sycl.reqd_work_group_size(1, 2, 3, 4)
    with pytest.raises(TypeError, match="positive int"):
        sycl.reqd_sub_group_size(0)
    with pytest.raises(TypeError, match="given twice"):
        syclex.properties(syclex.sub_group_size(8), syclex.sub_group_size(16))
    with pytest.raises(TypeError, match="not int"):
        syclex.properties(8)  # type: ignore[arg-type]
    assert syclex.work_group_size(8, 8) == sycl.reqd_work_group_size(8, 8)


def _kernel():  # type: ignore[no-untyped-def]
    @sycl.reqd_work_group_size(4, 8)
    @sycl.work_group_size_hint(2, 16)
    @sycl.reqd_sub_group_size(16)
    def k(it: sycl.nd_item) -> None:
        it.barrier()
    return k


def _execution_modes(spirv: bytes) -> set[tuple[str, int, tuple[int, ...]]]:
    """(entry point name, execution mode, literals) of each OpExecutionMode of a SPIR-V
    module, read from its words (no spirv-dis needed)."""
    w = np.frombuffer(spirv, "<u4")
    assert w[0] == 0x07230203, "not a little-endian SPIR-V module"
    names: dict[int, str] = {}
    modes = []
    i = 5  # after the header
    while i < len(w):
        count, op = int(w[i]) >> 16, int(w[i]) & 0xFFFF
        assert count > 0 and i + count <= len(w), f"malformed instruction at word {i}"
        operands = [int(x) for x in w[i + 1:i + count]]
        if op == 15:  # OpEntryPoint model id "name" interface...
            raw = np.array(operands[2:], "<u4").tobytes()
            names[operands[1]] = raw[:raw.index(0)].decode()
        elif op == 16:  # OpExecutionMode entry mode literals...
            modes.append((operands[0], operands[1], tuple(operands[2:])))
        i += count
    return {(names[e], m, lits) for e, m, lits in modes}


def test_spirv_images_carry_the_execution_modes() -> None:
    from pysycl_numba import compile_kernel

    ck = compile_kernel(_kernel(), IndexSpace("nd_range", 2), (), entry_name="props_k")
    modes = _execution_modes(ck.binary)
    # OpenCL's order: SYCL's last dimension first; LocalSize 17, LocalSizeHint 18,
    # SubgroupSize 35 (the SPIR-V spec's ExecutionMode numbers)
    assert ("props_k", 17, (8, 4, 1)) in modes, modes
    assert ("props_k", 18, (16, 2, 1)) in modes, modes
    assert ("props_k", 35, (16,)) in modes, modes


def test_ptx_images_carry_reqntid() -> None:
    from pysycl_numba import compile_kernel

    ck = compile_kernel(_kernel(), IndexSpace("nd_range", 2), (), entry_name="props_k",
                        image_format="ptx", arch="sm_90")
    text = ck.binary.decode()
    entry = text.index(".entry props_k(")
    assert ".reqntid 8, 4\n" in text[entry:text.index("{", entry)]
    assert ck.properties == ((4, 8), (2, 16), 16, 0)


def test_handler_less_launches_follow_the_properties(kq: sycl.queue) -> None:
    """``q.parallel_for(nd_range, kernel)`` remembers a launch per code object: the same
    code with other properties must not reuse it (each sub-group size the device has, and
    a required work-group size the launch breaks)."""
    sizes = sycl.malloc_device(N, kq, dtype=np.int32)  # every device has device USM
    widths = _sizes(kq.get_device())
    got = np.empty(N, np.int32)
    try:
        for width, wg in [*((w, None) for w in widths + widths[:1]), (widths[0], L // 2)]:
            more = () if wg is None else (syclex.work_group_size(wg),)
            k = syclex.properties(syclex.sub_group_size(width), *more)(
                lambda it: sizes.__setitem__(it.get_global_id(0),
                                             it.get_sub_group().get_local_range()[0]))
            if wg is not None:
                with pytest.raises(sycl.exception, match=r"is not the kernel's "
                                   r"reqd_work_group_size") as e:
                    kq.parallel_for(sycl.nd_range(sycl.range(N), sycl.range(L)), k).wait()
                assert e.value.code() == sycl.errc.nd_range
                continue
            kq.memset(sizes, 0, got.nbytes).wait()
            kq.parallel_for(sycl.nd_range(sycl.range(N), sycl.range(L)), k).wait()
            kq.memcpy(got, sizes, got.nbytes).wait()
            assert set(got.tolist()) == {width}, width
    finally:
        sycl.free(sizes, kq)
