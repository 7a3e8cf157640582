"""Slurm's multifactor priority on shared-node pools (``select/cons_tres``; issue 26).

Fair-share usage on shared nodes is charged per CPU held (Slurm's billing TRES without
``TRESBillingWeights``), so a job on one core of a node costs a quarter of one on all four.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from jobtable_factory import make_jobs

from drevt_sweep.cli.sim import main as sim_main
from drevt_sweep.sim.machine import Partition
from drevt_sweep.sim.shared import simulate_shared

BACKFILLS = ("none", "easy", "easy_drevt", "conservative")
NO_DECAY = 1e20  # 0.5 ** (1 / 1e20) == 1.0 exactly: usage is never decayed


def _run(jobs, part, cores, backfill="easy", kernel="reference", **kw):
    n = len(jobs)
    return simulate_shared(jobs, jobs.actual_run_time, part, np.asarray(cores), np.zeros(n, np.int64),
                           np.zeros(n), backfill=backfill, kernel=kernel, **kw)


def _contended(second_submit: float):
    """Two nodes of 4 cores; users a and b (one level: ``fairshare_by: user``).

    ======  ====  ======  =================  =====
    job     user  submit  request            run
    ======  ====  ======  =================  =====
    j0      a     0       1 node x 4 cores   10
    j1      b     0       1 node x 1 core    20
    j2      b     0       1 node x 1 core    20
    j3      a     1       1 node x 4 cores   5
    j4      b     ``second_submit``  1 node x 4 cores  5
    ======  ====  ======  =================  =====
    """
    jobs = make_jobs([0, 0, 0, 1, second_submit], [1] * 5, [10, 20, 20, 5, 5], [10, 20, 20, 5, 5],
                     user=["a", "b", "b", "a", "b"])
    part = Partition("p", 2, cores=4, sharing="shared")
    return jobs, part, [4, 1, 1, 4, 4]


@pytest.mark.parametrize("fairshare", ["classic", "fair_tree"])
@pytest.mark.parametrize("backfill", BACKFILLS)
def test_fair_share_accrued_on_shared_nodes_reorders_the_queue(backfill, fairshare):
    """Worked by hand (``_contended(2)``; weights: fair-share 1000, everything else 0;
    ``calc_period`` 1 s, no decay, ``t0`` = 0):

    * t=0: j0 takes node 0 (4 cores), j1 and j2 node 1 (1 core each; 2 left there).
    * j3 (t=1) and j4 (t=2) each need a whole node's 4 cores: both wait until j0 ends at 10.
    * Usage at the tick t=10, charged per CPU held: a = 4 CPUs x 10 s = 40, b = 2 x 1 CPU x 10 s
      = 20; root 60. Shares S = 1/2 each.
      - classic: F = 2^(-U/S): a 2^(-(2/3)/(1/2)) = 2^(-4/3) = 0.397 -> priority 396,
        b 2^(-2/3) = 0.630 -> 629.
      - Fair Tree: LF = S/U: a 0.5 / (2/3) = 0.75, b 0.5 / (1/3) = 1.5: b is visited first,
        rank 2/2 = 1.0 -> 1000, a 1/2 -> 500.
      (The same holds at every earlier tick: a has used twice b's CPU-seconds since t=0.)
    * So j4 (b) starts at 10 on node 0 (10..15); j3 waits for it: 15..20 (EASY: its shadow
      time is j4's end, 15; nothing else waits).

    Charged per node instead, a would have 1 node x 10 s = 10 and b 2 x 10 = 20, and j3 would
    go first (10, then j4 at 15): the FCFS order, also what the static ``fcfs`` gives.

    ``conservative``: j3 got its reservation (10, node 0) when it arrived at 1, and j4 its own
    (15) at 2; reservations stand when the order changes (as on whole nodes), so FCFS's
    times."""
    jobs, part, cores = _contended(2)
    params = {"weights": {"age": 0, "fairshare": 1000, "job_size": 0, "partition": 0},
              "calc_period": 1.0, "decay_half_life": NO_DECAY, "fairshare_by": "user", "fairshare": fairshare}
    s = _run(jobs, part, cores, backfill, priority="multifactor", priority_params=params)
    want = [0, 0, 0, 10, 15] if backfill == "conservative" else [0, 0, 0, 15, 10]
    assert s.begin.tolist() == want
    assert s.nodes_of(4) == [0] and s.nodes_of(3) == [0]
    fcfs = _run(jobs, part, cores, backfill, priority="fcfs")
    assert fcfs.begin.tolist() == [0, 0, 0, 10, 15]


@pytest.mark.parametrize("backfill", BACKFILLS)
def test_age_outweighs_fair_share_on_shared_nodes(backfill):
    """``_contended(9)``: j4 is submitted at 9 instead of 2; weights age 1000 (``max_age`` 10 s:
    0.1 per second waited) and fair-share 1000. At the tick t=10 the usage is as in the test
    above (a 40, b 20 CPU-seconds; classic F: a 0.397, b 0.630):

    * j3 (a, waited 9 s): 1000 x 0.9 + 1000 x 0.397 = 1296.85 -> 1296;
    * j4 (b, waited 1 s): 1000 x 0.1 + 1000 x 0.630 = 729.96 -> 729.

    So j3 starts first at 10 (10..15) and j4 at 15: age decides. With ``job_size`` instead
    (weight 1000, ``favor_small``: both ask 1 of 2 nodes, 0.5 each) nothing would change;
    fair-share alone would put j4 first (test above)."""
    jobs, part, cores = _contended(9)
    params = {"weights": {"age": 1000, "fairshare": 1000, "job_size": 0, "partition": 0}, "max_age": 10.0,
              "calc_period": 1.0, "decay_half_life": NO_DECAY, "fairshare_by": "user", "fairshare": "classic"}
    s = _run(jobs, part, cores, backfill, priority="multifactor", priority_params=params)
    assert s.begin.tolist() == [0, 0, 0, 10, 15]
    params["weights"]["age"] = 0
    s = _run(jobs, part, cores, backfill, priority="multifactor", priority_params=params)
    want = [0, 0, 0, 10, 15] if backfill == "conservative" else [0, 0, 0, 15, 10]  # (reservations stand)
    assert s.begin.tolist() == want


def test_a_static_priority_takes_no_parameters_on_shared_nodes():
    jobs, part, cores = _contended(2)
    with pytest.raises(Exception, match="takes no parameters"):
        _run(jobs, part, cores, priority="fcfs", priority_params={"calc_period": 1.0})


SLURM_CONF = """\
ClusterName=small
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
PriorityType=priority/multifactor
PriorityFlags=NO_FAIR_TREE
PriorityWeightFairshare=1000
PriorityDecayHalfLife=0
PriorityCalcPeriod=1
NodeName=n[1-2] CPUs=4
PartitionName=batch Nodes=n[1-2] Default=YES MaxTime=1-00:00:00
"""

TRACE = ("job_submit_time,num_nodes,num_cores,queue,time_limit,actual_run_time,user,group\n"
         "0,1,4,batch,600,600,a,X\n0,1,1,batch,1200,1200,b,Y\n0,1,1,batch,1200,1200,b,Y\n"
         "60,1,4,batch,300,300,a,X\n120,1,4,batch,300,300,b,Y\n")


def test_drevt_sim_with_a_cons_tres_multifactor_slurm_conf(tmp_path, capsys):
    """The test above at minute scale through ``drevt-sim --slurm-conf``: a cons_tres conf
    with multifactor (classic, fair-share only, no decay, ``PriorityCalcPeriod=1`` minute) runs
    on the shared-node engine, and b's job overtakes a's (a used twice b's CPU-seconds), unlike
    FCFS."""
    conf = tmp_path / "slurm.conf"
    conf.write_text(SLURM_CONF)
    trace = tmp_path / "jobs.csv"
    trace.write_text(TRACE)
    begins = {}
    for policy in ("slurm", "fcfs"):
        out = tmp_path / f"{policy}.csv"
        stats = tmp_path / f"{policy}.json"
        extra = [] if policy == "slurm" else ["--priority_policy", "fcfs"]
        code = sim_main([str(trace), "--queues", "all", "--slurm-conf", str(conf), "--quiet",
                         "--stats", str(stats), "--output", str(out), *extra])
        assert code == 0, capsys.readouterr().err
        run = json.loads(stats.read_text())["run"]
        assert run["priority_policy"] == ("multifactor" if policy == "slurm" else "fcfs")
        import csv

        with out.open() as f:
            begins[policy] = [float(r["begin_time"]) for r in csv.DictReader(f)]
    assert begins["slurm"] == [0, 0, 0, 900, 600]
    assert begins["fcfs"] == [0, 0, 0, 600, 900]


# ------------------------------------------------------------------ compiled vs reference
@st.composite
def fair_share_workloads(draw):
    n_nodes = draw(st.integers(1, 3))
    n = draw(st.integers(1, 25))
    cap = draw(st.integers(1, 8))
    submit = np.cumsum(draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))).astype(float)
    nodes = draw(st.lists(st.integers(1, n_nodes), min_size=n, max_size=n))
    limit = draw(st.lists(st.integers(1, 20), min_size=n, max_size=n))
    run = [draw(st.integers(0, lim + 3)) for lim in limit]
    cores = draw(st.lists(st.integers(0, cap), min_size=n, max_size=n))
    users = draw(st.lists(st.sampled_from(["a", "b", "c"]), min_size=n, max_size=n))
    groups = [{"a": "X", "b": "X", "c": "Y"}[u] for u in users]
    jobs = make_jobs(submit, nodes, limit, run, user=users, group=groups)
    return Partition("p", n_nodes, cores=cap, sharing="shared"), jobs, cores


PRIORITIES = {
    "classic": ("multifactor", {"weights": {"age": 500, "fairshare": 1000, "job_size": 100, "partition": 0},
                                "max_age": 40.0, "calc_period": 3.0, "decay_half_life": 30.0}),
    "fair_tree": ("multifactor", {"weights": {"age": 100, "fairshare": 1000, "job_size": 0, "partition": 0},
                                  "max_age": 40.0, "calc_period": 2.0, "decay_half_life": 30.0,
                                  "fairshare": "fair_tree"}),
    "by_user": ("multifactor", {"weights": {"age": 0, "fairshare": 1000, "job_size": 0, "partition": 0},
                                "calc_period": 1.0, "fairshare_by": "user", "fairshare": "fair_tree"}),
    # Slurm without AccountingStorageEnforce=limits: a job's time after the last tick is lost
    "not_charged_at_end": ("multifactor", {"weights": {"age": 100, "fairshare": 1000, "job_size": 0, "partition": 0},
                                           "calc_period": 3.0, "decay_half_life": 30.0, "charge_ended_jobs": False}),
    "wfp3": ("wfp3", None),
    "unicef": ("unicef", None),
}


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fair_share_workloads(), st.sampled_from(BACKFILLS[:3]), st.booleans(), st.sampled_from(sorted(PRIORITIES)))
def test_compiled_shared_dynamic_kernel_is_the_reference_bit_for_bit(workload, backfill, enforce, which):
    part, jobs, cores = workload
    priority, params = PRIORITIES[which]
    kw = dict(priority=priority, priority_params=params, enforce_limits=enforce)
    ref = _run(jobs, part, cores, backfill, **kw)
    fast = _run(jobs, part, cores, backfill, kernel="fast", **kw)
    assert np.array_equal(ref.begin, fast.begin) and np.array_equal(ref.end, fast.end)
    assert np.array_equal(ref.node_start, fast.node_start) and np.array_equal(ref.node_list, fast.node_list)


def test_conservative_with_a_dynamic_priority_stays_on_the_reference():
    jobs, part, cores = _contended(2)
    params = {"calc_period": 1.0, "fairshare_by": "user"}
    auto = _run(jobs, part, cores, "conservative", kernel="auto", priority="multifactor", priority_params=params)
    ref = _run(jobs, part, cores, "conservative", priority="multifactor", priority_params=params)
    assert np.array_equal(auto.begin, ref.begin)
    with pytest.raises(Exception, match="conservative.*no compiled shared-node version"):
        _run(jobs, part, cores, "conservative", kernel="fast", priority="multifactor", priority_params=params)


def test_a_busy_pool_sliced_or_whole_is_the_reference(monkeypatch):
    """1,500 jobs offered 1.1 times four 16-core nodes (``test_shared._busy_shared_jobs``: a
    queue of tens of jobs throughout) with 12 users in 3 accounts, Fair Tree re-keyed every
    minute: the compiled run equals the reference, and cutting it into slices of 3 events
    (progress between them) changes nothing."""
    from test_shared import _busy_shared_jobs

    from drevt_sweep.sim import kernel

    jobs, part = _busy_shared_jobs()
    user = (np.arange(len(jobs)) * 7919 % 12).astype(np.int32)
    jobs = jobs.replace(user_code=user, user_names=tuple(f"u{i}" for i in range(12)),
                        group_code=(user % 3).astype(np.int32), group_names=("A", "B", "C"))
    kw = dict(priority="multifactor", priority_params={"fairshare": "fair_tree", "calc_period": 60.0})

    def run(kernel_name, **extra):
        return simulate_shared(jobs, jobs.actual_run_time, part, jobs.cores_per_node, jobs.gpus_per_node,
                               jobs.memory_per_node, backfill="easy", kernel=kernel_name, **kw, **extra)

    ref = run("reference")
    whole = run("fast")
    assert np.nanmax(ref.begin - jobs.submit) > 3600  # long waits: a real queue
    assert np.array_equal(ref.begin, whole.begin) and np.array_equal(ref.node_list, whole.node_list)
    fcfs = simulate_shared(jobs, jobs.actual_run_time, part, jobs.cores_per_node, jobs.gpus_per_node,
                           jobs.memory_per_node, backfill="easy", kernel="fast")
    assert (fcfs.begin != whole.begin).sum() > 100  # fair-share really reorders
    monkeypatch.setattr(kernel, "STEP_BUDGET", 3)
    calls = []
    sliced = run("fast", progress=lambda now, done: calls.append(done))
    assert len(calls) >= len(jobs) // 6
    assert np.array_equal(sliced.begin, whole.begin) and np.array_equal(sliced.end, whole.end)
    assert np.array_equal(sliced.node_list, whole.node_list)
