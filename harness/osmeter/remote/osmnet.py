"""The network peer of the .remote ids: a running netpeer given with --peer
(checked to answer before any probe runs: a clear error in seconds, not a
probe timing out), or one osmeter starts on USER@HOST over ssh (--remote)
and stops afterwards. OpenSSH is the only transport."""
from __future__ import annotations

import contextlib
import re
import shlex
import socket
import subprocess
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.remote import ssh


def check_peer(peer: str, timeout: float = 3.0) -> None:
    host, sep, port = peer.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise RunError(f"--peer {peer!r}: expected HOST:PORT (PORT from 1 to 65535)")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except socket.timeout:
        raise RunError(f"--peer {peer}: no answer within {timeout:.0f} s (host unreachable or filtered?)") from None
    except OSError as e:
        hint = " (is netpeer running there?)" if isinstance(e, ConnectionRefusedError) else ""
        raise RunError(f"--peer {peer}: {e.strerror or e}{hint}") from None


@contextlib.contextmanager
def remote_peer(remote: str, netpeer: Path, what: str = "--remote", cpu: int | None = None):
    """Copies netpeer to USER@HOST, starts it there on a free port (pinned
    to CPU `cpu` when given), yields HOST:PORT once it says where it
    listens, and stops and removes it after."""
    host = remote.rsplit("@", 1)[-1]
    # a directory of its own (mktemp -d: a fresh name, mode 0700), never a guessable path that another
    # user could have planted a link at
    try:
        r = ssh.run(remote, 'd=$(mktemp -d "${TMPDIR:-/tmp}/osmeter-netpeer.XXXXXXXX") && cat > "$d/netpeer" && '
                            'chmod 700 "$d/netpeer" && echo "$d"', input=netpeer.read_bytes(), text=False, timeout=30)
    except RunError as e:
        raise RunError(f"{what} {e}") from None
    rdir = r.stdout.decode(errors="replace").strip().splitlines()[-1:] if r.returncode == 0 else []
    if r.returncode != 0 or not rdir or not re.fullmatch(r"/[\w./-]*/osmeter-netpeer\.\w{8}", rdir[0]):
        raise RunError(f"{what} {remote}: cannot copy netpeer there: {r.stderr.decode(errors='replace').strip()}")
    rdir = shlex.quote(rdir[0])
    # --lifeline: the peer stops when this ssh session's input closes, however the controller ends
    # SSH_CONNECTION's third field is the address this ssh session reached: the probes use it, since
    # HOST may be an alias that only ~/.ssh/config knows
    proc = subprocess.Popen(ssh.argv(remote, f'echo "$SSH_CONNECTION"; echo $$; exec {rdir}/netpeer --port 0 --lifeline'
                                              + (f" --cpu {int(cpu)}" if cpu is not None else "")),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    rpid = ""
    try:
        conn = proc.stdout.readline().split()
        if len(conn) == 4:
            host = f"[{conn[2]}]" if ":" in conn[2] else conn[2]
        rpid = proc.stdout.readline().strip()
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            err = proc.stderr.read().strip()
            raise RunError(f"{what} {remote}: netpeer did not start there: "
                           f"{ssh.reason(err) if proc.wait() == 255 else err}")
        port = line.split()[-1].rsplit(":", 1)[-1]
        yield f"{host}:{port}"
    finally:
        with contextlib.suppress(RunError, OSError):
            ssh.run(remote, (f"kill {rpid} 2>/dev/null; " if rpid.isdigit() else "") + f"rm -rf {rdir}", timeout=30)
        with contextlib.suppress(OSError):
            proc.stdin.close()
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def peer_session(opts, netpeer: Path):
    """The peer for the whole of a run or a campaign (the run options' peer,
    remote and remote_cpu): HOST:PORT or None."""
    peer, remote = opts.peer, opts.remote
    if peer and remote:
        raise RunError("give --peer or --remote, not both")
    if remote:
        with remote_peer(remote, netpeer, cpu=opts.remote_cpu) as p:
            yield p
        return
    if peer:
        check_peer(peer)
    yield peer
