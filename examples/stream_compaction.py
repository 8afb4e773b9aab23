"""Stream compaction with sub-group shuffles and scans: keep the elements that pass a test.

The scan-then-scatter compaction of GPU Gems 3, ch. 39 ("Parallel Prefix Sum (Scan)
with CUDA", Harris, Sengupta and Owens), as SYCL 2020 programs write it with group
algorithms and USM, translated to Python:

1. **count** -- each work-group counts its kept elements (``reduce_over_group``);
2. **offsets** -- one work-group scans the counts (``joint_exclusive_scan``): where
   each work-group's output starts;
3. **scatter** -- each work-item finds its rank: an inclusive scan inside its
   sub-group (``inclusive_scan_over_group``), the sub-group's total read from its last
   lane (``select_from_group``, a shuffle), the totals of the sub-groups before it
   from local memory, and the work-group's offset.

The result must equal numpy's ``x[x % 3 == 0]``, in order.

    python examples/stream_compaction.py [n]
"""

from __future__ import annotations

import sys

import numpy as np

import pysycl as sycl

WG = 256  # work-group size
MAX_SG = 64  # most sub-groups a work-group can have here (sub-groups of at least 4)


def compact(q: sycl.queue, x: np.ndarray) -> np.ndarray:
    n = x.size
    groups = -(-n // WG)
    data = sycl.malloc_device(n, q, dtype=np.int32)
    out = sycl.malloc_device(n, q, dtype=np.int32)
    counts = sycl.malloc_device(groups, q, dtype=np.int32)
    offsets = sycl.malloc_device(groups + 1, q, dtype=np.int32)
    q.memcpy(data, x, x.nbytes).wait()
    nd = sycl.nd_range(sycl.range(groups * WG), sycl.range(WG))

    def keep_of(it: sycl.nd_item) -> int:
        i = it.get_global_id(0)
        return 1 if i < n and data[i] % 3 == 0 else 0

    def count(it: sycl.nd_item) -> None:  # 1. kept elements per work-group
        total = sycl.reduce_over_group(it.get_group(), keep_of(it), sycl.plus())
        if it.get_local_id(0) == 0:
            counts[it.get_group(0)] = total

    def scan_counts(it: sycl.nd_item) -> None:  # 2. where each work-group writes
        g = it.get_group()
        sycl.joint_exclusive_scan(g, counts, 0, groups, offsets, 0, sycl.plus())
        total = sycl.joint_reduce(g, counts, 0, groups, sycl.plus())  # every work-item calls it
        if it.get_local_id(0) == 0:
            offsets[groups] = total

    q.parallel_for(nd, count)
    q.wait()
    q.parallel_for(sycl.nd_range(sycl.range(WG), sycl.range(WG)), scan_counts)
    q.wait()

    def scatter_cg(h: sycl.handler) -> None:  # 3. each kept element to its place
        sg_totals = sycl.local_accessor(np.int32, sycl.range(MAX_SG), h)

        def scatter(it: sycl.nd_item) -> None:
            sg = it.get_sub_group()
            keep = keep_of(it)
            incl = sycl.inclusive_scan_over_group(sg, keep, sycl.plus())
            last = sg.get_local_linear_range() - 1
            total = sycl.select_from_group(sg, incl, last)  # the shuffle: lane `last`'s sum
            sg_id = sg.get_group_linear_id()
            if sg.get_local_linear_id() == 0:
                sg_totals[sg_id] = total
            sycl.group_barrier(it.get_group())
            before = 0
            for j in range(sg_id):
                before += sg_totals[j]
            if keep:
                out[offsets[it.get_group(0)] + before + incl - 1] = data[it.get_global_id(0)]

        h.parallel_for(nd, scatter)

    q.submit(scatter_cg).wait()
    kept = np.zeros(1, np.int32)
    q.memcpy(kept, offsets + groups, 4).wait()
    result = np.empty(int(kept[0]), np.int32)
    if result.size:
        q.memcpy(result, out, result.nbytes).wait()
    for p in (data, out, counts, offsets):
        sycl.free(p, q)
    return result


def main(n: int = 100_000) -> None:
    q = sycl.queue(properties=[sycl.property.queue.in_order()])
    x = np.random.default_rng(7).integers(0, 1000, n).astype(np.int32)
    got = compact(q, x)
    want = x[x % 3 == 0]
    assert np.array_equal(got, want), (got[:10], want[:10])
    print(f"kept {got.size} of {n} elements (multiples of 3) on "
          f"{q.get_device().get_info(sycl.info.device.name)}: OK")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:2]))
