"""The compiled kernel (``drevt_sweep.sim.kernel``) against the reference engine, bit for bit.

* hypothesis: random traces for every priority x backfill x enforce_limits, with zero-length
  jobs, simultaneous submits, oversized jobs, run times past the limit, ties in every key, tiny
  limits and epoch-sized times;
* the first 3,000 jobs of the bundled KTH-SP2 trace for every priority x backfill (limits
  enforced, and not enforced for fcfs/sjf);
* a generated overloaded workload (queues of hundreds of jobs) for every backfill;
* the ``kernel=`` switch: "reference" / "fast" / "auto" routing, ``DREVT_KERNEL``, the
  fallback (one warning) when numba cannot be imported, and that importing the engine does not
  import numba.

Each comparison checks begin, end, run_time, killed, rejected and warnings with exact equality
(NaN equal to NaN). The first test compiles the kernels (cached in ``__pycache__`` afterwards).
"""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from drevt_sweep.sim import kernel as fast
from drevt_sweep.sim.engine import BACKFILL_POLICIES as ALL_BACKFILL_POLICIES, COMPRESSION_ORDERS, PRIORITY_POLICIES, simulate
from drevt_sweep.sim.policies import DYNAMIC_PRIORITY_POLICIES, STATIC_PRIORITY_POLICIES
from drevt_sweep.errors import ConfigError
from jobtable_factory import make_jobs
from slices import check_progress_then_interrupt

# Slurm's backfill: tests/test_slurm_kernel.py (kernel) and tests/test_slurm_backfill.py (reference)
BACKFILL_POLICIES = tuple(b for b in ALL_BACKFILL_POLICIES if b != "slurm")

pytestmark = pytest.mark.skipif(fast.load(warn=False) is None, reason="numba is not importable")

FIELDS = ("begin", "end", "run_time", "killed", "rejected")


def assert_same(jobs, run, total, **kw):
    ref = simulate(jobs, run, total, kernel="reference", **kw)
    got = simulate(jobs, run, total, kernel="fast", **kw)
    for name in FIELDS:
        a, b = getattr(ref, name), getattr(got, name)
        assert a.dtype == b.dtype, name
        if a.dtype.kind == "f":
            # bit for bit: same float64 values (and NaN where the reference has NaN)
            same = (a.view(np.int64) == b.view(np.int64)) | (np.isnan(a) & np.isnan(b))
        else:
            same = a == b
        if not same.all():
            row = int(np.flatnonzero(~same)[0])
            raise AssertionError(f"{name} differs first at row {row}: reference {a[row]!r}, fast {b[row]!r} ({kw})")
    assert ref.warnings == got.warnings
    return ref


@st.composite
def traces(draw):
    total = draw(st.integers(1, 12))
    n = draw(st.integers(0, 40))
    base = draw(st.sampled_from([0.0, 0.0, 1e9, 1_700_000_000.5]))
    gaps = draw(st.lists(st.sampled_from([0, 0, 0, 0, 1, 2, 3, 5, 8, 0.5, 2.25, 1e-9]), min_size=n, max_size=n))
    submit = (base + np.cumsum(gaps)).tolist() if n else []
    nodes = draw(st.lists(st.integers(1, total + 2), min_size=n, max_size=n))
    # Tiny limits only near t = 0: at epoch-sized times a limit under half an ulp of ``now``
    # gives ``now + limit == now``, a reservation of no length, and the reference's
    # conservative plan then over-commits the machine (it raises; a known edge of the reference).
    limits = [1, 2, 3, 5, 8, 10, 10, 20, 40, 2.5, 7.75] + ([1e-7, 1e-9] if base == 0 else [1e-3])
    limit = draw(st.lists(st.sampled_from(limits), min_size=n, max_size=n))
    # run time as a fraction of the limit (0, exact limit and past it come up often), or absolute
    frac = draw(st.lists(st.sampled_from([0, 0.25, 0.5, 1, 1, 1, 1.5, 2, 0.3, 0.999]), min_size=n, max_size=n))
    run = [lim * f for lim, f in zip(limit, frac)]
    extra = draw(st.lists(st.sampled_from([None, None, None, 0.0, 4.0, 30.0]), min_size=n, max_size=n))
    run = [r if x is None else x for r, x in zip(run, extra)]
    user = draw(st.lists(st.sampled_from(["a", "b", "c", None]), min_size=n, max_size=n))
    if n and not any(user):
        user[0] = "c"  # at least one known user (without any, user_history and fair-share refuse)
    group = [None if u is None or u == "c" else "G" for u in user]
    return make_jobs(submit, nodes, limit, run, user=user, group=group), total


SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("enforce", [True, False])
@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
@SETTINGS
@given(trace=traces(), priority=st.sampled_from(STATIC_PRIORITY_POLICIES), compression=st.sampled_from(COMPRESSION_ORDERS))
def test_fast_kernel_matches_reference_on_random_traces(trace, priority, backfill, enforce, compression):
    jobs, total = trace
    assert_same(jobs, jobs.actual_run_time, total, priority=priority, backfill=backfill, enforce_limits=enforce,
                compression=compression)


# Dynamic priorities and run-time estimates (``sim.kernel._extended``): every combination the
# compiled kernel runs (conservative with them stays on the reference).
EXTENDED = sorted(fast.EXTENDED_BACKFILLS)
MULTIFACTOR = {"calc_period": 3.0, "decay_half_life": 7.0, "max_age": 20.0,
               "weights": {"age": 100, "fairshare": 1000, "job_size": 10, "partition": 0}}


def extended_options(priority, estimate, sjbf, backfill):
    return dict(priority=priority, backfill=backfill, estimate=estimate,
                backfill_order="sjbf" if sjbf and backfill != "none" else "fcfs",
                priority_params=MULTIFACTOR if priority == "multifactor" else None)


@pytest.mark.parametrize("estimate", ["user", "actual", "user_history"])
@pytest.mark.parametrize("backfill", EXTENDED)
@SETTINGS
@given(trace=traces(), priority=st.sampled_from(("fcfs", "sjf") + DYNAMIC_PRIORITY_POLICIES),
       sjbf=st.booleans(), enforce=st.booleans(), charge_ended=st.booleans())
def test_extended_kernel_matches_reference_on_random_traces(trace, priority, backfill, estimate, sjbf, enforce,
                                                            charge_ended):
    jobs, total = trace
    options = extended_options(priority, estimate, sjbf, backfill)
    if priority == "multifactor":  # (false: Slurm without AccountingStorageEnforce=limits)
        options["priority_params"] = {**MULTIFACTOR, "charge_ended_jobs": charge_ended}
    assert_same(jobs, jobs.actual_run_time, total, enforce_limits=enforce, **options)


@pytest.mark.parametrize("fairshare_by", ["user", "account", "account/user"])
@pytest.mark.parametrize("backfill", EXTENDED)
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(trace=traces(), estimate=st.sampled_from(["user", "actual", "user_history"]), sjbf=st.booleans(),
       enforce=st.booleans())
def test_fair_tree_kernel_matches_reference_on_random_traces(trace, backfill, fairshare_by, estimate, sjbf, enforce):
    """Fair Tree's factors in the EASY/none kernel: all of them at the first key of a tick."""
    jobs, total = trace
    assume(fairshare_by != "account" or (np.asarray(jobs.group_code) >= 0).any())  # (else refused)
    options = extended_options("multifactor", estimate, sjbf, backfill)
    options["priority_params"] = {**MULTIFACTOR, "fairshare": "fair_tree", "fairshare_by": fairshare_by}
    assert_same(jobs, jobs.actual_run_time, total, enforce_limits=enforce, **options)


@pytest.mark.slow  # a real trace against the reference engine; random traces: fast
@pytest.mark.parametrize("estimate, sjbf", [("user", True), ("user_history", False), ("user_history", True),
                                            ("actual", False)])
@pytest.mark.parametrize("priority", ("fcfs",) + DYNAMIC_PRIORITY_POLICIES + ("multifactor+fair_tree",))
def test_extended_kernel_matches_reference_on_kth(kth_head, priority, estimate, sjbf):
    options = extended_options(priority.split("+")[0], estimate, sjbf, "easy")
    if priority.startswith("multifactor"):
        # Slurm's own scale: a re-keying every minute (PriorityCalcPeriod's least), a day's
        # half-life, a week's max age: 60k re-keyings over these 42 days. (MULTIFACTOR's 3 s
        # period made 1.2M of them: 23 s of the reference per case, the suite's slowest CPU.)
        options["priority_params"] = {**MULTIFACTOR, "calc_period": 60.0, "decay_half_life": 86400.0,
                                      "max_age": 604800.0}
        if priority.endswith("+fair_tree"):
            options["priority_params"]["fairshare"] = "fair_tree"
    ref = assert_same(kth_head, kth_head.actual_run_time, 100, **options)
    assert ref.killed.any() and (ref.begin > kth_head.submit).any()
    if priority != "fcfs":  # the priorities decide: not FCFS's schedule (over 1,000 starts differ)
        fcfs = simulate(kth_head, kth_head.actual_run_time, 100, kernel="fast",
                        **extended_options("fcfs", estimate, sjbf, "easy"))
        assert (ref.begin != fcfs.begin).sum() > 100


@pytest.mark.parametrize("priority, estimate", [("multifactor", "user"), ("fcfs", "user_history"),
                                                ("wfp3", "user_history")])
def test_extended_kernel_matches_reference_with_long_queues(priority, estimate):
    jobs = overloaded(3000, 64, seed=11)
    users = [f"u{i % 17}" for i in range(len(jobs))]
    jobs = make_jobs(jobs.submit.tolist(), jobs.num_nodes.tolist(), jobs.time_limit.tolist(),
                     jobs.actual_run_time.tolist(), user=users, group=[f"g{int(u[1:]) % 4}" for u in users])
    params = {"calc_period": 300.0, "decay_half_life": 3600.0} if priority == "multifactor" else None
    assert_same(jobs, jobs.actual_run_time, 64, priority=priority, estimate=estimate, backfill_order="sjbf",
                priority_params=params)


# Slices: both drivers run in slices of ``fast.STEP_BUDGET`` events, report progress between
# them and stop there on an exception from the callback (Ctrl-C); the slice size must not change
# the schedule (a slice ends at an event boundary with all the loop's state stored).
SLICED = [("fcfs", "user", False, "easy"), ("multifactor", "user", False, "easy"),
          ("multifactor", "user_history", True, "easy_drevt"), ("fcfs", "actual", True, "easy"),
          ("wfp3", "user", False, "none"), ("unicef", "actual", False, "easy_drevt")]


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("priority, estimate, sjbf, backfill", SLICED)
def test_slice_size_does_not_change_the_schedule(kth_head, monkeypatch, priority, estimate, sjbf, backfill):
    kw = extended_options(priority, estimate, sjbf, backfill)
    whole = simulate(kth_head, kth_head.actual_run_time, 100, kernel="fast", **kw)
    for budget in (1, 5):
        monkeypatch.setattr(fast, "STEP_BUDGET", budget)
        calls = []
        sliced = simulate(kth_head, kth_head.actual_run_time, 100, kernel="fast",
                          progress=lambda now, done: calls.append(done), **kw)
        assert len(calls) >= len(kth_head) // (2 * budget)  # it really ran in slices of ``budget`` events
        assert (_bits(sliced.begin) == _bits(whole.begin)).all() and (_bits(sliced.end) == _bits(whole.end)).all()


@pytest.mark.parametrize("priority, estimate, sjbf, backfill", SLICED)
def test_progress_between_slices_and_an_interrupt_stops_the_run(kth_head, monkeypatch, priority, estimate, sjbf,
                                                                 backfill):
    monkeypatch.setattr(fast, "STEP_BUDGET", 64)
    kw = extended_options(priority, estimate, sjbf, backfill)
    check_progress_then_interrupt(
        lambda progress: simulate(kth_head, kth_head.actual_run_time, 100, kernel="fast", progress=progress, **kw),
        len(kth_head))


@pytest.fixture(scope="module")
def kth_head():
    from conftest import BUNDLED_KTH
    from drevt_sweep.trace import ReadOptions, read_trace

    jobs = read_trace(BUNDLED_KTH, ReadOptions(trace_format="swf", force_simulation=True))
    return jobs.take(np.arange(3000))


@pytest.mark.slow  # a real trace against the reference engine; random traces: fast
@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
@pytest.mark.parametrize("priority", PRIORITY_POLICIES)
def test_fast_kernel_matches_reference_on_kth(kth_head, priority, backfill):
    if priority in DYNAMIC_PRIORITY_POLICIES and backfill not in fast.EXTENDED_BACKFILLS:
        pytest.skip("dynamic priorities with conservative backfilling run on the reference only")
    ref = assert_same(kth_head, kth_head.actual_run_time, 100, priority=priority, backfill=backfill)
    assert ref.killed.any() and (ref.begin > kth_head.submit).any()  # the cases that matter occur


@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
@pytest.mark.parametrize("priority", ["fcfs", "sjf"])
def test_fast_kernel_matches_reference_on_kth_limits_not_enforced(kth_head, priority, backfill):
    assert_same(kth_head, kth_head.actual_run_time, 100, priority=priority, backfill=backfill, enforce_limits=False)


def overloaded(n: int, nodes: int, seed: int):
    """Jobs arriving faster than the machine can run them: the queue grows to hundreds."""
    rng = np.random.default_rng(seed)
    size = np.where(rng.random(n) < 0.3, 1, rng.integers(1, nodes // 2 + 1, n))
    run = np.round(rng.lognormal(np.log(600), 1.2, n))
    limit = np.ceil(run * rng.uniform(1, 4, n) / 60) * 60
    run[rng.random(n) < 0.05] *= 3  # past the limit
    run[rng.random(n) < 0.02] = 0
    work = (size * np.minimum(run, limit)).sum()
    submit = np.round(np.sort(rng.uniform(0, work / (1.2 * nodes), n)))
    return make_jobs(submit.tolist(), size.tolist(), limit.tolist(), run.tolist())


@pytest.mark.parametrize("backfill", BACKFILL_POLICIES)
@pytest.mark.parametrize("priority", ["fcfs", "smallest"])
def test_fast_kernel_matches_reference_with_long_queues(priority, backfill):
    jobs = overloaded(500 if backfill == "conservative" else 4000, 64, seed=7)
    ref = assert_same(jobs, jobs.actual_run_time, 64, priority=priority, backfill=backfill)
    if backfill == "conservative":
        for compression in COMPRESSION_ORDERS:
            assert_same(jobs, jobs.actual_run_time, 64, priority=priority, backfill=backfill, compression=compression)
    assert np.nanmax(ref.begin - jobs.submit) > 10 * np.median(jobs.time_limit)  # long waits indeed


def test_overdue_jobs_release_together_right_after_now():
    # Limits not enforced. J0 and J1 (2 nodes each) outlive their limits (est. ends 10 and 11);
    # J2 holds 2 nodes until ~1002; 1 of 7 nodes is free at t=20. Both overdue jobs count as
    # ending right after now, together: head J3 (3 nodes) gets the shadow nextafter(20) with
    # 1 + 2 + 2 - 3 = 2 extra nodes, so J4 (1 node, long) backfills at 20 on the extra nodes.
    # (Taking their stale est. ends in turn would give shadow 10 and no extra node.)
    jobs = make_jobs([0, 1, 2, 20, 20], [2, 2, 2, 3, 1], [10, 10, 1000, 10, 1000], [100, 100, 1000, 10, 5])
    for backfill in ("easy", "conservative"):
        s = assert_same(jobs, jobs.actual_run_time, 7, backfill=backfill, enforce_limits=False)
        assert s.begin[4] == 20


# --- the kernel= switch ----------------------------------------------------------------------


def small_trace():
    return make_jobs([0, 0, 1, 2], [2, 3, 1, 9], [10, 5, 3, 4], [10, 2, 3, 1])


def test_kernel_names_are_checked():
    jobs = small_trace()
    with pytest.raises(ConfigError, match="unknown kernel"):
        simulate(jobs, jobs.actual_run_time, 4, kernel="numba")


def test_reservation_hook_needs_the_reference():
    jobs = small_trace()
    hook = lambda now, j, t: None  # noqa: E731
    with pytest.raises(ConfigError, match="on_reservation"):
        simulate(jobs, jobs.actual_run_time, 4, on_reservation=hook, kernel="fast")
    # auto quietly uses the reference, which calls the hook
    calls = []
    s = simulate(jobs, jobs.actual_run_time, 4, backfill="conservative", on_reservation=lambda *a: calls.append(a))
    assert calls and np.isnan(s.begin[3])  # job 3 (9 nodes) is oversized


def test_auto_uses_the_kernel_once_loaded(monkeypatch):
    jobs = small_trace()
    calls = []
    real = fast.run_events
    monkeypatch.setattr(fast, "run_events", lambda **kw: calls.append(1) or real(**kw))
    fast.load()
    simulate(jobs, jobs.actual_run_time, 4)
    assert calls == [1]
    simulate(jobs, jobs.actual_run_time, 4, kernel="reference")
    assert calls == [1]
    monkeypatch.setenv("DREVT_KERNEL", "reference")
    simulate(jobs, jobs.actual_run_time, 4)
    assert calls == [1]
    monkeypatch.setenv("DREVT_KERNEL", "bogus")
    with pytest.raises(ConfigError, match="DREVT_KERNEL"):
        simulate(jobs, jobs.actual_run_time, 4)


def test_small_runs_do_not_load_numba_until_it_pays(monkeypatch):
    monkeypatch.setattr(fast, "_loaded", None)
    monkeypatch.setattr(fast, "_reference_seconds", 0.0)
    assert not fast.worth_loading("easy", 1000)  # about 0.01 s of reference work
    assert fast.worth_loading("conservative", 28_000)  # about 4 s: load
    assert not fast.worth_loading("easy", 28_000)  # a KTH-sized EASY run: 0.28 s so far
    assert fast.worth_loading("easy", 28_000)  # the second one tips it


def test_without_numba_auto_falls_back_with_one_warning(monkeypatch):
    jobs = small_trace()
    want = simulate(jobs, jobs.actual_run_time, 4, kernel="reference")
    monkeypatch.setattr(fast, "_loaded", None)
    monkeypatch.setattr(fast, "_failure", None)
    monkeypatch.setattr(fast, "worth_loading", lambda backfill, n: True)
    monkeypatch.delattr(fast, "_kernels", raising=False)
    monkeypatch.setitem(sys.modules, "drevt_sweep.sim.kernel._kernels", None)  # import fails
    with pytest.warns(RuntimeWarning, match="compiled simulation kernel is unavailable"):
        got = simulate(jobs, jobs.actual_run_time, 4)
    assert np.array_equal(got.begin, want.begin, equal_nan=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        simulate(jobs, jobs.actual_run_time, 4)  # no second warning
    with pytest.raises(ConfigError, match="unavailable"):
        simulate(jobs, jobs.actual_run_time, 4, kernel="fast")


def test_importing_the_engine_does_not_import_numba():
    code = "import sys, drevt_sweep.sim.engine, drevt_sweep.sim.kernel; sys.exit('numba' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_empty_and_all_rejected_tables():
    empty = make_jobs([], [], [], [])
    for backfill in BACKFILL_POLICIES:
        assert len(simulate(empty, empty.actual_run_time, 4, backfill=backfill, kernel="fast")) == 0
    jobs = make_jobs([0, 1], [5, 6], [1, 1], [1, 1])
    for backfill in BACKFILL_POLICIES:
        assert_same(jobs, jobs.actual_run_time, 4, backfill=backfill)


def test_warm_loads_the_compiled_code_a_first_run_would_need():
    """A sweep worker warms up while the trace is read; its first seed must not pay numba's
    cache load (importing the module alone does not load machine code)."""
    code = (
        "import sys; from drevt_sweep.sim import kernel as fast\n"
        "assert fast.warm('bogus') is False\n"
        "assert fast.warm('easy') is True\n"
        "k = fast.load()\n"
        "assert k.queue_policy_steps.signatures and not k.conservative_steps.signatures\n"
        "assert fast.warm('conservative') and k.conservative_steps.signatures\n"
        "from drevt_sweep.sim.kernel import _slurm\n"
        "assert not _slurm.slurm_steps.signatures and fast.warm('slurm') and _slurm.slurm_steps.signatures\n"
    )
    run_python(code)


def test_prepare_is_the_drivers_one_call():
    """A driver says what it will run; the kernel decides: a few small runs load nothing, many
    load numba, and a warming worker (no job count) gets the machine code at once."""
    code = (
        "import sys; from drevt_sweep.sim import kernel\n"
        "assert kernel.prepare('easy', 1000, 2) is False and 'numba' not in sys.modules\n"
        "assert kernel.prepare(None, 1000, 500) is False and 'numba' not in sys.modules\n"
        "assert kernel.prepare('easy', 28_000, 100) is False\n"
        "assert kernel.worth_loading('easy', 28_000)  # the expected runs pay for it together\n"
        "assert kernel.prepare('conservative') is True\n"
        "assert kernel.load().conservative_steps.signatures\n"
    )
    run_python(code)


def run_python(code: str) -> None:
    """Run ``code`` in a fresh interpreter (what a new sweep worker is) and require success."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
