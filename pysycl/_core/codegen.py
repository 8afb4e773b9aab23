"""A small Python code generator for the launch path's generated functions.

The model is pyopencl's invokers (``pytools.py_codegen.PythonCodeGenerator``): write lines
with an indentation context, bind the values the code needs into its namespace under
generated names (never formatted into the text), then compile. The source of every
generated function is registered with :mod:`linecache` under a filename of its own
(``<pysycl refresh of k #3>``), so tracebacks, ``pdb`` and :func:`inspect.getsource` show
its lines; the entry goes when the function does. pysycl does not import pytools.

    g = CodeGenerator()
    with g.function("refresh", ["fn"]):
        g.line("v = fn.__closure__[0].cell_contents")
        with g.block(f"if type(v) is not {g.name(usm_pointer, 'T')}"):
            g.line("return None")
        g.line("return [v]")
    refresh = g.compile("refresh", "refresh of k")

Design: docs/design/launch.md §2.6.
"""

from __future__ import annotations

import itertools
import linecache
import re
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import FunctionType
from typing import Any

_serial = itertools.count(1)


def unique_filename(what: str) -> str:
    """A filename no other generated function has: ``<pysycl WHAT #N>``."""
    return f"<pysycl {what} #{next(_serial)}>"


class CodeGenerator:
    """Lines of Python source, their indentation, and the namespace they run in."""

    __slots__ = ("_level", "_lines", "_names", "namespace")

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._level = 0
        self._names: dict[int, str] = {}  # id(value) -> its name (the namespace keeps it alive)
        self.namespace: dict[str, Any] = {}

    def line(self, text: str = "") -> None:
        """Append one line at the current indentation."""
        self._lines.append("    " * self._level + text if text else "")

    @contextmanager
    def indent(self) -> Iterator[None]:
        """Lines written inside the ``with`` are indented one level more."""
        self._level += 1
        try:
            yield
        finally:
            self._level -= 1

    @contextmanager
    def block(self, header: str) -> Iterator[None]:
        """``header:`` (an ``if``, ``for``, ``try`` ...), then its indented body."""
        self.line(header + ":")
        with self.indent():
            yield

    def function(self, name: str, params: Sequence[str]) -> Any:
        """``def name(params):`` and its indented body (a context manager)."""
        return self.block(f"def {name}({', '.join(params)})")

    def name(self, value: Any, hint: str = "v") -> str:
        """An identifier bound to ``value`` in the namespace (the same one for the same
        object); ``hint`` starts it (letters, digits and ``_`` kept)."""
        known = self._names.get(id(value))
        if known is not None:
            return known
        base = re.sub(r"\W", "_", hint) or "v"
        ident = f"_{base}{len(self._names)}"
        self._names[id(value)] = ident
        self.namespace[ident] = value
        return ident

    def source(self) -> str:
        """The source written so far."""
        return "\n".join(self._lines) + "\n"

    def compile(self, name: str, what: str) -> FunctionType:
        """Run the source in a copy of the namespace and return its function ``name``.

        ``what`` names it in tracebacks (``<pysycl WHAT #N>``); the source stays in
        :mod:`linecache` while the function lives.
        """
        src = self.source()
        filename = unique_filename(what)
        code = compile(src, filename, "exec")
        ns = dict(self.namespace)
        exec(code, ns)
        fn = ns[name]
        # mtime None: linecache.checkcache keeps the entry (no file to compare with)
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        weakref.finalize(fn, linecache.cache.pop, filename, None)
        return fn
