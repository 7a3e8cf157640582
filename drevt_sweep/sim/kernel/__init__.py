"""The compiled (numba) simulation kernel behind ``drevt_sweep.engine.simulate``.

``simulate(..., kernel="auto")`` (the default) runs the event loop here (as soon as loading numba
pays off, see :func:`worth_loading`; ``kernel="fast"`` / ``"reference"`` or the environment
variable ``DREVT_KERNEL`` force either) and the pure-Python loop in ``drevt_sweep.engine`` /
``drevt_sweep.policies`` stays the reference: the kernel must
produce the same begin/end times bit for bit (``tests/test_fast_kernel.py`` compares them on
random and real traces for every priority x backfill x enforce_limits). The engine does all
validation, the run-time/kill rule and the priority ranks before calling :func:`run_events`,
so any registered priority policy works here (it is only a rank per job); the backfill policies
are the four built-in ones.

numba is imported on first use, not when this package is imported, so ``import
drevt_sweep.engine`` stays cheap. If numba cannot be imported, :func:`load` returns ``None`` and
warns once; ``kernel="auto"`` then falls back to the reference.
"""

from __future__ import annotations

import warnings

import numpy as np

from ...jobs import distinct_codes

__all__ = ["FAST_BACKFILLS", "EXTENDED_BACKFILLS", "SLURM_BACKFILLS", "run_extended", "run_slurm", "slurm_supported",
           "prepare", "load", "warm", "worth_loading", "pays_off", "expect_runs", "unavailable_reason", "run_events"]

FAST_BACKFILLS = frozenset({"none", "easy", "easy_drevt", "conservative"})
# with dynamic priorities or run-time estimates (``_extended``); conservative runs on the reference
EXTENDED_BACKFILLS = frozenset({"none", "easy", "easy_drevt"})
SLURM_BACKFILLS = frozenset({"slurm"})  # one pool, static priorities or multifactor (``slurm_supported``)
_QUEUE_MODES = {"none": 0, "easy": 1, "easy_drevt": 2}

_loaded = None
_failure: str | None = None


def load(warn: bool = True):
    """The kernel module (compiled on first call, or loaded from numba's cache), or ``None``."""
    global _loaded, _failure
    if _loaded is not None:
        return _loaded
    if _failure is None:
        try:
            from . import _kernels as module
        except Exception as exc:  # numba missing or broken (ImportError, llvmlite errors, ...)
            _failure = f"{type(exc).__name__}: {exc}"
            if warn:
                warnings.warn(
                    f"the compiled simulation kernel is unavailable ({_failure}); using the "
                    f"pure-Python reference engine, which is much slower",
                    RuntimeWarning,
                    stacklevel=3,
                )
            return None
        _loaded = module
    return _loaded


# What the reference engine costs per job, roughly (seconds, measured on KTH-SP2 on the 2-core
# development machine), and what loading the compiled kernel costs once per process (importing
# numba, which imports scipy.linalg, and loading the cached machine code: about 0.5-1 s).
_REFERENCE_SECONDS_PER_JOB = {"none": 3e-6, "easy": 1e-5, "easy_drevt": 1e-5, "conservative": 1.5e-4,
                              "extended": 1e-4, "slurm": 5e-4}
LOAD_COST_SECONDS = 0.5
_reference_seconds = 0.0  # estimated reference time spent in this process so far


def worth_loading(backfill: str, n_jobs: int) -> bool:
    """For ``kernel="auto"``: whether this run should use the compiled kernel.

    Always once the kernel is loaded. Before that, only when the estimated reference time of
    this run plus that of the earlier reference runs in this process reaches the cost of loading
    numba: a one-off small run (the seeds' three-job example, a KTH-SP2 EASY run from
    ``drevt-sim``) then never pays for numba, while a long run, or the second of many short
    ones (a sweep worker), switches to the kernel for good. Both give the same schedule.
    """
    global _reference_seconds
    if _loaded is not None:
        return True
    estimate = n_jobs * _REFERENCE_SECONDS_PER_JOB.get(backfill, 1e-5)
    if _reference_seconds + estimate >= LOAD_COST_SECONDS:
        return True
    _reference_seconds += estimate
    return False


def pays_off(backfill: str, n_jobs: int, runs: int) -> bool:
    """Whether ``runs`` simulations of ``n_jobs`` jobs under ``backfill`` would cost more on
    the reference engine than loading the kernel once: what ``kernel="auto"`` decides for a
    process that is told of them (:func:`expect_runs`, a sweep's warming workers)."""
    return runs * n_jobs * _REFERENCE_SECONDS_PER_JOB.get(backfill, 1e-5) >= LOAD_COST_SECONDS


def expect_runs(backfill: str, n_jobs: int, runs: int) -> None:
    """A caller about to run ``runs`` simulations of ``n_jobs`` jobs in this process (a sweep
    worker) says so, so that ``kernel="auto"`` loads the kernel at once when the runs together
    pay for it, instead of running the first few on the reference."""
    global _reference_seconds
    if pays_off(backfill, n_jobs, runs):
        _reference_seconds = max(_reference_seconds, LOAD_COST_SECONDS)


def warm(backfill: str) -> bool:
    """Load the kernel and the compiled code for ``backfill`` now, on a two-job problem.

    Importing the kernels module does not load their machine code: numba does that on the first
    call (about 0.5 s from its cache). A sweep worker calls this while the trace is still being
    read, so that its first seed does not pay for it. Returns whether the kernel is ready."""
    if backfill not in FAST_BACKFILLS | SLURM_BACKFILLS or load(warn=False) is None:
        return False
    ones = np.ones(2)
    two_jobs = dict(submit=np.array([0.0, 1.0]), limit=ones, nodes=np.ones(2, dtype=np.int64), dur=ones,
                    rejected=np.zeros(2, dtype=bool), rank=np.arange(2, dtype=np.int64), total=1)
    if backfill == "slurm":
        run_slurm(**two_jobs, users=np.zeros(2, np.int64), backfill_params=None)
    else:
        run_events(**two_jobs, backfill=backfill, enforce_limits=True)
    return True


def prepare(backfill: str | None, n_jobs: int | None = None, runs: int = 1) -> bool:
    """The one call a driver of many simulations makes before them (a sweep's seed loop, a
    worker process): it says what it is about to run and the kernel decides what to load.

    With ``n_jobs``, ``runs`` simulations of ``n_jobs`` jobs under ``backfill`` are coming:
    ``kernel="auto"`` then loads numba at once when they pay for it together (``expect_runs``).
    Without, the caller already knows they will (a sweep worker warming up while the trace is
    still being read): the kernel and the machine code for ``backfill`` are loaded now
    (``warm``; just the module for a replay, ``backfill=None``). Returns whether the kernel is
    loaded."""
    if n_jobs is not None:
        if backfill is not None:
            expect_runs(backfill, n_jobs, runs)
        return _loaded is not None
    if backfill is None or not warm(backfill):
        load(warn=False)
    return _loaded is not None


def unavailable_reason() -> str | None:
    """Why the kernel could not be loaded (after a failed :func:`load`), else ``None``."""
    return _failure


# Work units per call into the compiled loop (an event, or a waiting job looked at by
# conservative backfilling, a sixteenth of a profile scan): a few ms to about 0.1 s each, so
# progress is fresh and Ctrl-C (which Python acts on between calls) stops a run within 1 s.
STEP_BUDGET = 1 << 14
_COMPRESSION_ORDERS = {"compress_first": 0, "interleaved": 1, "one_pass": 2}


def _kernels_for(backfill, backfills, options=""):
    """The loaded kernels module, or the error saying why this run cannot use it."""
    kernels = load()
    if kernels is None:
        raise ImportError(f"the compiled simulation kernel is unavailable ({_failure})")
    if backfill not in backfills:
        raise ValueError(f"the compiled kernel has no backfill policy {backfill!r}{options}")
    return kernels


def _job_arrays(submit, limit, nodes, dur, rank, rejected):
    """The engine's arrays in the kernels' fixed dtypes and layouts (one compiled
    specialisation, reused from the cache), and the arrivals: the jobs not rejected, in submit
    order, then table row (as the reference)."""
    submit = np.ascontiguousarray(submit, dtype=np.float64)
    order = np.argsort(submit, kind="stable")
    arrivals = np.ascontiguousarray(order[~np.asarray(rejected, dtype=bool)[order]], dtype=np.int64)
    return (submit, np.ascontiguousarray(limit, dtype=np.float64), np.ascontiguousarray(nodes, dtype=np.int64),
            np.ascontiguousarray(dur, dtype=np.float64), np.ascontiguousarray(rank, dtype=np.int64), arrivals)


def _running_arrays(rmax):
    """The running jobs sorted by (estimated end, job, nodes) and the completion heap (real end,
    job), for up to ``rmax`` jobs at once."""
    return (np.empty(rmax), np.empty(rmax, np.int64), np.empty(rmax, np.int64),
            np.empty(rmax), np.empty(rmax, np.int64))


def _pool_errors(backfill):
    """What the pool drivers' failure statuses mean, and the message for jobs left waiting."""
    return ({-1: "conservative plan did not converge (compiled kernel)",
             -2: f"policy {backfill!r} over-committed the machine (compiled kernel)"},
            f"engine stalled with {{left}} job(s) waiting (policy {backfill!r}, compiled kernel)")


def _run_slices(kernels, step, state, st, sf, progress, errors, stalled):
    """Call the driver ``step`` on ``state`` in slices of :data:`STEP_BUDGET` work units until it
    is done, with ``progress(now, jobs_done)`` between slices (Python acts on signals there, so
    a ``KeyboardInterrupt`` stops the run). A failure status of the driver raises the message
    ``errors`` gives it; jobs left waiting at the end (which cannot happen: with nothing
    running the best job always fits) raise ``stalled`` (formatted with ``left``). Every
    driver (pool, extended, shared nodes) stores its time at ``SF_NOW`` and its counts at
    ``ST_DONE`` / ``ST_Q``."""
    budget = np.int64(STEP_BUDGET)
    while True:
        status = step(*state, st, sf, budget)
        if status != 1:
            break
        if progress is not None:
            progress(float(sf[kernels.SF_NOW]), int(st[kernels.ST_DONE]))
    if status in errors:
        raise RuntimeError(errors[status])
    left = int(st[kernels.ST_Q])
    if left:
        raise RuntimeError(stalled.format(left=left))


def run_events(*, submit, limit, nodes, dur, rejected, rank, total, backfill, enforce_limits,
               compression="compress_first", progress=None):
    """Begin and end time of every job (NaN for rejected ones), as ``engine._run_events``.

    Inputs are the engine's validated arrays: ``dur`` is the time each job holds its nodes
    (already cut at the limit when limits are enforced), ``rank`` its priority rank.
    The compiled loop runs in slices of :data:`STEP_BUDGET` work units; between them
    ``progress(now, jobs_done)`` is called (if given) and Python handles signals, so a
    ``KeyboardInterrupt`` stops the run there.
    """
    kernels = _kernels_for(backfill, FAST_BACKFILLS)
    n = int(submit.shape[0])
    if n == 0:
        return np.empty(0), np.empty(0)
    submit, limit, nodes, dur, rank, arrivals = _job_arrays(submit, limit, nodes, dur, rank, rejected)
    total = np.int64(total)
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    est = np.full(n, np.nan)  # estimated end of each started job
    rmax = min(int(total), n) + 1  # running jobs (each holds at least one node)
    running = _running_arrays(rmax)
    st = np.zeros(kernels.ST_SIZE, np.int64)
    sf = np.zeros(kernels.SF_SIZE)
    st[kernels.ST_FREE] = total
    if backfill == "conservative":
        cap = 2 * (rmax + 2 * n) + 16  # breakpoints: now, running jobs' ends, two per reservation (x2: redundant ones)
        state = (
            submit, limit, nodes, dur, arrivals, rank, total, bool(enforce_limits),
            np.int64(_COMPRESSION_ORDERS[compression]),
            begin, end, est, np.full(n, np.nan), np.zeros(n, np.int8), *running,
            np.empty(n, np.int64),  # the waiting queue in priority order
            *kernels.profile_arrays(cap, int(total)),  # the availability profile: all free from -inf on
            np.full((kernels.RC_SLOTS, 4), -1, np.int64),  # run cache: height, stamp, count, partial per slot
            np.empty((kernels.RC_SLOTS, 3 * kernels.RC_RUNS)), np.empty((kernels.RC_SLOTS, 2 * kernels.RC_RUNS)),
            np.empty(2 * kernels.RC_SLOTS), np.full(int(total) + 1, -1, np.int64), np.empty(kernels.RC_SLOTS, np.int64),
            *kernels.versions_arrays(n),  # each job's last visit, the pass's growth log
        )
        st[kernels.ST_FIXPOINT] = 1
        st[kernels.ST_PASS_AT] = -1
        sf[kernels.SF_EARLIEST] = np.inf
        sf[kernels.SF_WAKE] = np.inf
        step = kernels.conservative_steps
    else:
        size = 1 << max(n - 1, 0).bit_length()  # segment tree leaves (>= n, a power of two)
        job_of_rank = np.empty(n, np.int64)
        job_of_rank[rank] = np.arange(n)
        state = (
            submit, limit, nodes, dur, arrivals, rank, total, np.int64(_QUEUE_MODES[backfill]),
            begin, end, est, job_of_rank, np.full(2 * size, kernels.BIG, np.int64), np.full(2 * size, np.inf),
            *running,
        )
        st[kernels.ST_HEAD] = size
        step = kernels.queue_policy_steps
    _run_slices(kernels, step, state, st, sf, progress, *_pool_errors(backfill))
    return begin, end


_ESTIMATES = {"user": 0, "actual": 1, "user_history": 2}
_DYNAMIC = {None: 0, "Multifactor": 1, "WFP3": 2, "Unicef": 3}


def run_extended(*, submit, limit, nodes, dur, rejected, rank, total, backfill, enforce_limits, estimate,
                 backfill_order, users, dynamic, progress=None):
    """``run_events`` with a dynamic priority (``dynamic``: the reference's policy object, whose
    ``kernel_args()`` give its arrays) and/or run-time estimates (``_extended.extended_steps``).

    Runs in slices of :data:`STEP_BUDGET` events like :func:`run_events`: ``progress(now,
    jobs_done)`` is called between them (if given), and a ``KeyboardInterrupt`` stops the run
    there. All the kernel's arrays, the fair-share state included, are allocated here."""
    kernels = _kernels_for(backfill, EXTENDED_BACKFILLS, " with these options")
    from . import _extended as ext

    n = int(submit.shape[0])
    if n == 0:
        return np.empty(0), np.empty(0)
    submit, limit, nodes, dur, rank, arrivals = _job_arrays(submit, limit, nodes, dur, rank, rejected)
    users = np.ascontiguousarray(users, dtype=np.int64)
    n_users = int(users.max()) + 1 if users.size else 0
    rmax = min(int(total), n) + 1  # running jobs (each holds at least one node)
    kind, dyn_args, fairshare, fair_tree_state = _dynamic_state(dynamic, n)
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    state = (
        submit, limit, nodes, dur, arrivals, rank, np.int64(_QUEUE_MODES[backfill]),
        np.int64(_ESTIMATES[estimate]), backfill_order == "sjbf", users,
        *dyn_args,
        begin, end, np.full(n, np.nan),  # the last: estimated end of each started job
        limit.copy(), rank.astype(np.float64),  # planned run time, queue sort key
        *_running_arrays(rmax),
        np.empty(rmax), np.empty(rmax, np.int64),  # overruns: (planned end, job)
        np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64),  # queue, sort buffer, SJBF queue
        np.zeros((max(n_users, 1), 2)), np.zeros(max(n_users, 1), np.int64),  # last two run times per user
        *fairshare, *fair_tree_state,
    )
    st = np.zeros(kernels.ST_SIZE, np.int64)
    sf = np.zeros(kernels.SF_SIZE)
    st[kernels.ST_FREE] = total
    ext.start_fairshare(st, sf, ext.ST_ACTIVE, ext.SF_ROOT, _first_tick(kind, dyn_args))
    _run_slices(kernels, ext.extended_steps, state, st, sf, progress, *_pool_errors(backfill))
    return begin, end


def _dynamic_state(dynamic, n: int) -> tuple:
    """A dynamic priority's kernel arguments (``dynamic``: the reference's policy object, or
    None): its kind (``_extended.DYN_*``), the scalars and arrays ``extended_steps`` takes from
    ``dyn`` to ``t0``, the fair-share state (usage, acc, running charge per association, usage
    per account, cached factors and their stamps, the active associations) and Fair Tree's."""
    from . import _extended as ext

    f64 = lambda x: np.ascontiguousarray(x, dtype=np.float64)  # noqa: E731
    i64 = lambda x: np.ascontiguousarray(x, dtype=np.int64)  # noqa: E731
    kind = _DYNAMIC[type(dynamic).__name__ if dynamic is not None else None]
    one = np.zeros(1)
    a_arr, b_arr, leaf, acct, sib, snorm = one, one, np.zeros(n, np.int64), np.zeros(1, np.int64), one, one
    n_acct, w_age, w_fs, max_age, period, decay, t0, charge_ended = 1, 0.0, 0.0, 1.0, 1.0, 1.0, 0.0, True
    if kind == ext.DYN_MULTIFACTOR:
        (a_arr, leaf, acct, sib, snorm, n_acct, w_age, w_fs, max_age, period, decay, t0,
         charge_ended) = dynamic.kernel_args()
    elif kind:
        a_arr, b_arr = dynamic.kernel_args()
    n_leaf = int(np.shape(sib)[0])
    fairshare = (  # usage, acc, running nodes per association, usage per account, cached factors
        np.zeros(n_leaf), np.zeros(n_leaf), np.zeros(n_leaf), np.zeros(max(int(n_acct), 1)), np.zeros(n_leaf),
        np.full(n_leaf, -1, np.int64),
        np.empty(max(n_leaf, 1), np.int64), np.zeros(n_leaf, np.bool_),  # active associations (acc != 0), sorted
    )
    fair_tree = kind == ext.DYN_MULTIFACTOR and bool(dynamic.fair_tree)
    two_levels = fair_tree and bool(dynamic.tree.two_levels)
    fair_tree_state = (fair_tree, two_levels, *_fair_tree_arrays(dynamic if fair_tree else None, n_leaf, n_acct))
    dyn_args = (np.int64(kind), f64(a_arr), f64(b_arr), i64(leaf), i64(acct), f64(sib), f64(snorm), np.int64(n_acct),
                float(w_age), float(w_fs), float(max_age), float(period), float(decay), float(t0),
                bool(charge_ended))
    return kind, dyn_args, fairshare, fair_tree_state


def _first_tick(kind, dyn_args) -> float:
    """Multifactor's first tick (``t0 + period``; inf for the priorities without ticks)."""
    from . import _extended as ext

    t0, period = dyn_args[-2], dyn_args[-4]
    return t0 + period if kind == ext.DYN_MULTIFACTOR else np.inf


def _fair_tree_arrays(multifactor, n_leaf: int, n_acct: int) -> tuple:
    """``_extended._fair_tree_update``'s arrays for a multifactor priority (``None``: the same
    types, a few elements a row, unused): the account shares; the sort keys, ratios, bounds and
    each place's factor (rows ``FK_*``); the orders, buffers and the incremental state (rows ``FT_*``: each unit's
    leaves, the dirty units); numpy's summation order of the parent's usage and its stack."""
    from . import _extended as ext

    if multifactor is None:
        return (np.zeros(1), np.zeros((ext.FK_ROWS, 5)), np.zeros((ext.FT_ROWS, 2), np.int64),
                np.zeros((1, 2), np.int64), np.zeros(1))
    tree = multifactor.tree
    two_levels = bool(tree.two_levels)
    n_unit = int(n_acct) if two_levels else n_leaf  # an account under the root, or a leaf
    plan = ext.pairwise_plan(n_unit)
    width = max(n_leaf, n_unit + 1, 5)
    fti = np.zeros((ext.FT_ROWS, width), np.int64)
    fti[:3] = np.arange(width)
    unit = np.asarray(tree.acct_of_leaf, dtype=np.int64) if two_levels else np.arange(n_leaf)
    fti[ext.FT_UNIT_PTR, :n_unit + 1] = np.concatenate([[0], np.cumsum(np.bincount(unit, minlength=n_unit))])
    fti[ext.FT_UNIT_LEAF, :n_leaf] = np.argsort(unit, kind="stable")
    shares = np.asarray(tree.acct_share if two_levels else tree.s_norm, dtype=np.float64)
    ftk = np.zeros((ext.FK_ROWS, width))
    ftk[ext.FK_BOUNDS, 2:4] = shares.min(initial=1.0), shares.max(initial=1.0)
    ftk[ext.FK_FACTOR, :n_leaf] = (n_leaf - np.arange(n_leaf)) / n_leaf  # (``_fair_tree``'s (n - first) / n)
    if (not ((shares >= ext.FT_SHARES_MIN) & (shares <= ext.FT_SHARES_MAX)).all() or n_unit < ext.FT_UNITS_MIN
            or n_leaf > ext.FT_LEAVES_MAX * n_unit):
        fti[ext.FT_STATE, ext.FS_MODE] = ext.FT_ALWAYS_FULL  # (in full at every tick, as before)
    return np.ascontiguousarray(tree.acct_share, dtype=np.float64), ftk, fti, plan, np.empty(plan.shape[0])


def slurm_supported(backfill_params, extended: bool, dynamic=None) -> str | None:
    """Why ``backfill: slurm`` with these settings cannot run on the compiled kernel (``_slurm``:
    one pool, static priorities or a dynamic one (``multifactor``, classic or Fair Tree;
    ``wfp3``, ``unicef``), no run-time
    estimates, association limits or partition tiers), or ``None``. ``extended``: run-time
    estimates (or another backfill order, which ``slurm`` refuses anyway); ``dynamic``: the
    dynamic priority (the reference's policy object), if any."""
    params = dict(backfill_params or {})
    if extended:
        return "backfill 'slurm' has no compiled version with run-time estimates"
    if params.get("limits") is not None:
        return "backfill 'slurm' with association/QOS limits has no compiled version"
    if params.get("tier") is not None:
        return "backfill 'slurm' with several partition tiers in one pool has no compiled version"
    return None


def run_slurm(*, submit, limit, nodes, dur, rejected, rank, total, users, backfill_params, dynamic=None,
              progress=None):
    """``run_events`` for ``backfill: slurm`` (``_slurm.slurm_steps``), the settings checked by
    ``policies.slurm_backfill.check_backfill_params``; ``dynamic``: ``None`` (static priorities,
    ``rank``) or the reference's dynamic priority (``Multifactor``, ``WFP3``, ``Unicef``), whose ``kernel_args()``
    give its arrays; in slices like :func:`run_events`."""
    kernels = _kernels_for("slurm", SLURM_BACKFILLS)
    from ..policies.slurm_backfill import check_backfill_params
    from . import _extended as ext
    from . import _slurm as sk

    n = int(submit.shape[0])
    if n == 0:
        return np.empty(0), np.empty(0)
    p = check_backfill_params(backfill_params)
    submit, limit, nodes, dur, rank, arrivals = _job_arrays(submit, limit, nodes, dur, rank, rejected)
    big = int(kernels.BIG)
    count = lambda v: big if v == np.inf else int(v)  # noqa: E731
    max_test = count(p["bf_max_job_test"])
    if p["bf_max_job_part"]:  # one partition: its cap and bf_max_job_test count the same jobs
        max_test = min(max_test, p["bf_max_job_part"])
    pf_ = np.zeros(sk.P_F_SIZE)
    pf_[[sk.P_INTERVAL, sk.P_SCHED, sk.P_WINDOW, sk.P_RES]] = (
        p["bf_interval"], p["sched_interval"], p["bf_window"] * 60.0, p["bf_resolution"])
    pi = np.zeros(sk.P_I_SIZE, np.int64)
    pi[[sk.P_MAX_TEST, sk.P_MAX_USER, sk.P_RESERVE, sk.P_DEPTH]] = (
        max_test, p["bf_max_job_user"], p["bf_job_part_count_reserve"], count(p["default_queue_depth"]))
    _, user_index, _ = distinct_codes(np.asarray(users, dtype=np.int64))  # -1 (unknown) is a user too
    n_users = int(user_index.max()) + 1
    begin = np.full(n, np.nan)
    end = np.full(n, np.nan)
    rmax = min(int(total), n) + 1  # running jobs (each holds at least one node)
    size = 1 << max(n - 1, 0).bit_length()  # segment tree leaves (>= n, a power of two)
    job_of_rank = np.empty(n, np.int64)
    job_of_rank[rank] = np.arange(n)
    cap = 2 * (rmax + 2 * n) + 16  # breakpoints: now, releases, window end, two per start or reservation (x2)
    fs = dynamic is not None
    kind = _DYNAMIC[type(dynamic).__name__] if fs else 0
    mf = np.zeros(sk.M_SIZE)
    mf[sk.M_DYN] = kind
    one, ione = np.zeros(1), np.zeros(1, np.int64)
    if fs and kind != 1:  # wfp3/unicef: their two arrays and the sorted queue; no fair-share state
        a_arr, b_arr = (np.ascontiguousarray(x, dtype=np.float64) for x in dynamic.kernel_args())
        multifactor = (a_arr, b_arr, ione, ione, one, one, rank.astype(np.float64), np.empty(n, np.int64),
                       np.empty(n, np.int64), one, one, one, one, one, ione, ione, np.zeros(1, np.bool_),
                       *_fair_tree_arrays(None, 1, 1))
    elif fs:  # multifactor: its arrays, the sorted queue and the fair-share state (as ``run_extended``)
        (a_arr, leaf, acct, sib, snorm, n_acct, w_age, w_fs, max_age, period, decay, t0,
         charge_ended) = dynamic.kernel_args()
        mf[[sk.M_W_AGE, sk.M_W_FS, sk.M_MAX_AGE, sk.M_PERIOD, sk.M_DECAY, sk.M_T0]] = (
            w_age, w_fs, max_age, period, decay, t0)
        mf[sk.M_CHARGE_ENDED] = float(charge_ended)
        mf[sk.M_FAIR_TREE] = float(dynamic.fair_tree)
        mf[sk.M_TWO_LEVELS] = float(dynamic.tree.two_levels)
        n_leaf = int(np.shape(sib)[0])
        multifactor = (
            np.ascontiguousarray(a_arr, dtype=np.float64), one, np.ascontiguousarray(leaf, dtype=np.int64),
            np.ascontiguousarray(acct, dtype=np.int64), np.ascontiguousarray(sib, dtype=np.float64),
            np.ascontiguousarray(snorm, dtype=np.float64),
            rank.astype(np.float64), np.empty(n, np.int64), np.empty(n, np.int64),  # sort key, queue, sort buffer
            np.zeros(n_leaf), np.zeros(n_leaf), np.zeros(n_leaf), np.zeros(max(int(n_acct), 1)), np.zeros(n_leaf),
            np.full(n_leaf, -1, np.int64), np.empty(max(n_leaf, 1), np.int64), np.zeros(n_leaf, np.bool_),
            *_fair_tree_arrays(dynamic, n_leaf, n_acct),
        )  # (usage, node-seconds since the last tick, running nodes, usage per account, cached factors, ...)
    else:  # static priorities: the same types, one element each (unused)
        multifactor = (one, one, ione, ione, one, one, one, ione, ione, one, one, one, one, one, ione, ione,
                       np.zeros(1, np.bool_), *_fair_tree_arrays(None, 1, 1))
    state = (
        submit, limit, nodes, dur, arrivals, rank, np.ascontiguousarray(user_index, dtype=np.int64),
        np.int64(total), pf_, pi, begin, end, np.full(n, np.nan), job_of_rank,
        np.full(2 * size, kernels.BIG, np.int64), np.full(2 * size, np.inf), *_running_arrays(rmax),
        *kernels.profile_arrays(cap, int(total)),
        np.zeros(n_users, np.int64), np.zeros(n_users, np.int64),  # per-user tested count, its cycle stamp
        np.zeros(int(total) + 1 if fs else 1, np.int64),  # sorted queue: waiting jobs per node count
        fs, mf, *multifactor,
    )
    st = np.zeros(max(kernels.ST_SIZE, sk.ST_SIZE), np.int64)
    sf = np.zeros(max(kernels.SF_SIZE, sk.SF_SIZE))
    st[kernels.ST_FREE] = total
    st[kernels.ST_HEAD] = 0 if fs else size  # (the sorted queue starts at its place 0)
    sk.start_clocks(st, sf)
    ext.start_fairshare(st, sf, sk.ST_ACTIVE, sk.SF_ROOT, mf[sk.M_T0] + mf[sk.M_PERIOD] if kind == 1 else np.inf)
    sf[sk.SF_WAKE] = np.inf
    sf[sk.SF_HOLD] = -np.inf
    _run_slices(kernels, sk.slurm_steps, state, st, sf, progress, *_pool_errors("slurm"))
    return begin, end
