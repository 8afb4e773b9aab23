"""A function's LiftSpec: the captured names that become its trailing parameters.

:class:`LiftSpec` says what ``passes.LiftCaptures`` does to one function. The kernel
compile (:mod:`pysycl_numba.compiler`) and the device-function dispatchers
(:mod:`pysycl_numba.dispatcher`) build the specs; the passes that rewrite a function's
IR (``LiftCaptures``, the nested-function, functor and print rewrites) read them. It sits
in the compiler's bottom layer (see :mod:`pysycl_numba`) so that all of them can name it.
"""

from __future__ import annotations

import types as pytypes
from dataclasses import dataclass, field
from typing import Any

from pysycl_numba._numba_compat import Dispatcher, types


@dataclass(frozen=True)
class LiftSpec:
    """What :class:`~pysycl_numba.passes.LiftCaptures` does to one function (the kernel or a helper).

    Attributes:
        names: the names of the trailing parameters the function gets, in
            order (parameter ``nparams + j`` is ``names[j]``).
        own: ``(name, "freevar" | "global") -> j``: loads of the function's own
            captured names become reads of parameter ``nparams + j``.
        calls: ``id(function object) -> (dispatcher, (j, ...))``: a call of
            that helper calls ``dispatcher`` instead, passing parameters
            ``nparams + j`` as the helper's hidden keyword-only parameters
            ``_pysycl_h0, _pysycl_h1, ...`` -- which Numba passes as the last
            positional arguments (see ``dispatcher.LiftedDispatcher``).
    """

    names: tuple[str, ...]
    own: dict[tuple[str, str], int] = field(default_factory=dict)
    calls: dict[int, tuple[Dispatcher, tuple[int, ...]]] = field(default_factory=dict)


def hidden_kw(j: int) -> str:
    """The keyword of a helper's ``j``-th hidden parameter."""
    return f"_pysycl_h{j}"


class _ReadElsewhere:
    """The value of :data:`LIFTED_DEFAULT`: no value of the user's (a stable type name)."""

    def __repr__(self) -> str:
        return "<default read by pysycl>"


#: The type of a helper's left-out parameter whose default :class:`LiftCaptures` reads
#: itself: a kernel argument (``Capture.source == "default"``) or a helper function.
LIFTED_DEFAULT = types.Omitted(_ReadElsewhere())


def is_function(v: Any) -> bool:
    """Whether ``v`` is a Python function (or a Numba dispatcher of one)."""
    return isinstance(v, pytypes.FunctionType) or hasattr(v, "py_func")
