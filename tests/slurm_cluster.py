"""A real Slurm on loopback, for tests (issue 26 item 5): Debian's ``slurm-wlm``, ``slurmdbd``,
``munge`` and ``mariadb-server``, every daemon started here in a temporary folder and stopped here.

Why each piece: ``slurmctld`` and one ``slurmd`` per node (Debian builds Slurm with multiple-slurmd
support, so ``slurmd -N n1`` ... ``-N n4`` give a 4-node cluster on one host); ``munged`` with a
key of its own on a socket of its own (Slurm's ``AuthInfo=socket=`` and
``AccountingStoragePass=``); ``slurmdbd`` on a MariaDB of its own, because without it Slurm
ignores the age and fair-share priority weights ("PriorityWeightAge can only be used with
SlurmDBD") and ``sacct`` has nothing to read. No cgroups (``ProctrackType=proctrack/pgid``,
``TaskPlugin=task/none``), so it also runs in a container.

:func:`start_cluster` returns a :class:`SlurmCluster` whose ``stop()`` cancels the jobs left and
ends every process it started (by its own ``Popen``, never by name), also after a failure.
:func:`missing` names what is not installed, for a skip reason.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

SLURM_PROGRAMS = ("munged", "slurmctld", "slurmd", "slurmdbd", "sbatch", "sacct", "sacctmgr",
                  "squeue", "scontrol", "scancel", "sinfo")
DB_PROGRAMS = ("mariadbd", "mariadb-install-db", "mariadb")
SBIN = ("/usr/sbin", "/usr/local/sbin", "/sbin")
INSTALL = "apt-get install slurm-wlm slurmdbd munge mariadb-server (what .ci/run does)"


def which(name: str) -> str | None:
    """A program on PATH or in an sbin folder (Debian puts the daemons in /usr/sbin, often not
    on a user's PATH)."""
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN))


def missing() -> list[str]:
    """The programs a cluster needs that are not installed here."""
    return [name for name in SLURM_PROGRAMS + DB_PROGRAMS if which(name) is None]


def free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind(("127.0.0.1", 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


class ClusterError(RuntimeError):
    pass


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    nodes: list[str]
    env: dict
    procs: list[tuple[str, subprocess.Popen]] = field(default_factory=list)

    # --- commands ----------------------------------------------------------------------
    def run(self, *args: str, timeout: float = 30, check: bool = True) -> str:
        """A Slurm client command against this cluster; its stdout."""
        proc = subprocess.run([which(args[0]) or args[0], *args[1:]], env=self.env, capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if check and proc.returncode:
            raise ClusterError(f"{' '.join(args)}: exit {proc.returncode}: {proc.stderr.strip()}"
                               f"{self.logs_tail()}")
        return proc.stdout

    def submit(self, *options: str, command: str) -> int:
        """``sbatch --parsable OPTIONS --wrap COMMAND``; the job id."""
        out = self.run("sbatch", "--parsable", f"--chdir={self.root}", "--output=/dev/null",
                       *options, "--wrap", command)
        return int(out.strip().split(";")[0])

    def queued(self) -> list[str]:
        return self.run("squeue", "-h", "-o", "%i").split()

    def wait_empty(self, timeout: float) -> None:
        """Until no job is pending or running (jobs and their accounting records done)."""
        deadline = time.monotonic() + timeout
        while self.queued():
            if time.monotonic() > deadline:
                raise ClusterError(f"jobs still queued after {timeout:.0f} s: "
                                   f"{self.run('squeue', '-o', '%i %T %r %S')}")
            time.sleep(0.5)

    def sacct(self, job_ids, fields: str, timeout: float = 30) -> str:
        """``sacct -a -X -P --format=FIELDS`` for ``job_ids`` once slurmdbd has every one of them
        ended (slurmctld sends the records a moment after the jobs end)."""
        wanted = {str(j) for j in job_ids}
        deadline = time.monotonic() + timeout
        while True:
            text = self.run("sacct", "-a", "-X", "-P", f"--jobs={','.join(sorted(wanted))}",
                            f"--format=JobIDRaw,End,{fields}")
            rows = [line.split("|") for line in text.splitlines()[1:] if line.strip()]
            ended = {row[0] for row in rows if row[1] not in ("", "Unknown", "None")}
            if ended >= wanted:
                lines = text.splitlines()
                return "\n".join("|".join(line.split("|")[2:]) for line in lines) + "\n"
            if time.monotonic() > deadline:
                raise ClusterError(f"sacct: jobs {sorted(wanted - ended)} not ended in the accounting "
                                   f"after {timeout:.0f} s{self.logs_tail()}")
            time.sleep(0.5)

    def logs_tail(self, lines: int = 15) -> str:
        text = []
        for name in ("slurmctld.log", "slurmdbd.log"):
            path = self.root / name
            if path.is_file():
                tail = path.read_text(errors="replace").splitlines()[-lines:]
                text.append(f"\n--- {name} (last {len(tail)} lines)\n" + "\n".join(tail))
        return "".join(text)

    # --- daemons -----------------------------------------------------------------------
    def spawn(self, name: str, *cmd: str) -> subprocess.Popen:
        log = open(self.root / f"{name}.out", "ab")
        try:
            proc = subprocess.Popen([which(cmd[0]) or cmd[0], *cmd[1:]], env=self.env, stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()
        self.procs.append((name, proc))
        return proc

    def stop(self) -> None:
        """Cancel the jobs left, then end every daemon started here, newest first (SIGTERM,
        then SIGKILL after 10 s)."""
        if any(name == "slurmctld" and proc.poll() is None for name, proc in self.procs):
            try:
                jobs = self.queued()
                if jobs:
                    self.run("scancel", *jobs, check=False)
                    self.wait_empty(20)
            except (ClusterError, subprocess.TimeoutExpired, OSError):
                pass  # the daemons are ended below whatever happened
        for name, proc in reversed(self.procs):
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)
        self.procs.clear()


def _wait(what: str, ready, timeout: float, cluster: SlurmCluster, proc: subprocess.Popen | None = None):
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ready():
                return
        except (subprocess.TimeoutExpired, ClusterError, OSError):
            pass
        if proc is not None and proc.poll() is not None:
            out = (cluster.root / f"{cluster.procs[-1][0]}.out").read_text(errors="replace")[-2000:]
            raise ClusterError(f"{what}: the daemon exited with {proc.returncode}:\n{out}{cluster.logs_tail()}")
        if time.monotonic() > deadline:
            raise ClusterError(f"{what}: not ready after {timeout:.0f} s{cluster.logs_tail()}")
        time.sleep(0.2)


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def write_conf(root: Path, scheduling: str, nodes: int, node_fields: str, ports: dict) -> Path:
    """slurm.conf: the daemons' plumbing (ports, folders, munge socket, accounting) and then
    ``scheduling`` (SelectType, Priority*, SchedulerType, PartitionName lines: what drevt-sweep
    reads) and one ``NodeName`` line per node."""
    node_lines = "\n".join(f"NodeName=n{i} NodeHostname=localhost Port={ports['nodes'][i - 1]} {node_fields}"
                           for i in range(1, nodes + 1))
    text = f"""\
# Generated by tests/slurm_cluster.py: a {nodes}-node Slurm on loopback.
ClusterName=drevt
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
SlurmctldPort={ports['ctld']}
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
CredType=cred/munge
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool/%n
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.%n.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.%n.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort={ports['dbd']}
AccountingStoragePass={root}/munge.sock
ReturnToService=2
MinJobAge=600
MailProg=/bin/true
{scheduling.strip()}
{node_lines}
"""
    path = root / "slurm.conf"
    path.write_text(text)
    return path


def start_cluster(root: Path, scheduling: str, *, nodes: int = 4, node_fields: str = "CPUs=1 RealMemory=1000",
                  accounts: tuple[str, ...] = ("physics", "biology"), timeout: float = 60) -> SlurmCluster:
    """A running cluster in ``root`` (see the module docstring); the user running it (root)
    is a user of every one of ``accounts`` (the first is its default). Raises ClusterError
    (after stopping what it started) if a daemon does not come up within ``timeout`` s."""
    root.mkdir(parents=True, exist_ok=True)
    for sub in ("state", "db", *(f"spool/n{i}" for i in range(1, nodes + 1))):
        (root / sub).mkdir(parents=True, exist_ok=True)
    ctld, dbd, db, *node_ports = free_ports(3 + nodes)
    conf = write_conf(root, scheduling, nodes, node_fields, {"ctld": ctld, "dbd": dbd, "nodes": node_ports})
    user = os.environ.get("USER") or "root"
    password = secrets.token_hex(8)
    (root / "slurmdbd.conf").write_text(f"""\
AuthType=auth/munge
AuthInfo=socket={root}/munge.sock
DbdHost=localhost
DbdPort={dbd}
SlurmUser=root
PidFile={root}/slurmdbd.pid
LogFile={root}/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort={db}
StorageUser=slurm
StoragePass={password}
StorageLoc=slurm_acct_db
""")
    (root / "slurmdbd.conf").chmod(0o600)  # slurmdbd refuses a readable one
    key = root / "munge.key"
    key.write_bytes(secrets.token_bytes(1024))
    key.chmod(0o600)
    env = {**os.environ, "SLURM_CONF": str(conf), "TZ": "UTC"}
    for name in [k for k in env if k.startswith(("SLURM_", "SBATCH_", "SQUEUE_", "SACCT_")) and k != "SLURM_CONF"]:
        del env[name]  # a test run inside a Slurm job must not talk to that job's cluster
    cluster = SlurmCluster(root, conf, [f"n{i}" for i in range(1, nodes + 1)], env)
    started = time.monotonic()

    def left() -> float:
        return max(5.0, timeout - (time.monotonic() - started))

    try:
        proc = cluster.spawn("munged", "munged", "--foreground", "--force", f"--socket={root}/munge.sock",
                             f"--key-file={key}", f"--pid-file={root}/munged.pid",
                             f"--log-file={root}/munged.log", f"--seed-file={root}/munged.seed")
        _wait("munged", lambda: (root / "munge.sock").exists(), left(), cluster, proc)

        # Its own tmpdir: a MariaDB server starting deletes every "#sql*" file in its tmpdir, so two
        # clusters sharing /tmp (tests on two xdist workers) break each other's bootstrap.
        (root / "db" / "tmp").mkdir(parents=True, exist_ok=True)
        install = subprocess.run([which("mariadb-install-db"), "--no-defaults", f"--datadir={root}/db/data",
                                  "--auth-root-authentication-method=socket", "--skip-test-db",
                                  f"--user={user}", f"--tmpdir={root}/db/tmp"],
                                 capture_output=True, text=True, timeout=left(),
                                 stdin=subprocess.DEVNULL)
        if install.returncode:
            raise ClusterError(f"mariadb-install-db: exit {install.returncode}: {install.stderr[-1500:]}")
        proc = cluster.spawn("mariadbd", "mariadbd", "--no-defaults", f"--datadir={root}/db/data",
                             f"--socket={root}/db/mysql.sock", f"--port={db}", "--bind-address=127.0.0.1",
                             f"--user={user}", f"--pid-file={root}/db/mariadb.pid",
                             f"--log-error={root}/db/error.log", f"--tmpdir={root}/db/tmp",
                             "--innodb-buffer-pool-size=16M",
                             "--skip-log-bin")

        def sql(statement: str) -> bool:
            return subprocess.run([which("mariadb"), "--no-defaults", f"--socket={root}/db/mysql.sock",
                                   "-u", user, "-e", statement], capture_output=True, timeout=10,
                                  stdin=subprocess.DEVNULL).returncode == 0

        _wait("mariadbd", lambda: sql("SELECT 1"), left(), cluster, proc)
        if not sql(f"CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '{password}'; "
                   f"GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"):
            raise ClusterError("mariadb: could not create the slurm database user")

        proc = cluster.spawn("slurmdbd", "slurmdbd", "-D")  # finds slurmdbd.conf beside $SLURM_CONF
        _wait("slurmdbd", lambda: _port_open(dbd), left(), cluster, proc)
        cluster.run("sacctmgr", "-i", "add", "cluster", "drevt")
        cluster.run("sacctmgr", "-i", "add", "account", ",".join(accounts))
        cluster.run("sacctmgr", "-i", "add", "user", user, f"account={','.join(accounts)}",
                    f"defaultaccount={accounts[0]}")
        if user == "root":  # sacctmgr gave root an association in account root: not one of ours
            cluster.run("sacctmgr", "-i", "delete", "user", "root", "account=root", check=False)

        proc = cluster.spawn("slurmctld", "slurmctld", "-D", "-i")
        _wait("slurmctld", lambda: "UP" in cluster.run("scontrol", "ping", timeout=5, check=False),
              left(), cluster, proc)
        for node in cluster.nodes:
            cluster.spawn(f"slurmd.{node}", "slurmd", "-D", "-N", node)

        def all_idle() -> bool:
            states = cluster.run("sinfo", "-h", "-N", "-o", "%N %T", timeout=5).split("\n")
            idle = {line.split()[0] for line in states if line.strip().endswith("idle")}
            return idle >= set(cluster.nodes)

        _wait("slurmd", all_idle, left(), cluster)
        return cluster
    except BaseException:
        cluster.stop()
        raise
