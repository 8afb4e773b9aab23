"""Issue 9, items 15-16: exceptions survive copy/pickle/multiprocessing; errc prints by name."""

from __future__ import annotations

import copy
import multiprocessing as mp
import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

import pysycl as sycl

_CLASSES = [sycl.exception, sycl.kernel_compile_error, sycl.kernel_signature_error]


@given(cls=st.sampled_from(_CLASSES), code=st.sampled_from(list(sycl.errc)),
       what=st.text(max_size=40), cl_error=st.one_of(st.none(), st.integers(-70, 0)))
def test_exception_survives_copy_and_pickle(cls: type[sycl.exception], code: sycl.errc,
                                            what: str, cl_error: int | None) -> None:
    e = cls(code, what, cl_error=cl_error)
    e.note = "extra attribute"  # type: ignore[attr-defined]
    for other in (copy.copy(e), copy.deepcopy(e), pickle.loads(pickle.dumps(e))):
        assert type(other) is cls
        assert other.code() is code
        assert other.what() == what
        assert str(other) == str(e)
        assert other._cl_error == cl_error
        assert other.note == "extra attribute"  # type: ignore[attr-defined]


def test_copy_keeps_context_and_pickle_drops_it() -> None:
    ctx = sycl.queue().get_context()
    e = sycl.exception(sycl.errc.invalid, "x", ctx)
    assert copy.copy(e).get_context() is ctx
    p = pickle.loads(pickle.dumps(e))
    assert not p.has_context() and p.code() == sycl.errc.invalid


def _raise_in_child(code: int) -> None:
    raise sycl.exception(sycl.errc(code), "raised in a worker process")


def test_exception_crosses_multiprocessing() -> None:
    with mp.get_context("spawn").Pool(1) as pool:
        with pytest.raises(sycl.exception) as ei:
            pool.apply(_raise_in_child, (int(sycl.errc.nd_range),))
    assert ei.value.code() == sycl.errc.nd_range
    assert "raised in a worker process" in ei.value.what()


@pytest.mark.parametrize("code", list(sycl.errc))
def test_errc_prints_by_name(code: sycl.errc) -> None:
    assert str(code) == f"errc.{code.name}"
    assert f"{code}" == f"errc.{code.name}"
    assert f"{code:d}" == str(int(code))  # an explicit numeric format still gives the number
    assert code == int(code)
    e = sycl.exception(code, "w")
    assert str(e.code()) == f"errc.{code.name}"
