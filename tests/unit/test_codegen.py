"""The code-generation helper of the launch path (``pysycl._core.codegen``; pure Python).

Generated functions must be as visible as written ones: their source in ``linecache``
(tracebacks, pdb, ``inspect.getsource``), a filename of their own each, values bound
by name rather than formatted into the text.
"""

from __future__ import annotations

import gc
import inspect
import linecache
import traceback

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pysycl._core.codegen import CodeGenerator


def _checker(limit: int, what: str = "refresh of k") -> object:
    g = CodeGenerator()
    with g.function("check", ["x"]):
        with g.block(f"if x > {g.name(limit, 'limit')}"):
            g.line("raise ValueError(f'{x} is over the limit')")
        g.line("return x + 1")
    return g.compile("check", what)


def test_the_generated_function_runs() -> None:
    f = _checker(10)
    assert f(3) == 4
    with pytest.raises(ValueError, match="11 is over the limit"):
        f(11)


def test_a_traceback_names_the_generated_line() -> None:
    f = _checker(10)
    try:
        f(12)
    except ValueError:
        text = traceback.format_exc()
    else:
        raise AssertionError("no error raised")
    filename = f.__code__.co_filename
    assert filename.startswith("<pysycl refresh of k #")
    assert f'File "{filename}", line 3, in check' in text
    assert "raise ValueError(f'{x} is over the limit')" in text  # the line itself, shown


def test_the_source_is_in_linecache_and_inspect() -> None:
    f = _checker(7)
    lines = linecache.getlines(f.__code__.co_filename)
    assert lines[0] == "def check(x):\n"
    assert lines[1].startswith("    if x > _limit0:")
    assert lines[2].startswith("        raise ValueError")
    assert lines[3] == "    return x + 1\n"
    assert inspect.getsource(f) == "".join(lines)
    linecache.checkcache()  # no file behind it: the entry must survive a cache check
    assert linecache.getlines(f.__code__.co_filename) == lines


def test_each_generated_function_has_its_own_filename() -> None:
    a, b = _checker(1), _checker(2)  # same text, same description
    assert a.__code__.co_filename != b.__code__.co_filename
    assert (a(1), b(2)) == (2, 3)
    with pytest.raises(ValueError):
        a(2)  # each keeps its own bound value
    assert linecache.getlines(a.__code__.co_filename)[1].endswith("_limit0:\n")


def test_the_source_entry_goes_with_the_function() -> None:
    f = _checker(3)
    filename = f.__code__.co_filename
    assert filename in linecache.cache
    del f
    gc.collect()
    assert filename not in linecache.cache


def test_names_bind_values_once_and_are_identifiers() -> None:
    g = CodeGenerator()
    obj, other = object(), object()
    n1, n2, n3 = g.name(obj, "usm pointer!"), g.name(obj), g.name(other, "")
    assert n1 == n2 and n1 != n3
    assert n1.isidentifier() and n3.isidentifier()
    assert g.namespace[n1] is obj and g.namespace[n3] is other
    with g.function("f", []):
        g.line(f"return ({n1}, {n3})")
    assert g.compile("f", "pair")() == (obj, other)


@given(st.lists(st.integers(0, 4), min_size=1, max_size=12))
def test_indentation_follows_the_nesting(depths: list[int]) -> None:
    g = CodeGenerator()

    def write(level: int) -> None:
        if level == 0:
            g.line("x = 1")
            return
        with g.indent():
            write(level - 1)

    for d in depths:
        write(d)
    lines = g.source().splitlines()
    assert [len(s) - len(s.lstrip(" ")) for s in lines] == [4 * d for d in depths]
    assert all(s.strip() == "x = 1" for s in lines)
