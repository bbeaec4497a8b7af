"""OpenSSH, the transport between machines: every ssh call of osmeter goes
through here; a target slurm:NODE goes through srun instead (slurm.py), with
the same calls. BatchMode (never a password prompt), the user's own keys,
agent and ~/.ssh/config, and one master connection per host reused by every
later call (ControlMaster), so a fleet step costs a round trip, not a
handshake. OSMETER_SSH_CONFIG=FILE gives ssh another config file (ssh -F)."""
from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.remote import slurm

_control_dir: str | None = None


def _control() -> str:
    """This process's directory of master sockets, osmeter-ssh-<pid>-XXXX in
    the temporary directory (mode 0700). Made on first use, after removing
    those of osmeter processes that are gone: a process killed outright
    (SIGKILL) never ran close_all."""
    global _control_dir
    if _control_dir is None:
        sweep_control_dirs()
        _control_dir = tempfile.mkdtemp(prefix=f"osmeter-ssh-{os.getpid()}-")
        atexit.register(close_all)
    return _control_dir


def sweep_control_dirs() -> list[str]:
    """Removes this user's control directories whose process is gone."""
    from osmeter.host import cleanup

    removed = []
    for d in Path(tempfile.gettempdir()).glob("osmeter-ssh-*-*"):
        mo = re.fullmatch(r"osmeter-ssh-(\d+)-\w+", d.name)
        try:
            mine = d.is_dir() and not d.is_symlink() and d.lstat().st_uid == os.geteuid()
        except OSError:
            continue
        if mo and mine and not cleanup.alive(int(mo.group(1))):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(str(d))
    return removed


# A host that stops answering is given up after ALIVE_INTERVAL * ALIVE_COUNT seconds (ssh's keep-alives
# inside the encrypted channel, answered by sshd itself), one that never answers after CONNECT_TIMEOUT.
CONNECT_TIMEOUT = 5
ALIVE_INTERVAL = 2
ALIVE_COUNT = 3


def options() -> list[str]:
    opts = ["-o", "BatchMode=yes", "-o", f"ConnectTimeout={CONNECT_TIMEOUT}",
            "-o", f"ServerAliveInterval={ALIVE_INTERVAL}", "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
            "-o", "ControlMaster=auto",
            "-o", f"ControlPath={_control()}/%C", "-o", "ControlPersist=120"]
    cfg = os.environ.get("OSMETER_SSH_CONFIG")
    if cfg:
        opts = ["-F", cfg, *opts]
    return opts


def argv(target: str, command: str) -> list[str]:
    """ssh argv that runs a shell command line on target (srun's for
    slurm:NODE). A target that starts with "-" would be read by ssh as an
    option: refused."""
    if slurm.is_slurm(target):
        return slurm.argv(target, command)
    if not target or target.startswith("-"):
        raise RunError(f"{target!r}: not a host (a host name cannot start with '-')")
    return ["ssh", *options(), target, command]


def run(target: str, command: str, *, input: bytes | str | None = None, timeout: float = 60,
        text: bool = True) -> subprocess.CompletedProcess:
    """Runs command on target; raises RunError when ssh itself fails (the reason in words)."""
    try:
        r = subprocess.run(argv(target, command), input=input, capture_output=True, text=text, timeout=timeout)
    except FileNotFoundError:
        raise RunError("ssh is not installed (Debian: openssh-client)") from None
    except subprocess.TimeoutExpired:
        raise RunError(f"{target}: no answer within {timeout:.0f} s") from None
    if slurm.is_slurm(target):
        err = r.stderr if text else r.stderr.decode(errors="replace")
        if slurm.failed(err, r.returncode):
            raise RunError(f"{target}: {slurm.reason(err)}")
        return r
    if r.returncode == 255:
        raise RunError(f"{target}: {reason(r.stderr)}")
    return r


def lost(target: str, stderr: str, returncode: int | None) -> str | None:
    """Why the transport itself failed (ssh's exit 255, srun's own error),
    or None when the command ran and this is its own status."""
    if slurm.is_slurm(target):
        return slurm.reason(stderr) if slurm.failed(stderr, returncode) else None
    return reason(stderr) if returncode == 255 else None


def reason(stderr: str | bytes) -> str:
    """ssh's own failure, in words a person acts on."""
    if isinstance(stderr, bytes):
        stderr = stderr.decode(errors="replace")
    s = stderr.strip()
    lines = [ln for ln in s.splitlines() if ln.strip() and not ln.startswith("Warning: Permanently added")]
    last = lines[-1] if lines else "ssh failed"
    if "Connection refused" in s:
        return "ssh: connection refused (no sshd listening there?)"
    if "Permission denied" in s:
        return "ssh: the host refused the key (Permission denied): add your public key to its authorized_keys"
    if "Could not resolve hostname" in s:
        return "ssh: unknown host name"
    if "not responding" in s or not lines:
        # a session on a shared connection says nothing when that connection's keep-alives gave up
        return (f"ssh: the host stopped answering ({ALIVE_COUNT} keep-alives {ALIVE_INTERVAL} s apart went "
                "unanswered) or the connection to it was lost")
    if "timed out" in s or "No route to host" in s or "Network is unreachable" in s:
        return f"ssh: host unreachable ({last})"
    if "Host key verification failed" in s:
        return "ssh: host key verification failed (not in known_hosts, or changed)"
    return f"ssh: {last}"


def quote(*words: str) -> str:
    return " ".join(shlex.quote(str(w)) for w in words)


def close_all() -> None:
    """Stops the master connections (each exits on its own after ControlPersist anyway)."""
    global _control_dir
    if _control_dir and os.path.isdir(_control_dir):
        for name in os.listdir(_control_dir):
            subprocess.run(["ssh", "-o", f"ControlPath={_control_dir}/{name}", "-O", "exit", "x"],
                           capture_output=True, timeout=10)
        shutil.rmtree(_control_dir, ignore_errors=True)
    _control_dir = None
