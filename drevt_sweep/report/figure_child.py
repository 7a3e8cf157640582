"""Figures drawn in a forked child while this process does something else: a single run's
while it writes its outputs, the report's while it builds the report's other parts
(``html._Embedder``).

After its seeds, a single run (no ``-m``) did one thing after the other on one core: outputs
(~0.6 s), figures (~1.5 s of CPU: three constrained-layout PNGs), the wait for its runs, the
summary -- while the second core, the workers' until then, idled (issue 23, 100 seeds of one
configuration). Drawing the figures in a loky worker was tried and was slower: the worker had to
import pandas and matplotlib first (benchmarks/RESULTS.md, issue 16). A child forked from the run
has them already (imported while the seeds ran, :func:`import_in_background`) and has the kept
seed's schedule in its memory: nothing to send, nothing to import. It writes the PNGs and sends
back their paths; the parent waits for it before it logs them. Same code, same data: the same
files as drawn in-process. Where ``fork`` is missing or fails, the figures are drawn in-process,
as before; an interrupt ends the child.
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path
from typing import Callable


def import_in_background() -> threading.Thread:
    """Import the figures' modules (matplotlib, pyplot; ~0.4 s of CPU) while the seeds run and
    this process only waits for them. Join before forking."""
    def load() -> None:
        try:
            from . import figures  # noqa: F401
        except Exception:  # noqa: BLE001 - imported again, and reported, where they are drawn
            pass

    thread = threading.Thread(target=load, name="drevt-import-figures", daemon=True)
    thread.start()
    return thread


class FiguresInChild:
    """``draw()`` (returns the PNG paths) run in a forked child; :meth:`result` waits for it."""

    def __init__(self, pid: int, pipe: int) -> None:
        self.pid, self.pipe = pid, pipe

    @classmethod
    def start(cls, draw: Callable[[], list[Path]]) -> "FiguresInChild | None":
        """The child drawing, or None when this platform cannot fork (draw in-process then)."""
        if not hasattr(os, "fork"):
            return None
        read, write = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read)
            os.close(write)
            return None
        if pid == 0:  # the child: draw, answer, and leave without running the parent's exit code
            os.close(read)
            try:
                for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
                    signal.signal(signum, signal.SIG_DFL)  # an interrupt ends it at once
                cpu = time.process_time()
                paths = draw()
                answer = {"paths": [str(p) for p in paths], "cpu": time.process_time() - cpu}
            except BaseException as exc:  # noqa: BLE001 - told to the parent, which says it
                answer = {"error": f"{type(exc).__name__}: {exc}".strip()}
            try:
                data = json.dumps(answer).encode()
                while data:
                    data = data[os.write(write, data):]
            finally:
                os._exit(0)
        os.close(write)
        return cls(pid, read)

    def kill(self) -> None:
        """End the child (no longer wanted) and reap it."""
        try:
            os.close(self.pipe)
        except OSError:
            pass
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except OSError:
            pass

    def result(self, timeout: float | None = None) -> tuple[list[Path], float | None]:
        """``(paths, CPU seconds of the drawing)``; raises ``RuntimeError`` with the child's
        error, or when it has not answered in ``timeout`` s (it is ended then: a child forked
        while another thread held a lock it needs would wait for ever). The caller warns or
        draws in-process: a figure is not worth a failed configuration."""
        import select

        deadline = None if timeout is None else time.monotonic() + timeout
        try:
            with os.fdopen(self.pipe, "rb") as pipe:
                chunks = []
                while True:
                    left = None if deadline is None else max(0.0, deadline - time.monotonic())
                    if not select.select([pipe], [], [], left)[0]:
                        raise TimeoutError
                    chunk = os.read(pipe.fileno(), 65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
                data = b"".join(chunks)
            os.waitpid(self.pid, 0)
        except BaseException as exc:  # an interrupt while waiting, or no answer: the child goes too
            try:
                os.kill(self.pid, signal.SIGKILL)
                os.waitpid(self.pid, 0)
            except OSError:
                pass
            if isinstance(exc, TimeoutError):
                raise RuntimeError(f"the process drawing them did not answer in {timeout:g} s") from None
            raise
        try:
            answer = json.loads(data)
        except ValueError:
            raise RuntimeError("the process drawing them ended without an answer") from None
        if "error" in answer:
            raise RuntimeError(answer["error"])
        return [Path(p) for p in answer["paths"]], answer.get("cpu")
