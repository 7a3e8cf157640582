"""drevt-sweep against a real Slurm (issue 26 item 5): a 4-node Slurm on loopback
(``slurm_cluster.py``) runs a stream of short ``sleep`` jobs; ``sacct`` exports it with the
README's command; drevt-sweep simulates that export with ``system=slurm
system.slurm_conf=<the cluster's own slurm.conf> policy=slurm``; the start times are compared
job by job. The same cluster runs a small drevt-sweep multirun through
``hydra/launcher=slurm`` (Hydra's submitit_slurm launcher).

Time is compressed: jobs sleep seconds and ask for 1-3 minutes, and ``PriorityCalcPeriod`` is
Slurm's smallest (1 minute), so the stream spans one fair-share tick; the stream starts at one
of slurmctld's ticks so that drevt-sweep's ticks (from the first submission) fall with Slurm's.
Agreement and every disagreement: docs/slurm.md ("Checked against a real Slurm").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from slurm_cluster import INSTALL, ClusterError, missing, start_cluster
from sweep_helpers import run_sweep

pytestmark = pytest.mark.slow

# What drevt-sweep reads of the slurm.conf (the rest is the daemons' plumbing, listed by
# drevt-sweep as not modelled). Partition "high" (PriorityJobFactor 2) shares the nodes of
# "batch": one pool of 4 whole nodes. Weights: partition >> job size >> fair share >> age.
SCHEDULING = """
SelectType=select/linear
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_resolution=1,bf_max_job_test=3
PriorityType=priority/multifactor
PriorityWeightPartition=4000
PriorityWeightJobSize=2000
PriorityWeightFairshare=1000
PriorityWeightAge=100
PriorityMaxAge=1
PriorityCalcPeriod=1
PriorityDecayHalfLife=1
PartitionName=batch Nodes=ALL Default=YES MaxTime=10 PriorityJobFactor=1 State=UP
PartitionName=high Nodes=ALL MaxTime=10 PriorityJobFactor=2 State=UP
"""
CALC_PERIOD = 60.0
BF_INTERVAL = 1.0
# The scheduling-cycle tolerance on a start time: Slurm records whole seconds (up to 1 s of
# truncation on the submission and on the start) and its backfill runs every bf_interval.
TOLERANCE = BF_INTERVAL + 2.0
# What the test asserts allows 2 s more: on a loaded machine slurmctld learns of a job's end and
# starts the next one later (2 s behind the simulation at load 15-18 here), and a late start is
# a late end for the jobs after it. A wrong priority decision moves a job by a whole run (8 s
# or more in this stream) and puts pairs of jobs in the other order, which is checked too.
ASSERTED = TOLERANCE + 2.0


@dataclass(frozen=True)
class Job:
    name: str
    at: float  # seconds after the stream starts
    account: str
    partition: str
    nodes: int
    limit: int  # minutes
    sleep: int  # seconds


STREAM = [
    # Backfill: X (4 nodes) waits for P2's limit (3 min); Y (2 nodes, 1 min) can start when
    # P1 (limit 1 min) ends; Z (1 node, 2 min) fits on the free node before X's reservation
    # (EASY starts it at once) but overlaps Y's planned start (a reservation for every
    # waiting job, as Slurm's backfill makes, keeps it waiting until Y is done).
    # (X comes 2 s after P1 and P2: in their sacct second, the simulation would start X, first
    # in priority, before them.)
    Job("P1", 0, "physics", "batch", 1, 1, 12),
    Job("P2", 0, "physics", "batch", 2, 3, 30),
    Job("X", 2, "biology", "batch", 4, 1, 5),
    Job("Y", 3, "physics", "batch", 2, 1, 6),
    Job("Z", 4, "biology", "batch", 1, 2, 8),
    # Partition priority: H (partition high) overtakes the batch jobs waiting for B1 ...
    Job("B1", 40, "physics", "batch", 4, 1, 24),
    # ... and fair share: the accounts' 1-node jobs queue behind B1 in turns, physics first;
    # at the tick of minute 1, physics has used about 3x biology's node-seconds, so the
    # biology jobs go first when B1 ends.
    Job("Q1", 44, "physics", "batch", 1, 1, 8),
    Job("Q2", 45, "biology", "batch", 1, 1, 8),
    Job("Q3", 46, "physics", "batch", 1, 1, 8),
    Job("Q4", 47, "biology", "batch", 1, 1, 8),
    Job("Q5", 48, "physics", "batch", 1, 1, 8),
    Job("Q6", 49, "biology", "batch", 1, 1, 8),
    Job("H", 50, "physics", "high", 1, 1, 8),
    # Backfill limit: bf_max_job_test=3 (phase 1 never has more than three jobs waiting). C1
    # (3 nodes) leaves one node free; W (4 nodes), A1 and A2 (2 nodes) cannot use it, T (1 node,
    # 1 min) fits before W's reserved start, but Slurm's backfill tests only the first three
    # waiting jobs (W, A1, A2), and the main scheduler stops at W: T waits. One account, so
    # that fair share does not reorder them. W comes 3 s after C1: sacct records whole seconds,
    # and a submission that lags (sbatch on a loaded machine) can land in C1's second; the
    # simulation then sees both at one instant and starts W (the larger, so first in priority)
    # where Slurm, whose scheduler ran between the two sbatch calls, had started C1 (CI saw it).
    Job("C1", 84, "biology", "batch", 3, 3, 15),
    Job("W", 87, "biology", "batch", 4, 1, 4),
    Job("A1", 88, "biology", "batch", 2, 2, 4),
    Job("A2", 89, "biology", "batch", 2, 2, 4),
    Job("T", 90, "biology", "batch", 1, 1, 4),
]
# What drevt-sweep's policy=slurm does not model yet, and the jobs where it shows (every other
# job must start within ASSERTED of Slurm's start); docs/slurm.md explains each. Empty since
# policy=slurm runs Slurm's backfill (backfill: slurm): with EASY, Z (Slurm reserves for every
# job it tests, so Z waited for Y) and T (bf_max_job_test=3: never tested) started at once.
KNOWN: dict[str, str] = {}
# The README's export ("Simulate your own cluster"): every job (-a) as one line (-X, no steps),
# pipe-separated (-P), the fields the slurm reader uses, in UTC.
SACCT_FIELDS = ("JobIDRaw,JobName,User,Account,Partition,QOS,Submit,Start,End,ReqNodes,ReqCPUS,ReqMem,"
                "ReqTRES,TimelimitRaw,ElapsedRaw,State,ExitCode")


def readme_export(cluster, start: str) -> str:
    """``TZ=UTC sacct -a -X -P -S START -E now --format=FIELDS`` (the README's command)."""
    return cluster.run("sacct", "-a", "-X", "-P", "-S", start, "-E", "now", f"--format={SACCT_FIELDS}")


def _installed_or_skip() -> None:
    if os.name != "posix" or os.geteuid() != 0:
        pytest.skip("a real Slurm needs root here (slurmd runs jobs as their user)")
    absent = missing()
    if absent:
        message = f"Slurm not installed ({', '.join(absent)} missing): {INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(f"CI must have it: {message}")
        pytest.skip(message)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    _installed_or_skip()
    cluster = start_cluster(tmp_path_factory.mktemp("slurm"), SCHEDULING,
                            accounts=("physics", "biology", "tools"))
    try:
        yield cluster
    finally:
        cluster.stop()


# ---------------------------------------------------------------- Hydra's submitit launcher
def test_a_multirun_through_hydra_submitit_slurm_runs_on_real_slurm(cluster, tmp_path, monkeypatch):
    """Two configurations as a job array of the real cluster; both finish with their seeds.
    It runs before the comparison, while slurmctld's next priority tick is awaited anyway, in
    account ``tools``, so that its usage is neither physics' nor biology's."""
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    monkeypatch.setenv("SLURM_CONF", str(cluster.conf))
    proc = run_sweep(tmp_path, "hydra/launcher=slurm", "hydra.launcher.partition=batch",
                     "hydra.launcher.account=tools",
                     "hydra.launcher.cpus_per_task=1", "hydra.launcher.mem_gb=null",
                     "hydra.launcher.timeout_min=5", "policy=fcfs,easy", "run_time=normal",
                     "replicates=2", "parallel.n_jobs=1", "figures=none")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    done = [json.loads(p.read_text()) for p in sorted((tmp_path / "sweep").glob("*/result.json"))]
    assert [r["status"] for r in done] == ["FINISHED", "FINISHED"]
    assert all(r["seeds"] == [0, 1] for r in done)
    accounted = cluster.run("sacct", "-a", "-X", "-P", "-n", "--name=drevt-sweep", "--format=JobID,State")
    states = [line.split("|")[1] for line in accounted.split()]
    assert states and set(states) == {"COMPLETED"}, accounted  # ran as Slurm jobs, and ended well


# ---------------------------------------------------------------- start times vs the simulation
def _next_tick(cluster) -> float:
    """The wall-clock time of slurmctld's next priority tick (it rewrites
    StateSaveLocation/priority_last_decay_ran at each)."""
    stamp = cluster.root / "state" / "priority_last_decay_ran"
    deadline = time.monotonic() + 2 * CALC_PERIOD
    while not stamp.exists():
        assert time.monotonic() < deadline, "slurmctld never ran its priority decay"
        time.sleep(0.2)
    tick = stamp.stat().st_mtime + CALC_PERIOD
    while tick < time.time() + 0.5:
        tick += CALC_PERIOD
    return tick


def _submit_stream(cluster) -> dict[int, Job]:
    start = _next_tick(cluster) + 0.2
    ids = {}
    for job in STREAM:
        time.sleep(max(0.0, start + job.at - time.time()))
        job_id = cluster.submit(f"--job-name={job.name}", f"--account={job.account}",
                                f"--partition={job.partition}", f"--nodes={job.nodes}",
                                f"--time={job.limit}", command=f"sleep {job.sleep}")
        ids[job_id] = job
    return ids


def _simulate(trace: Path, conf: Path):
    """The export simulated as ``drevt-sweep trace=custom format=slurm system=slurm
    system.slurm_conf=CONF policy=slurm`` does it: the same composed config, run spec and seed
    simulation."""
    from hydra import compose, initialize_config_module
    from drevt_sweep.sweep.app import run_spec
    from drevt_sweep.sweep.config import register_configs
    from drevt_sweep.sweep.seeds import simulate_seed
    from drevt_sweep.trace import read_trace
    from drevt_sweep.trace.options import read_options

    register_configs()
    with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
        cfg = compose("config", overrides=[
            "trace=custom", f"trace.path={trace}", "format=slurm", "format.queues=[all]",
            "timezone=utc", "system=slurm", f"system.slurm_conf={conf}", "policy=slurm"])
    jobs = read_trace(str(trace), read_options(cfg))
    spec = run_spec(cfg, jobs.meta.machine_nodes, None, jobs.queue_names)
    jobs, schedule = simulate_seed(jobs, spec, 0)
    return jobs, schedule, spec


def comparison(jobs, schedule, names: dict[int, str]) -> list[dict]:
    """One row per job: its real and simulated start (seconds after the first submission)."""
    t0 = float(np.min(jobs.submit))
    rows = []
    for i, job_id in enumerate(jobs.job_id.tolist()):
        real, sim = float(jobs.begin[i]) - t0, float(schedule.begin[i]) - t0
        rows.append({"job": names[int(job_id)], "submit": float(jobs.submit[i]) - t0,
                     "nodes": int(jobs.num_nodes[i]), "real": real, "sim": sim, "diff": sim - real})
    return rows


def discordant_pairs(rows: list[dict], tolerance: float) -> list[tuple[str, str]]:
    """Pairs that Slurm started more than ``tolerance`` apart in one order and the simulation
    in the other."""
    return [(a["job"], b["job"]) for a in rows for b in rows
            if b["real"] - a["real"] > tolerance and a["sim"] > b["sim"]]


def test_real_slurm_start_times_match_policy_slurm(cluster, tmp_path):
    ids = _submit_stream(cluster)
    first = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 120))
    cluster.wait_empty(timeout=240)
    cluster.sacct(ids, "State")  # until slurmdbd has every record
    lines = readme_export(cluster, first).splitlines()
    export = "\n".join([lines[0]] + [line for line in lines[1:] if int(line.split("|")[0]) in ids]) + "\n"
    trace = tmp_path / "stream.sacct"
    trace.write_text(export)
    jobs, schedule, spec = _simulate(trace, cluster.conf)
    assert (spec.priority, spec.backfill) == ("multifactor", "slurm")
    assert spec.priority_params["fairshare"] == "fair_tree"
    rows = comparison(jobs, schedule, {k: v.name for k, v in ids.items()})
    report = "\n".join(f"{r['job']:>3} submit {r['submit']:5.1f} nodes {r['nodes']} real {r['real']:6.1f} "
                       f"sim {r['sim']:6.1f} diff {r['diff']:+5.1f}" for r in rows)
    discordant = discordant_pairs(rows, TOLERANCE)
    within = ", ".join(f"{sum(abs(r['diff']) <= t for r in rows)}/{len(rows)} within {t:.0f} s"
                       for t in (1.0, 2.0, TOLERANCE))
    summary = f"jobs starting as in Slurm: {within}; pairs in the other order: {discordant}"
    print(f"\n{report}\n{summary}\nslurm.conf: {cluster.conf}\nexport: {trace}")
    (Path(os.environ.get("DREVT_REAL_SLURM_REPORT", tmp_path / "report.txt"))).write_text(
        f"{report}\n{summary}\n{export}")
    assert len(rows) == len(STREAM)  # every job ran and was simulated
    real = {r["job"]: r for r in rows}
    y_end = real["Y"]["real"] + float(jobs.actual_run_time[list(real).index("Y")])
    # The explanation of Z holds on the real Slurm: Z waited for Y although it fitted before X;
    # and of T: it did not start before W, the first of the three jobs backfill tested.
    assert real["Z"]["real"] >= y_end - TOLERANCE, report
    assert real["T"]["real"] >= real["W"]["real"], report
    off = {r["job"]: r["diff"] for r in rows if abs(r["diff"]) > ASSERTED and r["job"] not in KNOWN}
    assert not off, f"unexplained disagreements {off}\n{report}"
    swapped = [pair for pair in discordant_pairs(rows, ASSERTED) if not set(pair) & set(KNOWN)]
    assert not swapped, f"pairs in the other order {swapped}\n{report}"
    # The README's drevt-sim command on the same export schedules it the same way.
    out = tmp_path / "drevt_sim_schedule.csv"
    proc = subprocess.run([sys.executable, "-m", "drevt_sweep.cli.sim", str(trace), "--trace_format", "slurm",
                           "--timezone", "UTC", "--force-simulation", "--slurm-conf", str(cluster.conf),
                           "--output", str(out), "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    import pandas as pd

    written = pd.read_csv(out)
    assert len(written) == len(rows)
    begins = dict(zip(written["job_id"].astype(int), written["begin_time"].astype(float)))
    t0 = float(np.min(jobs.submit))
    for i, job_id in enumerate(jobs.job_id.tolist()):
        assert begins[int(job_id)] - t0 == rows[i]["sim"], (job_id, begins, rows[i])
    # And the README's drevt-sweep command (one slurm.conf, the store and figures off for time).
    cmd = [sys.executable, "-m", "drevt_sweep", "-m", "trace=custom", f"trace.path={trace}", "format=slurm",
           "format.queues=[all]", "timezone=utc", "system=slurm", f"system.slurm_conf={cluster.conf}",
           "policy=slurm", f"paths.output_root={tmp_path / 'out'}", f"hydra.sweep.dir={tmp_path / 'sweep'}",
           "tracking.enabled=false", "figures=none", "progress=false"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    from drevt_sweep.sim.metrics import compute_metrics

    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "sweep").glob("*/result.json")]
    assert result["status"] == "FINISHED"
    assert result["slurm_policy"]["slurm.fairshare"] == "fair_tree"
    ours = compute_metrics(jobs, schedule)
    for name in ("wait_mean", "wait_max", "makespan"):
        assert result["metrics"][name] == pytest.approx(ours[name], rel=1e-12), name


def test_scontrol_write_config_reads_as_the_slurm_conf(cluster, tmp_path):
    """The README's way to a slurm.conf when the file is not at hand: ``scontrol write config``
    writes the running configuration (with NodeName and PartitionName lines, which ``scontrol
    show config`` lacks); drevt-sweep reads from it the machine and scheduler of the original."""
    from drevt_sweep.trace.slurm_conf import read_slurm_conf

    out = cluster.run("scontrol", "write", "config", str(tmp_path / "cluster.conf"))
    (written,) = tmp_path.glob("cluster.conf*")  # Slurm appends .<date-time> to the name
    assert str(written) in out
    ours, theirs = read_slurm_conf(cluster.conf), read_slurm_conf(written)
    assert theirs.system == ours.system
    assert (theirs.priority, theirs.backfill, theirs.priority_params, theirs.partition_factors) == (
        ours.priority, ours.backfill, ours.priority_params, ours.partition_factors)


def test_a_cluster_that_fails_to_start_leaves_no_daemon_running(tmp_path):
    """slurmctld refuses an unknown SelectType: the error carries its log, and the daemons
    started before it (munged, mariadbd, slurmdbd) are ended."""
    _installed_or_skip()
    with pytest.raises(ClusterError, match="slurmctld") as failure:
        start_cluster(tmp_path / "bad", "SelectType=select/nonesuch\nPartitionName=p Nodes=ALL Default=YES",
                      timeout=60)
    assert "select/nonesuch" in str(failure.value)
    root = str(tmp_path / "bad").encode()
    alive = []  # processes whose command line or environment names the cluster's folder
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and (root in (proc / "cmdline").read_bytes()
                                        or root in (proc / "environ").read_bytes()):
                alive.append((proc.name, (proc / "cmdline").read_bytes().replace(b"\0", b" ")))
        except OSError:  # ended meanwhile, or not ours to read
            pass
    assert not alive, alive
