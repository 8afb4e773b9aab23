"""The Numba types of ``sycl.reducer`` parameters and their data models.

* :class:`ReducerType` -- the reducer of a one-element reduction: a pointer to
  the work-item's private accumulator (the entry point's ``alloca``).
* :class:`SpanReducerType` -- the reducer of a span reduction
  (``sycl.reduction(sycl.span(p, n), op)``): the work-group's row of ``n``
  partial results in global memory and ``n``; ``r[i]`` is an
  :class:`ElementReducerType`.
* :class:`ElementReducerType` -- ``r[i]`` of a span reducer: a pointer to
  element ``i`` of the row (null for ``i`` outside the span: its combines do
  nothing), combined into atomically (a compare-exchange loop).
"""

from __future__ import annotations

from pysycl_numba._numba_compat import DataModelManager, models, types

_PRIVATE, _GLOBAL = 0, 1  # the address spaces (pysycl_numba.types numbers them so too)


class ReducerType(types.Type):
    """The ``sycl.reducer`` a reduction kernel receives: a private accumulator.

    Its value is a pointer to the work-item's accumulator (private memory);
    ``op`` is the SYCL function object's name or ``"custom"``, ``combiner``
    the Python function that combines two values (compiled as a device function).
    It is ``mutable`` so that ``r += x`` lowers as ``operator.iadd`` in place.
    """

    mutable = True

    def __init__(self, dtype: types.Type, op: str, combiner: object) -> None:
        self.dtype = dtype
        self.op = op
        self.combiner = combiner
        super().__init__(name=f"sycl.reducer<{dtype}, {op}, {id(combiner):x}>")

    @property
    def key(self) -> tuple[types.Type, str, object]:
        return self.dtype, self.op, self.combiner


class ElementReducerType(ReducerType):
    """``r[i]`` of a span reducer: a pointer to the group's partial ``i`` (global memory)."""

    def __init__(self, dtype: types.Type, op: str, combiner: object) -> None:
        super().__init__(dtype, op, combiner)
        self.name = f"sycl.reducer<{dtype}, {op}, {id(combiner):x}>[i]"

    @property
    def key(self) -> tuple[types.Type, str, object, str]:
        return self.dtype, self.op, self.combiner, "element"


class SpanReducerType(types.Type):
    """The reducer of a span reduction: the work-group's row of partials and its length."""

    mutable = True

    def __init__(self, dtype: types.Type, op: str, combiner: object) -> None:
        self.dtype = dtype
        self.op = op
        self.combiner = combiner
        super().__init__(name=f"sycl.reducer<{dtype}[], {op}, {id(combiner):x}>")

    @property
    def key(self) -> tuple[types.Type, str, object]:
        return self.dtype, self.op, self.combiner

    @property
    def element(self) -> ElementReducerType:
        """The type of ``r[i]``."""
        return ElementReducerType(self.dtype, self.op, self.combiner)


class _ReducerModel(models.PrimitiveModel):
    def __init__(self, dmm: DataModelManager, fe_type: ReducerType) -> None:
        pointee = dmm.lookup(fe_type.dtype).get_data_type()
        space = _GLOBAL if isinstance(fe_type, ElementReducerType) else _PRIVATE
        super().__init__(dmm, fe_type, pointee.as_pointer(addrspace=space))


class _SpanReducerModel(models.StructModel):
    def __init__(self, dmm: DataModelManager, fe_type: SpanReducerType) -> None:
        super().__init__(dmm, fe_type, [("row", fe_type.element), ("n", types.int64)])


def register_reducer_models(dmm: DataModelManager) -> None:
    """Register the reducers' data models in ``dmm``."""
    dmm.register(ReducerType, _ReducerModel)
    dmm.register(ElementReducerType, _ReducerModel)
    dmm.register(SpanReducerType, _SpanReducerModel)
