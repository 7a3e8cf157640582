"""The report's per-partition view (issue 14 item 4): hand-computed figures in the table, the
names escaped, no section for a single pool."""

from __future__ import annotations

import numpy as np
from jobtable_factory import make_jobs
from test_report import assert_embedded_pngs, config_dict, parse, small_sweep, write_job

from drevt_sweep.report import html as report
from drevt_sweep.sim.machine import Machine, Partition
from drevt_sweep.sim.partitioned import simulate_machine

HOSTILE = "<i>dbg</i>"


def partitioned_sweep(root):
    """Two configurations (FCFS, EASY) of four jobs on a machine of two partitions:

    batch (2 exclusive nodes, queue a): job 0 takes both nodes on [0, 100), job 1 (1 node) waits
    until 100 and ends at 150. <i>dbg</i> (1 shared node of 4 cores, queue b): job 2 (2 cores)
    runs on [0, 10), job 3 (4 cores) cannot join it and runs on [10, 20). Span 0..150.
    """
    jobs = make_jobs([0, 0, 0, 0], [2, 1, 1, 1], [100, 50, 10, 10], [100, 50, 10, 10],
                     queue=["a", "a", "b", "b"])
    jobs = jobs.replace(cores_per_node=np.array([1, 1, 2, 4]))
    parts = (Partition("batch", 2, queues=("a",)),
             Partition(HOSTILE, 1, cores=4, sharing="shared", queues=("b",)))
    machine = Machine("m", parts)
    sweep = root / "sweep"
    sweep.mkdir()
    for num, backfill in enumerate(("none", "easy")):
        cfg = config_dict(backfill, backfill, "actual")
        cfg["system"]["partitions"] = [
            {"name": p.name, "nodes": p.nodes, "cores": p.cores, "sharing": p.sharing,
             "queues": list(p.queues)} for p in parts]
        schedule = simulate_machine(jobs, jobs.actual_run_time, machine, backfill=backfill,
                                    kernel="reference")
        assert schedule.begin.tolist() == [0, 100, 0, 10]
        write_job(sweep, num, cfg, [f"policy={backfill}"], jobs, schedule, [0])
    return sweep


def test_the_report_shows_each_partition_of_each_configuration(tmp_path):
    sweep = partitioned_sweep(tmp_path)
    raw = report.build_report(sweep).read_text()
    assert HOSTILE not in raw and "&lt;i&gt;dbg&lt;/i&gt;" in raw  # a machine file's name, as text
    page = parse(sweep / "report.html")
    assert "Partitions" in page.headings["h2"]
    tables = [t["rows"] for t in page.tables if t["class"] == "partitions"]
    assert len(tables) == 2  # one per configuration
    header, batch, dbg = tables[0]
    assert header == ["partition", "nodes", "jobs", "rejected", "node utilization (%)", "core utilization (%)",
                      "GPU utilization (%)", "mean wait (h)", "p95 wait (h)", "mean bounded slowdown"]
    # batch: (2 x 100 + 1 x 50) node-s of 2 x 150; waits 0, 100 (p95 95); slowdowns 1, 150/50
    # (one unit per metric: 50 s = 0.0139 h, 95 s = 0.0264 h)
    assert batch == ["batch", "2 (exclusive)", "2", "0", "83.3", "–", "–", "0.0139", "0.0264", "2.00"]
    # dbg: dominant shares 2/4 x 10 s + 4/4 x 10 s over 1 x 150; cores 60 of 600; waits 0, 10
    assert dbg == [HOSTILE, "1 (shared)", "2", "0", "10.0", "10.0", "–", "0.0014", "0.0026", "1.50"]
    assert any(image["alt"] == "per-partition metrics by configuration" for image in page.images)
    assert_embedded_pngs(page)


def test_a_single_pool_has_no_partition_section(tmp_path):
    page = parse(report.build_report(small_sweep(tmp_path)))
    assert "Partitions" not in page.headings["h2"]
    assert not [t for t in page.tables if t["class"] == "partitions"]
