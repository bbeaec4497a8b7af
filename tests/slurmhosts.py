"""A throwaway Slurm cluster for the tests: Debian's munged, slurmctld and
slurmd, started here and stopped after, their key, configuration, spool,
state and logs under a temporary directory.

    with slurm_cluster(3, tmp_path) as c:     # c.nodes == ["osms-1", "osms-2", "osms-3"]
        env = c.env                           # SLURM_CONF: the cluster's configuration

Each node is a network namespace of its own with its own host name (a UTS
namespace), running a slurmd under that name; slurmctld and the client
commands (srun, salloc, squeue, scancel) run on this machine, which is the
login node. One munged serves them all: its socket is a path, and paths are
shared between network namespaces. The namespaces share this machine's
kernel and file system: what the tests check is Slurm's whole path (the
allocation, the steps, their standard streams, scancel, a node lost),
not several machines' figures. Each slurmd runs in a cgroup of its own
(cgroup v1 blkio, where mounted), which a test may throttle: every
step it starts, and what that step starts, is in it.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

PREFIX = "osms"
NET = 40  # 10.231.40.0/24 and on: apart from nshosts' networks
V1 = Path("/sys/fs/cgroup")


def available() -> str | None:
    """None when a Slurm cluster can be made here, else why not."""
    if os.geteuid() != 0:
        return "a Slurm cluster in namespaces needs root"
    for tool in ("munged", "slurmctld", "slurmd", "srun", "salloc", "squeue", "scancel", "ip", "nsenter", "unshare"):
        if not shutil.which(tool) and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed (Debian: munge, slurmctld, slurmd, slurm-client)"
    return None


@dataclass
class Cluster:
    tmp: Path
    nodes: list[str]
    addrs: dict[str, str]
    env: dict
    conf: Path
    procs: dict[str, subprocess.Popen] = field(default_factory=dict)
    log: object = None

    def cgroup(self, node: str, controller: str) -> Path | None:
        """The node's slurmd cgroup under a v1 controller, or None."""
        d = V1 / controller / node
        return d if d.is_dir() else None

    def pids(self, node: str) -> list[int]:
        """Every process in the node's network namespace (slurmd, its steps and what they started)."""
        r = subprocess.run(["ip", "netns", "pids", node], capture_output=True, text=True)
        return [int(p) for p in r.stdout.split()]

    def kill_node(self, node: str) -> None:
        """The node dies: its slurmd and everything it started, at once."""
        for pid in self.pids(node):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)

    def start_node(self, node: str) -> int:
        """The node's slurmd, in its namespace under its own host name; its pid."""
        # nsenter, not `ip netns exec`: that mounts a sysfs of its own, without /sys/fs/cgroup
        p = subprocess.Popen(["nsenter", f"--net=/var/run/netns/{node}", "unshare", "--uts", "sh", "-c",
                              f'hostname {node} && exec slurmd -D -N {node}'], env=self.env, stdout=self.log,
                             stderr=self.log)
        self.procs[node] = p
        return p.pid

    def revive(self, node: str) -> None:
        """A node killed (kill_node) back in service: its slurmd again, in its cgroup, the node resumed."""
        pid = self.start_node(node)
        for d in (V1 / "blkio" / node,):
            if d.is_dir():
                (d / "cgroup.procs").write_text(f"{pid}\n")
        end = time.monotonic() + 60
        while time.monotonic() < end:
            self.run("scontrol", "update", f"nodename={node}", "state=resume")
            if self.run("sinfo", "-h", "-n", node, "-o", "%t").stdout.strip() == "idle":
                return
            time.sleep(0.5)
        raise RuntimeError(f"{node} did not come back idle")

    def run(self, *argv, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([str(a) for a in argv], env=self.env, capture_output=True, text=True, **kw)


def _sh(*argv, check=True):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=check)


def _cleanup_stale() -> None:
    for line in _sh("ip", "netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(PREFIX + "-"):
            for pid in _sh("ip", "netns", "pids", name, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            _sh("ip", "netns", "del", name, check=False)
            _sh("ip", "link", "del", name.replace(PREFIX + "-", PREFIX + "v"), check=False)


def _config(tmp: Path, ctl: str, ctl_addr: str, nodes: list[str], addrs: dict[str, str], cpus: int) -> str:
    lines = [
        "ClusterName=osms", f"SlurmctldHost={ctl}({ctl_addr})", "SlurmUser=root", "SlurmdUser=root",
        "AuthType=auth/munge", "CredType=cred/munge", f"AuthInfo=socket={tmp}/munge.sock",
        f"StateSaveLocation={tmp}/state", f"SlurmdSpoolDir={tmp}/spool/%n", f"SlurmctldPidFile={tmp}/slurmctld.pid",
        f"SlurmdPidFile={tmp}/slurmd.%n.pid", f"SlurmctldLogFile={tmp}/log/slurmctld.log",
        f"SlurmdLogFile={tmp}/log/slurmd.%n.log", "SlurmctldPort=6817", "SlurmdPort=6818",
        # processes by process group, no cgroup plugin (the namespaces' own cgroups are the test's), no accounting
        "ProctrackType=proctrack/pgid", "TaskPlugin=task/none", "SwitchType=switch/none", "MpiDefault=none",
        "ReturnToService=2", "SchedulerType=sched/backfill", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none", f"PlugStackConfig={tmp}/plugstack.conf",
        "SlurmdTimeout=10", "InactiveLimit=0", "KillWait=5", "MessageTimeout=20",
        # each node's temporary directory its own: the pmix plugin makes a step's directory there, and the
        # nodes share this machine's /tmp
        f"TmpFS={tmp}/nodetmp/%n",
    ]
    lines += [f"NodeName={n} NodeAddr={addrs[n]} CPUs={cpus} State=UNKNOWN" for n in nodes]
    lines.append(f"PartitionName=osms Nodes={','.join(nodes)} Default=YES MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def wait(what: str, ok, timeout: float = 30.0) -> None:
    """Polls ok() until it holds; AssertionError naming what did not happen otherwise."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if ok():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {timeout:.0f} s")


def _cgroups(node: str, pid: int) -> list[Path]:
    """A cgroup of its own for the node's slurmd under cgroup v1's blkio, where mounted (not cpu: a new
    v1 cpu cgroup has no real-time budget, and the probes would lose SCHED_FIFO there)."""
    made = []
    for ctl in ("blkio",):
        base = V1 / ctl
        if not (base / "cgroup.procs").exists():
            continue
        d = base / node
        d.mkdir(exist_ok=True)
        (d / "cgroup.procs").write_text(f"{pid}\n")
        made.append(d)
    return made


@contextlib.contextmanager
def slurm_cluster(n: int, tmp: Path):
    _cleanup_stale()
    tmp = Path(tmp)
    for d in ("state", "spool", "log"):
        (tmp / d).mkdir(parents=True, exist_ok=True)
    nodes = [f"{PREFIX}-{i + 1}" for i in range(n)]
    for nd in nodes:
        (tmp / "nodetmp" / nd).mkdir(parents=True, exist_ok=True)
        (tmp / "spool" / nd).mkdir(parents=True, exist_ok=True)
    tmp.chmod(0o755)
    (tmp / "plugstack.conf").write_text("")
    key = tmp / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    addrs = {nd: f"10.231.{NET + i}.2" for i, nd in enumerate(nodes)}
    ctl = socket.gethostname().split(".")[0]
    conf = tmp / "slurm.conf"
    conf.write_text(_config(tmp, ctl, f"10.231.{NET}.1", nodes, addrs, os.cpu_count() or 1))
    env = dict(os.environ, SLURM_CONF=str(conf))
    for k in [k for k in env if k.startswith(("SLURM_", "SALLOC_", "SRUN_", "SBATCH_")) and k != "SLURM_CONF"]:
        del env[k]
    c = Cluster(tmp, nodes, addrs, env, conf)
    cgroups: list[Path] = []
    logs = []
    # the nodes reach each other through this machine (MPI ranks, the pmix plugin's messages between steps)
    forward = Path("/proc/sys/net/ipv4/ip_forward")
    forwarded = forward.read_text()
    try:
        forward.write_text("1\n")
        for i, nd in enumerate(nodes):
            veth = nd.replace(PREFIX + "-", PREFIX + "v")
            _sh("ip", "netns", "add", nd)
            _sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", nd)
            _sh("ip", "addr", "add", f"10.231.{NET + i}.1/24", "dev", veth)
            _sh("ip", "link", "set", veth, "up")
            for cmd in (("ip", "addr", "add", f"{addrs[nd]}/24", "dev", "eth0"), ("ip", "link", "set", "eth0", "up"),
                        ("ip", "link", "set", "lo", "up"), ("ip", "route", "add", "default", "via",
                                                             f"10.231.{NET + i}.1")):
                _sh("ip", "netns", "exec", nd, *cmd)
        log = open(tmp / "log" / "daemons.err", "w")
        logs.append(log)
        c.procs["munged"] = subprocess.Popen(
            ["munged", "-F", "--force", f"--key-file={key}", f"--socket={tmp}/munge.sock",
             f"--pid-file={tmp}/munged.pid", f"--log-file={tmp}/log/munged.log", f"--seed-file={tmp}/munge.seed",
             "--num-threads=4"], stdout=log, stderr=log)
        wait("munged did not start", lambda: (tmp / "munge.sock").exists())
        c.procs["slurmctld"] = subprocess.Popen(["slurmctld", "-D", "-i"], env=env, stdout=log, stderr=log)
        wait("slurmctld did not answer", lambda: c.run("scontrol", "ping").stdout.count("UP") >= 1)
        c.log = log
        for nd in nodes:
            cgroups += _cgroups(nd, c.start_node(nd))
        wait("the nodes did not come up idle", lambda: all(
            c.run("sinfo", "-h", "-n", nd, "-o", "%t").stdout.strip() == "idle" for nd in nodes), timeout=60)
        yield c
    finally:
        r = c.run("squeue", "-h", "-o", "%i") if "slurmctld" in c.procs else None
        for job in (r.stdout.split() if r and r.returncode == 0 else []):
            c.run("scancel", job)
        for name in [*nodes, "slurmctld", "munged"]:
            p = c.procs.get(name)
            if p and p.poll() is None:
                p.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=10)
                if p.poll() is None:
                    p.kill()
                    p.wait()
        for nd in nodes:
            c.kill_node(nd)
            _sh("ip", "netns", "del", nd, check=False)
            _sh("ip", "link", "del", nd.replace(PREFIX + "-", PREFIX + "v"), check=False)
        for d in cgroups:
            for _ in range(50):
                try:
                    for pid in (d / "cgroup.procs").read_text().split():
                        with contextlib.suppress(ProcessLookupError):
                            os.kill(int(pid), 9)
                    d.rmdir()
                    break
                except OSError:
                    time.sleep(0.1)
        for f in logs:
            f.close()
        forward.write_text(forwarded)
