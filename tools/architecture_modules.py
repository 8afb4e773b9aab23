"""Rewrite the module list of docs/design/architecture.md from the modules' docstrings.

Run ``python tools/architecture_modules.py`` after adding, moving or removing a module;
``tests/test_architecture.py`` fails while the list is out of date.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "design" / "architecture.md"
BEGIN, END = "<!-- modules:begin -->", "<!-- modules:end -->"


def module_lines() -> list[str]:
    """``| `path` | first docstring line |`` for every module, in folder order."""
    rows = []
    for pkg in ("pysycl", "pysycl_numba"):
        for f in sorted((REPO / pkg).rglob("*.py")):
            doc = ast.get_docstring(ast.parse(f.read_text())) or ""
            first = doc.strip().splitlines()[0] if doc.strip() else ""
            rows.append(f"| `{f.relative_to(REPO)}` | {first.replace('|', '&#124;')} |")
    return ["| module | what it is |", "| --- | --- |", *rows]


def render(text: str) -> str:
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    return f"{head}{BEGIN}\n" + "\n".join(module_lines()) + f"\n{END}{tail}"


if __name__ == "__main__":
    new = render(DOC.read_text())
    if "--check" in sys.argv:
        sys.exit(0 if new == DOC.read_text() else 1)
    DOC.write_text(new)
