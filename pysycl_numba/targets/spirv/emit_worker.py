"""SPIR-V emission in a helper process, so LLVM can never take the user's process down.

LLVM 22's SPIR-V backend keeps process-wide state that goes bad: after a few
dozen modules it intermittently numbers two definitions with the same result
id, and from then on every emission in that process does it again (a fresh
``TargetMachine`` or ``LLVMContext`` does not help), and some IR makes it
``abort()`` the whole process (DESIGN.md, "Verified facts"). A Python kernel
mistake must not kill a Jupyter kernel, and a long-lived process must keep
compiling valid modules. So the final step, optimised LLVM IR text → SPIR-V,
runs in a small worker process (the script ``_emit_server.py``) that imports
only ``llvmlite.binding``:

* the worker is started when the compiler is imported, so its start-up
  overlaps Numba's typing and lowering of the first kernel;
* a module with duplicate result ids makes the client replace the worker with
  a fresh process and emit again; the worker is also recycled after
  :data:`RECYCLE_AFTER` modules, before the bad state usually appears;
* a worker that dies (an LLVM abort) is restarted once; if the same IR kills
  it again, the user gets ``errc.build`` naming the kernel instead of a crash.

Protocol: length-prefixed pickles over the worker's stdin/stdout.
"""

from __future__ import annotations

import atexit
import logging
import os
import select
import subprocess
import sys
import threading

from pysycl_numba.targets.spirv._emit_server import _recv, _send  # one wire format for both ends

_log = logging.getLogger("pysycl_numba.emit_worker")

RECYCLE_AFTER = 24
_ATTEMPTS = 4


class EmitCrash(RuntimeError):  # noqa: N818 - a crash, named as such
    """The worker died while emitting (LLVM aborted)."""


_SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_emit_server.py")


# ----------------------------------------------------------------- the client
class _Client:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._served = 0
        self.restarts = 0

    def start(self) -> None:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._spawn()

    def _spawn(self) -> None:
        # Run the server as a script: it must not import this package (whose
        # import starts a worker) nor Numba; it needs llvmlite and spirv_check only.
        # run_path, not `python script.py`: the script's folder must not go on
        # sys.path (this package's types.py would shadow the stdlib's).
        self._proc = subprocess.Popen(
            [sys.executable, "-c",
             f"import runpy; runpy.run_path({_SERVER!r}, run_name='__main__')"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            # Its own session: a Ctrl-C or Jupyter's interrupt/shutdown signals the
            # user's process group, and must not print a worker traceback. The
            # worker still ends with its client: its stdin closes.
            start_new_session=True,
        )
        self._served = 0

    def _stop(self, kill: bool = False) -> None:
        p, self._proc = self._proc, None
        if p is None:
            return
        try:
            if kill:
                p.kill()
            if p.stdin:
                p.stdin.close()
            if p.stdout and os.name == "posix":  # its end of the pipe closes as it exits:
                select.select([p.stdout], [], [], 5)  # seen at once (wait's polls lag 8-16 ms)
            p.wait(timeout=5)
        except Exception:
            p.kill()
        finally:
            if p.stdout:
                p.stdout.close()

    def emit(self, ir: str, triple: str, options: tuple[str, ...] = (),
             ptx: dict[str, str] | None = None, flags: tuple[str, ...] = ()) -> bytes:
        """SPIR-V for ``ir`` (PTX with ``ptx={"cpu", "entry", "libdevice"}``);
        raises EmitCrash or RuntimeError on failure. ``options``: LLVM options the worker
        keeps from then on; ``flags``: boolean LLVM options on for this emission only."""
        with self._lock:
            crashes = 0
            last = ""
            for _ in range(_ATTEMPTS):
                if self._proc is None or self._proc.poll() is not None \
                        or self._served >= RECYCLE_AFTER:
                    self._stop()
                    self._spawn()
                p = self._proc
                assert p is not None and p.stdin is not None and p.stdout is not None
                try:
                    req = {"ir": ir, "triple": triple, "options": options, "flags": flags}
                    if ptx is not None:
                        req["ptx"] = ptx
                    _send(p.stdin, req)
                    kind, payload = _recv(p.stdout)
                except BaseException as e:
                    if not isinstance(e, (EOFError, OSError)):
                        # Interrupted mid-request (KeyboardInterrupt): the worker's answer
                        # would be read by the next request; replace the worker.
                        self._stop(kill=True)
                        raise
                    crashes += 1
                    self.restarts += 1
                    self._stop()
                    if crashes >= 2:
                        raise EmitCrash("LLVM's SPIR-V backend aborted twice on this kernel's "
                                        "IR") from None
                    continue
                self._served += 1
                if kind == "ok":
                    return payload  # type: ignore[no-any-return]
                if kind == "dup":
                    # The worker's backend state went bad: replace the worker.
                    last = f"duplicate result ids {payload[:5]}"
                    _log.debug("emit worker produced %s; restarting it", last)
                    self.restarts += 1
                    self._stop()
                    continue
                raise RuntimeError(payload)
            raise RuntimeError(f"no valid SPIR-V after {_ATTEMPTS} attempts ({last})")

    def close(self) -> None:
        with self._lock:
            self._stop()


client = _Client()
atexit.register(client.close)

