"""Range kernels over accessors, run on the SPIR-V device."""

from __future__ import annotations

import numpy as np

from . import conftest
from .conftest import R, W, spirv_validate


def test_vector_add_lambda(run, tmp_path):
    a = np.arange(1000, dtype=np.float32)
    b = np.ones_like(a)
    c = np.zeros_like(a)
    ra, rb, wc = R(a), R(b), W(c)
    ck = run(lambda i: wc.__setitem__(i, ra[i] + rb[i]), a.size)
    np.testing.assert_array_equal(c, a + b)
    spirv_validate(ck.binary, tmp_path)
    assert ck.required_aspects == frozenset()
    assert (ck.format, ck.arch) == conftest.TARGET  # SPIR-V, or PTX on an NVIDIA GPU
