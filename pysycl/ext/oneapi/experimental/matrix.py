"""``sycl::ext::oneapi::experimental::matrix`` (``sycl_ext_oneapi_matrix``): tensor-core style
tile products in nd_range kernels. See docs/matrix.md and :mod:`pysycl._kernels.matrix`."""

from __future__ import annotations

from pysycl._kernels.kprops import ext_pysycl_mads_in_flight
from pysycl._kernels.matrix import (
    combination,
    joint_matrix,
    joint_matrix_apply,
    joint_matrix_copy,
    joint_matrix_fill,
    joint_matrix_load,
    joint_matrix_mad,
    joint_matrix_store,
    layout,
    matrix_type,
    precision,
    round_to_tf32,
    use,
)

__all__ = ["combination", "ext_pysycl_mads_in_flight", "joint_matrix", "joint_matrix_apply",
           "joint_matrix_copy", "joint_matrix_fill", "joint_matrix_load", "joint_matrix_mad",
           "joint_matrix_store", "layout", "matrix_type", "precision", "round_to_tf32", "use"]
