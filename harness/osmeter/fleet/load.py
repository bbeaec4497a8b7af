"""`osmeter fleet load`: one load from every host at once, started together.

Disk (the default): iogen on every host against its own target. Each
host's clock offset from this one is measured over ssh (the reading with
the least round trip; uncertainty half of it), and every host is told the
same start instant in its own clock (iogen --start-at). The totals add
IOPS and MB/s; the latency percentiles come from the hosts' histograms
merged bucket by bucket, never from averaged percentiles. While it runs,
every host's iogen prints a status line once an interval (iogen --status:
SPEK's prober), which the load's own ssh session brings here as it is
written: each host's series and the live table are loadstatus.py's.

--net: net_bw clients on every host against one netpeer instead: many
clients, one server (net_bw measures each direction as one sample: no
status is streamed).

Both make their hosts ready in the same way (Load: check, ship and build
of host.py, then the clock) and index them in DIR/load.json.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict
from pathlib import Path

from osmeter.core import hist
from osmeter.core.errors import RunError
from osmeter.fleet import loadstatus
from osmeter.fleet.host import (HOST_RE, LOCAL, Driver, Host, HostFailed, build, build_local, check, last_lines, run_on,
                                ship, source_tar, stamp, summary_text, timed)
from osmeter.remote import ssh
from osmeter.results import reader, store
from osmeter.results.writer import write_atomic, write_json_atomic

# ------------------------------------------------------------ clocks

def clock_offset(host: Host, samples: int = 9) -> tuple[float, float]:
    """(offset, uncertainty) in seconds: the host's CLOCK_REALTIME minus
    this one's, from the reading with the least round trip (Cristian's
    method); the uncertainty is half that round trip."""
    if host.local:
        return 0.0, 0.0
    cmd = ("if command -v bash >/dev/null 2>&1; then exec bash -c 'while read x; do echo $EPOCHREALTIME; done'; "
           "else while read x; do date +%s.%N; done; fi")
    p = subprocess.Popen(ssh.argv(host.target, cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, bufsize=1)
    best = (math.inf, 0.0)
    try:
        for _ in range(samples):
            t0 = time.time()
            p.stdin.write("x\n")
            p.stdin.flush()
            line = p.stdout.readline()
            t1 = time.time()
            if not line:
                break
            remote = float(line.strip().replace(",", "."))
            if t1 - t0 < best[0]:
                best = (t1 - t0, remote - (t0 + t1) / 2)
    except (ValueError, OSError):
        pass
    finally:
        p.stdin.close()
        p.kill()
        err = p.stderr.read()
        p.wait()
    if not math.isfinite(best[0]):
        raise HostFailed(f"cannot read its clock: {ssh.reason(err)}")
    return best[1], best[0] / 2


# ------------------------------------------------------------ fleet load

def merge_load(per_host: list[dict]) -> dict:
    """The whole load from the hosts' iogen results: rates added, latency
    percentiles from the histograms merged (never from the hosts' percentiles)."""
    total = {k: round(sum(r[k] for r in per_host), 3) for k in ("iops", "mbps", "read_iops", "write_iops")}
    total["ios"] = sum(r["reads"] + r["writes"] for r in per_host)
    total["lat_ns"] = hist.merge_summaries([r.get("lat_ns") for r in per_host])
    return total


class Load:
    """What fleet load and fleet load --net share: load.json (rewritten after
    every host), every host made ready (check, ship, build the one program
    the load runs) and its clock read, all in the same way."""

    def __init__(self, hosts: list[Host], out: Path, doc: dict, dirty: bool, root: Path):
        out.mkdir(parents=True, exist_ok=True)
        if (out / store.LOAD).exists():
            raise RunError(f"{out} already holds a load ({store.LOAD}): give a new --out")
        self.hosts, self.out, self.root = hosts, out, root
        self.tar, self.tree, self.what = source_tar(root, dirty)
        self.doc = dict(doc, created_utc=stamp(), source=self.what, tree=self.tree, hosts=[])
        self.extra: dict[str, dict] = {h.label: {} for h in hosts}
        self.bins: dict[str, str] = {}
        self.lock = threading.Lock()

    def save(self) -> None:
        with self.lock:
            self.doc["hosts"] = [dict(asdict(h), **self.extra[h.label]) for h in self.hosts]
            write_json_atomic(self.out / store.LOAD, self.doc)

    def prepare(self, program: str, parallel: bool) -> list[Host]:
        """The hosts ready to run build/bin/<program>; fails when none is."""
        self.save()

        def ready(h: Host):
            if h.local:
                timed(h, "build", build_local, self.root)
                self.bins[h.label] = str(self.root / "build" / "bin" / program)
            else:
                home = timed(h, "check", check, h, ("make", "cc", "tar"), None)
                h.tree_dir = timed(h, "ship", ship, h, self.tar, self.tree, home)
                timed(h, "build", build, h, h.tree_dir, f"build/bin/{program}")
                self.bins[h.label] = f"{h.tree_dir}/build/bin/{program}"
            off, unc = timed(h, "clock", clock_offset, h)
            self.extra[h.label].update(clock_offset_s=off, clock_uncertainty_s=unc)
            h.status = "ready"

        Driver(self.hosts, parallel, self.save).run(ready)
        live = [h for h in self.hosts if h.status == "ready"]
        if not live:
            print(summary_text(self.hosts))
            raise RunError("no host is ready for the load")
        for h in live:
            h.status = "not run"
        return live


def fleet_load(hosts: list[Host], out: Path, io_opts: dict, parallel_prepare: bool, dirty: bool,
               root: Path, start_in: float, log: bool, interval: float = 1.0, launcher: dict | None = None) -> int:
    """iogen on every host from one instant; each host's status streamed
    once an interval meanwhile (loadstatus.py), the results merged after."""
    io_opts = dict(io_opts, iogen_args=[*io_opts["iogen_args"], "--status", "--interval", f"{interval:g}"],
                   interval_s=interval)
    ld = Load(hosts, out, {"kind": "fleet-load", "options": io_opts, **(launcher or {})}, dirty, root)
    print(f"fleet load: {len(hosts)} hosts, {ld.what}; results in {out}")
    live = ld.prepare("iogen", parallel_prepare)
    doc, extra, save, iogens = ld.doc, ld.extra, ld.save, ld.bins
    # 2. one start instant, each host told it in its own clock
    start = time.time() + start_in
    doc["start_planned_unix"] = start
    series = loadstatus.Series(out, interval)
    table = loadstatus.LiveTable(series, live, start)
    drv = Driver(live, True, save, table.say)
    now = stamp()

    def go(h: Host):
        off = extra[h.label]["clock_offset_s"]
        # the log goes into the host's own fleet tree (made by osmeter, the user's), never a shared /tmp path;
        # on this machine straight into the results
        if not log:
            rlog = None
        elif h.local:
            (out / h.label).mkdir(exist_ok=True)
            rlog = str(out / h.label / store.LOAD_LOG)
        else:
            rlog = f"{h.tree_dir}/load-{now}.csv"
        iargs = [a.replace("{host}", h.label) for a in io_opts["iogen_args"]]
        argv = [iogens[h.label], *iargs, "--start-at", f"{start + off:.6f}"]
        if rlog:
            argv += ["--log", rlog]
        cmd = "echo $$; exec " + ssh.quote(*argv)
        target = iargs[iargs.index("--target") + 1] if "--target" in iargs else None
        made = target is not None and not _exists(h, target)  # iogen makes a missing file: removed after

        def status(line: str) -> bool:
            if not loadstatus.is_status(line):
                return False
            try:
                series.add(h.label, line, off)
            except (ValueError, KeyError, TypeError):
                return False  # a line cut short (iogen or ssh died writing it): the exit status says why
            return True

        try:
            p = timed(h, "load", _load_step, drv, h, cmd, status)
        finally:
            if made:
                _remove_made(h, target)
            extra[h.label]["stream"] = series.summary(h.label)
        res = reader.loads(p, f"{h.label}'s load result")
        res["start_unix_here"] = res["start_unix"] - off  # on this machine's clock
        (out / h.label).mkdir(exist_ok=True)
        write_json_atomic(out / h.label / store.LOAD_RESULT, res)
        extra[h.label]["iogen"] = {k: res[k] for k in ("iops", "mbps", "reads", "writes", "run_s", "start_unix",
                                                         "start_unix_here") if k in res}
        if rlog and not h.local:
            timed(h, "fetch", _fetch_file, h, rlog, out / h.label / store.LOAD_LOG)
        h.status = "ok"

    with table:
        drv.run(go)
    done = [json.loads((out / h.label / store.LOAD_RESULT).read_text()) for h in live if h.status == "ok"]
    if done:
        doc["total"] = merge_load(done)
        starts = [r["start_unix_here"] for r in done]
        doc["start_spread_s"] = max(starts) - min(starts)
        doc["start_uncertainty_s"] = max(extra[h.label]["clock_uncertainty_s"] for h in live if h.status == "ok")
    save()
    print(load_text(doc))
    if loadstatus.summary_text(doc):
        print(loadstatus.summary_text(doc))
    print(summary_text(hosts))
    return 0 if len(done) == len(hosts) else 1


def _exists(h: Host, path: str) -> bool:
    if h.local:
        return os.path.lexists(path)
    return run_on(h, f"test -e {ssh.quote(path)} -o -L {ssh.quote(path)} && echo have", timeout=30).stdout.strip() == "have"


def _remove_made(h: Host, path: str) -> None:
    """The load's target file that iogen made (a regular file only: never
    a device, a link or a directory someone put there meanwhile)."""
    if h.local:
        if os.path.isfile(path) and not os.path.islink(path):
            os.unlink(path)
        return
    try:
        run_on(h, f"test -f {ssh.quote(path)} && test ! -L {ssh.quote(path)} && rm -f {ssh.quote(path)}", timeout=30)
    except HostFailed as e:
        print(f"fleet: {h.target}: cannot remove the load's target {path}: {e}", file=sys.stderr)


def _step(drv: Driver, h: Host, cmd: str, program: str, on_line=None) -> str:
    """A load's program on a host to its end: its standard output, read a
    line at a time as it comes; the lines on_line takes (returns true for)
    go to it at once and are left out of what is returned."""
    kept = []

    def line(text: str) -> None:
        if not (on_line and on_line(text)):
            kept.append(text)

    rc, err = drv.follow(h, cmd, line)
    if rc != 0:
        raise HostFailed(f"{program} exited {rc}: {last_lines(err)}")
    return "".join(kept)


def _load_step(drv: Driver, h: Host, cmd: str, on_line=None) -> str:
    outp = _step(drv, h, cmd, "iogen", on_line)
    lines = [ln for ln in outp.splitlines() if ln.startswith("{")]
    if not lines:
        raise HostFailed("iogen printed no result")
    return lines[-1]


def _fetch_file(h: Host, remote: str, local: Path) -> None:
    if h.local:
        os.replace(remote, local)
        return
    got = {}
    write_atomic(local, lambda f: got.setdefault("r", subprocess.run(
        ssh.argv(h.target, f"cat {ssh.quote(remote)} && rm -f {ssh.quote(remote)}"), stdout=f,
        stderr=subprocess.PIPE, timeout=600)), binary=True, shield=False)  # a copy a Ctrl-C must stop
    r = got["r"]
    if r.returncode != 0:
        raise HostFailed(f"fetching {remote}: {r.stderr.decode(errors='replace').strip()}")


def load_text(doc: dict) -> str:
    from osmeter.present.values import fmt_value, text_table

    rows = []
    for h in doc["hosts"]:
        g = h.get("iogen")
        off = h.get("clock_offset_s")
        offs = "-" if off is None else f"{off * 1e3:+.3f} ± {h['clock_uncertainty_s'] * 1e3:.3f} ms"
        if not g:
            rows.append((h["target"], h["status"], "-", "-", offs, "-", h.get("reason", "").split("\n")[0]))
            continue
        late = (g["start_unix_here"] - doc["start_planned_unix"]) * 1e3
        rows.append((h["target"], h["status"], fmt_value(g["iops"], "IOPS"), fmt_value(g["mbps"], "MB/s"), offs,
                     f"{late:+.3f} ms", ""))
    t = doc.get("total")
    if t:
        lat = t["lat_ns"]
        rows.append(("total", "", fmt_value(t["iops"], "IOPS"), fmt_value(t["mbps"], "MB/s"), "", "", ""))
    text = text_table(("host", "status", "IOPS", "MB/s", "clock offset", "start vs plan", "reason"), rows)
    if t and lat.get("count"):
        text += ("\nmerged latency (histograms added): " + ", ".join(
            f"{n.replace('_', '.')} {fmt_value(lat[n], 'ns')}" for n, _ in hist.PCTS) + f", max {fmt_value(lat['max'], 'ns')}")
        text += (f"\nstarts agree within {doc['start_spread_s'] * 1e3:.3f} ms "
                 f"(clock uncertainty ±{doc['start_uncertainty_s'] * 1e3:.3f} ms)")
    return text


# ------------------------------------------------------------ fleet load --net

def _net_server(server: str, root: Path):
    """A context manager yielding HOST:PORT of one netpeer: `local:ADDR`
    starts it here (clients connect to ADDR), USER@HOST starts it there."""
    import contextlib

    from osmeter.remote.osmnet import remote_peer

    netpeer = root / "build" / "bin" / "netpeer"
    if server.startswith("local:"):
        addr = server.split(":", 1)[1]
        if not addr:
            raise RunError("--net local:ADDR: give the address the clients reach this machine at")

        @contextlib.contextmanager
        def here():
            p = subprocess.Popen([str(netpeer), "--port", "0", "--bind", "0.0.0.0"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
            try:
                line = p.stdout.readline()
                if not line.startswith("listening on "):
                    raise RunError(f"netpeer did not start here: {p.stderr.read().strip()}")
                yield f"{addr}:{line.split()[-1].rsplit(':', 1)[-1]}"
            finally:
                p.terminate()
                p.wait()
        return here()
    _check_server(server)
    return remote_peer(server, netpeer, "--net")


def _check_server(server: str) -> None:
    if server.startswith("local:") and server[6:]:
        return
    if server in LOCAL or not HOST_RE.match(server):
        raise RunError(f"--net {server!r}: expected USER@HOST (netpeer started there) or local:ADDR (netpeer here, "
                       "the clients reaching this machine at ADDR)")


def fleet_net(hosts: list[Host], out: Path, server: str, secs: float, parallel_prepare: bool, dirty: bool,
              root: Path, start_in: float, launcher: dict | None = None) -> int:
    _check_server(server)
    ld = Load(hosts, out, {"kind": "fleet-net", "server": server, "seconds": secs, **(launcher or {})}, dirty, root)
    print(f"fleet load --net: {len(hosts)} clients against one netpeer on {server}; results in {out}")
    build_local(root)  # the netpeer of local:ADDR, and the one --net USER@HOST copies there
    live = ld.prepare("net_bw", parallel_prepare)
    doc, extra, save, bins = ld.doc, ld.extra, ld.save, ld.bins
    with _net_server(server, root) as peer:
        doc["peer"] = peer
        start = time.time() + start_in
        doc["start_planned_unix"] = start
        drv = Driver(live, True, save)

        def go(h: Host):
            at = start + extra[h.label]["clock_offset_s"]
            wait = (f"t=$(({int(at * 1e6)} - $(date +%s%6N))); [ $t -gt 0 ] && "
                    f"sleep $(printf '%d.%06d' $((t / 1000000)) $((t % 1000000))); ")
            cmd = (f"echo $$; {wait}exec " + ssh.quote(bins[h.label], "--peer", peer, "--seconds", f"{secs:g}",
                                                         "--samples", "1", "--warmup", "0", "--timeout", "10000"))
            text = timed(h, "load", _step, drv, h, cmd, "net_bw")
            res = {}
            for line in text.splitlines():
                if line.startswith("{"):
                    m = json.loads(line)
                    if m.get("samples"):
                        key = "recv_mbps" if m["params"].get("direction") == "receive" else "send_mbps"
                        res[key] = float(m["samples"][0])
            if "send_mbps" not in res:
                raise HostFailed("net_bw printed no bandwidth")
            extra[h.label]["net"] = res
            h.status = "ok"

        drv.run(go)
    done = [extra[h.label]["net"] for h in live if h.status == "ok"]
    if done:
        doc["total"] = {k: round(sum(d.get(k, 0.0) for d in done), 3) for k in ("send_mbps", "recv_mbps")}
    save()
    from osmeter.present.values import fmt_value, text_table

    rows = [(h.target, h.status, *(fmt_value(extra[h.label].get("net", {}).get(k), "MB/s") if "net" in extra[h.label]
                                   else "-" for k in ("send_mbps", "recv_mbps")), h.reason.split("\n")[0])
            for h in hosts]
    if done:
        rows.append(("total", "", fmt_value(doc["total"]["send_mbps"], "MB/s"), fmt_value(doc["total"]["recv_mbps"],
                                                                                          "MB/s"), ""))
    print(text_table(("client", "status", "to server", "from server", "reason"), rows))
    print(summary_text(hosts))
    return 0 if len(done) == len(hosts) else 1
