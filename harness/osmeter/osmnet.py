"""Checks on a network peer given to `osmeter run --peer`: well formed, and
answering, before any probe runs (a clear error in seconds, not a probe
timing out)."""
from __future__ import annotations

import socket

from .runner import RunError


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
