"""``cp.async`` built-ins of the PTX target (sm_80+): ``async_work_group_copy``'s copies.

The lowering of ``async_work_group_copy`` (:mod:`pysycl_numba.overloads.async_copy_ptx`)
calls these by name; each is an ``internal alwaysinline`` definition over NVVM intrinsics:

* ``CP_ASYNC[n](shared_address, global_address)``: ``cp.async.{ca,cg}.shared.global`` of
  ``n`` (4, 8, 16) bytes, addresses as ``i64`` (aligned to ``n``; 16 bytes bypass L1, ``cg``);
* ``COMMIT()``: ``cp.async.commit_group``; ``WAIT_GROUP[n]()``: ``cp.async.wait_group n``
  (all but this thread's ``n`` newest groups complete and visible to it; a barrier then
  makes them the group's), ``n`` 0 to :data:`MAX_PENDING`.
"""

from __future__ import annotations

from collections.abc import Callable

from pysycl_numba.targets.ptx.builtins import Decl, Definition, define

CP_ASYNC = {4: "_Z17__pysycl_cpasync4mm", 8: "_Z17__pysycl_cpasync8mm",
            16: "_Z18__pysycl_cpasync16mm"}
COMMIT = "_Z23__pysycl_cpasync_commitv"
#: the most groups a wait leaves pending (``cp.async.wait_group`` takes an immediate)
MAX_PENDING = 7
WAIT_GROUP = {n: f"_Z23__pysycl_cpasync_wait{n}v" for n in range(MAX_PENDING + 1)}


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
