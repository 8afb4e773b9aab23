"""Platforms, devices, contexts, selectors, info descriptors and aspects (SYCL 2020 §4.6.1-4.6.4).

Expected values come from pyopencl's own queries of the same OpenCL objects,
never from hard-coded device answers.
"""

from __future__ import annotations

import ast
import copy
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyopencl as cl
import pytest

import pysycl as sycl
from pysycl._backends.opencl import discovery
from pysycl._objects.context import default_context_for
from pysycl._objects.selector import select_device

REPO = Path(__file__).resolve().parents[2]
info = sycl.info
aspect = sycl.aspect


def _run(args: list[str], **env: str) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO,
                          env=full_env, timeout=120)


def _spirv_capable(d: cl.Device) -> bool:
    try:
        return "SPIR-V" in (d.il_version or "")
    except cl.Error:
        return False


# --- import hygiene ----------------------------------------------------------------


def test_import_pysycl_loads_neither_pyopencl_nor_numba() -> None:
    code = ("import sys, pysycl as s; s.info.device.name; s.aspect.fp16; s.default_selector_v;"
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pyopencl', 'numba')))")
    r = _run(["-c", code])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def _runtime_imports(path: Path) -> set[str]:
    """Modules ``path`` imports when it runs (imports under ``if TYPE_CHECKING:`` never do)."""
    tree = ast.parse(path.read_text())
    typing_only = {id(n) for i in ast.walk(tree)
                   if isinstance(i, ast.If) and "TYPE_CHECKING" in ast.unparse(i.test)
                   for b in i.body for n in ast.walk(b)}
    out: set[str] = set()
    for n in ast.walk(tree):
        if id(n) in typing_only:
            continue
        if isinstance(n, ast.Import):
            out.update(a.name for a in n.names)
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            out.add(n.module)
    return out


def test_only_the_opencl_backend_imports_pyopencl() -> None:
    offenders = [p for p in (REPO / "pysycl").rglob("*.py")
                 if p.relative_to(REPO / "pysycl").parts[:2] != ("_backends", "opencl")
                 and any(m.split(".")[0] == "pyopencl" for m in _runtime_imports(p))]
    assert offenders == []
    # the check sees a real import (it would have caught one here)
    assert "pyopencl" in _runtime_imports(REPO / "pysycl" / "_backends" / "opencl" / "exec.py")


# --- platforms and devices match what OpenCL enumerates ------------------------------


def test_platforms_and_devices_match_pyopencl() -> None:
    expected = [(p, p.get_devices()) for p in cl.get_platforms()]
    expected = [(p, ds) for p, ds in expected if ds]
    all_plats = sycl.platform.get_platforms()
    # pysycl's own host interpreter platform (the host_debuggable device) comes last.
    assert all_plats[-1].get_backend() is sycl.backend.ext_pysycl_host
    # OpenCL's (a CUDA platform, where the driver and cuda-bindings are, comes first)
    plats = [p for p in all_plats[:-1] if p.get_backend() is sycl.backend.opencl]
    assert [p._cl.int_ptr for p in plats] == [p.int_ptr for p, _ in expected]
    for p, (clp, cl_devs) in zip(plats, expected, strict=True):
        assert p.get_info(info.platform.name) == clp.name.strip()
        assert p.get_info(info.platform.vendor) == clp.vendor.strip()
        assert p.get_info(info.platform.version) == clp.version.strip()
        assert p.get_backend() is sycl.backend.opencl
        assert [d._cl.int_ptr for d in p.get_devices()] == [d.int_ptr for d in cl_devs]
    assert sycl.device.get_devices() == [d for p in all_plats for d in p.get_devices()]


def test_get_devices_by_type(device: sycl.device) -> None:
    t = device.get_info(info.device.device_type)
    assert t in (info.device_type.cpu, info.device_type.gpu, info.device_type.accelerator,
                 info.device_type.custom)
    assert device in sycl.device.get_devices(t)
    assert device in device.get_platform().get_devices(t)
    others = [x for x in (info.device_type.cpu, info.device_type.gpu,
                          info.device_type.accelerator) if x is not t]
    for o in others:
        assert device not in sycl.device.get_devices(o)
    assert sycl.device.get_devices(info.device_type.host) == []
    # automatic <-> CL_DEVICE_TYPE_DEFAULT of each platform.
    plat = device.get_platform()
    defaults = {d.int_ptr for d in plat._cl.get_devices(device_type=cl.device_type.DEFAULT)}
    assert {d._cl.int_ptr for d in plat.get_devices(info.device_type.automatic)} == defaults
    with pytest.raises(TypeError, match=r"info\.device_type"):
        plat.get_devices("cpu")  # type: ignore[arg-type]


def test_device_type_predicates(device: sycl.device) -> None:
    t = device._cl.type
    assert device.is_cpu() == bool(t & cl.device_type.CPU) == device.has(aspect.cpu)
    assert device.is_gpu() == bool(t & cl.device_type.GPU) == device.has(aspect.gpu)
    assert device.is_accelerator() == bool(t & cl.device_type.ACCELERATOR)
    assert sum(device.has(a) for a in (aspect.cpu, aspect.gpu, aspect.accelerator,
                                       aspect.custom)) == 1


# --- common reference semantics -------------------------------------------------------


def test_devices_are_canonical_and_hash_on_the_cl_handle(device: sycl.device) -> None:
    again = [d for d in sycl.device.get_devices()
             if d._cl is not None and d._cl.int_ptr == device._cl.int_ptr]
    assert again == [device] and again[0] is device
    assert hash(again[0]) == hash(device)
    assert copy.copy(device) is device and copy.deepcopy(device) is device
    chosen = sycl.device(lambda d: 1 if d == device else 0)
    assert chosen is device
    assert len({device, chosen, *sycl.device.get_devices()}) == len(sycl.device.get_devices())
    assert device != device.get_platform() and device != object()
    plat = device.get_platform()
    assert plat is device.get_info(info.device.platform)
    assert plat == sycl.platform(lambda d: 1 if d == device else 0)
    assert hash(plat) == hash(sycl.platform(lambda d: 1 if d == device else 0))
    assert plat in sycl.platform.get_platforms()
    assert device._cl_platform.int_ptr == plat._cl.int_ptr


def test_repr_is_readable(device: sycl.device) -> None:
    name = device._cl.name
    assert name in repr(device) and "sycl.device" in repr(device)
    assert device._cl.platform.name in repr(device.get_platform())
    assert repr(info.device.name) == "sycl.info.device.name"
    assert repr(aspect.fp64) == "sycl.aspect.fp64"


# --- info descriptors -------------------------------------------------------------------


def test_info_matches_pyopencl(device: sycl.device) -> None:
    d = device._cl
    gi = device.get_info
    assert gi(info.device.name) == d.name.strip()
    assert gi(info.device.vendor) == d.vendor.strip()
    assert gi(info.device.vendor_id) == d.vendor_id
    assert gi(info.device.driver_version) == d.driver_version.strip()
    assert gi(info.device.version) == d.version.strip()
    assert gi(info.device.backend_version) == d.version.split()[1]
    assert gi(info.device.max_compute_units) == d.max_compute_units
    assert gi(info.device.max_work_group_size) == d.max_work_group_size
    assert gi(info.device.max_work_item_dimensions) == d.max_work_item_dimensions
    assert gi(info.device.global_mem_size) == d.global_mem_size
    assert gi(info.device.local_mem_size) == d.local_mem_size
    assert gi(info.device.max_mem_alloc_size) == d.max_mem_alloc_size
    assert gi(info.device.address_bits) == d.address_bits
    assert gi(info.device.mem_base_addr_align) == d.mem_base_addr_align
    assert gi(info.device.max_parameter_size) == d.max_parameter_size
    assert gi(info.device.global_mem_cache_line_size) == d.global_mem_cacheline_size
    assert gi(info.device.global_mem_cache_size) == d.global_mem_cache_size
    assert gi(info.device.profiling_timer_resolution) == d.profiling_timer_resolution
    assert gi(info.device.native_vector_width_float) == d.native_vector_width_float
    assert gi(info.device.preferred_vector_width_int) == d.preferred_vector_width_int
    assert gi(info.device.error_correction_support) is bool(d.error_correction_support)
    assert gi(info.device.is_available) is bool(d.available)
    assert gi(info.device.global_mem_cache_type).value == d.global_mem_cache_type
    assert gi(info.device.local_mem_type).value == d.local_mem_type
    assert gi(info.device.extensions) == sorted(d.extensions.split())
    assert isinstance(gi(info.device.built_in_kernel_ids), list)
    execs = {c.value for c in gi(info.device.execution_capabilities)}
    assert sum(execs) == d.execution_capabilities


def test_max_work_item_sizes_are_reversed(device: sycl.device) -> None:
    # SYCL dimension 0 is the slowest; OpenCL's dimension 0 the fastest.
    cl_sizes = list(device._cl.max_work_item_sizes)
    assert tuple(device.get_info(info.device.max_work_item_sizes_3d)) == tuple(
        reversed(cl_sizes[:3]))
    assert tuple(device.get_info(info.device.max_work_item_sizes_2d)) == tuple(
        reversed(cl_sizes[:2]))
    assert tuple(device.get_info(info.device.max_work_item_sizes_1d)) == (cl_sizes[0],)


@pytest.mark.parametrize("on_host", [False, True], ids=["opencl", "host"])
def test_max_work_item_sizes_is_the_3d_descriptor(cl_device: sycl.device, host_device: sycl.device,
                                                  on_host: bool) -> None:
    # docs/devices.md's spelling: another name of max_work_item_sizes<3> (one enum member).
    d = host_device if on_host else cl_device
    assert info.device.max_work_item_sizes is info.device.max_work_item_sizes_3d
    assert repr(info.device.max_work_item_sizes) == "sycl.info.device.max_work_item_sizes_3d"
    sizes = d.get_info(info.device.max_work_item_sizes)
    assert isinstance(sizes, sycl.id) and len(sizes) == 3
    assert tuple(sizes) == tuple(d.get_info(info.device.max_work_item_sizes_3d))
    assert sizes[2] == d.get_info(info.device.max_work_item_sizes_1d)[0]
    assert "max_work_item_sizes" not in [m.name for m in info.device]  # listed once, as _3d


def test_every_descriptor_answers_with_the_spec_type(device: sycl.device) -> None:
    str_infos = {info.device.name, info.device.vendor, info.device.driver_version,
                 info.device.profile, info.device.version, info.device.backend_version}
    bool_infos = {info.device.image_support, info.device.error_correction_support,
                  info.device.host_unified_memory, info.device.is_endian_little,
                  info.device.is_available, info.device.is_compiler_available,
                  info.device.is_linker_available, info.device.queue_profiling,
                  info.device.preferred_interop_user_sync,
                  info.device.sub_group_independent_forward_progress}
    for desc in info.device:
        if desc is info.device.parent_device:
            continue
        value = device.get_info(desc)
        if desc in str_infos:
            assert isinstance(value, str) and value, desc
        elif desc in bool_infos:
            assert isinstance(value, bool), desc
        elif desc.name.endswith(("_config", "_capabilities", "_kernels", "_ids", "aspects",
                                 "extensions", "sub_group_sizes", "partition_properties",
                                 "partition_affinity_domains", "matrix_combinations")):
            assert isinstance(value, list), desc
        elif desc.name.startswith("max_work_item_sizes"):
            assert len(value) == int(desc.name[-2]), desc
        elif desc in (info.device.device_type, info.device.platform,
                      info.device.global_mem_cache_type, info.device.local_mem_type,
                      info.device.partition_type_property,
                      info.device.partition_type_affinity_domain):
            assert not isinstance(value, int), desc
        else:
            assert isinstance(value, int) and not isinstance(value, bool), desc
            assert value >= 0, desc
    # Cached: the same object comes back.
    assert device.get_info(info.device.aspects) is device.get_info(info.device.aspects)


def test_fp_configs_follow_the_spec_minimums(device: sycl.device) -> None:
    fp = info.fp_config
    single = set(device.get_info(info.device.single_fp_config))
    assert {fp.round_to_nearest, fp.inf_nan} <= single  # Table 25, non-custom devices
    double = set(device.get_info(info.device.double_fp_config))
    if device.has(aspect.fp64):
        assert {fp.fma, fp.round_to_nearest, fp.round_to_zero, fp.round_to_inf, fp.inf_nan,
                fp.denorm} <= double
    else:
        assert double == set()
    if not device.has(aspect.fp16):
        assert device.get_info(info.device.half_fp_config) == []
    elif device.has(aspect.ext_pysycl_ptx):  # PTX's f16 instructions (NVIDIA reports none)
        assert {fp.round_to_nearest, fp.inf_nan, fp.denorm} <= set(
            device.get_info(info.device.half_fp_config))


def test_atomic_capabilities(device: sycl.device) -> None:
    orders = device.get_info(info.device.atomic_memory_order_capabilities)
    scopes = device.get_info(info.device.atomic_memory_scope_capabilities)
    assert sycl.memory_order.relaxed in orders  # guaranteed by Table 25
    assert sycl.memory_scope.work_group in scopes
    assert sycl.memory_order.relaxed in device.get_info(
        info.device.atomic_fence_order_capabilities)
    assert sycl.memory_scope.work_group in device.get_info(
        info.device.atomic_fence_scope_capabilities)
    try:
        caps = device._cl.atomic_memory_capabilities
    except (cl.Error, AttributeError):
        return
    assert (sycl.memory_order.seq_cst in orders) == bool(caps & 4)
    assert (sycl.memory_order.acq_rel in orders) == bool(caps & 2)
    assert (sycl.memory_scope.device in scopes) == bool(caps & 32)
    assert (sycl.memory_scope.system in scopes) == bool(caps & 64)


def test_parent_device_of_a_root_device_is_errc_invalid(device: sycl.device) -> None:
    with pytest.raises(sycl.exception, match="not a sub-device") as ei:
        device.get_info(info.device.parent_device)
    assert ei.value.code() is sycl.errc.invalid
    assert device.get_info(info.device.partition_type_property) is \
        info.partition_property.no_partition
    assert device.get_info(info.device.partition_type_affinity_domain) is \
        info.partition_affinity_domain.not_applicable


def test_get_info_rejects_descriptors_of_other_classes(device: sycl.device) -> None:
    with pytest.raises(TypeError, match=r"info\.device"):
        device.get_info(info.platform.name)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"info\.platform"):
        device.get_platform().get_info(info.device.name)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"sycl\.aspect"):
        device.has("fp64")  # type: ignore[arg-type]


def test_descriptors_are_hashable_singletons() -> None:
    assert info.device.name is info.device["name"]
    assert len({info.device.name, info.device.name, info.platform.name}) == 2
    assert info.local_mem_type["global"] is info.local_mem_type.global_
    assert [s.name for s in info.event_command_status] == ["submitted", "running", "complete"]
    assert [s.name for s in info.event_profiling] == ["command_submit", "command_start",
                                                      "command_end"]
    assert {m.name for m in info.device_type} == {"cpu", "gpu", "accelerator", "custom",
                                                  "automatic", "host", "all"}
    with pytest.raises(TypeError):
        info()


# --- aspects derived from the device's own answers ------------------------------------


def test_aspects_follow_opencl_properties(device: sycl.device) -> None:
    d = device._cl
    ext = set(d.extensions.split())
    try:
        double = d.double_fp_config
    except cl.Error:
        double = 0
    expected = {
        # fp16: cl_khr_fp16, or pysycl's PTX kernels (a documented deviation, docs/gpu.md).
        aspect.fp16: "cl_khr_fp16" in ext or device.has(aspect.ext_pysycl_ptx),
        aspect.fp64: "cl_khr_fp64" in ext or bool(double),
        aspect.atomic64: {"cl_khr_int64_base_atomics", "cl_khr_int64_extended_atomics"} <= ext,
        aspect.image: bool(d.image_support),
        aspect.online_compiler: bool(d.compiler_available),
        aspect.online_linker: bool(d.compiler_available and d.linker_available),
        aspect.queue_profiling: bool(d.queue_properties
                                     & cl.command_queue_properties.PROFILING_ENABLE),
        aspect.ext_pysycl_spirv: _spirv_capable(d),
        aspect.ext_pysycl_ptx: "cl_nv_device_attribute_query" in ext
        and (d.compute_capability_major_nv, d.compute_capability_minor_nv) >= (6, 0),
        aspect.emulated: False,
        aspect.host_debuggable: False,
    }
    for asp, want in expected.items():
        assert device.has(asp) is want, asp
    assert set(device.get_info(info.device.aspects)) == {a for a in aspect if device.has(a)}


def test_usm_aspects_follow_the_svm_capabilities(device: sycl.device) -> None:
    """pysycl's USM is OpenCL SVM: the aspects are what CL_DEVICE_SVM_CAPABILITIES allows."""
    caps = device._cl.svm_capabilities
    assert device.has(aspect.usm_device_allocations) == bool(caps & 1)
    assert device.has(aspect.usm_host_allocations) == bool(caps & 2)
    assert device.has(aspect.usm_shared_allocations) == bool(caps & 2)
    assert device.has(aspect.usm_atomic_host_allocations) == bool(caps & 2 and caps & 8)
    assert device.has(aspect.usm_atomic_shared_allocations) == bool(caps & 2 and caps & 8)
    assert device.has(aspect.usm_system_allocations) == bool(caps & 4)
    for a in (aspect.usm_device_allocations, aspect.usm_shared_allocations):
        if device.has(a):  # an aspect claimed is an allocation that works
            kind = sycl.usm.alloc.device if a is aspect.usm_device_allocations \
                else sycl.usm.alloc.shared
            q = sycl.queue(device)
            p = sycl.malloc(16, q, kind, dtype=np.int32)
            q.fill(p, np.int32(5), 16).wait()
            out = np.zeros(16, np.int32)
            q.memcpy(out, p, out.nbytes).wait()
            sycl.free(p, q)
            assert (out == 5).all()


def test_platform_has_means_every_device_has(device: sycl.device) -> None:
    plat = device.get_platform()
    for a in aspect:
        assert plat.has(a) == all(d.has(a) for d in plat.get_devices())


# --- selectors ------------------------------------------------------------------------


def test_custom_selector_highest_score_wins() -> None:
    devices = sycl.device.get_devices()
    last = devices[-1]
    assert sycl.device(lambda d: 10 if d == last else 1) is last
    # Ties go to the first device in enumeration order.
    assert sycl.device(lambda d: 5) is devices[0]
    # Scores are anything int-convertible; negative ones are rejected.
    if len(devices) > 1:
        assert sycl.device(lambda d: -1 if d == devices[0] else 0.5) is devices[1]
        assert sycl.device(lambda d: d == devices[1]) is devices[1]  # bool scores too


def test_negative_scores_reject_and_errc_runtime_when_nothing_qualifies() -> None:
    with pytest.raises(sycl.exception, match="no device satisfies") as ei:
        sycl.device(lambda d: -1)
    assert ei.value.code() is sycl.errc.runtime
    assert "scored -1" in str(ei.value)
    with pytest.raises(sycl.exception, match="no device satisfies"):
        sycl.platform(lambda d: -5)
    with pytest.raises(sycl.exception, match="no device satisfies"):
        sycl.context(sycl.device(lambda d: -5))


def test_selector_must_return_an_int() -> None:
    with pytest.raises(TypeError, match="must return an int"):
        sycl.device(lambda d: "high")
    with pytest.raises(TypeError, match="callable"):
        select_device(3)  # type: ignore[arg-type]


def test_type_selectors() -> None:
    devices = sycl.device.get_devices()
    for sel, t in ((sycl.cpu_selector_v, info.device_type.cpu),
                   (sycl.gpu_selector_v, info.device_type.gpu),
                   (sycl.accelerator_selector_v, info.device_type.accelerator)):
        of_type = [d for d in devices if d.get_info(info.device.device_type) is t]
        if of_type:
            assert sycl.device(sel) in of_type
        else:
            with pytest.raises(sycl.exception, match="no device satisfies") as ei:
                sycl.device(sel)
            assert ei.value.code() is sycl.errc.runtime
    # The SYCL 1.2.1 spellings are types whose instances select the same way.
    assert sycl.device(sycl.default_selector()) is sycl.device(sycl.default_selector_v)


def test_default_selector_prefers_devices_that_run_python_kernels() -> None:
    devices = sycl.device.get_devices()
    for d in devices:
        # Every OpenCL (and CUDA) device is acceptable; the host_debuggable interpreter never is.
        assert (sycl.default_selector_v(d) >= 0) == (d.get_backend()
                                                     is not sycl.backend.ext_pysycl_host)
    chosen = sycl.device()
    assert chosen is sycl.device(sycl.default_selector_v)
    spirv = [d for d in devices if d.get_backend() is sycl.backend.opencl and _spirv_capable(d._cl)]
    if spirv:
        assert chosen.has(aspect.ext_pysycl_spirv)
        if any(d.is_gpu() for d in spirv):
            assert chosen.is_gpu()


def test_aspect_selector_required_and_deny_list() -> None:
    devices = sycl.device.get_devices()
    # No aspects: like default_selector_v.
    assert sycl.device(sycl.aspect_selector()) is sycl.device()
    for dev in devices:
        present = [a for a in aspect if dev.has(a)]
        missing = [a for a in aspect if not dev.has(a)]
        # Vector form with a deny list: exactly this device's aspects, none of the others.
        matching = [d for d in devices
                    if all(d.has(a) for a in present) and not any(d.has(a) for a in missing)]
        assert sycl.device(sycl.aspect_selector(present, missing)) in matching
        assert sycl.device(sycl.aspect_selector(present, deny_list=missing)) in matching
        assert sycl.device(sycl.aspect_selector(*present)).has(present[0])
    everything = list(aspect)
    if not any(all(d.has(a) for a in everything) for d in devices):
        with pytest.raises(sycl.exception, match="no device satisfies") as ei:
            sycl.device(sycl.aspect_selector(everything))
        assert ei.value.code() is sycl.errc.runtime
    type_aspects = [aspect.cpu, aspect.gpu, aspect.accelerator, aspect.custom]
    with pytest.raises(sycl.exception, match="no device satisfies"):
        sycl.device(sycl.aspect_selector([], deny_list=type_aspects))
    with pytest.raises(TypeError):
        sycl.aspect_selector([aspect.cpu], [aspect.gpu], deny_list=[aspect.fp16])
    with pytest.raises(TypeError, match=r"sycl\.aspect"):
        sycl.aspect_selector(["cpu"])


def test_device_filter_env(monkeypatch: pytest.MonkeyPatch) -> None:
    plats = sycl.platform.get_platforms()
    first = plats[0]
    token = first.get_info(info.platform.name).split()[0].lower()
    monkeypatch.setenv("PYSYCL_DEVICE_FILTER", token.upper())  # case-insensitive
    visible = sycl.platform.get_platforms()
    assert first in visible
    assert all(token in p.get_info(info.platform.name).lower()
               or token in p.get_info(info.platform.vendor).lower() for p in visible)
    assert sycl.device().get_platform() in visible
    monkeypatch.setenv("PYSYCL_DEVICE_FILTER", "no-such-device-anywhere")
    assert sycl.platform.get_platforms() == []
    assert sycl.device.get_devices() == []
    with pytest.raises(sycl.exception, match="PYSYCL_DEVICE_FILTER") as ei:
        sycl.device()
    assert ei.value.code() is sycl.errc.runtime


# --- sub-devices ------------------------------------------------------------------------


def test_partition_equally(device: sycl.device) -> None:
    pp = info.partition_property
    cus = device.get_info(info.device.max_compute_units)
    if pp.partition_equally not in device.get_info(info.device.partition_properties):
        with pytest.raises(sycl.exception, match="does not support partition_equally") as ei:
            device.create_sub_devices(pp.partition_equally, 1)
        assert ei.value.code() is sycl.errc.feature_not_supported
        return
    subs = device.create_sub_devices(pp.partition_equally, 1)
    max_sub = device.get_info(info.device.partition_max_sub_devices)
    assert 2 <= len(subs) <= min(cus, max_sub)
    for s in subs:
        assert s.get_info(info.device.max_compute_units) == 1
        assert s.get_info(info.device.parent_device) is device
        assert s.get_info(info.device.partition_type_property) is pp.partition_equally
        assert s.get_platform() is device.get_platform()
        assert s not in sycl.device.get_devices()  # only root devices are listed
        assert s._cl.int_ptr != device._cl.int_ptr
        # Table 25: a 1-compute-unit device cannot be split in two along anything.
        assert s.get_info(info.device.partition_properties) == []
        with pytest.raises(sycl.exception, match="does not support partition_equally") as ei:
            s.create_sub_devices(pp.partition_equally, 1)
        assert ei.value.code() is sycl.errc.feature_not_supported
    assert len(set(subs)) == len(subs)
    # Sub-devices work in contexts, alone or together.
    ctx = sycl.context(subs)
    assert ctx.get_devices() == subs
    assert default_context_for(subs[0]).get_devices() == [subs[0]]
    assert default_context_for(subs[0]) is default_context_for(subs[0])

    with pytest.raises(sycl.exception, match=f"exceeds the {cus} compute units") as ei:
        device.create_sub_devices(pp.partition_equally, cus + 1)
    assert ei.value.code() is sycl.errc.invalid
    with pytest.raises(sycl.exception, match="at least 1") as ei:
        device.create_sub_devices(pp.partition_equally, 0)
    assert ei.value.code() is sycl.errc.invalid
    with pytest.raises(TypeError):
        device.create_sub_devices(pp.partition_equally, [1])


def test_partition_by_counts(device: sycl.device) -> None:
    pp = info.partition_property
    cus = device.get_info(info.device.max_compute_units)
    if pp.partition_by_counts not in device.get_info(info.device.partition_properties):
        with pytest.raises(sycl.exception) as ei:
            device.create_sub_devices(pp.partition_by_counts, [1])
        assert ei.value.code() is sycl.errc.feature_not_supported
        return
    subs = device.create_sub_devices(pp.partition_by_counts, [1, 0, 1])  # zeros: no device
    assert [s.get_info(info.device.max_compute_units) for s in subs] == [1, 1]
    assert all(s.get_info(info.device.partition_type_property) is pp.partition_by_counts
               for s in subs)
    with pytest.raises(sycl.exception, match="compute units") as ei:
        device.create_sub_devices(pp.partition_by_counts, [cus + 1])
    assert ei.value.code() is sycl.errc.invalid
    max_sub = device.get_info(info.device.partition_max_sub_devices)
    with pytest.raises(sycl.exception, match="at most") as ei:
        device.create_sub_devices(pp.partition_by_counts, [1] * (max_sub + 1))
    assert ei.value.code() is sycl.errc.invalid
    with pytest.raises(sycl.exception, match="negative") as ei:
        device.create_sub_devices(pp.partition_by_counts, [-1, 1])
    assert ei.value.code() is sycl.errc.invalid
    assert device.create_sub_devices(pp.partition_by_counts, [0, 0]) == []


def test_partition_by_affinity_domain(device: sycl.device) -> None:
    pp, dom = info.partition_property, info.partition_affinity_domain
    supported = device.get_info(info.device.partition_affinity_domains)
    cl_bits = device._cl.partition_affinity_domain
    if isinstance(cl_bits, list):
        cl_bits = cl_bits[0] if cl_bits else 0
    if device.get_info(info.device.max_compute_units) >= 2:
        assert sum(d.value for d in supported) == cl_bits
    unsupported = [d for d in dom if d.value and d not in supported]
    if pp.partition_by_affinity_domain not in device.get_info(info.device.partition_properties):
        with pytest.raises(sycl.exception, match="partition_by_affinity_domain") as ei:
            device.create_sub_devices(pp.partition_by_affinity_domain, dom.numa)
        assert ei.value.code() is sycl.errc.feature_not_supported
    elif unsupported:
        with pytest.raises(sycl.exception, match=unsupported[0].name) as ei:
            device.create_sub_devices(pp.partition_by_affinity_domain, unsupported[0])
        assert ei.value.code() is sycl.errc.feature_not_supported
    with pytest.raises(ValueError, match="partition_equally"):
        device.create_sub_devices(pp.no_partition, 1)


def test_opencl_errors_keep_their_status(device: sycl.device) -> None:
    # Straight to clCreateSubDevices with an impossible request: the OpenCL
    # status survives in the pysycl.exception.
    with pytest.raises(sycl.exception) as ei:
        discovery.create_sub_devices(device._cl, [discovery.PARTITION_EQUALLY, 1 << 20])
    e = ei.value
    assert e._cl_error is not None and e._cl_error < 0
    assert e.code() in (sycl.errc.invalid, sycl.errc.runtime)
    assert "clCreateSubDevices" in e.what() and "CL_" in e.what()
    assert discovery.translate_cl_error(ValueError("x")).code() is sycl.errc.runtime


# --- contexts ---------------------------------------------------------------------------


def test_context_constructors(device: sycl.device) -> None:
    def handler(errors: sycl.exception_list) -> None:
        pass

    c0 = sycl.context()
    assert sycl.device() in c0.get_devices()
    c1 = sycl.context(handler)
    assert c1._async_handler is handler and c1.get_devices() == c0.get_devices()
    c2 = sycl.context(device)
    assert c2.get_devices() == [device] and c2._async_handler is None
    c3 = sycl.context(device, handler)
    assert c3._async_handler is handler
    c4 = sycl.context([device, device])
    assert c4.get_devices() == [device]
    c5 = sycl.context(device.get_platform(), async_handler=handler)
    assert c5.get_devices() == device.get_platform().get_devices()
    for c in (c2, c3, c4, c5):
        assert c.get_platform() is device.get_platform()
        assert c.get_info(info.context.platform) is c.get_platform()
        assert c.get_info(info.context.devices) == c.get_devices()
        assert c.get_backend() is sycl.backend.opencl
        assert [d.int_ptr for d in c._cl.devices] == [d._cl.int_ptr for d in c.get_devices()]
    # Independently constructed contexts are distinct objects with distinct identity.
    assert c2 != c3 and hash(c2) != hash(c3)
    assert c2 == copy.copy(c2) and len({c2, c2, c3}) == 2
    assert device.get_platform().get_info(info.platform.name) in repr(c2) or \
        device.get_info(info.device.name) in repr(c2)


def test_context_atomic_capabilities_are_common_to_its_devices(device: sycl.device) -> None:
    ctx = sycl.context(device.get_platform())
    for desc in (info.context.atomic_memory_order_capabilities,
                 info.context.atomic_fence_order_capabilities,
                 info.context.atomic_memory_scope_capabilities,
                 info.context.atomic_fence_scope_capabilities):
        got = ctx.get_info(desc)
        for d in ctx.get_devices():
            assert set(got) <= set(d.get_info(info.device[desc.name]))
    assert sycl.memory_order.relaxed in ctx.get_info(info.context.atomic_memory_order_capabilities)


def test_context_errors() -> None:
    with pytest.raises(sycl.exception, match="at least one device") as ei:
        sycl.context([])
    assert ei.value.code() is sycl.errc.invalid
    with pytest.raises(TypeError, match=r"sycl\.device"):
        sycl.context(["not a device"])  # type: ignore[list-item]
    with pytest.raises(TypeError):
        sycl.context("intel")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="async_handler"):
        sycl.context(sycl.device(), async_handler=42)  # type: ignore[arg-type]
    with pytest.raises(sycl.exception, match="was not constructed with") as ei:
        sycl.context(sycl.device()).get_property(int)
    assert ei.value.code() is sycl.errc.invalid
    plats = sycl.platform.get_platforms()
    if len(plats) < 2:
        pytest.skip("needs devices of two platforms")
    with pytest.raises(sycl.exception, match="share one platform") as ei:
        sycl.context([plats[0].get_devices()[0], plats[1].get_devices()[0]])
    assert ei.value.code() is sycl.errc.invalid


def test_default_context_is_shared_per_platform(device: sycl.device) -> None:
    ctx = default_context_for(device)
    assert ctx is default_context_for(device)
    platform_ctx = device.get_platform().ext_oneapi_get_default_context()
    if device._usm_needs_own_context() and len(platform_ctx.get_devices()) > 1:
        # NVIDIA's OpenCL with several GPUs: USM works only in a context of one device,
        # so a queue made from the device alone gets a context of its own (docs/gpu.md)
        assert ctx.get_devices() == [device]
        return
    assert ctx is platform_ctx
    assert device in ctx.get_devices()
    assert set(ctx.get_devices()) <= set(device.get_platform().get_devices())
    for other in device.get_platform().get_devices():
        assert default_context_for(other) is ctx


# --- CLI ----------------------------------------------------------------------------------


def test_pysycl_ls_lists_every_device() -> None:
    r = _run(["-m", "pysycl"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # a CUDA view of a GPU (the driver and cuda-bindings) is listed first: checked elsewhere
    while lines and lines[0].startswith("[ext_oneapi_cuda:"):
        lines = lines[3:]
    cl_devices = [(p, d) for p in cl.get_platforms() for d in p.get_devices()]
    dev_lines, aspect_lines, kernel_lines = lines[0::3], lines[1::3], lines[2::3]
    # The host_debuggable interpreter device comes last, numbered in its own backend.
    assert dev_lines[-1].startswith("[ext_pysycl_host:custom][ext_pysycl_host:0] ")
    assert aspect_lines[-1].split()[1:] == [
        "custom", "emulated", "host_debuggable", "fp16", "fp64", "atomic64",
        "usm_device_allocations", "usm_host_allocations", "usm_atomic_host_allocations",
        "usm_shared_allocations", "usm_atomic_shared_allocations", "usm_system_allocations"]
    assert kernel_lines[-1] == "    Python kernels: interpreted (host_debuggable)"
    dev_lines, aspect_lines, kernel_lines = dev_lines[:-1], aspect_lines[:-1], kernel_lines[:-1]
    assert len(dev_lines) == len(aspect_lines) == len(cl_devices)
    for i, (line, asp, (p, d)) in enumerate(zip(dev_lines, aspect_lines, cl_devices, strict=True)):
        assert line.startswith("[opencl:"), line
        assert f"[opencl:{i}]" in line
        assert d.name.strip() in line and p.name.strip() in line
        assert d.driver_version.strip() in line
        # The aspects line agrees with pyopencl: fp16 iff cl_khr_fp16 (or PTX kernels),
        # SPIR-V iff IL versions.
        assert asp.startswith("    aspects: ")
        assert ("fp16" in asp.split()) == ("cl_khr_fp16" in d.extensions.split()
                                           or "ext_pysycl_ptx" in asp.split())
        assert ("ext_pysycl_spirv" in asp.split()) == ("SPIR-V" in (d.il_version or ""))
        # The formats line: SPIR-V iff IL versions; PTX for NVIDIA's compute capability.
        formats = kernel_lines[i].removeprefix("    Python kernels: ").split()
        assert ("spirv" in formats) == ("SPIR-V" in (d.il_version or ""))
        nv = "cl_nv_device_attribute_query" in d.extensions.split()
        assert any(f.startswith("ptx:sm_") for f in formats) == nv
        if nv:
            cc = f"ptx:sm_{d.compute_capability_major_nv}{d.compute_capability_minor_nv}"
            assert cc in formats
        if not formats or formats[0] == "no":
            assert "ext_pysycl_spirv" not in asp.split() and "ext_pysycl_ptx" not in asp.split()


def test_pysycl_ls_verbose_and_filter() -> None:
    r = _run(["-m", "pysycl", "--verbose"])
    assert r.returncode == 0, r.stderr
    n = len(sycl.device.get_devices())
    assert r.stdout.count("max_compute_units:") == n
    assert r.stdout.count("(default_selector_v)") == 1
    assert "aspects: [" in r.stdout
    r = _run(["-m", "pysycl"], PYSYCL_DEVICE_FILTER="no-such-device-anywhere")
    assert r.returncode == 1 and r.stdout == ""
    assert "PYSYCL_DEVICE_FILTER" in r.stderr
