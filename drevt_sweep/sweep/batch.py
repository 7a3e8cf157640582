"""A multirun's configurations run as one flat (configuration, seed) task list.

Hydra's basic launcher runs one configuration after the other, each as a Hydra job composed
from scratch, its seeds fanned out on their own: a sweep of deterministic configurations (one
seed each) used one core, and paid per configuration for Hydra's job set-up, its figures and
its runs (issue 23: x16-19 the cost of a hand-written loop). Here, under ``hydra/launcher=basic``
(the default), the sweeper (``hydra_plugins.drevt_sweeper``) hands the grid to :func:`sweep`:

1. the jobs are expanded with Hydra's parser and composed once per distinct choice of groups
   (``grid.py``), in waves (``FIRST_WAVE`` configurations, doubling up to ``WAVE``: the seeds
   start soon, memory stays bounded), never all at once;
2. each configuration of a wave is prepared as ``drevt-sweep`` prepares a Hydra job
   (``app.prepare_configuration``: its folder, its parent run, the trace -- read once for the
   whole sweep --, its spec and the seeds still to run; with ``resume=true`` the FINISHED seeds
   of the whole sweep are looked up in one query, and a configuration already done with the
   same inputs is skipped before it is composed: ``resume.py``);
3. the wave's seeds run as one task list, in chunks over the configured back-end
   (``seeds.run_tasks``: loky, threading, dask, ray), in a thread: meanwhile the sweep process
   prepares the next wave and completes the one before (its work overlaps the workers');
4. each configuration is completed as a Hydra job is (``app.complete_configuration``: its
   outputs, its runs, ``result.json``); figures only when ``figures`` asks for them.

Every configuration keeps the guarantees of the Hydra job path: a failure fails it alone (a
worker that dies fails the configurations of its wave: ``resume=true`` runs them again), an
interrupt marks every configuration of the waves in flight KILLED (nothing left RUNNING) and goes up, and
the results are byte-identical to the job path (``tests/test_sweep_scale.py``). Any other
launcher (joblib, submitit, slurm), a search, or a swept ``parallel.*``/``hydra.*`` key gets
the jobs one by one, as Hydra's basic sweeper would hand them out.
"""

from __future__ import annotations

import logging
import os
import time
from concurrent.futures import Future
from pathlib import Path

from omegaconf import DictConfig, OmegaConf, open_dict, read_write

from ..errors import ConfigError
from .figure_choice import figures_wanted

log = logging.getLogger("drevt_sweep")

WAVE = 256  # configurations prepared, run and completed together, at most (bounded memory)
FIRST_WAVE = 32  # the first wave's, at most: its seeds start after 32 configurations are prepared


def waves(total: int, largest: int = WAVE):
    """``(start, stop)`` of each wave: FIRST_WAVE, doubling up to ``largest`` (the first
    simulations start seconds after the command), and at most half of what is left once the
    end is near (the last wave's completion -- its outputs, its runs in the store -- is the
    one that nothing overlaps: 200 configurations were waves of 32, 64 and 104, now 32, 64,
    52, 32 and 20). Results do not depend on it: a wave's seeds are one task list whatever
    its size."""
    start, size = 0, min(FIRST_WAVE, largest)
    while start < total:
        step = min(size, max(FIRST_WAVE, -(-(total - start) // 2)))
        yield start, min(start + step, total)
        start, size = start + step, min(2 * size, largest)


def engine_applies(config: DictConfig, jobs: list[list[str]]) -> bool:
    """The task-list engine runs the sweep: Hydra's basic launcher, no search, and nothing
    swept that decides how the seeds run (``parallel.*``) or how Hydra runs a job."""
    from .arrays import cluster_of

    launcher = str(OmegaConf.select(config, "hydra.launcher._target_", default="") or "")
    if not launcher.endswith("BasicLauncher") and cluster_of(config) is None:
        return False  # (submitit's launchers: the engine's chunks become array tasks, arrays.py)
    if str(getattr(config.search.kind, "value", config.search.kind)) != "none":
        return False
    keys = {line.split("=", 1)[0].lstrip("+~") for job in jobs for line in job}
    swept = {k for k in keys if len({line for job in jobs for line in job
                                     if line.split("=", 1)[0].lstrip("+~") == k}) > 1}
    return not any(k.startswith(("parallel.", "hydra.", "hydra/")) for k in swept)


def sweep(sweeper, arguments: list[str]) -> list:
    """The sweeper's ``sweep``: Hydra's grid, run by the task-list engine where it applies."""
    from . import grid

    config = sweeper.config
    params = [f"{k}={v}" for k, v in sweeper.params.items()]
    try:
        jobs = grid.expand(params + list(arguments), sweeper.hydra_context.config_loader)
    except ConfigError as exc:
        raise SystemExit(f"drevt-sweep: error: {exc}") from None
    sweep_dir = Path(config.hydra.sweep.dir)
    sweep_dir.mkdir(parents=True, exist_ok=True)
    OmegaConf.save(config, sweep_dir / "multirun.yaml")
    if not engine_applies(config, jobs):
        from . import app

        app.store_ready()  # Hydra's launchers: before the first job (its processes open their own)
        size = sweeper.max_batch_size or len(jobs)
        returns = []
        for start in range(0, len(jobs), size):
            returns.append(sweeper.launcher.launch(jobs[start:start + size], initial_job_idx=start))
        return returns
    run_grid(sweeper, jobs)
    return []


def run_grid(sweeper, jobs: list[list[str]]) -> None:
    """Prepare, run and complete the configurations, a wave at a time (see the module)."""
    from ..garbage import fewer_collections

    with fewer_collections(freeze=True):  # (OmegaConf's trees are cycles: the default ran 6 per configuration)
        _run_grid(sweeper, jobs)


def _run_grid(sweeper, jobs: list[list[str]]) -> None:
    from hydra.core.utils import setup_globals

    from . import app, grid
    from .interpolations import cache_parses
    from .interrupts import interrupt_behind
    from .seeds import Progress

    cache_parses()  # (the same strings are resolved for every configuration)
    config = sweeper.config
    app._state["engine"] = True  # the report is built from the folder this writes
    setup_globals()
    _log_to_sweep_folder(config)
    composer = grid.composer_for(sweeper.hydra_context.config_loader, config)
    figures = figures_wanted(str(config.figures), len(jobs))
    traces = _Traces()
    tracker = app._tracker(config) if config.tracking.enabled else None
    if tracker is not None:
        app.start_sweep_run(tracker, config, Path(config.hydra.sweep.dir))
    if config.resume:
        app.store_ready()  # the finished seeds are looked up first
    finished = tracker.finished_seed_runs(None) if tracker is not None and config.resume else None
    from .first_run import compile_if_cold
    from .resume import FinishedConfigurations, ResumeKeys, record

    compile_if_cold()  # a fresh install: say so while numba compiles (the Hydra job path does it in _app)
    keys = ResumeKeys(composer)
    done = FinishedConfigurations(config, keys, finished) if finished is not None else None
    # Resuming, they start with the first wave that has a seed to run (none when all is done).
    work = Future()  # what the seeds will simulate, told once a trace is read (seeds.start_workers)
    workers, warmed = (None, False) if done is not None else (_warm_workers(config, work), True)
    total = len(jobs)
    from .arrays import ArrayRunner, array_wave_size, cluster_of

    arrays = ArrayRunner(config) if cluster_of(config) else None
    largest = array_wave_size(config, WAVE)
    progress = Progress(total, "sweep", enabled=bool(config.progress))
    log.info("sweep: %d configurations (composed once per choice of groups; figures %s)",
             total, "per configuration" if figures else "off: drevt-sweep-report draws the sweep")
    costs = {"compose": 0.0, "prepare": 0.0, "complete": 0.0, "skip": 0.0}  # this thread's CPU seconds
    skipped = [0]

    def finished_already(num: int) -> bool:
        """``resume=true``: job ``num`` done in an earlier sweep (``resume.py``), its result kept."""
        if done is None:
            return False
        cpu = time.thread_time()
        try:
            result = done.result(num, jobs[num])
            if result is None:
                return False
            app.keep_finished(result, done.sweep_dir / str(num), remember=total <= WAVE)
            skipped[0] += 1
            progress.advance()
            return True
        finally:
            costs["skip"] += time.thread_time() - cpu

    running: _Running | None = None  # the wave whose seeds run while the next is prepared
    ending: list | None = None  # the wave whose runs the store writes while the next is prepared
    in_flight: list[list] = []  # waves not yet completed (an interrupt kills their runs)
    try:
        for numbers in prepared_waves(total, largest, finished_already):
            if not warmed:
                workers, warmed = _warm_workers(config, work), True  # (start while the wave is prepared)
            wave: list = []
            in_flight.append(wave)
            for num in numbers:
                cpu = time.thread_time()
                # (HydraConfig set, as Hydra does; the hydra node shared where released: release_config)
                task, hydra_cfg = composer.run_job(num, jobs[num], share_hydra=not figures)
                plain = composer.resolved(jobs[num], task)
                key = keys.key(jobs[num])
                costs["compose"] += time.thread_time() - cpu
                cpu = time.thread_time()
                choices = composer.plain_choices(hydra_cfg)
                run = app.begin_configuration(task, hydra_cfg, figures=figures, plain=plain, choices=choices)
                run.remember = total <= WAVE
                run.deferred, run.tracker = tracker is not None, tracker
                _write_overrides(run.out_dir, jobs[num])
                with app.configuration_errors(run, final=False):
                    run.result["status"] = "PREPARING"
                    app.prepare_configuration(run, load=traces.load, finished=finished)
                    record(run.result, key, run.path, run.settings)  # what a resume checks
                    run.result["status"] = "RUNNING"
                    wave.append(run)
                    app.release_config(run, choices)
                    if run.cfg is not task:  # released (plain_view.py): the next job may reuse it
                        composer.recycle(task)
                if not work.done() and getattr(run, "jobs", None) is not None:
                    seeds = total * len(getattr(run, "seeds", None) or [0])
                    work.set_result((len(run.jobs), -(-seeds // _local_workers(config))))
                costs["prepare"] += time.thread_time() - cpu
            if workers is not None:
                if not work.done():
                    work.set_result(None)  # no configuration of the wave read its trace
                workers.join()
                workers = None
            app.store_failed()  # known already: no seed runs
            if ending is not None:  # the wave before: its runs were written while this one was prepared
                _end_wave(ending, tracker, costs)
                in_flight.remove(ending)
                ending = None
            done_wave = running.join() if running is not None else None
            if done_wave is not None and done_wave[2] is None:
                app.store_ready()  # the first wave: the store opened while its seeds ran
            running = _Running(wave, traces, config, arrays)
            if done_wave is not None:
                ending = _complete_wave(*done_wave, tracker, progress, costs, end=False)
                if ending is None:  # (ended already: failed, or no store to wait for)
                    in_flight.remove(done_wave[0])
                done_wave = None
        if ending is not None:
            _end_wave(ending, tracker, costs)
            in_flight.remove(ending)
            ending = None
        if running is not None:
            importing = _import_report_in_background()  # (this thread only waits for the last wave now)
            done_wave = running.join()
            importing.join()  # (before a figures' child is forked: no import lock held then)
            if done_wave[2] is None:
                app.store_ready()
            _complete_wave(*done_wave, tracker, progress, costs)
    except BaseException as caught:
        if not work.done():
            work.set_result(None)  # (a start still waiting for it ends)
        exc = interrupt_behind(caught)  # (or an error that replaced it: interrupts.py)
        if exc is None:
            raise
        if tracker is not None:
            tracker.discard_queued()  # (runs not sent: their configurations are killed below)
        for wave in in_flight:  # runs sent to the store whole are FINISHED there: so here too
            _end_wave([run for run in wave if run.runs_sent], tracker, timeout=app.KILL_WAIT_SECONDS)
        if arrays is not None:
            arrays.cancel_all()  # the array tasks of every wave in flight (one scancel)
        for wave in in_flight:
            for run in wave:
                if run.result["status"] in ("RUNNING", "PREPARING", "COMPLETING"):
                    app.kill_configuration(run, exc)
                    app.write_result(run)
        if exc is caught:
            raise
        raise exc from None
    app.store_ready()  # (every wave failed before its completion)
    log.info("sweep: CPU of this process per configuration: composing %.1f ms, preparing %.1f ms, "
             "completing %.1f ms (outputs, runs, result.json; %d configurations)",
             *(1000 * costs[k] / total for k in ("compose", "prepare", "complete")), total)
    if done is not None:
        log.info("resume: %d of %d configurations prepared, %d skipped (every seed FINISHED, the "
                 "same inputs: result.json kept; %.2f ms of CPU per configuration to check)",
                 total - skipped[0], total, skipped[0], 1000 * costs["skip"] / total)


class _RayConnection:
    """Ray for the sweep: a local instance starts in the background now (unless the command
    line started it already, or a cluster's address is given), while the first wave is
    prepared; ``join`` connects this process to it once that wave is ready. From this (the
    main) thread, not from the wave's: the driver lost its connection to Ray's object store
    once that thread had ended (the sweep exited 1 with no message during its second wave,
    Ray 2.60)."""

    def __init__(self, address: str | None, n_jobs: int, early) -> None:
        from .backends import start_local_ray

        self.address, self.n_jobs, self.early = address, n_jobs, early
        if address is None:
            start_local_ray(n_jobs)

    def join(self) -> None:
        from .backends import ray_ready

        if self.early is not None:
            self.early.join()
        ray_ready(self.address, self.n_jobs)


def prepared_waves(total: int, largest: int, finished_already=lambda num: False):
    """The job numbers of each wave, cut as :func:`waves` cuts them (the same spans when
    nothing is finished already), less those ``finished_already`` (``resume=true``: done in an
    earlier sweep): those are not counted, so that a resumed sweep's first wave is as small as
    a fresh one's. Lazy: a wave's configurations are looked at while the one before runs."""
    num, size = 0, min(FIRST_WAVE, largest)
    while num < total:
        step = min(size, max(FIRST_WAVE, -(-(total - num) // 2)))
        numbers: list[int] = []
        while num < total and len(numbers) < step:
            if not finished_already(num):
                numbers.append(num)
            num += 1
        if numbers:
            yield numbers
        size = min(2 * size, largest)


def _import_report_in_background():
    """The report is built once the last wave is done, and its first step is importing
    matplotlib (~0.5 s, a tenth of a 200-configuration sweep's wall time); imported in a
    thread while the last wave's seeds run, it is not paid after them. The caller joins the
    thread before completing the wave: a process forked while it holds an import lock (the
    figures' child) would wait for that lock forever."""
    import threading

    def load() -> None:
        try:
            from ..report import figures, html  # noqa: F401
        except Exception:  # noqa: BLE001 - the report imports it again and says why
            pass

    thread = threading.Thread(target=load, name="drevt-report-import", daemon=True)
    thread.start()
    return thread


class _Running:
    """A wave's seeds, run as one task list in a thread (joblib's workers do the work), while
    the sweep process prepares the next wave and completes the one before."""

    def __init__(self, wave: list, traces: "_Traces", config: DictConfig, arrays=None) -> None:
        import threading

        self.wave, self.results, self.error, self.arrays = wave, {}, None, arrays
        self.thread = threading.Thread(target=self._run, args=(traces, config),
                                       name="drevt-sweep-wave", daemon=True)
        self.thread.start()

    def _run(self, traces, config) -> None:
        try:
            self.results = _run_wave(self.wave, traces, config, self.arrays)
        except Exception as exc:  # noqa: BLE001 - a dead worker: handed to the main thread
            self.error = exc
        except KeyboardInterrupt:  # a worker's Ctrl-C (a terminal signals the whole process
            # group), re-raised here by joblib: the main thread has its own SIGINT and ends the
            # sweep with one line; escaping, it printed this thread's 60-line traceback first
            self.error = RuntimeError("a worker was interrupted (SIGINT)")

    def join(self) -> tuple[list, dict, Exception | None]:
        while self.thread.is_alive():  # in steps: Ctrl-C/SIGTERM still reach the main thread
            self.thread.join(0.25)
        return self.wave, self.results, self.error


def _complete_wave(wave: list, results: dict, error: Exception | None, tracker, progress,
                   costs: dict, end: bool = True) -> list | None:
    """Complete a wave's configurations, or fail them all when its seeds could not run (a dead
    worker: each fails with one line, the sweep goes on). ``end=False``: their runs are sent to
    the store and the wave is returned, for :func:`_end_wave` once the next wave is prepared
    (the store writes them meanwhile: at 10,000 configurations the sweep process waited 22 of
    its 48 s for the store); None when it has nothing left to end."""
    cpu = time.thread_time()
    try:
        pending = _complete_runs(wave, results, error, progress, tracker)
        end = end or tracker is None  # (no store to write while the next wave is prepared)
        if pending and end:
            _end_wave(wave, tracker)
        elif pending:
            tracker.flush()  # (written while the sweep prepares the next wave)
            _sent(wave)
    finally:
        costs["complete"] += time.thread_time() - cpu
    return wave if pending and not end else None


def _complete_runs(wave: list, results: dict, error: Exception | None, progress, tracker=None) -> bool:
    """Whether the wave's runs are still to be ended (:func:`_end_wave`)."""
    from . import app

    if error is not None:
        for run in wave:
            with app.configuration_errors(run, final=True):
                raise error
        return False
    flushes = getattr(tracker, "flushes", 0)
    for run in wave:
        with app.configuration_errors(run, final=False):
            app.complete_configuration(run, results.get(id(run), []))
            run.result["status"] = "COMPLETING" if run.result["status"] == "FINISHED" else "RUNNING"
        if getattr(tracker, "flushes", 0) != flushes:  # a full queue went to the store: theirs too
            flushes = tracker.flushes
            _sent(wave)
        progress.advance()
    return True


def _sent(wave) -> None:
    """The wave's completed configurations: their runs are with the store now."""
    for run in wave:
        if run.result["status"] == "COMPLETING":
            run.runs_sent = True


def _end_wave(wave, tracker, costs: dict | None = None, timeout: float | None = None) -> None:
    """Wait for the store once for the whole wave, then write every result.json (a store that
    failed, or did not answer in ``timeout`` s, fails the configurations whose runs it did not
    take)."""
    from . import app

    cpu = time.thread_time()
    pending = [run for run in wave if run.result["status"] == "COMPLETING"]
    if not pending:
        return
    try:
        if tracker is not None:
            tracker.flush()
            _sent(pending)
            tracker.wait(timeout)  # (the wave's runs, queued: one command, one transaction)
            named = [run for run in pending if run.parent_id and run.result["parent_run_id"] is None]
            for run, run_id in zip(named, tracker.run_ids([run.parent_id for run in named])):
                run.result["parent_run_id"] = run_id
    except Exception as exc:  # noqa: BLE001 - the store failed: these configurations did too
        for run in pending:
            run.result["status"] = "RUNNING"
            with app.configuration_errors(run, final=True):
                raise exc
        return
    finally:
        if costs is not None:
            costs["complete"] += time.thread_time() - cpu
    for run in pending:
        run.result["status"] = "FINISHED"
        app.write_result(run)


def _run_wave(wave, traces: "_Traces", config: DictConfig, arrays=None) -> dict:
    """Every seed still to run of a wave's configurations, as one task list (``arrays``: as
    submitit jobs, ``arrays.py``)."""
    from . import app
    from .seeds import SeedTask, run_tasks

    tasks = [SeedTask(id(run), traces.index(run.jobs), run.spec, seed, seed == run.keep)
             for run in wave for seed in run.todo]
    if not tasks:
        return {}
    if arrays is not None:
        return arrays.run(traces.tables, tasks)
    return run_tasks(traces.tables, tasks, n_jobs=int(config.parallel.n_jobs),
                     backend=app._value(config.parallel.backend),
                     backend_options=app._backend_options(config),
                     chunk_size=config.parallel.chunk_size)


class _Traces:
    """The sweep's job tables, each read once: configurations on one trace share its table."""

    def __init__(self) -> None:
        self.tables: list = []
        self._by_key: dict = {}
        self._index: dict[int, int] = {}

    def load(self, path, options, cache_dir=None):
        from ..trace.cache import load_trace

        key = (str(path), repr(options), str(cache_dir))
        if key not in self._by_key:
            table = load_trace(path, options, cache_dir=cache_dir)
            self._by_key[key] = table
            self._index[id(table)] = len(self.tables)
            self.tables.append(table)
        return self._by_key[key]

    def index(self, table) -> int:
        return self._index[id(table)]


def _write_overrides(out_dir: Path, overrides: list[str]) -> None:
    """``.hydra/overrides.yaml``, which the report reads for a configuration's command (the
    other two ``.hydra`` files are not written: ``config.yaml`` is in the job folder)."""
    folder = out_dir / ".hydra"
    try:
        folder.mkdir(exist_ok=True)
        (folder / "overrides.yaml").write_text(_overrides_yaml(list(overrides)), encoding="utf-8")
    except OSError as exc:
        log.warning("Hydra's overrides.yaml not saved in %s: %s", folder, exc.strerror)


def _overrides_yaml(overrides: list[str]) -> str:
    """``OmegaConf.save(OmegaConf.create(overrides))``'s text, from the plain list: each line
    ``- <override>`` dumped once per distinct override and the lines joined (a block sequence's
    items are written one after the other, each from column 0, so the text is the same; a
    sweep's jobs share most of their overrides, and the dump was ~0.5 ms per configuration).
    OmegaConf's dumper writes a string plain or quoted, never as a block scalar (the one kind
    that can leave a document open, which a dump of its own would close with ``...``), so an
    override spanning lines joins the same way (``tests/test_sweep_costs.py``)."""
    items = [str(o) for o in overrides]
    if not items:  # "[]"
        return _dump_yaml(items)
    parts = []
    for item in items:
        text = _OVERRIDE_LINES.get(item)
        if text is None:
            if len(_OVERRIDE_LINES) >= 4096:  # bounded: a long sweep of ever-new values
                _OVERRIDE_LINES.clear()
            text = _OVERRIDE_LINES[item] = _dump_yaml([item])
        parts.append(text)
    return "".join(parts)


_OVERRIDE_LINES: dict[str, str] = {}  # an override -> its "- ..." line(s) in overrides.yaml


def _dump_yaml(data) -> str:
    """YAML as ``OmegaConf.save`` writes it (its dumper and options)."""
    import yaml
    from omegaconf._utils import get_omega_conf_dumper

    return yaml.dump(data, default_flow_style=False, allow_unicode=True, sort_keys=False,
                     Dumper=get_omega_conf_dumper())


def _log_to_sweep_folder(config: DictConfig) -> None:
    """One log file for the sweep (``<sweep dir>/drevt-sweep.log``) instead of one per job."""
    from hydra.core.hydra_config import HydraConfig
    from hydra.core.utils import configure_log

    import copy

    cfg = copy.deepcopy(config)
    with read_write(cfg.hydra), open_dict(cfg.hydra):
        cfg.hydra.runtime.output_dir = os.path.abspath(str(config.hydra.sweep.dir))
    HydraConfig.instance().set_config(cfg)
    configure_log(cfg.hydra.job_logging, cfg.hydra.verbose)


def _local_workers(config: DictConfig) -> int:
    from .backends import local_workers

    return local_workers(int(config.parallel.n_jobs))


def _warm_workers(config: DictConfig, work):
    """Start the seeds' workers (``seeds.start_workers``; ``work``: the future saying what they
    will run, for loading the kernel) or the Dask/Ray cluster; a thread to join, or None."""
    from . import app
    from .arrays import cluster_of
    from .seeds import start_workers

    early = app._state.pop("early_workers", None)  # (started before Hydra composed: app)
    if cluster_of(config):
        return early  # the seeds run in submitit's jobs, not here
    backfill = None if config.policy.replay else app._value(config.policy.backfill)
    if app._value(config.parallel.backend) == "dask":  # the cluster starts while we prepare
        from .backends import start_in_background
        from .seeds import _warm_worker

        return start_in_background("dask", app._backend_options(config)["address"],
                                   int(config.parallel.n_jobs), _warm_worker, backfill)
    if app._value(config.parallel.backend) == "ray":
        return _RayConnection(app._backend_options(config)["address"], int(config.parallel.n_jobs), early)
    return start_workers(int(config.parallel.n_jobs), app._value(config.parallel.backend), backfill,
                         after=early, work=work)
