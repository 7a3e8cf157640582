"""slurm.conf as the machine and the scheduler's settings (issue 26 item 1): hostlists, Slurm
times, the mapping of nodes, partitions and Priority* keys (hand-derived from
tests/data/slurm/tiny.conf), every bad input as one line naming file, line and key with exit
code 2, and drevt-sim --slurm-conf end to end."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from drevt_sweep.cli.sim import main as sim_main
from drevt_sweep.errors import ConfigError
from drevt_sweep.sim.machine import machine_from_mapping
from drevt_sweep.trace.hostlist import expand
from drevt_sweep.trace.slurm_conf import read_slurm_conf, slurm_time

TINY = Path(__file__).parent / "data" / "slurm" / "tiny.conf"


def test_hostlists_expand_as_slurm_writes_them():
    assert expand("n[001-003]") == ["n001", "n002", "n003"]
    assert expand("gpu[1-2,7]") == ["gpu1", "gpu2", "gpu7"]
    assert expand("r[1-2]n[01-02]") == ["r1n01", "r1n02", "r2n01", "r2n02"]
    assert expand("login,c[8-10]x") == ["login", "c8x", "c9x", "c10x"]
    assert len(expand("n[0001-1024]")) == 1024
    for bad, why in [("n[1-", "without"), ("n[a-b]", "not a number"), ("n[3-1]", "goes down"),
                     ("a,,b", "empty"), ("n[1-2[3]]", "nested"), ("n[1-99999999]", "more than")]:
        with pytest.raises(ValueError, match=why):
            expand(bad)


def test_slurm_times():
    assert slurm_time("5") == 300  # minutes
    assert slurm_time("5:30") == 330  # minutes:seconds
    assert slurm_time("01:00:00") == 3600  # hours:minutes:seconds
    assert slurm_time("7-0") == 7 * 86400  # days-hours
    assert slurm_time("2-12") == 2.5 * 86400
    assert slurm_time("1-02:03:04") == 86400 + 2 * 3600 + 3 * 60 + 4
    assert slurm_time("1-02:03") == 86400 + 2 * 3600 + 3 * 60
    assert slurm_time("a week") is None and slurm_time("") is None


def test_the_tiny_conf_as_a_machine_and_multifactor_settings():
    conf = read_slurm_conf(TINY)
    # batch (cpu[001-128]) and debug (cpu[001-004]) share nodes: one pool of 128 nodes of
    # 2 x 32 x 1 = 64 cores and 256000 MiB (NodeName=DEFAULT), serving both names and, since
    # batch is Default=YES, jobs naming no partition; cons_tres + OverSubscribe=NO: shared.
    # gpu: 4 nodes of 40 CPUs and 4 GPUs (gpu:v100:4), OverSubscribe=EXCLUSIVE: whole nodes.
    assert conf.system == {"name": "tiny", "partitions": [
        {"name": "batch+debug", "nodes": 128, "cores": 64, "gpus": 0, "memory": 256000.0,
         "sharing": "shared", "queues": ["batch", "debug", "", "-1"],
         "limits": {"batch": {"max_time": 86400.0}, "debug": {"max_time": 1800.0},
                    "": {"max_time": 86400.0}, "-1": {"max_time": 86400.0}}},
        {"name": "gpu", "nodes": 4, "cores": 40, "gpus": 4, "memory": 256000.0,
         "sharing": "exclusive", "queues": ["gpu"], "limits": {"gpu": {"priority_tier": 2}}}]}
    assert machine_from_mapping(conf.system).total_nodes == 132
    assert (conf.priority, conf.backfill) == ("multifactor", "slurm")
    assert conf.backfill_params == {"bf_window": 2880, "bf_max_job_test": 500}
    assert conf.priority_params == {
        "weights": {"age": 1000.0, "fairshare": 10000.0, "job_size": 500.0, "partition": 2000.0, "qos": 0.0},
        "max_age": 2.5 * 86400, "decay_half_life": 14 * 86400.0, "calc_period": 60.0,
        "favor_small": True, "fairshare": "fair_tree",  # no NO_FAIR_TREE: Fair Tree
        "charge_ended_jobs": False}  # no AccountingStorageEnforce=limits: Slurm does not charge at a job's end
    assert conf.partition_factors == {"batch": 1.0, "debug": 10.0, "gpu": 1.0}
    assert conf.params_for(["batch", "gpu"])["partition_priority"] == {"batch": 1.0, "gpu": 1.0}
    assert conf.ignored == ("NodeName State",
                            "partitions batch, debug share nodes: simulated as one pool",
                            "SlurmctldHost")


def write(tmp_path, text: str) -> Path:
    path = tmp_path / "slurm.conf"
    path.write_text(text)
    return path


NODES = "NodeName=n[1-4] CPUs=8 RealMemory=1000\nPartitionName=p Nodes=n[1-4] Default=YES\n"


@pytest.mark.parametrize("text, expected", [
    ("SelectType=select/linear\n" + NODES, ("fcfs", "slurm", "exclusive", None)),
    ("SchedulerType=sched/builtin\nPriorityType=priority/multifactor\nPriorityFlags=NO_FAIR_TREE\n" + NODES,
     ("multifactor", "none", "shared", "classic")),
    ("SelectTypeParameters=CR_Core\nPriorityType=priority/multifactor\nPriorityDecayHalfLife=0\n" + NODES,
     ("multifactor", "slurm", "shared", "fair_tree")),
])
def test_what_the_select_priority_and_scheduler_keys_choose(tmp_path, text, expected):
    conf = read_slurm_conf(write(tmp_path, text))
    part = conf.system["partitions"][0]
    fairshare = conf.priority_params["fairshare"] if conf.priority_params else None
    assert (conf.priority, conf.backfill, part["sharing"], fairshare) == expected
    if "CR_Core\n" in text:  # cores without memory: memory is not modelled
        assert part["memory"] is None and conf.priority_params["decay_half_life"] > 1e14
    # Slurm's weights default to 0 (FCFS-like), not drevt-sweep's site choice
    if conf.priority_params:
        assert set(conf.priority_params["weights"].values()) == {0.0}


def test_multifactor_keys_under_priority_basic_are_listed_as_unused(tmp_path):
    text = NODES + "SelectType=select/cons_tres\nPriorityWeightAge=1000\nPriorityFlags=SMALL_RELATIVE_TO_TIME\n"
    conf = read_slurm_conf(write(tmp_path, text))
    assert conf.priority == "fcfs" and conf.priority_params is None
    assert conf.ignored == ("PriorityWeightAge (unused by priority/basic)", "PriorityFlags (unused by priority/basic)")


@pytest.mark.parametrize("text, message", [
    ("NodeName=n[1-4] CPUs=8\nPartitionName=p Nodes=n[1-4]\nbogus line\n", ":3: bogus: expected Key=Value"),
    ("NodeName=n[1-4 CPUs=8\nPartitionName=p Nodes=n1\n", ":1: NodeName: '[' without ']'"),
    ("NodeName=n[1-4] CPUs=eight\nPartitionName=p Nodes=n1\n", ":1: CPUs: expected a whole number"),
    (NODES + "PriorityType=priority/multifactor\nPriorityWeightAge=-5\n", ":4: PriorityWeightAge: a priority weight cannot be negative"),
    (NODES + "PriorityType=priority/multifactor\nPriorityMaxAge=soon\n", ":4: PriorityMaxAge: expected a Slurm time"),
    (NODES + "PriorityWeightAge=-5\n", ":3: PriorityWeightAge: a priority weight cannot be negative"),
    ("NodeName=n[1-4] CPUs=8\nPartitionName=p Nodes=n[1-5]\n", ":2: Nodes: node 'n5' has no NodeName line"),
    ("NodeName=a CPUs=8\nNodeName=b CPUs=16\nPartitionName=p Nodes=a,b\n", ":3: PartitionName=p: its nodes differ"),
    ("NodeName=a CPUs=8\n", "no PartitionName line"),
    (NODES + "Include other.conf\n", ":3: Include: no such file"),
    (NODES + "SchedulerType=sched/wiki\n", ":3: SchedulerType: 'sched/wiki' is not modelled"),
    (NODES + "AccountingStorageEnforce=limits,bogus\n", ":3: AccountingStorageEnforce: 'bogus' is not an"),
    (NODES + "AccountingStorageEnforce=none,limits\n", ":3: AccountingStorageEnforce: 'none' cannot be given"),
])
def test_bad_input_is_one_line_naming_file_line_and_key(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=__import__("re").escape(message)) as info:
        read_slurm_conf(path)
    assert str(path) in str(info.value)


def test_an_included_file_is_read_in_place(tmp_path):
    (tmp_path / "nodes.conf").write_text("NodeName=n[1-2] CPUs=4\n")
    conf = read_slurm_conf(write(tmp_path, "Include nodes.conf\nPartitionName=p Nodes=ALL\n"))
    assert conf.system["partitions"][0]["nodes"] == 2


def test_drevt_sim_with_a_slurm_conf(tmp_path, capsys):
    """Jobs in batch, debug and gpu and one in a partition the conf lacks: the conf does not
    describe the trace's cluster, exit 2 naming the job's line, unless the user chose to skip
    (``--on_bad_row skip``: rejected, as Slurm does, and counted); the priority is multifactor
    with Fair Tree, from the conf; what it does not model is listed once on stderr. Whole
    nodes (select/linear) here; shared-node pools with multifactor:
    ``tests/test_shared_multifactor.py``."""
    linear = write(tmp_path, TINY.read_text().replace("select/cons_tres", "select/linear"))
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time,user,group\n"
                     "0,2,batch,100,50,a,X\n1,4,gpu,100,50,b,Y\n2,1,debug,100,10,a,X\n"
                     "3,1,nosuch,100,10,b,Y\n")
    stats = tmp_path / "stats.json"
    args = [str(trace), "--queues", "all", "--slurm-conf", str(linear), "--quiet", "--stats", str(stats)]
    assert sim_main(args) == 2
    err = capsys.readouterr().err
    assert f"{trace}:5: job 4: partition 'nosuch' has no PartitionName line in {linear}; 1 of 4 jobs" in err
    assert "--on_bad_row skip" in err and "Traceback" not in err and not stats.exists()
    code = sim_main(args + ["--on_bad_row", "skip"])
    err = capsys.readouterr().err
    assert code == 0, err
    data = json.loads(stats.read_text())
    assert data["run"]["priority_policy"] == "multifactor"
    assert data["run"]["priority_params"]["fairshare"] == "fair_tree"
    assert data["run"]["priority_params"]["partition_priority"] == {"batch": 1.0, "debug": 10.0, "gpu": 1.0}
    assert data["warnings"]["rejected_no_partition"] == 1
    assert err.count("not modelled, ignored") == 1 and "SlurmctldHost" in err
    assert data["run"]["backfill_policy"] == "slurm"
    assert data["run"]["backfill_params"] == {"bf_window": 2880, "bf_max_job_test": 500}
    # the command line still wins over the conf
    assert sim_main([str(trace), "--queues", "all", "--slurm-conf", str(TINY), "--quiet", "--on_bad_row", "skip",
                     "--priority_policy", "fcfs", "--stats", str(stats)]) == 0
    assert json.loads(stats.read_text())["run"]["priority_policy"] == "fcfs"


def test_drevt_sim_refuses_a_bad_slurm_conf_with_exit_2(tmp_path, capsys):
    trace = tmp_path / "jobs.csv"
    trace.write_text("job_submit_time,num_nodes,queue,time_limit,actual_run_time\n0,1,p,10,5\n")
    assert sim_main([str(trace), "--slurm-conf", str(tmp_path / "missing.conf")]) == 2
    assert "cannot read the slurm.conf" in capsys.readouterr().err
    bad = write(tmp_path, NODES + "PriorityType=priority/multifactor\nPriorityWeightFairshare=-1\n")
    assert sim_main([str(trace), "--slurm-conf", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:4: PriorityWeightFairshare: a priority weight cannot be negative" in err
    assert "Traceback" not in err
    assert sim_main([str(trace), "--slurm-conf", str(TINY), "--total_nodes", "5"]) == 2


@pytest.mark.slow
def test_a_sweep_with_system_slurm_and_policy_slurm(tmp_path):
    """A real Hydra multirun: the machine and the scheduler from a slurm.conf (multifactor,
    Fair Tree by default; fair-share weight 0 since the tiny trace names no users), over two
    copies of the file that differ in one line (SchedulerType), each with its file's sha256 in
    its identity and the choice logged."""
    import os
    import subprocess
    import sys

    from sweep_helpers import TINY as TRACE

    text = ("SelectType=select/linear\nPriorityType=priority/multifactor\nPriorityWeightAge=100\n"
            "NodeName=n[1-16]\nPartitionName=pbatch Nodes=n[1-16] Default=YES\n")
    a, b = tmp_path / "a.conf", tmp_path / "b.conf"
    a.write_text(text)
    b.write_text(text + "SchedulerType=sched/builtin\n")
    cmd = [sys.executable, "-m", "drevt_sweep", "-m", "system=slurm", f"system.slurm_conf={a},{b}",
           "policy=slurm", "trace=custom", f"trace.path={TRACE}", "format=simple", "format.queues=[all]",
           "tracking.enabled=false", "progress=false", f"paths.output_root={tmp_path / 'out'}",
           f"hydra.sweep.dir={tmp_path / 'sweep'}"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert done.returncode == 0, done.stderr[-3000:]
    results = sorted((tmp_path / "sweep").glob("*/result.json"))
    chosen = [json.loads(p.read_text()) for p in results]
    assert [r["status"] for r in chosen] == ["FINISHED", "FINISHED"]
    assert [r["slurm_policy"] for r in chosen] == [
        {"slurm.priority": "multifactor", "slurm.backfill": "slurm", "slurm.fairshare": "fair_tree"},
        {"slurm.priority": "multifactor", "slurm.backfill": "none", "slurm.fairshare": "fair_tree"}]
    assert chosen[0]["config_hash"] != chosen[1]["config_hash"]
    assert chosen[0]["total_nodes"] == 16


def test_a_sweep_refuses_jobs_in_partitions_its_slurm_conf_lacks_unless_told_to_skip(tmp_path):
    """A real Hydra run: the trace's jobs are all in ``pbatch``, which the slurm.conf does not
    define (and it has no Default=YES partition): the configuration fails with one line naming
    the trace's line, the partition and the count; with ``format.on_bad_row=skip`` it runs and
    the jobs are rejected, counted by reason."""
    import os
    import subprocess
    import sys

    from sweep_helpers import TINY as TRACE

    conf = tmp_path / "other.conf"
    conf.write_text("SelectType=select/linear\nNodeName=n[1-16]\nPartitionName=other Nodes=n[1-16]\n")
    base = [sys.executable, "-m", "drevt_sweep", "system=slurm", f"system.slurm_conf={conf}", "trace=custom",
            f"trace.path={TRACE}", "format=simple", "format.queues=[all]", "tracking.enabled=false",
            "progress=false", f"paths.output_root={tmp_path / 'out'}"]
    results = []
    for extra, run_dir in (([], "refused"), (["format.on_bad_row=skip"], "skipped")):
        subprocess.run(base + extra + [f"hydra.run.dir={tmp_path / run_dir}"], capture_output=True, text=True,
                       timeout=600, env=dict(os.environ))
        results.append(json.loads((tmp_path / run_dir / "result.json").read_text()))
    refused, skipped = results
    assert refused["status"] == "FAILED"
    assert refused["error"].startswith(f"{TRACE}:2: job 1: partition 'pbatch' has no PartitionName line in "
                                       f"system.slurm_conf {conf}; 10 of 10 jobs")
    assert "format.on_bad_row=skip" in refused["error"]
    assert skipped["status"] == "FINISHED", skipped.get("error")
    assert skipped["metrics"]["rejected/no_partition"] == 10.0


def test_the_documented_example_reads_as_lassens_two_pools():
    conf = read_slurm_conf(Path(__file__).resolve().parents[1] / "docs" / "examples" / "slurm.conf")
    parts = conf.system["partitions"]
    assert [(p["name"], p["nodes"], p["cores"], p["gpus"], p["sharing"]) for p in parts] == [
        ("pbatch", 752, 40, 4, "exclusive"), ("pdebug", 36, 40, 4, "exclusive")]
    assert conf.partition_factors == {"pbatch": 1.0, "pdebug": 2.0}
    assert conf.ignored == ()
    # MaxTime is modelled (issue 26 item 4): jobs above it never run
    assert parts[0]["limits"] == {"pbatch": {"max_time": 12 * 3600.0}, "": {"max_time": 12 * 3600.0},
                                  "-1": {"max_time": 12 * 3600.0}}
    assert parts[1]["limits"] == {"pdebug": {"max_time": 2 * 3600.0}}


def kabre_machines():
    from drevt_sweep.cli.sim import load_machine

    root = Path(__file__).resolve().parents[1]
    conf = read_slurm_conf(root / "conf" / "system" / "kabre_slurm.conf")
    return conf, machine_from_mapping(conf.system), load_machine(str(root / "conf" / "system" / "kabre.yaml"))


def test_the_kabre_like_conf_is_system_kabre():
    """conf/system/kabre_slurm.conf describes conf/system/kabre.yaml's five pools as Slurm
    does: 23 partitions over five node families, each family one pool serving its partitions."""
    conf, ours, yaml = kabre_machines()
    shape = lambda m: [(p.nodes, p.cores, p.gpus, p.memory, p.sharing, set(p.queues)) for p in m.partitions]  # noqa: E731
    assert shape(ours) == shape(yaml)
    assert (conf.priority, conf.backfill) == ("fcfs", "slurm")


def test_the_kabre_like_conf_schedules_the_real_export_as_system_kabre():
    import numpy as np
    from conftest import SHARED_TRACES

    _, ours, yaml = kabre_machines()

    trace = SHARED_TRACES / "kabre_sacct.csv.gz"
    if not trace.is_file():
        pytest.skip(f"the Kabré export is not at {trace}")
    from drevt_sweep.sim.partitioned import simulate_machine
    from drevt_sweep.trace import ReadOptions, read_trace

    jobs = read_trace(trace, ReadOptions(trace_format="slurm", timezone="America/Costa_Rica"))
    a = simulate_machine(jobs, jobs.actual_run_time, ours)
    b = simulate_machine(jobs, jobs.actual_run_time, yaml)
    assert np.array_equal(a.begin, b.begin, equal_nan=True) and np.array_equal(a.rejected, b.rejected)
    assert a.warnings == b.warnings and b.warnings["rejected_memory"] == 112
