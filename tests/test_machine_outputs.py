"""The resource CSV on machines with partitions (issue 14): what jobs hold, counted as the
metrics count it (shared nodes by dominant share), per resource and per partition; hand-computed."""

from __future__ import annotations

import numpy as np
from jobtable_factory import make_jobs

from drevt_sweep.outputs import resource_csv_bytes
from drevt_sweep.sim.machine import Machine, Partition
from drevt_sweep.sim.metrics import compute_metrics
from drevt_sweep.sim.partitioned import replay_machine, simulate_machine


def test_shared_partitions_count_cores_gpus_and_memory_not_whole_nodes():
    # batch: 2 exclusive nodes (queue a); dbg: 1 shared node of 4 cores, 2 GPUs, 1024 MiB (b).
    # Job 0 (a, 2 nodes) [0, 100); job 1 (a, 1 node) waits for it: [100, 150).
    # Job 2 (b: 2 cores, 1 GPU, 100.5 MiB; dominant share 1/2) [0, 10); job 3 (b: 4 cores,
    # 64 MiB; share 1) cannot join it: [10, 20).
    jobs = make_jobs([0, 0, 0, 0], [2, 1, 1, 1], [100, 50, 10, 10], [100, 50, 10, 10],
                     queue=["a", "a", "b", "b"])
    jobs = jobs.replace(cores_per_node=np.array([1, 1, 2, 4]), gpus_per_node=np.array([0, 0, 1, 0]),
                        memory_per_node=np.array([np.nan, np.nan, 100.5, 64.0]))
    machine = Machine("m", (Partition("batch", 2, queues=("a",)),
                            Partition("dbg", 1, cores=4, gpus=2, memory=1024, sharing="shared",
                                      queues=("b",))))
    schedule = simulate_machine(jobs, jobs.actual_run_time, machine, kernel="reference")
    assert schedule.begin.tolist() == [0, 100, 0, 10]
    lines = resource_csv_bytes(jobs, schedule).decode().splitlines()
    assert lines[0] == ("time,free_nodes,allocated_nodes,allocated_cores,free_cores,allocated_gpus,"
                        "free_gpus,allocated_memory,free_memory,partition/batch/allocated_nodes,"
                        "partition/dbg/allocated_nodes,partition/dbg/allocated_cores,"
                        "partition/dbg/allocated_gpus,partition/dbg/allocated_memory")
    assert lines[1:] == [
        "0,0.5,2.5,2,2,1,1,100.5,923.5,2,0.5,2,1,100.5",  # 2 whole nodes + half of dbg's node
        "10,0,3,4,0,0,2,64,960,2,1,4,0,64",  # job 2 ends as job 3 starts
        "20,1,2,0,4,0,2,0,1024,2,0,0,0,0",
        "100,2,1,0,4,0,2,0,1024,1,0,0,0,0",  # job 0 ends as job 1 starts
        "150,3,0,0,4,0,2,0,1024,0,0,0,0,0",
    ]
    # the same node-time the metrics count: (2 x 100 + 1 x 50) + (0.5 x 10 + 1 x 10) node-s
    assert compute_metrics(jobs, schedule)["utilization"] == (250 + 15) / (3 * 150)


def test_thirds_of_a_node_add_up_exactly():
    # One shared node of 3 cores; 1-core jobs arrive and leave at different times: 1/3 + 1/3 +
    # 1/3 of a node is exactly 1, and exactly 0 once they have gone (no float drift).
    jobs = make_jobs([0, 1, 2], [1, 1, 1], [10, 10, 10], [10, 10, 10], queue=["c", "c", "c"])
    jobs = jobs.replace(cores_per_node=np.array([1, 1, 1]))
    machine = Machine("m", (Partition("c", 1, cores=3, sharing="shared"),))
    schedule = simulate_machine(jobs, jobs.actual_run_time, machine, kernel="reference")
    lines = resource_csv_bytes(jobs, schedule).decode().splitlines()
    assert lines[0] == "time,free_nodes,allocated_nodes,allocated_cores,free_cores"
    assert [line.split(",")[2] for line in lines[1:]] == [
        "0.3333333333333333", "0.6666666666666666", "1", "0.6666666666666666", "0.3333333333333333", "0"]
    assert lines[-1] == "12,1,0,0,3"


def test_a_replay_counts_jobs_no_partition_serves_as_whole_nodes():
    # Recorded: job 0 (queue a, 1 node) [0, 10); job 1 (queue x: no partition) 2 nodes [5, 15).
    jobs = make_jobs([0, 0], [1, 2], [20, 20], [10, 10], begin=[0, 5], end=[10, 15], queue=["a", "x"])
    machine = Machine("m", (Partition("a", 2), Partition("b", 2)))
    schedule = replay_machine(jobs, machine)
    lines = resource_csv_bytes(jobs, schedule).decode().splitlines()
    assert lines == ["time,free_nodes,allocated_nodes,partition/a/allocated_nodes,partition/b/allocated_nodes",
                     "0,3,1,1,0", "5,1,3,1,0", "10,2,2,0,0", "15,4,0,0,0"]
