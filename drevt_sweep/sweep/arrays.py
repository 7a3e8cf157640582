"""The sweep engine's task chunks as submitit jobs: Slurm job arrays, or local processes.

With ``hydra/launcher=submitit_slurm`` (or our ``slurm`` preset, or ``submitit_local``) Hydra's
launcher would make every configuration a job of its own: thousands of array tasks, each paying
Python's start-up, Hydra's composition and the store's opening for one cheap simulation. Here the
engine keeps its path (``batch.py``: configurations composed, prepared, completed and tracked in
the submitting process) and only the (configuration, seed) tasks leave it:

- the wave's tasks are cut into chunks (``parallel.chunk_size``; by default one chunk per array
  slot, at least ``MIN_PER_CORE`` tasks per core of an array task), and each chunk is one task
  of one ``sbatch --array`` (``array_parallelism``: how many run at once);
- each trace is written once, pickled, beside submitit's files (``<sweep>/.submitit/traces``,
  which must be on a file system the nodes share, as the sweep folder already is); an array task
  reads it and runs its chunk over its own cores (``parallel.n_jobs``, -1 = the cores Slurm gave
  it: ``cpus_per_task``) with ``seeds.run_tasks``, so a seed's results are those of any other
  back-end, byte for byte;
- results come back through submitit's result files; the submitting process writes every run,
  so compute nodes never open the tracking store (the embedded sqlite file is safe again);
- an array task that fails, is cancelled (``scancel``) or runs out of time fails the seeds of its
  chunk only, each with one line (``resume=true`` runs them again); an interrupt of the sweep
  (Ctrl-C, SIGTERM, SIGHUP) cancels the whole array (one ``scancel``), or ends the local
  processes, before the engine marks the wave's runs KILLED: nothing is left RUNNING.

``submitit_local`` runs the chunks as local processes, at most ``parallel.n_jobs`` at a time,
each chunk's seeds in turn (one level of process parallelism on one machine).
"""

from __future__ import annotations

import atexit
import logging
import pickle
import shutil
import subprocess
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .seeds import SeedResult, SeedTask, run_tasks, task_chunks

log = logging.getLogger("drevt_sweep")

MIN_PER_CORE = 4  # a Slurm array task's chunk: at least this many tasks per core it was given
WAVE = 1024  # configurations per wave (per Slurm array submitted); batch.WAVE elsewhere
POLL_SECONDS = {"local": 0.2, "slurm": 5.0}  # how often unfinished jobs are looked at

# Keys of hydra.launcher that every submitit executor understands (the rest are Slurm's own).
_COMMON = {"timeout_min", "cpus_per_task", "gpus_per_node", "mem_gb", "name", "stderr_to_stdout"}
_NOT_PARAMETERS = {"_target_", "submitit_folder", "max_num_timeout", "nodes", "tasks_per_node",
                   "array_parallelism"}


def cluster_of(config: DictConfig) -> str | None:
    """``slurm`` or ``local`` when the launcher is submitit's (``hydra/launcher=submitit_slurm``,
    ``slurm`` or ``submitit_local``), else None."""
    target = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
    if "hydra_submitit_launcher" not in target:
        return None
    return "slurm" if target.endswith("SlurmLauncher") else "local"


def array_wave_size(config: DictConfig, default: int) -> int:
    """Configurations per wave: bigger for Slurm job arrays (one ``sbatch`` per wave, each
    waiting in the queue), the engine's default otherwise."""
    return WAVE if cluster_of(config) == "slurm" else default


class ArrayRunner:
    """Runs a wave's tasks as submitit jobs (see the module); one per sweep."""

    def __init__(self, config: DictConfig) -> None:
        self.cluster = cluster_of(config)
        launcher = OmegaConf.to_container(config.hydra.launcher, resolve=True)
        self.launcher = launcher
        self.sweep_dir = Path(str(config.hydra.sweep.dir))
        self.folder = str(launcher.get("submitit_folder") or self.sweep_dir / ".submitit" / "%j")
        self.n_jobs = int(config.parallel.n_jobs)
        self._live: list[list] = []  # the jobs of each run() in progress (the engine's thread)
        self.chunk_size = config.parallel.chunk_size
        self.trace_dir = self.sweep_dir / ".submitit" / "traces"
        self._trace_files: dict[int, str] = {}
        self.jobs_submitted = 0
        atexit.register(shutil.rmtree, self.trace_dir, True)

    # ---------------------------------------------------------------- what runs where
    def slots(self) -> int:
        """Array tasks that run at once: ``array_parallelism`` on Slurm, ``parallel.n_jobs``
        local processes on this machine."""
        if self.cluster == "slurm":
            return max(1, int(self.launcher.get("array_parallelism") or 256))
        from .backends import local_workers

        return local_workers(self.n_jobs)

    def chunks(self, tasks: list[SeedTask]) -> list[list[SeedTask]]:
        """``parallel.chunk_size`` tasks per array task, or: one chunk per slot, and on Slurm at
        least ``MIN_PER_CORE`` tasks per core of a task (its Python start-up and kernel load
        cost seconds, a simulation often less)."""
        size = self.chunk_size
        if size is None:
            size = -(-len(tasks) // self.slots())
            if self.cluster == "slurm":
                size = max(size, MIN_PER_CORE * int(self.launcher.get("cpus_per_task") or 1))
        return task_chunks(tasks, 1, int(size))

    def executor(self):
        import submitit

        executor = submitit.AutoExecutor(folder=self.folder, cluster=self.cluster, **(
            {"slurm_max_num_timeout": int(self.launcher.get("max_num_timeout") or 0)}
            if self.cluster == "slurm" else {}))
        params = {"nodes": 1, "tasks_per_node": 1}  # one process per chunk: it fans out itself
        for key, value in self.launcher.items():
            if key in _NOT_PARAMETERS or value is None:
                continue
            if key in _COMMON:
                params[key] = value
            elif self.cluster == "slurm":
                params[f"slurm_{key}"] = value
        if self.cluster == "slurm":
            params["slurm_array_parallelism"] = self.slots()
        executor.update_parameters(**params)
        return executor

    def trace_file(self, index: int, table) -> str:
        """The trace, pickled once per sweep for every array task that runs on it."""
        if index not in self._trace_files:
            self.trace_dir.mkdir(parents=True, exist_ok=True)
            path = self.trace_dir / f"trace-{index}.pkl"
            part = path.with_suffix(".part")
            with open(part, "wb") as handle:
                pickle.dump(table, handle, protocol=pickle.HIGHEST_PROTOCOL)
            part.replace(path)
            self._trace_files[index] = str(path)
        return self._trace_files[index]

    # ---------------------------------------------------------------- running a wave
    def run(self, traces: list, tasks: list[SeedTask]) -> dict[int, list[SeedResult]]:
        """Every task, as array tasks of chunks: each configuration's results (by key), sorted
        by seed, as ``seeds.run_tasks`` returns them."""
        if not tasks:
            return {}
        chunks = self.chunks(tasks)
        inner_jobs = 1 if self.cluster == "local" else self.n_jobs
        calls = [(self.trace_file(c[0].trace, traces[c[0].trace]), c, inner_jobs) for c in chunks]
        out: dict[int, list[SeedResult]] = {}
        executor = self.executor()
        jobs: list = []
        self._live.append(jobs)
        try:
            for chunk, pairs in self._results(executor, calls, jobs):
                if pairs is None:
                    pairs = [(t.key, SeedResult(t.seed, error=chunk.error)) for t in chunk.tasks]
                for key, result in pairs:
                    out.setdefault(key, []).append(result)
        except BaseException:
            self.cancel(jobs)
            raise
        finally:
            self._live.remove(jobs)
        return {key: sorted(results, key=lambda r: r.seed) for key, results in out.items()}

    def _results(self, executor, calls: list, jobs: list):
        """``(chunk, its pairs)`` as the jobs finish; pairs None when the job did not (the
        chunk's ``error`` says why). Local processes are started ``slots()`` at a time; a Slurm
        wave is one job array."""
        waiting = list(enumerate(calls))
        running: dict = {}
        limit = len(calls) if self.cluster == "slurm" else self.slots()
        if self.cluster == "slurm":
            submitted = executor.map_array(run_array_task, *zip(*calls))
            running = {job: i for job, (i, _) in zip(submitted, waiting)}
            jobs.extend(submitted)
            waiting = []
            log.info("sweep: %d tasks in a job array of %d (%s)", sum(len(c[1]) for c in calls),
                     len(submitted), submitted[0].job_id.split("_")[0])
        poll = POLL_SECONDS[self.cluster]
        while waiting or running:
            while waiting and len(running) < limit:
                i, call = waiting.pop(0)
                job = executor.submit(run_array_task, *call)
                running[job] = i
                jobs.append(job)
            self.jobs_submitted = len(jobs)
            finished = [job for job in running if job.done()]
            if not finished:
                time.sleep(poll)
                continue
            for job in finished:
                i = running.pop(job)
                yield self._outcome(job, calls[i][1])

    def _outcome(self, job, tasks: list[SeedTask]):
        chunk = _Chunk(tasks)
        try:
            return chunk, job.result()
        except Exception as exc:  # noqa: BLE001 - failed, cancelled, timed out, node lost
            first = str(exc).strip().splitlines()
            chunk.error = (f"array task {job.job_id} ({self.cluster}) did not finish its chunk of "
                           f"{len(tasks)} tasks: {first[0] if first else type(exc).__name__}; "
                           f"its log: {getattr(job.paths, 'stderr', '')}")
            log.error("%s", chunk.error)
            return chunk, None

    def cancel_all(self) -> None:
        """End the jobs of every wave in flight: the engine runs a wave's tasks in a thread,
        which an interrupt of the sweep (in the main thread) does not reach."""
        for jobs in list(self._live):
            self.cancel(list(jobs))

    def cancel(self, jobs: list) -> None:
        """End every job of the wave: one ``scancel`` per array on Slurm; locally, SIGINT to each
        job's process, then SIGKILL to any still there after a few seconds."""
        unfinished = [job for job in jobs if not _done_quietly(job)]
        if not unfinished:
            return
        if self.cluster == "slurm":
            arrays = sorted({str(job.job_id).split("_")[0] for job in unfinished})
            try:
                subprocess.run(["scancel", *arrays], capture_output=True, timeout=60)
                log.info("sweep: cancelled job array(s) %s", " ".join(arrays))
            except (OSError, subprocess.SubprocessError) as exc:
                log.error("could not cancel job array(s) %s (scancel them): %s", " ".join(arrays), exc)
            return
        for job in unfinished:
            try:
                job.cancel(check=False)
            except Exception:  # noqa: BLE001 - already gone
                pass
        deadline = time.time() + 10
        for job in unfinished:
            process = getattr(job, "_process", None)
            if process is None:
                continue
            try:
                process.wait(timeout=max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


class _Chunk:
    def __init__(self, tasks: list[SeedTask]) -> None:
        self.tasks, self.error = tasks, ""


def _done_quietly(job) -> bool:
    try:
        return bool(job.done())
    except Exception:  # noqa: BLE001
        return False


def run_array_task(trace_file: str, chunk: list[SeedTask], n_jobs: int) -> list[tuple[int, SeedResult]]:
    """In an array task: read the chunk's trace and run its tasks over this task's cores."""
    with open(trace_file, "rb") as handle:
        table = pickle.load(handle)
    traces = {chunk[0].trace: table}
    results = run_tasks(traces, chunk, n_jobs=n_jobs, backend="loky")
    return [(key, result) for key, found in results.items() for result in found]
