"""A kernel that does not compile: the traceback starts in the user's code, without Numba.

The error's cause is the compiler's one-line diagnostic, with no frames; the
full text is ``e.__cause__.text`` (and in the ``PYSYCL_LOG=debug`` log).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import traceback
from pathlib import Path

import numpy as np
import pytest

import pysycl as sycl
from pysycl_numba.errors import DIAGNOSTIC
from tests.testing._userrun import ROOT, run_pytest


def test_compile_error_traceback_starts_in_user_code_without_compiler_frames(kq: sycl.queue) -> None:
    x = np.zeros(4)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            ra = X.get_access(h, sycl.access_mode.read)

            def k(i):
                ra[i] = 1.0

            h.parallel_for(sycl.range(4), k)

        with pytest.raises(sycl.kernel_compile_error) as info:
            kq.submit(cg)
    err = info.value
    text = "".join(traceback.format_exception(err))
    assert "site-packages" not in text, text  # no frame of Numba (or llvmlite)
    # Before the main traceback: only the diagnostic's one line, no frames.
    cause_part, _, main_part = text.partition("The above exception was the direct cause")
    assert "Traceback" not in cause_part and "File " not in cause_part, text
    first_frame = next(ln for ln in main_part.splitlines() if ln.strip().startswith("File "))
    assert __file__ in first_frame, text
    assert f"{__file__}:{k_line(err)}" in str(err)
    assert "'ra'" in str(err) and "ra[i] = 1.0" in str(err)


def k_line(err: sycl.kernel_compile_error) -> int:
    """The line of ``ra[i] = 1.0`` in this file."""
    with open(__file__) as f:
        return next(n for n, ln in enumerate(f, 1) if ln.strip() == "ra[i] = 1.0")


# ------------------------------------------------- the frames a compile error shows (issue 25)
QUEUE_PY = sycl.queue.__module__.replace(".", os.sep) + ".py"
HERE = str(Path(__file__).relative_to(ROOT))


def _frames(err: BaseException) -> list[tuple[str, str]]:
    """(file, function) of each frame of ``err``'s traceback, files relative to the project."""
    return [(str(Path(f.filename).resolve().relative_to(ROOT)), f.name)
            for f in traceback.extract_tb(err.__traceback__)]


def _raising() -> None:
    raise ValueError("no")


def test_compile_error_frames_are_the_callers_and_the_submit(kq: sycl.queue) -> None:
    x = np.zeros(4)
    with sycl.buffer(x) as X:
        def cg(h: sycl.handler) -> None:
            a = X.get_access(h, sycl.access_mode.write)
            h.parallel_for(sycl.range(4), lambda i: a.__setitem__(i / 2, 1.0))

        with pytest.raises(sycl.kernel_compile_error) as info:
            kq.submit(cg)
    me = test_compile_error_frames_are_the_callers_and_the_submit.__name__
    assert _frames(info.value) == [(HERE, me), (QUEUE_PY, "submit")]


def test_shortcut_compile_error_frames_are_the_callers_and_the_shortcut(kq: sycl.queue) -> None:
    def k1(i):
        _raising()

    def k0():
        _raising()

    for call, name in ((lambda: kq.parallel_for(sycl.range(4), k1), "parallel_for"),
                       (lambda: kq.parallel_for(4, k1), "parallel_for"),
                       (lambda: kq.single_task(k0), "single_task"),
                       (lambda: kq.single_task(kq.single_task(lambda: None), k0), "single_task")):
        with pytest.raises(sycl.kernel_compile_error, match="exceptions other than AssertionError") as info:
            call()
        me = test_shortcut_compile_error_frames_are_the_callers_and_the_shortcut.__name__
        assert _frames(info.value) == [(HERE, me), (HERE, "<lambda>"), (QUEUE_PY, name)]


def test_an_error_the_command_group_raises_keeps_its_frames(any_kernel_queue: sycl.queue) -> None:
    # The handler refuses the kernel's signature: the user's h.parallel_for line stays the
    # last frame, below the submit; the handler's own frames are cut.
    def cg(h: sycl.handler) -> None:
        h.parallel_for(sycl.range(4), lambda i, j: None)

    with pytest.raises(sycl.kernel_signature_error, match="takes 2 parameter") as info:
        any_kernel_queue.submit(cg)
    me = test_an_error_the_command_group_raises_keeps_its_frames.__name__
    assert _frames(info.value) == [(HERE, me), (QUEUE_PY, "submit"), (HERE, "cg")]
    last = traceback.extract_tb(info.value.__traceback__)[-1]
    assert last.line == "h.parallel_for(sycl.range(4), lambda i, j: None)"


SCRIPT = '''\
import sys

import numpy as np
import pysycl as sycl

dev = next(d for d in sycl.device.get_devices() if d.get_info(sycl.info.device.name) == sys.argv[1])
q = sycl.queue(dev)
x = np.arange(8, dtype=np.float32)
with sycl.buffer(x) as X:
    def cg(h):
        a = X.get_access(h, sycl.access_mode.read_write)

        def kern(i):
            a[i] = a[i] * "2"
        h.parallel_for(sycl.range(8), kern)
    q.submit(cg)
'''


def test_a_scripts_compile_error_shows_two_frames(kq: sycl.queue, tmp_path: Path) -> None:
    """A plain script's stderr, word for word but for the compiler's own first line."""
    script = tmp_path / "user.py"
    script.write_text(SCRIPT)
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    r = subprocess.run([sys.executable, str(script), kq.get_device().get_info(
        sycl.info.device.name)], capture_output=True, text=True, timeout=300, env=env,
        cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    cause, _, rest = r.stderr.partition("\n\nThe above exception was the direct cause of the "
                                        "following exception:\n\n")
    assert cause == f"pysycl_numba.errors.CompilerDiagnostic: {DIAGNOSTIC}"
    queue_py = ROOT / QUEUE_PY
    raise_line = next(ln.strip() for ln in queue_py.read_text().splitlines()
                      if ln.strip().startswith("raise user_frames(e)"))
    assert [ln for ln in rest.splitlines() if not set(ln.strip()) <= {"^"}] == [
        "Traceback (most recent call last):",
        f'  File "{script}", line 16, in <module>',
        "    q.submit(cg)",
        f'  File "{queue_py}", line {_line_of(queue_py, raise_line)}, in submit',
        f"    {raise_line}",
        "pysycl._core.exceptions.kernel_compile_error: [errc.kernel] cannot compile kernel "
        f"'cg.<locals>.kern' (defined at {script}:13): {script}:14: strings cannot be used in "
        "kernels",
        '    a[i] = a[i] * "2"'], r.stderr


def _line_of(path: Path, text: str) -> int:
    """The first line of ``path`` whose text (stripped) is ``text``."""
    return next(n for n, ln in enumerate(path.read_text().splitlines(), 1) if ln.strip() == text)


USER_TEST = '''
    import numpy as np
    import pysycl as sycl


    def test_kernel():
        x = np.arange(8, dtype=np.float32)
        with sycl.buffer(x) as X:
            def cg(h):
                a = X.get_access(h, sycl.access_mode.read_write)

                def kern(i):
                    a[i / 2] = 1.0
                h.parallel_for(sycl.range(8), kern)
            sycl.queue().submit(cg)
'''


@pytest.mark.slow
def test_under_pytest_a_compile_error_shows_the_users_test_only(tmp_path: Path) -> None:
    r = run_pytest(tmp_path, USER_TEST)
    assert r.returncode == 1, r.stdout + r.stderr
    report = re.split(r"^=+ ", r.stdout.partition(" test_kernel ___")[2], flags=re.M)[0]
    lines = [ln for ln in report.splitlines() if ln.strip("_ ")]
    assert f"{os.sep}pysycl{os.sep}" not in report and "site-packages" not in report, report
    user = tmp_path / "test_user.py"
    assert lines == [
        f"pysycl_numba.errors.CompilerDiagnostic: {DIAGNOSTIC}",
        "The above exception was the direct cause of the following exception:",
        "    def test_kernel():",
        "        x = np.arange(8, dtype=np.float32)",
        "        with sycl.buffer(x) as X:",
        "            def cg(h):",
        "                a = X.get_access(h, sycl.access_mode.read_write)",
        "                def kern(i):",
        "                    a[i / 2] = 1.0",
        "                h.parallel_for(sycl.range(8), kern)",
        ">           sycl.queue().submit(cg)",
        "E           pysycl._core.exceptions.kernel_compile_error: [errc.kernel] cannot compile "
        f"kernel 'test_kernel.<locals>.cg.<locals>.kern' (defined at {user}:12): {user}:13: "
        "an index must be an integer, not a float64 -- use i // 2 (integer division; / gives "
        "a float in Python)",
        "E               a[i / 2] = 1.0",
        "test_user.py:15: kernel_compile_error"], report


BUNDLE_SCRIPT = '''\
import sys
import traceback

import numpy as np
import pysycl as sycl

dev = next(d for d in sycl.device.get_devices() if d.get_info(sycl.info.device.name) == sys.argv[1])
def fill(c):
    return lambda i: c.__setitem__(i, [1.0][0])
kid = sycl.ext.declare_kernel(fill, kernel_name="fill", index_space=sycl.range(1), captures={
    "c": sycl.ext.accessor_type(np.float32, 1, sycl.access_mode.write)})
try:
    sycl.get_kernel_bundle(sycl.context(dev), [dev], [kid], state=sycl.bundle_state.input)
except sycl.kernel_compile_error as e:
    for f in traceback.extract_tb(e.__traceback__):
        print(f.filename, f.name)
'''


def test_a_bundles_compile_error_shows_no_compiler_frames(kq: sycl.queue, tmp_path: Path) -> None:
    """In a fresh program: a declared kernel is every later bundle's."""
    script = tmp_path / "bundle.py"
    script.write_text(BUNDLE_SCRIPT)
    env = {**os.environ, "PYSYCL_CACHE_DIR": str(tmp_path / "cache"),
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH"))
                                         if p)}
    r = subprocess.run([sys.executable, str(script), kq.get_device().get_info(
        sycl.info.device.name)], capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    # the user's line, the decorator that times first-time work, the public function
    assert r.stdout.splitlines() == [f"{script} <module>", f"{contextlib.__file__} inner",
                                     f"{ROOT / 'pysycl' / '_bundles' / 'ops.py'} "
                                     "get_kernel_bundle"], r.stdout
