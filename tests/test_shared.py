"""Shared nodes (issue 14): jobs packed onto nodes by cores, GPUs and memory; EASY's shadow
time and extra resources, conservative's per-node reservations; hand-computed schedules and
hypothesis invariants (no node over its cores/GPUs/memory; partitions never exchange nodes)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jobtable_factory import make_jobs
from slices import check_progress_then_interrupt

from drevt_sweep.sim.machine import Machine, Partition, place_jobs
from drevt_sweep.sim.partitioned import simulate_machine
from drevt_sweep.sim.shared import simulate_shared

POLICIES = ("none", "easy", "easy_drevt", "conservative")


def shared_run(jobs, partition, cores, gpus=None, memory=None, backfill="easy", **kw):
    n = len(jobs)
    return simulate_shared(
        jobs, jobs.actual_run_time, partition, np.asarray(cores),
        np.asarray(gpus if gpus is not None else [0] * n),
        np.asarray(memory if memory is not None else [0.0] * n, dtype=float),
        backfill=backfill, kernel="reference", **kw)


def test_packing_by_cores_gpus_and_memory():
    # One node: 4 cores, 1 GPU, 1000 MiB.
    #  A: 2 cores, 600 MiB, 0..10 ; B: 2 cores, 300 MiB, 0..5 (both fit together)
    #  C (t=1): 1 core, 200 MiB: cores are all taken -> waits for B (5), then 100+300 MiB free
    #  D (t=1): 0 cores... (1 core), 1 GPU, 50 MiB: no core until B ends either; FCFS after C:
    #  at 5 both C and D fit (cores 2 free, memory 400 free, GPU free) -> 5..
    part = Partition("p", 1, cores=4, gpus=1, memory=1000, sharing="shared")
    jobs = make_jobs([0, 0, 1, 1], [1] * 4, [10, 5, 10, 10], [10, 5, 10, 10])
    for backfill in POLICIES:
        s = shared_run(jobs, part, [2, 2, 1, 1], [0, 0, 0, 1], [600, 300, 200, 50], backfill)
        assert s.begin.tolist() == [0, 0, 5, 5], backfill
        assert [s.nodes_of(j) for j in range(4)] == [[0]] * 4
    # Memory decides: C asks 500 MiB, more than the 400 free after B: waits for A (10).
    s = shared_run(jobs, part, [2, 2, 1, 1], [0, 0, 0, 1], [600, 300, 500, 50], "none")
    assert s.begin.tolist() == [0, 0, 10, 10]  # none: D waits behind C
    s = shared_run(jobs, part, [2, 2, 1, 1], [0, 0, 0, 1], [600, 300, 500, 50], "easy")
    assert s.begin.tolist() == [0, 0, 10, 5]  # EASY: D ends at 15 > shadow 10, but C still fits then


def test_first_fit_by_node_index_over_several_nodes():
    # 3 nodes of 4 cores: A takes 3 cores of node 0; B (2 nodes x 2 cores) skips node 0 (1 left)
    # and takes nodes 1 and 2; C (1 core) goes back to node 0; D (2 nodes x 2) fits 1 and 2.
    part = Partition("p", 3, cores=4, sharing="shared")
    jobs = make_jobs([0, 0, 0, 0], [1, 2, 1, 2], [10] * 4, [10] * 4)
    s = shared_run(jobs, part, [3, 2, 1, 2])
    assert s.begin.tolist() == [0, 0, 0, 0]
    assert [s.nodes_of(j) for j in range(4)] == [[0], [1, 2], [0], [1, 2]]


@pytest.mark.parametrize("priority", ["fcfs", "wfp3"])
def test_jobs_asking_for_no_cores_all_run_at_once_on_the_compiled_kernel(priority):
    # 50 jobs of 0 cores on one 1-core node run together: more running jobs than cores (the
    # compiled queue driver once sized its running list by cores and wrote past its end)
    part = Partition("p", 1, cores=1, memory=1000, sharing="shared")
    n = 50
    jobs = make_jobs([0] * n, [1] * n, [100] * n, [50] * n)
    for kernel in ("reference", "fast"):
        s = simulate_shared(jobs, jobs.actual_run_time, part, np.zeros(n, np.int64), np.zeros(n, np.int64),
                            np.full(n, 1.0), priority=priority, backfill="easy", kernel=kernel)
        assert s.begin.tolist() == [0.0] * n, kernel


def test_gpu_job_blocked_while_cores_are_free():
    # One node: 8 cores, 1 GPU. A: 1 core + the GPU, 0..10. B (t=1): 1 core + 1 GPU: seven cores
    # are free but no GPU: B waits for A (10). C (t=2): 1 core, no GPU, limit 100: under none it
    # waits behind B and starts with it at 10; under EASY its core is "extra" at B's shadow
    # time (10): it starts at 2.
    part = Partition("p", 1, cores=8, gpus=1, sharing="shared")
    jobs = make_jobs([0, 1, 2], [1] * 3, [10, 10, 100], [10, 10, 100])
    args = ([1, 1, 1], [1, 1, 0])
    assert shared_run(jobs, part, *args, backfill="none").begin.tolist() == [0, 10, 10]
    assert shared_run(jobs, part, *args, backfill="easy").begin.tolist() == [0, 10, 2]
    # easy_drevt has no extra-resources rule: C would end at 102 > 10, so it waits.
    assert shared_run(jobs, part, *args, backfill="easy_drevt").begin.tolist() == [0, 10, 10]
    assert shared_run(jobs, part, *args, backfill="conservative").begin.tolist() == [0, 10, 2]


def _reservation_case():
    # 2 nodes x 4 cores; run = limit for every job.
    #  J0: node 0, 4 cores, 0..10 ; J1: node 1, 2 cores, 0..20
    #  H (t=1): 2 nodes x 3 cores. Node 1 keeps only 2 free until J1 ends: EASY's shadow is 20
    #     (at 10 node 0 is free but node 1 still holds J1); H runs 20..30 on nodes 0 and 1.
    #  X (t=2): 1 node x 2 cores, limit 30: fits now on node 1, but ends at 32 > 20 and with its
    #     2 cores taken from node 1 at the shadow time H no longer fits: not backfilled; at 10
    #     (node 0 free) the same; it waits for H: 30..60 on node 0.
    #  Y (t=2): 1 node x 1 core, limit 5: ends at 7 <= 20: backfilled at 2 on node 1.
    part = Partition("p", 2, cores=4, sharing="shared")
    jobs = make_jobs([0, 0, 1, 2, 2], [1, 1, 2, 1, 1], [10, 20, 10, 30, 5], [10, 20, 10, 30, 5])
    return part, jobs, [4, 2, 3, 2, 1]


@pytest.mark.parametrize("backfill", ["easy", "conservative"])
def test_reservation_in_a_shared_partition(backfill):
    part, jobs, cores = _reservation_case()
    promised = []
    s = shared_run(jobs, part, cores, backfill=backfill,
                   on_reservation=lambda now, j, start: promised.append((now, j, start)))
    assert s.begin.tolist() == [0, 0, 20, 30, 2]
    assert s.nodes_of(2) == [0, 1] and s.nodes_of(4) == [1] and s.nodes_of(3) == [0]
    assert (1.0, 2, 20.0) in promised  # the head's reservation at its shadow time
    if backfill == "conservative":
        assert (2.0, 3, 30.0) in promised  # X is promised its start on arrival
    none = shared_run(jobs, part, cores, backfill="none")
    assert none.begin.tolist() == [0, 0, 20, 30, 30]  # no backfilling: Y waits behind X


def test_a_job_too_big_for_every_node_is_rejected_with_its_reason():
    machine = Machine("m", (Partition("p", 2, cores=4, gpus=2, memory=1000, sharing="shared"),))
    jobs = make_jobs([0, 0, 0, 0], [1, 1, 1, 3], [10] * 4, [10] * 4, queue=["p"] * 4)
    jobs = jobs.replace(cores_per_node=np.array([4, 2, 5, 1]), gpus_per_node=np.array([0, 0, 0, 0]),
                        memory_per_node=np.array([100.0, 2000.0, 10.0, 10.0]))
    s = simulate_machine(jobs, jobs.actual_run_time, machine, kernel="reference")
    assert s.rejected.tolist() == [False, True, True, True]
    assert s.placement.counts() == {"rejected_nodes": 1, "rejected_cores": 1, "rejected_memory": 1}
    assert s.begin[0] == 0


# ------------------------------------------------------------------ properties
@st.composite
def shared_workloads(draw):
    n_nodes = draw(st.integers(1, 4))
    n = draw(st.integers(1, 25))
    cap = (draw(st.integers(1, 8)), draw(st.integers(0, 3)), float(draw(st.integers(1, 4)) * 256))
    submit = np.cumsum(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))).astype(float)
    nodes = draw(st.lists(st.integers(1, n_nodes), min_size=n, max_size=n))
    limit = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    run = [draw(st.integers(0, lim + 3)) for lim in limit]
    cores = draw(st.lists(st.integers(1, cap[0]), min_size=n, max_size=n))
    gpus = draw(st.lists(st.integers(0, cap[1]), min_size=n, max_size=n))
    memory = draw(st.lists(st.sampled_from([0.0, 64.0, 128.0, cap[2]]), min_size=n, max_size=n))
    queue = draw(st.lists(st.sampled_from(["a", "b"]), min_size=n, max_size=n))
    return n_nodes, cap, make_jobs(submit, nodes, limit, run, queue=queue), cores, gpus, memory


def _max_use_per_node(s, jobs, cores, gpus, memory, n_nodes):
    """Peak (cores, GPUs, memory) in use on each node, ends before starts at equal times."""
    peaks = []
    for node in range(n_nodes):
        events = []
        for j in range(len(jobs)):
            if node in s.nodes_of(j):
                events.append((s.end[j], 0, j))
                events.append((s.begin[j], 1, j))
        use = np.zeros(3)
        peak = np.zeros(3)
        for _, kind, j in sorted(events):
            sign = 1 if kind else -1
            use += sign * np.array([cores[j], gpus[j], memory[j]])
            peak = np.maximum(peak, use)
        peaks.append(peak)
    return peaks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared_workloads(), st.sampled_from(POLICIES), st.booleans())
def test_no_node_is_ever_over_its_cores_gpus_or_memory(workload, backfill, enforce):
    n_nodes, cap, jobs, cores, gpus, memory = workload
    part = Partition("p", n_nodes, cores=cap[0], gpus=cap[1], memory=cap[2], sharing="shared")
    s = shared_run(jobs, part, cores, gpus, memory, backfill, enforce_limits=enforce)
    assert (s.begin >= jobs.submit).all()
    assert np.array_equal(s.end, s.begin + s.run_time)
    for j in range(len(jobs)):
        where = s.nodes_of(j)
        assert len(where) == jobs.num_nodes[j] == len(set(where))
        assert all(0 <= i < n_nodes for i in where)
    for peak in _max_use_per_node(s, jobs, cores, gpus, memory, n_nodes):
        assert peak[0] <= cap[0] and peak[1] <= cap[1] and peak[2] <= cap[2]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared_workloads(), st.sampled_from(POLICIES))
def test_partitions_never_exchange_nodes(workload, backfill):
    """A partition's schedule is the one it gets alone: the other partition's jobs change
    nothing, whatever their load."""
    n_nodes, cap, jobs, cores, gpus, memory = workload
    jobs = jobs.replace(cores_per_node=np.asarray(cores), gpus_per_node=np.asarray(gpus),
                        memory_per_node=np.asarray(memory, dtype=float))
    a = Partition("A", n_nodes, cores=cap[0], gpus=cap[1], memory=cap[2], sharing="shared", queues=("a",))
    b = Partition("B", 1, queues=("b",))  # exclusive: jobs wider than 1 node are rejected
    both = simulate_machine(jobs, jobs.actual_run_time, Machine("m", (a, b)), backfill=backfill,
                            kernel="reference")
    in_a = both.placement.partition == 0
    alone_rows = np.flatnonzero(jobs.queue == "a")
    if alone_rows.size:
        alone = simulate_machine(jobs.take(alone_rows), jobs.actual_run_time[alone_rows],
                                 Machine("m", (a,)), backfill=backfill, kernel="reference")
        assert np.array_equal(alone.begin, both.begin[alone_rows], equal_nan=True)
    # B's exclusive jobs never overlap on its single node
    rows_b = np.flatnonzero(both.placement.partition == 1)
    spans = sorted(zip(both.begin[rows_b], both.end[rows_b]))
    assert all(e0 <= b1 for (_, e0), (b1, _) in zip(spans, spans[1:]))
    assert not (in_a & (jobs.queue != "a")).any()
    assert place_jobs(jobs, Machine("m", (a, b))).partition.tolist() == both.placement.partition.tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(shared_workloads(), st.sampled_from(POLICIES), st.booleans(),
       st.sampled_from(("fcfs", "sjf", "largest")))
def test_compiled_shared_kernel_is_the_reference_bit_for_bit(workload, backfill, enforce, priority):
    n_nodes, cap, jobs, cores, gpus, memory = workload
    memory = [m if m != 64.0 else 100.5 for m in memory]  # a fraction of a MiB: KiB rounding
    part = Partition("p", n_nodes, cores=cap[0], gpus=cap[1], memory=cap[2], sharing="shared")
    ref = shared_run(jobs, part, cores, gpus, memory, backfill, enforce_limits=enforce, priority=priority)
    fast = simulate_shared(jobs, jobs.actual_run_time, part, np.asarray(cores), np.asarray(gpus),
                           np.asarray(memory, dtype=float), backfill=backfill, kernel="fast",
                           enforce_limits=enforce, priority=priority)
    assert np.array_equal(ref.begin, fast.begin) and np.array_equal(ref.end, fast.end)
    assert np.array_equal(ref.node_start, fast.node_start) and np.array_equal(ref.node_list, fast.node_list)


@pytest.mark.parametrize("n_nodes,load,priority", [(2, 0.95, "fcfs"), (4, 1.0, "sjf"),
                                                    pytest.param(6, 1.2, "largest", marks=pytest.mark.slow)])
def test_conservative_plan_kept_between_passes_is_the_references_plan(n_nodes, load, priority):
    """The kernel's persistent conservative plan (limits enforced: a job is placed again only
    when a logged growth could move it) against the reference, which rebuilds its plan at
    every early end, on 1,200 jobs with queues of tens to hundreds of jobs."""
    jobs, part = _busy_shared_jobs(n=1200, n_nodes=n_nodes, seed=n_nodes, limits=(1.0, 4.0), load=load)
    ref, fast = _reference_and_kernel(jobs, part, True, priority)
    assert _same_schedule(ref, fast)
    assert np.nanmax(fast.begin - jobs.submit) > 10 * np.median(jobs.time_limit)  # long waits: a real queue


@pytest.mark.parametrize("n_nodes,limits,load,priority", [(4, (0.3, 2.0), 1.0, "fcfs"), (3, (0.5, 1.5), 1.2, "sjf"),
                                                          (6, (0.2, 1.2), 0.9, "largest")])
def test_conservative_without_limits_is_the_reference_when_many_jobs_overrun(n_nodes, limits, load, priority):
    """Limits not enforced and a quarter to two thirds of the jobs running past theirs: every
    pass replans, a job past its limit holds its nodes until just after now (a reservation at
    now on them is placed again from scratch) and reservations left in the past are placed
    anew; the kept plan against the reference on 400 busy jobs, node lists too."""
    jobs, part = _busy_shared_jobs(n=400, n_nodes=n_nodes, seed=n_nodes, limits=limits, load=load)
    over = jobs.actual_run_time > jobs.time_limit
    assert over.mean() > 0.25
    ref, fast = _reference_and_kernel(jobs, part, False, priority)
    assert _same_schedule(ref, fast)
    assert np.nanmax(fast.begin - jobs.submit) > 3600  # long waits: a real queue


def test_conservative_without_limits_a_hold_past_a_limit_counts_once_at_two_events_at_one_time():
    # One node of 2 cores, 4 one-core jobs at 0 with limit 1, limits not enforced: A runs 1 s,
    # B 2 s (past its limit), C and D 0 s. FCFS.
    #  t=0: A and B start on the two cores; C and D are reserved at 1 (when A and B should end).
    #  t=1: A ends. B is past its limit: it holds its core until just after 1, so the
    #       reservations at 1 are placed again in order: C finds one core at 1 (B's hold and
    #       D's reservation take both) -> just after 1; D then fits at 1 beside B -> starts,
    #       ends at once.
    #  t=1 (D's completion): B still holds one core until just after 1 -- once: the kernel
    #       counted its hold again at this second event at the same time, found the node full
    #       and left C waiting until B's end at 2 -- so C fits at 1 on the other core.
    part = Partition("p", 1, cores=2, sharing="shared")
    jobs = make_jobs([0] * 4, [1] * 4, [1] * 4, [1, 2, 0, 0])
    for kernel in ("reference", "fast"):
        s = simulate_shared(jobs, jobs.actual_run_time, part, np.ones(4, np.int64), np.zeros(4, np.int64),
                            np.zeros(4), backfill="conservative", kernel=kernel, enforce_limits=False)
        assert s.begin.tolist() == [0, 0, 1, 1], kernel
        assert s.end.tolist() == [1, 2, 1, 1], kernel
        assert [s.nodes_of(j) for j in range(4)] == [[0]] * 4, kernel


@pytest.mark.parametrize("n_nodes,seed,priority", [(2, 0, "fcfs"), (3, 1, "largest"), (4, 1, "sjf")])
def test_conservative_without_limits_is_the_reference_with_jobs_that_end_at_once(n_nodes, seed, priority):
    """As above on 300 busy jobs, a quarter of them of length 0 (each a second event at the time
    it starts) and many past their limits: the kernel is the reference, node lists too (the
    kernel that took the holds past a limit again at such an event failed all three)."""
    jobs, part = _busy_shared_jobs(n=300, n_nodes=n_nodes, seed=seed, limits=(0.3, 1.5), load=1.0)
    run = jobs.actual_run_time.copy()
    run[np.random.default_rng(seed + 100).random(len(run)) < 0.25] = 0.0
    ref, fast = _reference_and_kernel(jobs.replace(actual_run_time=run), part, False, priority)
    assert _same_schedule(ref, fast)


def test_conservative_without_limits_is_the_reference_on_the_generated_shared_workload():
    """The KTH-SP2-like generated shared-node workload of the benchmarks (64 nodes of 64 cores,
    ``bench_machine.shared_workload``, 2,000 jobs, load 0.9) with a tenth of its jobs running
    1-1.5 times their limits, limits not enforced: the kernel is the reference, node lists
    too. (At 3,000 jobs and load 1.0 it found the rounding of ``_longest_run``'s bound: the
    test of that bound below; 15 s of reference there.)"""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "bench_machine", Path(__file__).resolve().parents[1] / "benchmarks" / "bench_machine.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    jobs = bench.shared_workload(2000, load=0.9)
    rng = np.random.default_rng(22)
    run = jobs.actual_run_time.copy()
    over = rng.random(len(jobs)) < 0.1
    run[over] = np.round(jobs.time_limit[over] * rng.uniform(1.0, 1.5, over.sum())) + 1.0
    jobs = jobs.replace(actual_run_time=run)
    part = Partition("shared", bench.SHARED_MACHINE_NODES, cores=64, gpus=4, memory=262144, sharing="shared")
    ref, fast = _reference_and_kernel(jobs, part, False, "fcfs")
    assert _same_schedule(ref, fast)
    assert np.nanmax(fast.begin - jobs.submit) > 3600


def _reference_and_kernel(jobs, part, enforce, priority):
    pytest.importorskip("numba")
    from drevt_sweep.sim.kernel import load as load_kernel

    if load_kernel(warn=False) is None:
        pytest.skip("numba kernel unavailable")
    return [simulate_shared(jobs, jobs.actual_run_time, part, jobs.cores_per_node, jobs.gpus_per_node,
                            jobs.memory_per_node, backfill="conservative", kernel=kernel, enforce_limits=enforce,
                            priority=priority) for kernel in ("reference", "fast")]


def _same_schedule(a, b):
    return ((_bits(a.begin) == _bits(b.begin)).all() and (_bits(a.end) == _bits(b.end)).all()
            and np.array_equal(a.node_start, b.node_start) and np.array_equal(a.node_list, b.node_list))


@pytest.mark.parametrize("enforce", [True, False])
@pytest.mark.parametrize("width,length,everywhere", [(1, 1, False), (3, 2, False), (4, 8, False), (32, 256, True)])
def test_conservative_arrays_too_short_are_made_longer_where_the_event_stopped(monkeypatch, width, length,
                                                                               everywhere, enforce):
    """The kept-plan driver runs without numba's runtime, so it cannot grow its per-node
    profiles or its growth log itself: an event stops before an early completion, a job's
    placement or (limits not enforced) a hold past a job's limit or a reservation left in the
    past given back, any of which could overflow them, and goes on after the caller made them
    longer. Started far too short, or stopped at every such place (``STOP_EVERYWHERE``: every
    saved flag and place is then used), they give the default's schedule (and the reference's:
    the tests above), and every place was stopped at."""
    from drevt_sweep.sim.kernel import shared as kernel

    # Stopped everywhere, 700 jobs still stop ~350 times at a completion, ~1,200 before a pass
    # and ~340,000 in a round (limits not enforced: 0.9 s against 5.5 s of CPU for 1,500 jobs).
    jobs, part = _busy_shared_jobs(n=700 if everywhere else 1500)
    if everywhere:  # run times on a 10-minute grid: several ends at once, the first early
        jobs = jobs.replace(actual_run_time=np.ceil(jobs.actual_run_time / 600.0) * 600.0)
    whole = _fast_shared(jobs, part, "conservative", enforce_limits=enforce)
    counters: dict = {}
    run = kernel._run_conservative_profile
    monkeypatch.setattr(kernel, "PROFILE_WIDTH", width)
    monkeypatch.setattr(kernel, "LOG_LENGTH", length)
    monkeypatch.setattr(kernel, "STOP_EVERYWHERE", everywhere)
    monkeypatch.setattr(kernel, "_run_conservative_profile",
                        lambda *a: run(*a, counters=counters))
    short = _fast_shared(jobs, part, "conservative", enforce_limits=enforce)
    assert (_bits(short.begin) == _bits(whole.begin)).all() and (_bits(short.end) == _bits(whole.end)).all()
    assert np.array_equal(short.node_list, whole.node_list)
    if enforce or everywhere:
        assert counters["widened_at_completion"] > 0 and counters["widened_in_round"] > 0
    else:  # (without limits the holds before a pass come first: widened there, the rest may fit)
        assert sum(counters.values()) > 0
    if enforce:
        assert counters["widened_before_pass"] == 0
    elif everywhere:
        assert counters["widened_before_pass"] > 0


# ------------------------------------------------------------------ slices of the compiled kernels
# The shared-node queue policies and the conservative kernel run in slices of ``kernel.STEP_BUDGET`` events like the pool
# kernels: progress between slices, an exception from the callback (Ctrl-C) stops the run there,
# and the slice size never changes the schedule (a slice ends at an event boundary with all the
# loop's state stored).
SLICED_POLICIES = [("none", True), ("easy", True), ("easy_drevt", False), ("conservative", True),
                   ("conservative", False)]  # (backfill, enforce_limits): conservative with and without limits


def _busy_shared_jobs(n=1500, n_nodes=4, seed=7, limits=(0.8, 4.0), load=1.1):
    """``n`` jobs on ``n_nodes`` nodes of 16 cores, 2 GPUs, 32 GiB, offered about ``load`` times
    what the nodes hold: a queue of tens of jobs, so EASY reserves and backfills throughout.
    Limits are ``limits`` times the run times, rounded up to minutes (some killed)."""
    rng = np.random.default_rng(seed)
    cores = np.where(rng.random(n) < 0.3, 1, rng.integers(1, 17, n)).astype(np.int64)
    width = np.where(rng.random(n) < 0.1, rng.integers(2, n_nodes + 1, n), 1).astype(np.int64)
    gpus = np.where(rng.random(n) < 0.2, rng.integers(1, 3, n), 0).astype(np.int64)
    memory = (cores * rng.choice([512.0, 1024.0, 2048.0], n)).astype(float)
    run = np.maximum(np.round(rng.lognormal(np.log(300.0), 1.2, n)), 1.0)
    limit = np.maximum(np.ceil(run * rng.uniform(*limits, n) / 60.0) * 60.0, 60.0)
    span = float((width * cores * run).sum()) / (load * n_nodes * 16)
    submit = np.round(np.cumsum(rng.exponential(1.0, n)) * span / n)
    jobs = make_jobs(submit, width, limit, run, queue=["p"] * n)
    part = Partition("p", n_nodes, cores=16, gpus=2, memory=32 * 1024.0, sharing="shared", queues=("p",))
    jobs = jobs.replace(cores_per_node=cores, gpus_per_node=gpus, memory_per_node=memory)
    return jobs, part


@pytest.fixture(scope="module")
def busy_shared():
    pytest.importorskip("numba")
    from drevt_sweep.sim.kernel import load as load_kernel

    if load_kernel(warn=False) is None:
        pytest.skip("numba kernel unavailable")
    return _busy_shared_jobs()


def _fast_shared(jobs, part, backfill, **kw):
    return simulate_shared(jobs, jobs.actual_run_time, part, jobs.cores_per_node, jobs.gpus_per_node,
                           jobs.memory_per_node, backfill=backfill, kernel="fast", **kw)


def _bits(a):
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


@pytest.mark.parametrize("backfill, enforce", SLICED_POLICIES)
def test_shared_slice_size_does_not_change_the_schedule(busy_shared, monkeypatch, backfill, enforce):
    from drevt_sweep.sim import kernel

    jobs, part = busy_shared
    whole = _fast_shared(jobs, part, backfill, enforce_limits=enforce)
    assert np.nanmax(whole.begin - jobs.submit) > 3600  # long waits: a real queue
    for budget in (1, 5):
        monkeypatch.setattr(kernel, "STEP_BUDGET", budget)
        calls = []
        sliced = _fast_shared(jobs, part, backfill, enforce_limits=enforce,
                              progress=lambda now, done: calls.append(done))
        assert len(calls) >= len(jobs) // (2 * budget)  # it really ran in slices of ``budget`` events
        assert (_bits(sliced.begin) == _bits(whole.begin)).all() and (_bits(sliced.end) == _bits(whole.end)).all()
        assert np.array_equal(sliced.node_start, whole.node_start)
        assert np.array_equal(sliced.node_list, whole.node_list)


@pytest.mark.parametrize("backfill, enforce", SLICED_POLICIES)
def test_shared_progress_between_slices_and_an_interrupt_stops_the_run(busy_shared, monkeypatch, backfill, enforce):
    """Through ``simulate_machine`` (the path of a sweep): its ``progress`` reaches the kernel."""
    from drevt_sweep.sim import kernel

    monkeypatch.setattr(kernel, "STEP_BUDGET", 64)
    jobs, part = busy_shared
    machine = Machine("m", (part,))
    check_progress_then_interrupt(
        lambda progress: simulate_machine(jobs, jobs.actual_run_time, machine, backfill=backfill, kernel="fast",
                                          enforce_limits=enforce, progress=progress),
        len(jobs))


def test_shared_reference_reports_progress():
    """The reference loop calls ``progress`` every ``engine.PROGRESS_EVERY_EVENTS`` events too."""
    from drevt_sweep.sim.engine import PROGRESS_EVERY_EVENTS

    jobs, part = _busy_shared_jobs(n=400, n_nodes=2, seed=3)
    seen = []
    simulate_shared(jobs, jobs.actual_run_time, part, jobs.cores_per_node, jobs.gpus_per_node,
                    jobs.memory_per_node, backfill="easy", kernel="reference",
                    progress=lambda now, done: seen.append((now, done)))
    assert len(seen) >= 400 // PROGRESS_EVERY_EVENTS
    assert [t for t, _ in seen] == sorted(t for t, _ in seen) and 0 < seen[-1][1] < 400


def test_a_run_bound_is_never_shorter_than_a_window_that_fits_in_floats():
    """The kept plan skips a job whose limit is longer than the longest run of free cores on
    the nodes that grew (``_longest_run``). A window [t, t + L) fits when the float sum t + L
    does not pass the run's end b, which can hold with b - t < L: from t = nextafter(now)
    (after a hold past a limit, limits not enforced) 30166.000000000004 + 5460 rounds to
    35626 exactly, so that window fits a run ending at 35626, 5459.999999999996 long. (The
    generated shared workload at 3,000 jobs, load 1.0, a tenth past their limits, placed a
    job on node 56 instead of 55 at t = 30166 until the bound allowed for the rounding.) On
    random profiles with such times: whenever a node fits L from a start before ``reach``, the
    bound is at least L."""
    pytest.importorskip("numba")
    from drevt_sweep.sim.kernel import shared as kernel

    rng = np.random.default_rng(22)
    checked = 0
    for case in range(400):
        PT = np.full((1, 64), -np.inf)
        PC = np.full((1, 64), 64, np.int64)
        PG = np.zeros((1, 64), np.int64)
        PM = np.zeros((1, 64), np.int64)
        PB = np.ones(1, np.int64)
        now = 30166.0 if case == 0 else float(rng.choice([30166.0, 0.1, 7.3e8]))
        soon = np.nextafter(now, np.inf)
        if case == 0:  # the case above
            holds = [(now, soon, 64), (35626.0, 40000.0, 64)]
            reach = 40000.0
        else:
            holds = [(now, soon, int(rng.integers(1, 65)))]
            for _ in range(rng.integers(1, 6)):
                s = now + float(rng.choice([0.0, 0.3, 1.0, 600.0, 5460.0])) * float(rng.integers(1, 8))
                s = np.nextafter(s, np.inf) if rng.random() < 0.5 else s
                holds.append((s, s + float(rng.choice([60.0, 0.1, 5460.0])), int(rng.integers(1, 65))))
            reach = now + float(rng.choice([1.0, 100.0, 1e5]))
        for s, e, c in holds:
            kernel._prof_take(PT, PC, PG, PM, PB, 0, s, e, c, 0, 0, 1)
        for c in (1, 2, 32, 64):
            bound = kernel._longest_run(PT, PC, PB, 0, now, reach, c)
            for b in range(1, PB[0]):  # windows that end right at a breakpoint, and around it
                for t in (now, soon, *PT[0, 1:PB[0]]):
                    if not now <= t < reach:
                        continue
                    d = PT[0, b] - t  # (limits are whole or tenths of seconds, times are not)
                    for L in (d, np.nextafter(d, np.inf), np.ceil(d), np.ceil(d * 10.0) / 10.0):
                        if L >= 0.05 and kernel._node_earliest(PT, PC, PG, PM, PB, 0, t, L, c, 0, 0, t) == t:
                            assert bound >= L, (case, c, t, L, bound)
                            checked += 1
    assert checked > 1000


def test_earliest_start_without_a_jobs_own_slot_is_that_of_the_profile_with_it_given_back():
    """``_node_earliest_without`` reads a node's profile as if one job's slot were given back,
    without changing it: on random profiles (jobs of random sizes held on random windows,
    some ending where equal ones start), for every held job and search bound, it gives what taking
    the slot out, searching and putting it back gives (the kept plan's own-node check did that)."""
    pytest.importorskip("numba")
    from drevt_sweep.sim.kernel import shared as kernel

    rng = np.random.default_rng(25)
    cap_c, cap_g, cap_m = 16, 2, 64
    width = 256
    checked = 0
    for case in range(300):
        PT = np.full((1, width), -np.inf)
        PC = np.full((1, width), cap_c, np.int64)
        PG = np.full((1, width), cap_g, np.int64)
        PM = np.full((1, width), cap_m, np.int64)
        PB = np.ones(1, np.int64)
        held = []
        for _ in range(rng.integers(1, 12)):
            c = int(rng.choice([0, 4, 4, 8])) if case % 2 else int(rng.integers(0, 9))  # (equal requests
            g, m = (c // 4) % 2, 4 * c  # end and start at one time: merged breakpoints, cut pieces)
            s = float(rng.choice([0, 5, 10, 15, 20, 30])) + float(rng.integers(0, 3)) * 5
            e = s + float(rng.choice([5, 10, 15, 25]))
            if (kernel._node_earliest(PT, PC, PG, PM, PB, 0, s, e - s, c, g, m, s) == s):
                kernel._prof_take(PT, PC, PG, PM, PB, 0, s, e, c, g, m, 1)
                held.append((s, e, c, g, m))
        for s0, s1, c, g, m in held:
            for L in (1.0, 5.0, s1 - s0, 40.0):
                for H in (s0, np.nextafter(s0, -np.inf), 12.0, np.inf):
                    got = kernel._node_earliest_without(PT, PC, PG, PM, PB, 0, 0.0, L, c, g, m, H, s0, s1)
                    before = (PT.copy(), PC.copy(), PB.copy())
                    kernel._prof_take(PT, PC, PG, PM, PB, 0, s0, s1, c, g, m, -1)
                    want = kernel._node_earliest(PT, PC, PG, PM, PB, 0, 0.0, L, c, g, m, H)
                    kernel._prof_take(PT, PC, PG, PM, PB, 0, s0, s1, c, g, m, 1)
                    assert np.array_equal(PT[:, :PB[0]], before[0][:, :before[2][0]])  # (put back: the same)
                    assert got == want, (case, s0, s1, c, g, m, L, H, got, want)
                    checked += 1
    assert checked > 3000
