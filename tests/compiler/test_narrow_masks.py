"""A ring of local buffers indexed by a constant power of two (``t % 4``) on SPIR-V.

ScalarEvolution reads ``t % 4`` as a truncation to i2; the SPIR-V backend's loop strength
reduction kept an i2 induction variable, which its type legalization widened to i8 without
the wrap, so the SPIR-V indexed past the ring (Intel's CPU runtime segfaulted the process
at the kernel's first run). Kernels with such masks are emitted without LSR
(``pysycl_numba.targets.spirv.codegen.narrow_masks``). The pipeline runs in a child
process -- a regression must not kill the test run -- on every device that runs SPIR-V,
against numpy; so do rings in global memory, random index arithmetic among them.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import pysycl as sycl
from pysycl_numba.targets.spirv.codegen import narrow_masks

_PIPELINE = textwrap.dedent('''
    import sys
    import numpy as np
    import pysycl as sycl

    q = sycl.queue(sycl.device.get_devices()[int(sys.argv[1])])
    expr, stages = sys.argv[2], int(sys.argv[3])
    T = wg = 64
    steps = 24
    x = np.arange(T * (steps + stages), dtype=np.float32)
    p = sycl.malloc_device(x.size, q, dtype=np.float32)
    q.memcpy(p, x, x.nbytes).wait()
    out = sycl.malloc_device(wg, q, dtype=np.float32)
    src = f"""
    def make(p, out, loc):
        def k(it):
            lid = it.get_local_id(0)
            acc = np.float32(0)
            for s in range({stages} - 1):                  # the first steps' buffers
                loc[s * {T} + lid] = p[s * {T} + lid]
            for t in range({steps}):
                it.barrier()
                j = lid
                while j < {T}:                             # fill the buffer of t + stages - 1
                    loc[({expr.replace("t", f"(t + {stages} - 1)")}) * {T} + j] = \\\\
                        p[(t + {stages} - 1) * {T} + j]
                    j += {wg}
                it.barrier()
                j = lid
                while j < {T}:                             # use the buffer of step t
                    acc += loc[({expr}) * {T} + j]
                    j += {wg}
            out[lid] = acc
        return k
    """

    def cg(h):
        loc = sycl.local_accessor(np.float32, sycl.range(stages * T), h)
        ns = {"np": np}
        exec(src, ns)
        h.parallel_for(sycl.nd_range(sycl.range(wg), sycl.range(wg)), ns["make"](p, out, loc))

    q.submit(cg).wait()
    got = np.empty(wg, np.float32)
    q.memcpy(got, out, got.nbytes).wait()
    want = x[:steps * T].reshape(steps, T).sum(axis=0)
    assert np.array_equal(got, want), (got[:4], want[:4])
    print("ok")
''')


# Rings in global memory: a loop's step picks a slot of a ring by an index expression,
# fills it and reads it back, against Python. Either one expression as the slot, or
# ``random SEED COUNT``: random index arithmetic (+ - * // % & << >> of the loop counter,
# the work-item id and small constants) wrapped into the ring.
_GLOBAL_RINGS = textwrap.dedent('''
    import random
    import sys
    import numpy as np
    import pysycl as sycl

    q = sycl.queue(sycl.device.get_devices()[int(sys.argv[1])])
    steps, wg, NB, T = 24, 8, 16, 16
    RIGHT = {"%": [2, 3, 4, 8, 16, 5, 7, 32], "//": [2, 3, 4, 8, 16, 5, 7, 32],
             "&": [1, 3, 7, 12, 15, 31, 48, 6, 255], ">>": range(7), "<<": range(7)}

    def expr(rng, d=0):
        if d > 2 or rng.random() < 0.3:
            return rng.choice(["t", "i", str(rng.randint(1, 9))])
        op = rng.choice(["+", "*", "%", "&", ">>", "<<", "-", "//"])
        a, b = expr(rng, d + 1), expr(rng, d + 1)
        if op in RIGHT:
            b = str(rng.choice(list(RIGHT[op])))
        return f"({a} {op} {b})"

    if sys.argv[2] == "random":
        rng = random.Random(int(sys.argv[3]))
        exprs = [expr(rng) for _ in range(int(sys.argv[4]))]
        cases = [(e, f"(({e}) % {NB} + {NB}) % {NB}") for e in exprs]
    else:
        cases = [(sys.argv[2], sys.argv[2])]
    for e, slot in cases:
        src = f"""
    def make(out, cnt):
        def k(it):
            i = it.get_global_id(0)
            s = 0
            for t in range({steps}):
                j = 0
                while j < {T}:                   # fill the ring's slot of step t
                    out[(i * {NB} + ({slot})) * {T} + j] = t
                    j += 1
                j = 0
                while j < {T}:                   # and read it back
                    s += out[(i * {NB} + ({slot})) * {T} + j]
                    j += 1
                s += {e}
            cnt[i] = s
        return k
    """
        ns = {}
        exec(src, ns)
        out = sycl.malloc_device(wg * NB * T, q, dtype=np.int64)
        cnt = sycl.malloc_device(wg, q, dtype=np.int64)
        q.parallel_for(sycl.nd_range(sycl.range(wg), sycl.range(wg)), ns["make"](out, cnt)).wait()
        got = np.empty(wg, np.int64)
        q.memcpy(got, cnt, got.nbytes).wait()
        ring = T * steps * (steps - 1) // 2
        want = [ring + sum(int(eval(e, {"t": np.int64(t), "i": np.int64(i)}))  # int64's wrap
                           for t in range(steps)) for i in range(wg)]
        assert got.tolist() == want, (e, got[:3], want[:3])
        sycl.free(out, q)
        sycl.free(cnt, q)
    print("ok")
''')


def _spirv_devices() -> list[int]:
    return [i for i, d in enumerate(sycl.device.get_devices())
            if d.has(sycl.aspect.ext_pysycl_spirv)]


def _run_everywhere(script: str, *args: str, timeout: int = 300) -> None:
    """``script`` in a child process (a miscompile that crashes must not end the run) for
    each device that runs SPIR-V, the device's index its first argument."""
    devices = _spirv_devices()
    if not devices:
        pytest.skip("no device runs SPIR-V")
    for i in devices:
        r = subprocess.run([sys.executable, "-c", script, str(i), *args],
                           capture_output=True, text=True, timeout=timeout)
        assert r.returncode == 0 and r.stdout.strip() == "ok", (i, r.returncode, r.stderr[-2000:])


@pytest.mark.parametrize(("expr", "stages"), [("t % 4", 4), ("t & 3", 4), ("t % 8", 8),
                                              ("t % 16", 16), ("t % 3", 3)])
def test_a_ring_of_local_buffers(expr: str, stages: int) -> None:
    """The ring's pipeline equals numpy on every SPIR-V device (``% 3``: no mask, as before)."""
    _run_everywhere(_PIPELINE, expr, str(stages))


@pytest.mark.parametrize("expr", ["t % 4", "(t + 5) % 8", "t & 12", "(t * 3) % 16",
                                  "((t << 61) >> 61) + 4"])
def test_a_ring_in_global_memory(expr: str) -> None:
    """The same with the ring in global memory and slots picked by a shifted mask, a
    product or a sign-extended 3-bit field (each crashed the CPU runtime before the fix):
    every SPIR-V device, Python's sum."""
    _run_everywhere(_GLOBAL_RINGS, expr)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_index_arithmetic_in_loops(seed: int) -> None:
    """12 random index expressions a seed, each a ring slot in a loop: every SPIR-V device
    equals Python (before the fix, each seed's kernels crashed the CPU runtime)."""
    _run_everywhere(_GLOBAL_RINGS, "random", str(seed), "12", timeout=600)


def test_which_masks_are_narrow() -> None:
    """Runs of ones below the top bit of a width SPIR-V lacks (2-7, 9-15, ... bits, shifted
    or not; ``urem`` by such a power of two) are narrow; 1, 8, 16, 32 bits, masks reaching
    the top bit and non-contiguous ones are not."""
    def ir(op: str, ty: str, c: int) -> str:
        return f"  %r = {op} {ty} %x, {c}\n"

    for c in (3, 7, 15, 12, 0x3F0, 127, 511):
        assert narrow_masks(ir("and", "i64", c)), c
    for c in (4, 8, 64, 1 << 20):
        assert narrow_masks(ir("urem", "i32", c)), c
    for c in (1, 2, 255, 65535, 4294967295, 5, 0, 3 << 62):
        assert not narrow_masks(ir("and", "i64", c)), c
    assert not narrow_masks(ir("and", "i8", 254))     # up to the top bit: a division
    assert not narrow_masks(ir("urem", "i64", 6))     # not a power of two
    assert not narrow_masks("  %r = and i64 %x, -16\n")
    field = "  %a = shl i64 %t, {} \n  %b = ashr exact i64 %a, {}\n"
    assert narrow_masks(field.format(61, 54))     # sext (trunc to i3), scaled
    assert narrow_masks(field.format(62, 62))
    assert not narrow_masks(field.format(56, 56))  # an i8 field: a plain width
    assert not narrow_masks(field.format(3, 7))    # a shift right past it: a division
