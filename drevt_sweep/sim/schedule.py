"""What the engine returns: when each job ran, aligned row for row with the job table."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, eq=False)
class Schedule:
    """A simulated or replayed schedule.

    Arrays have one entry per row of the input ``JobTable`` (same order). Rejected jobs (asking
    for more nodes than the machine has) never run: their begin/end/run_time are NaN and they
    are left out of every metric.
    """

    mode: str  # "replay" or "simulation"
    total_nodes: int
    begin: np.ndarray  # float64
    end: np.ndarray  # float64, == begin + run_time exactly
    run_time: np.ndarray  # float64, the time the job actually held its nodes
    killed: np.ndarray  # bool, stopped at its time limit
    rejected: np.ndarray  # bool, could never run on this machine
    warnings: dict[str, int] = field(default_factory=dict)  # e.g. replay over-commit instants
    # On a machine with partitions (drevt_sweep.sim.partitioned): the machine, each job's
    # partition (int32 index into machine.partitions, -1 rejected) and resolved per-node
    # request (``machine.Placement``). None on a single pool of whole nodes.
    machine: object | None = None
    placement: object | None = None

    @property
    def ran(self) -> np.ndarray:
        return ~self.rejected

    def __len__(self) -> int:
        return int(self.begin.shape[0])

    def to_frame(self, jobs=None):
        """A pandas DataFrame, one row per job in the job table's order (rejected jobs too,
        with NaN times). With ``jobs`` (the ``JobTable`` it was made from) the jobs' own
        columns come first and ``wait`` = begin - submit is added."""
        import pandas as pd

        frame = pd.DataFrame({"begin": self.begin, "end": self.end, "run_time": self.run_time,
                              "killed": self.killed, "rejected": self.rejected})
        if jobs is None:
            return frame
        if len(jobs) != len(self):
            raise ValueError(f"the schedule has {len(self)} rows but the job table {len(jobs)}")
        frame.insert(0, "job_id", jobs.job_id)
        frame.insert(1, "submit", jobs.submit)
        frame.insert(2, "num_nodes", jobs.num_nodes)
        frame.insert(3, "time_limit", jobs.time_limit)
        frame.insert(4, "queue", jobs.queue)
        frame.insert(frame.columns.get_loc("end") + 1, "wait", self.begin - jobs.submit)
        return frame
