"""The slurm.conf presets (issue 26 item 6): ``system=lassen_slurm`` and ``system=kabre_slurm``
are ``system=lassen``'s and ``system=kabre``'s machines written as slurm.conf files shipped in
``conf/system/``, and ``policy=slurm`` takes their scheduler from them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from drevt_sweep.sim.machine import machine_from_mapping
from drevt_sweep.sweep.app import run_spec, system_machine
from drevt_sweep.sweep.config import conf_file, register_configs
from drevt_sweep.trace.slurm_conf import read_slurm_conf

REPO = Path(__file__).resolve().parents[1]
CONF = REPO / "conf"
LASSEN_LAST25 = Path(__file__).resolve().parent / "data" / "traces" / "lassen_last25.csv"


@pytest.fixture(scope="module")
def hydra_compose():
    register_configs()
    # This tree's conf/ (drevt_sweep.conf may be another checkout's in a development setup).
    with initialize_config_dir(version_base="1.3", config_dir=str(CONF)):
        yield lambda *overrides: compose("config", overrides=list(overrides))


def shape(machine, drop=("", "-1")):
    """Pools as (nodes, cores, GPUs, memory, sharing, queues), without the default-partition
    queue names ("" and SWF's -1, which Default=YES adds)."""
    return [(p.nodes, p.cores, p.gpus, p.memory, p.sharing, set(p.queues) - set(drop)) for p in machine.partitions]


@pytest.mark.parametrize("name, yaml", [("lassen_slurm", "lassen"), ("kabre_slurm", "kabre")])
def test_a_preset_is_the_bundled_machine_as_a_slurm_conf(hydra_compose, name, yaml):
    cfg = hydra_compose(f"system={name}")
    assert Path(cfg.system.slurm_conf) == CONF / "system" / f"{name}.conf"
    assert conf_file(f"system/{name}.conf") == cfg.system.slurm_conf
    bundled = system_machine(hydra_compose(f"system={yaml}").system)
    assert shape(system_machine(cfg.system)) == shape(bundled)


def test_lassen_slurm_with_policy_slurm_is_multifactor_fair_tree_and_slurm_backfill(hydra_compose):
    cfg = hydra_compose("trace=custom", f"trace.path={LASSEN_LAST25}", "format=lassen",
                        "format.queues=[all]", "system=lassen_slurm", "policy=slurm")
    spec = run_spec(cfg, None, None, ["pbatch", "pdebug"])
    assert (spec.priority, spec.backfill) == ("multifactor", "slurm")
    params = spec.priority_params
    assert params["fairshare"] == "fair_tree"
    assert params["weights"] == {"age": 1000.0, "fairshare": 10000.0, "job_size": 1000.0,
                                 "partition": 1000.0, "qos": 0.0}
    assert params["partition_priority"] == {"pbatch": 1.0, "pdebug": 2.0}
    assert (params["max_age"], params["decay_half_life"], params["calc_period"]) == (7 * 86400.0, 7 * 86400.0, 300.0)


def test_lassen_slurm_schedules_the_lassen_trace_as_system_lassen(hydra_compose):
    """Same pools, same FCFS + EASY schedule of the bundled Lassen sample, job for job."""
    from drevt_sweep.sim.partitioned import simulate_machine
    from drevt_sweep.trace import ReadOptions, read_trace

    jobs = read_trace(LASSEN_LAST25, ReadOptions(trace_format="lassen", queues="all", force_simulation=True))
    ours = machine_from_mapping(read_slurm_conf(CONF / "system" / "lassen_slurm.conf").system)
    theirs = system_machine(hydra_compose("system=lassen").system)
    a = simulate_machine(jobs, jobs.actual_run_time, ours)
    b = simulate_machine(jobs, jobs.actual_run_time, theirs)
    assert not a.rejected.all()
    assert np.array_equal(a.begin, b.begin, equal_nan=True) and np.array_equal(a.rejected, b.rejected)
