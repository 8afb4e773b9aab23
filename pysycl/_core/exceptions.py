"""SYCL 2020 error handling (§4.13): ``exception``, ``errc``, ``exception_list``.

Every failure a user can cause surfaces as :class:`exception` (or a subclass)
whose :meth:`exception.code` is an :class:`errc`. Compile errors additionally
subclass the fitting Python builtin (``TypeError``) so that ordinary
``except TypeError`` handlers keep working.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any

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
    """pytest's ``__tracebackhide__`` of the runtime modules a device's report passes through
    (a module global there): for such a report pytest shows the user's frames only -- the
    line that synchronized, and the kernel's own lines -- not the runtime's path to the
    synchronization point. Every other error shows them all (``--full-trace`` always)."""
    return bool(getattr(getattr(excinfo, "value", None), DEVICE_REPORT, False))


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
