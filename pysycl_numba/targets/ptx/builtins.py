"""The registry of OpenCL C built-ins the PTX target defines, and the definitions' form.

The SPIR-flavoured IR calls OpenCL C built-ins by their mangled names
(``_Z13get_global_idj``, ``_Z3sinf``, ``_Z21work_group_reduce_addf``). For PTX
each declared built-in is replaced by a *definition* in LLVM IR over NVVM
intrinsics, PTX inline assembly or libdevice functions; the definitions are
``internal alwaysinline`` so that the optimiser inlines them into the kernel.

A provider module (:mod:`.workitem`, :mod:`.groups`, :mod:`.math_builtins`,
:mod:`.private`) registers a
:data:`Generator` per mangled name (:func:`define`) or per pattern
(:func:`define_pattern`). A generator gets the parsed declaration and returns a
:class:`Definition`: the ``define`` text (named exactly as declared, with the
declared signature) and the declarations it needs (intrinsics, libdevice
functions, shared-memory scratch globals), deduplicated across built-ins.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Decl:
    """A parsed ``declare``: ``ret @name(params)``; ``params`` are the types alone."""

    name: str
    ret: str
    params: tuple[str, ...]


@dataclass(frozen=True)
class Definition:
    """The IR that defines one built-in.

    Attributes:
        body: the ``define internal ... @name(...) ... { ... }`` text.
        needs: module-level lines the body refers to (``declare``s of intrinsics
            or libdevice functions, scratch ``@global``s); deduplicated.
        libdevice: the body calls libdevice (``__nv_*``): link it.
    """

    body: str
    needs: frozenset[str] = field(default_factory=frozenset)
    libdevice: bool = False


Generator = Callable[[Decl], Definition]

_EXACT: dict[str, Generator] = {}
_PATTERNS: list[tuple[re.Pattern[str], Generator]] = []


def define(*names: str) -> Callable[[Generator], Generator]:
    """Register the decorated generator for the mangled ``names``."""
    def deco(gen: Generator) -> Generator:
        for n in names:
            _EXACT[n] = gen
        return gen
    return deco


def define_pattern(pattern: str) -> Callable[[Generator], Generator]:
    """Register the decorated generator for mangled names matching ``pattern`` (fullmatch)."""
    def deco(gen: Generator) -> Generator:
        _PATTERNS.append((re.compile(pattern), gen))
        return gen
    return deco


def lookup(name: str) -> Generator | None:
    """The generator for the built-in ``name``, or None."""
    gen = _EXACT.get(name)
    if gen is not None:
        return gen
    for pat, g in _PATTERNS:
        if pat.fullmatch(name):
            return g
    return None


def params_text(decl: Decl, prefix: str = "a") -> str:
    """``"i32 %a0, float %a1"`` for the declaration's parameters."""
    return ", ".join(f"{t} %{prefix}{i}" for i, t in enumerate(decl.params))


def header(decl: Decl, *attrs: str) -> str:
    """``define internal <ret> @name(<params %a0...>) alwaysinline <attrs> {``."""
    extra = " ".join(("alwaysinline", *attrs))
    return f"define internal {decl.ret} @{decl.name}({params_text(decl)}) {extra} {{"
