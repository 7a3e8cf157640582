"""Shared fixtures (paths to the repository, the bundled trace and the public traces) and what
makes the suite run on pytest-xdist workers (``make test``: ``-n auto --dist loadgroup``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BUNDLED_KTH = REPO / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"
SHARED_TRACES = REPO.parent / "shared" / "traces"
WARM_KERNELS = Path(__file__).with_name("warm_kernels.py")


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def shared_traces() -> Path:
    """The public traces beside the repository (present for developers and CI)."""
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"public traces not found at {SHARED_TRACES}")
    return SHARED_TRACES


def pytest_configure(config):
    """Tests send Ctrl-C (SIGINT) to the programs they start, as a terminal would. A shell
    starts a background job (``make test &``, a CI step run with ``&``) with SIGINT and SIGQUIT
    ignored, every process it starts inherits that, and such a program rightly keeps ignoring
    them: restore the terminal's dispositions here (in the controller and in each xdist
    worker), so that the tests' programs start as they would from a terminal."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)


def pytest_sessionstart(session):
    """Under xdist, fill numba's on-disk cache before the workers start (``warm_kernels.py``,
    its groups in parallel): otherwise every worker compiles every kernel it needs itself, and
    on a fresh clone that is minutes of CPU paid twice. With a warm cache this takes a second or
    two. Only the controller does it (``numprocesses`` set, not a worker); ``DREVT_NO_WARM=1``
    turns it off."""
    config = session.config
    if (os.environ.get("DREVT_NO_WARM") or hasattr(config, "workerinput")
            or not getattr(config.option, "numprocesses", None)):
        return
    from warm_kernels import GROUPS

    started = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, str(WARM_KERNELS), group], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for group in GROUPS]
    failed = [out for proc in procs for out in [proc.communicate()[0]] if proc.returncode]
    # Not fatal: a kernel that did not compile here is compiled (or fails) in the test using it.
    message = f"numba kernels compiled or loaded from the cache in {time.perf_counter() - started:.0f} s"
    if failed:
        message += f"; warm_kernels.py failed:\n{failed[0][-2000:]}"
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(message)


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the marks into groups
def pytest_collection_modifyitems(config, items):
    """Keep the tests that share a module- or class-scoped fixture on one xdist worker
    (``--dist loadgroup``), so that an expensive fixture (a real sweep, a server) runs once
    rather than once per worker: each such test gets ``xdist_group(<module>)`` unless it has a
    group of its own."""
    for item in items:
        if item.get_closest_marker("xdist_group"):
            continue
        if item.module.__name__.rsplit(".", 1)[-1] in WAITING_MODULES:
            item.add_marker(pytest.mark.xdist_group("waiting"))  # (one worker waits for them all)
            continue
        defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
        if any(d.scope in ("module", "class", "package") for fixturedefs in defs.values() for d in fixturedefs):
            item.add_marker(pytest.mark.xdist_group(item.module.__name__))
    items[:] = sorted(items, key=_start_order(items))


# Modules whose tests mostly wait (a real Slurm's scheduling cycles and sleep jobs), not compute:
# one xdist group, so that one worker waits for them in turn (~6 min) while the others compute;
# started side by side, the comparisons on whole and shared nodes (~160 s each) held two of the
# three workers at once and left a core idle.
WAITING_MODULES = ("test_real_slurm", "test_real_slurm_limits", "test_real_slurm_shared")


def _start_order(items):
    """The collection order: the modules that mostly wait first (they overlap with everything
    else), then the modules holding ``slow`` end-to-end tests, then the fast ones, which fill
    the end. xdist hands out the work in this order under ``--no-loadscope-reorder`` (the
    Makefile's; by default loadgroup sends the grouped modules first, largest group first,
    which started the real-Slurm comparison -- 3 tests, 163 s of waiting -- after 17 other
    groups). A module's tests stay together and in their own order."""
    slow_modules = {item.module.__name__ for item in items if item.get_closest_marker("slow")}

    def key(item):
        name = item.module.__name__
        return 0 if name.rsplit(".", 1)[-1] in WAITING_MODULES else 1 if name in slow_modules else 2
    return key


@pytest.fixture(scope="module")
def dask_cluster():
    """A real LocalCluster: a scheduler and 2 worker processes, on 127.0.0.1."""
    distributed = pytest.importorskip("dask.distributed")
    import dask

    # Without dask's active memory manager: its ReduceReplicas policy drops a broadcast key's
    # extra copies every 2 s while no submitted task waits for them (seen in CI under load, between
    # the scatter and the first seed), and the broadcast would then not be observable.
    with dask.config.set({"distributed.scheduler.active-memory-manager.start": False}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           host="127.0.0.1", dashboard_address=None)
    # Both workers registered before any test uses them: the cluster can come back with one still
    # joining (seen under a 1-minute load of 7), and a broadcast then reaches only the first.
    cluster.wait_for_workers(2, timeout=120)
    try:
        yield cluster
    finally:
        from drevt_sweep.sweep.backends import close_dask

        close_dask()  # clients that run_seeds opened in this process
        cluster.close()


def pytest_collection_finish(session):
    """Fail loudly if ``--dist loadgroup`` cannot group (pytest 9.2 with pytest-xdist 3.8: the
    group suffix xdist writes to ``item._nodeid`` is ignored, and every module fixture then runs
    on each worker that gets one of its tests; pyproject.toml pins pytest below 9.2)."""
    config = session.config
    if not (hasattr(config, "workerinput") and config.getvalue("loadgroup")):
        return
    lost = [item.nodeid for item in session.items
            if item.get_closest_marker("xdist_group") and "@" not in item.nodeid]
    if lost:
        raise pytest.UsageError(f"--dist loadgroup did not group {len(lost)} tests (e.g. {lost[0]}): "
                                "this pytest and pytest-xdist do not work together; see pyproject.toml")
