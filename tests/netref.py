"""Network references for the tests, independent of the probes: the same
round trips and connects timed by Python, and a proxy that delays what a
client sends by a planted amount. Run as a script inside a network
namespace (ip netns exec NS python netref.py ...):

    netref.py measure HOST:PORT N      JSON medians (ns): tcp, udp round trips; connect
    netref.py proxy LISTEN_IP HOST:PORT SECONDS
        TCP and UDP on one port (printed: "listening on IP:PORT"), each to
        netpeer at HOST:PORT; every chunk and datagram from a client, and
        its end of stream, reaches netpeer SECONDS later; answers come back
        at once. A round trip through it takes at least SECONDS, and so does
        a teardown until the peer's FIN; a connect does not wait for it.

The netpeer protocol: an 8-byte header, "OSMP", a mode letter ('E' echo,
'C' close-watch) and three zero bytes (bench/common/osmnet.h); UDP echoes
every datagram.
"""
from __future__ import annotations

import asyncio
import json
import socket
import statistics
import sys
import time


def hello(mode: str) -> bytes:
    return b"OSMP" + mode.encode() + b"\0\0\0"


def _addr(where: str) -> tuple[str, int]:
    host, _, port = where.rpartition(":")
    return host, int(port)


def tcp_round_trips(where: str, n: int) -> list[int]:
    with socket.create_connection(_addr(where), timeout=5) as s:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        s.sendall(hello("E"))
        out = []
        for _ in range(n):
            t = time.perf_counter_ns()
            s.sendall(b"x")
            if s.recv(1) != b"x":
                raise RuntimeError("TCP echo: a wrong answer")
            out.append(time.perf_counter_ns() - t)
    return out


def udp_round_trips(where: str, n: int) -> list[int]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.settimeout(2)
        s.connect(_addr(where))
        out = []
        for _ in range(n):
            t = time.perf_counter_ns()
            s.send(b"x")
            if s.recv(16) != b"x":
                raise RuntimeError("UDP echo: a wrong answer")
            out.append(time.perf_counter_ns() - t)
    return out


def connects(where: str, n: int) -> list[int]:
    out = []
    addr = _addr(where)
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(5)
        t = time.perf_counter_ns()
        s.connect(addr)
        out.append(time.perf_counter_ns() - t)
        s.close()
    return out


def measure(where: str, n: int) -> dict[str, float]:
    return {"tcp": statistics.median(tcp_round_trips(where, n)), "udp": statistics.median(udp_round_trips(where, n)),
            "connect": statistics.median(connects(where, n))}


# ----------------------------------------------------------------- the proxy

async def _delayed(reader, writer, delay: float) -> None:
    """reader -> writer, each chunk and the end of stream `delay` later, in order."""
    loop = asyncio.get_running_loop()
    q: asyncio.Queue = asyncio.Queue()

    async def send():
        while True:
            due, data = await q.get()
            await asyncio.sleep(max(0.0, due - loop.time()))
            if data is None:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()

    task = asyncio.create_task(send())
    while True:
        data = await reader.read(65536)
        q.put_nowait((loop.time() + delay, data or None))
        if not data:
            break
    await task


async def _straight(reader, writer) -> None:
    while data := await reader.read(65536):
        writer.write(data)
        await writer.drain()
    if writer.can_write_eof():
        writer.write_eof()


class _Udp(asyncio.DatagramProtocol):
    """Each client gets a socket of its own toward netpeer; its datagrams go
    out `delay` later, the answers come straight back."""

    def __init__(self, target, delay):
        self.target, self.delay, self.peers = target, delay, {}

    def connection_made(self, transport):
        self.transport = transport

    def datagram_received(self, data, client):
        loop = asyncio.get_running_loop()
        if client not in self.peers:
            back = self

            class Back(asyncio.DatagramProtocol):
                def datagram_received(self, answer, _):
                    back.transport.sendto(answer, client)

            self.peers[client] = loop.create_task(loop.create_datagram_endpoint(Back, remote_addr=self.target))

        async def later():
            await asyncio.sleep(self.delay)
            transport, _ = await self.peers[client]
            transport.sendto(data)

        loop.create_task(later())


async def proxy(listen: str, target: str, delay: float) -> None:
    host, port = _addr(target)

    async def client(r, w):
        try:
            pr, pw = await asyncio.open_connection(host, port)
        except OSError:
            w.close()
            return
        w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        pw.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.gather(_delayed(r, pw, delay), _straight(pr, w))
        except (ConnectionError, OSError):
            pass
        finally:
            w.close()
            pw.close()

    loop = asyncio.get_running_loop()
    for _ in range(50):  # a port free for both TCP and UDP
        server = await asyncio.start_server(client, listen, 0, backlog=512)
        p = server.sockets[0].getsockname()[1]
        try:
            await loop.create_datagram_endpoint(lambda: _Udp((host, port), delay), local_addr=(listen, p))
            break
        except OSError:
            server.close()
    else:
        raise SystemExit("netref proxy: found no port free for both TCP and UDP")
    print(f"listening on {listen}:{p}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if sys.argv[1] == "measure":
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]))))
    elif sys.argv[1] == "proxy":
        asyncio.run(proxy(sys.argv[2], sys.argv[3], float(sys.argv[4])))
    else:
        raise SystemExit(__doc__)
