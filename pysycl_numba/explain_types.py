"""Numba's type names and operator functions, said as a Python user would.

Numba reports a failed operator as a call of ``operator.add`` with its own type names
(``add(sycl.item<2>, Literal[int](1))``, ``Invalid use of BoundFunction(...) with
parameters (float64, float64)``, ``Cannot unify ...``). :mod:`pysycl_numba.errors` asks
here for the sentence a user reads instead: the operator as written (``+``), the
operand types as Python names them (``an int``, ``a tuple``, ``a sycl.item<2>``), and
what to write. Pure text: no Numba imports.
"""

from __future__ import annotations

import re

#: Numba's names of Python's operators (the ``operator`` module's) -> the operator.
OPERATORS = {
    "add": "+", "sub": "-", "mul": "*", "truediv": "/", "floordiv": "//", "mod": "%",
    "pow": "**", "matmul": "@", "lshift": "<<", "rshift": ">>", "and_": "&", "or_": "|",
    "xor": "^", "eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
    "neg": "-", "pos": "+", "invert": "~", "not_": "not", "contains": "in",
    **{f"i{k}": f"{v}=" for k, v in (("add", "+"), ("sub", "-"), ("mul", "*"),
                                      ("truediv", "/"), ("floordiv", "//"), ("mod", "%"),
                                      ("pow", "**"), ("lshift", "<<"), ("rshift", ">>"),
                                      ("and", "&"), ("or", "|"), ("xor", "^"))},
}

#: The index types of SYCL 2020 §4.9.1 (and a work-item), whose operators are elementwise.
_INDEX = re.compile(r"sycl\.(id|range|item|nd_item|h_item)<")

#: What a reducer's operators are (its combiner's op=, or combine()).
REDUCER_OPS = ("a reducer has no operator op= for its combiner: += needs sycl.plus(), *= "
               "sycl.multiplies(), &= |= ^= sycl.bit_and()/bit_or()/bit_xor(); use r.combine(x)")


def split_args(args: str) -> list[str]:
    """Top-level comma-separated parts of a Numba signature's argument list."""
    parts, depth, start = [], 0, 0
    for k, c in enumerate(args + ","):
        if c in "([<":
            depth += 1
        elif c in ")]>":
            depth -= 1
        elif c == "," and depth == 0:
            if args[start:k].strip():
                parts.append(args[start:k].strip())
            start = k + 1
    return parts


def user_type(t: str) -> str:
    """A Numba type name as a Python user names the value: ``Literal[int](2)`` -> ``int``,
    ``UniTuple(int64 x 2)`` -> ``tuple``, ``sycl.accessor<float32, 1, read, global>`` ->
    ``sycl.accessor``, ``sycl.item<2, True>`` -> ``sycl.item<2>``."""
    t = t.strip()
    m = re.fullmatch(r"(?:Weak)?Literal\[(\w+)\]\(.*\)", t)
    if m:
        return m.group(1)
    if t in ("unicode_type", "str"):
        return "str"
    if t in ("none", "NoneType", "Omitted(None)"):
        return "None"
    if t.startswith(("Tuple(", "UniTuple(", "NamedTuple(", "NamedUniTuple(")):
        return "tuple"
    m = re.fullmatch(r"(sycl\.\w+)<(\d+)(?:, \w+)*>", t)
    if m and _INDEX.match(t):
        return f"{m.group(1)}<{m.group(2)}>"
    if t.startswith("sycl."):
        return t.partition("<")[0]
    return t


def a(t: str) -> str:
    """``t`` with its article: ``an int64``, ``a uint8``, ``a sycl.item<2>``, ``None``."""
    if t == "None":
        return t
    return ("an " if t[:1] in "aeio" else "a ") + t


def typed_args(args: str) -> str:
    """A Numba argument list, as user types: ``(sycl.item<2>, int)``."""
    return "(" + ", ".join(user_type(p) for p in split_args(args)) + ")"


def _operator_instead(types: list[str]) -> str:
    """What to write instead of an operator on ``types`` (user type names)."""
    if any(t in ("sycl.accessor", "sycl.local_accessor", "sycl.usm_pointer") for t in types):
        return ("an accessor or USM pointer is no number: index it (a[i]) and compute on "
                "the elements")
    if any(t.startswith("sycl.reducer") for t in types):
        return REDUCER_OPS
    if "tuple" in types:
        return ("a tuple has no arithmetic or order in kernels: compute on its elements "
                "(t[0] + x, t[0] < x), or make it a sycl.id or sycl.range")
    if any(_INDEX.match(t) for t in types):
        return ("ids, ranges and items combine with one another when they have the same "
                "dimensions, and with an integer, elementwise (docs/kernels.md); use a "
                "component (it[0]) or give both the same dimensions")
    return ("Python's operators work on numbers (bools, integers, floats, complex numbers, "
            "numpy scalars) and on sycl ids, ranges and vectors: convert the operand "
            "(int(x), float(x)) or compute on its parts")


def explain_operator(fname: str, call: str) -> tuple[str, str]:
    """(construct, what to write instead) of an operator Numba found no implementation for
    (``fname`` as Numba names it, one of :data:`OPERATORS`; ``call`` its ``add(t1, t2)``)."""
    sym = OPERATORS[fname]
    types = [user_type(p) for p in split_args(call.partition("(")[2].removesuffix(")"))]
    if len(types) == 1:
        return f"the operator {sym} on {a(types[0])}", _operator_instead(types)
    if fname == "contains":  # `x in c` calls contains(c, x)
        types = types[::-1]
    on = " and ".join(a(t) for t in types)
    return f"the operator {sym} on {on}", _operator_instead(types)


def float_index(message: str, source: str) -> tuple[str, str] | None:
    """An accessor, local accessor, USM pointer, private array or tuple indexed with a float
    (``acc[i / 2]``): (``""``, the sentence to say), or None for another message."""
    index = None
    m = re.search(r">>> (?:setitem|getitem)\(([^\n]*)\)\s*$", message, re.M)
    if m:
        args = split_args(m.group(1))
        index = args[1] if len(args) > 1 else None
    else:
        m = re.search(r"Invalid use of BoundFunction\(\w+\.__(?:set|get)item__ for sycl\.\w+<"
                      r"[^\n]*?\) with parameters \(([^\n]*)\)", message)
        if m:
            index = split_args(m.group(1))[0] if m.group(1) else None
    if index is None:
        return None
    floats = [t for t in _members(index) if _FLOAT.fullmatch(t)]
    if not floats:
        return None
    return ("", f"an index must be an integer, not a {user_type(floats[0])} -- "
            f"{_integer_division(source)}")


#: Numba's float types (a float literal included).
_FLOAT = re.compile(r"float(?:16|32|64)|(?:Weak)?Literal\[float\]\(.*\)")


def _members(t: str) -> list[str]:
    """A Numba type, or the member types of a tuple type (an index of several dimensions)."""
    m = re.fullmatch(r"UniTuple\((.+) x \d+\)", t)
    if m:
        return [m.group(1)]
    if t.startswith("Tuple(") and t.endswith(")"):
        return split_args(t[len("Tuple("):-1])
    return [t]


def _integer_division(source: str) -> str:
    """What to write for a float index, from the line: ``use i // 2`` where it divides
    with ``/``."""
    m = re.search(r"([\w.]+(?:\[[^\[\]]*\])?|\([^()]*\))\s*/(?![/=])\s*([\w.]+|\([^()]*\))",
                  source)
    if m:
        return (f"use {m.group(1)} // {m.group(2)} (integer division; / gives a float in "
                "Python)")
    return ("compute it with integers (// instead of /) or convert it: int(x) (a float "
            "index would be truncated silently in C++; Python refuses it)")


def explain_method(message: str) -> tuple[str, str] | None:
    """A method Numba has no implementation for these arguments (``Invalid use of
    BoundFunction(accessor.get_range for ...) with parameters (int64)``), as the user
    wrote it."""
    m = re.search(r"Invalid use of BoundFunction\((?:\(<class '[\w.]+'>, '(\w+)'\)|[\w.]*?(\w+)) "
                  r"for ([^\n]+?)\) with parameters \(([^\n]*)\)", message)
    if m is None:
        return None
    method = m.group(1) or m.group(2)
    owner = user_type(m.group(3))
    args = typed_args(m.group(4))
    if method in ("__setitem__", "__getitem__"):
        return (f"{'assigning to' if method == '__setitem__' else 'reading'} an element of "
                f"{a(owner)} with the arguments {args}",
                "index it with integers, a sycl.item or a sycl.id of its dimensions")
    return (f"{owner}.{method}() with the arguments {args}",
            "docs/kernels.md lists what accessors, items, ranges and numbers offer in "
            "kernels, and the arguments each method takes")


def explain_unify(message: str) -> tuple[str, str] | None:
    """A variable that holds values of two types (``Cannot unify int64 and Tuple(...) for
    'v.2'``), as :func:`explain_operator`."""
    m = re.search(r"Cannot unify ([^\n]+?) and ([^\n]+?) for '([^'\n]+)'", message)
    if m is None:
        return None
    name = m.group(3).partition(".")[0]
    var = f"the variable {name}" if name.isidentifier() else "a value"
    return (f"{var} holding {a(user_type(m.group(1)))} in one place and "
            f"{a(user_type(m.group(2)))} in another",
            "a variable of a kernel has one type: use two variables, or convert both "
            "values to one type (float(x), np.float32(x))")
