"""One configuration run over many seeds: the part of a sweep that runs in worker processes.

This module knows nothing of Hydra or MLflow (workers never import them): it takes an
already-parsed job table and a plain ``RunSpec``, and returns metrics per seed. The results
for a seed depend only on the spec, the trace and the seed, never on which worker ran it,
how many there were, or in which order they finished.
"""

from __future__ import annotations

import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from ..sim import kernel
from ..errors import DrevtError
from ..jobs import JobTable
from ..sim.machine import Machine, slurm_job_settings
from ..sim.metrics import compute_metrics
from ..sim.partitioned import replay_machine, simulate_machine
from ..sim.runtime import RunTimeModel, draw_run_times, is_stochastic
from ..sim.schedule import Schedule
from ..sim.workload import WorkloadSpec, apply_workload


@dataclass(frozen=True)
class RunSpec:
    """Everything that decides a seed's schedule, apart from the trace and the seed."""

    total_nodes: int
    priority: str = "fcfs"
    backfill: str = "easy"
    compression: str = "compress_first"  # conservative backfilling's compression order
    replay: bool = False
    run_time: RunTimeModel = field(default_factory=RunTimeModel)
    enforce_limits: bool = True
    workload: WorkloadSpec = field(default_factory=WorkloadSpec)
    machine: Machine | None = None  # partitions (issue 14); None: one pool of total_nodes
    estimate: str = "user"
    backfill_order: str = "fcfs"
    estimate_refresh: str = "submit"  # when user_history predicts a waiting job (sim.estimates)
    priority_params: dict | None = field(default=None, hash=False)  # a dynamic priority's
    backfill_params: dict | None = field(default=None, hash=False)  # backfill 'slurm''s settings
    limits: object = field(default=None, hash=False)  # Slurm associations/QOS (trace.associations)

    @property
    def stochastic(self) -> bool:
        """Whether seeds differ: random run times, or a seeded workload transform (shaking)."""
        if self.replay:
            return self.workload.stochastic
        return is_stochastic(self.run_time) or self.workload.stochastic


@dataclass
class SeedResult:
    """What one seed produced: metrics, or the error that stopped it."""

    seed: int
    metrics: dict[str, float] = field(default_factory=dict)
    schedule: Schedule | None = None  # kept for one seed, for its schedule file and figures
    jobs: JobTable | None = None  # the (transformed) jobs that schedule is aligned with
    error: str | None = None
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error is None


def seeds_for(spec: RunSpec, first_seed: int, replicates: int) -> list[int]:
    """Deterministic configurations need a single replicate: more would only repeat it."""
    return [first_seed + i for i in range(replicates if spec.stochastic else 1)]


def simulate_seed(jobs: JobTable, spec: RunSpec, seed: int) -> tuple[JobTable, Schedule]:
    """The (transformed) jobs and their schedule for one seed; raises DrevtError on bad input.

    The workload transform runs per seed because input shaking depends on the seed; it is
    vectorised and costs milliseconds."""
    capacity = None
    if not spec.workload.is_identity:
        jobs, capacity, _ = apply_workload(jobs, spec.workload, seed)
    machine = spec.machine or Machine.single_pool(spec.total_nodes)
    if spec.replay:
        return jobs, replay_machine(jobs, machine)
    factors = (spec.priority_params or {}).get("partition_priority")
    jobs = slurm_job_settings(jobs, machine, factors)  # before run times: a partition's DefaultTime
    run_time = draw_run_times(jobs, spec.run_time, seed, enforce_limits=spec.enforce_limits)
    schedule = simulate_machine(
        jobs,
        run_time,
        machine,
        priority=spec.priority,
        backfill=spec.backfill,
        enforce_limits=spec.enforce_limits,
        capacity=capacity,
        estimate=spec.estimate,
        backfill_order=spec.backfill_order,
        estimate_refresh=spec.estimate_refresh,
        priority_params=spec.priority_params,
        compression=spec.compression,
        backfill_params=spec.backfill_params,
        limits=spec.limits,
    )
    return jobs, schedule


def run_seed(
    jobs: JobTable, spec: RunSpec, seed: int, keep_schedule: bool = False, runs_here: int = 1
) -> SeedResult:
    """Run one seed, turning any failure into a result so that the other seeds go on.

    ``runs_here`` is about how many seeds this process will run: with many, the compiled
    kernel is loaded at once rather than after a few slow reference runs (same results)."""
    started = time.perf_counter()
    if runs_here > 1 and not spec.replay:
        extended = spec.estimate != "user" or spec.backfill_order != "fcfs" or spec.priority in (
            "multifactor", "wfp3", "unicef")  # the compiled kernel's _extended loop
        kernel.prepare("extended" if extended else spec.backfill, len(jobs), runs_here)
    try:
        seed_jobs, schedule = simulate_seed(jobs, spec, seed)
        metrics = compute_metrics(seed_jobs, schedule)
    except DrevtError as exc:
        return SeedResult(seed, error=str(exc), seconds=time.perf_counter() - started)
    except Exception as exc:  # a bug, not bad input: keep the traceback for the report
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return SeedResult(
            seed,
            error=f"internal error: {detail}\n{traceback.format_exc()}",
            seconds=time.perf_counter() - started,
        )
    return SeedResult(
        seed,
        metrics=metrics,
        schedule=schedule if keep_schedule else None,
        jobs=seed_jobs if keep_schedule else None,
        seconds=time.perf_counter() - started,
    )


class Progress:
    """Seeds done / total, elapsed and rate on a terminal; nothing at all in CI logs."""

    def __init__(self, total: int, label: str, enabled: bool = True, stream=None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 1 and getattr(self.stream, "isatty", lambda: False)()
        self.total, self.label, self.done = total, label, 0
        self.started = time.perf_counter()

    def advance(self) -> None:
        self.done += 1
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.started
        rate = self.done / elapsed if elapsed > 0 else math.inf
        self.stream.write(
            f"\r{self.label}: seeds {self.done}/{self.total} | {elapsed:6.1f} s | {rate:5.2f} seeds/s"
        )
        if self.done == self.total:
            self.stream.write("\n")
        self.stream.flush()


REMOTE_BACKENDS = ("dask", "ray")


def run_seeds(
    jobs: JobTable,
    spec: RunSpec,
    seeds: list[int],
    *,
    n_jobs: int = -1,
    backend: str = "loky",
    keep_schedule_of: int | None = None,
    progress: Progress | None = None,
    backend_options: Mapping[str, object] | None = None,
    stop_if: Callable[[], None] | None = None,
) -> list[SeedResult]:
    """Run every seed, in parallel where asked; results come back sorted by seed.

    ``backend`` is joblib's: ``loky``/``threading`` on this machine, ``sequential`` in this
    process, ``dask`` or ``ray`` on a cluster, whose address is ``backend_options["address"]``
    (null: a LocalCluster / local Ray instance of ``n_jobs`` workers). ``n_jobs`` counts local
    workers; a cluster at an address decides its own size. The trace goes to a cluster once
    (broadcast), not once per seed. A seed's result does not depend on the backend.
    ``stop_if`` is called before each seed (each chunk of seeds, on workers) is handed out;
    whatever it raises stops handing out more, and is raised once the seeds already running
    have finished (the sweep's tracking store failing while the seeds run). Abandoning
    running tasks instead leaves loky's queue thread to crash on the cancelled ones.
    """
    from joblib import Parallel, delayed, parallel_config

    from .backends import local_workers

    progress = progress or Progress(len(seeds), "run", enabled=False)
    address = (backend_options or {}).get("address")
    remote = backend in REMOTE_BACKENDS and address is not None
    if not remote:  # what joblib would make of it (-2 on 2 cores: one), said once if odd
        n_jobs = local_workers(n_jobs)
    if backend == "sequential" or (not remote and (n_jobs == 1 or len(seeds) <= 1)):
        results = []
        for seed in seeds:
            results.append(run_seed(jobs, spec, seed, seed == keep_schedule_of, len(seeds)))
            progress.advance()
            if stop_if is not None:
                stop_if()
        return sorted(results, key=lambda r: r.seed)

    return_as = "generator_unordered"
    release = None
    if backend == "dask":
        from .backends import dask_client

        client = dask_client(address, n_jobs)
        # Once to every worker; each seed's task carries the future (a key), not the data.
        jobs_future = client.scatter(jobs, broadcast=True, hash=False)
        release = jobs_future.release  # the trace leaves the workers' memory afterwards
        config = parallel_config(backend="dask", client=client)
        n_jobs = -1  # the cluster's size
        tasks = (delayed(run_seed)(jobs_future, spec, seed, seed == keep_schedule_of)
                 for seed in seeds)
    elif backend == "ray":
        from .backends import ray_ready

        ray = ray_ready(address, n_jobs)
        # Once into the object store (freed by reference counting when this call returns);
        # each task gets the reference, and a node's workers share one copy.
        jobs_ref = ray.put(jobs)
        config = parallel_config(backend="ray")
        n_jobs = -1
        return_as = "list"  # Ray's joblib backend returns nothing before the end
        tasks = (delayed(_run_seed_from_object_store)(jobs_ref, spec, seed, seed == keep_schedule_of)
                 for seed in seeds)
    else:
        # Seeds go in a few chunks per worker: the trace is pickled once per chunk, not once
        # per seed (its columns are too small for joblib's memory mapping to kick in).
        config = parallel_config(backend=backend)
        workers = n_jobs
        runs_here = -(-len(seeds) // workers)  # seeds per worker, about
        chunks = [seeds[i::workers * CHUNKS_PER_WORKER] for i in range(workers * CHUNKS_PER_WORKER)]
        tasks = (delayed(_run_chunk)(jobs, spec, chunk, keep_schedule_of, runs_here)
                 for chunk in chunks if chunk)
    results = []
    stopped: list[BaseException] = []
    try:
        with config:
            for result in Parallel(n_jobs=n_jobs, return_as=return_as)(
                    _until_stopped(tasks, stop_if, stopped)):
                for one in result if isinstance(result, list) else [result]:
                    results.append(one)
                    progress.advance()
    finally:
        if release is not None:
            release()
    if stopped:
        raise stopped[0]
    return sorted(results, key=lambda r: r.seed)


def _until_stopped(tasks, stop_if: Callable[[], None] | None, stopped: list):
    """``tasks`` until ``stop_if`` raises (what it raised goes into ``stopped``)."""
    for task in tasks:
        if stop_if is not None:
            try:
                stop_if()
            except Exception as exc:  # noqa: BLE001 - re-raised by run_seeds
                stopped.append(exc)
                return
        yield task


def start_workers(n_jobs: int, backend: str = "loky", backfill: str | None = None, after=None,
                  work=True):
    """Get the processes that will run the seeds ready in the background, so that their
    start-up overlaps what the caller does meanwhile (opening the tracking store, reading the
    trace): start joblib's reusable local workers and load the compiled kernel for
    ``backfill`` in each, or, when the seeds will run in this process (``n_jobs=1``,
    ``sequential``, ``threading``), load it here. Returns a thread to join before
    ``run_seeds``, or ``None`` when there is nothing to prepare (a cluster backend).
    ``after``: a thread that started them earlier (``app``'s start before Hydra composes),
    joined first so that two threads never drive the pool at once.

    ``work`` says whether to load the kernel: ``True`` (the caller knows it will pay),
    ``False`` (start the workers and import the simulator only: ``app``'s start before the
    trace is known), or a ``concurrent.futures.Future`` the caller resolves once it has read
    the trace, to ``(jobs, runs)`` -- the jobs of one simulation and about how many each worker
    will run -- or to ``None`` when none will. The workers start at once and load the kernel
    only if those runs pay for it (``kernel.pays_off``): a sweep over a trace of a few dozen
    jobs runs on the reference engine, and loading numba in its two workers was 1.4 of its
    4.8 s of CPU (measured). The seeds decide again for themselves (``run_seed``), so this only
    moves work earlier, never changes a result."""
    import threading

    from .backends import local_workers

    if backend in REMOTE_BACKENDS:
        return None
    # One worker (n_jobs=1, or -2 on 2 cores) runs in this process: no pool to warm, and no
    # thread left starting one while the interpreter exits.
    n_jobs = local_workers(n_jobs)
    in_process = n_jobs == 1 or backend in ("sequential", "threading")
    if in_process and (backfill is None or work is False):
        return None

    def wanted() -> bool:
        """Whether to load the kernel (waits for the caller's ``work``)."""
        if isinstance(work, bool):
            return work
        told = work.result()
        return told is not None and kernel.pays_off(backfill or "none", *told)

    def warm() -> None:
        if after is not None:
            after.join()
        try:
            if in_process:
                if wanted():
                    kernel.prepare(backfill)
                return
            if not isinstance(work, bool):  # the processes start while the caller reads the trace
                _warm_pool(n_jobs, backend, backfill, False)
            if wanted():
                _warm_pool(n_jobs, backend, backfill, True)
        except Exception:  # noqa: BLE001 - only an optimisation; run_seeds reports real failures
            pass

    thread = threading.Thread(target=warm, name="drevt-start-workers", daemon=True)
    thread.start()
    return thread


def _warm_pool(n_jobs: int, backend: str, backfill: str | None, load_kernel: bool) -> None:
    """Start joblib's ``n_jobs`` reusable workers (a no-op for those running) and have each
    import the simulator and, with ``load_kernel``, load the kernel for ``backfill``."""
    from joblib import Parallel, delayed

    # A worker that is already warm finishes its task at once and may take another
    # worker's too: try again until every process has been seen (a few at most).
    warmed: set[int] = set()
    for _ in range(3):
        warmed.update(Parallel(n_jobs=n_jobs, backend=backend)(
            delayed(_warm_worker)(backfill, load_kernel) for _ in range(n_jobs)))
        if len(warmed) >= n_jobs:
            break


def _warm_worker(backfill: str | None, load_kernel: bool = True) -> int:
    """In a worker process: load the kernel (``load_kernel``) with the cyclic garbage collector
    off (a fifth less CPU for the imports, measured), then freeze what survived so that the
    seeds' collections skip it. Importing this module imported the simulator."""
    import gc

    gc.disable()
    try:
        if load_kernel:
            kernel.prepare(backfill)
    finally:
        gc.freeze()
        gc.enable()
    return os.getpid()


CHUNKS_PER_WORKER = 4  # enough to balance uneven seeds, few enough to ship the trace rarely


def _run_chunk(jobs: JobTable, spec: RunSpec, seeds: list[int], keep_schedule_of: int | None,
               runs_here: int) -> list[SeedResult]:
    return [run_seed(jobs, spec, seed, seed == keep_schedule_of, runs_here) for seed in seeds]


def _run_seed_from_object_store(jobs_ref, spec: RunSpec, seed: int, keep_schedule: bool) -> SeedResult:
    """A Ray task: fetch the trace from the node's object store (shared by the node's
    workers), then run the seed as anywhere else."""
    import ray

    return run_seed(ray.get(jobs_ref), spec, seed, keep_schedule)


def aggregate(results: list[SeedResult], stochastic: bool = True) -> dict[str, float]:
    """Mean (under the metric's own name), standard deviation and 95% confidence half-width
    (Student t) over the seeds. One seed has no spread to state, so it gets the means only
    (a deterministic configuration's spread is none; a stochastic one's is unknown)."""
    ok = [r for r in results if r.ok]
    if not ok:
        return {}
    names = list(ok[0].metrics)
    table = np.array([[r.metrics.get(name, math.nan) for name in names] for r in ok], dtype=float)
    n = table.shape[0]
    mean = table.mean(axis=0)
    if n == 1:
        return {name: float(mean[i]) for i, name in enumerate(names)}
    from scipy.special import stdtrit  # scipy.stats.t.ppf's, without its 0.6 s import (here: seeds to spread)

    std = table.std(axis=0, ddof=1)
    half = stdtrit(n - 1, 0.975) * std / math.sqrt(n)
    out: dict[str, float] = {}
    for i, name in enumerate(names):
        out[name] = float(mean[i])
        out[f"{name}_std"] = float(std[i])
        out[f"{name}_ci95"] = float(half[i])
    return out


# ---------------------------------------------------------------- many configurations at once
@dataclass(frozen=True)
class SeedTask:
    """One (configuration, seed) pair of a sweep's flat task list: ``key`` names the
    configuration for the caller, ``trace`` which of the caller's job tables it runs on."""

    key: int
    trace: int
    spec: RunSpec
    seed: int
    keep_schedule: bool = False


def task_chunks(tasks: list[SeedTask], workers: int, chunk_size: int | None = None) -> list[list[SeedTask]]:
    """Consecutive tasks on the same trace, ``chunk_size`` at most (default: a few chunks per
    worker, 64 tasks at most, so that the trace is pickled once per chunk, not per seed)."""
    if chunk_size is None:
        chunk_size = max(1, min(64, -(-len(tasks) // (workers * CHUNKS_PER_WORKER))))
    chunks: list[list[SeedTask]] = []
    for task in tasks:
        if chunks and len(chunks[-1]) < chunk_size and chunks[-1][-1].trace == task.trace:
            chunks[-1].append(task)
        else:
            chunks.append([task])
    return chunks


def run_tasks(
    traces: list[JobTable],
    tasks: list[SeedTask],
    *,
    n_jobs: int = -1,
    backend: str = "loky",
    chunk_size: int | None = None,
    progress: Progress | None = None,
    backend_options: Mapping[str, object] | None = None,
) -> dict[int, list[SeedResult]]:
    """Every task, in chunks over the back-end: each configuration's results (by ``key``),
    sorted by seed. A seed's result is :func:`run_seed`'s, whatever the chunking, the number of
    workers or the back-end; ``run_seeds`` is the one-configuration case."""
    from joblib import Parallel, delayed, parallel_config

    from .backends import local_workers

    progress = progress or Progress(len(tasks), "run", enabled=False)
    address = (backend_options or {}).get("address")
    remote = backend in REMOTE_BACKENDS
    workers = local_workers(n_jobs)
    if remote and address:  # a standing cluster: chunks for its size, not this machine's
        from .backends import cluster_workers

        workers = cluster_workers(backend, address, n_jobs)
    out: dict[int, list[SeedResult]] = {}

    def collect(pairs) -> None:
        for key, result in pairs:
            out.setdefault(key, []).append(result)
            progress.advance()

    if backend == "sequential" or (not (remote and address) and (workers == 1 or len(tasks) <= 1)):
        for chunk in task_chunks(tasks, 1, chunk_size):
            collect(_run_task_chunk(traces[chunk[0].trace], chunk, len(tasks)))
    else:
        chunks = task_chunks(tasks, workers, chunk_size)
        runs_here = -(-len(tasks) // workers)
        if remote:  # plain cluster tasks, the trace shipped once (backends.run_chunks)
            from .backends import run_chunks

            for pairs in run_chunks(backend, address, n_jobs, traces, chunks, runs_here,
                                    _run_task_chunk):
                collect(pairs)
        else:
            calls = (delayed(_run_task_chunk)(traces[c[0].trace], c, runs_here) for c in chunks)
            with parallel_config(backend=backend):
                for pairs in Parallel(n_jobs=n_jobs, return_as="generator_unordered")(calls):
                    collect(pairs)
    return {key: sorted(results, key=lambda r: r.seed) for key, results in out.items()}


def _run_task_chunk(jobs: JobTable, chunk: list[SeedTask], runs_here: int) -> list[tuple[int, SeedResult]]:
    return [(t.key, run_seed(jobs, t.spec, t.seed, t.keep_schedule, runs_here)) for t in chunk]

