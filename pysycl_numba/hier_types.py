"""Numba types of hierarchical kernels (``parallel_for_work_group``).

* :class:`HierGroupType` -- the ``sycl.group`` a hierarchical kernel receives: a group whose
  queries are the work-item built-ins (the kernel runs as an nd_range), which also has
  ``parallel_for_work_item`` (rewritten before typing: :mod:`pysycl_numba.hierarchical`);
* :class:`HItemType` -- ``sycl.h_item<n>``: the global id, the logical local id and range
  (the physical local id and range, the global range are work-item built-ins);
* :class:`PrivateMemoryType` -- ``sycl.private_memory<T>``: each work-item's one ``T``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from llvmlite import ir as llir

from pysycl_numba._numba_compat import models, types
from pysycl_numba.types import ADDRSPACE_PRIVATE, GroupType, index_type

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import DataModelManager


class HierGroupType(GroupType):
    """``sycl.group<ndim>`` of a hierarchical kernel."""

    def __init__(self, ndim: int) -> None:
        super().__init__(ndim)
        self.name = f"sycl.group<{ndim}> (hierarchical)"


class HItemType(types.Type):
    """``sycl.h_item<ndim>``."""

    def __init__(self, ndim: int) -> None:
        self.ndim = ndim
        super().__init__(name=f"sycl.h_item<{ndim}>")

    @property
    def key(self) -> int:
        return self.ndim


class PrivateMemoryType(types.Type):
    """``sycl.private_memory<dtype>``: a work-item's value, in private memory."""

    def __init__(self, dtype: types.Type) -> None:
        self.dtype = dtype
        super().__init__(name=f"sycl.private_memory<{dtype}>")

    @property
    def key(self) -> types.Type:
        return self.dtype


class _HItemModel(models.StructModel):
    def __init__(self, dmm: DataModelManager, fe_type: HItemType) -> None:
        n = fe_type.ndim
        members = [(f"g{d}", index_type) for d in range(n)]
        members += [(f"l{d}", index_type) for d in range(n)]
        members += [(f"lr{d}", index_type) for d in range(n)]
        super().__init__(dmm, fe_type, members)


class _PrivateMemoryModel(models.PrimitiveModel):
    def __init__(self, dmm: DataModelManager, fe_type: PrivateMemoryType) -> None:
        pointee = dmm.lookup(fe_type.dtype).get_data_type()
        super().__init__(dmm, fe_type, pointee.as_pointer(addrspace=ADDRSPACE_PRIVATE))


class _TagModel(models.PrimitiveModel):
    # the group's value is implicit (work-item built-ins), as an nd_range kernel's
    def __init__(self, dmm: DataModelManager, fe_type: types.Type) -> None:
        super().__init__(dmm, fe_type, llir.IntType(8))


def register_hier_models(dmm: DataModelManager) -> None:
    """Register the data models of this module's types."""
    dmm.register(HierGroupType, _TagModel)
    dmm.register(HItemType, _HItemModel)
    dmm.register(PrivateMemoryType, _PrivateMemoryModel)
