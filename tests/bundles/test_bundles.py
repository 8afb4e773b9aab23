"""get_kernel_bundle / has_kernel_bundle / is_compatible / join / compile / link / build,
device images and use_kernel_bundle, on the Intel CPU device and PoCL (and a CUDA device,
where the test devices name it: PTX images built by the driver's JIT)."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from bundles._decl import optional, scale_factory, vadd_factory

S = sycl.bundle_state


def _code(ei: pytest.ExceptionInfo) -> sycl.errc:
    return ei.value.code()


# ------------------------------------------------------------ get_kernel_bundle
def test_input_bundle_holds_spirv_images(kctx, declared):
    kb = sycl.get_kernel_bundle(kctx, state=S.input)
    assert kb.get_state() is S.input
    assert kb.get_context() == kctx
    assert kb.get_devices() == kctx.get_devices()
    # the context's backend: OpenCL, or CUDA where the Python-kernel device is a CUDA one
    assert kb.get_backend() is kctx.get_backend()
    assert kb.get_backend() in (sycl.backend.opencl, sycl.backend.ext_oneapi_cuda)
    for kid in declared.values():
        assert kb.has_kernel(kid)
    imgs = list(kb)
    fmt = kctx.get_devices()[0].image_targets[0][0]  # spirv, or ptx on an NVIDIA GPU
    assert imgs and all(i.ext_pysycl_format() == fmt for i in imgs)
    half = [i for i in imgs if i.has_kernel(declared["half"])]
    _dt, asp, _f = optional(kctx.get_devices()[0])
    assert half and asp in half[0].ext_pysycl_required_aspects()
    assert set(declared.values()) <= set(kb.get_kernel_ids())


def test_overloads_are_equivalent(kctx, declared):
    dev = kctx.get_devices()[0]
    kid = declared["vadd"]
    a = sycl.get_kernel_bundle(kctx, [kid], state=S.input)
    b = sycl.get_kernel_bundle(kctx, [dev], [kid], state=S.input)
    c = sycl.get_kernel_bundle(kctx, kernel_name="bundles.vadd", state=S.input)
    d = sycl.get_kernel_bundle(kctx, [dev], kernel_name="bundles.vadd", state=S.input)
    e = sycl.get_kernel_bundle(kctx, devs=[dev], kernel_ids=[kid], state=S.input)
    imgs = [list(x) for x in (a, b, c, d, e)]
    assert all(i == imgs[0] for i in imgs)
    assert a.get_kernel_ids() == [kid]


def test_selector_overload_picks_device_images(kctx, declared):
    kb = sycl.get_kernel_bundle(kctx, lambda img: img.has_kernel(declared["scale"]),
                                state=S.input)
    assert kb.has_kernel(declared["scale"]) and not kb.has_kernel(declared["vadd"])
    kb2 = sycl.get_kernel_bundle(kctx, kctx.get_devices(),
                                 lambda img: img.has_kernel(declared["vadd"]),
                                 state=S.executable)
    # Executable images group kernels with the same aspects: scale comes along, half not.
    assert kb2.has_kernel(declared["vadd"]) and kb2.has_kernel(declared["scale"])
    assert not kb2.has_kernel(declared["half"])


def test_get_kernel_bundle_empty_devs_is_invalid(kctx):
    with pytest.raises(sycl.exception) as ei:
        sycl.get_kernel_bundle(kctx, [], state=S.input)
    assert _code(ei) == sycl.errc.invalid
    with pytest.raises(sycl.exception) as ei:
        sycl.has_kernel_bundle(kctx, [], state=S.input)
    assert _code(ei) == sycl.errc.invalid


def test_device_not_in_context_is_invalid(kctx, pocl_device, declared):
    for fn in (sycl.get_kernel_bundle, sycl.has_kernel_bundle):
        with pytest.raises(sycl.exception) as ei:
            fn(kctx, [pocl_device], state=S.input)
        assert _code(ei) == sycl.errc.invalid
        assert "not a device" in str(ei.value)
    with pytest.raises(sycl.exception) as ei:
        sycl.get_kernel_bundle(kctx, [pocl_device], lambda img: True, state=S.input)
    assert _code(ei) == sycl.errc.invalid


def test_kernel_incompatible_with_all_devices_is_invalid(pocl_device, declared):
    ctx = sycl.context(pocl_device)
    with pytest.raises(sycl.exception) as ei:
        sycl.get_kernel_bundle(ctx, [declared["vadd"]], state=S.executable)
    assert _code(ei) == sycl.errc.invalid
    assert "not compatible" in str(ei.value)


def test_pocl_gets_no_spirv_images(pocl_device, declared):
    ctx = sycl.context(pocl_device)
    kb = sycl.get_kernel_bundle(ctx, state=S.input)
    assert kb.empty()
    assert not sycl.has_kernel_bundle(ctx, state=S.input)
    assert not sycl.has_kernel_bundle(ctx, [declared["vadd"]], state=S.executable)


def test_state_keyword_is_checked(kctx):
    with pytest.raises(TypeError, match="bundle_state"):
        sycl.get_kernel_bundle(kctx, state="input")
    with pytest.raises(TypeError, match="ext_oneapi_source"):
        sycl.get_kernel_bundle(kctx, state=S.ext_oneapi_source)
    with pytest.raises(TypeError, match=r"sycl.context"):
        sycl.get_kernel_bundle("ctx", state=S.input)


def test_has_kernel_bundle_answers_without_compiling(kctx, declared):
    def never_built(a, b, c):
        return lambda i: c.__setitem__(i, a[i] * b[i])

    from bundles._decl import RD, WR

    kid = sycl.ext.declare_kernel(never_built, kernel_name="bundles.never_built",
                                  index_space=sycl.range(1), captures={"a": RD, "b": RD, "c": WR})
    sycl.ext.reset_kernel_cache_stats()
    assert sycl.has_kernel_bundle(kctx, state=S.executable)
    assert sycl.has_kernel_bundle(kctx, [kid], state=S.input)
    assert sycl.has_kernel_bundle(kctx, kctx.get_devices(), [kid], state=S.object)
    assert sycl.has_kernel_bundle(kctx, kernel_name="bundles.never_built", state=S.object)
    assert sycl.is_compatible([kid], kctx.get_devices()[0])
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] == 0 and s["cl_compiles"] == 0


def test_is_compatible_uses_aspects(kctx, pocl_device, declared):
    intel = kctx.get_devices()[0]
    assert sycl.is_compatible([declared["half"]], intel) == intel.has(optional(intel)[1])
    assert not sycl.is_compatible([declared["half"]], pocl_device)  # no fp16, no SPIR-V
    assert not sycl.is_compatible([declared["vadd"]], pocl_device)  # no SPIR-V
    assert sycl.is_compatible("bundles.vadd", intel)
    assert sycl.is_compatible([], pocl_device)
    with pytest.raises(TypeError):
        sycl.is_compatible([declared["vadd"]], "dev")


# ------------------------------------------------------------ compile/link/build
def test_compile_link_build_states(kctx, declared):
    ids = [declared["vadd"], declared["scale"], declared["half"]]
    kb_in = sycl.get_kernel_bundle(kctx, ids, state=S.input)
    sycl.ext.reset_kernel_cache_stats()
    kb_obj = sycl.compile(kb_in)
    assert kb_obj.get_state() is S.object
    assert sycl.ext.kernel_cache_stats()["cl_compiles"] == len(list(kb_in))
    kb_exe = sycl.link(kb_obj)
    assert kb_exe.get_state() is S.executable
    for kid in ids:
        assert kb_exe.has_kernel(kid, kctx.get_devices()[0])
    # fp16 kernels never share an executable image with kernels without optional aspects.
    imgs = list(kb_exe)
    assert len(imgs) == 2
    fp16 = next(i for i in imgs if i.has_kernel(declared["half"]))
    assert not fp16.has_kernel(declared["vadd"])
    other = next(i for i in imgs if i is not fp16)
    assert other.has_kernel(declared["vadd"]) and other.has_kernel(declared["scale"])
    kb_b = sycl.build(kb_in)
    assert sorted(k.get_name() for k in kb_b.get_kernel_ids()) == \
        sorted(k.get_name() for k in kb_exe.get_kernel_ids())
    assert sycl.get_kernel_bundle(kctx, ids, state=S.object).get_state() is S.object


def test_link_of_several_object_bundles_makes_one_program(kctx, declared):
    o1 = sycl.get_kernel_bundle(kctx, [declared["vadd"]], state=S.object)
    o2 = sycl.get_kernel_bundle(kctx, [declared["scale"]], state=S.object)
    exe = sycl.link([o1, o2])
    imgs = list(exe)
    assert len(imgs) == 1
    assert imgs[0].has_kernel(declared["vadd"]) and imgs[0].has_kernel(declared["scale"])
    assert len({id(p) for p in exe.images[0].programs.values()}) == 1
    if kctx.get_backend() is sycl.backend.opencl:
        assert len(sycl.get_native(exe)) == 1
    assert sycl.link([o1, o2], kctx.get_devices()).has_kernel(declared["scale"])


def test_compile_link_build_device_errors(kctx, declared):
    kb_in = sycl.get_kernel_bundle(kctx, [declared["vadd"]], state=S.input)
    kb_obj = sycl.compile(kb_in)
    other = sycl.context(kctx.get_devices()[0])
    obj_other = sycl.get_kernel_bundle(other, [declared["vadd"]], state=S.object)
    for fn, arg in ((sycl.compile, kb_in), (sycl.build, kb_in), (sycl.link, kb_obj)):
        with pytest.raises(sycl.exception) as ei:
            fn(arg, [])
        assert _code(ei) == sycl.errc.invalid
    pocl = [d for d in sycl.device.get_devices()
            if d.get_backend() is sycl.backend.opencl and not d.image_targets]
    if pocl:
        for fn, arg in ((sycl.compile, kb_in), (sycl.build, kb_in), (sycl.link, kb_obj)):
            with pytest.raises(sycl.exception) as ei:
                fn(arg, pocl)
            assert _code(ei) == sycl.errc.invalid
    with pytest.raises(sycl.exception) as ei:
        sycl.link([kb_obj, obj_other])
    assert _code(ei) == sycl.errc.invalid
    with pytest.raises(TypeError, match=r"bundle_state.input"):
        sycl.compile(kb_obj)
    with pytest.raises(TypeError, match=r"bundle_state.object"):
        sycl.link(kb_in)
    with pytest.raises(sycl.exception) as ei:
        sycl.build(kb_in, properties=["bogus"])
    assert _code(ei) == sycl.errc.invalid


def test_build_error_from_bad_options_and_build_failure(kctx, declared):
    syclex = sycl.ext.oneapi.experimental
    kb_in = sycl.get_kernel_bundle(kctx, [declared["scale"]], state=S.input)
    with pytest.raises(sycl.exception) as ei:
        sycl.build(kb_in, properties=[syclex.build_options("-no-such-option")])
    assert _code(ei) == sycl.errc.invalid
    fast = sycl.build(kb_in, properties=[syclex.build_options("-cl-fast-relaxed-math")])
    assert fast.has_kernel(declared["scale"])
    if kctx.get_backend() is not sycl.backend.opencl:  # no OpenCL program to compile
        # errc.build on CUDA: PTX the driver's JIT refuses (build of a source bundle)
        from bundles._sources import PTX_BROKEN

        bad = syclex.create_kernel_bundle_from_source(kctx, syclex.source_language.
                                                      ext_pysycl_ptx, PTX_BROKEN)
        with pytest.raises(sycl.exception) as ei:
            syclex.build(bad)
        assert _code(ei) == sycl.errc.build
        assert "undeclared_name" in str(ei.value)
        return
    # errc.build: an OpenCL C program that does not compile, compiled through the core API.
    bad = sycl.opencl.create_bundle(kctx, kctx.get_devices(), [
        _raw_program(kctx, "__kernel void f(__global int* x) { x[0] = nope; }")],
        state=S.input)
    with pytest.raises(sycl.exception) as ei:
        sycl.compile(bad)
    assert _code(ei) == sycl.errc.build
    assert "nope" in str(ei.value)


def _raw_program(ctx, src):
    import pyopencl as cl  # interop: the test builds a native program itself

    return cl.Program(cl._cl._Program(sycl.get_native(ctx), src))


# ------------------------------------------------------------------------ join
def test_join_unions_and_deduplicates(kctx, declared):
    a = sycl.get_kernel_bundle(kctx, [declared["vadd"]], state=S.input)
    b = sycl.get_kernel_bundle(kctx, [declared["scale"], declared["vadd"]], state=S.input)
    j = sycl.join([a, b])
    assert len(list(j)) == 2
    assert j.has_kernel(declared["vadd"]) and j.has_kernel(declared["scale"])
    assert j.get_context() == kctx and j.get_devices() == a.get_devices()


def test_join_errors(kctx, declared):
    a = sycl.get_kernel_bundle(kctx, [declared["vadd"]], state=S.input)
    other = sycl.get_kernel_bundle(sycl.context(kctx.get_devices()[0]), [declared["vadd"]],
                                   state=S.input)
    with pytest.raises(sycl.exception) as ei:
        sycl.join([a, other])
    assert _code(ei) == sycl.errc.invalid
    with pytest.raises(TypeError, match="one state"):
        sycl.join([a, sycl.compile(a)])


@pytest.mark.parametrize("state", [S.input, S.object, S.executable])
def test_join_of_no_bundles_needs_the_state(state):
    # SYCL-CTS sycl_join_zero_kernel_bundles: join<State>({}) is an empty bundle of State.
    kb = sycl.join([], state=state)
    assert kb.empty() and kb.get_state() is state and list(kb) == []
    assert kb.get_kernel_ids() == []
    ctx = sycl.queue().get_context()  # the default device's default context
    assert kb.get_context() == ctx and kb.get_devices() == ctx.get_devices()
    with pytest.raises(TypeError, match=r"join\(\[\]\) needs the state"):
        sycl.join([])
    with pytest.raises(TypeError, match="ext_oneapi_source"):
        sycl.join([], state=S.ext_oneapi_source)
    with pytest.raises(TypeError, match=r"state= must be a sycl\.bundle_state"):
        sycl.join([], state="input")


def test_join_with_state_checks_the_bundles(kctx, declared):
    a = sycl.get_kernel_bundle(kctx, [declared["vadd"]], state=S.input)
    j = sycl.join([a], state=S.input)
    assert j.get_state() is S.input and j.has_kernel(declared["vadd"])
    with pytest.raises(TypeError, match="must be in state executable, one is input"):
        sycl.join([a], state=S.executable)
    # an empty join of the default context joins with a bundle of that context
    dctx = sycl.queue().get_context()
    if dctx == kctx:
        both = sycl.join([sycl.join([], state=S.input), a])
        assert [k.get_name() for k in both.get_kernel_ids()] == ["bundles.vadd"]


def test_join_different_device_sets_is_invalid(declared):
    subs = None
    devs = [d for d in sycl.device.get_devices() if d.image_targets]
    try:
        subs = devs[0].create_sub_devices(sycl.info.partition_property.partition_equally, 1)
    except sycl.exception:
        pytest.skip("the Python-kernel device cannot be partitioned (a GPU)")
    ctx = sycl.context(devs[0])
    a = sycl.get_kernel_bundle(ctx, [devs[0]], state=S.input)
    b = sycl.get_kernel_bundle(ctx, [subs[0]], state=S.input)
    with pytest.raises(sycl.exception) as ei:
        sycl.join([a, b])
    assert _code(ei) == sycl.errc.invalid


# ----------------------------------------------------------- use_kernel_bundle
def _run_vadd(q, kb=None, name=None):
    a = np.arange(32, dtype=np.float32)
    c = np.zeros_like(a)
    with sycl.buffer(a) as A, sycl.buffer(c) as C:
        def cg(h):
            if kb is not None:
                h.use_kernel_bundle(kb)
            ra = A.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(32), vadd_factory(ra, ra, wc), kernel_name=name)
        q.submit(cg).wait()
    return a, c


def test_use_kernel_bundle_runs_without_recompiling(kq, declared):
    exe = sycl.get_kernel_bundle(kq.get_context(), [declared["vadd"]], state=S.executable)
    sycl.ext.reset_kernel_cache_stats()
    sycl.ext.clear_kernel_memory_cache()
    a, c = _run_vadd(kq, exe)
    assert np.array_equal(c, 2 * a)
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] == 0 and s["cl_builds"] == 0 and s["disk_hits"] == 0


def test_use_kernel_bundle_without_the_kernel(kq, declared):
    exe = sycl.get_kernel_bundle(kq.get_context(), [declared["scale"]], state=S.executable)
    with pytest.raises(sycl.exception) as ei:
        _run_vadd(kq, exe)
    assert _code(ei) == sycl.errc.kernel_not_supported
    assert "does not contain" in str(ei.value)


def test_use_kernel_bundle_other_variant(kq, declared):
    exe = sycl.get_kernel_bundle(kq.get_context(), [declared["vadd"]], state=S.executable)
    a = np.arange(4, dtype=np.float64)
    with sycl.buffer(a) as A:
        def cg(h):
            h.use_kernel_bundle(exe)
            r = A.get_access(h, sycl.access_mode.read)
            w = A.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(4), vadd_factory(r, r, w))
        with pytest.raises(sycl.exception) as ei:
            kq.submit(cg)
    assert _code(ei) == sycl.errc.kernel_not_supported


def test_use_kernel_bundle_context_mismatch(kq, declared):
    other = sycl.context(kq.get_device())
    exe = sycl.get_kernel_bundle(other, [declared["vadd"]], state=S.executable)
    with pytest.raises(sycl.exception) as ei:
        _run_vadd(kq, exe)
    assert _code(ei) == sycl.errc.invalid


def test_use_kernel_bundle_needs_executable(kq, declared):
    kb_in = sycl.get_kernel_bundle(kq.get_context(), [declared["vadd"]], state=S.input)
    with pytest.raises(TypeError, match="executable"):
        _run_vadd(kq, kb_in)


def test_scale_and_half_from_one_built_bundle(kq, declared):
    dt, _asp, factory = optional(kq.get_device())
    exe = sycl.build(sycl.get_kernel_bundle(kq.get_context(), [declared["scale"],
                                                               declared["half"]],
                                            state=S.input))
    x = np.ones(8, np.float32)
    h16 = np.full(8, 3.0, dt)
    with sycl.buffer(x) as X, sycl.buffer(h16) as H:
        def cg(h):
            h.use_kernel_bundle(exe)
            h.parallel_for(sycl.range(8), scale_factory(
                X.get_access(h, sycl.access_mode.read_write), np.float32(2.5)))
        kq.submit(cg)

        def cg2(h):
            h.use_kernel_bundle(exe)
            h.parallel_for(sycl.range(8), factory(
                H.get_access(h, sycl.access_mode.read_write)))
        kq.submit(cg2)
    assert np.all(x == 2.5) and np.all(h16 == 1.5)


# ------------------------------------------------------------ kernel objects
def test_get_kernel_and_info(kq, declared):
    exe = sycl.get_kernel_bundle(kq.get_context(), [declared["vadd"]], state=S.executable)
    k = exe.get_kernel(declared["vadd"])
    assert k.get_context() == kq.get_context() and k.get_kernel_bundle() is exe
    assert k.get_backend() is kq.get_backend()
    # three 1-D accessors (base, offset, range), then the 1-D range kernel's range
    assert k.get_info(sycl.info.kernel.num_args) == 3 * 3 + 1
    dev = kq.get_device()
    KD = sycl.info.kernel_device_specific
    assert k.get_info(KD.work_group_size, dev) >= 1
    assert k.get_info(KD.preferred_work_group_size_multiple, dev) >= 1
    assert k.get_info(KD.private_mem_size, dev) >= 0
    assert len(k.get_info(KD.compile_work_group_size, dev)) == 3
    with pytest.raises(sycl.exception) as ei:
        k.get_info(KD.global_work_size, dev)
    assert _code(ei) == sycl.errc.invalid
    with pytest.raises(TypeError):
        k.get_info(KD.work_group_size)
    with pytest.raises(sycl.exception) as ei:
        exe.get_kernel(declared["scale"])
    assert _code(ei) == sycl.errc.invalid
    with pytest.raises(TypeError, match="executable"):
        sycl.get_kernel_bundle(kq.get_context(), [declared["vadd"]],
                               state=S.input).get_kernel(declared["vadd"])


def test_python_kernel_object_cannot_take_set_arg(kq, declared):
    exe = sycl.get_kernel_bundle(kq.get_context(), [declared["vadd"]], state=S.executable)
    k = exe.get_kernel(declared["vadd"])
    with pytest.raises(sycl.exception) as ei:
        kq.submit(lambda h: h.parallel_for(sycl.range(1), k))
    assert _code(ei) == sycl.errc.invalid


# ------------------------------------------------------- specialization constants
def test_specialization_constant_values_in_bundles(kctx, declared):
    sid = sycl.specialization_id(np.int32, 7)
    kb = sycl.get_kernel_bundle(kctx, [declared["vadd"]], state=S.input)
    assert not kb.contains_specialization_constants()
    assert not kb.native_specialization_constant()
    assert not kb.has_specialization_constant(sid)
    assert kb.get_specialization_constant(sid) == 7
    kb.set_specialization_constant(sid, 9)
    assert kb.get_specialization_constant(sid) == 9
    exe = sycl.build(kb)
    assert exe.get_specialization_constant(sid) == 9
    with pytest.raises(TypeError, match=r"bundle_state.input"):
        exe.set_specialization_constant(sid, 1)
    with pytest.raises(TypeError):
        kb.get_specialization_constant("x")
