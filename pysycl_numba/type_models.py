"""The data models of the SYCL kernel objects' Numba types (:mod:`pysycl_numba.types`):
their LLVM values, and the target's data model manager (:func:`make_data_model_manager`).
"""

from __future__ import annotations

from llvmlite import ir as llir

from pysycl_numba._numba_compat import DataModelManager, datamodel, models, types
from pysycl_numba.reducer_types import register_reducer_models
from pysycl_numba.types import (
    ADDRSPACE_GLOBAL,
    ADDRSPACE_PRIVATE,
    AccessorRowType,
    AccessorType,
    AssertLayoutType,
    AtomicRefType,
    DeviceEventType,
    FunctorType,
    GlobalPointer,
    GroupType,
    IdType,
    IndexIterType,
    ItemType,
    JointMatrixType,
    KernelEnumClassType,
    KernelEnumType,
    KernelHandlerType,
    MultiPtrType,
    NdItemType,
    NdRangeType,
    PrintBufferType,
    PrintLayoutType,
    PrivateArrayType,
    RangeType,
    SpecConstRefType,
    SubGroupType,
    USMPointerType,
    index_type,
)
from pysycl_numba.vec_types import VecClassType, register_vec_models


class _MultiPtrModel(models.StructModel):
    def __init__(self, dmm: DataModelManager, fe_type: MultiPtrType) -> None:
        super().__init__(dmm, fe_type, [("acc", fe_type.acc), ("off", index_type)])


def _pointer_model(space: int | None) -> type[models.PrimitiveModel]:
    """The model of a type whose value is a pointer to its ``dtype`` in address space
    ``space`` (None: the type's own ``addrspace``). A USM pointer is a global one: an
    address-space-0 pointer would be Function storage in SPIR-V."""

    class _Pointer(models.PrimitiveModel):
        def __init__(self, dmm: DataModelManager, fe_type: types.Type) -> None:
            pointee = dmm.lookup(fe_type.dtype).get_data_type()  # type: ignore[attr-defined]
            at = fe_type.addrspace if space is None else space  # type: ignore[attr-defined]
            super().__init__(dmm, fe_type, pointee.as_pointer(addrspace=at))

    return _Pointer


class _FloatModel(models.PrimitiveModel):
    # Numba's FloatModel has no float16; OpenCL has `half` (cl_khr_fp16).
    _LLVM = {16: llir.HalfType(), 32: llir.FloatType(), 64: llir.DoubleType()}  # noqa: RUF012

    def __init__(self, dmm: DataModelManager, fe_type: types.Float) -> None:
        super().__init__(dmm, fe_type, self._LLVM[fe_type.bitwidth])


class _ItemModel(models.StructModel):
    def __init__(self, dmm: DataModelManager, fe_type: ItemType) -> None:
        n = fe_type.ndim
        members = [(f"id{d}", index_type) for d in range(n)]
        members += [(f"range{d}", index_type) for d in range(n)]
        super().__init__(dmm, fe_type, members)


class _IndexModel(models.StructModel):
    # ids and ranges: the index helpers read ``r{d}`` of both
    def __init__(self, dmm: DataModelManager, fe_type: RangeType | IdType) -> None:
        members = [(f"r{d}", index_type) for d in range(fe_type.ndim)]
        super().__init__(dmm, fe_type, members)


class _IndexIterModel(models.StructModel):
    def __init__(self, dmm: DataModelManager, fe_type: IndexIterType) -> None:
        members = [("index", types.EphemeralPointer(index_type)), ("value", fe_type.of)]
        super().__init__(dmm, fe_type, members)


class _AccessorRowModel(models.StructModel):
    def __init__(self, dmm: DataModelManager, fe_type: AccessorRowType) -> None:
        members: list[tuple[str, types.Type]] = [("acc", fe_type.accessor)]
        members += [(f"i{d}", index_type) for d in range(fe_type.nfixed)]
        super().__init__(dmm, fe_type, members)


class _AccessorModel(models.StructModel):
    def __init__(self, dmm: DataModelManager, fe_type: AccessorType) -> None:
        members: list[tuple[str, types.Type]] = []
        for name in fe_type.member_names():
            if name == "base":
                members.append((name, GlobalPointer(fe_type.dtype, fe_type.addrspace)))
            else:
                members.append((name, index_type))
        if fe_type.checked:  # error buffer, the work-item's violation record, capture slot
            members += [("err", GlobalPointer(types.int32, ADDRSPACE_GLOBAL)),
                        ("rec", GlobalPointer(types.int64, ADDRSPACE_PRIVATE)),
                        ("slot", types.int32)]
        super().__init__(dmm, fe_type, members)


class _LoopedNdItemModel(models.StructModel):
    # a looped nd_range's nd_item: its global id, the global and local ranges (SYCL order)
    def __init__(self, dmm: DataModelManager, fe_type: NdItemType) -> None:
        n = fe_type.ndim
        members = [(f"{f}{d}", index_type) for f in ("id", "global", "local") for d in range(n)]
        super().__init__(dmm, fe_type, members)


def _nd_item_model(dmm: DataModelManager, fe_type: NdItemType) -> models.DataModel:
    return (_LoopedNdItemModel if fe_type.looped else _TagModel)(dmm, fe_type)


class _TagModel(models.PrimitiveModel):
    # Types whose value is implicit (work-item built-ins, compile-time enums, spec ids).
    def __init__(self, dmm: DataModelManager, fe_type: types.Type) -> None:
        super().__init__(dmm, fe_type, llir.IntType(8))


class _DeviceEventModel(models.PrimitiveModel):
    def __init__(self, dmm: DataModelManager, fe_type: DeviceEventType) -> None:
        super().__init__(dmm, fe_type, llir.IntType(64))


class _NdRangeModel(models.StructModel):
    def __init__(self, dmm: DataModelManager, fe_type: NdRangeType) -> None:
        members = [(f"g{d}", index_type) for d in range(fe_type.ndim)]
        members += [(f"l{d}", index_type) for d in range(fe_type.ndim)]
        super().__init__(dmm, fe_type, members)


def make_data_model_manager() -> DataModelManager:
    """Numba's default data models plus the SYCL kernel objects'."""
    dmm = DataModelManager()
    dmm.register(NdItemType, _nd_item_model)
    for tag in (GroupType, SubGroupType, KernelEnumType,
                KernelEnumClassType,
                PrintLayoutType, AssertLayoutType,
                FunctorType, KernelHandlerType, SpecConstRefType, VecClassType):
        dmm.register(tag, _TagModel)
    register_reducer_models(dmm)
    glob, priv, own = (_pointer_model(ADDRSPACE_GLOBAL), _pointer_model(ADDRSPACE_PRIVATE),
                       _pointer_model(None))
    for t, model in ((NdRangeType, _NdRangeModel), (DeviceEventType, _DeviceEventModel),
                     (MultiPtrType, _MultiPtrModel), (AtomicRefType, own),
                     (PrivateArrayType, priv), (JointMatrixType, priv), (types.Float, _FloatModel),
                     (GlobalPointer, own), (ItemType, _ItemModel), (RangeType, _IndexModel),
                     (IdType, _IndexModel), (IndexIterType, _IndexIterModel),
                     (AccessorRowType, _AccessorRowModel), (AccessorType, _AccessorModel),
                     (USMPointerType, glob), (PrintBufferType, glob)):
        dmm.register(t, model)
    register_vec_models(dmm)
    return dmm.chain(datamodel.default_manager)
