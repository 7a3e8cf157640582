"""A pytest plugin that records each test's CPU seconds, so the suite can be sized on a shared machine.

Wall times on a machine shared with other work say more about the neighbours than about the
tests; CPU seconds do not. Each test's figure is this process's user + system time plus that of
the children it waited for (subprocess sweeps, ``drevt-sim`` runs), from ``getrusage``, measured
from the start of its setup to the end of its teardown; a module- or session-scoped fixture's cost
lands in the first test that uses it. Servers that outlive their test, or that are never waited
for, are not counted.

Use: ``PYTHONPATH=benchmarks python -m pytest -p pytest_cputime --cputime-out=cpu.json [...]``;
under pytest-xdist every worker appends its own lines. ``python benchmarks/pytest_cputime.py
cpu.json`` prints the CPU seconds per file, largest first.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict

import pytest


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_addoption(parser):
    parser.addoption("--cputime-out", default=None,
                     help="append one JSON line per test (nodeid, cpu_s, wall_s, start, worker) to this file")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    out = item.config.getoption("--cputime-out")
    if not out:
        yield
        return
    cpu0, wall0, start = _cpu_seconds(), time.perf_counter(), time.time()
    yield
    line = {"nodeid": item.nodeid, "cpu_s": round(_cpu_seconds() - cpu0, 3),
            "wall_s": round(time.perf_counter() - wall0, 3), "start": round(start, 3),
            "worker": os.environ.get("PYTEST_XDIST_WORKER", "main")}
    with open(out, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(line) + "\n")


def summarise(path: str) -> None:
    cpu: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    with open(path, encoding="utf-8") as handle:
        for raw in handle:
            line = json.loads(raw)
            name = line["nodeid"].split("::")[0]
            cpu[name] += line["cpu_s"]
            wall[name] += line["wall_s"]
            count[name] += 1
    print(f"{'file':45s} {'tests':>5s} {'cpu_s':>8s} {'wall_s':>8s}")
    for name in sorted(cpu, key=cpu.get, reverse=True):
        print(f"{name:45s} {count[name]:5d} {cpu[name]:8.1f} {wall[name]:8.1f}")
    print(f"{'total':45s} {sum(count.values()):5d} {sum(cpu.values()):8.1f} {sum(wall.values()):8.1f}")


if __name__ == "__main__":
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    summarise(sys.argv[1])
