"""A stand-in for SLURM's sbatch, srun, sacct and scancel on one machine, for tests.

It does just enough for submitit (and so ``hydra/launcher=slurm``) to run unchanged: ``sbatch``
reads the ``#SBATCH`` lines of the script submitit wrote, answers ``Submitted batch job N`` and
starts every task of the job array as a local background process with SLURM's environment
variables; ``srun`` runs its command with the ``--output``/``--error`` patterns expanded;
``sacct`` knows nothing (submitit then waits for the result files); ``scancel`` stops the
tasks. The processes started are listed in ``$FAKE_SLURM_DIR/pids`` so that a test can stop
any that are left.

    python fake_slurm.py sbatch|srun|sacct|scancel ARGS...
"""

from __future__ import annotations

import fcntl
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

STATE = Path(os.environ.get("FAKE_SLURM_DIR", "/tmp/fake-slurm"))


def _next_job_id() -> int:
    STATE.mkdir(parents=True, exist_ok=True)
    with open(STATE / "counter", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        handle.seek(0)
        last = int(handle.read().strip() or 1000)
        handle.seek(0)
        handle.truncate()
        handle.write(str(last + 100))
    return last + 100


def _expand(pattern: str, env: dict[str, str]) -> str:
    for code, var in (("%A", "SLURM_ARRAY_JOB_ID"), ("%a", "SLURM_ARRAY_TASK_ID"),
                      ("%j", "SLURM_JOB_ID")):
        pattern = pattern.replace(code, env.get(var, env["SLURM_JOB_ID"]))
    return pattern.replace("%t", env.get("SLURM_PROCID", "0"))


def sbatch(args: list[str]) -> int:
    script = Path(args[-1])
    text = script.read_text()
    options = {}
    for name, value in re.findall(r"^#SBATCH --([\w-]+)(?:=(.*))?$", text, re.M):
        options[name] = value
    job_id = _next_job_id()
    (STATE / f"{job_id}.sbatch").write_text(text)
    indices: list[int | None] = [None]
    if "array" in options:
        first, last = re.match(r"(\d+)-(\d+)", options["array"]).groups()
        indices = list(range(int(first), int(last) + 1))
    for offset, index in enumerate(indices):
        env = {**os.environ, "SLURM_JOB_ID": str(job_id + offset + (index is not None)),
               "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": "localhost", "SLURM_NTASKS": "1",
               "SLURM_CPUS_PER_TASK": options.get("cpus-per-task", "1")}
        if index is not None:
            env.update(SLURM_ARRAY_JOB_ID=str(job_id), SLURM_ARRAY_TASK_ID=str(index))
        out = Path(_expand(options.get("output", "slurm-%j.out"), env))
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a") as handle:
            proc = subprocess.Popen(["bash", str(script)], env=env, stdin=subprocess.DEVNULL,
                                    stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
        with open(STATE / "pids", "a") as handle:
            handle.write(f"{proc.pid}\n")
    print(f"Submitted batch job {job_id}")
    return 0


def srun(args: list[str]) -> int:
    env = {**os.environ, "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NODEID": "0"}
    output = error = None
    while args and args[0].startswith("-"):
        option = args.pop(0)
        if option in ("--output", "-o"):
            output = args.pop(0)
        elif option in ("--error", "-e"):
            error = args.pop(0)
    if output:
        fd = os.open(_expand(output, env), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 1)
        if not error:
            os.dup2(fd, 2)
    if error:
        fd = os.open(_expand(error, env), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        os.dup2(fd, 2)
    os.execvpe(args[0], args, env)
    return 127


def sacct(args: list[str]) -> int:
    print("JobID|State|NodeList")  # no record: submitit waits for the tasks' result files
    return 0


def scancel(args: list[str]) -> int:
    stop_all()
    return 0


def stop_all() -> None:
    """Stop every task process group still running (for test teardown)."""
    try:
        pids = [int(p) for p in (STATE / "pids").read_text().split()]
    except OSError:
        return
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass


if __name__ == "__main__":
    command, rest = sys.argv[1], sys.argv[2:]
    sys.exit({"sbatch": sbatch, "srun": srun, "sacct": sacct, "scancel": scancel}[command](rest))
