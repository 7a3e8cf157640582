"""Machines with partitions (issue 14): the machine description, job placement and rejection by
reason, exclusive partitions scheduled independently, the readers' request columns."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jobtable_factory import make_jobs

from drevt_sweep.cli.sim import load_machine, main as sim_main
from drevt_sweep.errors import ConfigError
from drevt_sweep.sim import engine
from drevt_sweep.sim.machine import Machine, Partition, machine_from_mapping, parse_partitions, place_jobs
from drevt_sweep.sim.partitioned import replay_machine, simulate_machine
from drevt_sweep.trace import ReadOptions, read_trace

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
KTH = ROOT / "drevt_sweep" / "data" / "traces" / "KTH-SP2-1996-2.1-cln.swf.gz"


def test_two_exclusive_partitions_never_share_nodes_hand_computed():
    # Partition A (2 nodes) serves queue a, B (1 node) serves queue b.
    #  job 0: a, 2 nodes, run 5 (limit 10)  -> A at 0..5
    #  job 1: b, 1 node, run 10             -> B at 0..10
    #  job 2: a, 2 nodes, submit 1          -> waits for job 0: A at 5..15
    #  job 3: b, 1 node, submit 2, run 3    -> waits for job 1: B at 10..13
    #  job 4: a, 1 node, submit 3, run 4    -> EASY: the head (job 2) is reserved at 10 (job 0's
    #         estimated end); job 4 would end at 13 > 10 with no extra nodes: waits; at 5 job 2
    #         takes both nodes; A at 15..19
    jobs = make_jobs([0, 0, 1, 2, 3], [2, 1, 2, 1, 1], [10] * 5, [5, 10, 10, 3, 4],
                     queue=["a", "b", "a", "b", "a"])
    machine = Machine("m", (Partition("A", 2, queues=("a",)), Partition("B", 1, queues=("b",))))
    for kernel in ("reference", "fast"):
        s = simulate_machine(jobs, jobs.actual_run_time, machine, kernel=kernel)
        assert s.begin.tolist() == [0, 0, 5, 10, 15]
        assert s.end.tolist() == [5, 10, 15, 13, 19]
    assert s.total_nodes == 3
    assert s.placement.partition.tolist() == [0, 1, 0, 1, 0]
    # On one pool of the same 3 nodes, job 4 takes B's node when job 3 leaves it (13), while
    # with partitions that node stays idle and job 4 waits for A (15).
    pooled = engine.simulate(jobs, jobs.actual_run_time, 3, kernel="reference")
    assert pooled.begin.tolist() == [0, 0, 5, 10, 13]


def test_single_pool_machine_is_todays_engine_bit_for_bit():
    jobs = read_trace(KTH, ReadOptions(trace_format="swf"))
    rt = jobs.actual_run_time
    machine = Machine.single_pool(100)
    assert machine.is_single_pool
    for backfill in ("easy", "conservative"):
        today = engine.simulate(jobs, rt, 100, backfill=backfill, kernel="fast")
        ours = simulate_machine(jobs, rt, machine, backfill=backfill, kernel="fast")
        assert np.array_equal(today.begin, ours.begin, equal_nan=True)
        assert np.array_equal(today.end, ours.end, equal_nan=True)
        assert ours.placement is None
    # One exclusive partition that names every queue is the same machine, scheduled the same.
    named = Machine("kth", (Partition("all", 100, queues=tuple(jobs.queue_names)),))
    assert not named.is_single_pool
    ours = simulate_machine(jobs, rt, named, kernel="fast")
    today = engine.simulate(jobs, rt, 100, kernel="fast")
    assert np.array_equal(today.begin, ours.begin, equal_nan=True)


def test_partition_of_each_job_and_rejection_reasons():
    jobs = make_jobs([0, 0, 0, 0, 0, 0], [1, 3, 1, 1, 1, 1], [10] * 6, [1] * 6,
                     queue=["pbatch", "pbatch", "standby", "pdebug", "nowhere", "pbatch"])
    jobs = jobs.replace(cores_per_node=np.array([40, 1, -1, 50, 1, 1]),
                        gpus_per_node=np.array([4, 0, -1, 0, 0, 5]),
                        memory_per_node=np.array([1.0, 1.0, np.nan, 1.0, 1.0, 1.0]))
    machine = Machine("m", (
        Partition("pbatch", 2, cores=40, gpus=4, memory=1000, queues=("pbatch", "standby")),
        Partition("pdebug", 1, cores=40, gpus=4, memory=1000),
    ))
    placement = place_jobs(jobs, machine)
    assert placement.partition.tolist() == [0, -1, 0, -1, -1, -1]
    assert placement.counts() == {"rejected_no_partition": 1, "rejected_nodes": 1,
                                  "rejected_cores": 1, "rejected_gpus": 1}
    assert placement.unmatched == {"nowhere": 1}
    # unknown requests: a whole node's cores, no GPU, no memory
    assert (placement.cores[2], placement.gpus[2], placement.memory[2]) == (40, 0, 0.0)
    s = simulate_machine(jobs, jobs.actual_run_time, machine)
    assert s.rejected.tolist() == [False, True, False, True, True, True]
    assert s.warnings["rejected_oversized"] == 4 and s.warnings["rejected_cores"] == 1
    assert np.isnan(s.begin[s.rejected]).all()


def test_a_job_partition_wins_over_its_queue_and_star_takes_the_rest():
    jobs = make_jobs([0, 0, 0], [1, 1, 1], [10] * 3, [1] * 3, queue=["q1", "q1", "q2"])
    jobs = jobs.replace(partition_code=np.array([0, 1, 1], dtype=np.int32), partition_names=("gpu", "-1"))
    machine = Machine("m", (Partition("gpu", 1), Partition("cpu", 1, queues=("q1",)),
                            Partition("rest", 1, queues=("*",))))
    assert place_jobs(jobs, machine).partition.tolist() == [0, 1, 2]


def test_a_job_naming_a_partition_the_machine_lacks_is_rejected_not_sent_to_star():
    """Issue 27 item 3: Slurm refuses a job whose partition does not exist. Jobs 0-3 state a
    partition of their own: gpu (listed: served), "gpux" (a typo: rejected, though queue q1 is
    served and "*" exists), "-1" (SWF's unknown: the queue decides), and the queue's own name
    (an unlisted *queue*: "*" serves it, as documented)."""
    jobs = make_jobs([0] * 4, [1] * 4, [10] * 4, [1] * 4, queue=["q1", "q1", "q2", "q3"])
    jobs = jobs.replace(partition_code=np.array([0, 1, 2, 3], dtype=np.int32),
                        partition_names=("gpu", "gpux", "-1", "q3"))
    machine = Machine("m", (Partition("gpu", 1), Partition("cpu", 1, queues=("q1",)),
                            Partition("rest", 1, queues=("*",))))
    placement = place_jobs(jobs, machine)
    assert placement.partition.tolist() == [0, -1, 2, 2]
    assert placement.counts() == {"rejected_unknown_partition": 1}
    assert placement.unmatched == {"gpux": 1}
    s = simulate_machine(jobs, jobs.actual_run_time, machine)
    assert s.rejected.tolist() == [False, True, False, False]
    assert s.warnings["rejected_unknown_partition"] == 1
    from drevt_sweep.sim.metrics import compute_metrics

    metrics = compute_metrics(jobs, s)
    assert metrics["rejected/unknown_partition"] == 1.0 and metrics["jobs_rejected"] == 1.0
    assert "rejected/no_partition" not in metrics


def test_machine_descriptions_and_their_errors(tmp_path):
    m = parse_partitions("pbatch:756, pdebug:36", cores=44, gpus=4)
    assert m.partition_names == ("pbatch", "pdebug") and m.total_nodes == 792
    assert m.partitions[0].queues == ("pbatch",) and m.partitions[1].gpus == 4
    with pytest.raises(ConfigError, match="name:nodes"):
        parse_partitions("pbatch=3")
    with pytest.raises(ConfigError, match="at least 1"):
        parse_partitions("a:0")
    with pytest.raises(ConfigError, match="needs cores"):
        Partition("s", 2, sharing="shared")
    with pytest.raises(ConfigError, match="both partition"):
        Machine("m", (Partition("a", 1, queues=("q",)), Partition("b", 1, queues=("q",))))
    with pytest.raises(ConfigError, match="unknown field"):
        machine_from_mapping({"partitions": [{"name": "a", "nodes": 1, "cpus": 3}]})
    as_mapping = machine_from_mapping({"name": "x", "partitions": {"a": {"nodes": 2, "cores": 8}}})
    assert as_mapping.partitions[0] == Partition("a", 2, cores=8)
    lassen = load_machine(str(ROOT / "conf" / "system" / "lassen.yaml"))
    assert [(p.name, p.nodes, p.cores, p.gpus) for p in lassen.partitions] == [
        ("pbatch", 752, 40, 4), ("pdebug", 36, 40, 4)]
    kabre = load_machine(str(ROOT / "conf" / "system" / "kabre.yaml"))
    assert all(p.shared for p in kabre.partitions) and len(kabre.partitions) == 5
    bad = tmp_path / "bad.yaml"
    bad.write_text("partitions: [{name: a}]\n")
    with pytest.raises(ConfigError, match="bad.yaml.*needs 'nodes'"):
        load_machine(str(bad))


def test_replay_reports_overcommit_per_partition_and_resource():
    # Two jobs at once on a 1-node partition, each asking 3 of its 4 cores.
    jobs = make_jobs([0, 0, 0], [1, 1, 1], [10] * 3, begin=[0, 0, 20], end=[10, 10, 30],
                     queue=["a", "a", "b"])
    jobs = jobs.replace(cores_per_node=np.array([3, 3, 1]))
    machine = Machine("m", (Partition("A", 1, cores=4, sharing="shared", queues=("a",)),
                            Partition("B", 1, cores=4, queues=("b",))))
    s = replay_machine(jobs, machine)
    assert s.begin.tolist() == [0, 0, 20]
    assert s.warnings["replay_overcommit/A/cores"] == 1
    assert s.warnings["replay_overcommit/A/nodes"] == 1
    assert "replay_overcommit/B/cores" not in s.warnings


# ------------------------------------------------------------------ readers
def _slurm(tmp_path, rows, header="JobID|Submit|ReqNodes|Timelimit|ElapsedRaw|Partition|ReqCPUS|ReqMem|ReqTRES"):
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join([header, *rows]) + "\n")
    return read_trace(path, ReadOptions(trace_format="slurm", timezone="UTC", timestamp_format="iso"))


def test_slurm_cpus_memory_suffixes_and_tres_gpus(tmp_path):
    t = "2024-01-01T00:00:00"
    jobs = _slurm(tmp_path, [
        f"1|{t}|1|01:00:00|60|nu|24|100Mc|billing=24,cpu=24,gres/gpu=2,mem=2400M,node=1",
        f"2|{t}|2|01:00:00|60|nukwa|8|2Gn|cpu=8,gres/gpu:v100=4,mem=4G,node=2",
        f"3|{t}|1|01:00:00|60|kura|3||cpu=3,mem=3G,node=1",
        f"4|{t}|1|01:00:00|60|kura|3|1.5G|",
        f"5|{t}|4|01:00:00|60|kura|10|512Kc|gres/gpu=1,gres/gpu:a100=1",
        f"6|{t}|1|01:00:00|60|kura|2|1Tn|cpu=2",
        f"7|{t}|2|01:00:00|60|kura|2|600M|cpu=2,mem=600M,node=2",  # Slurm 22.05: --mem=300 -N2
    ])
    assert jobs.cores_per_node.tolist() == [24, 4, 3, 3, 3, 2, 1]  # 10 CPUs on 4 nodes: 3 per node
    assert jobs.memory_per_node.tolist() == [2400.0, 2048.0, 3072.0, 1536.0, 1.5, 1024.0**2, 300.0]
    assert jobs.gpus_per_node.tolist() == [2, 2, 0, -1, 1, 0, 0]  # no TRES text: unknown
    assert jobs.partition.tolist() == jobs.queue.tolist()


def test_slurm_alloc_columns_and_bad_memory(tmp_path):
    t = "2024-01-01T00:00:00"
    jobs = _slurm(tmp_path, [f"1|{t}|2|01:00:00|60|p|6|3000Mn|gres/gpu=4"],
                  header="JobID|Submit|NNodes|Timelimit|ElapsedRaw|Partition|AllocCPUS|AllocMem|AllocTRES")
    assert (jobs.cores_per_node[0], jobs.gpus_per_node[0], jobs.memory_per_node[0]) == (3, 2, 3000.0)
    from drevt_sweep.errors import TraceError

    with pytest.raises(TraceError, match="ReqMem.*not a memory size"):
        _slurm(tmp_path, [f"1|{t}|1|01:00:00|60|p|1|lots|"])


def test_lassen_processors_and_gpus_per_node():
    jobs = read_trace(HERE / "data" / "traces" / "lassen_last25.csv",
                      ReadOptions(trace_format="lassen", queues="all"))
    assert (jobs.cores_per_node[jobs.num_nodes > 0] == 40).all()  # 160 on 4 nodes, 80 on 2 ...
    assert (jobs.gpus_per_node == -1).all()  # num_gpus 0: not recorded


def test_lassen_gpus_when_recorded(tmp_path):
    source = (HERE / "data" / "traces" / "lassen_last25.csv").read_text().splitlines()
    header, row = source[0], source[1]
    fields = row.split(",")
    fields[header.split(",").index("num_gpus")] = "16"
    path = tmp_path / "l.csv"
    path.write_text("\n".join([header, ",".join(fields)]) + "\n")
    jobs = read_trace(path, ReadOptions(trace_format="lassen", queues="all"))
    assert jobs.gpus_per_node.tolist() == [4]  # 16 GPUs on 4 nodes


def test_swf_memory_and_partition_fields(tmp_path):
    path = tmp_path / "t.swf"
    path.write_text(
        "; MaxNodes: 4\n; MaxProcs: 16\n"
        "1 0 0 10 8 -1 -1 8 20 2048 1 -1 -1 -1 3 7 -1 -1\n"
        "2 0 0 10 5 -1 -1 -1 20 -1 1 -1 -1 -1 3 -1 -1 -1\n"
    )
    jobs = read_trace(path, ReadOptions(trace_format="swf"))
    assert jobs.num_nodes.tolist() == [2, 2]  # 4 processors per node
    assert jobs.cores_per_node.tolist() == [4, 3]  # 8 on 2 nodes; 5 on 2 nodes, rounded up
    assert jobs.memory_per_node[0] == 2048 * 4 / 1024  # KB per processor x 4 per node
    assert np.isnan(jobs.memory_per_node[1])
    assert jobs.partition.tolist() == ["7", "-1"] and jobs.queue.tolist() == ["3", "3"]


def test_simple_optional_request_columns(tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit,num_cores,num_gpus,memory,partition\n"
                    "0,2,pbatch,100,8,1,512,gpu\n10,1,pbatch,100,,,,\n")
    jobs = read_trace(path, ReadOptions(trace_format="simple"))
    assert jobs.cores_per_node.tolist() == [8, -1] and jobs.gpus_per_node.tolist() == [1, -1]
    assert jobs.memory_per_node[0] == 512 and np.isnan(jobs.memory_per_node[1])
    assert jobs.partition.tolist() == ["gpu", ""]
    path.write_text("job_submit_time,num_nodes,queue,time_limit,num_cores\n0,2,pbatch,100,1.5\n")
    from drevt_sweep.errors import TraceError

    with pytest.raises(TraceError, match="num_cores.*whole number"):
        read_trace(path, ReadOptions(trace_format="simple"))


def test_cache_keeps_the_request_columns(tmp_path):
    from drevt_sweep.trace.cache import load_trace

    path = tmp_path / "s.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit,num_cores,partition\n0,2,pbatch,100,8,gpu\n")
    first = load_trace(path, ReadOptions(), cache_dir=tmp_path / "c")
    again = load_trace(path, ReadOptions(), cache_dir=tmp_path / "c")
    assert again.cores_per_node.tolist() == [8] and again.partition_names == first.partition_names == ("gpu",)


# ------------------------------------------------------------------ drevt-sim
def test_drevt_sim_partitions_and_system(tmp_path, capsys):
    path = tmp_path / "p.csv"
    path.write_text("job_submit_time,num_nodes,queue,time_limit,duration,num_gpus\n"
                    "0,2,pbatch,100,100,0\n0,1,pdebug,100,50,0\n10,1,pdebug,100,50,0\n"
                    "10,1,other,100,50,0\n10,1,pbatch,100,50,8\n")
    code = sim_main([str(path), "--queues", "all", "--partitions", "pbatch:2,pdebug:1",
                     "--cores_per_node", "44", "--gpus_per_node", "4"])
    out, err = capsys.readouterr()
    assert code == 0
    assert "Job 2 starts at 50, ends at 100" in out  # pdebug's one node, after job 1
    assert "Job 3 rejected: needs 1 nodes; its queue/partition maps to no partition" in out
    assert "more GPUs per node than a node has (1)" in err
    system = tmp_path / "m.yaml"
    system.write_text("partitions:\n  - {name: all, nodes: 3, queues: [pbatch, pdebug, other]}\n")
    assert sim_main([str(path), "--queues", "all", "--system", str(system), "--quiet"]) == 0
    assert sim_main([str(path), "--system", str(system), "--total_nodes", "4"]) == 2
    assert sim_main([str(path), "--cores_per_node", "4"]) == 2
    assert "describe the nodes of --partitions" in capsys.readouterr().err


def test_metrics_per_partition_and_resource_hand_computed():
    from drevt_sweep.sim.metrics import compute_metrics

    # A: 1 shared node of 4 cores, 2 GPUs; B: 2 exclusive nodes of 4 cores. Every job runs 0..10.
    #  job 0 (A): 2 cores + 1 GPU; job 1 (A): 1 core; job 2 (B): 2 nodes x 4 cores.
    jobs = make_jobs([0, 0, 0, 0], [1, 1, 2, 1], [10] * 4, [10] * 4, queue=["a", "a", "b", "b"])
    jobs = jobs.replace(cores_per_node=np.array([2, 1, 4, 9]), gpus_per_node=np.array([1, 0, 0, 0]))
    machine = Machine("m", (Partition("A", 1, cores=4, gpus=2, sharing="shared", queues=("a",)),
                            Partition("B", 2, cores=4, queues=("b",))))
    m = compute_metrics(jobs, simulate_machine(jobs, jobs.actual_run_time, machine, kernel="reference"))
    assert m["partition/A/core_utilization"] == 0.75  # (2 + 1) of 4 cores over the span
    assert m["partition/A/gpu_utilization"] == 0.5
    assert m["partition/A/node_utilization"] == 0.75  # dominant shares 1/2 (GPU) + 1/4 (cores)
    assert m["partition/B/node_utilization"] == 1.0 and m["partition/B/jobs_rejected"] == 1
    assert m["partition/A/jobs_simulated"] == 2 and m["partition/A/wait_mean"] == 0
    assert m["core_utilization"] == (3 + 8) / 12 and m["gpu_utilization"] == 0.5
    assert m["utilization"] == (0.75 + 2) / 3  # node-time held over the machine's 3 nodes
    assert m["jobs_rejected"] == 1  # job 3: 9 cores on a 4-core node


def test_hydra_system_groups_describe_the_machines(tmp_path):
    from hydra import compose, initialize_config_dir

    from drevt_sweep.sweep.app import run_spec
    from drevt_sweep.sweep.config import register_configs

    register_configs()
    paths = [f"paths.root={ROOT}", f"paths.output_root={tmp_path}", f"paths.cache_dir={tmp_path}",
             f"paths.trace_dir={tmp_path}"]
    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base=None):
        lassen = run_spec(compose("config", overrides=["system=lassen", *paths]), None)
        kabre = run_spec(compose("config", overrides=["system=kabre", *paths]), None)
        pool = run_spec(compose("config", overrides=["system=trace", *paths]), 100)
        custom = compose("config", overrides=[
            "system=custom", "system.total_nodes=8", *paths,
            "+system.partitions=[{name: a, nodes: 3, cores: 4, sharing: shared}]"])
        with pytest.raises(Exception, match="sharing"):
            compose("config", overrides=["system=custom", "system.total_nodes=8", *paths,
                                         "+system.partitions=[{name: a, nodes: 3, sharing: sometimes}]"])
    assert lassen.machine.partition_names == ("pbatch", "pdebug") and lassen.total_nodes == 788
    assert "standby" in lassen.machine.partitions[0].queues
    assert kabre.machine.total_nodes == kabre.total_nodes == 48
    assert pool.machine is None and pool.total_nodes == 100  # today's single pool, unchanged
    spec = run_spec(custom, None)
    assert spec.machine.partitions[0] == Partition("a", 3, cores=4, sharing="shared") and spec.total_nodes == 3


@pytest.mark.parametrize("backfill", ["none", "easy", "easy_drevt", "conservative"])
def test_compiled_exclusive_partitions_equal_the_engine_on_each_partition(backfill):
    """The exclusive partitions run in the kernel from the table's columns (no sub-tables):
    bit for bit what engine.simulate gives on each partition's own sub-table, beside a shared
    partition, killed jobs included, and progress counts every partition's jobs."""
    kth = read_trace(KTH, ReadOptions(trace_format="swf")).take(np.arange(3000))
    names = ("a", "b", "c")
    codes = np.arange(len(kth)) % 3
    codes[::7] = 0  # partitions of different sizes
    jobs = kth.replace(queue_code=codes.astype(np.int32), queue_names=names,
                       cores_per_node=np.full(len(kth), 2))
    rt = np.asarray(kth.actual_run_time) * np.where(np.arange(len(kth)) % 5 == 0, 1.5, 1.0)
    machine = Machine("m", (Partition("a", 60, queues=("a",)), Partition("b", 40, queues=("b",)),
                            Partition("c", 30, cores=4, sharing="shared", queues=("c",))))
    for priority in ("fcfs", "sjf", "f1"):
        for enforce in (True, False):
            seen = []
            ours = simulate_machine(jobs, rt, machine, priority=priority, backfill=backfill,
                                    enforce_limits=enforce, kernel="fast",
                                    progress=lambda now, done: seen.append(done))
            for k, part in enumerate(machine.partitions[:2]):
                rows = np.flatnonzero(ours.placement.partition == k)
                alone = engine.simulate(jobs.take(rows), rt[rows], part.nodes, priority=priority,
                                        backfill=backfill, enforce_limits=enforce, kernel="fast")
                assert np.array_equal(ours.begin[rows], alone.begin, equal_nan=True)
                assert np.array_equal(ours.end[rows], alone.end, equal_nan=True)
                assert np.array_equal(ours.run_time[rows], alone.run_time, equal_nan=True)
                assert np.array_equal(ours.killed[rows], alone.killed)
            assert ours.killed.any() == enforce
            assert np.array_equal(np.isfinite(ours.begin), ~ours.rejected)  # too wide: rejected
            if seen:
                assert max(seen) <= int((ours.placement.partition < 2).sum())
    reference = simulate_machine(jobs, rt, machine, backfill=backfill, kernel="reference")
    fast = simulate_machine(jobs, rt, machine, backfill=backfill, kernel="fast")
    assert np.array_equal(reference.begin, fast.begin, equal_nan=True)
    assert np.array_equal(reference.end, fast.end, equal_nan=True)


def test_compiled_exclusive_partitions_check_the_jobs_once_naming_the_table_row():
    jobs = make_jobs([0, 0, 0], [1, 1, 1], [10, 10, 10], [5, 5, 5], queue=["a", "b", "b"])
    rt = np.array([5.0, 5.0, np.nan])
    machine = Machine("m", (Partition("a", 2, queues=("a",)), Partition("b", 2, queues=("b",))))
    with pytest.raises(ConfigError, match=r"1 job\(s\) have no valid run time.*row 2"):
        simulate_machine(jobs, rt, machine, kernel="fast")


def test_maintenance_on_partitions_is_shared_in_proportion_hand_computed():
    """A machine-wide window takes nodes from every partition in proportion to its size:
    A (2 nodes, queue a) and B (2 nodes, queue b); 2 of the 4 nodes down on [10, 20) takes one
    node of each; the whole machine down from 50 on takes both partitions whole.

    A: job 0 (2 nodes, limit 20) would overlap the window with 2 nodes: it waits until 20 and
       runs 20..25; job 1 (1 node, limit 5) backfills at 0..5.
    B: job 2 (2 nodes, limit 5) runs 0..5; job 3 (2 nodes, submit 12) waits for the window to
       end: 20..25; job 4 (1 node, submit 12, limit 5) fits beside the window's one node:
       12..17; job 5 (submit 30, limit 100) never fits before 50: rejected_capacity."""
    from drevt_sweep.sim.capacity import CapacitySchedule
    from drevt_sweep.sim.partitioned import partition_capacities

    jobs = make_jobs([0, 0, 0, 12, 12, 30], [2, 1, 2, 2, 1, 1], [20, 5, 5, 5, 5, 100],
                     [5, 5, 5, 5, 5, 5], queue=["a", "a", "b", "b", "b", "b"])
    machine = Machine("m", (Partition("A", 2, queues=("a",)), Partition("B", 2, queues=("b",))))
    capacity = CapacitySchedule(reductions=((10.0, 20.0, 2), (50.0, float("inf"), 4)))
    s = simulate_machine(jobs, jobs.actual_run_time, machine, capacity=capacity)
    assert s.begin.tolist()[:5] == [20, 0, 0, 20, 12]
    assert s.end.tolist()[:5] == [25, 5, 5, 25, 17]
    assert s.rejected.tolist() == [False] * 5 + [True]
    assert s.warnings["rejected_capacity"] == 1
    from drevt_sweep.sim.metrics import compute_metrics

    assert compute_metrics(jobs, s)["partition/B/jobs_rejected"] == 1
    # Shares add up exactly, largest remainder first (ties to the earlier partition).
    shares = partition_capacities(CapacitySchedule(steps=((5.0, 7),), reductions=((0.0, 1.0, 3),)),
                                  Machine("m", (Partition("x", 6), Partition("y", 3), Partition("z", 1))))
    assert [c.reductions for c in shares] == [((0.0, 1.0, 2),), ((0.0, 1.0, 1),), ()]  # 1.8, 0.9, 0.3
    assert [c.steps for c in shares] == [((5.0, 4),), ((5.0, 2),), ((5.0, 1),)]  # 4.2, 2.1, 0.7
    shared = Machine("m", (Partition("A", 2, queues=("a",)),
                           Partition("B", 2, cores=4, sharing="shared", queues=("b",))))
    with pytest.raises(ConfigError, match="whole nodes only; shared-node partition\\(s\\): B"):
        simulate_machine(jobs, jobs.actual_run_time, shared, capacity=capacity)
