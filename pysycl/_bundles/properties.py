"""Properties of bundle operations: ``build_options`` and ``save_log`` (kernel_compiler).

``sycl.compile``/``link``/``build`` accept :class:`build_options` too
(SYCL 2020 defines no property for them; pysycl passes the options to OpenCL).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import SupportsWrite


class build_options:  # noqa: N801 - the spec's spelling
    """Build options (``clBuildProgram`` options), one string or a sequence of strings."""

    __slots__ = ("opts",)

    def __init__(self, opts: str | Sequence[str]) -> None:
        if isinstance(opts, str):
            self.opts = [opts]
        else:
            self.opts = list(opts)
        for o in self.opts:
            if not isinstance(o, str):
                raise TypeError(f"build_options takes strings, not {o!r}")

    def __repr__(self) -> str:
        return f"build_options({self.opts!r})"


class save_log:  # noqa: N801 - the spec's spelling
    """Where a successful build's log goes (``save_log(std::string*)``).

    Python has no string pointers: pass a ``list`` (the log is appended to it)
    or a writable text stream (the log is written to it).
    """

    __slots__ = ("to",)

    def __init__(self, to: list[str] | SupportsWrite[str]) -> None:
        if not (isinstance(to, list) or hasattr(to, "write")):
            raise TypeError("save_log takes a list (the log is appended) or a text stream")
        self.to = to

    def put(self, log: str) -> None:
        """Store a build log where the property says (appended to the list, or written to the stream)."""
        if isinstance(self.to, list):
            self.to.append(log)
        else:
            self.to.write(log)
