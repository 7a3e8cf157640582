"""Seed-level fan-out beyond one machine: connections to dask.distributed and Ray clusters,
and the sweep engine's task chunks run on them (:func:`run_chunks`).

``experiment.run_seeds`` stays a plain joblib loop; for ``parallel.backend=dask`` or ``ray``
it asks this module for a connection and hands it to joblib's backend switch
(``joblib.parallel_config``). Connections are made once per process and reused by every
configuration that process runs (a Hydra multirun with the basic launcher runs many), and
closed when the process exits.

The parsed trace is the one large input. It is shipped to the cluster once per
configuration, not once per seed: with dask it is broadcast to every worker
(``client.scatter(..., broadcast=True)``, through joblib's ``scatter=``) and each seed's task
refers to it by key; with Ray it is put into the object store once (``ray.put``) and each
task receives a reference.

Only the driver imports these modules: workers receive ``experiment.run_seed`` and the data.
Workers of a remote cluster must run the same environment (same drevt-sweep version), since
results are only bit-identical for the same code.
"""

from __future__ import annotations

import atexit
import functools
import logging
import warnings
from pathlib import Path

from ..errors import ConfigError

_DASK: dict[str, tuple[object, object | None]] = {}  # key -> (client, own LocalCluster or None)


def local_workers(n_jobs: int) -> int:
    """joblib's meaning of n_jobs (-1 = every core the process may use, -2 = all but one...);
    a negative value that leaves no core (-100 on 2 cores) runs one worker, and says so."""
    from joblib import cpu_count

    cores = cpu_count()
    if n_jobs < 0:
        if cores + 1 + n_jobs < 1:
            _say_clamped(n_jobs, cores)
        return max(1, cores + 1 + n_jobs)
    return max(1, n_jobs)


@functools.lru_cache(maxsize=None)
def _say_clamped(n_jobs: int, cores: int) -> None:
    logging.getLogger("drevt_sweep").warning(
        "parallel.n_jobs=%d leaves no core of this %d-core machine (-1 = every core, -2 = all "
        "but one): running 1 worker", n_jobs, cores)


# ---------------------------------------------------------------- dask.distributed
def dask_client(address: str | None, n_jobs: int = -1):
    """A dask.distributed Client: to the scheduler at ``address`` (``tcp://host:8786`` or the
    path of a scheduler file written by ``dask scheduler --scheduler-file``), or to a
    LocalCluster of ``n_jobs`` single-threaded worker processes on 127.0.0.1 when null."""
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(
            "parallel.backend=dask needs dask.distributed: pip install 'drevt-sweep[dask]'"
        ) from None
    key = address or f"local:{local_workers(n_jobs)}"
    cached = _DASK.get(key)
    if cached is not None and cached[0].status == "running":
        return cached[0]
    cluster = None
    try:
        if address is None:
            # The scheduler and nannies of a LocalCluster live in this process: their INFO
            # lines (every worker's start and close) are not the sweep's business.
            logging.getLogger("distributed").setLevel(logging.WARNING)
            with warnings.catch_warnings():  # "port 8787 in use": another cluster's, harmless
                warnings.filterwarnings("ignore", message="Port .* is already in use")
                cluster = LocalCluster(
                    n_workers=local_workers(n_jobs), threads_per_worker=1, processes=True,
                    host="127.0.0.1", dashboard_address=None,
                )
            client = Client(cluster, set_as_default=False)
        elif address.endswith(".json") or Path(address).expanduser().is_file():
            path = Path(address).expanduser()
            if not path.is_file():
                raise ConfigError(f"dask scheduler file {path} does not exist")
            client = Client(scheduler_file=str(path), set_as_default=False)
        else:
            client = Client(address, set_as_default=False)
    except ConfigError:
        raise
    except (OSError, TimeoutError) as exc:
        if cluster is not None:
            cluster.close()
        where = address or "a LocalCluster"
        raise ConfigError(
            f"dask scheduler {where} does not answer ({exc}); start it "
            "(`dask scheduler` and `dask worker ADDRESS`), or set parallel.dask_address=null "
            "for a LocalCluster on this machine"
        ) from None
    if not _DASK:
        atexit.register(close_dask)
    _DASK[key] = (client, cluster)
    return client


def close_dask() -> None:
    """Close every client (and LocalCluster) this process opened."""
    while _DASK:
        _, (client, cluster) = _DASK.popitem()
        for thing in (client, cluster):
            if thing is None:
                continue
            try:
                thing.close()
            except Exception:  # noqa: BLE001 - closing at exit is best effort
                pass


# ---------------------------------------------------------------- Ray
def ray_ready(address: str | None, n_jobs: int = -1):
    """Connect to (or start) Ray once per process and register joblib's ``ray`` backend.
    ``address``: ``auto`` (the cluster this node belongs to), ``ray://head:10001`` (Ray
    Client) or ``host:6379``; null starts a local instance with ``n_jobs`` CPUs."""
    try:
        import ray
        from ray.util.joblib import register_ray
    except ImportError:
        raise ConfigError("parallel.backend=ray needs Ray: pip install 'drevt-sweep[ray]'") from None
    if not ray.is_initialized():
        try:
            if address is None:  # the sweep's own instance (ray_head), started early if it could
                start_local_ray(n_jobs)
                ray.init(address=_local_ray_address(), log_to_driver=False)
            else:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
        except (ConnectionError, OSError, TimeoutError, RuntimeError) as exc:
            raise ConfigError(f"Ray cluster {address or '(local)'} does not answer ({exc})") from None
        atexit.register(close_ray)
    register_ray()
    return ray


_HEAD: dict = {}  # the local Ray instance (ray_head.py): "process" (its supervisor), "cpus", ...


def start_local_ray(n_jobs: int = -1) -> None:
    """Start a local Ray instance of ``n_jobs`` CPUs in the background (``ray_head``), unless
    one of that size is starting or running; ``ray_ready`` connects to it. It ends with this
    process (``stop_local_ray`` at exit, or its supervisor seeing this process gone)."""
    import importlib.util
    import os
    import subprocess
    import sys

    if importlib.util.find_spec("ray") is None:
        return  # (ray_ready says how to install it)
    cpus = local_workers(n_jobs)
    if _HEAD.get("cpus") == cpus and _HEAD["process"].poll() is None:
        return
    stop_local_ray()
    _ray_token()
    supervisor = Path(__file__).with_name("ray_head.py")  # (run as a file: no package imports)
    process = subprocess.Popen([sys.executable, str(supervisor), str(cpus), str(os.getpid())],
                               stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    _HEAD.update(process=process, cpus=cpus)
    atexit.register(stop_local_ray)


def _ray_token() -> None:
    """Only drivers holding the sweep's token may join its instance (as for Ray's own local
    instance, 2.60). Unless ``RAY_AUTH_MODE`` is set (then both sides follow it), this process
    and the instance it starts get ``RAY_AUTH_MODE=token`` and a token of their own. A driver
    reads the mode when Ray is imported: if Ray was imported before (a notebook, a test),
    its settings are read again (Ray's own ``_enable_token_auth``; Rays before token
    authentication have none and need none)."""
    import os
    import secrets
    import sys

    if "RAY_AUTH_MODE" in os.environ:
        return
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ.setdefault("RAY_AUTH_TOKEN", secrets.token_hex(32))
    if "ray" in sys.modules:
        try:
            from ray._private.authentication.authentication_token_setup import _enable_token_auth
            from ray._raylet import AuthenticationTokenLoader
        except ImportError:
            return
        _enable_token_auth()
        AuthenticationTokenLoader.instance().reset_cache()


def _local_ray_address(timeout: float = 120.0) -> str:
    """The address the local instance's supervisor prints once Ray has started (2.4-3.7 s
    after ``start_local_ray``, measured), kept for later calls."""
    import select

    if "address" in _HEAD:
        return _HEAD["address"]
    process = _HEAD["process"]
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    line = process.stdout.readline().strip() if ready else ""
    if not line or line.startswith("FAILED"):
        stop_local_ray()
        why = (line.removeprefix("FAILED").strip() if line else
               "its supervisor (ray_head.py) ended without a word" if ready else
               f"no answer in {timeout:.0f} s")
        raise RuntimeError(f"the local Ray instance did not start: {why}")
    _HEAD["address"] = line.split(" ", 1)[0]  # (then its folder: for the tests)
    return _HEAD["address"]


def stop_local_ray() -> None:
    """End the local instance: its supervisor stops Ray and removes its files after this
    process has gone on (0.5-2 s, not waited for)."""
    process = _HEAD.pop("process", None)
    _HEAD.clear()
    if process is not None and process.poll() is None:
        process.terminate()


def close_ray() -> None:
    try:
        import ray

        if ray.is_initialized():
            ray.shutdown()
    except Exception:  # noqa: BLE001
        pass
    stop_local_ray()



# ---------------------------------------------------------------- the engine's chunks on a cluster
def start_in_background(backend: str, address: str | None, n_jobs: int, warm, backfill: str | None):
    """Connect to dask (start the LocalCluster) and load the compiled kernel in every worker,
    (``warm(backfill)`` in each) in a thread, while the sweep composes and prepares its configurations (5-20 s of start-up
    otherwise paid before the first chunk runs, measured). Returns the thread to join, or None
    for Ray: the sweep engine connects to Ray from its main thread, once the first wave is
    prepared (``batch._RayConnection``)."""
    import threading

    if backend != "dask":
        return None

    def start() -> None:
        try:
            dask_client(address, n_jobs).run(warm, backfill)
        except Exception:  # noqa: BLE001 - only an optimisation: run_chunks reports real failures
            pass

    thread = threading.Thread(target=start, name="drevt-start-dask", daemon=True)
    thread.start()
    return thread


def cluster_workers(backend: str, address: str | None, n_jobs: int) -> int:
    """How many tasks the cluster runs at once (dask: its worker threads; Ray: its CPUs), so
    that a sweep's tasks are cut into enough chunks for a cluster bigger than this machine."""
    if backend == "dask":
        info = dask_client(address, n_jobs).scheduler_info(n_workers=-1)
        return max(1, sum(int(w.get("nthreads", 1)) for w in info["workers"].values()))
    ray = ray_ready(address, n_jobs)
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def run_chunks(backend: str, address: str | None, n_jobs: int, traces, chunks: list,
               runs_here: int, run_chunk):
    """Run the sweep engine's task chunks (``seeds.task_chunks``) on dask or Ray, each as
    ``run_chunk(trace, chunk, runs_here)``; yields each chunk's ``(key, SeedResult)`` pairs as
    it finishes, in any order.

    Plain cluster tasks, not joblib's dask/ray back-ends: each trace is shipped once (dask:
    broadcast to every worker; Ray: one copy in the object store per node), every chunk's task
    refers to it, and the cluster's worker processes are reused from one chunk to the next and
    from one wave to the next, so each loads the compiled kernel once. (joblib's Ray back-end
    starts a pool of new actor processes for every call: 6.1 s for 200 chunks that took 0.9 s
    on loky, measured; ``benchmarks/bench_backends.py``.) A chunk's results are
    ``run_seed``'s: the same whatever the back-end (tested against loky, several chunk sizes).
    """
    needed = sorted({chunk[0].trace for chunk in chunks})
    if backend == "dask":
        from dask.distributed import as_completed

        client = dask_client(address, n_jobs)
        shipped = {i: client.scatter(traces[i], broadcast=True, hash=False) for i in needed}
        futures = [client.submit(run_chunk, shipped[c[0].trace], c, runs_here, pure=False)
                   for c in chunks]
        try:
            for future in as_completed(futures, loop=client.loop):
                yield future.result()
        finally:
            client.cancel(futures)  # an interrupt: nothing of this sweep left queued or running
            for future in shipped.values():
                future.release()  # the trace leaves the workers' memory
        return
    if backend == "ray":
        ray = ray_ready(address, n_jobs)
        task = _ray_task(ray, run_chunk)
        shipped = {i: ray.put(traces[i]) for i in needed}
        pending = [task.remote(shipped[c[0].trace], c, runs_here) for c in chunks]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                yield ray.get(done[0])
        finally:
            for ref in pending:
                ray.cancel(ref, force=True)
        return
    raise ValueError(f"not a cluster back-end: {backend}")


@functools.lru_cache(maxsize=None)
def _ray_task(ray, run_chunk):
    """The chunk runner as a Ray remote function (one CPU each), defined once per process."""
    # The trace's reference is a top-level argument: Ray hands the task the table itself, read
    # from the node's object store (its columns without a copy).
    return ray.remote(num_cpus=1, max_retries=0)(run_chunk)
