"""Work-group joint_matrix products in flight (docs/matrix.md "Products in flight"):
``ext_pysycl_mads_in_flight(n)`` lets a barrier leave a work-item's last ``n`` mads
reading their tiles. A pipeline that respects it matches numpy on every device (wgmma on
sm_90, loops on the CPU device, the host device's queued products); one that overwrites a
tile still in flight reads the new values on the host device -- the race is shown, not
hidden -- and is right once it declares nothing in flight."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pysycl as sycl
from pysycl.ext.oneapi.experimental import matrix as jm

SWZ = jm.layout.ext_pysycl_swizzle128
KT, KS = 64, 16  # fp16: K of a staged 128-byte row, K of a mad (4 mads a step)


def _pipelined(q, a, b, slots, in_flight):
    """C = A*B of one 64 x 16 tile per work-group of 128: step ``t`` stages K rows
    ``t*KT..`` into slot ``t % slots`` while the mads read the slot staged before; one
    barrier a step (after the mads)."""
    m, k = a.shape
    n = b.shape[1]
    steps = k // KT
    c = np.zeros((m, n), np.float32)
    two = str(slots)
    with sycl.buffer(a.ravel()) as A, sycl.buffer(b.ravel()) as B, sycl.buffer(c.ravel()) as C:
        def cg(h):
            ra = A.get_access(h, sycl.access_mode.read)
            rb = B.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            la = sycl.local_accessor(np.float16, sycl.range(slots * 64 * KT), h)
            lb = sycl.local_accessor(np.float16, sycl.range(slots * 16 * KT), h)

            def kernel(it):
                nslot = 2 if two == "2" else 3
                g = it.get_group()
                lid = it.get_local_linear_id()
                ti, tj = it.get_group(0), it.get_group(1)
                acc = jm.joint_matrix(g, np.float32, jm.use.accumulator, 64, 16)
                jm.joint_matrix_fill(g, acc, 0.0)
                for t in range(steps + 1):
                    if t < steps:  # stage step t into its slot (swizzled, K-major)
                        s = t % nslot
                        for i in range(lid, 64 * KT, 128):
                            x = (s * 64 * KT + i) * 2
                            la[(x ^ (((x >> 7) & 7) << 4)) // 2] = \
                                ra[(ti * 64 + i // KT) * k + t * KT + i % KT]
                        for i in range(lid, 16 * KT, 128):
                            x = (s * 16 * KT + i) * 2
                            lb[(x ^ (((x >> 7) & 7) << 4)) // 2] = \
                                rb[(t * KT + i % KT) * n + tj * 16 + i // KT]
                    if t > 0:  # the mads of step t - 1
                        p = (t - 1) % nslot
                        for kk in range(0, KT, KS):
                            ta = jm.joint_matrix(g, np.float16, jm.use.a, 64, 16, SWZ)
                            tb = jm.joint_matrix(g, np.float16, jm.use.b, 16, 16, SWZ)
                            jm.joint_matrix_load(g, ta, (la, p * 64 * KT + kk), KT)
                            jm.joint_matrix_load(g, tb, (lb, p * 16 * KT + kk), KT)
                            jm.joint_matrix_mad(g, acc, ta, tb, acc)
                    it.barrier(sycl.access.fence_space.local_space)
                jm.joint_matrix_store(g, acc, (wc, ti * 64 * n + tj * 16), n,
                                      jm.layout.row_major)

            if in_flight:
                jm.ext_pysycl_mads_in_flight(in_flight)(kernel)
            h.parallel_for(sycl.nd_range((m // 64, n // 16 * 128), (1, 128)), kernel)

        q.submit(cg)
    return c


def _operands(seed, m, n, k):
    rng = np.random.default_rng(seed)
    a, b = rng.integers(-4, 5, (m, k)), rng.integers(-4, 5, (k, n))
    return a.astype(np.float16), b.astype(np.float16), a, b


@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(in_flight=st.sampled_from([0, 1, 4]), steps=st.integers(1, 4), seed=st.integers(0, 2**16))
def test_a_pipeline_that_keeps_the_contract(any_kernel_queue, in_flight, steps, seed):
    """Three slots: a step overwrites the slot of the mads two steps back, which the
    barrier between waited for (4 mads a step, at most 4 in flight)."""
    a, b, ai, bi = _operands(seed, 64, 32, steps * KT)
    got = _pipelined(any_kernel_queue, a, b, 3, in_flight)
    np.testing.assert_array_equal(got, (ai @ bi).astype(np.float32))


def test_overwriting_a_tile_in_flight_shows_on_the_host(host_device):
    """Two slots with 4 products in flight: step t + 2's staging overwrites the slot step
    t's mads may still read. The host device runs step t's product at the first barrier
    that leaves it out of the last 4, after that staging began: the race changes the
    result (the same way each run: the host's work-items take turns), as it may on a GPU."""
    a, b, ai, bi = _operands(5, 64, 16, 4 * KT)
    q = sycl.queue(host_device)
    got = _pipelined(q, a, b, 2, 4)
    assert not np.array_equal(got, (ai @ bi).astype(np.float32))
    np.testing.assert_array_equal(_pipelined(q, a, b, 2, 4), got)
    # in flight only 1: at the barrier after step t + 1's staging step t's 4th mad still
    # reads; its first three were done before
    one = _pipelined(q, a, b, 2, 1)
    assert not np.array_equal(one, (ai @ bi).astype(np.float32))
    assert not np.array_equal(one, got)


def test_the_same_pipeline_without_products_in_flight(any_kernel_queue):
    """The two-slot pipeline is right when nothing is declared in flight (the default):
    every barrier waits for every product."""
    a, b, ai, bi = _operands(6, 64, 16, 4 * KT)
    np.testing.assert_array_equal(_pipelined(any_kernel_queue, a, b, 2, 0),
                                  (ai @ bi).astype(np.float32))


@pytest.mark.parametrize("bad", [-1, 8, True, 2.0, "4"])
def test_the_property_takes_a_small_int(bad):
    with pytest.raises(TypeError, match="ext_pysycl_mads_in_flight takes an int from 0 to 7"):
        jm.ext_pysycl_mads_in_flight(bad)


def test_the_property_is_a_kernel_property():
    props = sycl.ext.oneapi.experimental.properties(
        jm.ext_pysycl_mads_in_flight(3), sycl.ext.oneapi.experimental.work_group_size(128))

    def kernel(it):
        pass

    props(kernel)
    from pysycl._kernels.kprops import props_of
    assert props_of(kernel) == ((128,), (), 0, 3)
    with pytest.raises(TypeError, match="given twice"):
        sycl.ext.oneapi.experimental.properties(jm.ext_pysycl_mads_in_flight(1),
                                                jm.ext_pysycl_mads_in_flight(2))
