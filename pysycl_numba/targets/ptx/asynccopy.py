"""``cp.async`` built-ins of the PTX target (sm_80+): ``async_work_group_copy``'s copies.

The lowering of ``async_work_group_copy`` (:mod:`pysycl_numba.overloads.async_copy_ptx`)
calls these by name; each is an ``internal alwaysinline`` definition over NVVM intrinsics:

* ``CP_ASYNC[n](shared_address, global_address)``: ``cp.async.{ca,cg}.shared.global`` of
  ``n`` (4, 8, 16) bytes, addresses as ``i64`` (aligned to ``n``; 16 bytes bypass L1, ``cg``);
* ``COMMIT()``: ``cp.async.commit_group``; ``WAIT_GROUP[n]()``: ``cp.async.wait_group n``
  (all but this thread's ``n`` newest groups complete and visible to it; a barrier then
  makes them the group's), ``n`` 0 to :data:`MAX_PENDING`;
* ``WAIT_PENDING(n)``: the same for a run-time ``n`` (more than :data:`MAX_PENDING`: no
  wait): a switch over ``WAIT_GROUP``, which LLVM folds where it knows ``n`` on a path.
  In a kernel with work-group matrices (``wgmma``) the retarget names ``WAIT_PREDICATED``
  instead: predicated ``cp.async.wait_group`` instructions in one straight line. A
  switch over a count LLVM knows the range of gets an unreachable default, lowered as a
  branch to the kernel's exit, and on every such path ptxas waits for the warpgroup's
  products -- each K step of a GEMM then waited for all its mads (0.47x cuBLAS instead
  of 0.7x). :func:`constant_waits` turns a call with a constant ``n`` (after LLVM's
  optimisation) into ``WAIT_GROUP[n]``: one instruction.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define

CP_ASYNC = {4: "_Z17__pysycl_cpasync4mm", 8: "_Z17__pysycl_cpasync8mm",
            16: "_Z18__pysycl_cpasync16mm"}
COMMIT = "_Z23__pysycl_cpasync_commitv"
#: the most groups a wait leaves pending (``cp.async.wait_group`` takes an immediate)
MAX_PENDING = 7
WAIT_GROUP = {n: f"_Z23__pysycl_cpasync_wait{n}v" for n in range(MAX_PENDING + 1)}
WAIT_PENDING = "_Z29__pysycl_cpasync_wait_pendingj"
WAIT_PREDICATED = "_Z32__pysycl_cpasync_wait_predicatedj"


def _copy(decl: Decl) -> Definition:
    n = next(k for k, v in CP_ASYNC.items() if v == decl.name)
    cache = "cg" if n == 16 else "ca"
    intr = f"llvm.nvvm.cp.async.{cache}.shared.global.{n}"
    body = f"""define internal void @{decl.name}(i64 %d, i64 %s) alwaysinline {{
  %dp = inttoptr i64 %d to ptr addrspace(3)
  %sp = inttoptr i64 %s to ptr addrspace(1)
  call void @{intr}(ptr addrspace(3) %dp, ptr addrspace(1) %sp)
  ret void
}}"""
    return Definition(body, frozenset({f"declare void @{intr}(ptr addrspace(3), ptr addrspace(1))"}))


define(*CP_ASYNC.values())(_copy)


def _call(intrinsic: str) -> Callable[[Decl], Definition]:
    def gen(decl: Decl) -> Definition:
        body = f"""define internal void @{decl.name}() alwaysinline {{
  call void @{intrinsic}()
  ret void
}}"""
        return Definition(body, frozenset({f"declare void @{intrinsic}()"}))
    return gen


define(COMMIT)(_call("llvm.nvvm.cp.async.commit.group"))


def _wait_group(decl: Decl) -> Definition:
    n = next(k for k, v in WAIT_GROUP.items() if v == decl.name)
    intr = "llvm.nvvm.cp.async.wait.group"
    body = f"""define internal void @{decl.name}() alwaysinline {{
  call void @{intr}(i32 {n})
  ret void
}}"""
    return Definition(body, frozenset({f"declare void @{intr}(i32 immarg)"}))


define(*WAIT_GROUP.values())(_wait_group)


@define(WAIT_PENDING)
def _wait_pending(decl: Decl) -> Definition:
    cases = " ".join(f"i32 {n}, label %w{n}" for n in WAIT_GROUP)
    blocks = "\n".join(f"w{n}:\n  call void @llvm.nvvm.cp.async.wait.group(i32 {n})\n"
                       "  br label %done" for n in WAIT_GROUP)
    body = f"""define internal void @{decl.name}(i32 %n) alwaysinline {{
  switch i32 %n, label %done [ {cases} ]
{blocks}
done:
  ret void
}}"""
    return Definition(body, frozenset({"declare void @llvm.nvvm.cp.async.wait.group(i32 immarg)"}))


@define(WAIT_PREDICATED)
def _wait_predicated(decl: Decl) -> Definition:
    waits = "".join(f"setp.eq.u32 p, $0, {n};\\0A@p cp.async.wait_group {n};\\0A"
                    for n in range(MAX_PENDING + 1))
    body = f"""define internal void @{decl.name}(i32 %n) alwaysinline {{
  call void asm sideeffect "{{\\0A.reg .pred p;\\0A{waits}}}", "r,~{{memory}}"(i32 %n)
  ret void
}}"""
    return Definition(body, frozenset())


def predicated_waits(ir: str) -> str:
    """A kernel with work-group matrices: its run-time counted waits as ``WAIT_PREDICATED``."""
    return ir.replace(f"@{WAIT_PENDING}(", f"@{WAIT_PREDICATED}(")


def constant_waits(ir: str) -> str:
    """``WAIT_PENDING(i32 n)`` calls whose ``n`` LLVM made a constant: up to
    :data:`MAX_PENDING` as ``WAIT_GROUP[n]()`` (declared at the end of ``ir``), above it
    none (nothing to wait for)."""
    used: set[int] = set()

    def one(m: re.Match[str]) -> str:
        n = int(m.group(2))
        if n > MAX_PENDING:  # no copy to wait for
            return ""
        used.add(n)
        return f"{m.group(1)}call void @{WAIT_GROUP[n]}()"

    ir = re.sub(rf"^(\s*)call void @{WAIT_PENDING}\(i32 (\d+)\)[^\n]*$", one, ir, flags=re.M)
    extra = [d for d in (f"declare void @{WAIT_GROUP[n]}()" for n in sorted(used))
             if d not in ir]
    return "\n".join([ir, *extra]) if extra else ir
