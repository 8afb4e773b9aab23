"""SYCL 2020 error handling (§4.13): ``exception``, ``errc``, ``exception_list``.

Every failure a user can cause surfaces as :class:`exception` (or a subclass)
whose :meth:`exception.code` is an :class:`errc`. Compile errors additionally
subclass the fitting Python builtin (``TypeError``) so that ordinary
``except TypeError`` handlers keep working.
"""

from __future__ import annotations

import enum
import os
import types
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # a sycl.context, as the low layers see it (the class lies above)
    from pysycl._core.launch_types import ContextRef


class errc(enum.IntEnum):  # noqa: N801 - the spec's spelling
    """The SYCL 2020 error codes (``std::error_code`` values of ``sycl_category``)."""

    success = 0
    runtime = 1
    kernel = 2
    accessor = 3
    nd_range = 4
    event = 5
    kernel_argument = 6
    build = 7
    invalid = 8
    memory_allocation = 9
    platform = 10
    profiling = 11
    feature_not_supported = 12
    kernel_not_supported = 13
    backend_mismatch = 14

    # ``IntEnum`` prints its bare number; users reading ``print(e.code())`` want the name.
    def __str__(self) -> str:
        return f"errc.{self.name}"

    def __format__(self, spec: str) -> str:
        return str(self) if not spec else format(int(self), spec)


#: The attribute that marks an error a device reported about a kernel's run (a failed
#: ``assert``, a bounds violation): raised at a synchronization point, far from its cause.
DEVICE_REPORT = "_pysycl_device_report"


def device_report(err: BaseException) -> BaseException:
    """Mark ``err`` as a device's report about a kernel (:data:`DEVICE_REPORT`); ``err``."""
    setattr(err, DEVICE_REPORT, True)
    return err


def hidden_in_tracebacks(excinfo: Any) -> bool:
    """pytest's ``__tracebackhide__`` of the runtime modules a device's report or a compile
    error passes through (a module global there): for such an error pytest shows the user's
    frames only -- the line that synchronized or submitted, and the kernel's own lines --
    not the runtime's path to it. Every other error shows them all (``--full-trace``
    always)."""
    value = getattr(excinfo, "value", None)
    return bool(getattr(value, DEVICE_REPORT, False)) or isinstance(value, COMPILE_ERRORS)


#: The folders whose frames :func:`user_frames` cuts: pysycl and its compiler, and Python's
#: standard library (``contextlib``'s decorator frames between pysycl's) but not the
#: packages installed in it.
_LIBRARY_DIRS = (*(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), name) + os.sep for name in ("pysycl", "pysycl_numba")),
    os.path.dirname(os.path.abspath(os.__file__)) + os.sep)


def _in_library(filename: str) -> bool:
    return filename.startswith(_LIBRARY_DIRS) and (
        f"{os.sep}site-packages{os.sep}" not in filename
        or filename.startswith(_LIBRARY_DIRS[:2]))

_E = TypeVar("_E", bound=BaseException)


def user_frames(err: _E) -> _E:
    """``err`` with its traceback cut after the last frame of the user's code, to be raised
    again by the public function that caught it (whose frame the ``raise`` adds back).

    A compile error passes through a dozen frames of the runtime and the compiler between
    the user's ``q.submit(...)`` and the compiler's check; they say nothing about the
    user's code (the message names its file:line, the cause keeps what the compiler
    said). Plain Python then shows the user's frames and the one public call; pytest also
    hides that one (:func:`hidden_in_tracebacks`)."""
    entries: list[types.TracebackType] = []
    tb = err.__traceback__
    while tb is not None:
        entries.append(tb)
        tb = tb.tb_next
    # entries[0] is the catching frame: the raise adds it again.
    last = max((k for k, e in enumerate(entries)
                if k and not _in_library(e.tb_frame.f_code.co_filename)), default=0)
    kept: types.TracebackType | None = None
    for e in reversed(entries[1:last + 1]):
        kept = types.TracebackType(kept, e.tb_frame, e.tb_lasti, e.tb_lineno)
    return err.with_traceback(kept)


class exception(Exception):  # noqa: N801,N818 - the spec's spelling
    """``sycl::exception``: a SYCL error with an :class:`errc` code.

    Args:
        code: the error code.
        what: a message that says what went wrong and how to fix it.
        context: the :class:`pysycl.context` the error relates to, if any.
        cl_error: the underlying OpenCL error code, when one caused this error.
    """

    def __init__(
        self,
        code: errc = errc.runtime,
        what: str = "",
        context: ContextRef | None = None,
        *,
        cl_error: int | None = None,
    ) -> None:
        super().__init__(what)
        self._code = errc(code)
        self._what = what
        self._context = context
        self._cl_error = cl_error

    def code(self) -> errc:
        """Return the error code (``sycl::exception::code``)."""
        return self._code

    def what(self) -> str:
        """Return the message (``sycl::exception::what``)."""
        return self._what

    @property
    def cl_error(self) -> int | None:
        """The OpenCL status (``CL_*``, negative) that caused this error, or None (pysycl's own)."""
        return self._cl_error

    def category(self) -> str:
        """Return the error category name; always ``"sycl"`` here."""
        return "sycl"

    def has_context(self) -> bool:
        """Whether a context is associated with this error."""
        return self._context is not None

    def get_context(self) -> ContextRef:

        """Return the associated context (the :class:`pysycl.context` given at construction).

        Raises:
            exception: ``errc.invalid`` when there is none (as the spec says).
        """
        if self._context is None:
            raise exception(errc.invalid, "this exception has no associated context")
        return self._context

    def __str__(self) -> str:
        return f"[errc.{self._code.name}] {self._what}"

    # Exceptions must survive copy, pickle and multiprocessing. ``BaseException``
    # would rebuild from ``args`` (the message alone) and lose the code, so say
    # how to rebuild. A context is process-local (it owns OpenCL handles): copies
    # keep it, pickles drop it.
    def __reduce__(self) -> tuple[Any, ...]:
        state = {k: v for k, v in self.__dict__.items() if k != "_context"}
        return (_rebuild, (type(self), self._code, self._what, self._cl_error), state)

    def __copy__(self) -> exception:
        new = _rebuild(type(self), self._code, self._what, self._cl_error)
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo: dict[int, Any]) -> exception:
        return self.__copy__()

    def __repr__(self) -> str:
        return f"pysycl.exception(errc.{self._code.name}, {self._what!r})"


def _rebuild(cls: type[exception], code: errc, what: str, cl_error: int | None) -> exception:
    """Re-create an exception of ``cls`` without running a subclass's ``__init__``."""
    e = cls.__new__(cls)
    exception.__init__(e, code, what, cl_error=cl_error)
    return e


class kernel_compile_error(exception, TypeError):  # noqa: N801,N818 - spec-style name
    """A Python kernel could not be compiled (``errc.kernel`` or ``errc.build``).

    Also a :class:`TypeError`, because most such errors are typing errors. The
    message names the kernel and the file:line of the offending code.
    """


class kernel_signature_error(exception, TypeError):  # noqa: N801,N818 - spec-style name
    """A kernel's parameters do not fit its launch (``errc.invalid``); also a TypeError."""


#: The errors that say a kernel cannot be compiled or launched as written: about the user's
#: code, their tracebacks need not show pysycl's path to them (:func:`user_frames`).
COMPILE_ERRORS = (kernel_compile_error, kernel_signature_error)


class KernelWarning(UserWarning):
    """Something in a kernel that a device does differently from the host_debuggable device
    (``breakpoint()`` does nothing in a compiled kernel): ``pysycl.ext.KernelWarning``."""


class DeviceWarning(UserWarning):
    """The device pysycl picked cannot do what a program will likely ask of it (the default
    device cannot run Python kernels): ``pysycl.ext.DeviceWarning``."""


class exception_list:  # noqa: N801 - the spec's spelling
    """``sycl::exception_list``: the asynchronous errors handed to an async_handler."""

    def __init__(self, errors: Iterable[BaseException] = ()) -> None:
        self._errors = list(errors)

    def size(self) -> int:
        """Number of errors held."""
        return len(self._errors)

    def __len__(self) -> int:
        return len(self._errors)

    def __iter__(self) -> Iterator[BaseException]:
        return iter(self._errors)

    def begin(self) -> Iterator[BaseException]:
        """Iterator over the errors (the C++ spelling; same as ``iter()``)."""
        return iter(self._errors)

    def __repr__(self) -> str:
        return f"pysycl.exception_list({self._errors!r})"


async_handler = Callable[[exception_list], None]
