"""Network: round trips, bulk bandwidth both ways, connection set-up and
teardown, against netpeer on loopback or on another host; ping's ICMP echo
beside them."""
from __future__ import annotations

import re

import numpy as np

from osmeter.probes.model import Area, Probe, measure

AREA = Area("net", "Network", 40)

METHOD = {
    "rtt": (
        "A message (1 byte by default) goes to netpeer's echo and back on one TCP connection with "
        "TCP_NODELAY, or as a UDP datagram; a sample is 100 round trips in one timed window, per round "
        "trip. For the loopback figures the probe starts its own netpeer on 127.0.0.1, which inherits "
        "the pinned CPU and scheduling, so both ends share one CPU and a round trip includes two "
        "context switches. ping's ICMP echo is recorded beside them when ping is installed."
    ),
    "bw": (
        "One TCP connection per sample carries large writes (128 KiB) for a fixed time. Sending, the "
        "sample ends only when the peer reports how many bytes it received, so data still in socket "
        "buffers is not counted; receiving, bytes read are divided by the time from the first byte "
        "to the last. MB/s is a million bytes per second of payload (TCP/IP and link headers not counted). "
        "This end's socket asks for {arg:--sndbuf=1048576|bytes} of send and {arg:--rcvbuf=1048576|bytes} of "
        "receive buffer, as lmbench's bw_tcp does (the kernel grants twice a request, within "
        "net.core.wmem_max and rmem_max: params.sndbuf_granted, rcvbuf_granted); the peer's end is "
        "autotuned. Left to autotuning on both ends, the buffers grew differently from one connection "
        "to the next and a connection's figure fell in one of two modes far apart; with this end's "
        "size fixed, connections agree (docs/notes/2026-11-26-tcp-buffer-modes.md)."
    ),
    "conn": (
        "connect() on a fresh socket (made before the window) until it returns established; then "
        "teardown: shutdown(SHUT_WR) sends our FIN, netpeer sees end of stream and closes its side, "
        "and the window ends when its FIN arrives (read returns 0). One connection per sample."
    ),
}


def ping_lines(stdout: str, where: str, suffix: str = "") -> list[dict]:
    """ping's per-reply times -> net.rtt.icmp.<where><suffix> (samples in ns)."""
    times = [float(x.group(1)) * 1e6 for x in re.finditer(r"time[=<]([0-9.]+) ms", stdout)]
    if not times:
        raise ValueError("ping printed no reply times")
    sent = re.search(r"(\d+) packets transmitted, (\d+) received", stdout)
    params = {"tool": "ping", "where": where}
    if sent:
        params.update(transmitted=int(sent.group(1)), received=int(sent.group(2)))
    return [{"id": f"net.rtt.icmp.{where}{suffix}", "unit": "ns", "params": params, "overhead_subtracted": 0,
             "samples": times, "disturbed": []}]


def _probes(where: str) -> tuple[Probe, ...]:
    remote = where == "remote"
    peer = ("--peer", "{peer}") if remote else ()
    needs = "peer" if remote else None
    dest = "{peer_host}" if remote else "127.0.0.1"  # loopback pings loopback, whatever peer is given
    return (
        Probe(
            name=f"net.rtt.{where}", binary="net_rtt",
            measures=(
                measure(f"net.rtt.tcp.{where}", "ns", f"TCP round trip of a 1-byte message ({where})"),
                measure(f"net.rtt.udp.{where}", "ns", f"UDP round trip of a 1-byte datagram ({where})"),
            ),
            methodology=METHOD["rtt"],
            presets={"quick": peer + ("--samples", "30"), "full": peer + ("--samples", "200")},
            timeout=120.0, needs=needs,
        ),
        Probe(
            name=f"net.bw.{where}", binary="net_bw",
            measures=(
                measure(f"net.bw.tcp.{where}", "MB/s", f"TCP bulk bandwidth, this host sending ({where})"),
                measure(f"net.bw.tcp.recv.{where}", "MB/s", f"TCP bulk bandwidth, this host receiving ({where})"),
            ),
            methodology=METHOD["bw"],
            expect={"quick": 2, "full": 21},
            presets={"quick": peer + ("--samples", "3", "--seconds", "0.25"),
                     "full": peer + ("--samples", "5", "--seconds", "2")},
            timeout=300.0, needs=needs, smoke=("--seconds", "0.2"),
        ),
        Probe(
            name=f"net.conn.{where}", binary="net_conn",
            measures=(
                measure(f"net.connect.{where}", "ns", f"TCP connect until established ({where})"),
                measure(f"net.close.{where}", "ns", f"TCP teardown until the peer has closed too ({where})"),
            ),
            methodology=METHOD["conn"],
            presets={"quick": peer + ("--samples", "100"), "full": peer + ("--samples", "500")},
            timeout=120.0, needs=needs,
        ),
        Probe(
            name=f"net.icmp.{where}", binary="ping",
            measures=(measure(f"net.rtt.icmp.{where}", "ns", f"ICMP echo round trip, by ping ({where})"),),
            methodology=("ping -c N -i 0.01 (0.2 when not root) -n; each reply's time is one sample. ping runs "
                         "in three processes per run, as the probes that take --samples do: between two pings "
                         "the CPU idles, and how fast an idle vCPU wakes varies from one stretch of the run "
                         "to the next."),
            expect={"quick": 0.6, "full": 3.5},
            processes=3,
            presets={"quick": ("-n", "-c", "30", "-i", "{ping_interval}", dest),
                     "full": ("-n", "-c", "200", "-i", "{ping_interval}", dest)},
            timeout=120.0, needs=needs, external=True,
            parse=lambda out, w=where: ping_lines(out, w),
        ),
        Probe(
            name=f"net.icmp.{where}.awake", binary="ping",
            measures=(measure(f"net.rtt.icmp.{where}.awake", "ns",
                              f"ICMP echo round trip, by ping, its CPU kept from idling ({where})"),),
            methodology=(f"The same pings as net.rtt.icmp.{where}, with the CPU kept "
                         "awake: while ping runs, a busy loop at SCHED_IDLE holds the probe's CPU, so between "
                         "two pings the CPU never idles (a vCPU never halts back to its host), and ping's "
                         f"wake-up preempts the loop at once. What net.rtt.icmp.{where} takes more than this "
                         "figure is what resuming an idle CPU adds to each round trip."),
            expect={"full": 3.5},
            processes=3,
            # the full preset only: the quick preset's wall time is at its budget, and this figure
            # explains another id's spread rather than being one a quick comparison needs
            presets={"full": ("-n", "-c", "200", "-i", "{ping_interval}", dest)},
            timeout=120.0, needs=needs, external=True, awake=True,
            parse=lambda out, w=where: ping_lines(out, w, ".awake"),
        ),
    )


IPC = Probe(
    name="net.ipc", binary="net_ipc",
    measures=(
        measure("net.rtt.pipe", "ns", "round trip of 1 byte through two pipes between two processes"),
        measure("net.rtt.unix", "ns", "round trip of 1 byte on an AF_UNIX stream socket pair"),
        measure("net.bw.pipe", "MB/s", "bulk bandwidth through a pipe, 64 KiB writes and reads"),
        measure("net.bw.unix", "MB/s", "bulk bandwidth through an AF_UNIX stream socket pair"),
    ),
    methodology=(
        "As lmbench's lat_pipe, lat_unix, bw_pipe and bw_unix, with the partner a child process on "
        "the probe's CPU (it inherits the pinning), so a round trip is two context switches, two "
        "writes and two reads. A latency sample is {arg:--iterations=1000} round trips of 1 byte after "
        "16 untimed; a bandwidth sample is the time to read {arg:--bytes=8M|bytes} that the child writes "
        "without pause in 64 KiB pieces, after as much again untimed; both sides' buffers are page-aligned (a "
        "copy to a destination off a cache line's start costs more). Pipe and socket samples "
        "alternate. MB/s is a million bytes per second."
    ),
    presets={"quick": ("--samples", "30"), "full": ("--samples", "150")},
    expect={"quick": 0.5, "full": 2},
)

PROBES = _probes("loopback") + (IPC,) + _probes("remote")


# ---- figures (the report's and the notebook's; shared plot kinds in plots.py) -------------

def network(doc: dict, est=None):
    """Network: round trips (left) and TCP bandwidth (right), medians, with
    the estimates as diamonds."""
    from osmeter.present.plots import TEXT_WIDTH_IN, lit, measured, plt, predicted
    m = measured(doc)
    rtt = [i for i in m if i.startswith("net.rtt.")]
    bw = [i for i in m if i.startswith("net.bw.")]
    if not rtt and not bw:
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(TEXT_WIDTH_IN, 3.2))
    for ax, ids, scale, unit in ((a, sorted(rtt), 1e3, "round trip (us)"), (b, sorted(bw), 1, "MB/s")):
        if not ids:
            ax.set_visible(False)
            continue
        y = np.arange(len(ids))
        ax.barh(y, [m[i]["median"] / scale for i in ids])
        for k, i in enumerate(ids):
            e = predicted(est, i)
            if e:
                ax.plot(e / scale, k, "D", color="C2", ms=4, label="estimate" if not ax.get_legend_handles_labels()[0]
                        else None)
        ax.set_yticks(y, [lit(i.removeprefix("net.")) for i in ids], fontsize=7)
        ax.set_xlabel(unit)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    a.set_title("Round trips")
    b.set_title("TCP bandwidth")
    return fig


FIGURES = (network,)
