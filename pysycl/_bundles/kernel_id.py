"""``sycl::kernel_id`` (SYCL 2020 §4.11.6) and the application's set of kernels.

A C++ SYCL application knows all its kernels at link time. A Python program
learns them two ways:

* **declared** up front with :func:`declare_kernel` (``sycl.ext.declare_kernel``):
  the kernel's capture types and index-space kind are given, so the kernel is
  listed by ``sycl.get_kernel_ids()`` and ``get_kernel_bundle(..., state=input)``
  compiles it before any submit;
* **met at a submit**: the first submit of a kernel (a memory-cache miss) adds it.

A ``kernel_id`` is identified by its *name*: the ``kernel_name=`` given to
``parallel_for``/``single_task``/``declare_kernel``, or an automatic name
``<qualname>@<file>:<line>`` that is stable from run to run. One name can stand
for several *variants*: the same code submitted with other capture types (a
float32 and a float64 accessor) is compiled twice, like two template
instantiations in C++. Each variant is one SPIR-V module, i.e. one input-state
device image.
"""

from __future__ import annotations

import os
import threading
import types
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from pysycl._core.abi import (
    AccessorType,
    CaptureType,
    IndexSpace,
    ScalarType,
    SpecConstantType,
    detached,
)
from pysycl._core.exceptions import errc, exception
from pysycl._core.vec_layout import vec_parts
from pysycl._core.where import location
from pysycl._kernels.cache import SPIRV, Kernel, kernels
from pysycl._kernels.captures import captures_of, classify, info_of, walk_helpers
from pysycl._kernels.digest import code_digest, stable_digest
from pysycl._kernels.functor import body_of
from pysycl._kernels.signature import check_kernel
from pysycl._kernels.specconst import spec_ids_of

if TYPE_CHECKING:
    from numpy.typing import DTypeLike

    from pysycl._bundles.refs import ImageRef
    from pysycl._kernels.captures import CaptureEntry
    from pysycl._kernels.specconst import specialization_id
    from pysycl._memory.accessor import access_mode
    from pysycl._objects.aspects import aspect
    from pysycl._objects.range import nd_range
    from pysycl._objects.range import range as sycl_range


class kernel_id:  # noqa: N801 - the spec's spelling
    """Identifies one application kernel; obtained from :func:`get_kernel_id(s)`.

    There is no public constructor (``kernel_id() = delete``). Equal and equally
    hashed iff the names are equal; there is one object per name.
    """

    __slots__ = ("__weakref__", "_name", "_variants")

    def __init__(self) -> None:
        raise TypeError("sycl.kernel_id has no public constructor: use sycl.get_kernel_id(name) "
                        "or sycl.get_kernel_ids()")

    @classmethod
    def _make(cls, name: str) -> kernel_id:
        self = object.__new__(cls)
        self._name = name
        self._variants: dict[Hashable, _Variant] = {}
        return self

    def get_name(self) -> str:
        """The kernel's name (``kernel_name=`` or the automatic ``qualname@file:line``)."""
        return self._name

    @property
    def variants(self) -> dict[Hashable, _Variant]:
        """The registry's variants of this kernel by launcher key (changed under its lock only)."""
        return self._variants

    def __eq__(self, other: object) -> bool:
        return isinstance(other, kernel_id) and other._name == self._name

    def __hash__(self) -> int:
        return hash(("kernel_id", self._name))

    def __repr__(self) -> str:
        return f"<sycl.kernel_id {self._name!r}>"


class _Variant:
    """One compiled (or compilable) form of a kernel: code + capture types + index kind."""

    __slots__ = ("caps", "device_has", "fn", "images", "index", "kernel", "kid", "mkey",
                 "spec_ids", "tkey")

    def __init__(self, kid: kernel_id, mkey: Hashable, fn: types.FunctionType,
                 caps: list[CaptureEntry] | None, tkey: tuple[Hashable, ...], index: IndexSpace,
                 device_has: frozenset[str]) -> None:
        captures = captures_of(caps or [])
        self.kid = kid
        self.mkey = mkey
        # A copy of the kernel whose closure holds placeholders for what becomes an
        # argument: code and constants to compile from, never the user's captured
        # values (they hold accessors, buffers and host arrays: see docs/memory.md).
        self.fn = detached(fn, captures)
        # specialization_ids (declarations, not data), read from the real closure
        self.spec_ids: tuple[specialization_id | None, ...] = (
            spec_ids_of(fn, captures) if any(isinstance(c.type, SpecConstantType)
                                             for c in captures) else ())
        self.caps = caps
        self.tkey = tkey
        self.index = index
        self.device_has = device_has
        self.kernel: Kernel | None = None  # once compiled or loaded
        # its input-state device images by target (format, arch) (pysycl._bundles.kernel_bundle)
        self.images: dict[tuple[str, str], ImageRef] = {}

    def load(self, target: tuple[str, str] = SPIRV) -> Kernel:
        """The compiled kernel, with its image for ``target``: from memory, the disk cache,
        or the compiler."""
        if self.kernel is None:
            self.kernel = kernels.once(self.mkey, lambda: kernels.load_or_compile(
                self._digest(), self.fn, self.index, captures_of(self.caps), self.kid.get_name(),
                target=target))
        kernels.target_image(self.kernel, target, self.fn)
        return self.kernel

    def peek(self) -> Kernel | None:
        """The compiled kernel if it is in memory or in the disk cache (never compiles)."""
        if self.kernel is not None:
            return self.kernel
        k = kernels.peek(self.mkey)
        if k is None and self.fn is not None:
            captures = captures_of(self.caps)
            compiled = kernels.load(self._digest(), self.fn, lambda c: c.captures == captures)
            if compiled is not None:
                k = kernels.add(self.mkey, Kernel(compiled, self.kid.get_name()))
        if k is not None:
            self.kernel = k
        return k

    def _digest(self) -> str:
        return stable_digest(self.fn, captures_of(self.caps), self.index)

    def required_aspects(self) -> tuple[frozenset[str], bool]:
        """(aspect names the kernel needs, whether that is exact).

        Exact once compiled (in memory or in the disk cache); otherwise the
        aspects its capture types and ``device_has`` imply — answered without
        compiling.
        """
        k = self.peek()
        if k is not None:
            return frozenset(k.compiled.required_aspects) | self.device_has, True
        need = set(self.device_has)
        for t in self.tkey:
            dt = getattr(t, "dtype", None)
            parts = vec_parts(dt) if isinstance(dt, np.dtype) else None
            if parts is not None:  # a buffer of sycl::vec elements needs what its T needs
                dt = parts[0]
            if dt == np.float16:
                need.add("fp16")
            elif dt in (np.float64, np.complex128):
                need.add("fp64")
        return frozenset(need), False


_lock = threading.RLock()
_ids: dict[str, kernel_id] = {}
_by_mkey: dict[Hashable, _Variant] = {}


def _intern(name: str) -> kernel_id:
    kid = _ids.get(name)
    if kid is None:
        kid = _ids[name] = kernel_id._make(name)
    return kid


class _Definition:
    """The kernel function a ``kernel_name=`` names: where it is defined and its code objects."""

    __slots__ = ("codes", "digest", "filename", "line", "qualname")

    def __init__(self, fn: types.FunctionType) -> None:
        code = fn.__code__
        self.codes = {id(code): code}  # every code object of this definition met so far
        self.filename = code.co_filename
        self.line = code.co_firstlineno
        self.qualname = fn.__qualname__
        self.digest = code_digest(code)

    def same(self, other: _Definition) -> bool:
        """One definition: the same file, line and code text (a lambda made again in a
        loop, a module or notebook cell run again)."""
        return (other.filename, other.line, other.digest) == (self.filename, self.line, self.digest)

    def redefines(self, other: _Definition) -> bool:
        """``other`` replaces this definition: both are typed interactively (a notebook or
        IPython cell, ``<stdin>``, ``exec``'d text) and have one qualified name."""
        return _interactive(self.filename) and _interactive(other.filename) and (
            other.qualname == self.qualname)

    @property
    def where(self) -> str:
        return f"{self.qualname} ({location(self.filename, self.line)})"


def _interactive(filename: str) -> bool:
    # IPython names a cell <ipython-input-N-hash>; ipykernel writes it to ipykernel_PID/HASH.py
    return (filename.startswith("<") and filename.endswith(">")) or os.path.basename(
        os.path.dirname(filename)).startswith("ipykernel_")


_names: dict[str, _Definition] = {}  # kernel_name= -> the kernel it names


def check_kernel_name(kernel_name: object, kernel: object = None) -> str:
    """``kernel_name`` if it is a valid kernel name (a non-empty ``str``); else TypeError.

    With ``kernel``, the name is bound to the kernel's definition the first time
    it is used; a different function under a name already bound raises
    ``errc.invalid`` (SYCL 2020 §5.2: a kernel name identifies one kernel).
    One definition is one code object, or the same file, line and code text
    (a lambda made again, a notebook cell run again); in an interactive session
    a new function of the same qualified name replaces the old one (an edited
    cell run again). ``sycl.kernel`` objects carry no Python definition.
    """
    if not isinstance(kernel_name, str) or not kernel_name:
        raise TypeError(f"kernel_name must be a non-empty str, not {kernel_name!r}")
    if kernel is not None:
        body = None if type(kernel) is types.FunctionType else body_of(kernel)
        fn = kernel if body is None else body[0]
        if type(fn) is types.FunctionType:
            d = _names.get(kernel_name)
            if d is None or id(fn.__code__) not in d.codes:
                _bind(kernel_name, fn)
    return kernel_name


def _bind(name: str, fn: types.FunctionType) -> None:
    new = _Definition(fn)
    with _lock:
        d = _names.get(name)
        if d is None:
            _names[name] = new
        elif d.same(new):
            if len(d.codes) >= 8:  # text compiled again and again (exec in a loop): stay small
                del d.codes[next(iter(d.codes))]
            d.codes.update(new.codes)
        elif d.redefines(new):
            _names[name] = new
            _forget(name, d)
        else:
            raise exception(
                errc.invalid, f"kernel_name {name!r} already names the kernel {d.where}; "
                f"{new.where} is a different function. A kernel name identifies one kernel "
                "(SYCL 2020 §5.2; a C++ program with two kernels of one name is ill formed): "
                "give this kernel another kernel_name, or none")


def _forget(name: str, old: _Definition) -> None:
    """Drop the variants of ``name`` compiled from the replaced definition ``old``."""
    kid = _ids.get(name)
    if kid is None:
        return
    for mkey, v in list(kid.variants.items()):
        if id(v.fn.__code__) in old.codes:
            del kid.variants[mkey]
            if _by_mkey.get(mkey) is v:
                del _by_mkey[mkey]


def auto_name(fn: types.FunctionType) -> str:
    """The automatic, run-to-run stable name of a kernel function."""
    code = fn.__code__
    return f"{fn.__qualname__}@{os.path.basename(code.co_filename)}:{code.co_firstlineno}"


def register_submitted(k: Kernel | None, fn: types.FunctionType, kernel_name: str | None,
                       mkey: Hashable, index: IndexSpace, caps: list[CaptureEntry],
                       tkey: tuple[Hashable, ...]) -> None:
    """Add a kernel met at a submit under ``kernel_name`` (or its automatic name).

    Called by the launcher on a memory miss, and whenever a submit names a kernel
    whose code is already compiled under another name: each distinct name is its
    own ``kernel_id``, sharing the compiled code. The registry keeps the compiled
    kernel, the capture *types* and a detached copy of ``fn`` (placeholders in
    its closure) — never ``fn`` itself: its closure holds the user's accessors,
    buffers and host arrays, and keeping it alive would keep those buffers from
    writing back.
    """
    name = kernel_name or auto_name(fn)
    with _lock:
        kid = _intern(name)
        v = kid.variants.get(mkey)
        if v is not None:
            if v.kernel is None:
                v.kernel = k
            return
        v = _Variant(kid, mkey, fn, caps, tkey, index, frozenset())
        v.kernel = k
        kid.variants[mkey] = v
        _by_mkey.setdefault(mkey, v)


def is_registered(kernel_name: str, mkey: Hashable) -> bool:
    """Whether the variant ``mkey`` is registered under ``kernel_name`` (launcher fast path)."""
    kid = _ids.get(kernel_name)
    return kid is not None and mkey in kid.variants


def variants_of(kid: kernel_id) -> list[_Variant]:
    """The variants of ``kid`` registered so far (a snapshot)."""
    return list(kid.variants.values())


def variant_of(mkey: Hashable) -> _Variant | None:
    """The registered variant with launcher key ``mkey``."""
    return _by_mkey.get(mkey)


def get_kernel_id(kernel_name: str) -> kernel_id:
    """The id of the kernel named ``kernel_name`` (``sycl::get_kernel_id<KernelName>()``).

    Raises:
        ValueError: no kernel of that name is declared or has been submitted
            (the C++ program would be ill formed).
    """
    if not isinstance(kernel_name, str):
        raise TypeError(f"get_kernel_id takes a kernel name (str), not {type(kernel_name).__name__}")
    kid = _ids.get(kernel_name)
    if kid is None:
        known = ", ".join(sorted(_ids)) or "none"
        raise ValueError(f"no kernel named {kernel_name!r} is defined: declare it with "
                         "sycl.ext.declare_kernel(..., kernel_name=...) or submit it with "
                         f"kernel_name=... first (known kernels: {known})")
    return kid


def get_kernel_ids() -> list[kernel_id]:
    """Ids of every kernel declared or submitted so far (no built-in kernels)."""
    with _lock:
        return list(_ids.values())


# ------------------------------------------------------------- declarations
class _Placeholder:
    """Stands for a captured value of a declared type while a kernel is declared."""

    __slots__ = ("name", "type")

    def __init__(self, name: str, t: CaptureType) -> None:
        self.name = name
        self.type = t

    def __repr__(self) -> str:
        return f"<declared capture {self.name}: {self.type}>"


def accessor_type(dtype: DTypeLike, dimensions: int = 1,
                  mode: access_mode | str = "read_write") -> AccessorType:
    """The type of a captured (global) accessor, for :func:`declare_kernel`.

    Args:
        dtype: element type (numpy dtype or type).
        dimensions: 1 to 3.
        mode: ``sycl.access_mode.read``/``write``/``read_write`` (or the name).
    """
    from pysycl._memory.accessor import _MODES, _norm_mode

    kmode = _MODES[_norm_mode(mode)][0]
    if not isinstance(dimensions, int) or not 1 <= dimensions <= 3:
        raise ValueError(f"accessor_type: dimensions must be 1, 2 or 3, not {dimensions!r}")
    return AccessorType(np.dtype(dtype), dimensions, kmode)  # type: ignore[arg-type]


def local_accessor_type(dtype: DTypeLike, dimensions: int = 1) -> AccessorType:
    """The type of a captured ``local_accessor``, for :func:`declare_kernel`."""
    if not isinstance(dimensions, int) or not 1 <= dimensions <= 3:
        raise ValueError(f"local_accessor_type: dimensions must be 1, 2 or 3, not {dimensions!r}")
    return AccessorType(np.dtype(dtype), dimensions, "read_write", "local")


def _capture_type(name: str, t: CaptureType | DTypeLike) -> CaptureType:
    if isinstance(t, (AccessorType, ScalarType)):
        return t
    if t is bool:
        return ScalarType(np.dtype(np.bool_))
    if t is int:
        return ScalarType(np.dtype(np.int64))
    if t is float:
        return ScalarType(np.dtype(np.float64))
    try:
        return ScalarType(np.dtype(t))
    except TypeError:
        raise TypeError(f"declare_kernel: capture {name!r} has type {t!r}; use "
                        "sycl.ext.accessor_type(...), sycl.ext.local_accessor_type(...), a numpy "
                        "dtype, int, float or bool") from None


def _index_of(index_space: nd_range | sycl_range | int | None) -> IndexSpace:
    from pysycl._objects.range import nd_range
    from pysycl._objects.range import range as _range

    if index_space is None:
        return IndexSpace("single_task", 0)
    if isinstance(index_space, nd_range):
        return IndexSpace("nd_range", index_space.dimensions)
    if isinstance(index_space, _range):
        return IndexSpace("range", index_space.dimensions)
    if isinstance(index_space, int) and not isinstance(index_space, bool):
        return IndexSpace("range", 1)
    raise TypeError("declare_kernel: index_space must be a sycl.range or sycl.nd_range (only "
                    "its kind and dimensions matter) or None for a single_task, not "
                    f"{index_space!r}")


def declare_kernel(factory: Callable[..., Any] | None = None, *, kernel_name: str | None = None,
                   index_space: nd_range | sycl_range | int | None = None,
                   captures: Mapping[str, CaptureType | DTypeLike] | None = None,
                   device_has: Iterable[aspect] = ()) -> Any:
    """Declare a kernel up front, so bundles know it before any submit.

    Python kernels get their arguments from what they capture; a declaration
    therefore names a *factory*: a function whose parameters are the kernel's
    captured variables and which returns the kernel. ``captures`` gives each
    parameter's type. The factory is called once, with placeholders, to reach
    the kernel's code; submit ``factory(real accessors, ...)`` later and the
    declared kernel runs (no second compile)::

        def vadd(a, b, c):
            return lambda i: c.__setitem__(i, a[i] + b[i])

        sycl.ext.declare_kernel(vadd, kernel_name="vadd", index_space=sycl.range(1),
            captures={"a": sycl.ext.accessor_type(np.float32, 1, sycl.access_mode.read),
                      "b": sycl.ext.accessor_type(np.float32, 1, sycl.access_mode.read),
                      "c": sycl.ext.accessor_type(np.float32, 1, sycl.access_mode.write)})

    Also usable as a decorator: ``@sycl.ext.declare_kernel(kernel_name=..., ...)``.

    Args:
        factory: returns the kernel (lambda or nested function) when called with
            one keyword argument per entry of ``captures``.
        kernel_name: the kernel's name (``get_kernel_id(kernel_name)``); default
            the automatic name of the returned kernel.
        index_space: a representative ``sycl.range``/``sycl.nd_range`` (kind and
            dimensions matter, not sizes); ``None`` for a ``single_task``.
        captures: capture name → ``accessor_type(...)``, ``local_accessor_type(...)``,
            a numpy dtype, ``int``, ``float`` or ``bool``.
        device_has: aspects the kernel needs (``[[sycl::device_has()]]``); they
            decide compatibility before the kernel is compiled.

    Returns:
        The kernel's ``kernel_id`` (the factory itself when used as a decorator).
    """
    if factory is None:
        def deco(f: Callable[..., Any]) -> Callable[..., Any]:
            declare_kernel(f, kernel_name=kernel_name, index_space=index_space,
                           captures=captures, device_has=device_has)
            return f

        return deco
    if not callable(factory):
        raise TypeError(f"declare_kernel takes a kernel factory (a function), not {factory!r}")
    needs = _aspect_names(device_has)
    ctypes = {n: _capture_type(n, t) for n, t in (captures or {}).items()}
    index = _index_of(index_space)
    fn = _kernel_of(factory, ctypes)
    nparams = 0 if index.kind == "single_task" else 1
    check_kernel(fn, nparams, f"a {index.kind} kernel declared with declare_kernel", index.kind)
    caps, tkey = _declared_captures(fn, ctypes)
    name = auto_name(fn) if kernel_name is None else check_kernel_name(kernel_name, fn)
    return _declare(name, fn, caps, tkey, index, needs)


def _aspect_names(device_has: Iterable[aspect]) -> frozenset[str]:
    from pysycl._objects.aspects import aspect

    needs = set()
    for a in device_has:
        if not isinstance(a, aspect):
            raise TypeError(f"declare_kernel: device_has takes sycl.aspect members, not {a!r}")
        needs.add(a.name)
    return frozenset(needs)


def _kernel_of(factory: Callable[..., Any], ctypes: Mapping[str, CaptureType]
               ) -> types.FunctionType:
    """The kernel the factory returns when called with placeholders for its captures."""
    try:
        fn = factory(**{n: _Placeholder(n, t) for n, t in ctypes.items()})
    except TypeError as e:
        raise TypeError(f"declare_kernel: calling the factory {getattr(factory, '__qualname__', factory)} "
                        f"with the declared captures {sorted(ctypes)} failed: {e}") from e
    if not isinstance(fn, types.FunctionType):
        raise TypeError("declare_kernel: the factory must return the kernel (a lambda or "
                        f"function), it returned {type(fn).__name__}")
    return fn


def _declare(name: str, fn: types.FunctionType, caps: list[CaptureEntry],
             tkey: tuple[Hashable, ...], index: IndexSpace,
             needs: frozenset[str]) -> kernel_id:
    """Register a declared variant under ``name`` (its ``device_has`` merged if known)."""
    mkey = (fn.__code__, tkey, index.kind, index.ndim)
    with _lock:
        kid = _intern(name)
        v = kid.variants.get(mkey)
        if v is not None:
            v.device_has = v.device_has | needs
            return kid
        # Each distinct name is its own kernel_id; names of one code share its compile.
        other = _by_mkey.get(mkey)
        v = _Variant(kid, mkey, fn, caps, tkey, index, needs)
        if other is not None:
            v.kernel = other.kernel
        kid.variants[mkey] = v
        _by_mkey.setdefault(mkey, v)
    return kid

def _declared_captures(fn: types.FunctionType, ctypes: Mapping[str, CaptureType]
                       ) -> tuple[list[CaptureEntry], tuple[Hashable, ...]]:
    """Capture descriptors and type key of a declared kernel, in the launcher's order."""
    code = fn.__code__
    info = info_of(code)
    values: list[Any] = []
    caps: list[CaptureEntry] = []
    key: list[Hashable] = []
    used = set()
    fns = [fn]  # the kernel, then the helper functions it calls (walked like a submit's)

    def one(name: str, source: str, v: Any) -> None:
        if isinstance(v, _Placeholder):
            used.add(v.name)
            caps.append((name, source, v.type))
            key.append(v.type)
        else:
            classify(fn, info, None, name, source, v, values, caps, key, fns)

    for name, cell in zip(code.co_freevars, fn.__closure__ or (), strict=False):
        try:
            v = cell.cell_contents
        except ValueError:
            raise TypeError(f"declare_kernel: the kernel uses {name!r} before it is "
                            "assigned") from None
        one(name, "freevar", v)
    g = fn.__globals__
    for name in info.globals:
        if name in g:
            one(name, "global", g[name])
    if len(fns) > 1:
        walk_helpers(fns, None, values, caps, key)
    unused = set(ctypes) - used
    if unused:
        raise TypeError(f"declare_kernel: the kernel does not capture {sorted(unused)}; every "
                        "declared capture must be used by the returned kernel")
    return caps, tuple(key)

