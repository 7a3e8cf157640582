"""``drevt-sim``: simulate or replay one trace, the seeds' command line.

The seeds' invocation works unchanged::

    drevt-sim test.csv --trace_format simple --timestamp_format epoch --total_nodes 100 \\
        --backfill_policy easy --priority_policy fcfs --run_time_mode actual

A trace with historical begin/end times is replayed (unless ``--force-simulation``); otherwise
the scheduler computes the start times. Small traces (at most ``PER_JOB_AUTO_LIMIT`` jobs) print
one line per job, ``Job <row> starts at <begin>, ends at <end>``, where ``<row>`` is the job's
0-based row in the job table (jobs sorted by submit time, file order breaking ties) and the
times are absolute epoch seconds (integers when integral) — with the seeds' test trace, which
starts at epoch 0, they read as seconds from the start. Then comes the statistics block.

Exit codes: 0 success, 2 bad input or command line (a usage message or ``drevt-sim: error: ...``,
never a traceback), 130 interrupted, 1 internal error (set ``DREVT_DEBUG=1`` to see the
traceback). Warnings go to stderr.

Startup time matters (a whole run on a 28k-job trace in well under 2 s), so this module imports
only argparse and numpy at the top; the reader, engine and writers are imported when needed.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

PROG = "drevt-sim"
PER_JOB_AUTO_LIMIT = 100  # print per-job lines by default up to this many jobs
DEFAULT_TOTAL_NODES = 795  # Lassen, as in the seeds, when the trace states no machine size
# Mirrors of the engine's and reader's option lists (kept here so that `--help` and argument
# errors do not import the engine; a test checks that they agree).
TRACE_FORMATS = ("simple", "lassen", "swf", "slurm")
TIMESTAMP_FORMATS = ("auto", "epoch", "iso")
PRIORITY_POLICIES = ("fcfs", "sjf", "ljf", "smallest", "largest", "f1", "f2", "f3", "f4", "wfp3", "unicef",
                     "multifactor")
ESTIMATES = ("user", "actual", "user_history")
BACKFILL_ORDERS = ("fcfs", "sjbf")
ESTIMATE_REFRESHES = ("submit", "every_pass")
BACKFILL_POLICIES = ("none", "easy", "conservative", "easy_drevt", "slurm")
COMPRESSION_ORDERS = ("compress_first", "interleaved", "one_pass")
RUN_TIME_MODES = ("actual", "limit", "distribution")
DISTRIBUTIONS = ("normal", "lognormal", "uniform")
MAX_LISTED = 5  # jobs named in a warning before "..."
# Every option that names a file the run reads, and how a refusal calls it; no output option
# may name one of these files (``_check_paths``). A new input option is added here, and
# tests/test_file_safety.py checks that every file option is either here or in OUTPUT_OPTIONS.
INPUT_OPTIONS = {"trace": "the input trace", "system": "the --system file",
                 "slurm_conf": "the --slurm-conf file", "associations": "the --associations file",
                 "qos": "the --qos file"}
OUTPUT_OPTIONS = ("output", "resource_trace", "stats", "rejects")
QUEUE_LABEL_LIMIT = 60  # characters of a queue name in the per-queue table


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got '{text}'")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got '{text}'")
    return value


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got '{text}'") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number, got '{text}'")
    return value


def _queues(text: str):
    text = text.strip()
    if text in ("all", "default"):
        return text
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError("expected a comma-separated list of queues, or 'all'")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Simulate (or replay) an HPC batch-scheduling trace and print its statistics.",
        epilog="A trace with begin/end times is replayed unless --force-simulation is given. "
        "Exit codes: 0 ok, 2 bad input or options, 130 interrupted.",
        allow_abbrev=False,
    )
    parser.add_argument("trace", help="trace file (.gz is read transparently)")

    reading = parser.add_argument_group("reading the trace")
    reading.add_argument("--trace_format", choices=TRACE_FORMATS, default="simple",
                         help="trace file format (default: %(default)s)")
    reading.add_argument("--timestamp_format", choices=TIMESTAMP_FORMATS, default="auto",
                         help="how times are written (default: %(default)s = detect)")
    reading.add_argument("--timezone", default=None, metavar="ZONE",
                         help="IANA zone of times without an offset; wins over an SWF header's "
                         "TimeZoneString (default: the file's own zone, else America/Los_Angeles)")
    reading.add_argument("--queues", type=_queues, default="default", metavar="LIST",
                         help="comma-separated queues to keep, or 'all' (default: the format's "
                         "own filter: pbatch, pall, pbatch0-3 for simple/lassen, all otherwise)")
    reading.add_argument("--on_bad_row", choices=("error", "skip"), default="error",
                         help="stop at a bad row, or skip and count it; with --slurm-conf, also jobs in "
                         "partitions the file does not define (default: %(default)s)")
    reading.add_argument("--rejects", metavar="CSV",
                         help="with --on_bad_row skip: write the skipped rows and reasons here")
    reading.add_argument("--swf_missing_time_limit", choices=("run_time", "drop", "fail"),
                         default="run_time",
                         help="SWF jobs without a requested time: use their run time, drop them, "
                         "or fail (default: %(default)s)")
    reading.add_argument("--force-simulation", "--force_simulation", dest="force_simulation",
                         action="store_true",
                         help="simulate a replay trace, with its historical run times as the "
                         "actual run times")

    machine = parser.add_argument_group("machine and scheduler")
    machine.add_argument("--total_nodes", type=_positive_int, metavar="N",
                         help="machine size (default: the size the trace states, else "
                         f"{DEFAULT_TOTAL_NODES}, Lassen)")
    machine.add_argument("--system", metavar="YAML",
                         help="a machine description with partitions (the format of "
                         "conf/system/lassen.yaml: partitions with nodes, cores, gpus, memory, "
                         "sharing, queues); replaces --total_nodes")
    machine.add_argument("--slurm-conf", "--slurm_conf", dest="slurm_conf", metavar="PATH",
                         help="a Slurm slurm.conf: its nodes and partitions are the machine, and "
                         "its PriorityType/PriorityWeight*/SchedulerType the default priority and "
                         "backfilling (what is modelled: docs/slurm.md)")
    machine.add_argument("--associations", metavar="PATH",
                         help="the output of 'sacctmgr -P show assoc': shares, QOS and association limits "
                         "(MaxJobs, MaxSubmit, GrpTRES, MaxWall...), enforced by --backfill_policy slurm")
    machine.add_argument("--qos", metavar="PATH",
                         help="the output of 'sacctmgr -P show qos' (with --associations): QOS priority "
                         "and limits")
    machine.add_argument("--partitions", metavar="LIST",
                         help="partitions 'name:nodes,name:nodes' (each serves the queue of its "
                         "name), e.g. 'pbatch:756,pdebug:36'")
    machine.add_argument("--cores_per_node", type=_positive_int, metavar="N",
                         help="with --partitions: cores per node")
    machine.add_argument("--gpus_per_node", type=_seed, metavar="N",
                         help="with --partitions: GPUs per node")
    machine.add_argument("--memory_per_node", type=_positive_float, metavar="MIB",
                         help="with --partitions: memory per node in MiB")
    machine.add_argument("--sharing", choices=("exclusive", "shared"), default="exclusive",
                         help="with --partitions: whole nodes per job, or jobs packed onto nodes "
                         "by cores/GPUs/memory (default: %(default)s)")
    machine.add_argument("--priority_policy", choices=PRIORITY_POLICIES,
                         help="queue order (default: fcfs, or what --slurm-conf says)")
    machine.add_argument("--backfill_policy", choices=BACKFILL_POLICIES,
                         help="backfilling (default: easy, or what --slurm-conf says)")
    machine.add_argument("--compression", choices=COMPRESSION_ORDERS, default="compress_first",
                         help="with --backfill_policy conservative: compression order; compress_first = "
                         "completions, then the waiting jobs' reservations, then arrivals; interleaved "
                         "= one priority-ordered sweep; one_pass = one round, as batsched/pyss "
                         "(default: %(default)s)")
    machine.add_argument("--drevt_compat", action="store_true",
                         help="with --backfill_policy easy: the C++ DR_EVT variant (easy_drevt: "
                         "no extra-nodes rule, strict now+limit < shadow test)")
    machine.add_argument("--estimate", choices=ESTIMATES, default="user",
                         help="what the scheduler plans with: user = the time limit, actual = the "
                         "real run time, user_history = the mean of the user's last two jobs "
                         "(Tsafrir et al. 2007) (default: %(default)s)")
    machine.add_argument("--backfill_order", choices=BACKFILL_ORDERS, default="fcfs",
                         help="order of EASY's backfill candidates: fcfs (priority order) or sjbf "
                         "(shortest estimate first); EASY++ = --estimate user_history "
                         "--backfill_order sjbf (default: %(default)s)")
    machine.add_argument("--estimate_refresh", choices=ESTIMATE_REFRESHES, default="submit",
                         help="when user_history predicts a waiting job: submit = once, when it "
                         "is submitted; every_pass = again before every scheduling pass, as pyss "
                         "(default: %(default)s)")
    machine.add_argument("--priority_param", action="append", default=[], metavar="KEY=VALUE",
                         help="a parameter of --priority_policy multifactor, e.g. "
                         "weights.fairshare=5000, calc_period=60, favor_small=true, "
                         "user_shares.alice=2 (repeatable)")
    machine.add_argument("--backfill_param", action="append", default=[], metavar="KEY=VALUE",
                         help="a setting of --backfill_policy slurm (Slurm's SchedulerParameters "
                         "names: bf_interval, bf_max_job_test, bf_window, bf_resolution, "
                         "bf_max_job_user, bf_max_job_part, bf_continue, bf_job_part_count_reserve, "
                         "default_queue_depth, sched_interval; inf = no limit); over --slurm-conf's "
                         "(repeatable)")
    machine.add_argument("--no_enforce_limits", dest="enforce_limits", action="store_false",
                         help="let jobs run past their time limit instead of killing them at it")

    run_time = parser.add_argument_group("run times (simulation only)")
    run_time.add_argument("--run_time_mode", choices=RUN_TIME_MODES, default=None,
                          help="actual = the trace's run times, limit = the full time limit, "
                          "distribution = random draws (default: actual)")
    run_time.add_argument("--run_time_distribution", choices=DISTRIBUTIONS, default="normal",
                          help="with --run_time_mode distribution (default: %(default)s)")
    run_time.add_argument("--run_time_scale", type=_finite_float, default=1.0, metavar="F",
                          help="normal: mean, lognormal: median, uniform: low — as a fraction "
                          "of the time limit (default: %(default)s)")
    run_time.add_argument("--run_time_stddev", type=_finite_float, default=0.0, metavar="F",
                          help="normal: std. dev. as a fraction of the limit, lognormal: shape "
                          "sigma, uniform: high fraction (default: %(default)s)")
    run_time.add_argument("--min_run_time", type=_finite_float, default=1.0, metavar="SECONDS",
                          help="lower clip of drawn run times (default: %(default)s)")
    run_time.add_argument("--seed", type=_seed, default=0,
                          help="random seed of the run-time draws (default: %(default)s)")

    _add_workload_arguments(parser)

    output = parser.add_argument_group("output")
    output.add_argument("--output", metavar="CSV",
                        help="write the schedule (itself a replay trace) to this CSV")
    output.add_argument("--resource_trace", metavar="CSV",
                        help="write time,free_nodes,allocated_nodes at every change to this CSV")
    output.add_argument("--stats", metavar="JSON", help="write the statistics to this JSON file")
    output.add_argument("--per_job", action="store_true",
                        help=f"print one line per job even for more than {PER_JOB_AUTO_LIMIT} jobs")
    output.add_argument("--quiet", action="store_true",
                        help="print nothing on stdout (warnings still go to stderr)")
    parser.add_argument("--version", action=_VersionAction)
    return parser


class _VersionAction(argparse.Action):
    """``--version``, with the version looked up only when asked for (see ``drevt_sweep``)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        from .. import __version__

        parser._print_message(f"{parser.prog} {__version__}\n", sys.stdout)  # as argparse's own
        parser.exit()


def _positive_float(text: str) -> float:
    value = _finite_float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got '{text}'")
    return value


def _non_negative_float(text: str) -> float:
    value = _finite_float(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got '{text}'")
    return value


def _add_workload_arguments(parser: argparse.ArgumentParser) -> None:
    """Workload transforms (``drevt_sweep.workload``), as one argument group."""
    group = parser.add_argument_group(
        "workload scenarios (transforms of the jobs; the trace file is never changed)"
    )
    group.add_argument("--load_factor", type=_positive_float, default=1.0, metavar="F",
                       help="offered load x F: inter-arrival gaps divided by F (default: 1)")
    group.add_argument("--window_start", metavar="TIME",
                       help="keep jobs submitted from TIME on: ISO date-time (wall clock in "
                       "--timezone unless it has an offset) or epoch seconds")
    group.add_argument("--window_end", metavar="TIME",
                       help="keep jobs submitted before TIME (exclusive)")
    group.add_argument("--max_jobs", type=_positive_int, metavar="N",
                       help="keep the first N jobs (after the window), as DR_EVT's --max_jobs")
    group.add_argument("--max_time", type=_positive_float, metavar="SECONDS",
                       help="keep jobs submitted less than SECONDS after the window start (else "
                       "the first submit), as DR_EVT's --max_time")
    group.add_argument("--warm_start", action="store_true",
                       help="with --window_start on a trace with begin/end times: jobs running "
                       "at the window start keep their nodes until their recorded end, jobs "
                       "queued then enter the queue at the window start")
    group.add_argument("--capacity", metavar="STEPS",
                       help="machine-size changes 'TIME:NODES,TIME:NODES' (TIME as for "
                       "--window_start): the machine has NODES nodes from TIME on")
    group.add_argument("--maintenance", action="append", default=[], metavar="SPEC",
                       help="periodic maintenance '<weekday|daily> HH:MM-HH:MM <nodes lost>', "
                       "e.g. 'tue 08:00-12:00 100' (wall clock in --timezone; repeatable)")
    group.add_argument("--maintenance_horizon_days", type=_non_negative_float, default=28.0,
                       metavar="DAYS",
                       help="generate --maintenance windows until DAYS after the last submit "
                       "(at least two weeks/days of them; default: %(default)s)")
    group.add_argument("--rescale_nodes", type=_positive_float, default=1.0, metavar="F",
                       help="num_nodes x F, rounded half up, at least 1, at most the machine "
                       "(--total_nodes, else the trace's size x F)")
    group.add_argument("--shake", type=_non_negative_float, default=0.0, metavar="SECONDS",
                       help="input shaking: move each submit by a uniform amount in "
                       "+-SECONDS (its own random stream of --seed)")


def _transform_jobs(jobs, args: argparse.Namespace, warn):
    """Apply the workload transforms chosen on the command line.

    Sets ``args.workload_capacity`` (the capacity schedule for the engine, or None) and
    ``args.workload_report``; prints a note with the report when anything was transformed.
    """
    from ..sim.workload import WorkloadSpec, apply_workload, format_report, parse_capacity

    spec = WorkloadSpec(
        load_factor=args.load_factor,
        window_start=args.window_start,
        window_end=args.window_end,
        max_jobs=args.max_jobs,
        max_time=args.max_time,
        warm_start=args.warm_start,
        capacity=parse_capacity(args.capacity) if args.capacity else (),
        maintenance=tuple(args.maintenance),
        maintenance_horizon=args.maintenance_horizon_days * 86400.0,
        rescale_nodes=args.rescale_nodes,
        rescale_machine_nodes=args.total_nodes,
        shake=args.shake,
    )
    jobs, args.workload_capacity, args.workload_report = apply_workload(jobs, spec, args.seed)
    if not spec.is_identity:
        _note(f"workload: {format_report(args.workload_report)}")
        if not len(jobs):
            from ..errors import ConfigError

            raise ConfigError("the workload transforms left no jobs (check the window bounds)")
    return jobs


# ---------------------------------------------------------------------------------------------


def _warn(message: str) -> None:
    print(f"{PROG}: warning: {message}", file=sys.stderr)


def _note(message: str) -> None:
    print(f"{PROG}: note: {message}", file=sys.stderr)


def _check_options(args: argparse.Namespace):
    """Checks that argparse cannot express; returns the backfill policy and run-time model."""
    from ..errors import ConfigError
    from ..sim.runtime import RunTimeModel

    _apply_slurm_conf(args)
    _read_associations(args)
    backfill = args.backfill_policy
    if args.drevt_compat:
        if backfill not in ("easy", "easy_drevt"):
            raise ConfigError(
                f"--drevt_compat selects DR_EVT's EASY variant; it cannot be combined with "
                f"--backfill_policy {backfill}"
            )
        backfill = "easy_drevt"
    model = RunTimeModel(
        mode=args.run_time_mode or "actual",
        distribution=args.run_time_distribution,
        scale=args.run_time_scale,
        stddev=args.run_time_stddev,
        min_run_time=args.min_run_time,
    ).validate()
    from ..sim.estimates import check_estimate
    from ..sim.policies import check_priority_params

    check_estimate(args.estimate, args.backfill_order, backfill, args.estimate_refresh)
    given = _priority_params(args.priority_param)
    from_conf = args.slurm.priority_params if args.slurm is not None else None
    if from_conf and args.priority_policy == "multifactor":
        given = {**from_conf, **given, "weights": {**from_conf["weights"], **given.get("weights", {})}}
    args.priority_params = check_priority_params(args.priority_policy, given)
    if args.priority_policy != "multifactor":
        args.priority_params = None
    args.backfill_params = None
    if backfill == "slurm":
        from ..sim.policies.slurm_backfill import check_backfill_params

        items = _priority_params(args.backfill_param, option="--backfill_param")
        from_conf = dict(args.slurm.backfill_params) if args.slurm is not None else {}
        args.backfill_params = {**from_conf, **items} or None
        check_backfill_params(args.backfill_params)
    elif args.backfill_param:
        raise ConfigError(f"--backfill_param sets --backfill_policy slurm's settings, not {backfill}'s")
    if args.rejects and args.on_bad_row != "skip":
        raise ConfigError("--rejects needs --on_bad_row skip (only skipped rows are written)")
    from ..trace.timestamps import resolve_zone

    if args.timezone is not None:
        resolve_zone(args.timezone)  # before reading: an unknown zone is an error for any trace
    return backfill, model


def load_machine(path: str):
    """A machine description from a YAML file (the ``system`` config group's format)."""
    import yaml

    from ..errors import ConfigError
    from ..sim.machine import machine_from_mapping

    from ..files import read_input

    try:
        data = yaml.safe_load(read_input(path, INPUT_OPTIONS["system"], noun="machine description"))
    except yaml.YAMLError as exc:  # one line: where, and what the parser found
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}: " if mark is not None else f"{path}: "
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        column = f" (column {mark.column + 1})" if mark is not None else ""
        raise ConfigError(f"{where}not valid YAML: {what}{column}") from None
    try:
        return machine_from_mapping(data or {})
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _apply_slurm_conf(args: argparse.Namespace) -> None:
    """``--slurm-conf``: read it (``args.slurm``), warn once about what it says that is not
    modelled, and take its priority and backfilling where the command line names none."""
    args.slurm = None
    if getattr(args, "slurm_conf", None):
        from ..trace.slurm_conf import read_slurm_conf

        args.slurm = read_slurm_conf(args.slurm_conf)
        if args.slurm.ignored:
            _warn(f"{args.slurm_conf}: not modelled, ignored (docs/slurm.md): "
                  f"{'; '.join(args.slurm.ignored)}")
    args.priority_policy = args.priority_policy or (args.slurm.priority if args.slurm else "fcfs")
    args.backfill_policy = args.backfill_policy or (args.slurm.backfill if args.slurm else "easy")


def _read_associations(args: argparse.Namespace) -> None:
    """``--associations`` (and ``--qos``): read them before the trace (``args.limits``; None
    without), warn once about what is not modelled; they need Slurm's backfill."""
    from ..errors import ConfigError

    args.limits = None
    if not getattr(args, "associations", None):
        if getattr(args, "qos", None):
            raise ConfigError("--qos gives the QOS of the associations: add --associations")
        return
    from ..trace.associations import read_associations

    args.associations_read = read_associations(args.associations, args.qos)
    if args.associations_read.ignored:
        _warn(f"{args.associations}: not modelled, ignored (docs/slurm.md): "
              f"{'; '.join(args.associations_read.ignored)}")
    args.limits = args.associations_read.enforced(args.slurm.enforce if args.slurm else None)
    if args.slurm is not None and args.limits is not args.associations_read:
        _warn(f"{args.slurm_conf}: AccountingStorageEnforce has no 'limits', so Slurm enforces no association "
              f"or QOS limit: --associations gives shares and QOS priorities"
              f"{' and rejects jobs without an association' if args.limits is not None else ''} only")
    if args.limits is not None and args.limits.has_limits() and args.backfill_policy != "slurm":
        raise ConfigError(f"--associations: association and QOS limits are enforced by Slurm's backfill "
                          f"(--backfill_policy slurm, or a --slurm-conf with SchedulerType=sched/backfill); "
                          f"--backfill_policy {args.backfill_policy} would ignore them")


def _association_priority(args: argparse.Namespace, jobs) -> None:
    """Multifactor's shares and QOS factors from the associations (unless --priority_param sets
    the key)."""
    assoc = getattr(args, "associations_read", None)
    if assoc is None or args.priority_params is None:
        return
    extra, notes = assoc.priority_params(jobs.group_names, jobs.user_names)
    for note in notes:
        _warn(f"{args.associations}: {note}")
    given = {p.split("=", 1)[0].split(".", 1)[0] for p in args.priority_param}
    if "user_shares" in given:  # the command line's user shares win over sacctmgr's
        given.add("association_shares")
    args.priority_params = {**args.priority_params, **{k: v for k, v in extra.items() if k not in given and v}}


def _machine(args: argparse.Namespace, total_nodes: int):
    """The machine the command line describes: --system, --partitions, else one pool."""
    from ..errors import ConfigError
    from ..sim.machine import Machine, parse_partitions

    node_options = [f"--{name}" for name in ("cores_per_node", "gpus_per_node", "memory_per_node")
                    if getattr(args, name) is not None]
    if args.sharing != "exclusive":
        node_options.append("--sharing")
    slurm_conf = getattr(args, "slurm_conf", None)
    for whole, given in (("--system", args.system), ("--slurm-conf", slurm_conf)):
        if given and (args.partitions or args.total_nodes or node_options
                      or (args.system and slurm_conf)):
            raise ConfigError(f"{whole} describes the whole machine: it cannot be combined with "
                              f"--system, --slurm-conf, --partitions, --total_nodes or per-node options")
    if getattr(args, "slurm", None) is not None:
        from ..sim.machine import machine_from_mapping

        try:
            return machine_from_mapping(args.slurm.system)
        except ConfigError as exc:
            raise ConfigError(f"{slurm_conf}: {exc}") from None
    if args.system:
        return load_machine(args.system)
    if args.partitions:
        if args.total_nodes:
            raise ConfigError("--partitions gives the node counts: drop --total_nodes")
        return parse_partitions(args.partitions, args.cores_per_node, args.gpus_per_node,
                                args.memory_per_node, args.sharing)
    if node_options:
        raise ConfigError(f"{', '.join(node_options)} describe the nodes of --partitions")
    return Machine.single_pool(total_nodes)


def _priority_params(items: list[str], option: str = "--priority_param") -> dict:
    """``KEY=VALUE`` strings (dotted keys nest: ``weights.age=10``) as a dict; values are
    numbers, true/false, or text."""
    from ..errors import ConfigError

    params: dict = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option} expects KEY=VALUE, got '{item}'")
        value: object = text.strip()
        if value in ("true", "false"):
            value = value == "true"
        else:
            try:
                value = float(value)
            except ValueError:
                pass
        parts = key.strip().split(".")
        where = params
        for part in parts[:-1]:
            where = where.setdefault(part, {})
            if not isinstance(where, dict):
                raise ConfigError(f"{option} {key}: '{part}' is not a group of parameters")
        where[parts[-1]] = value
    return params


def _check_paths(args: argparse.Namespace) -> None:
    """The trace must be a regular, readable file, and no output may name an input
    (``INPUT_OPTIONS``) or the same file as another output."""
    from ..files import check_input, check_outputs

    check_input(args.trace)
    check_outputs(
        {f"--{name}": getattr(args, name) for name in OUTPUT_OPTIONS},
        inputs={what: getattr(args, name) for name, what in INPUT_OPTIONS.items()},
    )


def _report_reading(jobs, options) -> None:
    """Warnings about rows the reader excluded or skipped, and its notes."""
    meta = jobs.meta
    if meta.excluded:
        total = sum(meta.excluded.values())
        from ..names import display_name

        reasons = ", ".join(f"{display_name(reason, QUEUE_LABEL_LIMIT)} ({count})"
                            for reason, count in meta.excluded.items())
        hint = " (--queues all keeps every queue)" if "queue" in reasons else ""
        _warn(f"{total} rows excluded: {reasons}{hint}")
    if meta.rejects:
        counts: dict[str, int] = {}
        for reject in meta.rejects:
            counts[reject.reason] = counts.get(reject.reason, 0) + 1
        reasons = ", ".join(f"{reason} ({count})" for reason, count in counts.items())
        where = f"; written to '{options.rejects_path}'" if options.rejects_path else ""
        _warn(f"{len(meta.rejects)} bad rows skipped: {reasons}{where}")
    for what, count in meta.notes.items():
        _note(f"{what}: {count}")


_REPORTED_ABOVE = ("rejected_oversized", "rejected_capacity")  # reported with the jobs' rows instead
_REJECT_TEXT = {  # drevt_sweep.sim.machine.REJECT_REASONS
    "no_partition": "their queue/partition maps to no partition",
    "unknown_partition": "their partition is not one the machine has",
    "multi_partition": "submitted to several partitions (a,b) in different node pools, which is not "
                       "modelled yet (docs/slurm.md)",
    "nodes": "more nodes than their partition has",
    "cores": "more cores per node than a node has",
    "gpus": "more GPUs per node than a node has",
    "memory": "more memory per node than a node has",
    "partition_max_nodes": "more nodes than their partition's MaxNodes",
    "partition_time_limit": "a time limit above their partition's MaxTime",
    "partition_default_time": "no time limit, and their partition's DefaultTime is 0 (Slurm refuses them)",
    "no_association": "their user has no association in their account (--associations)",
    "assoc_max_wall": "a time limit above their association's MaxWall",
    "qos_max_wall": "a time limit above their QOS's MaxWall",
    "assoc_job_limit": "more than an association limit allows any job (MaxTRES, GrpTRES, MaxJobs=0...)",
    "qos_job_limit": "more than a QOS limit allows any job (MaxTRES, GrpTRES, MaxTRESPU, MaxJobsPU=0...)",
}
_ASSOC_REJECTS = ("no_association", "assoc_max_wall", "qos_max_wall", "assoc_job_limit", "qos_job_limit")
_LIMIT_TEXT = {  # refused at submission by Slurm's backfill with --associations (sim.limits)
    "assoc_max_submit": "submitted over their association's MaxSubmitJobs (Slurm refuses it)",
    "assoc_grp_submit": "submitted over an account's GrpSubmitJobs (Slurm refuses it)",
    "qos_max_submit_pu": "submitted over their QOS's MaxSubmitJobsPerUser (Slurm refuses it)",
}
_WARNING_TEXT = {
    "replay_overcommit_instants": "the recorded schedule uses more than {total_nodes} nodes at "
    "{count} instants (is --total_nodes smaller than the traced machine?); utilization can "
    "exceed 100%",
    "replay_begin_before_submit": "{count} jobs are recorded as starting before they were "
    "submitted (their waits are negative)",
}


def _report_schedule(jobs, schedule) -> None:
    import numpy as np

    from ..sim.capacity import IRREGULAR_GAP

    rejected = np.flatnonzero(schedule.rejected)
    if rejected.size:
        listed = ", ".join(
            f"job {i} (line {int(jobs.source_line[i])}, {int(jobs.num_nodes[i])} nodes)"
            for i in rejected[:MAX_LISTED].tolist()
        )
        more = ", ..." if rejected.size > MAX_LISTED else ""
        if schedule.placement is not None:
            counts = dict(schedule.placement.counts())
            counts.update({k: v for k, v in schedule.warnings.items()  # refused at submission
                           if k.startswith("rejected_") and k[len("rejected_"):] in _LIMIT_TEXT})
            reasons = ", ".join(f"{_REJECT_TEXT.get(key[len('rejected_'):]) or _LIMIT_TEXT[key[len('rejected_'):]]}"
                                f" ({count})" for key, count in counts.items())
            slurm_limits = any(key[len("rejected_"):] in _LIMIT_TEXT or key[len("rejected_"):] in _ASSOC_REJECTS
                               for key in counts)
            what = (f"cannot run under the machine's partitions or Slurm's association/QOS limits ({reasons})"
                    if slurm_limits else f"fit no partition of the machine ({reasons})")
        elif "rejected_capacity" in schedule.warnings:
            what = ("can never run within the machine's capacity schedule (too large for it "
                    "throughout their time limit)")
        else:
            what = f"ask for more nodes than the machine has ({schedule.total_nodes})"
        _warn(
            f"{rejected.size} jobs {what} and were rejected (never run, left out of the "
            f"statistics): {listed}{more}"
        )
        dst = schedule.warnings.get(IRREGULAR_GAP, 0)
        if dst:
            _warn(f"{dst} of them would fit only the longer gap between two maintenance windows "
                  f"of a DST day (25 h between daily windows, or a day without its window); only "
                  f"the regular gaps count")
    killed = np.flatnonzero(np.asarray(schedule.killed) & ~np.asarray(schedule.rejected))
    if killed.size:
        listed = ", ".join(f"job {i}" for i in killed[:MAX_LISTED].tolist())
        more = ", ..." if killed.size > MAX_LISTED else ""
        _warn(
            f"{killed.size} jobs ran longer than their time limit and were killed at it "
            f"({listed}{more}); --no_enforce_limits lets them run on"
        )
    for what, count in schedule.warnings.items():
        if not count or what in _REPORTED_ABOVE or what.startswith("rejected_"):
            continue
        if what in _WARNING_TEXT:
            _warn(_WARNING_TEXT[what].format(count=count, total_nodes=schedule.total_nodes))
        else:
            _warn(f"{what.replace('_', ' ')}: {count}")


def _report_calendar_end(schedule, capacity) -> None:
    """Jobs that started after the generated maintenance calendar ran out saw no maintenance."""
    import numpy as np

    if capacity is None or not np.isfinite(capacity.recurring_from):
        return
    with np.errstate(invalid="ignore"):
        late = int((schedule.begin >= capacity.recurring_from).sum())
    if late:
        _warn(f"{late} jobs started after the generated maintenance windows end (the last "
              "submit + the maintenance horizon); no maintenance was applied to them "
              "(a longer maintenance horizon covers them)")


def per_job_text(jobs, schedule) -> str:
    """``Job <row> starts at <begin>, ends at <end>`` for every row (vectorised)."""
    import numpy as np

    from ..outputs import _category_bytes, format_number_column, format_rows

    n = len(jobs)
    if n == 0:
        return ""
    rejected = np.asarray(schedule.rejected, dtype=bool)
    killed = np.asarray(schedule.killed, dtype=bool) & ~rejected
    kind = np.where(rejected, 2, np.where(killed, 1, 0))
    first = np.where(rejected, jobs.num_nodes.astype(np.float64), schedule.begin)
    second = np.where(rejected, float(schedule.total_nodes), schedule.end)

    def text(*choices):
        return _category_bytes(kind, choices, quote=False)

    over, after = " nodes, more than the machine's ", ""
    if schedule.placement is not None:  # partitions: say why, per job
        from ..sim.machine import REJECT_REASONS

        reason = np.asarray(schedule.placement.reason, dtype=np.int64)
        kind = np.where(rejected, 2 + np.maximum(reason - 1, 0), kind)
        first = np.where(rejected, jobs.num_nodes.astype(np.float64), schedule.begin)
        second = np.where(rejected, float(schedule.total_nodes), schedule.end)
        why = tuple(f" nodes; {_REJECT_TEXT[r].replace('their', 'its')} (machine: " for r in REJECT_REASONS)
        data = format_rows(
            [
                b"Job ",
                format_number_column(np.arange(n, dtype=np.int64)),
                _category_bytes(kind, (" starts at ", " starts at ") + (" rejected: needs ",) * len(why),
                                quote=False),
                format_number_column(first),
                _category_bytes(kind, (", ends at ", ", ends at ") + why, quote=False),
                format_number_column(second),
                _category_bytes(kind, ("", " (killed at its time limit)") + (" nodes)",) * len(why),
                                quote=False),
                b"\n",
            ],
            n,
        )
        return data.decode("utf-8")
    if "rejected_capacity" in schedule.warnings:  # a capacity schedule (drevt_sweep.workload)
        over, after = " nodes, never free for its whole time limit (capacity schedule, base ", ")"
    data = format_rows(
        [
            b"Job ",
            format_number_column(np.arange(n, dtype=np.int64)),
            text(" starts at ", " starts at ", " rejected: needs "),
            format_number_column(first),
            text(", ends at ", ", ends at ", over),
            format_number_column(second),
            text("", " (killed at its time limit)", after),
            b"\n",
        ],
        n,
    )
    return data.decode("utf-8")


# The statistics block: (metric, label, unit); durations also get a human-readable form.
_STAT_ROWS = (
    ("jobs_simulated", "jobs simulated", ""),
    ("jobs_rejected", "jobs rejected", ""),
    ("jobs_killed", "jobs killed", ""),
    ("wait_mean", "wait mean", "s"),
    ("wait_median", "wait median", "s"),
    ("wait_p90", "wait p90", "s"),
    ("wait_p95", "wait p95", "s"),
    ("wait_p99", "wait p99", "s"),
    ("wait_max", "wait max", "s"),
    ("turnaround_mean", "turnaround mean", "s"),
    ("bsld_mean", "bounded slowdown mean", ""),
    ("bsld_p95", "bounded slowdown p95", ""),
    ("utilization", "utilization", "%"),
    ("makespan", "makespan", "s"),
    ("throughput", "throughput", "jobs/h"),
    ("queue_length_mean", "queue length mean", "jobs"),
    ("queue_length_max", "queue length max", "jobs"),
)
_QUEUE_COLUMNS = (
    ("jobs_simulated", "jobs"),
    ("wait_mean", "wait mean s"),
    ("wait_p95", "wait p95 s"),
    ("bsld_mean", "bsld mean"),
    ("utilization", "util %"),
)


def _human_duration(seconds: float) -> str:
    if not math.isfinite(seconds) or seconds < 60:
        return ""
    units = (("d", 86400), ("h", 3600), ("min", 60), ("s", 1))
    parts = []
    rest = int(round(seconds))
    for name, size in units:
        if rest >= size:
            parts.append(f"{rest // size} {name}")
            rest %= size
        if len(parts) == 2:
            break
    return f"({' '.join(parts)})"


def _format_value(key: str, value: float, unit: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    if key.startswith("jobs_") or key == "queue_length_max":
        return f"{int(value)}"
    if unit == "%":
        return f"{100.0 * value:.2f}"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    if value == int(value):
        return f"{int(value)}"
    if abs(value) >= 1000:
        return f"{value:.1f}"
    return f"{value:.3f}".rstrip("0").rstrip(".")


_PARTITION_COLUMNS = (
    ("jobs_simulated", "jobs"),
    ("jobs_rejected", "rejected"),
    ("wait_mean", "wait mean s"),
    ("wait_p95", "wait p95 s"),
    ("bsld_mean", "bsld mean"),
    ("node_utilization", "node %"),
    ("core_utilization", "core %"),
    ("gpu_utilization", "gpu %"),
)


def _table(title: str, first: str, names, key, columns) -> list[str]:
    """An aligned table of metrics, one row per name (``key(name, metric)`` -> value or None)."""
    rows = [[first, *[label for _, label in columns]]]
    for name in names:
        row = [name]
        for metric, _ in columns:
            value = key(name, metric)
            unit = "%" if metric.endswith("utilization") else ""
            row.append("-" if value is None else _format_value(metric, value, unit))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = ["", f"  {title}:"]
    for row in rows:
        cells = [f"{row[0]:<{widths[0]}}"] + [f"{c:>{w}}" for c, w in zip(row[1:], widths[1:])]
        lines.append("    " + "  ".join(cells))
    return lines


def statistics_text(metrics: dict[str, float], heading: str, queue_names=(), partition_names=(),
                    queue_keys=None) -> str:
    """The aligned, human-readable statistics block; ``queue_keys`` is the run's key registry
    (``names.run_queue_keys``; default: one of ``queue_names``)."""
    from ..names import QueueKeys

    queue_keys = queue_keys or QueueKeys(queue_names)
    partition_keys = QueueKeys(partition_names)
    lines = [heading]
    label_width = max(len(label) for _, label, _ in _STAT_ROWS)
    values = [_format_value(key, metrics.get(key, math.nan), unit) for key, _, unit in _STAT_ROWS]
    value_width = max(len(v) for v in values)
    for (key, label, unit), value in zip(_STAT_ROWS, values):
        line = f"  {label:<{label_width}}  {value:>{value_width}}"
        if unit and value != "n/a":
            line += f" {unit}"
        if unit == "s":
            line += f"  {_human_duration(metrics.get(key, math.nan))}".rstrip()
        lines.append(line.rstrip())
    if len(queue_names) > 1:
        from ..names import display_name
        from ..sim.metrics import metric_key_for_queue

        table = [["queue", *[title for _, title in _QUEUE_COLUMNS]]]
        for name in queue_names:
            if metric_key_for_queue(name, "jobs_simulated", queue_keys) not in metrics:
                continue
            row = [display_name(name, QUEUE_LABEL_LIMIT, queue_keys(name))]
            for key, _ in _QUEUE_COLUMNS:
                unit = "%" if key == "utilization" else ""
                row.append(_format_value(key, metrics[metric_key_for_queue(name, key, queue_keys)], unit))
            table.append(row)
        widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
        lines.append("")
        lines.append("  per queue:")
        for row in table:
            cells = [f"{row[0]:<{widths[0]}}"] + [
                f"{cell:>{width}}" for cell, width in zip(row[1:], widths[1:])
            ]
            lines.append("    " + "  ".join(cells))
    if partition_names:
        from ..sim.metrics import metric_key_for_queue

        def partition_value(name, metric):
            safe = metric_key_for_queue(name, metric, partition_keys).replace("queue/", "partition/", 1)
            return metrics.get(safe)

        lines.extend(_table("per partition", "partition", partition_names, partition_value,
                            _PARTITION_COLUMNS))
        for metric, label in (("core_utilization", "core utilization"), ("gpu_utilization", "GPU utilization")):
            if metric in metrics:
                lines.append(f"  {label}: {_format_value(metric, metrics[metric], '%')} %")
    return "\n".join(lines) + "\n"


def _heading(jobs, schedule, args, backfill, model) -> str:
    from ..sim.runtime import is_stochastic

    name = os.path.basename(args.trace)
    if schedule.mode == "replay":
        how = "replay of the trace's recorded times"
    else:
        how = f"simulation, priority {args.priority_policy}, backfill {backfill}"
        if args.estimate != "user" or args.backfill_order != "fcfs":
            how += f" (estimates {args.estimate}, backfill order {args.backfill_order})"
        if args.estimate == "user_history" and args.estimate_refresh != "submit":
            how += f" (predictions refreshed {args.estimate_refresh})"
        if backfill == "conservative" and args.compression != "compress_first":
            how += f" ({args.compression})"
        how += ", run times "
        how += model.name
        if model.mode == "distribution":
            how += f" (scale {model.scale:g}, stddev {model.stddev:g}, seed {args.seed})"
            if not is_stochastic(model):
                how = how.replace(f", seed {args.seed}", "")
        if not args.enforce_limits:
            how += ", limits not enforced"
    where = f"{schedule.total_nodes} nodes"
    if schedule.machine is not None:
        where += " in partitions " + ", ".join(
            f"{p.name} ({p.nodes}{', shared' if p.shared else ''})" for p in schedule.machine.partitions)
    return f"Statistics: {name}, {len(jobs)} jobs on {where}, {how}"


def _run_info(jobs, schedule, args, backfill, model) -> dict:
    from .. import __version__
    from ..names import excluded_key, run_queue_keys

    meta = jobs.meta
    keys = run_queue_keys(jobs)
    simulated = schedule.mode != "replay"
    return {
        "tool": PROG,
        "version": __version__,
        "trace": {
            "path": meta.path,
            "format": meta.trace_format,
            "checksum": meta.checksum,
            "mode": meta.mode,
            "timestamp_format": meta.timestamp_format,
            "timezone": meta.timezone,
            "machine_nodes": meta.machine_nodes,
            "rows_read": meta.rows_read,
            "rows_kept": meta.rows_kept,
            "jobs": len(jobs),
            "excluded": {excluded_key(reason, keys): count for reason, count in meta.excluded.items()},
            "queue_keys": keys.key_map(),
            "rows_skipped": len(meta.rejects),
        },
        "run": {
            "mode": schedule.mode,
            "total_nodes": schedule.total_nodes,
            "priority_policy": args.priority_policy if simulated else None,
            "backfill_policy": backfill if simulated else None,
            "compression": args.compression if simulated and backfill == "conservative" else None,
            "estimate": args.estimate if simulated else None,
            "backfill_order": args.backfill_order if simulated else None,
            "estimate_refresh": args.estimate_refresh if simulated else None,
            "priority_params": args.priority_params if simulated else None,
            "backfill_params": args.backfill_params if simulated else None,
            "enforce_limits": args.enforce_limits if simulated else None,
            "run_time": model.as_params() if simulated else None,
            "seed": args.seed if simulated else None,
        },
        "warnings": dict(schedule.warnings),
    }


def run(args: argparse.Namespace) -> int:
    """Everything after argument parsing; raises ``DrevtError`` on bad input."""
    backfill, model = _check_options(args)
    _check_paths(args)

    from ..trace import ReadOptions, read_trace

    options = ReadOptions(
        trace_format=args.trace_format,
        timestamp_format=args.timestamp_format,
        timezone=args.timezone,
        queues=args.queues,
        on_bad_row=args.on_bad_row,
        rejects_path=args.rejects,
        force_simulation=args.force_simulation,
        swf_missing_time_limit=args.swf_missing_time_limit,
    )
    jobs = read_trace(args.trace, options)
    _report_reading(jobs, options)
    jobs = _transform_jobs(jobs, args, _warn)

    total_nodes = args.total_nodes or jobs.meta.machine_nodes
    if not total_nodes and not (args.system or args.partitions or args.slurm_conf):
        total_nodes = DEFAULT_TOTAL_NODES
        _note(
            f"the trace states no machine size and --total_nodes is not given: "
            f"using {DEFAULT_TOTAL_NODES} nodes (Lassen)"
        )
    from ..sim.partitioned import replay_machine, simulate_machine

    machine = _machine(args, total_nodes or DEFAULT_TOTAL_NODES)
    if args.slurm is not None and args.on_bad_row == "error":
        from ..sim.machine import check_partitions_defined

        check_partitions_defined(jobs, machine, args.slurm_conf, "pass --on_bad_row skip")
    if args.slurm is not None and args.priority_params is not None and not any(
            p.startswith("partition_priority") for p in args.priority_param):
        # PriorityJobFactor of the partitions this trace has (multifactor refuses others)
        factors = args.slurm.params_for(jobs.queue_names)
        args.priority_params = {**args.priority_params, "partition_priority": factors["partition_priority"]}
    if jobs.meta.mode == "replay":
        if args.run_time_mode in ("limit", "distribution"):
            _warn(
                f"--run_time_mode {args.run_time_mode} is ignored: this trace is replayed with "
                f"its recorded times (--force-simulation simulates it instead)"
            )
        schedule = replay_machine(jobs, machine)
    else:
        from ..sim.machine import slurm_job_settings
        from ..sim.runtime import draw_run_times

        _association_priority(args, jobs)
        factors = (args.priority_params or {}).get("partition_priority")
        jobs = slurm_job_settings(jobs, machine, factors)  # several partitions; DefaultTime/MaxTime
        run_times = draw_run_times(jobs, model, args.seed, enforce_limits=args.enforce_limits)
        progress = _Progress.for_run(args, len(jobs), jobs.submit)
        schedule = simulate_machine(
            jobs,
            run_times,
            machine,
            priority=args.priority_policy,
            backfill=backfill,
            enforce_limits=args.enforce_limits,
            capacity=getattr(args, "workload_capacity", None),
            estimate=args.estimate,
            backfill_order=args.backfill_order,
            estimate_refresh=args.estimate_refresh,
            priority_params=args.priority_params,
            compression=args.compression,
            progress=progress.update if progress else None,
            backfill_params=args.backfill_params,
            limits=args.limits,
        )
        if progress:
            progress.close()
    _report_schedule(jobs, schedule)
    _report_calendar_end(schedule, getattr(args, "workload_capacity", None))

    from ..sim.metrics import compute_metrics

    metrics = compute_metrics(jobs, schedule)

    if args.output or args.resource_trace or args.stats:
        from .. import outputs

        if args.output:
            outputs.write_schedule_csv(args.output, jobs, schedule)
        if args.resource_trace:
            outputs.write_resource_csv(args.resource_trace, jobs, schedule)
        if args.stats:
            info = _run_info(jobs, schedule, args, backfill, model)
            info["workload"] = getattr(args, "workload_report", None)
            outputs.write_stats_json(args.stats, metrics, info)

    if not args.quiet:
        chunks = []
        if args.per_job or len(jobs) <= PER_JOB_AUTO_LIMIT:
            chunks.append(per_job_text(jobs, schedule))
            chunks.append("\n")
        import numpy as np

        present = [jobs.queue_names[c] for c in np.unique(jobs.queue_code).tolist()]
        heading = _heading(jobs, schedule, args, backfill, model)
        parts = schedule.machine.partition_names if schedule.machine is not None else ()
        from ..names import run_queue_keys

        chunks.append(statistics_text(metrics, heading, present, parts, run_queue_keys(jobs)))
        sys.stdout.write("".join(chunks))
        sys.stdout.flush()
    return 0


class _Progress:
    """One self-rewriting line on stderr while a simulation runs: simulated time reached, jobs
    done, rate. Only on a terminal (never in CI logs or pipes), never with ``--quiet``, and only
    once the run has lasted ``AFTER_SECONDS`` (short runs print nothing)."""

    AFTER_SECONDS = 2.0
    EVERY_SECONDS = 0.25

    @classmethod
    def for_run(cls, args, n_jobs: int, submit) -> "_Progress | None":
        if args.quiet or os.environ.get("CI") or not sys.stderr.isatty() or n_jobs == 0:
            return None
        return cls(n_jobs, float(submit.min()))

    def __init__(self, n_jobs: int, t0: float) -> None:
        import time

        self.clock = time.monotonic
        self.start = self.last = self.clock()
        self.n_jobs = n_jobs
        self.t0 = t0
        self.shown = False

    def update(self, now: float, done: int) -> None:
        tick = self.clock()
        elapsed = tick - self.start
        if elapsed < self.AFTER_SECONDS or tick - self.last < self.EVERY_SECONDS:
            return
        self.last = tick
        self.shown = True
        days = (now - self.t0) / 86400
        sys.stderr.write(f"\r{PROG}: simulated day {days:,.1f}, {done:,}/{self.n_jobs:,} jobs done, "
                         f"{done / elapsed:,.0f} jobs/s, {elapsed:.0f} s\033[K")
        sys.stderr.flush()

    def close(self) -> None:
        if self.shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``drevt-sim`` console script; returns the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage (or --help / --version)
        if exc.code is None:
            return 0
        return exc.code if isinstance(exc.code, int) else 2

    from ..errors import DrevtError

    try:
        return run(args)
    except DrevtError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"\r\033[K{PROG}: interrupted" if sys.stderr.isatty() else f"{PROG}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `drevt-sim ... | head`: stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except OSError as exc:  # the environment (a file, a disk), not a bug
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"{PROG}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except Exception as exc:  # a bug, not the user's fault
        if os.environ.get("DREVT_DEBUG"):
            raise
        from ..errors import describe

        print(
            f"{PROG}: internal error: {describe(exc)}\n"
            f"{PROG}: this is a bug; rerun with DREVT_DEBUG=1 to see the traceback",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    from ..process_exit import leave

    leave(main())  # (not sys.exit: an interrupted python -m run could end by SIGINT, process_exit)
