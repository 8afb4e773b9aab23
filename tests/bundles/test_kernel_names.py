"""Kernel names: one name, one kernel; one compiled function under several names keeps
every kernel id through compile/link/build/join; errors name the kernel_name.

SYCL 2020 §5.2 (naming of kernels): a kernel name identifies one kernel of the
program (two kernels of one name make a C++ program ill formed; pysycl raises
``errc.invalid``). §4.11 (kernel bundles): each kernel a bundle represents is in one
of its device images, and ``has_kernel``/``get_kernel_ids`` report it.
"""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl

S = sycl.bundle_state


def _fill(q: sycl.queue, name: str, value: int, kb: sycl.kernel_bundle | None = None
          ) -> np.ndarray:
    """Submit one lambda (one code object for every call) under ``name``: r[i] = value."""
    r = np.zeros(8, np.int32)
    with sycl.buffer(r) as B:
        def cg(h: sycl.handler) -> None:
            if kb is not None:
                h.use_kernel_bundle(kb)
            acc = B.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(8), lambda i: acc.__setitem__(i, value), kernel_name=name)

        q.submit(cg)
    return r


def _run_source(q: sycl.queue, src: str, filename: str, name: str) -> np.ndarray:
    """Compile ``src`` (defining ``fac(acc)``, returning a kernel) as ``filename`` and
    submit its kernel under ``name`` (how a module reload or a notebook cell makes a
    function again)."""
    ns: dict = {}
    exec(compile(src, filename, "exec"), ns)
    r = np.zeros(4, np.int32)
    with sycl.buffer(r) as B:
        q.submit(lambda h: h.parallel_for(sycl.range(4), ns["fac"](B.get_access(h)),
                                          kernel_name=name))
    return r


def _line_of(text: str) -> int:
    """The line of this file that holds ``text``."""
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


SRC_3 = "def fac(a):\n    return lambda i: a.__setitem__(i, 3)\n"
SRC_4 = "def fac(a):\n    return lambda i: a.__setitem__(i, 4)\n"


# ------------------------------------------------ one function, two kernel names (§4.11)
def test_link_of_two_compiled_bundles_keeps_both_ids_of_one_function(kq):
    ctx = kq.get_context()
    assert (_fill(kq, "kn.one", 5) == 5).all() and (_fill(kq, "kn.two", 5) == 5).all()
    one, two = sycl.get_kernel_id("kn.one"), sycl.get_kernel_id("kn.two")
    in1 = sycl.get_kernel_bundle(ctx, [one], state=S.input)
    in2 = sycl.get_kernel_bundle(ctx, [two], state=S.input)
    exe = sycl.link([sycl.compile(in1), sycl.compile(in2)])
    assert exe.has_kernel(one) and exe.has_kernel(two)
    assert set(exe.get_kernel_ids()) == {one, two}
    assert exe.get_kernel(two).get_kernel_bundle() is exe
    # both launch from the linked bundle, compiling nothing
    sycl.ext.reset_kernel_cache_stats()
    assert (_fill(kq, "kn.one", 6, exe) == 6).all()
    assert (_fill(kq, "kn.two", 7, exe) == 7).all()
    assert sycl.ext.kernel_cache_stats()["compiles"] == 0


def test_every_bundle_operation_keeps_both_ids_of_one_function(kq):
    ctx = kq.get_context()
    _fill(kq, "kn.three", 1)
    _fill(kq, "kn.four", 1)
    ids = {sycl.get_kernel_id("kn.three"), sycl.get_kernel_id("kn.four")}
    both = sycl.get_kernel_bundle(ctx, list(ids), state=S.input)
    assert set(both.get_kernel_ids()) == ids
    assert set(sycl.join([sycl.get_kernel_bundle(ctx, [k], state=S.input) for k in ids])
               .get_kernel_ids()) == ids
    assert set(sycl.compile(both).get_kernel_ids()) == ids
    exe = sycl.build(both)
    assert set(exe.get_kernel_ids()) == ids and all(exe.has_kernel(k, kq.get_device())
                                                    for k in ids)
    assert all(any(img.has_kernel(k) for img in exe) for k in ids)
    assert set(sycl.get_kernel_bundle(ctx, list(ids), state=S.executable)
               .get_kernel_ids()) == ids


# ---------------------------------------------------------- one name, one kernel (§5.2)
def test_kernel_name_reused_for_a_different_function_is_invalid(kq):
    _fill(kq, "kn.taken", 1)
    r = np.arange(4, dtype=np.int32)
    with sycl.buffer(r) as B:
        def cg(h: sycl.handler) -> None:
            acc = B.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, 9), kernel_name="kn.taken")

        with pytest.raises(sycl.exception) as ei:
            kq.submit(cg)
    assert ei.value.code() == sycl.errc.invalid
    msg = str(ei.value)
    assert "'kn.taken'" in msg
    first, second = _line_of("__setitem__(i, value)"), _line_of('9), kernel_name="kn.taken"')
    assert f"{__file__}:{first}" in msg and f"{__file__}:{second}" in msg
    np.testing.assert_array_equal(r, np.arange(4))  # nothing ran


def test_same_function_and_a_lambda_made_again_keep_their_name(kq):
    for v in range(3):  # _fill makes its lambda again on every call: one code object
        assert (_fill(kq, "kn.loop", v) == v).all()
    assert sycl.get_kernel_id("kn.loop").get_name() == "kn.loop"


def test_same_text_compiled_again_at_the_same_place_is_one_definition(kq):
    # A module reloaded, a notebook cell run again: new code objects, same file,
    # line and text.
    for _ in range(2):
        assert (_run_source(kq, SRC_3, "/nonexistent/kn_module.py", "kn.reloaded") == 3).all()


def test_edited_definition_in_a_file_under_the_same_name_is_invalid(kq):
    assert (_run_source(kq, SRC_3, "/nonexistent/kn_edited.py", "kn.edited") == 3).all()
    with pytest.raises(sycl.exception) as ei:
        _run_source(kq, SRC_4, "/nonexistent/kn_edited.py", "kn.edited")
    assert ei.value.code() == sycl.errc.invalid
    assert "/nonexistent/kn_edited.py:2" in str(ei.value)


@pytest.mark.parametrize("cells", [("<ipython-input-3-1a2b>", "<ipython-input-4-3c4d>"),
                                   ("/tmp/ipykernel_7/1234.py", "/tmp/ipykernel_7/5678.py")],
                         ids=["ipython", "ipykernel"])
def test_edited_notebook_cell_run_again_replaces_the_kernel(kq, cells):
    name = f"kn.cell.{cells[0][-8:]}"
    assert (_run_source(kq, SRC_3, cells[0], name) == 3).all()
    assert (_run_source(kq, SRC_4, cells[1], name) == 4).all()
    kid = sycl.get_kernel_id(name)
    # the bundle of that name holds the new definition only
    exe = sycl.get_kernel_bundle(kq.get_context(), [kid], state=S.executable)
    assert len(list(exe)) == 1
    r = np.zeros(4, np.int32)
    ns: dict = {}
    exec(compile(SRC_4, cells[1], "exec"), ns)

    def cg(h: sycl.handler) -> None:
        h.use_kernel_bundle(exe)
        h.parallel_for(sycl.range(4), ns["fac"](B.get_access(h)), kernel_name=name)

    with sycl.buffer(r) as B:
        kq.submit(cg)
    assert (r == 4).all()


def test_declared_name_takes_its_factory_kernel_only(kq):
    def fac(a):
        return lambda i: a.__setitem__(i, 2)

    sycl.ext.declare_kernel(fac, kernel_name="kn.declared", index_space=sycl.range(1),
                            captures={"a": sycl.ext.accessor_type(np.int32, 1)})
    r = np.zeros(4, np.int32)
    with sycl.buffer(r) as B:
        kq.submit(lambda h: h.parallel_for(sycl.range(4), fac(B.get_access(h)),
                                           kernel_name="kn.declared"))
    assert (r == 2).all()
    with pytest.raises(sycl.exception) as ei:
        _fill(kq, "kn.declared", 1)
    assert ei.value.code() == sycl.errc.invalid
    with pytest.raises(sycl.exception) as ei:
        sycl.ext.declare_kernel(lambda a: (lambda i: a.__setitem__(i, 1)),
                                kernel_name="kn.declared", index_space=sycl.range(1),
                                captures={"a": sycl.ext.accessor_type(np.int32, 1)})
    assert ei.value.code() == sycl.errc.invalid


def test_queue_shortcut_and_host_device_check_the_name_too(kq, host_device):
    p = sycl.malloc_device(4, kq, dtype=np.int32)  # device USM: every device has it
    try:
        kq.parallel_for(sycl.range(4), lambda i: p.__setitem__(i, 1), kernel_name="kn.q").wait()
        with pytest.raises(sycl.exception) as ei:
            kq.parallel_for(sycl.range(4), lambda i: p.__setitem__(i, 2), kernel_name="kn.q")
        assert ei.value.code() == sycl.errc.invalid
        back = np.zeros(4, np.int32)
        kq.copy(p, back, 4).wait()
        assert back.tolist() == [1] * 4
    finally:
        sycl.free(p, kq)
    hq = sycl.queue(host_device)
    _fill(hq, "kn.host", 1)
    with pytest.raises(sycl.exception) as ei:
        _run_source(hq, SRC_3, "/nonexistent/kn_host.py", "kn.host")
    assert ei.value.code() == sycl.errc.invalid


# ------------------------------------------- kernel_not_supported names the kernel_name
def test_kernel_not_supported_names_the_kernel_name_of_a_shared_compile(kq, pocl_device):
    _fill(kq, "kn.shared_a", 1)  # compiled under kn.shared_a
    with pytest.raises(sycl.exception) as ei:
        _fill(sycl.queue(pocl_device), "kn.shared_b", 1)
    assert ei.value.code() == sycl.errc.kernel_not_supported
    assert "kernel kn.shared_b (" in str(ei.value)


def test_use_kernel_bundle_without_the_kernel_names_the_kernel_name(kq):
    _fill(kq, "kn.in_bundle", 1)
    exe = sycl.get_kernel_bundle(kq.get_context(), [sycl.get_kernel_id("kn.in_bundle")],
                                 state=S.executable)
    r = np.zeros(4, np.int32)
    with sycl.buffer(r) as B:
        def cg(h: sycl.handler) -> None:
            h.use_kernel_bundle(exe)
            acc = B.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: acc.__setitem__(i, 9),
                           kernel_name="kn.not_in_bundle")

        with pytest.raises(sycl.exception) as ei:
            kq.submit(cg)
    assert ei.value.code() == sycl.errc.kernel_not_supported
    assert "'kn.not_in_bundle'" in str(ei.value)


def test_host_device_kernel_object_names_the_kernel_name(kq, host_device):
    _fill(kq, "kn.for_host", 1)
    exe = sycl.get_kernel_bundle(kq.get_context(), [sycl.get_kernel_id("kn.for_host")],
                                 state=S.executable)
    k = exe.get_kernel(sycl.get_kernel_id("kn.for_host"))
    with pytest.raises(sycl.exception) as ei:
        sycl.queue(host_device).submit(
            lambda h: h.parallel_for(sycl.range(1), k, kernel_name="kn.host_object"))
    assert ei.value.code() == sycl.errc.kernel_not_supported
    assert "'kn.host_object'" in str(ei.value)
