"""Association limits against a real Slurm (issue 26 items 4 and 5): a 4-node Slurm on loopback
(``slurm_cluster.py``) with ``AccountingStorageEnforce=associations,limits,qos``, ``MaxJobs=1``
on the user's association in account physics, ``GrpTRES=node=2`` on account biology and a QOS
``debug`` with ``MaxJobsPU=1`` (asked for with ``--qos``), runs a stream of short ``sleep`` jobs
where each limit holds jobs, and a QOS of higher ``Priority`` (``PriorityWeightQOS``) reorders two; ``sacctmgr -P show assoc``/``show
qos`` (the README's commands) and the ``sacct`` export are simulated with drevt-sim's
``--slurm-conf --associations --qos``; start times are compared job by job. Slurm's own reasons
for the held jobs (``squeue``'s ``%r``) are checked to be the ones drevt-sweep counts.

Agreement and every disagreement: benchmarks/RESULTS.md ("Association limits against a real
Slurm") and docs/slurm.md.
"""

from __future__ import annotations

import csv
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from slurm_cluster import start_cluster
from test_real_slurm import _installed_or_skip, readme_export

pytestmark = pytest.mark.slow

# Multifactor with the QOS weight only: jobs of QOS normal (and debug: Priority 0) have Slurm's
# floor priority 1 (FCFS among them), a job of QOS high (Priority 10, the largest) 1000.
SCHEDULING = """
SelectType=select/linear
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1,bf_resolution=1
PriorityType=priority/multifactor
PriorityWeightQOS=1000
AccountingStorageEnforce=associations,limits,qos
PartitionName=batch Nodes=ALL Default=YES MaxTime=10 State=UP
"""
TOLERANCE = 3.0  # bf_interval + whole-second truncation of submit and start (tests/test_real_slurm.py)
ASSERTED = TOLERANCE + 2.0  # plus slurmctld's delay on a loaded machine
ASSOC_FORMAT = ("Cluster,Account,User,Partition,ParentName,Share,GrpJobs,GrpTRES,GrpSubmit,MaxJobs,MaxTRES,"
                "MaxSubmit,MaxWall,QOS,DefaultQOS")


@dataclass(frozen=True)
class Job:
    name: str
    at: float
    account: str
    nodes: int
    sleep: int
    qos: str = ""


# physics MaxJobs=1: L2 waits for L1's end (5 s), L3 for L2's (10 s). biology GrpTRES=node=2:
# B1 takes 2 nodes; B2 (1 node) waits for B1's end (7.5 s). QOS debug MaxJobsPU=1, asked for with
# --qos=debug (sacct's QOS column): D2 waits for D1's end (6.5 s), on the node D1 frees. Without
# the limits each would start at its submission (a node is free for it, or the next one is).
STREAM = [
    Job("L1", 0.0, "physics", 1, 5),
    Job("L2", 0.5, "physics", 1, 5),
    Job("L3", 1.0, "physics", 1, 5),
    Job("B1", 1.5, "biology", 2, 6),
    Job("B2", 2.0, "biology", 1, 4),
    Job("D1", 2.5, "tools", 1, 4, "debug"),
    Job("D2", 3.0, "tools", 1, 4, "debug"),
    # QOS priority: X and H1 (4 nodes each) wait for L3's end (15 s); H1, submitted after X but
    # in QOS high, starts first (15 s), X after it (18 s). FCFS would start X first.
    Job("X", 12.0, "tools", 4, 3),
    Job("H1", 13.0, "tools", 4, 3, "high"),
]
HELD = {"L2": "AssocMaxJobsLimit", "L3": "AssocMaxJobsLimit", "B2": "AssocGrpNodeLimit",
        "D2": "QOSMaxJobsPerUserLimit"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    _installed_or_skip()
    cluster = start_cluster(tmp_path_factory.mktemp("slurm-limits"), SCHEDULING,
                            accounts=("physics", "biology", "tools"))
    try:
        user = os.environ.get("USER") or "root"
        cluster.run("sacctmgr", "-i", "modify", "user", user, "where", "account=physics", "set", "MaxJobs=1")
        cluster.run("sacctmgr", "-i", "modify", "account", "biology", "set", "GrpTRES=node=2")
        cluster.run("sacctmgr", "-i", "add", "qos", "debug", "MaxJobsPU=1")
        cluster.run("sacctmgr", "-i", "add", "qos", "high", "Priority=10")
        cluster.run("sacctmgr", "-i", "modify", "user", user, "set", "qos+=debug,high")
        deadline = time.monotonic() + 20  # until slurmctld has the new limits from slurmdbd
        while True:
            shown = cluster.run("scontrol", "show", "assoc_mgr", "flags=assoc", check=False)
            qos = cluster.run("scontrol", "show", "assoc_mgr", "flags=qos", check=False)
            if "MaxJobs=1" in shown and "node=2" in shown and "QOS=debug" in qos and "QOS=high" in qos:
                break
            assert time.monotonic() < deadline, shown[-1500:] + qos[-1500:]
            time.sleep(0.5)
        yield cluster
    finally:
        cluster.stop()


def _submit(cluster) -> tuple[dict[int, Job], dict[str, str]]:
    """The stream; and the pending reasons, read 1 s after the last job of phase 1 (D2)."""
    start = time.time() + 0.5
    ids = {}
    reasons = {}
    for job in STREAM:
        time.sleep(max(0.0, start + job.at - time.time()))
        qos = [f"--qos={job.qos}"] if job.qos else []
        ids[cluster.submit(f"--job-name={job.name}", f"--account={job.account}", "--partition=batch",
                           f"--nodes={job.nodes}", "--time=1", *qos, command=f"sleep {job.sleep}")] = job
        if job.name == "D2":
            time.sleep(1.0)
            for line in cluster.run("squeue", "-h", "-t", "PD", "-o", "%j %r").splitlines():
                name, _, reason = line.partition(" ")
                reasons[name] = reason.strip()
    return ids, reasons


def test_real_slurm_holds_jobs_as_the_association_limits_say(cluster, tmp_path):
    from drevt_sweep.cli.sim import main as sim_main
    from drevt_sweep.trace.associations import read_associations

    ids, reasons = _submit(cluster)
    first = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(time.time() - 60))
    cluster.wait_empty(timeout=120)
    cluster.sacct(ids, "State")
    lines = readme_export(cluster, first).splitlines()
    trace = tmp_path / "stream.sacct"
    trace.write_text("\n".join([lines[0]] + [x for x in lines[1:] if int(x.split("|")[0]) in ids]) + "\n")
    assoc = tmp_path / "assoc.txt"
    assoc.write_text(cluster.run("sacctmgr", "-P", "show", "assoc", f"format={ASSOC_FORMAT}"))
    default = tmp_path / "assoc-default.txt"
    default.write_text(cluster.run("sacctmgr", "-P", "show", "assoc"))
    qos = tmp_path / "qos.txt"
    qos.write_text(cluster.run("sacctmgr", "-P", "show", "qos"))
    # the default format and the README's give the same limits
    a, b = read_associations(assoc, qos), read_associations(default, qos)
    limits = {(x.account, x.user): (x.max_jobs, x.grp_tres) for x in a.associations}
    assert limits == {(x.account, x.user): (x.max_jobs, x.grp_tres) for x in b.associations}
    assert limits[("biology", "")][1] == {"node": 2} and 1 in {v[0] for k, v in limits.items() if k[0] == "physics"}

    out, stats = tmp_path / "schedule.csv", tmp_path / "stats.json"
    code = sim_main([str(trace), "--trace_format", "slurm", "--timezone", "UTC", "--force-simulation",
                     "--slurm-conf", str(cluster.conf), "--associations", str(assoc), "--qos", str(qos),
                     "--output", str(out), "--stats", str(stats), "--quiet"])
    assert code == 0
    simulated = {int(r["job_id"]): float(r["begin_time"]) for r in csv.DictReader(out.open())}
    real = {}
    for row in csv.DictReader(trace.open(), delimiter="|"):
        real[int(row["JobIDRaw"])] = row["Start"]
    import datetime as dt

    def epoch(text):
        return dt.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=dt.timezone.utc).timestamp()

    submit0 = min(epoch(row["Submit"]) for row in csv.DictReader(trace.open(), delimiter="|"))
    rows = []
    for job_id, job in ids.items():
        r, s = epoch(real[job_id]) - submit0, simulated[job_id] - submit0
        rows.append({"job": job.name, "real": r, "sim": s, "diff": s - r})
    held = {k: v for k, v in json.loads(stats.read_text())["warnings"].items() if k.startswith("held_")}
    report = "\n".join(f"{r['job']:>3} real {r['real']:5.1f} sim {r['sim']:5.1f} diff {r['diff']:+5.1f}"
                       for r in rows)
    summary = (f"{sum(abs(r['diff']) <= 1 for r in rows)}/{len(rows)} within 1 s, "
               f"{sum(abs(r['diff']) <= TOLERANCE for r in rows)}/{len(rows)} within {TOLERANCE:.0f} s; "
               f"Slurm's reasons {reasons}; held in the simulation {held}")
    print(f"\n{report}\n{summary}")
    (Path(os.environ.get("DREVT_REAL_SLURM_REPORT", tmp_path / "report.txt"))).write_text(
        f"{report}\n{summary}\n{trace.read_text()}\n{assoc.read_text()}")
    # Slurm held the jobs for the reasons drevt-sweep counts, and so did the simulation
    assert {name: reasons.get(name) for name in HELD} == HELD, reasons
    assert held == {"held_AssocGrpNodeLimit": 1, "held_AssocMaxJobsLimit": 2, "held_QOSMaxJobsPerUserLimit": 1}, held
    by_name = {r["job"]: r for r in rows}
    # the limits held them on the real Slurm: each waited for the end of the job before it
    assert by_name["L2"]["real"] >= 4 and by_name["B2"]["real"] >= 6, report
    assert by_name["D2"]["real"] >= by_name["D1"]["real"] + 3, report
    assert by_name["H1"]["real"] < by_name["X"]["real"], report  # QOS priority, on the real Slurm too
    assert by_name["H1"]["sim"] < by_name["X"]["sim"], report
    off = {r["job"]: r["diff"] for r in rows if abs(r["diff"]) > ASSERTED}
    assert not off, f"unexplained disagreements {off}\n{report}"
