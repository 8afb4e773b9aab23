"""pysycl's warpgroup tensor-core built-ins for the PTX target (work-group joint_matrix, sm_90a).

The work-group joint_matrix lowering (``pysycl_numba/overloads/matrix_wgmma.py``) calls
these by name; they are inlined by the NVPTX pipeline, where the accumulator fragments
(private arrays read and written through pointers) become registers:

* ``WGMMA[(kind, n)](d, desc_a, desc_b, c)``: ``D = A*B + C`` of one warpgroup's 64 x n x K
  tile (K: 32 bytes of the element type) by ``wgmma.mma_async.sync.aligned.m64nNkK``, its
  operands in local memory named by the 64-bit matrix descriptors; the shared memory the
  work-items wrote is made visible to the tensor cores' (async) proxy first
  (``fence.proxy.async.shared::cta``), and the product is committed
  (``wgmma.commit_group``) but not waited for: consecutive mads overlap on the tensor cores.
* ``WAIT()``: ``wgmma.wait_group 0`` -- every product of the work-item's warpgroup done. The
  lowering calls it before an accumulator's elements are read or written by other
  instructions (load, store, fill, apply, copy), and :func:`wait_at_barriers` puts a wait
  before every work-group barrier of a kernel with ``WGMMA``: after a barrier the local
  memory a product read may be overwritten. That wait is ``wgmma.wait_group n`` with ``n``
  the kernel's ``ext_pysycl_mads_in_flight`` (0 unless given): the last ``n`` products of
  the warpgroup (a mad is one commit group) may still read their tiles after the barrier.
  :func:`inline_publish` leaves such a kernel no function to call (the driver's JIT would
  serialise its ``wgmma``).
* ``WG_ID()`` / ``WG_SIZE()``: the work-item's linear id in its work-group and the
  work-group's size (``tid``/``ntid``, x fastest: SYCL's linear order).

A kernel that calls ``WGMMA`` is emitted for ``sm_90a`` (:mod:`pysycl_numba.targets.ptx.emit`):
``wgmma`` exists on the architecture-specific target only.
"""

from __future__ import annotations

import re

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define
from pysycl_numba.targets.ptx.workitem import sreg_declares

#: (kind, n) -> the built-in's name; kinds as in :data:`SUFFIX`, n = 8, 16, ..., 256
WGMMA: dict[tuple[str, int], str] = {}
#: kind -> (wgmma's type suffix, K, whether the instruction takes the transpose immediates)
SUFFIX = {"f16": ("f32.f16.f16", 16, True), "bf16": ("f32.bf16.bf16", 16, True),
          "tf32": ("f32.tf32.tf32", 8, False)}
#: the text every kernel calling WGMMA contains (the emitter's sm_90a switch)
MARK = "__pysycl_wgmma_"
WG_ID = "_Z15__pysycl_wg_idv"
WG_SIZE = "_Z17__pysycl_wg_sizev"
WAIT = "_Z19__pysycl_wgmma_waitv"


def _wait_asm(pending: int) -> str:
    return (f'call void asm sideeffect "wgmma.wait_group.sync.aligned {pending};", '
            '"~{memory}"()')


_WAIT_ASM = _wait_asm(0)
_BARRIER_CALL = "call void @llvm.nvvm.barrier.cta.sync.aligned.all(i32 0)"
for _k in SUFFIX:
    for _n in range(8, 257, 8):
        _nm = f"__pysycl_wgmma_{_k}_n{_n}"
        WGMMA[(_k, _n)] = f"_Z{len(_nm)}{_nm}PvllS_"


def wait_at_barriers(ir: str, in_flight: int = 0) -> str:
    """A kernel with ``WGMMA`` (the retarget's caller tells): every work-group barrier waits
    for the warpgroup's products first, all but the last ``in_flight`` (the kernel's
    ``ext_pysycl_mads_in_flight``): the local memory they read may be overwritten once the
    barrier is passed."""
    return ir.replace(_BARRIER_CALL, f"{_wait_asm(in_flight)}\n  {_BARRIER_CALL}")


#: the definitions of the asserts' and bounds checks' out-of-line publishing functions
_PUBLISH_DEF = re.compile(r'^(define [^\n]*@"?pysycl\.(?:assert|bounds)\.publish"?\([^\n]*\)'
                          r"[^\n{#]*)#\d+(\s*\{)", re.M)


def inline_publish(ir: str) -> str:
    """The failure paths' publishing functions inlined (``alwaysinline`` for their
    ``noinline`` attributes): a kernel calling a function has its ``wgmma`` serialised by
    the driver's JIT linker ("C7509 ... serialized due to the presence of Extern calls":
    each mad waited for at once; 0.47x against 0.61x cuBLAS for the 8192^2 GEMM)."""
    return _PUBLISH_DEF.sub(lambda m: f"{m.group(1)}alwaysinline{m.group(2)}", ir)


@define(WAIT)
def _wait(decl: Decl) -> Definition:
    return Definition(f"""define internal void @{decl.name}() alwaysinline convergent {{
  {_WAIT_ASM}
  ret void
}}""")


def _linear(reg: str) -> str:
    return f"""  %{reg}x = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.x()
  %{reg}y = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.y()
  %{reg}z = call i32 @llvm.nvvm.read.ptx.sreg.{reg}.z()"""


@define(WG_ID)
def _wg_id(decl: Decl) -> Definition:
    body = f"""define internal i64 @{decl.name}() alwaysinline {{
{_linear("tid")}
{_linear("ntid")}
  %a = mul i32 %ntidy, %tidz
  %b = add i32 %a, %tidy
  %c = mul i32 %b, %ntidx
  %d = add i32 %c, %tidx
  %r = zext i32 %d to i64
  ret i64 %r
}}"""
    return Definition(body, sreg_declares("tid", "ntid"))


@define(WG_SIZE)
def _wg_size(decl: Decl) -> Definition:
    body = f"""define internal i64 @{decl.name}() alwaysinline {{
{_linear("ntid")}
  %a = mul i32 %ntidx, %ntidy
  %b = mul i32 %a, %ntidz
  %r = zext i32 %b to i64
  ret i64 %r
}}"""
    return Definition(body, sreg_declares("ntid"))


def _wgmma(decl: Decl, kind: str, n: int) -> Definition:
    suffix, k, trans = SUFFIX[kind]
    count = n // 2  # accumulators a work-item holds (64 x n over 128)
    ret = "{" + ", ".join(["float"] * count) + "}"
    outs = ",".join(f"${i}" for i in range(count))
    imm = "p, 1, 1, 0, 0" if trans else "p, 1, 1"
    text = ("fence.proxy.async.shared::cta;\\0Awgmma.fence.sync.aligned;\\0A"
            "{\\0A.reg .pred p;\\0A"
            f"setp.ne.b32 p, ${count + 2}, 0;\\0A"
            f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{suffix} {{{outs}}}, ${count}, "
            f"${count + 1}, {imm};\\0A}}\\0A"
            "wgmma.commit_group.sync.aligned;")
    cons = ",".join(["=f"] * count + ["l", "l", "r"] + [str(i) for i in range(count)]
                    + ["~{memory}"])
    lines = [f"define internal void @{decl.name}(ptr %d, i64 %da, i64 %db, ptr %c) "
             "alwaysinline convergent {"]
    for i in range(count):
        lines += [f"  %cp{i} = getelementptr inbounds float, ptr %c, i64 {i}",
                  f"  %c{i} = load float, ptr %cp{i}, align 4"]
    cargs = ", ".join(f"float %c{i}" for i in range(count))
    lines.append(f'  %r = call {ret} asm sideeffect "{text}", "{cons}"'
                 f"(i64 %da, i64 %db, i32 1, {cargs})")
    for i in range(count):
        lines += [f"  %d{i} = extractvalue {ret} %r, {i}",
                  f"  %dp{i} = getelementptr inbounds float, ptr %d, i64 {i}",
                  f"  store float %d{i}, ptr %dp{i}, align 4"]
    lines += ["  ret void", "}"]
    return Definition("\n".join(lines), frozenset())


for (_k, _n), _name in WGMMA.items():
    define(_name)(lambda decl, k=_k, n=_n: _wgmma(decl, k, n))
