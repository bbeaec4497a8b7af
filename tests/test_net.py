"""Network: netpeer's robustness, clear errors, and ground truth between two
network namespaces joined by a veth pair that the test makes and removes."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
import uuid

import numpy as np
import pytest

from conftest import BIN, ROOT, osmeter, probe_lines, run_group

NETPEER = str(BIN / "netpeer")


def start_peer(*prefix, bind="127.0.0.1"):
    p = subprocess.Popen([*prefix, NETPEER, "--bind", bind, "--port", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith("listening on "), p.stderr.read()
    return p, line.split()[-1]


def stop_peer(p):
    p.send_signal(signal.SIGTERM)
    out, _ = p.communicate(timeout=10)
    return p.returncode, out


@pytest.fixture
def peer():
    p, where = start_peer()
    yield where
    stop_peer(p)


def lines(stdout):
    return {o["id"]: o for o in map(json.loads, stdout.splitlines())}


def run(*argv, timeout=60):
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=timeout)


# --- netpeer ----------------------------------------------------------------

def test_peer_survives_garbage_abrupt_clients_and_many_at_once(peer):
    host, port = peer.rsplit(":", 1)
    addr = (host, int(port))
    # garbage, a half header, an oversized echo, an abrupt reset
    with socket.create_connection(addr) as s:
        s.sendall(b"GET / HTTP/1.0\r\n\r\n" * 100)
    with socket.create_connection(addr) as s:
        s.sendall(b"OSM")
    with socket.create_connection(addr) as s:
        s.sendall(b"OSMPE\0\0\0")
        big = os.urandom(8 << 20)
        s.sendall(big[:1 << 20])
        got = b""
        while len(got) < 1 << 20:
            got += s.recv(1 << 20)
        assert got == big[:1 << 20]
    s = socket.create_connection(addr)
    s.sendall(b"OSMPS\0\0\0" + b"x" * 100000)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\0\0\0\0\0\0\0")  # close with RST
    s.close()
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(os.urandom(60000), addr)
    u.settimeout(2)
    assert len(u.recvfrom(65536)[0]) == 60000
    u.close()
    # 200 clients at once, each echoed
    socks = [socket.create_connection(addr) for _ in range(200)]
    for i, c in enumerate(socks):
        c.sendall(b"OSMPE\0\0\0" + i.to_bytes(4, "little"))
    for i, c in enumerate(socks):
        c.settimeout(5)
        assert c.recv(4) == i.to_bytes(4, "little")
        c.close()
    # and it still serves the probes
    o = probe_lines("net_rtt", "--peer", peer, "--samples", "5", "--cpu", "0")
    assert o["net.rtt.tcp.remote"]["samples"] and o["net.rtt.udp.remote"]["samples"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_peer_exits_cleanly_on_signals(sig):
    p, _ = start_peer()
    p.send_signal(sig)
    out, _ = p.communicate(timeout=10)
    assert p.returncode == 0 and "stopped by signal" in out


def test_peer_refuses_bad_options():
    r = run(NETPEER, "--port", "70000")
    assert r.returncode == 2 and "--port" in r.stderr
    r = run(NETPEER, "--bind", "not-an-address!")
    assert r.returncode != 0 and "--bind" in r.stderr
    # --cpu: a CPU this machine does not have (online ones are numbered from 0), and not a number
    r = run(NETPEER, "--cpu", str(os.cpu_count() + 64), timeout=10)  # unrefused, it would serve on
    assert r.returncode == 2 and "cannot pin there" in r.stderr and "online CPUs" in r.stderr, r.stderr
    r = run(NETPEER, "--cpu", "x")
    assert r.returncode == 2 and "--cpu" in r.stderr


def test_bulk_bandwidth_fixes_its_own_sockets_buffers():
    """net_bw asks for 1 MiB of send and receive buffer on its socket by
    default, as lmbench's bw_tcp does (autotuned on both ends, a loopback
    connection's figure fell in one of two modes); the kernel grants twice
    the request within net.core.wmem_max/rmem_max, and params say both.
    --sndbuf 0 --rcvbuf 0 leave them to autotuning. Mutant caught: the
    buffers left autotuned by default."""
    cap = {k: int(open(f"/proc/sys/net/core/{k}").read()) for k in ("wmem_max", "rmem_max")}
    lines = probe_lines("net_bw", "--samples", "1", "--seconds", "0.05")
    for o in lines.values():
        p = o["params"]
        assert p["sndbuf"] == p["rcvbuf"] == 1 << 20
        assert p["sndbuf_granted"] == 2 * min(1 << 20, cap["wmem_max"])
        assert p["rcvbuf_granted"] == 2 * min(1 << 20, cap["rmem_max"])
    auto = probe_lines("net_bw", "--samples", "1", "--seconds", "0.05", "--sndbuf", "0", "--rcvbuf", "0")
    assert all(o["params"]["sndbuf"] == o["params"]["rcvbuf"] == 0 for o in auto.values())


# --- clear and quick errors ----------------------------------------------------

def test_closed_port_and_bad_peer_fail_fast():
    t0 = time.monotonic()
    r = run(BIN / "net_rtt", "--peer", "127.0.0.1:1")
    assert r.returncode == 1 and "refused" in r.stderr and r.stdout == ""
    r = run(BIN / "net_bw", "--peer", "nohost")
    assert r.returncode == 2 and "HOST:PORT" in r.stderr
    r = osmeter("run", "--peer", "127.0.0.1:1", "--probes", "net.*", "--out", "/nonexistent/never")
    assert r.returncode == 2 and "is netpeer running there" in r.stderr
    r = osmeter("run", "--remote", "nobody@127.0.0.1", "--probes", "net.*", "--out", "/nonexistent/never")
    assert r.returncode == 2 and "--remote" in r.stderr
    assert time.monotonic() - t0 < 30


def test_loopback_relations(quick_run):
    m = {x["id"]: x for x in quick_run[1]["measurements"]}
    for i in ("net.rtt.tcp.loopback", "net.rtt.udp.loopback", "net.connect.loopback", "net.close.loopback"):
        assert m[i]["median"] > m["cpu.syscall.getppid"]["median"]
    assert m["net.bw.tcp.loopback"]["median"] > 200  # MB/s: far above any link we shape below
    assert m["net.bw.tcp.recv.loopback"]["median"] > 200
    nics = quick_run[1]["machine"]["nics"]
    assert any(n["name"] == "lo" and n["driver"] == "loopback" for n in nics)


# --- two namespaces -------------------------------------------------------------

@pytest.fixture(scope="module")
def netns():
    """Hosts A (10.231.N.1) and B (10.231.N.2) in their own network
    namespaces, joined by a veth pair; always removed afterwards."""
    if os.geteuid() != 0:
        pytest.skip("ip netns needs root")
    tag = uuid.uuid4().hex[:6]
    a, b = f"osmA{tag}", f"osmB{tag}"
    net = 200 + int(tag[:2], 16) % 50
    made = []
    try:
        for cmd in (["ip", "netns", "add", a], ["ip", "netns", "add", b]):
            r = run(*cmd)
            if r.returncode != 0:
                pytest.skip(f"ip netns is not permitted here: {r.stderr.strip()}")
            made.append(cmd[-1])
        for cmd in (
            ["ip", "link", "add", f"va{tag}", "type", "veth", "peer", "name", f"vb{tag}"],
            ["ip", "link", "set", f"va{tag}", "netns", a], ["ip", "link", "set", f"vb{tag}", "netns", b],
            ["ip", "-n", a, "addr", "add", f"10.231.{net}.1/24", "dev", f"va{tag}"],
            ["ip", "-n", b, "addr", "add", f"10.231.{net}.2/24", "dev", f"vb{tag}"],
            ["ip", "-n", a, "link", "set", f"va{tag}", "up"], ["ip", "-n", b, "link", "set", f"vb{tag}", "up"],
            ["ip", "-n", a, "link", "set", "lo", "up"], ["ip", "-n", b, "link", "set", "lo", "up"],
        ):
            r = run(*cmd)
            assert r.returncode == 0, f"{' '.join(cmd)}: {r.stderr}"
        peer, where = start_peer("ip", "netns", "exec", b, "taskset", "-c", "0", bind=f"10.231.{net}.2")
        yield {"a": a, "b": b, "va": f"va{tag}", "vb": f"vb{tag}", "peer": where, "net": net}
        stop_peer(peer)
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def in_a(ns, *argv, timeout=120):
    return run("ip", "netns", "exec", ns["a"], *argv, timeout=timeout)


DELAY = 0.005  # s: what the proxy in B adds to everything a client sends


def _ns(line: dict) -> float:
    """The median of a probe line's samples in ns (a TSC-timed probe prints cycles)."""
    med = float(np.median(line["samples"]))
    return med * 1e9 / line["tsc_hz"] if line["unit"] == "cycles" else med


def test_remote_probes_between_namespaces(netns):
    """The remote ids time the path to B: through a proxy in B that delays
    everything A sends by a planted 5 ms, a TCP or UDP round trip takes at
    least 5 ms and a teardown waits 5 ms for the peer's FIN, while a connect
    (the kernels' handshake, which the proxy cannot delay) stays far below
    it and near what Python times for the same connect."""
    import sys
    here = ROOT / "tests" / "netref.py"
    proxy = subprocess.Popen(["ip", "netns", "exec", netns["b"], sys.executable, str(here), "proxy",
                              f"10.231.{netns['net']}.2", netns["peer"], str(DELAY)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proxy.stdout.readline()
        assert line.startswith("listening on "), proxy.stderr.read()
        via = line.split()[-1]
        r = in_a(netns, BIN / "net_conn", "--peer", via, "--samples", "20", "--cpu", "0")
        assert r.returncode == 0, r.stderr
        conn = lines(r.stdout)
        assert set(conn) == {"net.connect.remote", "net.close.remote"}
        r = in_a(netns, BIN / "net_rtt", "--peer", via, "--samples", "10", "--iterations", "10", "--cpu", "0")
        assert r.returncode == 0, r.stderr
        rtt = lines(r.stdout)
        ref = in_a(netns, sys.executable, here, "measure", netns["peer"], "50")
        assert ref.returncode == 0, ref.stderr
        ref = json.loads(ref.stdout)
    finally:
        proxy.terminate()
        proxy.wait(timeout=10)
    d = DELAY * 1e9
    for i in ("net.rtt.tcp.remote", "net.rtt.udp.remote", "net.close.remote"):
        m = rtt.get(i) or conn[i]
        assert m["params"]["where"] == "remote"
        med = _ns(m)
        assert d <= med < d + 20e6, (i, med)  # the planted delay, plus at most 20 ms of Python and a busy host
    connect = _ns(conn["net.connect.remote"])
    assert ref["connect"] / 5 < connect < min(d / 2, 5 * ref["connect"]), (connect, ref)


def test_unreachable_host_fails_quickly(netns):
    t0 = time.monotonic()
    r = in_a(netns, BIN / "net_rtt", "--peer", f"10.231.{netns['net']}.99:9", "--timeout", "1000")
    assert r.returncode == 1 and "no answer within 1000 ms" in r.stderr
    assert time.monotonic() - t0 < 10


def test_shaped_link_bandwidth_matches_the_set_rate(netns):
    """tbf at 100 Mbit/s on both ends: the best of three samples of TCP
    payload is within 2% above and 10% below what the rate leaves after
    TCP/IP and Ethernet headers (1448 payload bytes in every 1514-byte
    frame). The rate is a ceiling: a sender short of CPU on a busy machine
    falls below it (fresh CI runs beside other work: 1.7% and 6.4% below),
    never above; counting the headers as payload would be 4.6% above it."""
    for ns, dev in ((netns["a"], netns["va"]), (netns["b"], netns["vb"])):
        r = run("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", "100mbit",
                "burst", "32kbit", "latency", "50ms")
        if r.returncode != 0:
            pytest.skip(f"tc tbf is not available here: {r.stderr.strip()}")
    try:
        r = in_a(netns, "taskset", "-c", "1", BIN / "net_bw", "--peer", netns["peer"], "--samples", "3",
                 "--seconds", "2", "--cpu", "1")
        assert r.returncode == 0, r.stderr
        o = lines(r.stdout)
        rate = 100e6 / 8 / 1e6  # MB/s
        for i in ("net.bw.tcp.remote", "net.bw.tcp.recv.remote"):
            got, payload = max(o[i]["samples"]), rate * 1448 / 1514
            assert 0.90 * payload < got < 1.02 * payload, (i, got, payload)
    finally:
        for ns, dev in ((netns["a"], netns["va"]), (netns["b"], netns["vb"])):
            run("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", dev, "root")


def test_osmeter_run_with_a_peer_adds_remote_ids(netns, tmp_path):
    out = tmp_path / "remote"
    r = in_a(netns, ROOT / "osmeter", "run", "--peer", netns["peer"], "--probes", "net.*.remote,net.rtt.icmp.remote",
             "--out", out, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "results.json").read_text())
    ids = {m["id"] for m in doc["measurements"]}
    assert {"net.rtt.tcp.remote", "net.rtt.udp.remote", "net.bw.tcp.remote", "net.bw.tcp.recv.remote",
            "net.connect.remote", "net.close.remote"} <= ids
    if "net.rtt.icmp.remote" not in ids:  # only when ping is installed
        assert any(s["probe"] == "net.icmp.remote" for s in doc.get("skipped", []))


def test_silent_clients_cannot_lock_others_out(peer):
    """1,100 clients send a valid header and then nothing: a normal client is
    still served within 1 s (the quietest connection gives up its place)."""
    host, port = peer.rsplit(":", 1)
    port = int(port)
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 1300:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    silent = []
    try:
        for _ in range(1100):
            s = socket.create_connection((host, port), timeout=5)
            s.sendall(b"OSMPE\0\0\0")
            silent.append(s)
        time.sleep(0.5)
        t0 = time.monotonic()
        with socket.create_connection((host, port), timeout=2) as s:
            s.settimeout(1.0)
            s.sendall(b"OSMPE\0\0\0hello")
            got = b""
            while len(got) < 5:
                got += s.recv(5 - len(got))
        assert got == b"hello"
        assert time.monotonic() - t0 < 1.0
    finally:
        for s in silent:
            s.close()


def test_a_peer_that_never_answers_fails_with_a_clear_message():
    """A peer that accepts and then says nothing: every network probe gives up
    after --timeout, naming it, instead of waiting for the harness's limit."""
    lsock = socket.socket()
    lsock.bind(("127.0.0.1", 0))
    lsock.listen(64)
    port = lsock.getsockname()[1]
    try:
        for binary in ("net_rtt", "net_bw", "net_conn"):
            t0 = time.monotonic()
            r = subprocess.run([str(BIN / binary), "--peer", f"127.0.0.1:{port}", "--timeout", "1000",
                                "--samples", "1", "--cpu", "0"], capture_output=True, text=True, timeout=30)
            assert r.returncode == 1, (binary, r.stderr)
            assert "no answer from the peer within 1000 ms" in r.stderr, (binary, r.stderr)
            assert time.monotonic() - t0 < 8, binary
    finally:
        lsock.close()


def test_a_timed_out_connect_is_named(netns):
    """An address that never answers: net_conn's own blocking connect says
    so (it used to print 'Operation now in progress')."""
    t0 = time.monotonic()
    r = in_a(netns, BIN / "net_conn", "--peer", f"10.231.{netns['net']}.99:9", "--timeout", "500", "--samples", "1")
    assert r.returncode == 1 and "no answer" in r.stderr and "in progress" not in r.stderr, r.stderr
    assert time.monotonic() - t0 < 10


def test_netpeer_with_a_lifeline_stops_when_its_input_closes():
    """--lifeline (how --remote starts it over ssh): when the session that
    started it ends, even by a SIGKILL of the controller, netpeer stops
    instead of listening on forever."""
    p = subprocess.Popen([str(BIN / "netpeer"), "--port", "0", "--lifeline"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline().startswith("listening on ")
    time.sleep(0.2)
    assert p.poll() is None  # input open: it serves
    p.stdin.close()
    assert p.wait(timeout=10) == 0


def test_ipc_bandwidth_copies_between_page_aligned_buffers(tmp_path):
    """net.bw.pipe and .unix move 64 KiB pieces between page-aligned
    buffers on both sides (a heap buffer 16 bytes off a cache line cost
    ~6% of pipe bandwidth beside lmbench's bw_pipe): strace, with the raw
    arguments, shows every 64 KiB read and write at a page boundary.
    Mutant: the buffers from malloc."""
    import re
    import shutil
    if not shutil.which("strace"):
        pytest.skip("strace is not installed: the probe's buffers cannot be seen (Debian: strace)")
    log = tmp_path / "strace"
    r = run_group(["strace", "-f", "-e", "trace=read,write", "-e", "raw=read,write", "-o", str(log),
                   str(BIN / "net_ipc"), "--samples", "1", "--bytes", "1M", "--iterations", "10"], timeout=120)
    assert r.returncode == 0, r.stderr
    bufs = re.findall(r"(?:read|write)\(0x[0-9a-f]+, (0x[0-9a-f]+), 0x10000", log.read_text())
    assert len(bufs) > 32, bufs[:5]  # both kinds, both sides
    page = os.sysconf("SC_PAGE_SIZE")
    assert all(int(b, 16) % page == 0 for b in bufs), sorted(set(bufs))


# a probe's view of the busy loops beside it: (pid, policy, CPUs) of each child of its parent running SPIN
_FIND_SPINNERS = r"""
import json, os, sys
me = os.getppid()
out = []
for d in os.listdir("/proc"):
    if not d.isdigit():
        continue
    try:
        cmd = open(f"/proc/{d}/cmdline", "rb").read().split(b"\0")
        ppid = int(open(f"/proc/{d}/stat").read().rsplit(")", 1)[1].split()[1])
        if ppid == me and int(d) != os.getpid() and sys.argv[1].encode() in cmd:
            out.append([int(d), os.sched_getscheduler(int(d)), sorted(os.sched_getaffinity(int(d)))])
    except (OSError, ValueError, IndexError):
        continue
print(json.dumps(out))
"""


def test_a_run_keeps_the_cpu_of_an_awake_probe_busy_and_no_other(tmp_path):
    """The runner hands a probe's `awake` to its launcher: in a run of two
    fake probes, each counting the SCHED_IDLE busy loops pinned to its CPU
    while it runs (in params.spinners), the awake one sees one and the other
    none. Mutant caught: the runner never asks for the loop."""
    import sys

    from osmeter.host import launch
    from osmeter.probes.model import Probe, measure
    from osmeter.running.runner import run
    from osmeter.running.runopts import RunOptions

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("awake", "plain"):  # each a probe that prints what _FIND_SPINNERS sees, as a probe line
        find = _FIND_SPINNERS.replace("sys.argv[1]", repr(launch.SPIN)).replace("print(json.dumps(out))", "")
        (bindir / name).write_text(
            f"#!{sys.executable}\n{find}\nspinners = [s for s in out if s[1] == os.SCHED_IDLE]\n"
            f"print(json.dumps({{'id': 'fake.{name}', 'unit': 'ns', 'params': {{'spinners': len(spinners)}}, "
            "'samples': [1, 2, 3], 'disturbed': []}))\n")
        (bindir / name).chmod(0o755)
    probes = tuple(Probe(name=f"fake.{n}", binary=n, area="net", methodology="fake", awake=n == "awake",
                         measures=(measure(f"fake.{n}", "ns", n),), presets={"quick": ()})
                   for n in ("awake", "plain"))
    out = tmp_path / "out"
    assert run(RunOptions(out=out, rt=False, probes=probes, derived=(), bin_dir=bindir)) == (0, out)
    m = {x["id"]: x for x in json.loads((out / "results.json").read_text())["measurements"]}
    assert m["fake.awake"]["params"]["spinners"] == 1 and m["fake.plain"]["params"]["spinners"] == 0, m


def test_an_awake_probe_has_a_busy_loop_on_its_cpu_only_while_it_runs():
    """net.rtt.icmp.*.awake keeps the probe's CPU from idling: while the
    probe runs, one SCHED_IDLE busy loop pinned to the probe's CPU runs
    beside it, and it is gone when the probe ends, also when its timeout
    kills it; a probe that is not awake has none. Mutants caught: the loop
    never started; the loop at SCHED_OTHER (it would take half the CPU)."""
    import sys

    from osmeter.host import launch
    from osmeter.probes import registry

    assert {p.name for p in registry.PROBES if p.awake} >= {"net.icmp.loopback.awake"}
    cpu = max(os.sched_getaffinity(0))
    la = launch.Launcher(BIN, cpu, fifo=False)
    argv = [sys.executable, "-c", _FIND_SPINNERS, launch.SPIN]
    rc, out, err = la.run(argv, 30, awake=True)
    assert rc == 0, err
    seen = json.loads(out)
    assert [(s[1], s[2]) for s in seen] == [(os.SCHED_IDLE, [cpu])], seen
    assert not os.path.exists(f"/proc/{seen[0][0]}")  # killed and reaped with its probe
    rc, out, _ = la.run(argv, 30)
    assert rc == 0 and json.loads(out) == []
    rc, _, _ = la.run(["sleep", "30"], 0.5, awake=True)  # the timeout kills the probe, and the loop with it
    assert rc is None and la.spinner is None
    assert json.loads(la.run(argv, 30)[1]) == []
    with pytest.raises(OSError):  # a probe that cannot start leaves no busy loop behind either
        la.run(["/nonexistent/osmeter-probe"], 30, awake=True)
    assert la.spinner is None and json.loads(la.run(argv, 30)[1]) == []
