"""PTX definitions of barriers, sub-groups and group collectives; spec constants; atomics.

Three kinds of check, none needing a GPU:

* kernels run on the SPIR-V device against numpy, and their PTX images (the
  ``ptx_images`` fixture) are inspected and assembled by ``ptxas``;
* the definitions' IR runs in a CTA simulator (:mod:`tests.compiler.ptx_warp_sim`)
  that applies PTX's warp and barrier rules strictly, over work-group shapes
  hypothesis picks (partial warps included);
* specialization constants: the PTX of a kernel is specialised by the runtime
  function and checked as text and by ``ptxas``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl._core.exceptions import errc
from pysycl._kernels.ptx_specconst import specialize_ptx
from pysycl_numba.targets.ptx.builtins import Decl, lookup
from pysycl_numba.targets.ptx.specconst import lower_spec_constants
from tests.compiler.ptx_warp_sim import WARP, SimError, parse, run_cta
from tests.conftest import ptxas_check

DTYPES = [np.int32, np.uint32, np.int64, np.uint64, np.float32, np.float64]
_FULL_MASK = re.compile(r"^\s*(?:shfl|vote)\.sync[^;]*,\s*(?:-1|0xffffffff|4294967295);", re.M)


def _ptx(images: list) -> str:
    (img,) = images
    ptx = img.binary.decode()
    ptxas_check(img.binary)
    assert not re.search(r"\bcall\b", ptx)  # every definition inlined
    return ptx


# ------------------------------------------------------------ kernels (CPU + PTX)
@pytest.mark.parametrize("dtype", DTYPES)
def test_group_collectives_run_and_lower_to_warp_code(kq: sycl.queue, ptx_images: list,
                                                      dtype: type) -> None:
    local = (3, 20)  # 60 work-items: a full warp and a partial one of 28 on a GPU
    groups = 4
    n = local[0] * local[1] * groups
    rng = np.random.default_rng(7)
    x = rng.integers(0, 90, n).astype(dtype).reshape(local[0] * groups, local[1])
    out = np.zeros((n, 8), np.float64)
    with sycl.buffer(x) as bx, sycl.buffer(out) as bo:
        def cg(h: sycl.handler) -> None:
            rx = bx.get_access(h, sycl.access_mode.read)
            o = bo.get_access(h, sycl.access_mode.write)

            def k(it: Any) -> None:
                g, sg = it.get_group(), it.get_sub_group()
                v = rx[it.get_global_id(0), it.get_global_id(1)]
                i = it.get_global_linear_id()
                o[i, 0] = sycl.reduce_over_group(g, v, sycl.plus())
                o[i, 1] = sycl.reduce_over_group(g, v, sycl.minimum())
                o[i, 2] = sycl.reduce_over_group(g, v, sycl.maximum())
                o[i, 3] = sycl.group_broadcast(g, v, 23)
                o[i, 4] = sycl.reduce_over_group(sg, v, sycl.plus())
                o[i, 5] = sycl.group_broadcast(sg, v, 1)
                o[i, 6] = sycl.any_of_group(sg, v > 88) + 2 * sycl.all_of_group(g, v < 90)
                o[i, 7] = sg.get_local_id() + 1000 * sg.get_local_range()[0] \
                    + 100000 * sg.get_group_id()

            h.parallel_for(sycl.nd_range(sycl.range(*x.shape), sycl.range(*local)), k)

        kq.submit(cg).wait()
    for gi in range(groups):
        block = x[gi * local[0]:(gi + 1) * local[0]].astype(np.float64).ravel()
        rows = out[gi * block.size:(gi + 1) * block.size]
        np.testing.assert_array_equal(rows[:, :4], np.tile(
            [block.sum(), block.min(), block.max(), block[23]], (block.size, 1)))
        code = rows[:, 7].astype(np.int64)
        lid, sgid = code % 1000, code // 100000
        for s in np.unique(sgid):
            m = np.flatnonzero(sgid == s)
            np.testing.assert_array_equal(rows[m, 4], block[m].sum())
            np.testing.assert_array_equal(rows[m, 5], block[m][lid[m] == 1][0])
            np.testing.assert_array_equal(rows[m, 6], int(np.any(block[m] > 88)) + 2)
    ptx = _ptx(ptx_images)
    for instr in ("shfl.sync.down.b32", "shfl.sync.idx.b32", "vote.sync.any.pred",
                  "bar.red.and.pred", "bar.sync", "st.shared", "ld.shared", "%ntid.y"):
        assert instr in ptx, instr
    assert ".shared .align 8 .b8 __pysycl_wg_scratch[264];" in ptx
    assert not _FULL_MASK.search(ptx)  # masks name the lanes that exist
    # 7 shfl.down trees of 5 levels: 2 per work-group reduction (each warp, then warp 0),
    # 1 for the sub-group's; 64-bit values travel as two 32-bit shuffles.
    halves = np.dtype(dtype).itemsize // 4
    assert len(re.findall(r"shfl\.sync\.down\.b32", ptx)) == 7 * 5 * halves


def test_barriers_lower_to_bar_sync_and_bar_warp_sync(kq: sycl.queue, ptx_images: list) -> None:
    n, wg = 96, 48
    out = np.zeros(n, np.int32)
    with sycl.buffer(out) as bo:
        def cg(h: sycl.handler) -> None:
            o = bo.get_access(h, sycl.access_mode.write)
            tmp = sycl.local_accessor(np.int32, sycl.range(wg), h)

            def k(it: Any) -> None:
                li = it.get_local_id(0)
                tmp[li] = li * 3
                it.barrier(sycl.access.fence_space.local_space)
                v = tmp[wg - 1 - li]
                sycl.group_barrier(it.get_sub_group())
                it.barrier()
                o[it.get_global_id(0)] = v

            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

        kq.submit(cg).wait()
    np.testing.assert_array_equal(out, np.tile((wg - 1 - np.arange(wg)) * 3, n // wg))
    ptx = _ptx(ptx_images)
    assert len(re.findall(r"\bbar\.sync\s+0;", ptx)) == 2
    assert re.search(r"\bbar\.warp\.sync\s+%r\d+;", ptx)  # the mask of existing lanes
    assert "membar" not in ptx and "fence." not in ptx  # bar.sync orders memory itself


# ------------------------------------------------------------ the CTA simulator
def _fn(name: str, ret: str, params: tuple[str, ...]) -> Any:
    gen = lookup(name)
    assert gen is not None, name
    return parse(gen(Decl(name, ret, params)).body)


_ELEM = {"i": ("i32", np.int32), "j": ("i32", np.uint32), "l": ("i64", np.int64),
         "m": ("i64", np.uint64), "f": ("float", np.float32), "d": ("double", np.float64)}
_OPS: dict[str, Callable[[np.ndarray], Any]] = {
    "add": lambda a: np.add.reduce(a, dtype=a.dtype), "min": np.min, "max": np.max}


def _sim_in(code: str, v: Any) -> Any:
    """A numpy value as the simulator holds it (ints unsigned in their width, floats float)."""
    if code in "fd":
        return float(v)
    return int(np.asarray(v).view(np.uint32 if code in "ij" else np.uint64))


def _sim_out(code: str, r: Any) -> Any:
    dt = _ELEM[code][1]
    return dt(r) if code in "fd" else np.array(r, dtype=np.uint64).astype(dt)


shapes = st.tuples(st.integers(1, 40), st.integers(1, 8), st.integers(1, 4)).filter(
    lambda s: s[0] * s[1] * s[2] <= 1024)


@settings(max_examples=30, deadline=None)
@given(shape=shapes, code=st.sampled_from("ijlmfd"), op=st.sampled_from(["add", "min", "max"]),
       seed=st.integers(0, 2**32 - 1), src=st.integers(0, 1023))
@pytest.mark.slow
def test_simulated_collectives_match_numpy(shape: tuple[int, int, int], code: str, op: str,
                                           seed: int, src: int) -> None:
    nx, ny, nz = shape
    wg = nx * ny * nz
    ty, dt = _ELEM[code]
    rng = np.random.default_rng(seed)
    x = (rng.integers(-50, 50, wg) if code in "ilfd" else rng.integers(0, 2**31, wg)).astype(dt)
    src %= wg
    sx, sy, sz = src % nx, src // nx % ny, src // (nx * ny)
    ndim = 3 if nz > 1 else 2 if ny > 1 else 1
    vals = [_sim_in(code, v) for v in x]
    program = [
        (_fn(f"_Z20sub_group_reduce_{op}{code}", ty, (ty,)), lambda lin: [vals[lin]]),
        (_fn(f"_Z21work_group_reduce_{op}{code}", ty, (ty,)), lambda lin: [vals[lin]]),
        (_fn(f"_Z20work_group_broadcast{code}{'m' * ndim}", ty, (ty,) + ("i64",) * ndim),
         lambda lin: [vals[lin], sx, sy, sz][:1 + ndim]),
        (_fn(f"_Z21work_group_reduce_{op}{code}", ty, (ty,)), lambda lin: [vals[lin]]),
        (_fn(f"_Z19sub_group_broadcast{code}j", ty, (ty, "i32")), lambda lin: [vals[lin], 0]),
        (_fn("_Z13sub_group_anyi", "i32", ("i32",)), lambda lin: [int(x[lin] == x.max())]),
        (_fn("_Z14work_group_alli", "i32", ("i32",)), lambda lin: [int(lin != src)]),
        (_fn("_Z17sub_group_barrierj", "void", ("i32",)), lambda lin: [3]),
        (_fn("_Z7barrierj", "void", ("i32",)), lambda lin: [1]),
    ]
    sg_red, wg_red, bcast, wg_red2, sg_bcast, sg_any, wg_all, _, _ = run_cta(program, shape)
    total = _OPS[op](x)
    for lin in range(wg):
        w0 = lin - lin % WARP
        warp = x[w0:min(w0 + WARP, wg)]
        assert _sim_out(code, sg_red[lin]) == _OPS[op](warp)
        assert _sim_out(code, wg_red[lin]) == _sim_out(code, wg_red2[lin]) == total
        assert _sim_out(code, bcast[lin]) == x[src]
        assert _sim_out(code, sg_bcast[lin]) == x[w0]
        assert sg_any[lin] == int(bool(np.any(warp == x.max())))
        assert wg_all[lin] == 0


@settings(max_examples=30, deadline=None)
@given(shape=shapes)
def test_simulated_sub_group_queries(shape: tuple[int, int, int]) -> None:
    wg = shape[0] * shape[1] * shape[2]
    names = ["_Z22get_sub_group_local_idv", "_Z16get_sub_group_idv", "_Z18get_sub_group_sizev",
             "_Z22get_max_sub_group_sizev", "_Z18get_num_sub_groupsv",
             "_Z27get_enqueued_num_sub_groupsv"]
    lid, sgid, size, most, num, enq = run_cta(
        [(_fn(n, "i32", ()), lambda lin: []) for n in names], shape)
    lin = np.arange(wg)
    np.testing.assert_array_equal(lid, lin % WARP)
    np.testing.assert_array_equal(sgid, lin // WARP)
    np.testing.assert_array_equal(size, np.minimum(WARP, wg - lin // WARP * WARP))
    np.testing.assert_array_equal(most, [min(WARP, wg)] * wg)
    np.testing.assert_array_equal(num, [-(-wg // WARP)] * wg)
    assert enq == num


def _body(name: str, ret: str, params: tuple[str, ...]) -> str:
    gen = lookup(name)
    assert gen is not None
    return gen(Decl(name, ret, params)).body


def test_the_simulator_rejects_a_full_mask_on_a_partial_warp() -> None:
    body = _body("_Z20sub_group_reduce_addi", "i32", ("i32",))
    wrong = re.sub(r"(shfl\.sync\.\w+\.i32\(i32 )%[\w.]+", r"\1-1", body)
    assert wrong != body
    assert run_cta([(parse(body), lambda lin: [1])], (40, 1, 1))[0] == [32] * 32 + [8] * 8
    run_cta([(parse(wrong), lambda lin: [1])], (64, 1, 1))  # fine on full warps
    with pytest.raises(SimError, match="mask"):
        run_cta([(parse(wrong), lambda lin: [1])], (40, 1, 1))


def test_the_simulator_finds_the_race_without_the_broadcasts_first_barrier() -> None:
    body = _body("_Z20work_group_broadcastim", "i32", ("i32", "i64"))
    barrier = "  call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)\n"
    wrong = body.replace(barrier, "", 1)
    assert wrong != body
    red = parse(_body("_Z21work_group_reduce_addi", "i32", ("i32",)))
    run_cta([(red, lambda lin: [lin]), (parse(body), lambda lin: [lin, 5])], (64, 1, 1))
    with pytest.raises(SimError, match="race"):
        run_cta([(red, lambda lin: [lin]), (parse(wrong), lambda lin: [lin, 5])], (64, 1, 1))


# ------------------------------------------------------------ specialization constants
SC_INT = sycl.specialization_id(np.int32, -3)
SC_F32 = sycl.specialization_id(np.float32, 0.5)
SC_F64 = sycl.specialization_id(np.float64, 0.1)
SC_F16 = sycl.specialization_id(np.float16, 1.5)
SC_U8 = sycl.specialization_id(np.uint8, 200)
SC_I64 = sycl.specialization_id(np.int64, -(2**40))
SC_FLAG = sycl.specialization_id(bool, True)


def _spec_kernel(q: sycl.queue, n: int) -> np.ndarray:
    out = np.zeros(n, np.float64)
    with sycl.buffer(out) as bo:
        def cg(h: sycl.handler) -> None:
            o = bo.get_access(h, sycl.access_mode.write)

            def k(i: Any, kh: Any) -> None:
                x = kh.get_specialization_constant(SC_INT) * i[0] \
                    + kh.get_specialization_constant(SC_F32) \
                    + kh.get_specialization_constant(SC_F64) \
                    + kh.get_specialization_constant(SC_F16) \
                    + kh.get_specialization_constant(SC_U8) \
                    + kh.get_specialization_constant(SC_I64) * 1e-12
                if kh.get_specialization_constant(SC_FLAG):
                    x += 1000
                o[i] = x

            h.parallel_for(sycl.range(n), k)

        q.submit(cg).wait()
    return out


def _sc_globals(ptx: str) -> dict[int, tuple[str, int]]:
    return {int(m[1]): (m[0], int(m[2])) for m in re.findall(
        r"\.const \.align \d+ \.(u\d+) __pysycl_sc_(\d+) = (-?\d+);", ptx)}


def test_spec_constants_are_patchable_const_globals(kq: sycl.queue, ptx_images: list) -> None:
    if not kq.get_device().has(sycl.aspect.fp16):
        pytest.skip("the kernel reads a float16 constant; the device has no fp16")
    n = 8
    want = (np.arange(n) * -3 + 0.5 + 0.1 + 1.5 + 200 - 2**40 * 1e-12 + 1000)
    np.testing.assert_allclose(_spec_kernel(kq, n), want)
    ptx = _ptx(ptx_images)
    # SpecIds in capture order; each global the default's bit pattern, signed as LLVM prints.
    f32 = int(np.float32(0.5).view(np.int32))
    f64 = int(np.float64(0.1).view(np.int64))
    f16 = int(np.float16(1.5).view(np.int16))
    assert _sc_globals(ptx) == {0: ("u32", -3), 1: ("u32", f32), 2: ("u64", f64),
                                3: ("u16", f16), 4: ("u8", -56), 5: ("u64", -(2**40)),
                                6: ("u8", 1)}
    # not folded: each is loaded (a range kernel's body may appear more than once: its
    # blocks of consecutive items, its plain loop)
    loaded = re.findall(r"ld\.const\.\w+\s+%\w+, \[__pysycl_sc_(\d)\];", ptx)
    assert sorted(set(loaded)) == list("0123456")
    new = specialize_ptx(ptx.encode(), [(0, np.int32(7)), (2, np.float64(-2.5)),
                                        (3, np.float16(-0.25)), (4, np.uint8(255)),
                                        (5, np.int64(2**62)), (6, np.bool_(False)),
                                        (9, np.int32(1))])  # 9: not in the image
    assert _sc_globals(new.decode()) == {
        0: ("u32", 7), 1: ("u32", f32), 2: ("u64", int(np.float64(-2.5).view(np.int64))),
        3: ("u16", int(np.float16(-0.25).view(np.int16))), 4: ("u8", -1), 5: ("u64", 2**62),
        6: ("u8", 0)}
    assert new.replace(b"__pysycl_sc_", b"") != ptx.encode().replace(b"__pysycl_sc_", b"")
    ptxas_check(new)
    assert specialize_ptx(ptx.encode(), []) == ptx.encode()
    with pytest.raises(sycl.exception) as e:
        specialize_ptx(ptx.encode(), [(1, np.float64(1.0))])  # a double for a float
    assert e.value.code() == errc.build


def test_a_spec_constant_read_that_is_not_literal_is_refused() -> None:
    ir = ("declare i32 @_Z20__spirv_SpecConstantii(i32, i32)\n"
          "define void @k(i32 %n) {\n"
          "  %v = tail call i32 @_Z20__spirv_SpecConstantii(i32 %n, i32 4)\n  ret void\n}\n")
    with pytest.raises(NotImplementedError, match="specialization constant"):
        lower_spec_constants(ir)
    ok, needs = lower_spec_constants(ir.replace("i32 %n, i32 4", "i32 2, i32 4"))
    assert "@_Z20__spirv_SpecConstant" not in ok
    assert "%v = load i32, ptr addrspace(4) @__pysycl_sc_2, align 4" in ok
    assert needs == {"@__pysycl_sc_2 = internal addrspace(4) externally_initialized "
                     "constant i32 4, align 4"}


# ------------------------------------------------------------ atomics
def _atomic_ptx(q: sycl.queue, images: list, dtype: type, order: str, scope: str) -> str:
    x = np.zeros(1, dtype)
    with sycl.buffer(x) as bx:
        def cg(h: sycl.handler) -> None:
            a = bx.get_access(h, sycl.access_mode.read_write)
            o, s = getattr(sycl.memory_order, order), getattr(sycl.memory_scope, scope)
            h.parallel_for(sycl.range(64), lambda i: sycl.atomic_ref(a, 0, o, s).fetch_add(1))

        q.submit(cg).wait()
    assert x[0] == 64
    return _ptx(images)


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64, np.uint64])
def test_integer_fetch_add_is_a_native_atom(kq: sycl.queue, ptx_images: list, dtype: type) -> None:
    ptx = _atomic_ptx(kq, ptx_images, dtype, "relaxed", "device")
    bits = np.dtype(dtype).itemsize * 8
    assert re.search(rf"\batom\.global\.add\.u{bits}\b", ptx)
    assert "atom.global.cas" not in ptx


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_float_fetch_add_is_a_native_atom(kq: sycl.queue, ptx_images: list, dtype: type) -> None:
    # SPIR-V gets a compare-exchange loop (no SPV_EXT_shader_atomic_float_add); PTX
    # has atom.add.f32/.f64, and the lowering uses it when compiling for PTX.
    ptx = _atomic_ptx(kq, ptx_images, dtype, "relaxed", "work_group")
    bits = np.dtype(dtype).itemsize * 8
    assert re.search(rf"\batom\.global\.add\.f{bits}\b", ptx)
    assert ".cas." not in ptx


@pytest.mark.parametrize(("order", "scope", "before", "after"), [
    ("acq_rel", "device", "fence.acq_rel.gpu", "fence.acq_rel.gpu"),
    ("seq_cst", "work_group", "fence.sc.cta", "fence.sc.cta"),
    ("release", "system", "fence.acq_rel.sys", None),
    ("acquire", "device", None, "fence.acq_rel.gpu"),
    ("relaxed", "device", None, None),
])
def test_ordered_fetch_add_keeps_its_ordering_with_fences(
        kq: sycl.queue, ptx_images: list, order: str, scope: str, before: str | None,
        after: str | None) -> None:
    # LLVM 22's NVPTX drops atomicrmw orderings (llvm/llvm-project#176015 fixes it
    # after 22); retarget turns an ordered RMW into fence + relaxed atom + fence.
    ptx = _atomic_ptx(kq, ptx_images, np.int32, order, scope)
    # (a system-scope atom is inline PTX: comments around it, its operand moved to a register)
    lines = [ln.strip() for ln in ptx.splitlines()]
    lines = [ln for ln in lines if not ln.startswith(("//", "mov."))]
    # the last atom: one of a loop running an item at a time (a block of consecutive items
    # runs its items' atoms back to back: one's fence after is the next one's before)
    at = max(i for i, ln in enumerate(lines) if ln.startswith("atom.") and ".add." in ln)
    assert (lines[at - 1].rstrip(";") == before) if before else not lines[at - 1].startswith("fence")
    assert (lines[at + 1].rstrip(";") == after) if after else not lines[at + 1].startswith("fence")


# ------------------------------------------------- shuffles and scans (§4.17)
def test_shuffles_and_scans_run_and_lower_to_shfl_idx(kq: sycl.queue, ptx_images: list) -> None:
    n, wg = 120, 60  # a full warp and a partial one of 28 on a GPU
    x = np.arange(n, dtype=np.int32) % 7
    out = np.zeros((n, 4), np.int32)
    with sycl.buffer(x) as bx, sycl.buffer(out) as bo:
        def cg(h: sycl.handler) -> None:
            rx = bx.get_access(h, sycl.access_mode.read)
            o = bo.get_access(h, sycl.access_mode.write)

            def k(it: Any) -> None:
                sg, g = it.get_sub_group(), it.get_group()
                i = it.get_global_id(0)
                v = rx[i]
                o[i, 0] = sycl.shift_group_left(sg, v, 2)
                o[i, 1] = sycl.inclusive_scan_over_group(sg, v, sycl.multiplies())
                o[i, 2] = sycl.exclusive_scan_over_group(g, v, sycl.plus())
                o[i, 3] = sg.get_local_linear_range()

            h.parallel_for(sycl.nd_range(sycl.range(n), sycl.range(wg)), k)

        kq.submit(cg).wait()
    want_excl = np.concatenate([np.cumsum(b) - b for b in x.reshape(-1, wg)])
    np.testing.assert_array_equal(out[:, 2], want_excl)
    ptx = _ptx(ptx_images)
    assert "shfl.sync.idx.b32" in ptx and "bar.sync" in ptx
    assert not _FULL_MASK.search(ptx)


@settings(max_examples=30, deadline=None)
@given(shape=shapes, code=st.sampled_from("ijlmfd"), seed=st.integers(0, 2**32 - 1))
def test_simulated_shuffle_matches_numpy(shape: tuple[int, int, int], code: str,
                                         seed: int) -> None:
    wg = shape[0] * shape[1] * shape[2]
    ty, dt = _ELEM[code]
    rng = np.random.default_rng(seed)
    x = rng.integers(-50, 50, wg).astype(dt) if code in "ilfd" else \
        rng.integers(0, 2**31, wg).astype(dt)
    vals = [_sim_in(code, v) for v in x]
    sizes = [min(WARP, wg - (lin - lin % WARP)) for lin in range(wg)]
    src = [int(s) for s in rng.integers(0, 2**31, wg)]  # a lane of the caller's own warp
    src = [s % sizes[lin] for lin, s in enumerate(src)]
    program = [(_fn(f"_Z23intel_sub_group_shuffle{code}j", ty, (ty, "i32")),
                lambda lin: [vals[lin], src[lin]])]
    (got,) = run_cta(program, shape)
    for lin in range(wg):
        w0 = lin - lin % WARP
        assert _sim_out(code, got[lin]) == x[w0 + src[lin]]
