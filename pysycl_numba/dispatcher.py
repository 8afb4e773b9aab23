"""Device functions: plain Python functions called from kernels.

A kernel may call any plain Python function (module-level or a closure,
without a decorator); :class:`SYCLTypingContext` resolves such a function to
a :class:`DeviceDispatcher`, which compiles it for the argument types at the
call site with the device pipeline and registers the result with the target
context so that the call lowers to a direct call (inlined later). Numbers,
tuples and accessors a helper reads (closure cells, globals) are kernel
arguments like the kernel's own captures: a :class:`LiftedDispatcher` gives
the helper hidden parameters for them. Other values it reads (functions,
modules, classes) are compile-time constants, and each kernel compile
compiles its helpers afresh (:func:`compile_scope`).

The dispatcher also serves Numba's ``@overload(..., target="generic")``
implementations, which Numba compiles through the target's
``jit_registry`` entry.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import weakref
from collections.abc import Callable, Iterator, MutableMapping
from typing import TYPE_CHECKING, Any

from pysycl_numba._numba_compat import (
    Dispatcher,
    dispatcher_registry,
    errors,
    global_compiler_lock,
    jit_registry,
    sigutils,
    types,
    typing,
)
from pysycl_numba.lift import LIFTED_DEFAULT, LiftSpec, hidden_kw, is_function
from pysycl_numba.pipelines import compile_device
from pysycl_numba.target import SYCL, sycl_target

if TYPE_CHECKING:
    from pysycl_numba._numba_compat import ConcreteTemplate, Signature
    from pysycl_numba.target import SYCLTargetContext

_by_function: weakref.WeakKeyDictionary[Callable[..., Any], DeviceDispatcher] = (
    weakref.WeakKeyDictionary()
)


class _Scope:
    """The dispatchers of one kernel compile, the target context it lowers with, and the
    device functions they registered."""

    __slots__ = ("context", "dispatchers", "registered")

    def __init__(self, dispatchers: dict[Callable[..., Any], DeviceDispatcher],
                 context: SYCLTargetContext) -> None:
        self.dispatchers = dispatchers
        self.context = context
        self.registered: list[tuple[str, str]] = []  # entry points


#: The kernel being compiled (``compile_scope``): each kernel compile compiles
#: its helpers afresh, so what a helper reads as a constant (functions it calls,
#: module attributes) is current.
_scope: contextvars.ContextVar[_Scope | None] = contextvars.ContextVar(
    "pysycl_dispatcher_scope", default=None)


class DeviceDispatcher(Dispatcher):
    """Compiles one Python function as a device function, per signature."""

    targetdescr = sycl_target

    _lift: LiftSpec | None = None  # a LiftedDispatcher's hidden parameters

    @classmethod
    def for_function(cls, py_func: Callable[..., Any]) -> DeviceDispatcher:
        """The device dispatcher of a plain Python function (one per kernel compile).

        The typing context calls this (through Numba's ``dispatcher_registry``)
        for every plain function a kernel calls.
        """
        scope = _scope.get()
        cache: MutableMapping[Callable[..., Any], DeviceDispatcher] = (
            _by_function if scope is None else scope.dispatchers)
        disp = cache.get(py_func)
        if disp is None:
            disp = DeviceDispatcher(py_func)
            cache[py_func] = disp
        return disp

    def __init__(self, py_func: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(py_func, targetoptions={"nopython": True})

    def compile(self, sig: tuple[types.Type, ...] | Signature) -> tuple[str, str]:
        """Compile for ``sig`` (argument types) if not done yet; return the key."""
        with global_compiler_lock, self._compiling_counter:
            args, return_type = sigutils.normalize_signature(sig)
            existing = self.overloads.get(tuple(args))
            if existing is not None:
                return existing.entry_point
            scope = _scope.get()
            # The kernel's target context (its image format's lowering), else SPIR-V's.
            ctx = self.targetctx if scope is None else scope.context
            cres = compile_device(self.py_func, tuple(args), return_type, ctx, self._lift)
            # The entry point is only a lookup key: device functions are
            # never called from the host. Numba's target context maps it to
            # the lowered function for calls from other device code.
            cres = cres._replace(entry_point=("pysycl.device", cres.fndesc.mangled_name))
            self.overloads[tuple(args)] = cres
            ctx.insert_user_function(cres.entry_point, cres.fndesc, [cres.library])
            if scope is not None and scope.dispatchers.get(self.py_func) is self:
                scope.registered.append(cres.entry_point)
            return cres.entry_point

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        # A device function is still the user's function on the host.
        return self.py_func(*args, **kwargs)


class LiftedDispatcher(DeviceDispatcher):
    """A helper function of one kernel compile, with hidden parameters.

    The helper reads captured variables (``Capture.owner``); they are its
    trailing, keyword-only parameters ``_pysycl_h0 ...``, which every call
    passes as its last positional arguments (Numba's convention for
    keyword-only parameters; ``passes.LiftCaptures`` adds them in the caller).
    Typing folds the user's arguments with the function's own signature and
    appends the hidden ones. The user's own keyword-only parameters (after ``*``)
    are typed as ordinary parameters named at the call, in front of the hidden
    ones: Numba's convention leaves no room for two sets of them.
    """

    def __init__(self, py_func: Callable[..., Any], lift: LiftSpec, nhidden: int) -> None:
        super().__init__(py_func)
        self._lift = lift
        self._hidden = tuple(hidden_kw(j) for j in range(nhidden))
        user = [p for p in inspect.signature(py_func).parameters.values()
                if p.kind is not inspect.Parameter.VAR_KEYWORD]
        self._npositional = sum(p.kind is not inspect.Parameter.KEYWORD_ONLY for p in user)
        self._user_sig = _keyword_only_as_ordinary(user)
        self._lifted_defaults = frozenset(n for n, source in lift.own if source == "default")
        hidden = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY) for n in self._hidden]
        self._full_pysig = inspect.Signature([*self._user_sig.parameters.values(), *hidden])

    def fold_argument_types(self, args: tuple[types.Type, ...], kws: dict[str, types.Type],
                            ) -> tuple[inspect.Signature, tuple[types.Type, ...]]:
        """Fold the user's arguments with the function's signature, then append the hidden ones.

        (Numba also calls this for a recursive call, which then fails as recursion.)
        """
        n = len(self._hidden)
        if n and (len(args) < n or any(k in self._hidden for k in kws)):
            raise errors.TypingError(
                f"function {self.py_func.__qualname__} reads captured variables, so a kernel "
                "can only call it directly (not pass it as a value)")
        if len(args) - n > self._npositional and self._npositional < len(self._user_sig.parameters):
            raise errors.TypingError(
                f"Cannot bind 'args={args[:len(args) - n]}' to signature '{self._user_sig}': "
                f"{self.py_func.__qualname__} takes {self._npositional} positional arguments")
        hidden = tuple(args[len(args) - n:])
        user = typing.templates.fold_arguments(
            self._user_sig, tuple(args[:len(args) - n]), kws, lambda i, p, v: v,
            lambda i, p, d: types.Omitted(d), lambda i, p, v: types.StarArgTuple(v))
        return self._full_pysig, (*self._defaults_read_elsewhere(user), *hidden)

    def _defaults_read_elsewhere(self, user: tuple[types.Type, ...]) -> tuple[types.Type, ...]:
        """The folded argument types, with a placeholder for the defaults lifting replaces.

        Numba types a left-out parameter as ``Omitted(default)``: the value in the type
        (and in the mangled name), frozen into the code. A default that is a kernel
        argument or a helper function is read elsewhere (``passes.LiftCaptures``); its
        ``Omitted`` holds no value of the user's, so the code is the same for any value.
        """
        names = tuple(self._user_sig.parameters)
        return tuple(
            LIFTED_DEFAULT if isinstance(t, types.Omitted) and (
                names[i] in self._lifted_defaults or is_function(t.value)) else t
            for i, t in enumerate(user))

    def get_call_template(self, args: tuple[types.Type, ...], kws: dict[str, types.Type],
                          ) -> tuple[type[ConcreteTemplate], inspect.Signature,
                                     tuple[types.Type, ...], dict[str, types.Type]]:
        """Fold the arguments (:meth:`fold_argument_types`) and compile for them."""
        _, full = self.fold_argument_types(args, kws)
        self.compile(full)
        name = f"CallTemplate({self.py_func.__name__})"
        template = typing.make_concrete_template(name, key=self.py_func.__name__,
                                                 signatures=self.nopython_signatures)
        return template, self._full_pysig, full, {}


def _keyword_only_as_ordinary(params: list[inspect.Parameter]) -> inspect.Signature:
    """``params`` with keyword-only parameters as ordinary ones (where the order allows)."""
    as_ordinary = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
                   if p.kind is inspect.Parameter.KEYWORD_ONLY else p for p in params]
    try:
        return inspect.Signature(as_ordinary)
    except ValueError:  # after *args, or a required one after a default: Numba's rule applies
        return inspect.Signature(params)


@contextlib.contextmanager
def compile_scope(lifted: dict[Callable[..., Any], LiftedDispatcher],
                  ctx: SYCLTargetContext) -> Iterator[None]:
    """Within: plain functions get fresh dispatchers, ``lifted``'s functions theirs,
    compiled with ``ctx`` (the kernel's target context,
    :meth:`~pysycl_numba.target.SYCLTargetDescriptor.context_for`).

    On exit the device functions they compiled are unregistered from the target
    context: they served this kernel only (its SPIR-V is emitted by then), and
    would otherwise accumulate with every compile.
    """
    scope = _Scope(dict(lifted), ctx)
    token = _scope.set(scope)
    try:
        yield
    finally:
        _scope.reset(token)
        for entry in scope.registered:
            ctx.remove_user_function(entry)


class _DeviceJit:
    """``jit_registry`` entry: how Numba compiles overload implementations."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._kwargs = kwargs

    def __call__(self, py_func: Callable[..., Any]) -> DeviceDispatcher:
        return DeviceDispatcher(py_func, **self._kwargs)


# The target's entries in Numba's registries: how the typing context
# (pysycl_numba.target) compiles a plain function a kernel calls, and how Numba
# compiles @overload(..., target="generic") implementations for the target.
dispatcher_registry[SYCL] = DeviceDispatcher
jit_registry[SYCL] = _DeviceJit
