"""Generates the notebooks of this folder from the cells below (run it after editing them).

    .venv/bin/python examples/notebooks/make_notebooks.py

The notebooks are committed without outputs; the test suite
(``tests/test_notebooks.py``) executes every one of them top to bottom in a
real Jupyter kernel and fails on any error.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

TOUR = [
    ("md", """\
# A tour of pysycl in Jupyter

SYCL 2020 for Python: kernels are plain Python lambdas or nested functions, compiled
to SPIR-V and run through OpenCL. Nothing beyond `import pysycl as sycl` is needed —
no cell magic, no decorators. This notebook covers device discovery, a lambda kernel,
an `nd_range` kernel with local memory, kernel bundles, a property test of `nd_range`
semantics with hypothesis, and timing with event profiling."""),
    ("md", "## Devices\n\nEvery platform, device and queue displays as a table in a notebook."),
    ("code", """\
import numpy as np
from IPython.display import display

import pysycl as sycl

for p in sycl.platform.get_platforms():
    display(p)"""),
    ("code", """\
q = sycl.queue()          # default_selector_v: a device that can run Python kernels
dev = q.get_device()
dev"""),
    ("code", """\
print(dev.get_info(sycl.info.device.name), "| fp64:", dev.has(sycl.aspect.fp64),
      "| max work-group:", dev.get_info(sycl.info.device.max_work_group_size))
q"""),
    ("md", """\
## A lambda kernel

Buffers wrap numpy arrays; leaving the `with` block waits for the kernel and writes
the result back into `c`. The kernel is compiled the first time it runs, then cached
in memory and on disk — a cell has no source file, so the cache keys on the code
object, never on source text."""),
    ("code", """\
n = 1 << 16
a = np.arange(n, dtype=np.float32)
b = np.full(n, 0.5, dtype=np.float32)
c = np.empty_like(a)
with sycl.buffer(a) as A, sycl.buffer(b) as B, sycl.buffer(c) as C:
    def cg(h):
        ra = A.get_access(h, sycl.access_mode.read)
        rb = B.get_access(h, sycl.access_mode.read)
        wc = C.get_access(h, sycl.access_mode.write)
        h.parallel_for(sycl.range(n), lambda i: wc.__setitem__(i, 2 * ra[i] + rb[i]))
    ev = q.submit(cg)
assert np.array_equal(c, 2 * a + b)
ev"""),
    ("md", """\
## nd_range with local memory

Each work-group of 64 loads its slice into local memory, then halves it in a tree.
Every work-item reaches every barrier (the loop's trip count is the same for all)."""),
    ("code", """\
WG = 64
x = np.random.default_rng(0).random(WG * 100, dtype=np.float32)
partial = np.empty(x.size // WG, dtype=np.float32)
with sycl.buffer(x) as X, sycl.buffer(partial) as P:
    def cg(h):
        rx = X.get_access(h, sycl.access_mode.read)
        out = P.get_access(h, sycl.access_mode.write)
        tmp = sycl.local_accessor(np.float32, sycl.range(WG), h)

        def wg_sum(it):
            lid = it.get_local_id(0)
            tmp[lid] = rx[it.get_global_id(0)]
            sycl.group_barrier(it.get_group())
            s = WG // 2
            while s > 0:
                if lid < s:
                    tmp[lid] += tmp[lid + s]
                it.barrier(sycl.access.fence_space.local_space)
                s //= 2
            if it.get_group().leader():
                out[it.get_group(0)] = tmp[0]

        h.parallel_for(sycl.nd_range(sycl.range(x.size), sycl.range(WG)), wg_sum)
    q.submit(cg)
np.testing.assert_allclose(partial, x.reshape(-1, WG).sum(axis=1), rtol=1e-5)
partial[:5]"""),
    ("md", """\
## Kernel bundles

Declare a kernel (its captures become the factory's parameters), get an input bundle
(SPIR-V), build it, and run from it with `use_kernel_bundle`: nothing compiles at
submit. A bundle displays its state, devices and device images."""),
    ("code", """\
def saxpy(x, y, alpha):
    def k(i):
        y[i] = alpha * x[i] + y[i]
    return k

acc_t = sycl.ext.accessor_type
SAXPY = sycl.ext.declare_kernel(
    saxpy, kernel_name="notebook.saxpy", index_space=sycl.range(1),
    captures={"x": acc_t(np.float32, 1, sycl.access_mode.read),
              "y": acc_t(np.float32, 1, sycl.access_mode.read_write),
              "alpha": np.float32})
kb_in = sycl.get_kernel_bundle(q.get_context(), [dev], [SAXPY], state=sycl.bundle_state.input)
kb_in"""),
    ("code", """\
kb = sycl.build(kb_in)       # or sycl.link(sycl.compile(kb_in))
x = np.arange(1000, dtype=np.float32)
y = np.ones_like(x)
with sycl.buffer(x) as X, sycl.buffer(y) as Y:
    def cg(h):
        h.use_kernel_bundle(kb)
        h.parallel_for(sycl.range(x.size), saxpy(X.get_access(h, sycl.access_mode.read),
                                                 Y.get_access(h, sycl.access_mode.read_write),
                                                 np.float32(3)))
    q.submit(cg)
assert np.array_equal(y, 3 * x + 1)
kb"""),
    ("md", """\
## A property test of nd_range semantics

`sycl.nd_item(global_id, nd_range)` is the pure-Python model of the work-item queries.
Hypothesis draws 2-D launches; the device writes what each work-item sees, and
every row must equal the model's answer."""),
    ("code", """\
import hypothesis.strategies as st
from hypothesis import given, settings


def device_table(glob, loc):
    out = np.zeros((glob[0] * glob[1], 5), dtype=np.int64)
    with sycl.buffer(out) as OUT:
        def cg(h):
            o = OUT.get_access(h, sycl.access_mode.write)
            def k(it):
                r = it.get_global_linear_id()
                o[r, 0] = it.get_local_linear_id()
                o[r, 1] = it.get_group_linear_id()
                o[r, 2] = it.get_group(0)
                o[r, 3] = it.get_group(1)
                o[r, 4] = it.get_local_id(1)
            h.parallel_for(sycl.nd_range(sycl.range(*glob), sycl.range(*loc)), k)
        q.submit(cg)
    return out

def model_table(glob, loc):
    nd = sycl.nd_range(sycl.range(*glob), sycl.range(*loc))
    rows = []
    for i in range(glob[0]):
        for j in range(glob[1]):
            it = sycl.nd_item((i, j), nd)
            rows.append([it.get_local_linear_id(), it.get_group_linear_id(),
                         it.get_group(0), it.get_group(1), it.get_local_id(1)])
    return np.array(rows, dtype=np.int64)

dims = st.tuples(st.integers(1, 4), st.integers(1, 8))   # (groups, local size) per dimension

@settings(max_examples=15, deadline=None, database=None)   # no .hypothesis folder here
@given(dims, dims)
def test_nd_range_queries_match_the_model(d0, d1):
    glob, loc = (d0[0] * d0[1], d1[0] * d1[1]), (d0[1], d1[1])
    np.testing.assert_array_equal(device_table(glob, loc), model_table(glob, loc))

test_nd_range_queries_match_the_model()
print("nd_range queries match the model")"""),
    ("md", """\
## Timing with event profiling

A queue with `enable_profiling` gives each command's device start and end times
(nanoseconds). Bandwidth of a vector add (two reads, one write) against size:"""),
    ("code", """\
import matplotlib.pyplot as plt

pq = sycl.queue(dev, properties=[sycl.property.queue.enable_profiling()])
P = sycl.info.event_profiling

def vadd_gbps(n, repeats=3):
    # device-time bandwidth of c = a + b over n float32 (two reads, one write)
    a = np.ones(n, np.float32)
    b = np.ones(n, np.float32)
    c = np.empty(n, np.float32)
    with sycl.buffer(a) as A, sycl.buffer(b) as B, sycl.buffer(c) as C:
        def cg(h):
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write, properties=[sycl.no_init])
            h.parallel_for(sycl.range(n), lambda i: wc.__setitem__(i, ra[i] + rb[i]))
        pq.submit(cg).wait()                     # first run: uploads a and b
        times = []
        for _ in range(repeats):                 # data stays on the device
            ev = pq.submit(cg)
            ev.wait()
            times.append(ev.get_profiling_info(P.command_end) - ev.get_profiling_info(P.command_start))
    assert np.array_equal(c, a + b)
    return 3 * 4 * n / min(times), ev           # bytes per nanosecond = GB/s

sizes = [1 << k for k in range(12, 23, 2)]
gbps = []
for n in sizes:
    g, ev = vadd_gbps(n)
    gbps.append(g)

fig, ax = plt.subplots(figsize=(6, 3.5))
ax.semilogx(sizes, gbps, "o-", base=2)
ax.set_xlabel("elements (float32)")
ax.set_ylabel("GB/s (device time)")
ax.set_title("vector add: " + dev.get_info(sycl.info.device.name))
ax.grid(True, alpha=0.3)
plt.show()
ev"""),
    ("md", """\
## Compile errors point at the cell

A kernel that uses something a device cannot run fails before anything runs, with a
`sycl.kernel_compile_error` (also a `TypeError`) naming the cell's file and line."""),
    ("code", """\
out = np.zeros(4, np.float32)
with sycl.buffer(out) as OUT:
    def cg(h):
        o = OUT.get_access(h, sycl.access_mode.write)
        def bad(i):
            print(i)            # not supported inside a kernel
            o[i] = 1
        h.parallel_for(sycl.range(4), bad)
    try:
        q.submit(cg)
    except sycl.kernel_compile_error as e:
        err = e
print(err)
assert f"{cg.__code__.co_filename}:6" in str(err)   # this cell, the print's line
assert (out == 0).all()        # nothing ran"""),
]


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    nb = new_notebook(cells=[new_markdown_cell(src) if kind == "md" else new_code_cell(src)
                             for kind, src in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def main() -> None:
    out = HERE / "pysycl_tour.ipynb"
    nb = build(TOUR)
    nbformat.validate(nb)
    # Stable cell ids, so regenerating an unchanged notebook changes no bytes.
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"
    nbformat.write(nb, out)
    print("wrote", out)


if __name__ == "__main__":
    main()
