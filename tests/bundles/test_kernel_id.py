"""kernel_id, get_kernel_id(s), kernel names and the declaration API (real devices)."""

from __future__ import annotations

import numpy as np
import pytest

import pysycl as sycl
from bundles._decl import RD, WR, vadd_factory


def test_declared_kernels_are_listed_before_any_submit(declared):
    ids = sycl.get_kernel_ids()
    for kid in declared.values():
        assert kid in ids
    assert sycl.get_kernel_id("bundles.vadd") == declared["vadd"]
    assert declared["vadd"].get_name() == "bundles.vadd"


def test_kernel_id_equality_and_hash(declared):
    a = sycl.get_kernel_id("bundles.vadd")
    b = sycl.get_kernel_id("bundles.vadd")
    assert a == b and hash(a) == hash(b)
    assert a != declared["scale"]
    assert len({a, b, declared["scale"]}) == 2


def test_kernel_id_has_no_public_constructor():
    with pytest.raises(TypeError, match="no public constructor"):
        sycl.kernel_id()


def test_get_kernel_id_unknown_name_is_a_clear_error():
    with pytest.raises(ValueError, match=r"no kernel named 'no.such.kernel'"):
        sycl.get_kernel_id("no.such.kernel")
    with pytest.raises(TypeError):
        sycl.get_kernel_id(42)


def test_submitted_kernel_joins_the_set_with_its_name(kq):
    a = np.zeros(4, np.float32)
    with sycl.buffer(a) as A:
        def cg(h):
            w = A.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: w.__setitem__(i, 7.0),
                           kernel_name="kid.submitted")
        kq.submit(cg)
    kid = sycl.get_kernel_id("kid.submitted")
    assert kid in sycl.get_kernel_ids()
    assert a.tolist() == [7.0] * 4


def test_automatic_name_is_qualname_file_line(kq):
    a = np.zeros(2, np.int32)
    with sycl.buffer(a) as A:
        def cg(h):
            w = A.get_access(h, sycl.access_mode.write)

            def autonamed(i):
                w[i] = 3
            h.parallel_for(sycl.range(2), autonamed)
        kq.submit(cg)
    names = [k.get_name() for k in sycl.get_kernel_ids()]
    auto = [n for n in names if ".autonamed@test_kernel_id.py:" in n]
    assert len(auto) == 1, names


def test_declared_kernel_is_not_compiled_until_a_bundle_asks(kctx):
    def fresh(a, b, c):
        return lambda i: c.__setitem__(i, a[i] - b[i])

    sycl.ext.reset_kernel_cache_stats()
    kid = sycl.ext.declare_kernel(fresh, kernel_name="kid.fresh", index_space=sycl.range(1),
                                  captures={"a": RD, "b": RD, "c": WR})
    assert sycl.ext.kernel_cache_stats()["compiles"] == 0
    kb = sycl.get_kernel_bundle(kctx, [kid], state=sycl.bundle_state.input)
    assert kb.has_kernel(kid)
    s = sycl.ext.kernel_cache_stats()
    assert s["compiles"] + s["disk_hits"] == 1


def test_submit_of_declared_kernel_reuses_the_declared_compile(kq, declared):
    kb = sycl.get_kernel_bundle(kq.get_context(), [declared["vadd"]],
                                state=sycl.bundle_state.input)
    assert not kb.empty()
    sycl.ext.reset_kernel_cache_stats()
    a = np.arange(8, dtype=np.float32)
    c = np.zeros_like(a)
    with sycl.buffer(a) as A, sycl.buffer(c) as C:
        def cg(h):
            ra = A.get_access(h, sycl.access_mode.read)
            wc = C.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(8), vadd_factory(ra, ra, wc))
        kq.submit(cg)
    assert np.array_equal(c, 2 * a)
    assert sycl.ext.kernel_cache_stats()["compiles"] == 0


def test_declare_kernel_as_decorator_and_single_task(kctx):
    @sycl.ext.declare_kernel(kernel_name="kid.single", index_space=None,
                             captures={"o": sycl.ext.accessor_type(np.int32, 1, "write")})
    def single(o):
        def k():
            o[0] = 5
        return k

    kid = sycl.get_kernel_id("kid.single")
    assert callable(single)
    assert sycl.is_compatible([kid], kctx.get_devices()[0])


@pytest.mark.parametrize(("kwargs", "exc", "match"), [
    ({"captures": {"a": "not a type"}}, TypeError, "capture 'a'"),
    ({"captures": {"a": RD, "zz": RD}}, TypeError, "failed"),
    ({"index_space": "range"}, TypeError, "index_space"),
    ({"device_has": ["fp16"]}, TypeError, "sycl.aspect"),
    ({"kernel_name": ""}, TypeError, "non-empty"),
])
def test_declare_kernel_errors(kwargs, exc, match):
    def fac(a):
        return lambda i: a[i]

    args = {"index_space": sycl.range(1), "captures": {"a": RD}} | kwargs
    with pytest.raises(exc, match=match):
        sycl.ext.declare_kernel(fac, **args)


def test_declare_kernel_rejects_unused_capture_and_non_function():
    with pytest.raises(TypeError, match="does not capture"):
        sycl.ext.declare_kernel(lambda a, b: (lambda i: a[i]), index_space=sycl.range(1),
                                captures={"a": RD, "b": RD})
    with pytest.raises(TypeError, match="must return the kernel"):
        sycl.ext.declare_kernel(lambda: 3, index_space=sycl.range(1))
    with pytest.raises(TypeError, match="kernel factory"):
        sycl.ext.declare_kernel(3)


def test_declare_kernel_wrong_kernel_arity():
    with pytest.raises(TypeError, match="takes 0 parameter"):
        sycl.ext.declare_kernel(lambda: (lambda: None), index_space=sycl.range(1))


def test_same_kernel_under_two_names_is_two_kernel_ids(declared, kq):
    # Issue 9 item 5: each distinct name is its own kernel_id (sharing the compile).
    other = sycl.ext.declare_kernel(vadd_factory, kernel_name="other.name",
                                    index_space=sycl.range(1), captures={"a": RD, "b": RD, "c": WR})
    assert other == sycl.get_kernel_id("other.name") != declared["vadd"]
    assert {other, declared["vadd"]} <= set(sycl.get_kernel_ids())
    kb = sycl.get_kernel_bundle(kq.get_context(), [other], state=sycl.bundle_state.executable)
    assert kb.has_kernel(other) and not kb.has_kernel(declared["vadd"])
