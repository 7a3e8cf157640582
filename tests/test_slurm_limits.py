"""Slurm's partition DefaultTime and association/QOS limits (issue 26 item 4), each with a
hand-computed case: a few jobs where the setting changes the schedule (the expected start
times are worked out in the comments), plus bad input as one line and exit 2."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from drevt_sweep.cli.sim import main as sim_main
from drevt_sweep.sim.machine import default_time_limits, machine_from_mapping
from drevt_sweep.sim.partitioned import simulate_machine
from drevt_sweep.trace import ReadOptions, read_trace
from drevt_sweep.trace.slurm_conf import read_slurm_conf

INF = math.inf
# every backfill limit off, a cycle at every pass, exact times (tests/test_slurm_backfill.py)
EXACT = dict(bf_interval=0, bf_max_job_test=INF, bf_window=INF, bf_resolution=0,
             default_queue_depth=INF, sched_interval=0, bf_job_part_count_reserve=0)


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def swf_line(job, submit, run, procs, req_time, user=1, group=1):
    """An SWF record: the fields the reader uses, -1 elsewhere (queue and partition -1: the
    slurm.conf's Default=YES partition)."""
    return (f"{job} {submit} -1 {run} {procs} -1 -1 {procs} {req_time} -1 1 {user} {group} -1 -1 -1 -1 -1\n")


# ------------------------------------------------------------------------------- DefaultTime
DEFAULT_TIME_TRACE = (
    swf_line(1, 0, 100, 2, 100)  # J0: 2 nodes, 100 s
    + swf_line(2, 1, 100, 4, 100)  # J1: the whole machine, 100 s
    + swf_line(3, 2, 50, 2, -1)  # J2: 2 nodes, runs 50 s, requested no limit (-1)
)


def default_time_schedule(tmp_path, partition_keys: str):
    """4 whole nodes, FCFS, Slurm's backfill with exact times. J0 runs [0, 100); J1 (4 nodes)
    is reserved [100, 200). J2 (2 nodes) fits beside J0 now, and starts at once if its limit
    ends by J1's reservation (2 + limit <= 100), else after J1 (200)."""
    conf = read_slurm_conf(write(tmp_path / "slurm.conf", (
        "SelectType=select/linear\nNodeName=n[1-4] CPUs=1\n"
        f"PartitionName=p Nodes=n[1-4] Default=YES {partition_keys}\n")))
    jobs = read_trace(write(tmp_path / "t.swf", DEFAULT_TIME_TRACE), ReadOptions(trace_format="swf"))
    assert jobs.time_limit_unstated.tolist() == [False, False, True]
    assert jobs.time_limit.tolist() == [100, 100, 50]  # the reader's stand-in: the run time
    machine = machine_from_mapping(conf.system)
    return simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", backfill_params=EXACT)


@pytest.mark.parametrize("keys, j2_start, j2_limit, killed", [
    ("", 2, 50, False),  # no DefaultTime, no MaxTime: the stand-in (50 s) ends at 52 < 100
    ("DefaultTime=1", 2, 60, False),  # 60 s: ends by 62 < 100, backfilled
    ("DefaultTime=2", 200, 120, False),  # 120 s: would end at 122 > 100: after J1
    ("MaxTime=10", 200, 600, False),  # no DefaultTime: MaxTime (600 s)
    ("DefaultTime=2 MaxTime=10", 200, 120, False),  # DefaultTime before MaxTime
    ("DefaultTime=0:30", 2, 30, True),  # 30 s: backfilled, killed at its limit (runs 50 s)
    ("DefaultTime=20 MaxTime=10", 200, 600, False),  # DefaultTime > MaxTime: dropped (slurmctld)
])
def test_default_time_is_the_limit_of_jobs_that_asked_none(tmp_path, keys, j2_start, j2_limit, killed):
    schedule = default_time_schedule(tmp_path, keys)
    assert schedule.begin.tolist() == [0, 100, j2_start]
    assert schedule.killed.tolist() == [False, False, killed]
    assert schedule.run_time.tolist()[2] == (30 if killed else 50)
    conf = read_slurm_conf(tmp_path / "slurm.conf")
    jobs = read_trace(tmp_path / "t.swf", ReadOptions(trace_format="swf"))
    assert default_time_limits(jobs, machine_from_mapping(conf.system)).time_limit.tolist() == [100, 100, j2_limit]
    assert any("exceeds its MaxTime" in note for note in conf.ignored) == ("DefaultTime=20" in keys)


def test_default_time_zero_refuses_jobs_that_ask_no_limit(tmp_path):
    """Slurm refuses a job without --time in a partition with DefaultTime=0 ("job's default
    time is 0", job_mgr.c): rejected, counted; the others run as before (J2 gone: no
    reservation conflict)."""
    schedule = default_time_schedule(tmp_path, "DefaultTime=0")
    assert schedule.begin.tolist()[:2] == [0, 100] and math.isnan(schedule.begin[2])
    assert schedule.warnings["rejected_partition_default_time"] == 1


def test_drevt_sim_gives_default_time_to_a_sacct_partition_limit_job(tmp_path):
    """End to end through drevt-sim --slurm-conf: a sacct export whose third job shows
    ``Partition_Limit`` (no limit requested) gets the partition's DefaultTime (2 min), so it
    is no longer backfilled beside J0 (the case above, from an sacct file)."""
    trace = write(tmp_path / "sacct.txt", (
        "JobID|User|Account|Partition|Submit|ReqNodes|Timelimit|ElapsedRaw|State\n"
        "1|u|a|p|2026-01-01T00:00:00|2|00:01:40|100|COMPLETED\n"
        "2|u|a|p|2026-01-01T00:00:01|4|00:01:40|100|COMPLETED\n"
        "3|u|a|p|2026-01-01T00:00:02|2|Partition_Limit|50|COMPLETED\n"))
    conf = write(tmp_path / "slurm.conf", "SelectType=select/linear\nNodeName=n[1-4] CPUs=1\n"
                 "PartitionName=p Nodes=n[1-4] Default=YES DefaultTime=2\n")
    out = tmp_path / "schedule.csv"
    params = [x for k, v in EXACT.items() for x in ("--backfill_param", f"{k}={v}")]
    assert sim_main([str(trace), "--trace_format", "slurm", "--slurm-conf", str(conf), "--quiet",
                     "--output", str(out), *params]) == 0
    import csv

    rows = list(csv.DictReader(out.open()))
    first = float(rows[0]["begin_time"])
    assert [float(r["begin_time"]) - first for r in rows] == [0, 100, 200]
    assert [float(r["time_limit"]) for r in rows] == [100, 100, 120]


# ------------------------------------------------------------------- association/QOS limits
from jobtable_factory import make_jobs  # noqa: E402

from drevt_sweep.errors import ConfigError  # noqa: E402
from drevt_sweep.sim.limits import STATIC_REASONS  # noqa: E402
from drevt_sweep.sim.machine import REJECT_REASONS  # noqa: E402
from drevt_sweep.trace.associations import read_associations  # noqa: E402

HEADER = "Cluster|Account|User|Partition|Share|GrpJobs|GrpTRES|GrpSubmit|MaxJobs|MaxTRES|MaxSubmit|MaxWall|QOS|Def QOS\n"
# 4 whole nodes of 2 CPUs
MACHINE = machine_from_mapping({"partitions": [{"name": "p", "nodes": 4, "cores": 2, "queues": ["p"]}]})


def assoc_line(account, user="", share="1", grp_jobs="", grp_tres="", grp_submit="", max_jobs="", max_tres="",
               max_submit="", max_wall="", qos="normal", def_qos=""):
    return "|".join(["c", account, user, "", share, grp_jobs, grp_tres, grp_submit, max_jobs, max_tres,
                     max_submit, max_wall, qos, def_qos]) + "\n"


def associations(tmp_path, *lines, qos=None):
    """root -> physics (alice, bob) and biology (carol), with the given lines on top (a line
    for an existing association replaces it)."""
    base = {("root", ""): assoc_line("root"), ("physics", ""): assoc_line("physics"),
            ("biology", ""): assoc_line("biology"), ("physics", "alice"): assoc_line("physics", "alice"),
            ("physics", "bob"): assoc_line("physics", "bob"), ("biology", "carol"): assoc_line("biology", "carol")}
    for line in lines:
        cells = line.split("|")
        base[(cells[1], cells[2])] = line
    path = write(tmp_path / "assoc.txt", HEADER + "".join(base.values()))
    qos_path = write(tmp_path / "qos.txt", qos) if qos else None
    return read_associations(path, qos_path)


def jobs_of(rows):
    """rows: (submit, nodes, limit, run, user, account)."""
    submit, nodes, limit, run, user, group = zip(*rows)
    return make_jobs(list(submit), list(nodes), list(limit), list(run), queue=["p"] * len(rows),
                     user=list(user), group=list(group))


def simulate(jobs, limits, **options):
    return simulate_machine(jobs, jobs.actual_run_time, MACHINE, backfill="slurm", backfill_params=EXACT,
                            limits=limits, **options)


def begins(schedule):
    return [None if math.isnan(b) else b for b in schedule.begin.tolist()]


THREE = [(0, 1, 100, 100, "alice", "physics"),  # A1
         (1, 1, 100, 100, "alice", "physics"),  # A2
         (2, 1, 100, 100, "bob", "physics")]  # B1


def test_max_jobs_holds_a_users_second_job_until_the_first_ends(tmp_path):
    """4 free nodes: without limits all three start at submission. alice MaxJobs=1: A2 is held
    (AssocMaxJobsLimit) until A1 ends at 100; bob's job is not held (his own association) and,
    though after A2 in priority order, starts at 2: a held job does not stop the scheduler."""
    jobs = jobs_of(THREE)
    free = simulate(jobs, associations(tmp_path))
    assert begins(free) == [0, 1, 2] and not any(k.startswith("held_") for k in free.warnings)
    held = simulate(jobs, associations(tmp_path, assoc_line("physics", "alice", max_jobs="1")))
    assert begins(held) == [0, 100, 2]
    assert held.warnings["held_AssocMaxJobsLimit"] == 1


def test_max_jobs_is_inherited_from_the_account_and_a_users_own_value_wins(tmp_path):
    """physics MaxJobs=1 applies to each of its users' associations (Slurm's Max* limits are
    per user association, inherited down the tree): A2 held until 100, bob's job free (his own
    count). alice MaxJobs=2 overrides the account's: nothing held."""
    jobs = jobs_of(THREE)
    inherited = simulate(jobs, associations(tmp_path, assoc_line("physics", max_jobs="1")))
    assert begins(inherited) == [0, 100, 2]
    own = simulate(jobs, associations(tmp_path, assoc_line("physics", max_jobs="1"),
                                      assoc_line("physics", "alice", max_jobs="2")))
    assert begins(own) == [0, 1, 2]


def test_grp_jobs_counts_every_user_of_the_account(tmp_path):
    """physics GrpJobs=2 (the account's subtree): A1 and A2 run, bob's job is held
    (AssocGrpJobsLimit) until A1 ends at 100."""
    schedule = simulate(jobs_of(THREE), associations(tmp_path, assoc_line("physics", grp_jobs="2")))
    assert begins(schedule) == [0, 1, 100]
    assert schedule.warnings["held_AssocGrpJobsLimit"] == 1


def test_max_submit_refuses_the_submission_and_counts_it(tmp_path):
    """alice MaxSubmitJobs=1: A2 (t=1) is refused while A1 (t=0) runs -- rejected, never
    queued; A3 (t=150, after A1 ended at 100) is accepted and starts at once."""
    jobs = jobs_of([THREE[0], THREE[1], (150, 1, 100, 100, "alice", "physics")])
    schedule = simulate(jobs, associations(tmp_path, assoc_line("physics", "alice", max_submit="1")))
    assert begins(schedule) == [0, None, 150]
    assert schedule.warnings["rejected_assoc_max_submit"] == 1
    assert schedule.rejected.tolist() == [False, True, False]
    assert math.isnan(schedule.run_time[1]) and not schedule.killed.any()
    # GrpSubmit on the account counts bob's pending/running jobs too: bob's job at t=2 is refused
    jobs = jobs_of(THREE)
    schedule = simulate(jobs, associations(tmp_path, assoc_line("physics", grp_submit="2")))
    assert begins(schedule) == [0, 1, None]
    assert schedule.warnings["rejected_assoc_grp_submit"] == 1


@pytest.mark.parametrize("tres, reason", [("node=2", "AssocGrpNodeLimit"), ("cpu=4", "AssocGrpCpuLimit")])
def test_grp_tres_holds_a_job_over_the_accounts_nodes_or_cpus(tmp_path, tres, reason):
    """physics GrpTRES node=2 (or cpu=4: 2 CPUs per node): alice's 2-node job runs [0, 100);
    bob's 1-node job (t=1) would make 3 nodes (6 CPUs): held until 100; carol (biology, t=2)
    starts at once -- bob's hold does not fail the partition."""
    jobs = jobs_of([(0, 2, 100, 100, "alice", "physics"), (1, 1, 100, 100, "bob", "physics"),
                    (2, 1, 100, 100, "carol", "biology")])
    schedule = simulate(jobs, associations(tmp_path, assoc_line("physics", grp_tres=tres)))
    assert begins(schedule) == [0, 100, 2]
    assert schedule.warnings[f"held_{reason}"] == 1


def test_jobs_no_limit_lets_run_are_rejected_by_reason(tmp_path):
    """alice MaxWall=1 (minute): her 100 s job can never run (Slurm keeps it pending for ever):
    rejected_assoc_max_wall; her 50 s job runs. physics GrpTRES node=2: bob's 3-node job alone
    is over it: rejected_assoc_job_limit. dave has no association: rejected_no_association."""
    jobs = jobs_of([(0, 1, 100, 100, "alice", "physics"), (1, 1, 50, 50, "alice", "physics"),
                    (2, 3, 100, 100, "bob", "physics"), (3, 1, 100, 100, "dave", "physics")])
    schedule = simulate(jobs, associations(tmp_path, assoc_line("physics", "alice", max_wall="1"),
                                           assoc_line("physics", grp_tres="node=2")))
    assert begins(schedule) == [None, 1, None, None]
    assert {k: v for k, v in schedule.warnings.items() if k.startswith("rejected_") and v} == {
        "rejected_oversized": 3, "rejected_assoc_max_wall": 1, "rejected_assoc_job_limit": 1,
        "rejected_no_association": 1}
    assert STATIC_REASONS == REJECT_REASONS[-len(STATIC_REASONS):]


QOS_HEADER = "Name|Priority|GraceTime|GrpTRES|GrpJobs|MaxWall|MaxTRESPU|MaxJobsPU|MaxSubmitPU\n"


def test_qos_limits_replace_the_associations(tmp_path):
    """QOS 'small' (alice's and bob's default): MaxJobsPU=1 holds A2 (QOSMaxJobsPerUserLimit)
    although alice's association allows 5 (a QOS limit of the same kind replaces the
    association's); the QOS's GrpTRES node=2 lets A1 and bob's job (1 node each) run."""
    qos = QOS_HEADER + "normal|0||||||||\nsmall|0|00:00:00|node=2||||1|\n"
    limits = associations(tmp_path, assoc_line("physics", "alice", max_jobs="5", def_qos="small"),
                          assoc_line("physics", "bob", def_qos="small"), qos=qos)
    schedule = simulate(jobs_of(THREE), limits)
    assert begins(schedule) == [0, 100, 2]
    assert schedule.warnings["held_QOSMaxJobsPerUserLimit"] == 1
    # carol joins 'small' with a 1-node job at t=3: A1 and bob use the QOS's 2 nodes, so she is
    # held (QOSGrpNodeLimit). At 100 A1 ends: A2 (first in priority order, alice has no job
    # running now) takes the QOS's free node; carol waits for bob's end at 102.
    limits = associations(tmp_path, assoc_line("physics", "alice", def_qos="small"),
                          assoc_line("physics", "bob", def_qos="small"),
                          assoc_line("biology", "carol", def_qos="small"), qos=qos)
    schedule = simulate(jobs_of(THREE + [(3, 1, 100, 100, "carol", "biology")]), limits)
    assert begins(schedule) == [0, 100, 2, 102]
    assert schedule.warnings["held_QOSGrpNodeLimit"] == 1


def test_limits_need_slurms_backfill(tmp_path):
    limits = associations(tmp_path, assoc_line("physics", "alice", max_jobs="1"))
    jobs = jobs_of(THREE)
    with pytest.raises(ConfigError, match="enforced by Slurm's backfill"):
        simulate_machine(jobs, jobs.actual_run_time, MACHINE, backfill="easy", limits=limits)
    # associations without limits (shares, QOS priorities) go with any backfill
    plain = simulate_machine(jobs, jobs.actual_run_time, MACHINE, backfill="easy", limits=associations(tmp_path))
    assert begins(plain) == [0, 1, 2]


@pytest.mark.parametrize("text, message", [
    (HEADER.replace("MaxWall", "MaxWallz"), ":1: MaxWallz: not a column sacctmgr prints"),
    (HEADER + assoc_line("physics") + assoc_line("physics", "alice", grp_tres="cpu=abc"),
     ":3: GrpTRES: cpu: expected a whole number >= 0, got 'abc'"),
    (HEADER + assoc_line("physics") + assoc_line("physics", "alice", max_jobs="-1"),
     ":3: MaxJobs: must be at least 0, got -1"),
    (HEADER + assoc_line("physics") + assoc_line("physics", "alice", max_wall="soon"),
     ":3: MaxWall: expected a Slurm time"),
    (HEADER + assoc_line("physics") + assoc_line("physics", "alice") + assoc_line("physics", "alice"),
     ":4: Account/User/Partition: the association physics/alice/ is repeated (first at line 3)"),
    (HEADER + assoc_line("physics", "alice"), ":2: Account: the user association physics/alice has no account"),
    (HEADER + assoc_line("physics") + "c|physics|alice\n", ":3: line: 3 fields, the header has 14"),
    ("Name|Priority\nnormal|0\n", ":1: Account: missing"),
])
def test_bad_associations_are_one_line_naming_file_line_and_column(tmp_path, text, message):
    path = write(tmp_path / "assoc.txt", text)
    with pytest.raises(ConfigError) as info:
        read_associations(path)
    assert f"{path}{message}" in str(info.value)


def test_drevt_sim_refuses_bad_associations_with_exit_2(tmp_path, capsys):
    trace = write(tmp_path / "jobs.csv", "job_submit_time,num_nodes,queue,time_limit,actual_run_time,user,group\n"
                                        "0,1,p,100,50,alice,physics\n")
    conf = write(tmp_path / "slurm.conf", "SelectType=select/linear\nNodeName=n[1-4] CPUs=2\n"
                 "PartitionName=p Nodes=n[1-4] Default=YES\nAccountingStorageEnforce=associations,limits\n")
    assert sim_main([str(trace), "--slurm-conf", str(conf), "--associations", str(tmp_path / "none.txt")]) == 2
    assert "cannot read the associations file" in capsys.readouterr().err
    bad = write(tmp_path / "assoc.txt", HEADER + assoc_line("physics") + assoc_line("physics", "alice", grp_tres="cpu=abc"))
    assert sim_main([str(trace), "--slurm-conf", str(conf), "--associations", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:3: GrpTRES: cpu: expected a whole number" in err and "Traceback" not in err
    good = write(tmp_path / "good.txt", HEADER + assoc_line("physics") + assoc_line("physics", "alice", max_jobs="1"))
    assert sim_main([str(trace), "--slurm-conf", str(conf), "--associations", str(good),
                     "--backfill_policy", "easy"]) == 2
    assert "enforced by Slurm's backfill" in capsys.readouterr().err


FAIRSHARE_TRACE = (
    "job_submit_time,num_nodes,queue,time_limit,actual_run_time,user,group\n"
    "0,1,p,100,100,carol,biology\n"  # J0
    "1,1,p,100,100,alice,physics\n"  # J1
    "2,1,p,100,100,alice,physics\n"  # J2
    "3,1,p,100,100,carol,biology\n")  # J3


@pytest.mark.parametrize("enforce, shares, first", [("limits", ("1", "1"), "J2"), ("limits", ("1", "3"), "J3"),
                                                     ("", ("1", "1"), "J3")])
def test_shares_from_the_associations_feed_fair_share(tmp_path, enforce, shares, first):
    """One node, classic fair share only (weight 10000), no decay, usage counted every minute.
    J0 (biology) runs [0, 100), J1 (physics) [100, 200). With AccountingStorageEnforce=limits
    Slurm charges a job up to its end: at t=200 the ticks of 60, 120, 180 have counted biology
    100 node-s, physics 80 (root 180). Equal shares: F = 2^(-U/S): physics 2^(-(80/180)/0.5) =
    0.540, biology 2^(-(100/180)/0.5) = 0.463: J2 (physics) first. physics Share=1, biology
    Share=3 (S = 0.25, 0.75): physics 2^(-1.78) = 0.29, biology 2^(-0.74) = 0.60: J3 (biology)
    first. Without limits a job's time after the last tick before its end is never charged
    (``charge_ended_jobs``, multifactor.py): J0's [60, 100) is lost, biology 60, physics 80 (the
    tick of 180 counted J1's [100, 180)), root 140: physics 2^(-(80/140)/0.5) = 0.453, biology
    2^(-(60/140)/0.5) = 0.552: J3 first with equal shares too."""
    conf = write(tmp_path / "slurm.conf", (
        "SelectType=select/linear\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1 Default=YES\n"
        "PriorityType=priority/multifactor\nPriorityFlags=NO_FAIR_TREE\nPriorityWeightFairshare=10000\n"
        f"PriorityDecayHalfLife=0\nPriorityCalcPeriod=1\nAccountingStorageEnforce={enforce or 'none'}\n"))
    assoc = write(tmp_path / "assoc.txt", HEADER + assoc_line("root") + assoc_line("physics", share=shares[0])
                  + assoc_line("biology", share=shares[1]) + assoc_line("physics", "alice")
                  + assoc_line("biology", "carol"))
    trace = write(tmp_path / "jobs.csv", FAIRSHARE_TRACE)
    stats = tmp_path / "stats.json"
    out = tmp_path / "schedule.csv"
    params = [x for k, v in EXACT.items() for x in ("--backfill_param", f"{k}={v}")]
    assert sim_main([str(trace), "--slurm-conf", str(conf), "--associations", str(assoc), "--quiet", "--queues", "all",
                     "--output", str(out), "--stats", str(stats), *params]) == 0
    import csv

    starts = [float(r["begin_time"]) for r in csv.DictReader(out.open())]
    assert starts[:2] == [0, 100]
    assert (starts[2], starts[3]) == ((200, 300) if first == "J2" else (300, 200))
    used = json.loads(stats.read_text())["run"]["priority_params"]
    assert used["account_shares"] == {"biology": float(shares[1]), "physics": float(shares[0])}
    assert used["charge_ended_jobs"] is (enforce == "limits")


def test_qos_priority_feeds_the_qos_factor(tmp_path):
    """One node, QOS weight 1000 only. J0 (bob, normal) runs [0, 100); J1 (bob, t=1) and J2
    (alice, t=2, Def QOS 'high') wait: FCFS would start J1 at 100. 'high' has Priority 10, the
    largest: factor 10/10 = 1 -> 1000 for J2, 0 -> 1 (Slurm's floor) for J1: J2 at 100, J1 at
    200. With 'high' at Priority 0 too, every factor is 0: FCFS."""
    conf = write(tmp_path / "slurm.conf", (
        "SelectType=select/linear\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1 Default=YES\n"
        "PriorityType=priority/multifactor\nPriorityWeightQOS=1000\n"))
    trace = write(tmp_path / "jobs.csv", "job_submit_time,num_nodes,queue,time_limit,actual_run_time,user,group\n"
                  "0,1,p,100,100,bob,physics\n1,1,p,100,100,bob,physics\n2,1,p,100,100,alice,physics\n")
    params = [x for k, v in EXACT.items() for x in ("--backfill_param", f"{k}={v}")]
    import csv

    for high, expected in (("10", [0, 200, 100]), ("0", [0, 100, 200])):
        qos = write(tmp_path / "qos.txt", f"Name|Priority|MaxJobsPU\nnormal|0|\nhigh|{high}|\n")
        assoc = write(tmp_path / "assoc.txt", HEADER + assoc_line("root") + assoc_line("physics")
                      + assoc_line("physics", "alice", qos="normal,high", def_qos="high")
                      + assoc_line("physics", "bob"))
        out = tmp_path / "schedule.csv"
        assert sim_main([str(trace), "--slurm-conf", str(conf), "--associations", str(assoc), "--qos", str(qos),
                         "--quiet", "--queues", "all", "--output", str(out), *params]) == 0
        assert [float(r["begin_time"]) for r in csv.DictReader(out.open())] == expected


@pytest.mark.slow
def test_a_sweep_with_system_associations(tmp_path):
    """A real Hydra multirun: system=slurm with system.associations, without and with alice's
    MaxJobs=1 (two files, swept): the held job is counted, the schedule's mean wait changes
    (A2 waits 99 s instead of 0), and each file's sha256 is in its configuration's identity."""
    import os
    import subprocess
    import sys

    conf = write(tmp_path / "slurm.conf", "SelectType=select/linear\nNodeName=n[1-4] CPUs=2\n"
                 "PartitionName=p Nodes=n[1-4] Default=YES\nAccountingStorageEnforce=limits\n"
                 "SchedulerParameters=bf_interval=1,bf_resolution=1\n")
    trace = write(tmp_path / "jobs.csv", "job_submit_time,num_nodes,queue,time_limit,actual_run_time,user,group\n"
                  "0,1,p,100,100,alice,physics\n1,1,p,100,100,alice,physics\n2,1,p,100,100,bob,physics\n")
    free = write(tmp_path / "free.txt", HEADER + assoc_line("root") + assoc_line("physics")
                 + assoc_line("physics", "alice") + assoc_line("physics", "bob"))
    one = write(tmp_path / "one.txt", HEADER + assoc_line("root") + assoc_line("physics")
                + assoc_line("physics", "alice", max_jobs="1") + assoc_line("physics", "bob"))
    cmd = [sys.executable, "-m", "drevt_sweep", "-m", "system=slurm", f"system.slurm_conf={conf}",
           f"system.associations={free},{one}", "policy=slurm", "trace=custom", f"trace.path={trace}",
           "format=simple", "format.queues=[all]", "tracking.enabled=false", "progress=false",
           f"paths.output_root={tmp_path / 'out'}", f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    results = [json.loads(p.read_text()) for p in sorted((tmp_path / "sweep").glob("*/result.json"))]
    assert [r["status"] for r in results] == ["FINISHED", "FINISHED"]
    metrics = {r["label"].split("system.associations=")[1].split()[0]: r["metrics"] for r in results}
    assert results[0]["config_hash"] != results[1]["config_hash"]
    assert metrics[str(free)]["wait_mean"] == 0 and "held/AssocMaxJobsLimit" not in metrics[str(free)]
    # A2 waits from 1 to A1's end at 100 (a main-scheduler pass at the completion): 99 s / 3 jobs
    assert metrics[str(one)]["held/AssocMaxJobsLimit"] == 1 and metrics[str(one)]["wait_mean"] == 33


def test_a_limit_over_jobs_of_two_pools_is_counted_as_split(tmp_path):
    """Pools are simulated apart, so alice's MaxJobs=1 over jobs in pools p and q is enforced
    per pool: both her jobs start at once (Slurm would hold one), and the result says so
    (limits_split_over_pools: 2 jobs) rather than hiding it. bob's jobs (one pool) are not."""
    machine = machine_from_mapping({"partitions": [
        {"name": "p", "nodes": 2, "cores": 2, "queues": ["p"]}, {"name": "q", "nodes": 2, "cores": 2, "queues": ["q"]}]})
    jobs = make_jobs([0, 1, 2, 3], [1, 1, 1, 1], [100] * 4, [100] * 4, queue=["p", "q", "p", "p"],
                     user=["alice", "alice", "bob", "bob"], group=["physics"] * 4)
    limits = associations(tmp_path, assoc_line("physics", "alice", max_jobs="1"),
                          assoc_line("physics", "bob", max_jobs="1"))
    schedule = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", backfill_params=EXACT,
                                limits=limits)
    assert begins(schedule) == [0, 1, 2, 102]  # bob's second job held in p: his first ends at 102
    assert schedule.warnings["limits_split_over_pools"] == 2


def test_a_job_submitted_to_several_partitions_of_one_pool_runs_in_the_first_slurm_would_pick(tmp_path):
    """batch (tier 1) and high (PriorityTier=2, MaxTime=1) share one node: one pool. J0 (batch)
    runs [0, 100). J1 (batch, 50 s) waits. J2 (--partition=batch,high, 50 s) runs in high, the
    higher tier: at 100 it goes before J1 (100, then J1 at 150). J3 (batch,high, 100 s: over
    high's MaxTime) can only run in batch: after J1, at 200. Each is then counted in the
    partition it ran in, as sacct shows it."""
    from drevt_sweep.sim.machine import several_partitions

    conf = read_slurm_conf(write(tmp_path / "slurm.conf", (
        "SelectType=select/linear\nNodeName=n1 CPUs=1\nPartitionName=batch Nodes=n1 Default=YES\n"
        "PartitionName=high Nodes=n1 PriorityTier=2 MaxTime=1\n")))
    machine = machine_from_mapping(conf.system)
    jobs = make_jobs([0, 1, 2, 3], [1] * 4, [100, 50, 50, 100], [100, 50, 50, 100],
                     queue=["batch", "batch", "batch,high", "batch,high"])
    assert several_partitions(jobs, machine).partition.tolist() == ["batch", "batch", "high", "batch"]
    schedule = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", backfill_params=EXACT)
    assert begins(schedule) == [0, 150, 100, 200]
    assert not any(k.startswith("rejected_") and v for k, v in schedule.warnings.items())
    # without tiers: the higher PriorityJobFactor, else the partition listed first
    flat = machine_from_mapping(read_slurm_conf(write(tmp_path / "flat.conf", (
        "SelectType=select/linear\nNodeName=n1 CPUs=1\nPartitionName=batch Nodes=n1 Default=YES\n"
        "PartitionName=high Nodes=n1\n"))).system)
    two = make_jobs([0, 1], [1, 1], [50, 50], [50, 50], queue=["batch,high", "high,batch"])
    assert several_partitions(two, flat).partition.tolist() == ["batch", "high"]
    assert several_partitions(two, flat, {"high": 2, "batch": 1}).partition.tolist() == ["high", "high"]


def test_a_job_submitted_to_partitions_of_several_pools_is_rejected_with_its_own_reason(tmp_path, capsys):
    """--partition=p,q over two pools is not modelled (it needs the pools in one simulation):
    rejected and counted as multi_partition -- not mistaken for an unknown partition, never
    dropped silently; a list naming a partition the machine lacks stays no_partition."""
    machine = machine_from_mapping({"partitions": [
        {"name": "p", "nodes": 2, "queues": ["p"]}, {"name": "q", "nodes": 2, "queues": ["q"]}]})
    jobs = make_jobs([0, 1, 2], [1, 1, 1], [100] * 3, [100] * 3, queue=["p", "p,q", "p,x"])
    schedule = simulate_machine(jobs, jobs.actual_run_time, machine)
    assert begins(schedule) == [0, None, None]
    assert schedule.placement.counts() == {"rejected_multi_partition": 1, "rejected_no_partition": 1}
    trace = write(tmp_path / "jobs.csv", "job_submit_time,num_nodes,queue,time_limit,actual_run_time\n"
                                        "0,1,p,100,50\n1,1,\"p,q\",100,50\n")
    conf = write(tmp_path / "slurm.conf", "SelectType=select/linear\nNodeName=n[1-4] CPUs=2\n"
                 "PartitionName=p Nodes=n[1-2] Default=YES\nPartitionName=q Nodes=n[3-4]\n")
    assert sim_main([str(trace), "--queues", "all", "--slurm-conf", str(conf), "--quiet"]) == 0
    assert "submitted to several partitions (a,b) in different node pools" in capsys.readouterr().err


def test_qos_per_user_limits_and_max_wall(tmp_path):
    """QOS 'capped' (alice's default): MaxSubmitPU=2 refuses A3 (alice's third job while A1
    and A2 are queued or running: rejected_qos_max_submit_pu); MaxTRESPU node=2 holds A2 (2
    nodes) while A1 (1 node) runs (QOSMaxNodePerUserLimit) until A1 ends at 100; MaxWall=1
    rejects A4 (limit 100 s > 60 s: rejected_qos_max_wall, before any submission count)."""
    qos = QOS_HEADER + "normal|0||||||||\ncapped|0||||01:00|node=2||2\n"
    limits = associations(tmp_path, assoc_line("physics", "alice", def_qos="capped"), qos=qos)
    jobs = jobs_of([(0, 1, 50, 50, "alice", "physics"),  # A1
                    (1, 2, 50, 50, "alice", "physics"),  # A2
                    (2, 1, 50, 50, "alice", "physics"),  # A3
                    (3, 1, 100, 100, "alice", "physics")])  # A4
    schedule = simulate(jobs, limits)
    assert begins(schedule) == [0, 50, None, None]
    assert schedule.warnings["held_QOSMaxNodePerUserLimit"] == 1
    assert schedule.warnings["rejected_qos_max_submit_pu"] == 1
    assert schedule.warnings["rejected_qos_max_wall"] == 1


def test_the_sweep_reads_system_associations_and_refuses_them_without_slurms_backfill(tmp_path):
    """run_spec, as each configuration of drevt-sweep builds it: system.associations gives the
    limits and (with policy=slurm's multifactor) the shares and QOS factors; a backfill other
    than Slurm's with associations is a ConfigError (exit 2), not a silent skip; so is
    system.qos without system.associations."""
    from hydra import compose, initialize_config_module

    from drevt_sweep.sweep.app import run_spec
    from drevt_sweep.sweep.config import register_configs

    conf = write(tmp_path / "slurm.conf", "SelectType=select/linear\nNodeName=n[1-4] CPUs=2\n"
                 "PartitionName=p Nodes=n[1-4] Default=YES\nPriorityType=priority/multifactor\n"
                 "PriorityWeightQOS=1000\nAccountingStorageEnforce=limits\n")
    assoc = write(tmp_path / "assoc.txt", HEADER + assoc_line("root") + assoc_line("physics", share="3")
                  + assoc_line("physics", "alice", def_qos="high") + assoc_line("biology")
                  + assoc_line("biology", "carol", max_jobs="2"))
    qos = write(tmp_path / "qos.txt", "Name|Priority\nnormal|0\nhigh|4\n")
    register_configs()

    def spec(*overrides):
        with initialize_config_module(version_base="1.3", config_module="drevt_sweep.conf"):
            cfg = compose("config", overrides=["system=slurm", f"system.slurm_conf={conf}", *overrides])
        return run_spec(cfg, None, None, ("p",), (("biology", "physics"), ("alice", "carol")))

    made = spec(f"system.associations={assoc}", f"system.qos={qos}", "policy=slurm")
    assert made.backfill == "slurm" and made.limits is not None
    assert made.priority_params["account_shares"] == {"biology": 1.0, "physics": 3.0}
    assert made.priority_params["qos_factor"] == {"physics/alice": 1.0}
    with pytest.raises(ConfigError, match="enforced by Slurm's backfill"):
        spec(f"system.associations={assoc}", "policy=easy")
    with pytest.raises(ConfigError, match="set system.associations too"):
        spec(f"system.qos={qos}", "policy=slurm")
    with pytest.raises(ConfigError, match="system.associations: cannot read"):
        spec(f"system.associations={tmp_path / 'none.txt'}", "policy=slurm")


def test_a_jobs_own_qos_from_sacct_sets_its_qos_priority_and_limits(tmp_path):
    """sacct's QOS column: the job runs in the QOS it asked for (when the QOS file has it), not
    its association's default. Priority: one node, QOS weight only; bob's default QOS is
    normal, but J2 asked for 'high' (Priority 10): at 100 it goes before J1 (FCFS would not).
    Limits: QOS 'debug' MaxJobsPU=1 holds the second of bob's debug jobs, not his normal one."""
    conf = write(tmp_path / "slurm.conf", (
        "SelectType=select/linear\nNodeName=n1 CPUs=1\nPartitionName=p Nodes=n1 Default=YES\n"
        "PriorityType=priority/multifactor\nPriorityWeightQOS=1000\n"))
    trace = write(tmp_path / "sacct.txt", (
        "JobID|User|Account|Partition|QOS|Submit|ReqNodes|Timelimit|ElapsedRaw|State\n"
        "1|bob|physics|p|normal|2026-01-01T00:00:00|1|00:01:40|100|COMPLETED\n"
        "2|bob|physics|p|normal|2026-01-01T00:00:01|1|00:01:40|100|COMPLETED\n"
        "3|bob|physics|p|high|2026-01-01T00:00:02|1|00:01:40|100|COMPLETED\n"))
    qos = write(tmp_path / "qos.txt", "Name|Priority|MaxJobsPU\nnormal|0|\nhigh|10|\ndebug|0|1\n")
    assoc = write(tmp_path / "assoc.txt", HEADER + assoc_line("root") + assoc_line("physics")
                  + assoc_line("physics", "bob", qos="normal,high,debug", def_qos="normal"))
    out = tmp_path / "schedule.csv"
    params = [x for k, v in EXACT.items() for x in ("--backfill_param", f"{k}={v}")]
    assert sim_main([str(trace), "--trace_format", "slurm", "--slurm-conf", str(conf), "--associations", str(assoc),
                     "--qos", str(qos), "--quiet", "--output", str(out), *params]) == 0
    import csv

    starts = [float(r["begin_time"]) for r in csv.DictReader(out.open())]
    assert [s - starts[0] for s in starts] == [0, 200, 100]
    jobs = read_trace(trace, ReadOptions(trace_format="slurm"))
    assert jobs.qos_names == ("high", "normal") and jobs.qos_code.tolist() == [1, 1, 0]
    # limits: 4 nodes; J0 and J1 in QOS debug (MaxJobsPU=1), J2 in bob's default (normal)
    jobs = jobs_of([(0, 1, 100, 100, "bob", "physics"), (1, 1, 100, 100, "bob", "physics"),
                    (2, 1, 100, 100, "bob", "physics")])
    jobs = jobs.replace(qos_code=np.array([0, 0, -1], dtype=np.int32), qos_names=("debug",))
    schedule = simulate(jobs, read_associations(assoc, qos))
    assert begins(schedule) == [0, 100, 2]
    assert schedule.warnings["held_QOSMaxJobsPerUserLimit"] == 1


def test_max_wall_is_the_limit_of_jobs_that_asked_none_where_there_is_no_default_time(tmp_path):
    """The DefaultTime case above (J2 asked for no limit) with MaxTime=10 and no DefaultTime:
    J2 gets MaxTime (600 s) and waits for J1 (200). With its association's MaxWall=1 minute,
    Slurm gives it MaxWall instead (``_set_time_limit`` at submission, before MaxTime): 60 s, it
    ends by 62 < 100 and is backfilled at 2 -- not rejected as over MaxWall. With DefaultTime=2
    as well, DefaultTime wins (applied first): 120 s, after J1."""
    trace = write(tmp_path / "t.swf", swf_line(1, 0, 100, 2, 100, user=2) + swf_line(2, 1, 100, 4, 100, user=2)
                  + swf_line(3, 2, 50, 2, -1, user=1))  # J0, J1 of user 2; J2 of user 1 (MaxWall)
    jobs = read_trace(trace, ReadOptions(trace_format="swf"))
    assoc_text = (HEADER + assoc_line("root") + assoc_line("1") + assoc_line("1", "1", max_wall="1")
                  + assoc_line("1", "2"))

    def run(partition_keys, with_limits):
        conf = read_slurm_conf(write(tmp_path / "slurm.conf", (
            "SelectType=select/linear\nNodeName=n[1-4] CPUs=1\n"
            f"PartitionName=p Nodes=n[1-4] Default=YES {partition_keys}\n")))
        limits = read_associations(write(tmp_path / "a.txt", assoc_text)) if with_limits else None
        return simulate_machine(jobs, jobs.actual_run_time, machine_from_mapping(conf.system), backfill="slurm",
                                backfill_params=EXACT, limits=limits)

    assert begins(run("MaxTime=10", False)) == [0, 100, 200]
    with_wall = run("MaxTime=10", True)
    assert begins(with_wall) == [0, 100, 2] and "rejected_assoc_max_wall" not in with_wall.warnings
    both = run("MaxTime=10 DefaultTime=2", True)
    assert begins(both) == [0, 100, None] and both.warnings["rejected_assoc_max_wall"] == 1


@pytest.mark.parametrize("enforce, begins_expected, rejected", [
    ("", [0, 1, 2, 3], 0),  # Slurm's default: nothing enforced (dave runs too)
    ("AccountingStorageEnforce=none\n", [0, 1, 2, 3], 0),  # as scontrol writes the default
    ("AccountingStorageEnforce=associations\n", [0, 1, 2, None], 1),  # only: no association, no job
    ("AccountingStorageEnforce=associations,limits\n", [0, 100, 2, None], 1),  # and alice's MaxJobs=1
    ("AccountingStorageEnforce=safe\n", [0, 100, 2, None], 1),  # safe implies limits
])
def test_accounting_storage_enforce_decides_what_the_associations_enforce(tmp_path, capsys, enforce,
                                                                          begins_expected, rejected):
    """The slurm.conf's AccountingStorageEnforce (slurm.conf man page): without 'limits' Slurm
    enforces no association limit (alice's MaxJobs=1 does not hold A2), without 'associations'
    it runs jobs of users without one (dave); the associations still give shares and QOS
    priorities. Said on stderr, never silent."""
    conf = write(tmp_path / "slurm.conf", "SelectType=select/linear\nNodeName=n[1-4] CPUs=2\n"
                 "PartitionName=p Nodes=n[1-4] Default=YES\n" + enforce)
    trace = write(tmp_path / "jobs.csv", "job_submit_time,num_nodes,queue,time_limit,actual_run_time,user,group\n"
                  "0,1,p,100,100,alice,physics\n1,1,p,100,100,alice,physics\n2,1,p,100,100,bob,physics\n"
                  "3,1,p,100,100,dave,physics\n")
    assoc = write(tmp_path / "assoc.txt", HEADER + assoc_line("root") + assoc_line("physics")
                  + assoc_line("physics", "alice", max_jobs="1") + assoc_line("physics", "bob"))
    out = tmp_path / "schedule.csv"
    params = [x for k, v in EXACT.items() for x in ("--backfill_param", f"{k}={v}")]
    assert sim_main([str(trace), "--queues", "all", "--slurm-conf", str(conf), "--associations", str(assoc),
                     "--quiet", "--output", str(out), *params]) == 0
    err = capsys.readouterr().err
    import csv

    got = {int(r["job_id"]): float(r["begin_time"]) for r in csv.DictReader(out.open())}
    first = min(got.values())
    assert [got[i] - first if i in got else None for i in range(1, 5)] == begins_expected
    assert ("enforces no association or QOS limit" in err) == ("limits" not in enforce and "safe" not in enforce)
    assert ("no association in their account" in err) == bool(rejected)


def random_jobs(n=300, seed=7):
    """n jobs of 6 users in 2 accounts on a 16-node machine, busy enough that jobs wait."""
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.uniform(0, 20000, n)).round()
    nodes = rng.integers(1, 9, n)
    limit = rng.choice([600, 1800, 3600, 7200], n).astype(float)
    run = (limit * rng.uniform(0.1, 1.0, n)).round()
    users = [f"u{k}" for k in rng.integers(0, 6, n)]
    groups = ["physics" if int(u[1:]) < 3 else "biology" for u in users]
    jobs = make_jobs(submit.tolist(), nodes.tolist(), limit.tolist(), run.tolist(), queue=["p"] * n,
                     user=users, group=groups)
    return jobs


SIXTEEN = machine_from_mapping({"partitions": [{"name": "p", "nodes": 16, "cores": 2, "queues": ["p"]}]})
SLURM_DEFAULTS = {}  # Slurm's own backfill settings (bf_interval 30 s, bf_resolution 60 s, ...)


def test_associations_without_limits_change_no_schedule(tmp_path):
    """Every user with an association and no limit: the counters run, nothing is held, and the
    schedule is the one without associations, bit for bit (Slurm's defaults and exact times)."""
    jobs = random_jobs()
    lines = [assoc_line("root"), assoc_line("physics"), assoc_line("biology")]
    lines += [assoc_line("physics" if k < 3 else "biology", f"u{k}") for k in range(6)]
    path = write(tmp_path / "assoc.txt", HEADER + "".join(lines))
    for params in (SLURM_DEFAULTS, EXACT):
        plain = simulate_machine(jobs, jobs.actual_run_time, SIXTEEN, backfill="slurm", backfill_params=params)
        limited = simulate_machine(jobs, jobs.actual_run_time, SIXTEEN, backfill="slurm", backfill_params=params,
                                   limits=read_associations(path))
        assert np.array_equal(plain.begin, limited.begin)
        assert not any(k.startswith("held_") for k in limited.warnings)


def _peak(schedule, jobs, rows, weight):
    """The largest sum of ``weight`` over the jobs of ``rows`` running at one instant."""
    events = sorted([(schedule.end[j], -weight[j]) for j in rows] + [(schedule.begin[j], weight[j]) for j in rows])
    peak = now = 0
    for _, w in events:  # ends sort before starts at the same instant (negative weight first)
        now += w
        peak = max(peak, now)
    return peak


@pytest.mark.parametrize("params", [SLURM_DEFAULTS, EXACT])
def test_the_limits_hold_at_every_instant(tmp_path, params):
    """Invariants on a busy random trace: no user ever runs more than its MaxJobs (2), the
    account physics never more than GrpTRES node=8 nodes, nor biology more than GrpJobs=3 jobs;
    and jobs were really held (the limits bind)."""
    jobs = random_jobs()
    lines = [assoc_line("root"), assoc_line("physics", grp_tres="node=8"), assoc_line("biology", grp_jobs="3")]
    lines += [assoc_line("physics" if k < 3 else "biology", f"u{k}", max_jobs="2") for k in range(6)]
    limits = read_associations(write(tmp_path / "assoc.txt", HEADER + "".join(lines)))
    schedule = simulate_machine(jobs, jobs.actual_run_time, SIXTEEN, backfill="slurm", backfill_params=params,
                                limits=limits)
    ran = np.flatnonzero(~schedule.rejected)
    users, groups = jobs.user, jobs.group
    ones = np.ones(len(jobs))
    for k in range(6):
        rows = [j for j in ran if users[j] == f"u{k}"]
        assert _peak(schedule, jobs, rows, ones) <= 2
    assert _peak(schedule, jobs, [j for j in ran if groups[j] == "physics"], jobs.num_nodes.astype(float)) <= 8
    assert _peak(schedule, jobs, [j for j in ran if groups[j] == "biology"], ones) <= 3
    assert schedule.warnings.get("held_AssocMaxJobsLimit", 0) > 0
    assert schedule.warnings.get("held_AssocGrpNodeLimit", 0) + schedule.warnings.get("held_AssocGrpJobsLimit", 0) > 0


def test_a_users_share_is_per_account(tmp_path):
    """alice has Share=3 in physics and 1 in biology (sacctmgr keeps a share per association):
    the fair-share tree gets both, per account/user, not one per user name."""
    from drevt_sweep.sim.policies.dynamic import PriorityInputs
    from drevt_sweep.sim.policies.multifactor import FairShareTree

    limits = associations(tmp_path, assoc_line("physics", "alice", share="3"), assoc_line("physics", "bob"),
                          assoc_line("biology", "alice", share="1"), assoc_line("biology", "carol", share="3"))
    params, notes = limits.priority_params(("biology", "physics"), ("alice", "bob", "carol"))
    assert params["association_shares"] == {"physics/alice": 3.0, "physics/bob": 1.0, "biology/alice": 1.0,
                                             "biology/carol": 3.0} and not notes
    jobs = jobs_of([(0, 1, 10, 10, "alice", "physics"), (1, 1, 10, 10, "bob", "physics"),
                    (2, 1, 10, 10, "alice", "biology"), (3, 1, 10, 10, "carol", "biology")])
    inputs = PriorityInputs(submit=jobs.submit, time_limit=jobs.time_limit, num_nodes=jobs.num_nodes, total_nodes=4,
                            queue_code=jobs.queue_code, queue_names=jobs.queue_names, user_code=jobs.user_code,
                            user_names=jobs.user_names, group_code=jobs.group_code, group_names=jobs.group_names,
                            t0=0.0)
    tree = FairShareTree.build(inputs, "account/user", params["account_shares"], {}, params["association_shares"])
    ratio = dict(zip(tree.leaf_names, tree.sib_ratio.tolist()))
    assert ratio == {("physics", "alice"): 0.75, ("physics", "bob"): 0.25, ("biology", "alice"): 0.25,
                     ("biology", "carol"): 0.75}


def test_limits_on_shared_nodes_hold_jobs_in_the_easy_pass(tmp_path):
    """A shared-node pool (select/cons_tres: 2 nodes of 4 cores; Slurm's backfill on shared
    nodes, held jobs skipped): alice MaxJobs=1 holds A2 (1 core) although cores are free,
    until A1 ends at 100; bob's first job starts at once, his second is refused (MaxSubmitJobs=1).
    GrpTRES=cpu counts the cores a job asked for, not whole nodes."""
    machine = machine_from_mapping({"partitions": [{"name": "p", "nodes": 2, "cores": 4, "queues": ["p"],
                                                    "sharing": "shared"}]})
    jobs = jobs_of([(0, 1, 100, 100, "alice", "physics"), (1, 1, 100, 100, "alice", "physics"),
                    (2, 1, 100, 100, "bob", "physics"), (3, 1, 100, 100, "bob", "physics")])
    jobs = jobs.replace(cores_per_node=np.array([2, 1, 2, 2]))
    limits = associations(tmp_path, assoc_line("physics", "alice", max_jobs="1"),
                          assoc_line("physics", grp_tres="cpu=5"), assoc_line("physics", "bob", max_submit="1"))
    schedule = simulate_machine(jobs, jobs.actual_run_time, machine, backfill="slurm", limits=limits)
    # A1 (2 cores) at 0; A2 held (MaxJobs); B1 (2 cores: physics at 4 <= 5) at 2; B2 refused
    # (bob's MaxSubmit=1 while B1 runs); at 100 A2 (1 core: 2 + 1 <= 5) starts.
    assert begins(schedule) == [0, 100, 2, None]
    assert schedule.warnings["held_AssocMaxJobsLimit"] == 1
    assert schedule.warnings["rejected_assoc_max_submit"] == 1 and schedule.rejected.tolist()[3]
    # GrpTRES cpu=3: B1 (2 cores) beside A1 (2) would make 4 > 3: held until A1 ends at 100
    limits = associations(tmp_path, assoc_line("physics", grp_tres="cpu=3"))
    schedule = simulate_machine(jobs.take(np.array([0, 2])), jobs.actual_run_time[[0, 2]], machine,
                                backfill="slurm", limits=limits)
    assert begins(schedule) == [0, 100]
    assert schedule.warnings["held_AssocGrpCpuLimit"] == 1
    # the same with multifactor (issue 26: dynamic priorities on shared pools, with the gate)
    schedule = simulate_machine(jobs.take(np.array([0, 2])), jobs.actual_run_time[[0, 2]], machine,
                                backfill="slurm", limits=limits, priority="multifactor",
                                priority_params={"calc_period": 10.0})
    assert begins(schedule) == [0, 100]
    assert schedule.warnings["held_AssocGrpCpuLimit"] == 1
    # the limits run on the reference only: kernel='fast' says so (the compiled kernel has no gate)
    with pytest.raises(ConfigError, match="association/QOS limits has no compiled shared-node version"):
        simulate_machine(jobs.take(np.array([0, 2])), jobs.actual_run_time[[0, 2]], machine, backfill="slurm",
                         limits=limits, kernel="fast")
