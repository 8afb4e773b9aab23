"""``PYSYCL_LOG``: a stderr handler on pysycl's own loggers, chosen at import.

pysycl logs under ``pysycl.*`` (runtime) and ``pysycl_numba.*`` (compiler);
INFO carries what a user waits on (first compile of a kernel, OpenCL builds,
kernel bundles) with timings, DEBUG the cache hits, device selection and build
logs. Like any library, pysycl never configures the root logger: without
``PYSYCL_LOG`` nothing is attached and the application's logging config decides.
"""

from __future__ import annotations

import logging
import os
import warnings

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING,
           "error": logging.ERROR}
_LOGGERS = ("pysycl", "pysycl_numba")


class _EnvHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler ``PYSYCL_LOG`` attaches (a type, so a re-import never adds a second)."""


def configure_from_env() -> None:
    """Attach a stderr handler to the ``pysycl`` and ``pysycl_numba`` loggers per ``PYSYCL_LOG``.

    ``PYSYCL_LOG`` is ``debug``, ``info``, ``warning`` or ``error`` (any case);
    unset or empty leaves logging alone. Another value is ignored with a
    ``RuntimeWarning``. The two loggers stop propagating to the root logger, so
    a message is printed once.
    """
    value = os.environ.get("PYSYCL_LOG", "").strip()
    if not value:
        return
    level = _LEVELS.get(value.lower())
    if level is None:
        warnings.warn(f"PYSYCL_LOG={value!r} is not one of {', '.join(_LEVELS)}; ignored",
                      RuntimeWarning, stacklevel=3)
        return
    handler = _EnvHandler()  # stderr
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s: %(message)s"))
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(level)
        if not any(isinstance(h, _EnvHandler) for h in logger.handlers):
            logger.addHandler(handler)
        # The user asked for pysycl's messages on stderr: print them once, not
        # again through whatever handler the application put on the root logger.
        logger.propagate = False
