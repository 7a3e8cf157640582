"""drevt-sweep against a real Slurm on shared nodes (issue 26 item 5): ``select/cons_tres``
with ``CR_Core_Memory``, four nodes of 4 CPUs and 4000 MB on loopback (``slurm_cluster.py``).
A stream of short ``sleep`` jobs asking for cores (``--ntasks-per-node``, ``--cpus-per-task``)
and memory (``--mem``) shares nodes, backfills into gaps and waits behind reservations; the
partition factor, the job-size factor, Fair Tree fair share (charged per CPU) and
``bf_max_job_test`` change the order. ``sacct`` exports it with the README's command;
drevt-sweep simulates that export with ``system=slurm system.slurm_conf=<the cluster's
slurm.conf> policy=slurm`` (``sim.shared._SlurmShared``); start times are compared job by job,
the order of pairs too, and the nodes each job ran on (``sacct``'s ``NodeList``) with the
simulated placement, for every job (the stream keeps the events that decide a placement
seconds apart, so that Slurm's choice does not hang on which of two ends it learns first).

**Nodes of 4 CPUs on a 2-CPU host.** slurmd reports the host's hardware (``slurmd -C``: 2 CPUs
here) and slurmctld drains a node configured with more ("Low socket*core*thread count, Low
CPUs"); ``SlurmdParameters=config_overrides`` makes slurmd report the slurm.conf's ``CPUs=4
RealMemory=4000`` instead (slurm.conf man page; ``FastSchedule=2``, its predecessor, is gone
since Slurm 20.02). Slurm then shows each node as 4 sockets of 1 core (``CPUs=4`` alone).
drevt-sweep lists ``SlurmdParameters`` as not modelled (it changes no scheduling).

**Placements.** drevt-sweep's ``Schedule`` carries each job's partition and request, not its
nodes; ``sim.shared.simulate_shared`` (the function ``sim.partitioned`` calls for a shared
pool) returns them (``SharedSchedule.nodes_of``). The test calls it with the same inputs,
checks that it gives the same start times as the composed run, and compares its nodes with
``NodeList`` for every job. Slurm's cons_tres places a job by *best fit* (``_eval_nodes`` in
``src/plugins/select/cons_tres/job_test.c``: the tightest run of consecutive usable nodes,
then the node with the fewest free cores), which ``_SlurmShared`` does for the jobs it starts
(``sim.shared.cons_tres_nodes``; B1 below is a case where first fit differs).

**Fair share needs AccountingStorageEnforce=limits.** Slurm charges a job's usage since the
last priority tick when it ends only from the limits code (``_adjust_limit_usage`` in
``src/slurmctld/acct_policy.c`` calls ``priority_g_job_end`` only with ``limits`` enforced);
the decay thread skips ended jobs (``decay_apply_new_usage``). Without it a job that starts and
ends between two ticks is never charged (a first run of this stream showed ``sshare``
RawUsage 0 for physics and biology after the tick, and the phase C jobs then started in
submission order); drevt-sweep charges every job (docs/slurm.md). With ``limits`` (no limit
is set) Slurm charges them too.

Time is compressed as in ``test_real_slurm.py``: jobs sleep seconds and ask for 1-3 minutes,
``PriorityCalcPeriod=1`` (Slurm's smallest) and the stream starts at one of slurmctld's priority
ticks, so the fair-share phase falls after the tick at minute 1. Agreement and every
disagreement: docs/slurm.md ("Checked against a real Slurm") and benchmarks/RESULTS.md.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from slurm_cluster import start_cluster
from test_real_slurm import (_installed_or_skip, _next_tick, comparison, discordant_pairs,
                             readme_export)

pytestmark = pytest.mark.slow

CORES, MEMORY = 4, 4000  # per node
# What drevt-sweep reads: cons_tres by cores and memory; one pool of 4 nodes shared by the
# partitions batch (PriorityJobFactor 1) and high (2). Weights: partition >> job size ~ fair
# share; no age factor (it would move priorities at every tick). bf_max_job_test=4: the fifth
# waiting job of a cycle is never tested (T below). AccountingStorageEnforce=limits: so that
# Slurm charges fair-share usage of jobs that end between ticks (module docstring).
SCHEDULING = """
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
SlurmdParameters=config_overrides
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_resolution=1,bf_max_job_test=4
PriorityType=priority/multifactor
PriorityWeightPartition=4000
PriorityWeightJobSize=2000
PriorityWeightFairshare=1000
PriorityCalcPeriod=1
PriorityDecayHalfLife=1
AccountingStorageEnforce=associations,limits
PartitionName=batch Nodes=ALL Default=YES MaxTime=10 PriorityJobFactor=1 State=UP
PartitionName=high Nodes=ALL MaxTime=10 PriorityJobFactor=2 State=UP
"""
NODE_FIELDS = f"CPUs={CORES} RealMemory={MEMORY}"
BF_INTERVAL = 1.0
TOLERANCE = BF_INTERVAL + 2.0  # as test_real_slurm.py: a cycle, and whole-second truncation twice
ASSERTED = TOLERANCE + 2.0  # plus slurmctld's delay on a loaded machine (test_real_slurm.py)


@dataclass(frozen=True)
class Job:
    name: str
    at: float  # seconds after the stream starts
    account: str
    nodes: int
    cores: int  # per node
    mem: int  # MB per node
    limit: int  # minutes
    sleep: int  # seconds
    partition: str = "batch"
    per_task: bool = False  # one task of `cores` CPUs (--cpus-per-task) instead of `cores` tasks


STREAM = [
    # Phase A, packing by cores and memory. A1 on n1 leaves 1 core; A2 (2 cores) goes to n2; A3
    # (1 core, 3500 MB) fits neither n1 nor n2 by memory: n3; A4 (2 nodes x 2 cores): n2, n4.
    Job("A1", 0, "biology", 1, 3, 1000, 1, 20),
    Job("A2", 1, "physics", 1, 2, 1000, 1, 20),
    Job("A3", 2, "physics", 1, 1, 3500, 1, 20),
    # (A4 comes 2 s after A3: if a lagging sbatch put them in one sacct second, the simulation
    # would place A4, first in priority, before A3, where Slurm placed A3 first.)
    Job("A4", 4, "physics", 2, 2, 1000, 1, 20),
    # H1 (4 cores) fits no node: reserved on n1 from A1's limit (60 s); it starts when A1 ends
    # (20 s). B1 (1 core, 500 MB) would fit n1 now but overlap H1's reservation there: it
    # backfills onto n4, cons_tres' best fit (2 free cores against n3's 3; first fit: n3); B2
    # (1 core, 1000 MB) too (n3 has too little memory left).
    Job("H1", 5, "biology", 1, 4, 1000, 2, 8),
    Job("B1", 6, "physics", 1, 1, 500, 1, 6),
    Job("B2", 7, "physics", 1, 1, 1000, 1, 5),
    # Phase B, a reservation holds its node whole (Slurm's backfill map is a node bitmap). C1,
    # C2, C4 fill n1-n3, C3 leaves 1 core of n4; G1 (3 cores) is reserved on n4 from C3's limit
    # (95 s). G2 (1 core) fits n4 now, and would fit beside G1 at 95 s by cores, but n4 is G1's
    # from then: G2 waits, and both start on n4 when C3 ends (43 s: 3 s before C1's end, so that
    # a late end of C3 on a loaded machine does not tie with C1's and free n1 with it; at load 6
    # C3 once ended at 46 s, and Slurm, having seen only C3's end, took n4 where the simulation,
    # seeing both, took n1). (C1, C2, C4 ask for 3 min so that their limits end more than 60 s
    # after C3's: Slurm's will-run test would otherwise free them in one batch with C3 and plan
    # G1 at their end on n1 -- see KNOWN. Phase B starts at 32 s, 4 s after H1's end, so that a
    # late start of H1 on a loaded machine does not race C1.)
    Job("C1", 32, "biology", 1, 4, 1000, 3, 14),
    Job("C2", 33, "biology", 1, 4, 1000, 3, 14),
    Job("C4", 34, "biology", 1, 4, 1000, 3, 14),
    Job("C3", 35, "physics", 1, 3, 1000, 1, 8),
    Job("G1", 36, "biology", 1, 3, 1000, 1, 4, per_task=True),
    Job("G2", 37, "physics", 1, 1, 1000, 1, 4),
    # Phase C, priorities. X (account tools, all 16 cores) holds the machine over the tick at
    # 60 s; the jobs waiting for it start in priority order when it ends (72 s). Fair share at
    # that tick, per CPU-second: physics used 179, biology 272 (per node-second 103 and 74: the
    # other order; sshare at 66 s shows Slurm's decayed CPU-seconds, about 75, 115, tools 129),
    # so physics' jobs go first; Hp (partition high) before all of them.
    Job("X", 50, "tools", 4, 4, 1000, 1, 22),
    Job("Q1", 51, "physics", 1, 4, 1000, 1, 8),
    Job("Q2", 52, "biology", 1, 4, 1000, 1, 8),
    Job("Q3", 53, "physics", 1, 4, 1000, 1, 9),
    Job("Q4", 54, "biology", 1, 4, 1000, 1, 8),
    Job("Q5", 55, "physics", 1, 4, 1000, 1, 10),
    Job("Q6", 56, "biology", 1, 4, 1000, 1, 8),
    # Job size counts CPUs too (Slurm: (nodes/4 + CPUs/16) / 2): S2 (2 CPUs, submitted after S1)
    # comes before S1 (1 CPU, 3000 MB). At 72 s Hp, Q1, Q3, Q5 and S2 start (n1 keeps 1 core and
    # 2000 MB: not enough for S1, which fails the partition); S1 starts when S2 ends (78 s).
    Job("S1", 57, "physics", 1, 1, 3000, 1, 8),
    Job("S2", 58, "physics", 1, 2, 1000, 2, 6),
    Job("Hp", 59, "physics", 1, 1, 1000, 2, 7, partition="high"),
    # bf_max_job_test=4: from 73 s the backfill cycles test S1, Q2, Q4, Q6 (reserved), and stop;
    # T would fit n1 (1 core, 500 MB) before any reservation there (EASY, or a larger
    # bf_max_job_test, starts it at 72-73 s), but is not tested until S1 starts (78 s). Then
    # drevt-sweep starts it (79 s); Slurm does not: KNOWN below.
    Job("T", 61, "biology", 1, 1, 500, 1, 4),
]
# What drevt-sweep does not model yet, and the jobs where it shows (every other job must start
# within ASSERTED of Slurm's start, in the same order and on the same nodes); docs/slurm.md
# explains each.
KNOWN: dict[str, str] = {
    # cons_tres' will-run test (_will_run_test in src/plugins/select/cons_common/job_test.c)
    # frees the running jobs in order of their ends in batches: the first takes every job
    # ending up to 30 s after the 30 s boundary that follows the first end (time_window,
    # doubled for each later batch), and a job that fits after a batch starts at the batch's
    # *last* end. At 79-82 s Q1, Q3, Q5 (limits end at 132 s) and S1
    # (138 s) are one batch: Slurm reserves Q2, Q4, Q6 at S1's end, the first on n1 (S1's node,
    # as free as the others then), so T, which would overlap that reservation on n1, waits
    # until Q6 starts (83 s, checked below). drevt-sweep reserves each at the earliest end that
    # frees enough (132 s, on n2-n4) and starts T on n1 at 79 s. (slurmctld.log with
    # DebugFlags=Backfill shows "JobId=<Q2> to start at <S1's end> ... on nodes n1".)
    "T": "will-run's 30 s batches of running jobs' ends",
}


def _options(job: Job) -> list[str]:
    shape = ([f"--ntasks={job.nodes}", f"--cpus-per-task={job.cores}"] if job.per_task
             else [f"--ntasks-per-node={job.cores}"])
    return [f"--job-name={job.name}", f"--account={job.account}", f"--partition={job.partition}",
            f"--nodes={job.nodes}", *shape, f"--mem={job.mem}", f"--time={job.limit}"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    _installed_or_skip()
    cluster = start_cluster(tmp_path_factory.mktemp("slurm-shared"), SCHEDULING, node_fields=NODE_FIELDS,
                            accounts=("physics", "biology", "tools"))
    try:
        yield cluster
    finally:
        cluster.stop()


SNAPSHOT_AT = 66.0  # after the tick at 60 s, while the phase C jobs wait: what Slurm saw


def _submit_stream(cluster) -> tuple[dict[int, Job], str]:
    """The stream from just after a priority tick, a tenth of a second into a wall-clock second:
    sacct's whole seconds then keep the stream's offsets (each job its own second). And, for
    the report, ``sprio``'s and ``sshare``'s view of the waiting jobs at ``SNAPSHOT_AT``."""
    start = math.ceil(_next_tick(cluster) + 0.2) + 0.1
    ids = {}
    for job in STREAM:
        time.sleep(max(0.0, start + job.at - time.time()))
        ids[cluster.submit(*_options(job), command=f"sleep {job.sleep}")] = job
    time.sleep(max(0.0, start + SNAPSHOT_AT - time.time()))
    snapshot = (cluster.run("sprio", "-l", "-o", "%.6i %j %a %Y %A %F %J %P", check=False)
                + cluster.run("sshare", "-a", "-l", check=False))
    return ids, snapshot


def _simulate(trace: Path, conf: Path):
    """The composed run (as ``drevt-sweep trace=custom format=slurm system=slurm
    system.slurm_conf=CONF policy=slurm`` runs it) and the shared pool's placements, from
    ``simulate_shared`` called with the inputs ``sim.partitioned`` gives it."""
    from test_real_slurm import _simulate as composed

    from drevt_sweep.sim.shared import simulate_shared

    jobs, schedule, spec = composed(trace, conf)
    (part,) = schedule.machine.partitions
    assert part.shared and (part.nodes, part.cores, part.memory) == (4, CORES, float(MEMORY))
    placement = schedule.placement
    assert (placement.partition == 0).all()
    shared = simulate_shared(jobs, schedule.run_time, part, placement.cores, placement.gpus,
                             placement.memory, priority=spec.priority, backfill=spec.backfill,
                             kernel="reference", priority_params=spec.priority_params,
                             backfill_params=spec.backfill_params)
    np.testing.assert_array_equal(shared.begin, schedule.begin)  # the same simulation
    nodes = [[f"n{i + 1}" for i in shared.nodes_of(j)] for j in range(len(jobs))]
    return jobs, schedule, spec, nodes, placement


def _expand(node_list: str) -> list[str]:
    from drevt_sweep.trace.hostlist import expand

    return expand(node_list)


def test_real_slurm_shared_nodes_start_times_and_nodes_match_policy_slurm(cluster, tmp_path):
    started_cpu = time.process_time()
    ids, snapshot = _submit_stream(cluster)
    first = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 150))
    cluster.wait_empty(timeout=240)
    placed = cluster.sacct(ids, "JobName,NodeList")
    lines = readme_export(cluster, first).splitlines()
    export = "\n".join([lines[0]] + [line for line in lines[1:] if int(line.split("|")[0]) in ids]) + "\n"
    trace = tmp_path / "stream.sacct"
    trace.write_text(export)
    jobs, schedule, spec, sim_nodes, placement = _simulate(trace, cluster.conf)
    assert (spec.priority, spec.backfill) == ("multifactor", "slurm")
    assert spec.priority_params["fairshare"] == "fair_tree"
    assert spec.backfill_params["bf_max_job_test"] == 4
    names = {k: v.name for k, v in ids.items()}
    by_name = {job.name: job for job in STREAM}
    # the requests as sacct gave them and the reader read them: the stream's
    for i, job_id in enumerate(jobs.job_id.tolist()):
        job = by_name[names[int(job_id)]]
        assert (int(jobs.num_nodes[i]), int(placement.cores[i]), float(placement.memory[i])) == (
            job.nodes, job.cores, float(job.mem)), job
    real_nodes = {}
    for line in placed.splitlines()[1:]:
        name, node_list = line.split("|")
        real_nodes[name] = _expand(node_list)
    rows = comparison(jobs, schedule, names)
    for i, row in enumerate(rows):
        row["real_nodes"] = real_nodes[row["job"]]
        row["sim_nodes"] = sim_nodes[i]
    report = "\n".join(
        f"{r['job']:>3} submit {r['submit']:5.1f} real {r['real']:6.1f} sim {r['sim']:6.1f} "
        f"diff {r['diff']:+5.1f} nodes {','.join(r['real_nodes']):<6} sim {','.join(r['sim_nodes'])}"
        for r in rows)
    discordant = discordant_pairs(rows, TOLERANCE)
    within = ", ".join(f"{sum(abs(r['diff']) <= t for r in rows)}/{len(rows)} within {t:.0f} s"
                       for t in (0.0, 1.0, 2.0, TOLERANCE))
    same_nodes = [r["job"] for r in rows if r["real_nodes"] == r["sim_nodes"]]
    summary = (f"jobs starting as in Slurm: {within}; pairs in the other order: {discordant}; "
               f"same nodes {len(same_nodes)}/{len(rows)}; test CPU {time.process_time() - started_cpu:.1f} s; "
               f"load {os.getloadavg()[0]:.2f}")
    print(f"\n{report}\n{summary}\nslurm.conf: {cluster.conf}\nexport: {trace}")
    (Path(os.environ.get("DREVT_REAL_SLURM_REPORT", tmp_path / "report.txt"))).write_text(
        f"{report}\n{summary}\n{export}\n{placed}\n{snapshot}")
    assert len(rows) == len(STREAM)  # every job ran and was simulated
    real = {r["job"]: r for r in rows}
    # What the stream shows held on the real Slurm (else the comparison would prove little):
    assert real["B1"]["real_nodes"] == real["B2"]["real_nodes"] == ["n4"], report  # not n1; best fit
    assert real["G2"]["real"] >= real["C3"]["real"] + 8 - TOLERANCE, report  # held behind G1's node
    assert real["Hp"]["real"] <= real["Q1"]["real"] < real["Q2"]["real"] - TOLERANCE, report  # fair share
    assert real["S2"]["real"] < real["S1"]["real"] - TOLERANCE, report  # job size by CPUs
    assert real["T"]["real"] >= real["Q1"]["real"] + 8 - TOLERANCE, report  # bf_max_job_test
    assert abs(real["T"]["real"] - real["Q6"]["real"]) <= TOLERANCE, report  # KNOWN: T waits for Q6
    # ... here only for S1 to start (T is tested then) and for Hp to end (S1 and Hp hold all of
    # n1's memory): Hp's end comes from its sacct elapsed time, 7 s, or 8 on a loaded machine
    hp = [names[int(j)] for j in jobs.job_id.tolist()].index("Hp")
    hp_end = float(schedule.end[hp] - np.min(jobs.submit))
    assert real["T"]["sim"] <= max(real["S1"]["sim"], hp_end) + BF_INTERVAL, report
    off = {r["job"]: r["diff"] for r in rows if abs(r["diff"]) > ASSERTED and r["job"] not in KNOWN}
    assert not off, f"unexplained disagreements {off}\n{report}"
    swapped = [pair for pair in discordant_pairs(rows, ASSERTED) if not set(pair) & set(KNOWN)]
    assert not swapped, f"pairs in the other order {swapped}\n{report}"
    moved = {r["job"]: (r["real_nodes"], r["sim_nodes"]) for r in rows
             if r["real_nodes"] != r["sim_nodes"] and r["job"] not in KNOWN}
    assert not moved, f"jobs on other nodes {moved}\n{report}"
