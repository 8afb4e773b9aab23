"""Numba types and data models of ``sycl.vec`` / ``sycl.marray`` values in kernels.

* :class:`VecType` -- ``sycl.vec<T, n>`` / ``sycl.marray<T, n>``: an LLVM vector ``<n x T>``
  (SPIR-V ``OpTypeVector``, NVPTX vector registers; bool elements as ``i8``).
* :class:`VecClassType` -- a vector type used as a value (``sycl.float4``).
* :class:`SwizzleType` -- a vector whose swizzle (``v.xy``) was looked up.

The typing and lowering are :mod:`pysycl_numba.overloads.vec` and
:mod:`pysycl_numba.overloads.vec_ops`.
"""

from __future__ import annotations

from llvmlite import ir as llir

from pysycl_numba._numba_compat import DataModelManager, models, signature, types


class VecType(types.Type):
    """``sycl.vec<T, n>`` (or ``sycl.marray`` when ``marray``): an LLVM vector ``<n x T>``."""

    def __init__(self, dtype: types.Type, n: int, marray: bool = False) -> None:
        self.dtype = dtype
        self.n = n
        self.marray = marray
        super().__init__(name=f"sycl.{'marray' if marray else 'vec'}<{dtype}, {n}>")

    @property
    def key(self) -> tuple[types.Type, int, bool]:
        return self.dtype, self.n, self.marray


class VecClassType(types.Callable):
    """A vector type used as a value (``sycl.float4``): calling it builds a :class:`VecType`.

    ``sycl.float4(x, y, z, w)`` (scalars and vectors, concatenated) or ``sycl.float4(s)``
    (broadcast); the lowering is ``overloads.vec``'s ``"pysycl.vec.make"``.
    """

    def __init__(self, instance: VecType) -> None:
        self.instance = instance
        super().__init__(name=f"class({instance})")

    @property
    def key(self) -> VecType:
        return self.instance

    def get_call_type(self, context: object, args: tuple, kws: dict) -> object:
        inst = self.instance
        count = 0
        for a in args:
            if isinstance(a, VecType) and a.marray == inst.marray:
                count += a.n
            elif isinstance(a, (types.Number, types.Boolean)):
                count += 1
            else:
                return None
        if kws or count not in ((inst.n, 1) if len(args) == 1 else (inst.n,)):
            return None
        return signature(inst, *(types.unliteral(a) for a in args))

    def get_call_signatures(self) -> tuple[list, bool]:
        return [], True

    def get_impl_key(self, sig: object) -> str:
        return "pysycl.vec.make"


class SwizzleType(types.Type):
    """A vector whose swizzle ``v.xy`` was looked up: ``vec`` plus the element ``indices``.

    The value is the vector itself; calling the bound swizzle (``v.xy()``) shuffles it.
    """

    def __init__(self, vec: VecType, indices: tuple[int, ...]) -> None:
        self.vec = vec
        self.indices = indices
        super().__init__(name=f"{vec}.swizzle{indices}")

    @property
    def key(self) -> tuple[VecType, tuple[int, ...]]:
        return self.vec, self.indices


class _VecModel(models.PrimitiveModel):
    # An LLVM vector: SPIR-V OpTypeVector, NVPTX vector registers (bool elements as i8).
    def __init__(self, dmm: DataModelManager, fe_type: VecType) -> None:
        elem = (llir.IntType(8) if isinstance(fe_type.dtype, types.Boolean)
                else dmm.lookup(fe_type.dtype).get_data_type())
        super().__init__(dmm, fe_type, llir.VectorType(elem, fe_type.n))


class _SwizzleModel(_VecModel):
    def __init__(self, dmm: DataModelManager, fe_type: SwizzleType) -> None:
        super().__init__(dmm, fe_type.vec)
        self._fe_type = fe_type


def register_vec_models(dmm: DataModelManager) -> None:
    """Register the data models of :class:`VecType` and :class:`SwizzleType` in ``dmm``."""
    dmm.register(VecType, _VecModel)
    dmm.register(SwizzleType, _SwizzleModel)
