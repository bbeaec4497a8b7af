"""Test hosts for the many-machine features: network namespaces, each with
its own sshd on a veth pair, a throwaway host key and an authorized key made
for the test. They share this machine's kernel and file system: what they
test is the whole path (ssh, shipping, building, running, fetching, merging,
synchronizing, failing), not a second machine's numbers.

    with ns_hosts(2, tmp_path) as hosts:   # hosts[i].target == "root@10.231.N.2"
        env = hosts.env                    # OSMETER_SSH_CONFIG: the test's key, no known_hosts prompts

A host may be made broken on purpose: `sshd=False` (nothing listens: the
connection is refused), `path_dir` (its sessions get only the programs
linked there: a host that lacks make). A target with a user other than root
is refused: its key is not authorized.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

PREFIX = "osmt"


def available() -> str | None:
    """None when namespace hosts can be made here, else why not."""
    if os.geteuid() != 0:
        return "namespace hosts need root"
    for tool in ("ip", "ssh", "ssh-keygen"):
        if not shutil.which(tool):
            return f"{tool} is not installed"
    if not Path("/usr/sbin/sshd").exists():
        return "sshd is not installed (Debian: openssh-server)"
    return None


@dataclass
class Host:
    ns: str
    addr: str
    target: str


class Hosts(list):
    env: dict
    config: Path
    key: Path


def _sh(*argv, check=True):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, check=check)


def _wait_port(ns: str, addr: str, port: int = 22, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        r = _sh("ip", "netns", "exec", ns, "python3", "-c",
                f"import socket; socket.create_connection(('{addr}', {port}), timeout=1)", check=False)
        if r.returncode == 0:
            return
        time.sleep(0.1)
    raise RuntimeError(f"sshd in {ns} did not listen on {addr}:{port}")


def _cleanup_stale() -> None:
    out = _sh("ip", "netns", "list", check=False).stdout
    for line in out.splitlines():
        name = line.split()[0] if line.split() else ""
        if name.startswith(PREFIX + "-"):
            _sh("ip", "netns", "pids", name, check=False)
            for pid in _sh("ip", "netns", "pids", name, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            _sh("ip", "netns", "del", name, check=False)
            _sh("ip", "link", "del", name.replace(PREFIX + "-", PREFIX + "v"), check=False)


@contextlib.contextmanager
def ns_hosts(n: int, tmp: Path, *, broken: dict[int, dict] | None = None, first_net: int = 1,
             own_names: bool = False):
    """n namespace hosts; broken maps a host index to {"sshd": False} or {"path_dir": DIR}.
    own_names: each host's sshd (and so its sessions) in a UTS namespace of its
    own named after it (osmt-N), and this machine forwarding between the hosts'
    networks while they live: what an MPI launcher needs to see two nodes whose
    ranks talk to each other."""
    broken = broken or {}
    _cleanup_stale()
    tmp = Path(tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    key = tmp / "id_test"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", key)
    hostkey = tmp / "hostkey"
    _sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", hostkey)
    auth = tmp / "authorized_keys"
    auth.write_text(Path(f"{key}.pub").read_text())
    auth.chmod(0o600)
    Path("/run/sshd").mkdir(exist_ok=True)
    config = tmp / "ssh_config"
    config.write_text(f"Host 10.231.*\n  IdentityFile {key}\n  IdentitiesOnly yes\n  StrictHostKeyChecking no\n"
                      f"  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
    hosts = Hosts()
    hosts.config, hosts.key = config, key
    hosts.env = dict(os.environ, OSMETER_SSH_CONFIG=str(config))
    procs = []
    forward = Path("/proc/sys/net/ipv4/ip_forward")
    forwarded = forward.read_text() if own_names else None
    try:
        if own_names:
            forward.write_text("1\n")
        for i in range(n):
            net = first_net + i
            ns, veth = f"{PREFIX}-{net}", f"{PREFIX}v{net}"
            addr = f"10.231.{net}.2"
            _sh("ip", "netns", "add", ns)
            _sh("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _sh("ip", "addr", "add", f"10.231.{net}.1/24", "dev", veth)
            _sh("ip", "link", "set", veth, "up")
            for cmd in (("ip", "addr", "add", f"{addr}/24", "dev", "eth0"), ("ip", "link", "set", "eth0", "up"),
                        ("ip", "link", "set", "lo", "up"), ("ip", "route", "add", "default", "via", f"10.231.{net}.1")):
                _sh("ip", "netns", "exec", ns, *cmd)
            hosts.append(Host(ns, addr, f"root@{addr}"))
            b = broken.get(i, {})
            if b.get("sshd", True) is False:
                continue
            cfg = tmp / f"sshd_config.{net}"
            lines = [f"ListenAddress {addr}", f"HostKey {hostkey}", f"AuthorizedKeysFile {auth}",
                     "PermitRootLogin prohibit-password", "PasswordAuthentication no",
                     "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
                     f"PidFile {tmp}/sshd.{net}.pid", "AcceptEnv LANG LC_*", "MaxStartups 50:30:100",
                     "MaxSessions 50"]
            if b.get("path_dir"):
                lines.append(f"SetEnv PATH={b['path_dir']}")
            cfg.write_text("\n".join(lines) + "\n")
            argv = ["ip", "netns", "exec", ns, "/usr/sbin/sshd", "-D", "-e", "-f", str(cfg)]
            if own_names:
                argv = ["ip", "netns", "exec", ns, "unshare", "--uts", "sh", "-c",
                        f'hostname {ns} && exec /usr/sbin/sshd -D -e -f "$0"', str(cfg)]
            procs.append(subprocess.Popen(argv,
                                          stdout=subprocess.DEVNULL, stderr=open(tmp / f"sshd.{net}.log", "w")))
            _wait_port(ns, addr)
        yield hosts
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=5)
        for h in hosts:
            for pid in _sh("ip", "netns", "pids", h.ns, check=False).stdout.split():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid), 9)
            _sh("ip", "netns", "del", h.ns, check=False)
            _sh("ip", "link", "del", h.ns.replace(PREFIX + "-", PREFIX + "v"), check=False)
        if forwarded is not None:
            forward.write_text(forwarded)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
