"""What every scheduling policy sees: the machine's capacity, its running jobs, free-node profiles.

The engine (``drevt_sweep.engine``) owns the event loop and all mutable state. At every
scheduling pass it hands a backfill policy the waiting queue (job rows in priority order) and a
read-only :class:`Cluster` view, and the policy answers with the jobs to start *now*, in the
order they start. Policies never mutate the queue or the cluster; a policy may keep private
state between passes (conservative backfilling keeps its reservations).

Conventions shared by every policy:

* Times are Python floats (IEEE float64, bit-identical to numpy float64 arithmetic).
* A running job's *estimated end* is ``begin + time_limit`` (``PolicyContext.time_limit``: the
  limit, or a run-time estimate, see ``sim.estimates``). With limits enforced this is an
  upper bound on its real end. A job that has outlived its limit (possible only with limits not
  enforced) is assumed to end immediately: its nodes are released at ``nextafter(now, +inf)``,
  the first representable instant after ``now``. This keeps its nodes busy *at* ``now`` (so no
  plan ever double-books them) while planning as if they will be free as soon as possible.
* Machine capacity is reached only through :class:`Capacity` and :meth:`Cluster.profile`. A
  capacity that changes over time (maintenance windows, ``drevt_sweep.capacity``) is merged into
  the profile; with it, policies test "fits for its whole time limit" (:meth:`Profile.fits`)
  instead of "fits now", and a job that fits nowhere in the profile gets no reservation
  (``earliest_fit`` returns +inf).
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from heapq import merge
from typing import Callable, Iterable, Protocol, Sequence

INF = math.inf

# Called as on_reservation(now, job_row, reserved_start) whenever a policy gives a job a
# reservation (EASY: the blocked head at each pass; conservative: whenever a reservation is set
# or moves). Used by tests and debugging; None in normal runs.
ReservationHook = Callable[[float, int, float], None]


class Capacity:
    """Total nodes the scheduler may use, as a function of time.

    Constant (``Capacity(total)``, the common case: every policy keeps its original fast
    path), or a step function (``Capacity.stepwise(times, levels)``, a :class:`StepCapacity`
    built from a ``drevt_sweep.capacity.CapacitySchedule``: maintenance windows, outages,
    warm-start holds; the compiled kernel runs only the constant ``Capacity`` itself).
    With a step function (``variable``), the engine applies the changes as events, the
    policies plan in :meth:`Cluster.profile` (which merges the future changes in), and a job
    starts only if it fits for its whole time limit (``Profile.fits``).
    """

    __slots__ = ("total", "times", "levels")

    def __init__(self, total: int) -> None:
        self.total = int(total)  # the capacity before the first change (constant: always)
        self.times: list[float] = []  # change times, strictly increasing (empty: constant)
        self.levels: list[int] = []  # capacity from times[i] on

    @staticmethod
    def stepwise(times: Sequence[float], levels: Sequence[int]) -> Capacity:
        """``levels[i]`` nodes on ``[times[i], times[i+1])``, with ``times[0] = -inf``."""
        cap = StepCapacity(levels[0])
        cap.times = [float(t) for t in times[1:]]
        cap.levels = [int(n) for n in levels[1:]]
        return cap

    @property
    def variable(self) -> bool:
        return bool(self.times)

    def at(self, t: float) -> int:
        i = bisect_right(self.times, t)
        return self.levels[i - 1] if i else self.total

    def changes(self) -> list[tuple[float, int]]:
        """``(time, delta)`` of every change, in time order."""
        out = []
        prev = self.total
        for t, n in zip(self.times, self.levels):
            out.append((t, n - prev))
            prev = n
        return out

    def changes_after(self, t: float) -> list[tuple[float, int]]:
        """``(time, delta)`` of the changes strictly after ``t``."""
        i = bisect_right(self.times, t)
        prev = self.levels[i - 1] if i else self.total
        out = []
        for k in range(i, len(self.times)):
            n = self.levels[k]
            out.append((self.times[k], n - prev))
            prev = n
        return out

    @property
    def minimum(self) -> int:
        """The smallest capacity ever offered."""
        return min([self.total, *self.levels])

    @property
    def maximum(self) -> int:
        """The largest capacity ever offered (jobs above it are rejected up front)."""
        return max([self.total, *self.levels])


class StepCapacity(Capacity):
    """A capacity that changes over time (see :meth:`Capacity.stepwise`)."""

    __slots__ = ()


class Profile:
    """Free nodes as a step function of time, from ``times[0]`` (= now) to +infinity.

    ``free[i]`` nodes are free on ``[times[i], times[i+1])``; the last step lasts forever.
    Breakpoints are strictly increasing. Redundant breakpoints (equal neighbouring values) are
    allowed and harmless to the answers, but every search steps over them: :meth:`add` drops
    those it leaves (conservative's placements left ~3 of 4 breakpoints redundant).
    """

    __slots__ = ("times", "free")

    def __init__(self, times: list[float], free: list[int]) -> None:
        self.times = times
        self.free = free

    @classmethod
    def from_deltas(cls, now: float, free_now: int, deltas: Iterable[tuple[float, int]]) -> Profile:
        """Start with ``free_now`` at ``now``; each ``(t, d)`` (``t >= now``) adds ``d`` from ``t`` on."""
        times = [now]
        free = [free_now]
        level = free_now
        for t, d in sorted(deltas):
            level += d
            if t == times[-1]:
                free[-1] = level
            else:
                times.append(t)
                free.append(level)
        return cls(times, free)

    def _split(self, t: float) -> int:
        """Index of the breakpoint at ``t`` (``t >= times[0]``), inserting one if needed."""
        times = self.times
        i = bisect_left(times, t)
        if i == len(times) or times[i] != t:
            times.insert(i, t)
            self.free.insert(i, self.free[i - 1])
        return i

    def add(self, start: float, end: float, delta: int) -> None:
        """Add ``delta`` free nodes over ``[start, end)`` (negative = occupy)."""
        i = self._split(start)
        j = self._split(end) if end != INF else len(self.times)
        times = self.times
        free = self.free
        for k in range(i, j):
            free[k] += delta
        # Only the two ends can have become level with the step before them. (An earliest fit
        # never starts at such a breakpoint: the job would fit from the step before it too.)
        if i < j < len(times) and free[j] == free[j - 1]:
            del times[j], free[j]
        if 0 < i < j and free[i] == free[i - 1]:
            del times[i], free[i]

    def earliest_fit(self, nodes: int, duration: float) -> float:
        """The earliest breakpoint ``s`` with ``nodes`` free throughout ``[s, s + duration)``.

        The earliest feasible start is always a breakpoint (a later start inside a step fits
        whenever the step's own start does). Returns +inf if the job never fits (impossible
        while its size is at most the final, unbounded step).
        """
        times = self.times
        free = self.free
        m = len(times)
        i = 0
        while i < m:
            if free[i] < nodes:
                i += 1
                continue
            start = times[i]
            end = start + duration
            k = i + 1
            while k < m and times[k] < end:
                if free[k] < nodes:
                    break
                k += 1
            else:
                return start
            i = k + 1
        return INF

    def fits(self, nodes: int, duration: float) -> bool:
        """Whether ``nodes`` are free throughout ``[times[0], times[0] + duration)`` (a start now)."""
        times = self.times
        free = self.free
        if free[0] < nodes:
            return False
        end = times[0] + duration
        k = 1
        m = len(times)
        while k < m and times[k] < end:
            if free[k] < nodes:
                return False
            k += 1
        return True


class Cluster:
    """The engine's machine state, read-only for policies.

    ``running`` is kept sorted by ``(estimated_end, job_row)``. ``freed_early`` tells whether a
    job has completed before its estimated end since the previous scheduling pass (conservative
    backfilling then compresses its reservations); ``completed`` whether any job has (on time
    too: ``one_pass`` compression re-places the queue at every termination). ``free`` is the capacity now minus the nodes
    in use (negative only if a job outlives its limit into a capacity drop, limits not
    enforced). ``withdrawn``: jobs the engine took out of the queue since the previous pass
    without starting them (a variable capacity's last window for them has passed). ``ended``:
    None, or (once a policy has set it to a list) the jobs completed since the policy cleared
    it (Slurm's backfill keeps association counters with it).
    """

    __slots__ = ("capacity", "free", "running", "nodes", "freed_early", "completed", "enforce_limits",
                 "withdrawn", "estimates_raised", "ended")

    def __init__(self, capacity: Capacity, nodes: Sequence[int], enforce_limits: bool) -> None:
        self.capacity = capacity
        self.free = capacity.total
        self.running: list[tuple[float, int]] = []
        self.nodes = nodes
        self.freed_early = False
        self.completed = False
        self.enforce_limits = enforce_limits
        self.withdrawn: list[int] = []
        self.estimates_raised = False  # a running job outlived its run-time estimate (sim.estimates)
        self.ended: list[int] | None = None  # completions since the last pass, once a policy asks (a list)

    def releases(self, now: float) -> list[tuple[float, int]]:
        """``(time, nodes)`` at which running jobs are expected to free their nodes, sorted."""
        nodes = self.nodes
        soon = math.nextafter(now, INF)
        out = []
        for est_end, j in self.running:
            out.append((est_end if est_end > now else soon, nodes[j]))
        return out

    def shadow(self, now: float, need: int, free: int, started: Sequence[tuple[float, int]] = ()) -> tuple[float, int]:
        """EASY's reservation for a job of ``need`` nodes that does not fit in ``free`` nodes now.

        Returns ``(shadow_time, extra_nodes)``: the earliest time at which, by estimated ends,
        at least ``need`` nodes are free, and how many more than ``need`` are free then.
        ``started``: ``(estimated_end, nodes)`` of jobs being started in this pass (their nodes
        are already taken out of ``free``). Equivalent to ``profile().earliest_fit`` while the
        capacity is constant (free nodes then only grow with time), but without building the
        profile. Constant capacity only: with a variable capacity the shadow depends on the
        head's time limit, and EASY plans in ``profile()`` instead.
        """
        nodes = self.nodes
        # releases in time order, generated lazily: the shadow is usually found early
        rel = ((e, nodes[j]) for e, j in self.running)
        if started:
            rel = merge(rel, sorted(started))
        soon = math.nextafter(now, INF)
        avail = free
        shadow = INF
        for e, k in rel:
            if shadow != INF and (e if e > now else soon) != shadow:
                break
            avail += k
            if shadow == INF and avail >= need:
                shadow = e if e > now else soon
            # (after the shadow is found, everything released at that same instant is extra)
        if shadow == INF:
            return INF, 0  # never fits (cannot happen: oversized jobs are rejected)
        return shadow, avail - need

    def profile(self, now: float, reserved: Iterable[tuple[float, float, int]] = ()) -> Profile:
        """Free nodes from ``now`` on, given the running jobs' estimated ends.

        ``reserved``: ``(start, end, nodes)`` intervals already promised to waiting jobs
        (``start >= now``). A variable capacity's future changes are merged in here.
        """
        free_now = self.free
        deltas: list[tuple[float, int]] = list(self.releases(now))
        if self.capacity.times:
            deltas.extend(self.capacity.changes_after(now))
        for start, end, n in reserved:
            deltas.append((start, -n))
            deltas.append((end, n))
        return Profile.from_deltas(now, free_now, deltas)


@dataclass(frozen=True)
class PolicyContext:
    """Static per-run inputs a policy may use (per-job values indexed by table row)."""

    nodes: Sequence[int]  # requested nodes
    # The only duration a policy may plan with: the time limit, or the run-time estimate
    # (sim.estimates; the engine sets a job's entry when it arrives and raises it to the limit
    # when the job outlives it).
    time_limit: Sequence[float]
    capacity: Capacity
    enforce_limits: bool
    on_reservation: ReservationHook | None = None
    backfill_order: str = "fcfs"  # EASY's candidate order: fcfs (queue order) or sjbf
    fcfs_rank: Sequence[int] = ()  # the static priority rank (FCFS for a dynamic one): sjbf's tie-break
    compression: str = "compress_first"  # conservative backfilling's compression order
    backfill_params: dict | None = None  # a backfill policy's own settings (``slurm``: bf_window, ...)
    users: Sequence[int] = ()  # each job's user code (-1 unknown): Slurm's bf_max_job_user


class BackfillPolicy(Protocol):
    """One scheduling discipline. Instantiated once per simulation with a ``PolicyContext``."""

    def select(self, now: float, queue: Sequence[int], cluster: Cluster) -> list[int]:
        """Jobs (table rows) from ``queue`` to start at ``now``, in the order they start."""
        ...


def start_in_order(queue: Sequence[int], nodes: Sequence[int], free: int) -> tuple[list[int], int]:
    """Start jobs in priority order until the first one that does not fit.

    Returns the started jobs and the index in ``queue`` of the first blocked job
    (``len(queue)`` when everything started).
    """
    started = []
    k = 0
    for j in queue:
        n = nodes[j]
        if n > free:
            break
        started.append(j)
        free -= n
        k += 1
    return started, k
