"""The device-side SYCL API that kernels call: local memory, barriers, atomics, group functions.

These names exist on the host so that kernels can refer to them (``sycl.group_barrier``,
``sycl.atomic_ref``, ...) and so that their documentation lives in one place;
inside a kernel the compiler (``pysycl_numba``) gives them their device
implementation. Called on the host, the device-only functions raise
``errc.invalid`` saying so -- except while the host_debuggable device runs a
kernel in the interpreter (:mod:`pysycl._backends.host.executor`): then they have their host
semantics, from :mod:`pysycl._kernels.kernel_api_host` (barriers and collectives
through the work-group's host scheduler, atomics under a lock, private arrays as
numpy arrays). ``local_accessor`` is
created on the host, in the command group, like a buffer accessor.

Python spelling of C++ constructs (see docs/kernels.md):

* ``sycl::atomic_ref<T, order, scope, space> a(acc[i])`` is
  ``a = sycl.atomic_ref(acc, i, sycl.memory_order.relaxed, sycl.memory_scope.device)``
  (a Python subscript cannot yield a reference);
* ``compare_exchange_strong(expected, desired)`` updates ``expected`` by reference in
  C++; here it returns ``(success, observed)``;
* ``sycl::private_memory``-style register tiles are ``sycl.private_array(dtype, n)``.
"""

from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NoReturn, SupportsIndex

import numpy as np

from pysycl import property as _prop
from pysycl._core.abi import AccessorType
from pysycl._core.exceptions import errc, exception
from pysycl._kernels import kernel_api_host as _host
from pysycl._kernels import sycl_intrel as intrel_api  # noqa: F401 - for the compiler (below)
from pysycl._memory.usm import usm_pointer
from pysycl._objects import sycl_math as math_api  # noqa: F401 - re-exported for the compiler
from pysycl._objects import vec as vec_api  # noqa: F401 - re-exported for the compiler (below)
from pysycl._objects.hierarchical import private_memory  # noqa: F401 - for the compiler
from pysycl._objects.multi_ptr import multi_ptr
from pysycl._objects.range import group
from pysycl._objects.range import id as id_class  # re-exported for the compiler too
from pysycl._objects.range import nd_range as nd_range_class  # noqa: F401 - for the compiler
from pysycl._objects.range import np_index as _np_index
from pysycl._objects.range import range as _range
from pysycl._objects.range import range as range_class  # noqa: F401 - re-exported for the compiler

# vec_api, id_class, range_class, nd_range_class, intrel_api: what the compiler types in kernels besides this
# module's own names (pysycl_numba imports no other runtime module): ids and ranges built in
# kernels, vectors and the geometric functions, the integer and relational functions.

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from pysycl._core.launch_types import CommandGroupRef
    from pysycl._core.memory_model import memory_order, memory_scope
    from pysycl._kernels.kernel_api_host import HostGroupLike
    from pysycl._memory.accessor import accessor
    from pysycl.property import _Property


class _fence_space(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::access::fence_space`` (deprecated in SYCL 2020 but still taken by ``barrier``)."""

    local_space = "local_space"
    global_space = "global_space"
    global_and_local = "global_and_local"


class _address_space(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::access::address_space``."""

    global_space = "global_space"
    local_space = "local_space"
    constant_space = "constant_space"
    private_space = "private_space"
    generic_space = "generic_space"


class access:  # noqa: N801 - the spec's namespace ``sycl::access``
    """``sycl::access``: ``access.fence_space`` and ``access.address_space``."""

    fence_space = _fence_space
    address_space = _address_space

    def __init__(self) -> None:
        raise TypeError("sycl.access is a namespace, not a class to instantiate")


def _in_host_kernel() -> bool:
    return _host.active()


def _device_only(name: str) -> NoReturn:
    raise exception(errc.invalid, f"sycl.{name} can only be called inside a kernel "
                    "(a lambda or def handed to handler.parallel_for)")


# ------------------------------------------------------------------ local memory
_NUMERIC = "biuf"


class local_accessor:  # noqa: N801 - the spec's spelling
    """``sycl::local_accessor``: work-group local memory for one ``nd_range`` kernel.

    ``tmp = sycl.local_accessor(np.float32, sycl.range(64), h)`` inside a command
    group; the kernel indexes it like an accessor (``tmp[lid]``,
    ``tmp[i, j]``). Each work-group gets its own ``range.size()`` elements,
    uninitialized. Only ``nd_range`` kernels may use it. ``properties``: SYCL 2020
    defines none for it (any is ``errc.invalid``).
    """

    __slots__ = ("_dtype", "_handler", "_hostview", "_ktype", "_range")

    def __init__(self, dtype: DTypeLike,
                 access_range: _range | SupportsIndex | Iterable[SupportsIndex],
                 handler: CommandGroupRef, properties: Iterable[_Property] = ()) -> None:
        _prop.checked(properties, (), "sycl.local_accessor")  # SYCL 2020 defines none for it
        dt = np.dtype(dtype)
        if dt.kind not in _NUMERIC and dt != np.bool_:
            raise TypeError(f"sycl.local_accessor: element type must be numeric, got {dt}")
        rng = access_range if isinstance(access_range, _range) else _range(access_range)
        if handler is None or not hasattr(handler, "requirements"):
            raise TypeError("sycl.local_accessor(dtype, range, h) needs the command group's "
                            "handler as third argument")
        self._dtype = dt
        self._range = rng
        self._handler = handler
        # specialised on its range: the kernel's tile strides are constants
        self._ktype = AccessorType(dt, len(rng), "read_write", "local", tuple(rng))
        self._hostview: np.ndarray | None = None  # a work-group's memory on the host device

    @property
    def dtype(self) -> np.dtype:
        """Element type."""
        return self._dtype

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return len(self._range)

    def get_range(self) -> _range:
        """The per-work-group range."""
        return self._range

    def get_multi_ptr(self) -> multi_ptr:
        """In a kernel (1-D local accessors): a ``sycl::multi_ptr`` to the first element."""
        return multi_ptr.of(self)

    get_pointer = get_multi_ptr  # SYCL 1.2.1's name

    # What the launcher and the host device read (pysycl's own; not in the spec).
    @property
    def handler(self) -> CommandGroupRef:
        """The command group's handler the local accessor was created with."""
        return self._handler

    @property
    def kernel_type(self) -> AccessorType:
        """The local accessor's type in the runtime/compiler ABI (``space == "local"``)."""
        return self._ktype

    @property
    def kernel_tail(self) -> tuple[int, ...]:
        """The kernel arguments after the local memory: the per-work-group range."""
        return tuple(self._range)

    @property
    def host_view(self) -> np.ndarray | None:
        """The current work-group's local memory while a kernel runs on the host device."""
        return self._hostview

    @host_view.setter
    def host_view(self, view: np.ndarray | None) -> None:
        self._hostview = view

    def size(self) -> int:
        """Elements per work-group."""
        return self._range.size()

    get_count = size

    def byte_size(self) -> int:
        """Bytes of local memory per work-group."""
        return self.size() * self._dtype.itemsize

    def _host_only(self) -> np.ndarray:
        if self._hostview is None:
            raise exception(errc.accessor, "a sycl.local_accessor can only be indexed inside "
                            "an nd_range kernel")
        return self._hostview

    def __getitem__(self, idx: Any) -> Any:
        return self._host_only()[_np_index(idx)]

    def __setitem__(self, idx: Any, value: Any) -> None:
        self._host_only()[_np_index(idx)] = value

    def __repr__(self) -> str:
        return f"sycl.local_accessor(dtype={self._dtype}, range={tuple(self._range)})"


# --------------------------------------------------------------- group functions
def group_barrier(g: group | HostGroupLike, fence_scope: memory_scope | None = None) -> None:
    """Wait until every work-item of group ``g`` reaches the barrier (§4.17.1)."""
    hb = getattr(g, "_host_barrier", None)
    if hb is None:
        _device_only("group_barrier")
    hb()


def group_broadcast(g: group | HostGroupLike, x: Any, local_id: Any = 0) -> Any:
    """``x`` of the work-item with ``local_id`` (default: the leader), to all of ``g``.

    ``local_id`` is a local linear id, or (C++'s ``id_type`` overload) the local id as a
    ``sycl.id`` or a tuple of the group's dimensions.
    """
    values = _host_collective(g, group_value(x, "group_broadcast"), "group_broadcast")
    i = _broadcast_source(g, local_id)
    if not 0 <= i < len(values):
        raise exception(errc.invalid, f"group_broadcast: local id {local_id} is outside the "
                        f"group of {len(values)} work-items")
    return values[i]


def _broadcast_source(g: group | HostGroupLike, local_id: Any) -> int:
    """The local linear id ``group_broadcast`` reads (``local_id`` an integer, id or tuple)."""
    if not isinstance(local_id, (tuple, id_class)):
        return operator.index(local_id)
    ids = [operator.index(k) for k in local_id]
    if isinstance(g, group):
        shape = tuple(g.get_local_range())
    else:
        shape = (int(g.get_local_linear_range()),)
    if len(ids) != len(shape):
        raise TypeError(f"group_broadcast: a {len(shape)}-D group takes a local id of "
                        f"{len(shape)} dimensions, not {len(ids)}")
    lin = 0
    for k, n in zip(ids, shape, strict=True):
        if not 0 <= k < n:
            return -1
        lin = lin * n + k
    return lin


def reduce_over_group(g: group | HostGroupLike, x: Any, *args: Any) -> Any:
    """``reduce_over_group(g, x, op)`` / ``(g, x, init, op)``: combine ``x`` over ``g``.

    The result has the type of ``x`` (``init`` is converted to it).
    """
    if len(args) not in (1, 2) or not isinstance(args[-1], _functor):
        raise TypeError("reduce_over_group(g, x, op) / (g, x, init, op): op must be a SYCL "
                        "function object such as sycl.plus()")
    op = args[-1]
    x = group_value(x, "reduce_over_group", op)
    values = _host_collective(g, x, "reduce_over_group")
    acc = as_type_of(x, args[0]) if len(args) == 2 else values[0]
    for v in (values if len(args) == 2 else values[1:]):
        acc = op(acc, v)
    return as_type_of(x, acc)


def _vote(g: group | HostGroupLike, x: Any, pred: Callable[[Any], Any] | None, name: str,
          ) -> list[bool]:
    flag = bool(x if pred is None else pred(x))
    return _host_collective(g, flag, name)


def any_of_group(g: group | HostGroupLike, x: Any, pred: Callable[[Any], Any] | None = None,
                 ) -> bool:
    """Whether ``x`` (or ``pred(x)``) is true for any work-item of ``g``."""
    return any(_vote(g, x, pred, "any_of_group"))


def all_of_group(g: group | HostGroupLike, x: Any, pred: Callable[[Any], Any] | None = None,
                 ) -> bool:
    """Whether ``x`` (or ``pred(x)``) is true for all work-items of ``g``."""
    return all(_vote(g, x, pred, "all_of_group"))


def none_of_group(g: group | HostGroupLike, x: Any, pred: Callable[[Any], Any] | None = None,
                  ) -> bool:
    """Whether ``x`` (or ``pred(x)``) is false for all work-items of ``g``."""
    return not any(_vote(g, x, pred, "none_of_group"))


def _host_collective(g: group | HostGroupLike, x: Any, name: str) -> list[Any]:
    """Every work-item's ``x``, by local linear id (host_debuggable device only)."""
    hc = getattr(g, "_host_collective", None)
    if hc is None:
        _device_only(name)
    values: list[Any] = hc(x)
    return values


#: The functions objects that combine booleans, and those that combine only integers.
_LOGICAL_OPS = ("logical_and", "logical_or")
_BIT_OPS = ("bit_and", "bit_or", "bit_xor")


def group_value(x: Any, name: str, op: _functor | None = None) -> Any:
    """``x`` as a group function takes it in a compiled kernel: integers narrower than 32
    bits widen to 64 (as numpy's sums do); else a TypeError, as the compiler gives."""
    dt = np.dtype(bool) if isinstance(x, (bool, np.bool_)) else \
        np.asarray(x).dtype if isinstance(x, (int, float, np.integer, np.floating)) else None
    if dt is None or (dt.kind == "f" and dt.itemsize not in (4, 8)):
        raise TypeError(f"sycl.{name} takes a number or a bool (int32, uint32, int64, uint64, "
                        f"float32, float64; narrower integers widen), not {type(x).__name__}")
    if op is not None and ((dt.kind == "b" and op.op not in _LOGICAL_OPS)
                           or (dt.kind == "f" and op.op in _BIT_OPS)):
        what = "booleans" if dt.kind == "b" else "floating-point values"
        raise TypeError(f"sycl.{name}: {op!r} does not combine {what} (bit operations take "
                        "integers; booleans take sycl.logical_and() or sycl.logical_or())")
    if isinstance(x, np.integer) and dt.itemsize < 4:
        return np.int64(x) if dt.kind == "i" else np.uint64(x)
    return x


def as_type_of(x: Any, v: Any) -> Any:
    """``v`` converted to the type of ``x`` (a group function's result has ``x``'s type)."""
    return x.dtype.type(v) if isinstance(x, np.generic) else type(x)(v)


def atomic_ref(acc: accessor | local_accessor | usm_pointer, index: Any, memory_order: memory_order,
               memory_scope: memory_scope, address_space: _address_space | None = None) -> Any:
    """``sycl::atomic_ref`` to ``acc[index]`` (inside kernels only).

    Methods: ``load()``, ``store(v)``, ``exchange(v)``,
    ``compare_exchange_strong(expected, desired)`` / ``_weak`` → ``(success, observed)``,
    ``fetch_add/sub/and/or/xor/min/max(v)`` (the value before the operation).
    """
    if getattr(acc, "host_view", None) is None and not (
            (type(acc) is usm_pointer or isinstance(acc, np.ndarray)) and _in_host_kernel()):
        _device_only("atomic_ref")  # (a captured numpy array is a pointer: docs/kernels.md)
    return _host.atomic_ref(acc, index)


def atomic_fence(memory_order: memory_order, memory_scope: memory_scope) -> None:
    """``sycl::atomic_fence``: a memory fence of ``memory_order`` at ``memory_scope``."""
    if not _in_host_kernel():  # the interpreter runs one work-item at a time: nothing to do
        _device_only("atomic_fence")


def private_array(dtype: DTypeLike, n: int | tuple[int, ...]) -> np.ndarray:
    """A per-work-item array of ``n`` elements, or of shape ``n`` (a tuple), e.g. a register tile.

    ``n`` is an integer literal or a tuple of them: ``sycl.private_array(np.float32, (4, 4))``
    is indexed ``t[i, j]`` (row-major).
    """
    if not _in_host_kernel():
        _device_only("private_array")
    return _host.private_array(dtype, n)


# ----------------------------------------------------------- function objects
class _functor:  # noqa: N801
    """A SYCL function object (§4.17.2): callable on the host, known to the compiler."""

    __slots__ = ()
    _op = ""

    @property
    def op(self) -> str:
        """The operator's name (a ``ReductionOp`` name: ``"plus"``, ``"minimum"``, ...)."""
        return self._op

    def __call__(self, x: Any, y: Any) -> Any:
        return _HOST_OPS[self._op](x, y)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))

    def __repr__(self) -> str:
        return f"sycl.{type(self).__name__}()"


class plus(_functor):  # noqa: N801
    """``sycl::plus``: ``x + y``."""

    _op = "plus"


class multiplies(_functor):  # noqa: N801
    """``sycl::multiplies``: ``x * y``."""

    _op = "multiplies"


class minimum(_functor):  # noqa: N801
    """``sycl::minimum``: ``min(x, y)``."""

    _op = "minimum"


class maximum(_functor):  # noqa: N801
    """``sycl::maximum``: ``max(x, y)``."""

    _op = "maximum"


class bit_and(_functor):  # noqa: N801
    """``sycl::bit_and``: ``x & y``."""

    _op = "bit_and"


class bit_or(_functor):  # noqa: N801
    """``sycl::bit_or``: ``x | y``."""

    _op = "bit_or"


class bit_xor(_functor):  # noqa: N801
    """``sycl::bit_xor``: ``x ^ y``."""

    _op = "bit_xor"


class logical_and(_functor):  # noqa: N801
    """``sycl::logical_and``: ``x and y``."""

    _op = "logical_and"


class logical_or(_functor):  # noqa: N801
    """``sycl::logical_or``: ``x or y``."""

    _op = "logical_or"


_HOST_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "plus": lambda x, y: x + y,
    "multiplies": lambda x, y: x * y,
    "minimum": lambda x, y: min(x, y),
    "maximum": lambda x, y: max(x, y),
    "bit_and": lambda x, y: x & y,
    "bit_or": lambda x, y: x | y,
    "bit_xor": lambda x, y: x ^ y,
    "logical_and": lambda x, y: bool(x) and bool(y),
    "logical_or": lambda x, y: bool(x) or bool(y),
}

#: Enum classes whose members are compile-time constants inside kernels.
KERNEL_ENUMS: tuple[type, ...] = (_fence_space, _address_space)
