"""Kernels in modules pytest rewrote: the code Python makes of the same source, unrewritten.

pytest rewrites the ``assert`` statements of test modules (and conftest files) into
calls of its helpers (``@pytest_ar``, ``@py_builtins``) and ``@py_assert``
temporaries, so that a failing test shows the values. A kernel defined in a test
file would read those helpers, which cannot run on a device. The same kernel must
behave the same in a test file and elsewhere: its code, and its helpers', is
replaced by the code object Python compiles from the same source file, found by
qualified name, first line and free variables, and a function is made of it with
the original's globals, closure and defaults. Used by the capture analysis, the
compiler and the host_debuggable device alike.
"""

from __future__ import annotations

import types
import weakref
from typing import Any

from pysycl._core.abi import nested_codes

#: The module globals pytest's rewriting makes the asserts of a module read.
_REWRITE_NAMES = frozenset(("@py_builtins", "@pytest_ar"))
_plain: weakref.WeakKeyDictionary[types.CodeType, types.CodeType | None] = (
    weakref.WeakKeyDictionary())
_modules: dict[tuple[str, float], types.CodeType | None] = {}


def rewritten(code: types.CodeType) -> bool:
    """Whether pytest rewrote asserts of ``code`` or of a function defined in it."""
    return any(not _REWRITE_NAMES.isdisjoint(c.co_names) for c in nested_codes(code))


def plain_code(code: types.CodeType) -> types.CodeType | None:
    """The unrewritten code of ``code`` if pytest rewrote it (None otherwise, or when the
    source file no longer holds that function)."""
    try:
        return _plain[code]
    except KeyError:
        pass
    found = _find(code) if rewritten(code) else None
    _plain[code] = found
    return found


def plain_function(fn: Any) -> Any:
    """``fn`` itself, or if pytest rewrote its code, the same function of the unrewritten
    code (same globals, closure, defaults and attributes)."""
    code = getattr(fn, "__code__", None)
    if type(fn) is not types.FunctionType or code is None:
        return fn
    plain = plain_code(code)
    if plain is None:
        return fn
    new = types.FunctionType(plain, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__qualname__ = fn.__qualname__
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__module__ = fn.__module__
    new.__dict__.update(fn.__dict__)
    return new


def _module_code(filename: str) -> types.CodeType | None:
    """The file's module code as Python compiles it (with the interpreter's ``-O``)."""
    import os

    try:
        key = (filename, os.stat(filename).st_mtime)
    except OSError:
        return None
    if key not in _modules:
        try:
            with open(filename, "rb") as f:
                source = f.read()
            _modules[key] = compile(source, filename, "exec", dont_inherit=True)
        except (OSError, SyntaxError, ValueError):
            _modules[key] = None
    return _modules[key]


def _find(code: types.CodeType) -> types.CodeType | None:
    module = _module_code(code.co_filename)
    if module is None:
        return None
    for c in nested_codes(module):
        if (_qualname(c) == _qualname(code) and c.co_firstlineno == code.co_firstlineno
                and c.co_freevars == code.co_freevars and c.co_argcount == code.co_argcount):
            return c
    return None


def _qualname(code: types.CodeType) -> str:
    return getattr(code, "co_qualname", code.co_name)  # (Python 3.10: the name)


def plain_tree(fn: Any) -> Any:
    """For the host_debuggable device, which runs the kernel itself: ``fn`` with its code and
    that of the functions it reads (globals, closure cells, however deep) unrewritten.

    Functions that change get a copy of their module's globals (one per module) holding
    the changed functions; ``fn`` itself when nothing changes.
    """
    return _tree(fn, {}, {})


def _tree(fn: Any, globs: dict[int, dict[str, Any]], done: dict[int, Any]) -> Any:
    if type(fn) is not types.FunctionType:
        return fn
    if id(fn) in done:
        return done[id(fn)]
    done[id(fn)] = fn  # (a cycle: the function as it is)
    code = plain_code(fn.__code__) or fn.__code__
    g = fn.__globals__
    changed: dict[str, Any] = {}
    for name in {n for c in nested_codes(code) for n in c.co_names}:
        v = g.get(name)
        if type(v) is types.FunctionType:
            new = _tree(v, globs, done)
            if new is not v:
                changed[name] = new
    cells = fn.__closure__
    new_cells = cells
    if cells:
        contents = []
        for c in cells:
            try:
                contents.append(c.cell_contents)
            except ValueError:
                contents.append(c)
        swapped = [_tree(v, globs, done) for v in contents]
        if any(a is not b for a, b in zip(swapped, contents, strict=True)):
            new_cells = tuple(types.CellType(s) if s is not v else c
                              for s, v, c in zip(swapped, contents, cells, strict=True))
    if code is fn.__code__ and not changed and new_cells is cells:
        return fn
    if changed:
        g = globs.setdefault(id(g), dict(g))
        g.update(changed)
    new_fn = types.FunctionType(code, g, fn.__name__, fn.__defaults__, new_cells)
    new_fn.__qualname__ = fn.__qualname__
    new_fn.__kwdefaults__ = fn.__kwdefaults__
    new_fn.__module__ = fn.__module__
    new_fn.__dict__.update(fn.__dict__)
    done[id(fn)] = new_fn
    return new_fn
