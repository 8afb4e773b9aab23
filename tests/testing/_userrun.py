"""Running pytest as a user does: a test file outside the project, a fresh interpreter."""

from __future__ import annotations

import importlib.metadata
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = "_pysycl_pytestplugin"


def _installed() -> bool:
    return any(ep.name == PLUGIN for ep in importlib.metadata.entry_points(group="pytest11"))


def run_pytest(tmp_path: Path, source: str, *args: str, env: dict[str, str] | None = None,
               name: str = "test_user.py", load: bool = True,
               pythonpath: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """``python -m pytest -v -rs`` on ``source`` written to ``tmp_path/name``, with an empty
    cache and without the project's conftest; the plugin loaded unless ``load`` is False."""
    (tmp_path / name).write_text(textwrap.dedent(source))
    e = {k: v for k, v in os.environ.items() if k not in ("PYSYCL_TEST_DEVICES", "PYTEST_ADDOPTS")}
    # The project first, then what the caller's interpreter was given (an offline site).
    kept = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    e["PYTHONPATH"] = os.pathsep.join((*pythonpath, str(ROOT), *kept))
    e["PYSYCL_CACHE_DIR"] = str(tmp_path / "cache")
    e.update(env or {})
    cmd = [sys.executable, "-m", "pytest", "-v", "-rs", "-p", "no:cacheprovider", name, *args]
    if load and not _installed():
        cmd[3:3] = ["-p", PLUGIN]
    return subprocess.run(cmd, cwd=tmp_path, env=e, capture_output=True, text=True, timeout=400)


def outcomes(r: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """test id -> PASSED/FAILED/SKIPPED/ERROR from ``pytest -v`` output."""
    return dict(re.findall(r"^\S+::(\S+) (PASSED|FAILED|SKIPPED|ERROR)", r.stdout, re.M))
