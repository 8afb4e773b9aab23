"""Accessors (SYCL 2020 §4.7.6): ``accessor``, ``host_accessor``, ``access_mode``, ``target``.

A device ``accessor`` is created inside a command group; it registers the
command group's requirement on its buffer and, when a kernel captures it,
becomes kernel arguments (see ``pysycl._core.abi``). On the host it only
answers queries: element access on the host goes through ``host_accessor``.
"""

from __future__ import annotations

import enum
import itertools
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, SupportsIndex

import numpy as np

from pysycl import property as _prop
from pysycl._core.abi import AccessorType
from pysycl._core.exceptions import errc, exception, hidden_in_tracebacks
from pysycl._core.sites import user_site
from pysycl._core.vec_layout import lanes_view, vec_parts
from pysycl._memory.coherence import Coherence
from pysycl._objects.multi_ptr import multi_ptr
from pysycl._objects.range import id as _id
from pysycl._objects.range import linear_index
from pysycl._objects.range import np_index as _np_index
from pysycl._objects.range import range as _range

if TYPE_CHECKING:
    from typing import TypeAlias

    from numpy.typing import DTypeLike

    from pysycl._core.launch_types import CommandGroupRef
    from pysycl.property import _Property

    #: A range or an id as the constructors take it: the object, or its components.
    Extent: TypeAlias = _range | _id | SupportsIndex | Iterable[SupportsIndex]
    #: ``(range, offset, kernel tail, kernel type)`` of an accessor (see ``accessor_parts``).
    AccessorParts: TypeAlias = tuple[_range, _id | None, tuple[int, ...], AccessorType]

#: pytest leaves this module's frames out of a kernel's reported failure (a failed assert,
#: a bounds violation): the user's synchronizing line shows where it surfaced.
__tracebackhide__ = hidden_in_tracebacks


class access_mode(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::access_mode``."""

    read = "read"
    write = "write"
    read_write = "read_write"
    # Deprecated in SYCL 2020; mapped onto write/read_write + no_init.
    discard_write = "discard_write"
    discard_read_write = "discard_read_write"
    atomic = "atomic"

    # Members are singletons compared by identity: hash them so (Enum's own hashes the name
    # in Python, ~0.1 us a dict look-up on the submit path).
    __hash__ = object.__hash__


class target(enum.Enum):  # noqa: N801 - the spec's spelling
    """``sycl::target``."""

    device = "device"
    host_task = "host_task"
    constant_buffer = "constant_buffer"
    local = "local"
    host_buffer = "host_buffer"


# (mode the kernel sees, implies no_init)
_MODES = {
    access_mode.read: ("read", False),
    access_mode.write: ("write", False),
    access_mode.read_write: ("read_write", False),
    access_mode.discard_write: ("write", True),
    access_mode.discard_read_write: ("read_write", True),
    access_mode.atomic: ("read_write", False),
}


_new = object.__new__
_DEVICE = target.device


def _norm_mode(mode: object) -> access_mode:
    if isinstance(mode, access_mode):
        return mode
    if isinstance(mode, str):
        try:
            return access_mode[mode]
        except KeyError:
            pass
    raise TypeError(f"not a sycl.access_mode: {mode!r}")


class BufferBase:
    """What accessors know of a buffer: ``sycl.buffer`` (:mod:`pysycl._memory.buffer`) is
    its one subclass.

    The buffer module builds on this one (``get_access`` makes accessors), so accessors
    recognise a buffer by this base class instead of importing the buffer module.
    """

    __slots__ = ()

    # What accessors read on every submit (pysycl's own, not the spec's): plain
    # attributes, as a property call would cost more than the read.
    #: Where the buffer's current data is (shared with its sub-buffers and reinterpretations).
    coherence: Coherence
    #: Whether the buffer was closed (its ``with`` block ended, or it was destroyed):
    #: command groups may not use it any more (its root's ``coherence.closed`` says the same
    #: of a closed parent).
    closed: bool
    #: Per kernel access mode, ``(range, offset, kernel tail, kernel type)`` of a whole-buffer
    #: accessor, filled by this module; replaced, never mutated.
    accessor_parts: dict[str, AccessorParts] = {}  # noqa: RUF012 - replaced, never mutated

    if TYPE_CHECKING:  # defined by sycl.buffer
        @property
        def dtype(self) -> np.dtype: ...

        @property
        def root_range(self) -> _range: ...

        @property
        def root_offset(self) -> int: ...

        def get_range(self) -> _range: ...

        def size(self) -> int: ...

        def closed_message(self) -> str: ...


def host_view(buf: BufferBase) -> np.ndarray:
    """The host copy of ``buf`` shaped by its range (no synchronization); a buffer of
    ``sycl::vec`` elements has one more axis, the vector's elements."""
    return element_view(buf.coherence.host, buf.dtype, buf.root_offset, buf.get_range())


def element_view(host: np.ndarray, dt: np.dtype, offset: int, rng: Iterable[int]) -> np.ndarray:
    """Elements ``offset`` onwards of flat storage ``host`` as ``dt`` (a reinterpreted
    buffer's type), shaped ``rng`` (plus the lanes of a vector type)."""
    if dt != host.dtype:
        host = host.view(np.uint8).view(dt)
    shape = tuple(rng)
    flat = host[offset: offset + int(np.prod(shape))]
    if vec_parts(dt) is not None:
        return lanes_view(flat, dt, shape)
    return flat.reshape(shape)


class accessor:  # noqa: N801 - the spec's spelling
    """``sycl::accessor`` to a buffer, for use in kernels of one command group.

    ``sycl.accessor(buf, h, sycl.access_mode.read)`` (or ``buf.get_access(h, mode)``);
    ``access_range=``/``access_offset=`` make a ranged accessor; ``properties=[sycl.no_init]``
    drops the previous contents. Without a handler it is a placeholder, bound
    later with ``h.require(acc)``.
    """

    # What executors, the launcher and the kernel layer read on every submit (pysycl's own,
    # not the spec's): plain slots, as a property call would cost more than the read.
    #   coherence     the accessed buffer's Coherence (shared with its sub-buffers)
    #   writes        commands through it may write (the mode is not read)
    #   no_init       the previous contents are discarded (no_init, discard_*)
    #   handler       the command group's handler it belongs to; None for an unbound
    #                 placeholder (and a private marker once its command group was submitted)
    #   kernel_type   its type in the runtime/compiler ABI (dtype, dimensions, mode)
    #   kernel_tail   the kernel arguments after the memory object: linear offset, then the
    #                 access range, then the root range without its first dimension
    #   host_view     the numpy view it indexes while a kernel or host task runs on the host
    #                 (None otherwise; set by the executor running it)
    #   target        its sycl.target: a host task with an interop_handle gives device
    #                 accessors native memory, ``target.host_task`` ones host views
    __slots__ = ("_buf", "_mode", "_offset", "_range", "coherence", "handler", "host_view",
                 "kernel_tail", "kernel_type", "no_init", "target", "writes")

    def __init__(self, buf: BufferBase, handler: CommandGroupRef | access_mode | str | None = None,
                 mode: access_mode | str = access_mode.read_write,
                 target: target = target.device, *, access_range: Extent | None = None,
                 access_offset: Extent | None = None, properties: Iterable[_Property] = ()) -> None:
        # This constructor runs once per accessor per submit: keep the common case
        # (whole buffer, no properties) free of allocations beyond the object itself.
        if not isinstance(buf, BufferBase):
            raise TypeError(f"sycl.accessor needs a sycl.buffer, got {type(buf).__name__}")
        if handler is not None and not hasattr(handler, "requirements"):
            # accessor(buf, mode) with no handler: a placeholder.
            if isinstance(handler, (access_mode, str)):
                mode, handler = handler, None
            else:
                raise TypeError(f"sycl.accessor: expected a sycl.handler, got {type(handler).__name__}")
        m = mode if type(mode) is access_mode else _norm_mode(mode)
        kmode, no_init = _MODES[m]
        if properties:
            props = _prop.checked(properties, _prop.ACCESSOR, "sycl.accessor")
            no_init = no_init or props.has_property(_prop.no_init_property)
        if no_init and kmode == "read":
            raise exception(errc.invalid, "no_init cannot be used with access_mode.read")
        st = buf.coherence
        if access_range is None and access_offset is None:
            parts = buf.accessor_parts.get(kmode)  # cached per buffer and kernel mode
            if parts is None:
                parts = _whole_parts(buf, kmode)
        else:
            parts = _ranged_parts(buf, kmode, access_range, access_offset)
        self._buf = buf
        self._mode = m
        self.no_init: bool = no_init
        self.coherence: Coherence = st
        self.writes: bool = kmode != "read"
        self._range, self._offset, self.kernel_tail, self.kernel_type = parts
        self.host_view: np.ndarray | None = None
        self.target = target
        if handler is None:
            # the handler; None for a placeholder; a marker object once submitted
            self.handler: CommandGroupRef | object | None = None
            return
        if st.closed or buf.closed:
            raise exception(errc.invalid, buf.closed_message())
        self.handler = handler
        handler.requirements.append(self)

    @classmethod
    def bound(cls, buf: BufferBase, handler: CommandGroupRef, mode: access_mode) -> accessor:
        """``accessor(buf, handler, mode)`` of a whole buffer without properties, in command
        group ``handler`` (the caller checked it has ``requirements``), ``mode`` an
        :class:`access_mode`: the same accessor, made without the constructor's parsing (a
        submit's ``buf.get_access(h, mode)`` and a buffer's ``sycl.reduction``); the
        constructor where the buffer's parts are not cached yet or it is closed (it raises
        what it raises)."""
        kmode, no_init = _MODES[mode]
        parts = buf.accessor_parts.get(kmode)
        st = buf.coherence
        if parts is None or st.closed or buf.closed:  # (no mode here has read with no_init)
            return cls(buf, handler, mode)
        self = _new(cls)
        self._buf = buf
        self._mode = mode
        self.no_init = no_init
        self.coherence = st
        self.writes = kmode != "read"
        self._range, self._offset, self.kernel_tail, self.kernel_type = parts
        self.host_view = None
        self.target = _DEVICE
        self.handler = handler
        handler.requirements.append(self)
        return self

    # --------------------------------------------------------------- queries
    @property
    def dtype(self) -> np.dtype:
        """Element type."""
        return self._buf.dtype

    @property
    def dimensions(self) -> int:
        """Number of dimensions."""
        return len(self._range)

    @property
    def access_mode(self) -> access_mode:
        """The access mode."""
        return self._mode

    # pysycl's own, not the spec's (what the host device and the launcher read).
    @property
    def root_range(self) -> _range:
        """The range of the accessed buffer's root buffer (row-major strides come from it)."""
        return self._buf.root_range

    @property
    def buffer(self) -> BufferBase:
        """The accessed buffer."""
        return self._buf

    def segments(self) -> list[tuple[int, int]]:
        """Contiguous (element offset, count) runs of the root buffer this accessor covers."""
        rng = tuple(self._range)
        mem = tuple(self._buf.root_range)
        base = self.kernel_tail[0]
        if len(rng) == 1 or rng[1:] == mem[1:]:
            return [(base, self.size())]
        strides = [int(np.prod(mem[d + 1:])) for d in range(len(mem))]
        return [(base + sum(i * s for i, s in zip(outer, strides, strict=False)), rng[-1])
                for outer in itertools.product(*(range(r) for r in rng[:-1]))]

    def get_range(self) -> _range:
        """The access range."""
        return self._range

    def get_multi_ptr(self) -> multi_ptr:
        """In a kernel (1-D accessors): a ``sycl::multi_ptr`` to the first element."""
        return multi_ptr.of(self)

    get_pointer = get_multi_ptr  # SYCL 1.2.1's name

    def get_offset(self) -> _id:
        """The access offset."""
        return self._offset if self._offset is not None else _id(*([0] * len(self._range)))

    def size(self) -> int:
        """Number of accessible elements."""
        return self._range.size()

    get_count = size

    def byte_size(self) -> int:
        """Accessible bytes."""
        return self.size() * self.dtype.itemsize

    def is_placeholder(self) -> bool:
        """Whether the accessor was created without a handler."""
        return self.handler is None

    def _host_only(self) -> np.ndarray:
        if self.host_view is None:
            raise exception(
                errc.accessor,
                "a device sycl.accessor can only be indexed inside a kernel or a host_task (in "
                "a host_task taking an interop_handle, a target.device accessor is native "
                "memory: ih.get_native_mem(acc); index a target.host_task one); on the host "
                "use sycl.host_accessor(buf) (or buf.get_host_access())")
        return self.host_view

    def __getitem__(self, idx: Any) -> Any:
        return self._host_only()[_np_index(idx)]

    def __setitem__(self, idx: Any, value: Any) -> None:
        if not self.writes:
            raise exception(errc.accessor, "cannot write through a read accessor")
        self._host_only()[_np_index(idx)] = value

    def __repr__(self) -> str:
        return (f"sycl.accessor(dtype={self.dtype}, range={tuple(self._range)}, "
                f"mode={self._mode.name})")


#: The checks of the command graphs now recording (``sycl_ext_oneapi_graph``): each raises
#: ``errc.invalid`` for a buffer its graph uses (a host accessor of it is not allowed then).
recording_graphs: list[Any] = []


class host_accessor:  # noqa: N801 - the spec's spelling
    """``sycl::host_accessor``: the buffer's data on the host, as a numpy view.

    Creating it waits for all device work on the buffer and copies the data
    back if needed. ``np.asarray(ha)`` gives the view (read-only for
    ``access_mode.read``); indexing works like numpy. Release it (``with``
    block, or drop it) before submitting work that uses the buffer again.
    ``properties=[sycl.no_init]``: the old contents are not brought to the host (a
    property of another class is ``errc.invalid``).

    ``access_range=``/``access_offset=`` make a ranged host accessor (SYCL 2020
    §4.7.6.10): it sees the elements ``[offset, offset + range)`` of each dimension,
    indexed from the offset (``ha[0]`` is the buffer's element ``offset``), and its
    view is that block. An offset plus range beyond the buffer in any dimension is
    ``errc.invalid``, as for device accessors.
    """

    def __init__(self, buf: BufferBase, mode: access_mode | str = access_mode.read_write, *,
                 access_range: Extent | None = None, access_offset: Extent | None = None,
                 properties: Iterable[_Property] = ()) -> None:
        if not isinstance(buf, BufferBase):
            raise TypeError(f"sycl.host_accessor needs a sycl.buffer, got {type(buf).__name__}")
        for check in recording_graphs:  # sycl_ext_oneapi_graph: not of a buffer being recorded
            check(buf)
        self._buf = buf
        self._mode = _norm_mode(mode)
        kmode, no_init = _MODES[self._mode]
        ranged = access_range is not None or access_offset is not None
        rng, off = (_check_ranged(buf, access_range, access_offset, "sycl.host_accessor") if ranged
                    else (buf.get_range(), None))
        if properties:  # no_init: the old contents are not copied to the host
            props = _prop.checked(properties, _prop.ACCESSOR, "sycl.host_accessor")
            no_init = no_init or props.has_property(_prop.no_init_property)
            if no_init and kmode == "read":
                raise exception(errc.invalid, "no_init cannot be used with access_mode.read")
        # A range that leaves elements out must bring them home: no_init drops only its own.
        partial = off is not None and rng.size() < buf.size()
        buf.coherence.acquire_host(writes=kmode != "read", no_init=no_init and not partial)
        view = host_view(buf)
        if off is not None:
            view = view[tuple(slice(o, o + r) for o, r in zip(off, rng, strict=True))]
        if kmode == "read":
            view = view.view()
            view.flags.writeable = False
        self._view = view
        self._range = rng
        self._offset = off

    def get_range(self) -> _range:
        """The access range (the buffer's range unless ranged)."""
        return self._range

    def get_offset(self) -> _id:
        """The access offset (zeros unless ranged)."""
        return self._offset if self._offset is not None else _id(*([0] * len(self._range)))

    def size(self) -> int:
        """Number of accessible elements."""
        return self._range.size()

    get_count = size

    def byte_size(self) -> int:
        """Accessible bytes."""
        return self.size() * self._buf.dtype.itemsize

    def __array__(self, dtype: DTypeLike | None = None, copy: bool | None = None) -> np.ndarray:
        return self._view if dtype is None else self._view.astype(dtype)

    def __buffer__(self, flags: int) -> memoryview:
        """The buffer protocol (Python >= 3.12): ``memoryview(acc)``, mpi4py's ``comm.Send``."""
        return memoryview(self._view)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """The accessed host memory in place, as DLPack (kDLCPU): ``np.from_dlpack(acc)``,
        mpi4py's ``comm.Send(acc, ...)`` on every Python."""
        kwargs.pop("stream", None)  # host memory: nothing to synchronize
        return self._view.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._view.__dlpack_device__()  # type: ignore[no-any-return]

    def __getitem__(self, idx: Any) -> Any:
        return self._view[_np_index(idx)]

    def __setitem__(self, idx: Any, value: Any) -> None:
        if not self._view.flags.writeable:
            raise exception(errc.accessor, "cannot write through a read-only host_accessor")
        self._view[_np_index(idx)] = value

    def __len__(self) -> int:
        return len(self._view)

    def __enter__(self) -> host_accessor:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def __repr__(self) -> str:
        return f"sycl.host_accessor({self._view!r})"


_KTYPES: dict[tuple[np.dtype, int, str], AccessorType] = {}


def _check_ranged(buf: BufferBase, access_range: Extent | None, access_offset: Extent | None,
                  what: str = "sycl.accessor") -> tuple[_range, _id]:
    """(range, offset) of a ranged accessor of ``buf``; ``errc.invalid`` naming ``what`` and the
    user's file:line when they leave the buffer (SYCL 2020 §4.7.6.9, §4.7.6.10)."""
    brange = buf.get_range()
    n = len(brange)
    rng = brange if access_range is None else (
        access_range if isinstance(access_range, _range) else _range(access_range))
    off = _id(*([0] * n)) if access_offset is None else (
        access_offset if isinstance(access_offset, _id) else _id(access_offset))
    if len(rng) != n or len(off) != n:
        raise exception(errc.invalid, f"{what} at {user_site()}: access range {tuple(rng)} and "
                        f"offset {tuple(off)} must have the buffer's {n} dimension(s)")
    for d in range(n):
        if off[d] < 0 or off[d] + rng[d] > brange[d]:
            raise exception(errc.invalid, f"{what} at {user_site()}: access range {tuple(rng)} "
                            f"at offset {tuple(off)} exceeds the buffer range {tuple(brange)} "
                            f"in dimension {d}")
    return rng, off


def _tail(buf: BufferBase, rng: _range, off: _id | None) -> tuple[int, ...]:
    """Flat kernel arguments after the cl buffer (see pysycl._core.abi): offset, range, mem_range[1:]."""
    mem = buf.root_range
    lin_off = buf.root_offset + (linear_index(off, mem) if off is not None else 0)
    return (lin_off, *rng, *tuple(mem)[1:])


def _ktype(buf: BufferBase, rng: _range, kmode: str) -> AccessorType:
    key = (buf.dtype, len(rng), kmode)
    kt = _KTYPES.get(key)
    if kt is None:
        kt = _KTYPES[key] = AccessorType(buf.dtype, len(rng), kmode)  # type: ignore[arg-type]
    return kt


def _whole_parts(buf: BufferBase, kmode: str) -> AccessorParts:
    """``(range, offset, kernel tail, kernel type)`` of a whole-buffer accessor, cached on ``buf``."""
    rng = buf.get_range()
    parts = (rng, None, _tail(buf, rng, None), _ktype(buf, rng, kmode))
    buf.accessor_parts = {**buf.accessor_parts, kmode: parts}
    return parts


def _ranged_parts(buf: BufferBase, kmode: str, access_range: Extent | None,
                  access_offset: Extent | None) -> AccessorParts:
    """``(range, offset, kernel tail, kernel type)`` of a ranged accessor."""
    rng, off = _check_ranged(buf, access_range, access_offset)
    return rng, off, _tail(buf, rng, off), _ktype(buf, rng, kmode)

