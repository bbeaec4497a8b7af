"""The network peer of the .remote ids: a running netpeer given with --peer
(checked to answer before any probe runs: a clear error in seconds, not a
probe timing out), or one osmeter starts on USER@HOST over ssh (--remote)
and stops afterwards. OpenSSH is the only transport."""
from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from pathlib import Path

from .errors import RunError

SSH_OPTS = ("-o", "BatchMode=yes", "-o", "ConnectTimeout=5")


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
def remote_peer(remote: str, netpeer: Path):
    """Copies netpeer to USER@HOST, starts it there on a free port, yields
    HOST:PORT once it says where it listens, and stops and removes it after."""
    host = remote.rsplit("@", 1)[-1]
    rpath = f"/tmp/osmeter-netpeer-{os.getpid()}"
    ssh = ["ssh", *SSH_OPTS]
    try:
        r = subprocess.run(["scp", "-q", *SSH_OPTS, str(netpeer), f"{remote}:{rpath}"],
                           capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise RunError("--remote needs ssh and scp (Debian: openssh-client)") from None
    except subprocess.TimeoutExpired:
        raise RunError(f"--remote {remote}: copying netpeer timed out") from None
    if r.returncode != 0:
        raise RunError(f"--remote {remote}: cannot copy netpeer there: {r.stderr.strip() or 'scp failed'}")
    proc = subprocess.Popen([*ssh, remote, f"exec {rpath} --port 0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        if not line.startswith("listening on "):
            raise RunError(f"--remote {remote}: netpeer did not start there: {proc.stderr.read().strip()}")
        port = line.split()[-1].rsplit(":", 1)[-1]
        yield f"{host}:{port}"
    finally:
        subprocess.run([*ssh, remote, f"pkill -f {rpath}; rm -f {rpath}"], capture_output=True, timeout=30)
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def peer_session(peer: str | None, remote: str | None, netpeer: Path):
    """The peer for the whole of a run or a campaign: HOST:PORT or None."""
    if peer and remote:
        raise RunError("give --peer or --remote, not both")
    if remote:
        with remote_peer(remote, netpeer) as p:
            yield p
        return
    if peer:
        check_peer(peer)
    yield peer
