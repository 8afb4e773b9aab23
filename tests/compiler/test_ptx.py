"""The PTX target on machines without a GPU: kernels that run on the CPU also compile to PTX.

Each test runs a kernel on the SPIR-V device (checked against numpy) and checks
the PTX image of the same kernel: the entry point, its parameters, the special
registers, and NVIDIA's assembler (``ptxas``, where CUDA is installed). The
same kernels run on an NVIDIA GPU in the GPU suite (docs/gpu.md).
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

import pysycl as sycl
from pysycl_numba.targets.ptx.retarget import retarget
from tests.conftest import malloc_shared_or_skip, ptxas_check, ptxas_info


def test_axpy_compiles_to_ptx(kq: sycl.queue, ptx_images: list) -> None:
    n = 1000
    x = np.arange(n, dtype=np.float32)
    y = np.ones(n, dtype=np.float32)
    a = np.float32(2.5)
    bx, by = sycl.buffer(x), sycl.buffer(y)

    def cg(h: sycl.handler) -> None:
        ax = bx.get_access(h, sycl.access_mode.read)
        ay = by.get_access(h, sycl.access_mode.read_write)
        h.parallel_for(sycl.range(n), lambda i: ay.__setitem__(i, a * ax[i] + ay[i]))

    kq.submit(cg).wait()
    with by.get_host_access() as hy:
        np.testing.assert_allclose(hy, a * x + 1)
    (img,) = ptx_images
    assert img.format == "ptx" and img.arch == "sm_90"
    ptx = img.binary.decode()
    assert f".visible .entry {img.entry}(" in ptx and ".target sm_90" in ptx
    params = [ln for ln in ptx.splitlines() if f"{img.entry}_param_" in ln
              and ln.strip().startswith(".param")]
    # the captures', then the user's range: the work-items loop over the items
    assert len(params) == sum(c.type.flat_arg_count() for c in img.captures) + 1
    assert "%ctaid.x" in ptx and "%ntid.x" in ptx and "%tid.x" in ptx
    assert "%nctaid.x" in ptx  # the grid's size: the loop's stride
    assert "call" not in ptx  # the built-in definitions are inlined into the entry point
    ptxas_check(img.binary)


def test_range_kernels_loop_with_few_registers(kq: sycl.queue, ptx_images: list) -> None:
    """A triad's entry point: a loop over items (1-D and 3-D) that ptxas assembles for
    sm_90 in few registers and without local-memory spills; the 1-D one runs blocks of
    consecutive items with 128-bit loads and stores (where its pointers are aligned), the
    3-D one a 3-D launch, an item a work-item (``abi.RANGE_COLUMNS`` 1)."""
    n = 1009
    x = malloc_shared_or_skip(n, kq, dtype=np.float32)
    y = malloc_shared_or_skip(n, kq, dtype=np.float32)
    z = malloc_shared_or_skip(n, kq, dtype=np.float32)
    np.asarray(x)[:] = np.arange(n)
    np.asarray(y)[:] = 1
    s = np.float32(3.0)
    kq.parallel_for(sycl.range(n), lambda i: z.__setitem__(i, x[i] + s * y[i])).wait()

    def k3(it):  # type: ignore[no-untyped-def]
        z[it.get_linear_id()] = x[it.get_linear_id()] + s * np.float32(it[2])

    kq.parallel_for(sycl.range(1, 1009, 1), k3).wait()
    np.testing.assert_array_equal(np.asarray(z), np.arange(n, dtype=np.float32))
    assert len(ptx_images) == 2
    triad, three_d = (img.binary.decode() for img in ptx_images)
    assert re.search(r"ld\.global\.v4\.(f|b)32", triad) and re.search(r"st\.global\.v4\.(f|b)32",
                                                                      triad)
    assert "ld.global.v4" not in three_d
    assert "%nctaid.z" in three_d and "%nctaid.z" not in triad
    for img in ptx_images:
        info = ptxas_info(img.binary)
        if info is None:
            continue  # no ptxas here
        regs, spills = info
        assert regs <= 32 and spills == 0, (regs, spills)


@pytest.mark.parametrize("columns,tile", [(1, (1, 1)), (1, (2, 1)), (4, (1, 1))])
def test_a_2d_range_runs_an_item_a_work_item_on_a_2d_launch(
        kq: sycl.queue, ptx_images: list, monkeypatch: pytest.MonkeyPatch, columns: int,
        tile: tuple[int, int]) -> None:
    """A Jacobi sweep over a 2-D range, as a user writes it, and an element-wise 2-D kernel:
    the entry point reads a 2-D launch (``%ctaid.y``, ``%nctaid.y``) and divides nothing
    (no ``div``/``rem``); ptxas assembles it for sm_90 in at most 32 registers (2048
    work-items an SM) without spills. ``abi.RANGE_COLUMNS`` 1: a work-item's item is four
    loads and a store where the launch covers the range, the same in the loop beyond CUDA's
    grid -- nothing else; with tiles of 2 rows (``abi.RANGE_BLOCK``, the default) a whole
    tile's two items share the load of the row between them (7 loads, not 8), its edge
    runs item by item. 4: a block of 4 items with aligned captures loads with
    ``ld.global.v4`` and shares its neighbours (fewer than 3 loads an item there), the
    element-wise kernel stores with ``st.global.v4``."""
    from pysycl._core import abi

    monkeypatch.setattr(abi, "RANGE_COLUMNS", columns)
    monkeypatch.setattr(abi, "RANGE_BLOCK", tile)
    n = 68
    a = malloc_shared_or_skip(n * n, kq, dtype=np.float32)
    o = malloc_shared_or_skip(n * n, kq, dtype=np.float32)
    src = np.random.default_rng(0).random((n, n), dtype=np.float32)
    np.asarray(a)[:] = src.ravel()
    np.asarray(o)[:] = 0
    quarter = np.float32(0.25)

    def jacobi(it):  # type: ignore[no-untyped-def]
        i, j = it[0] + 1, it[1] + 1
        o[i * n + j] = quarter * (a[(i - 1) * n + j] + a[(i + 1) * n + j]
                                  + a[i * n + j - 1] + a[i * n + j + 1])

    def scale(it):  # type: ignore[no-untyped-def]
        o[it[0] * n + it[1]] = quarter * a[it[0] * n + it[1]]

    kq.parallel_for(sycl.range(n - 2, n - 2), jacobi).wait()
    want = np.zeros((n, n), np.float32)
    want[1:-1, 1:-1] = quarter * (src[:-2, 1:-1] + src[2:, 1:-1] + src[1:-1, :-2]
                                  + src[1:-1, 2:])
    np.testing.assert_array_equal(np.asarray(o).reshape(n, n), want)
    kq.parallel_for(sycl.range(n, n), scale).wait()
    np.testing.assert_array_equal(np.asarray(o), quarter * src.ravel())
    sten, elem = (img.binary.decode() for img in ptx_images)
    for ptx in (sten, elem):
        assert "%ctaid.y" in ptx and "%nctaid.y" in ptx and "%nctaid.z" not in ptx
        assert not re.search(r"\b(div|rem)\.", ptx)
    loads = len(re.findall(r"\bld\.global\.", sten))
    stores = len(re.findall(r"\bst\.global\.", sten))
    if tile == (2, 1):  # an item, a whole tile (7 loads), the edge's item, the loop's
        assert loads <= 4 + 7 + 4 + 4 and 2 <= stores <= 5, (loads, stores)
    elif columns == 1:
        assert (loads, stores) == (8, 2)  # the covering launch's item, the loop's
    else:  # the vector block: 4 items in 3 stores; the rest item by item, the loop's
        assert re.search(r"ld\.global\.v4\.(f|b)32", sten)
        assert stores == 3 + 1 + 1 and loads - 4 - 4 < 3 * 4, (loads, stores)
        assert re.search(r"ld\.global\.v4\.(f|b)32", elem)
        assert re.search(r"st\.global\.v4\.(f|b)32", elem)
    for img in ptx_images:
        info = ptxas_info(img.binary)
        if info is not None:
            regs, spills = info
            assert regs <= 32 and spills == 0, (regs, spills)
    sycl.free(a, kq)
    sycl.free(o, kq)


def test_unmapped_builtins_are_named() -> None:
    ir = ('target triple = "spirv64v1.2-unknown-unknown"\n'
          "declare spir_func void @_Z9no_such_fj(i32)\n")
    with pytest.raises(NotImplementedError, match="_Z9no_such_fj"):
        retarget(ir)


def test_local_accessor_parameters_are_16_byte_aligned(kq: sycl.queue, ptx_images: list) -> None:
    # NVIDIA's OpenCL lays __local arguments out by the PTX parameter's alignment;
    # LLVM's default (.align 1) made such kernels fault on an H100.
    n, wg = 128, 32
    b = sycl.buffer(np.zeros(n, np.float32))

    def cg(h: sycl.handler) -> None:
        acc = b.get_access(h, sycl.access_mode.write)
        loc = sycl.local_accessor(np.float32, sycl.range(wg), h)

        def k(it):  # type: ignore[no-untyped-def]
            lid = it.get_local_id(0)
            loc[lid] = it.get_global_id(0)
            it.barrier()
            acc[it.get_global_id(0)] = loc[(lid + 1) % wg]
        h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

    kq.submit(cg).wait()
    with b.get_host_access() as h:
        g = np.arange(n)
        np.testing.assert_array_equal(h, g - g % wg + (g % wg + 1) % wg)
    (img,) = ptx_images
    shared = [ln for ln in img.binary.decode().splitlines() if ".ptr .shared" in ln]
    assert shared and all(".align 16" in ln for ln in shared)
    ptxas_check(img.binary)


@pytest.mark.parametrize(("dtype", "default", "value"), [(bool, False, True), (np.int32, 0, 7)])
def test_spec_constants_with_a_zero_default_are_specialised(dtype, default, value) -> None:  # type: ignore[no-untyped-def]
    # LLVM prints a zero-initialised .const global without "= 0": the rewrite must
    # add the initializer, not skip the constant.
    from pysycl._kernels.ptx_specconst import specialize_ptx

    bits = 8 if dtype is bool else 32
    ptx = f".const .align 4 .u{bits} __pysycl_sc_0;\n".encode()
    got = specialize_ptx(ptx, [(0, np.dtype(dtype).type(value))]).decode()
    assert got.strip() == f".const .align 4 .u{bits} __pysycl_sc_0 = {int(value)};"


def test_ptx_modules_link_by_text(kq: sycl.queue, ptx_images: list) -> None:
    # Two kernels that both carry libdevice's internal slow path (double sin) and its
    # tables: merged into one module, the second module's copies are renamed.
    from pysycl._core.ptx_link import link_ptx, module_symbols

    x = np.linspace(0, 1e6, 64)
    for f in (lambda v: math.sin(v), lambda v: math.cos(v) * 2.0):
        b = sycl.buffer(x.copy())

        def cg(h: sycl.handler, f=f, b=b) -> None:  # type: ignore[no-untyped-def]
            acc = b.get_access(h, sycl.access_mode.read_write)
            h.parallel_for(sycl.range(64), lambda i: acc.__setitem__(i, f(acc[i])))
        kq.submit(cg).wait()
    assert len(ptx_images) == 2
    a, c = (img.binary for img in ptx_images)
    shared = module_symbols(a.decode()) & module_symbols(c.decode())
    assert shared  # the same internal functions/tables in both
    linked = link_ptx([a, c]).decode()
    for img in ptx_images:
        assert f".entry {img.entry}(" in linked
    for name in shared:
        assert f"{name}_m1" in linked
    assert linked.count(".version") == 1
    ptxas_check(linked.encode())
    with pytest.raises(ValueError, match="different targets"):
        link_ptx([a, c.replace(b".target sm_90", b".target sm_80")])


def test_ptx_build_options_are_checked() -> None:
    # NVIDIA's OpenCL ignores unknown options when it builds PTX: pysycl refuses them.
    from pysycl._bundles.ops import check_ptx_options

    check_ptx_options("-cl-fast-relaxed-math -cl-nv-maxrregcount=32 -w", "build")
    with pytest.raises(sycl.exception) as ei:
        check_ptx_options("-cl-mad-enable -no-such-option", "build")
    assert ei.value.code() == sycl.errc.invalid and "-no-such-option" in str(ei.value)


def test_float_remainder_is_libdevice_fmod() -> None:
    """NVPTX expands ``frem`` as ``x - trunc(x / y) * y`` (inexact; ``inf % inf`` not NaN):
    the retargeted IR calls libdevice's exact ``fmod`` instead, also with fast-math flags."""
    ir = ('target triple = "spir64-unknown-unknown"\n'
          "define spir_func float @f(float %a, float %b) {\n"
          "  %r = frem float %a, %b\n  ret float %r\n}\n"
          "define spir_func double @g(double %a) {\n"
          "  %r = frem nnan double %a, 2.500000e+00\n  ret double %r\n}\n")
    out = retarget(ir)
    assert "frem" not in out.ir and out.libdevice
    assert "%r = call float @__nv_fmodf(float %a, float %b)" in out.ir
    assert "%r = call double @__nv_fmod(double %a, double 2.500000e+00)" in out.ir
    assert "declare float @__nv_fmodf(float, float)" in out.ir


def test_a_trip_count_of_odd_width_is_ptx(kq: sycl.queue, ptx_images: list) -> None:
    """A loop LLVM would replace by its closed form in an odd-width integer (``i33``: the
    sum of ``range(i % 5)``) compiles for both targets: SPIR-V, which has no such integers,
    keeps the loop (this kernel was refused as "33-bit integers" on every device), and PTX,
    which takes any width (found on an H100)."""
    n = 64
    a = np.arange(n, dtype=np.int32)
    out = np.zeros(n, np.int32)
    with sycl.buffer(a) as ba, sycl.buffer(out) as bo:
        def cg(h: sycl.handler) -> None:
            ra = ba.get_access(h, sycl.access_mode.read)
            wo = bo.get_access(h, sycl.access_mode.write)

            def kern(it):  # type: ignore[no-untyped-def]
                i = it[0]
                acc = 0
                for k in range(i % 5):
                    acc += k
                j = 0
                while j < 3:
                    acc += 1
                    j += 1
                wo[i] = acc + ra[i]
            h.parallel_for(sycl.range(n), kern)
        kq.submit(cg).wait()
    want = np.array([sum(range(i % 5)) + 3 + i for i in range(n)], np.int32)
    np.testing.assert_array_equal(out, want)
    (img,) = ptx_images
    ptxas_check(img.binary)
