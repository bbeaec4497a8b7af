"""Many machines: `--remote`, `osmeter fleet run`, `compare` of a fleet,
`osmeter fleet load` (iogen and net_bw), against namespace hosts with their
own sshd (tests/nshosts.py). The hosts share this kernel and file system:
these tests prove the path (ssh, ship, build, run, fetch, merge, start
together, fail), not a second machine's figures."""
from __future__ import annotations

import csv
import json
import shutil
import sys
import time
from pathlib import Path

import pytest

import nshosts
from conftest import ROOT, osmeter
from osmeter import fleet, hist, ssh

why = nshosts.available()
needs_hosts = pytest.mark.skipif(why is not None, reason=why or "")


@pytest.fixture(scope="module")
def hosts(tmp_path_factory):
    """Hosts 0 and 1 answer; 2's sessions have no make; 3 runs no sshd."""
    tmp = tmp_path_factory.mktemp("nshosts")
    nomake = tmp / "nomake-bin"
    nomake.mkdir()
    for tool in ("sh", "bash", "python3", "tar", "cc", "gcc", "env", "cat", "rm", "mkdir", "mv", "test", "date"):
        if shutil.which(tool):
            (nomake / tool).symlink_to(shutil.which(tool))
    with nshosts.ns_hosts(4, tmp, broken={2: {"path_dir": nomake}, 3: {"sshd": False}}, first_net=41) as hs:
        yield hs
    for d in (Path.home() / ".osmeter-fleet").glob("10.231.*"):
        shutil.rmtree(d, ignore_errors=True)


def fleet_cmd(hs, *args, timeout=900):
    return osmeter("fleet", *args, timeout=timeout, env=hs.env)


# ---------------------------------------------------------------- no ssh

def test_hosts_are_checked_before_anything_runs():
    assert [h.label for h in fleet.parse_hosts("root@a.example, b,local")] == ["a.example", "b", "local"]
    assert [h.label for h in fleet.parse_hosts("u1@h,u2@h")] == ["u1_at_h", "u2_at_h"]
    for bad in ("", ",", "a b", "root@h;rm -rf /", "h,h"):
        with pytest.raises(fleet.RunError):
            fleet.parse_hosts(bad)
    r = osmeter("fleet", "run", "--hosts", "root@bad host")
    assert r.returncode == 2 and "not a host" in r.stderr


def test_ssh_failures_are_said_in_words():
    assert "connection refused" in ssh.reason("ssh: connect to host x port 22: Connection refused")
    assert "refused the key" in ssh.reason("root@x: Permission denied (publickey).")
    assert "unknown host" in ssh.reason("ssh: Could not resolve hostname nope: Name or service not known")


def test_merged_percentiles_come_from_added_histograms():
    """Two hosts, one fast and one slow: the merged p50 sits where the
    added counts put it, which no average of the two p50s gives."""
    def host(values, iops):
        counts: dict[int, int] = {}
        for v in values:
            counts[hist.bucket_of(v)] = counts.get(hist.bucket_of(v), 0) + 1
        return {"iops": iops, "mbps": iops * 4096 / 1e6, "read_iops": iops, "write_iops": 0.0,
                "reads": len(values), "writes": 0,
                "lat_ns": {"count": len(values), "min": min(values), "max": max(values),
                           "mean": sum(values) / len(values),
                           "hist": {"sub_bits": 6, "counts": sorted(counts.items())}}}
    fast = host([10_000] * 900, 900.0)
    slow = host([1_000_000] * 100, 100.0)
    t = fleet.merge_load([fast, slow])
    assert t["iops"] == 1000.0 and t["lat_ns"]["count"] == 1000
    assert hist.bucket_of(int(t["lat_ns"]["p50"])) == hist.bucket_of(10_000)
    assert hist.bucket_of(int(t["lat_ns"]["p99"])) == hist.bucket_of(1_000_000)
    assert t["lat_ns"]["p90"] < 20_000  # the 900th of 1000 is still fast: averaging p90s (505 us) is not


@pytest.mark.parametrize("python_filter", [True, False])
def test_fetched_results_cannot_escape_their_directory(tmp_path, monkeypatch, python_filter):
    import io
    import tarfile

    def stream(name: str, kind=tarfile.REGTYPE):
        b = io.BytesIO()
        with tarfile.open(fileobj=b, mode="w") as t:
            ti = tarfile.TarInfo(name)
            ti.type, ti.size = kind, 0 if kind != tarfile.REGTYPE else 2
            if kind == tarfile.SYMTYPE:
                ti.linkname = "/etc/passwd"
            t.addfile(ti, io.BytesIO(b"ok") if kind == tarfile.REGTYPE else None)
        b.seek(0)
        return tarfile.open(fileobj=b, mode="r|")

    if not python_filter:
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    fleet._extract_safely(stream("./results.json"), tmp_path / "ok")
    assert (tmp_path / "ok" / "results.json").read_bytes() == b"ok"
    for bad in (stream("../evil"), stream("link", tarfile.SYMTYPE)):
        with pytest.raises((fleet.HostFailed, tarfile.TarError)):
            fleet._extract_safely(bad, tmp_path / "bad")
    try:  # an absolute name is refused, or (Python's filter) made relative: never written outside
        fleet._extract_safely(stream("/abs/evil"), tmp_path / "bad")
    except (fleet.HostFailed, tarfile.TarError):
        pass
    assert not Path("/abs/evil").exists()
    assert not (tmp_path / "evil").exists() and not (tmp_path / "bad" / "link").exists()


def _fleet_dir(tmp_path: Path, hosts: list[dict]) -> Path:
    """A fleet directory by hand: each host with a results directory of
    synthetic samples (test_compare.make_run) under its label."""
    import numpy as np
    from test_compare import make_run

    out = tmp_path / "fleet"
    out.mkdir(parents=True)
    rng = np.random.default_rng(5)
    for h in hosts:
        if h.get("results") and not (out / h["results"]).exists():
            make_run(out / h["results"], {"cpu.a": ("ns", 100 * np.exp(rng.normal(0, 0.01, 30)))})
    (out / "fleet.json").write_text(json.dumps({"kind": "fleet-run", "hosts": hosts}))
    return out


def test_a_fleet_index_with_duplicate_labels_is_refused_not_a_host_dropped(tmp_path):
    """Two hosts of one label would share a directory, and the second
    silently replaced the first in compare: refused, naming the label."""
    out = _fleet_dir(tmp_path, [{"target": "root@a", "label": "a", "status": "ok", "results": "a"},
                                {"target": "root@b", "label": "b", "status": "ok", "results": "b"},
                                {"target": "u@a", "label": "a", "status": "ok", "results": "a"}])
    for cmd in (("compare", str(out)), ("report", str(out), "--no-pdf")):
        r = osmeter(*cmd)
        assert r.returncode == 2, r.stdout + r.stderr
        assert "same label 'a'" in r.stderr and "Traceback" not in r.stderr and not r.stdout.strip()
    good = _fleet_dir(tmp_path / "g", [{"target": "root@a", "label": "a", "status": "ok", "results": "a"},
                                       {"target": "root@b", "label": "b", "status": "ok", "results": "b"}])
    r = osmeter("compare", str(good))
    assert r.returncode == 0 and "b/a" in r.stdout, r.stderr


@pytest.mark.parametrize("doc, says", [
    ([{"label": "a"}], "not a fleet index"),
    ({"hosts": {"label": "a"}}, '"hosts" must be a list'),
    ({"hosts": ["root@a"]}, "host 1 is not an object"),
    ({"hosts": [{"target": "root@a", "status": "ok"}]}, "no usable label"),
    ({"hosts": [{"target": "root@a", "label": "../..", "results": "../.."}]}, "no usable label"),
    ({"hosts": [{"target": "root@a", "label": "a", "results": 7}]}, "results must be text"),
    ({"hosts": [{"target": "root@a", "label": "a", "results": "b"}]}, "not the host's own directory"),
    ({"hosts": [{"target": "root@a", "label": "a", "results": "a", "steps": [1, 2]}]}, "steps must map"),
    ({"hosts": [{"target": "root@a", "label": "a", "results": "a"}], "osmeter_run_args": "--probes x"},
     "osmeter_run_args"),
    ("{not json", "cannot read it"),
])
def test_a_malformed_fleet_index_is_a_clear_error_not_a_traceback(tmp_path, doc, says):
    out = _fleet_dir(tmp_path, [{"target": "root@a", "label": "a", "status": "ok", "results": "a"}])
    (out / "fleet.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    for cmd in (("compare", str(out)), ("report", str(out), "--no-pdf")):
        r = osmeter(*cmd)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert says in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_compare_of_a_fleet_refuses_tex_before_printing_anything(tmp_path):
    out = _fleet_dir(tmp_path, [{"target": "root@a", "label": "a", "status": "ok", "results": "a"},
                                {"target": "root@b", "label": "b", "status": "ok", "results": "b"}])
    for flag in ("--tex", "--plot"):
        r = osmeter("compare", str(out), flag, str(tmp_path / "x.out"), "--csv", str(tmp_path / "f.csv"))
        assert r.returncode == 2 and "osmeter report FLEETDIR" in r.stderr
        assert r.stdout == "" and not (tmp_path / "f.csv").exists()


# ------------------------------------------------------ namespace hosts

@needs_hosts
def test_remote_measures_against_a_namespace_host(hosts, tmp_path):
    out = tmp_path / "remote"
    r = osmeter("run", "--remote", hosts[0].target, "--probes", "net.rtt.tcp.*,net.rtt.udp.*", "--no-report",
                "--out", str(out), env=hosts.env, timeout=300)
    assert r.returncode == 0, r.stderr
    ms = {m["id"]: m for m in json.loads((out / "results.json").read_text())["measurements"]}
    for i in ("net.rtt.tcp.remote", "net.rtt.udp.remote", "net.rtt.tcp.loopback"):
        assert ms[i]["n"] > 0 and ms[i]["median"] > 0
    assert ms["net.rtt.tcp.remote"]["params"]["where"] == "remote"
    # the netpeer it started there is gone, and so is its private copy (a mktemp -d directory)
    left = shutil.which("pgrep") and __import__("subprocess").run(["pgrep", "-f", "osmeter-netpeer"],
                                                                   capture_output=True).stdout
    assert not left and not list(Path("/tmp").glob("osmeter-netpeer*"))


@needs_hosts
def test_remote_through_an_ssh_config_alias_measures_the_host_it_reached(hosts, tmp_path):
    """--remote root@ALIAS, where only ~/.ssh/config knows ALIAS: the probes
    use the address the ssh session reached (SSH_CONNECTION), not the alias."""
    config = tmp_path / "ssh_config"
    config.write_text(f"Host osmeter-alias\n  HostName {hosts[0].addr}\n"
                      + hosts.config.read_text().replace("Host 10.231.*", "Host 10.231.* osmeter-alias"))
    env = dict(hosts.env, OSMETER_SSH_CONFIG=str(config))
    out = tmp_path / "alias"
    r = osmeter("run", "--remote", "root@osmeter-alias", "--probes", "net.rtt.tcp.*", "--no-report",
                "--out", str(out), env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    ms = {m["id"]: m for m in json.loads((out / "results.json").read_text())["measurements"]}
    assert ms["net.rtt.tcp.remote"]["n"] > 0


@needs_hosts
def test_remote_never_follows_a_link_planted_at_a_guessable_path(hosts, tmp_path):
    """Another user's links at /tmp/osmeter-netpeer-<pid> for the next pids
    (the old fixed name) are never written through: the copy goes into a
    fresh mktemp -d directory, and the victim's file is untouched."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    here = int(Path("/proc/sys/kernel/ns_last_pid").read_text())  # the next processes get the pids after it
    links = [Path(f"/tmp/osmeter-netpeer-{p}") for p in range(here + 1, here + 400)]
    for ln in links:
        if not ln.exists() and not ln.is_symlink():
            ln.symlink_to(victim)
    try:
        r = osmeter("run", "--remote", hosts[0].target, "--probes", "net.rtt.tcp.*", "--no-report",
                    "--out", str(tmp_path / "r"), env=hosts.env, timeout=300)
        assert r.returncode == 0, r.stderr
        assert victim.read_text() == "precious\n"
    finally:
        for ln in links:
            if ln.is_symlink() and ln.resolve() == victim:
                ln.unlink()


@needs_hosts
def test_fleet_run_two_hosts_and_local_then_compare_and_report(hosts, tmp_path):
    out = tmp_path / "fleet"
    t0 = time.monotonic()
    r = fleet_cmd(hosts, "run", "--hosts", f"{hosts[0].target},{hosts[1].target},local", "--probes",
                  "cpu.call,cpu.syscall", "--dirty", "--python", sys.executable, "--out", str(out))
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stdout + r.stderr
    idx = json.loads((out / "fleet.json").read_text())
    assert [h["status"] for h in idx["hosts"]] == ["ok", "ok", "ok"]
    for h in idx["hosts"]:
        doc = json.loads((out / h["label"] / "results.json").read_text())
        assert {"cpu.call.args0", "cpu.syscall.getppid"} <= {m["id"] for m in doc["measurements"]}
        assert h["steps"]["run"] > 0
    remote = idx["hosts"][0]
    assert set(remote["steps"]) == {"check", "ship", "build", "setup", "run", "fetch"}
    assert sum(idx["hosts"][0]["steps"].values()) < took
    # one column per host, against the first
    c = osmeter("compare", str(out), env=hosts.env)
    assert c.returncode == 0, c.stderr
    head = next(ln for ln in c.stdout.splitlines() if ln.startswith("id"))
    assert f"{hosts[1].addr}/{hosts[0].addr}" in head and f"local/{hosts[0].addr}" in head
    row = next(ln for ln in c.stdout.splitlines() if ln.startswith("cpu.syscall.getppid "))
    ratios = [float(w) for w in row.split()[4:] if w.replace(".", "", 1).isdigit()]
    assert len(ratios) == 2 and all(0.2 < x < 5 for x in ratios)  # one kernel: the same order of cost
    c = osmeter("compare", str(out), "--baseline", "local", "--csv", str(tmp_path / "f.csv"))
    assert c.returncode == 0 and f"{hosts[0].addr}/local" in c.stdout
    rows = list(csv.reader(ln for ln in (tmp_path / "f.csv").read_text().splitlines() if not ln.startswith("#")))
    assert {r[2] for r in rows[1:]} == {"local", hosts[0].addr, hosts[1].addr}
    assert osmeter("compare", str(out), "--baseline", "nohost").returncode == 2
    # the report's Fleet section, with its figure
    rp = osmeter("report", str(out), "--no-pdf")
    assert rp.returncode == 0, rp.stderr
    tex = (out / "fleet.tex").read_text()
    assert r"\section{Fleet}" in tex and (out / "fleet-figures" / "fleet-ratios.pdf").stat().st_size > 1000
    # a second run of the same tree ships and builds nothing
    out2 = tmp_path / "fleet2"
    r = fleet_cmd(hosts, "run", "--hosts", hosts[0].target, "--probes", "cpu.syscall", "--dirty", "--python",
                  sys.executable, "--out", str(out2))
    assert r.returncode == 0, r.stderr
    steps = json.loads((out2 / "fleet.json").read_text())["hosts"][0]["steps"]
    assert steps["ship"] < remote["steps"]["ship"] + 1 and steps["build"] < 10


@needs_hosts
def test_failing_hosts_are_named_with_the_reason_and_the_others_go_on(hosts, tmp_path):
    out = tmp_path / "fleet"
    bad = [hosts[3].target, f"nobody@{hosts[0].addr}", hosts[2].target]
    t0 = time.monotonic()
    r = fleet_cmd(hosts, "run", "--hosts", ",".join([*bad, "local"]), "--probes", "cpu.syscall", "--dirty",
                  "--python", sys.executable, "--out", str(out))
    assert time.monotonic() - t0 < 120
    assert r.returncode == 1
    idx = {h["target"]: h for h in json.loads((out / "fleet.json").read_text())["hosts"]}
    assert idx[bad[0]]["status"] == "failed" and "connection refused" in idx[bad[0]]["reason"]
    assert idx[bad[1]]["status"] == "failed" and "refused the key" in idx[bad[1]]["reason"]
    assert idx[bad[2]]["status"] == "failed" and "lacks make" in idx[bad[2]]["reason"]
    assert idx["local"]["status"] == "ok" and (out / "local" / "results.json").is_file()
    for b in bad:
        assert b in r.stderr
    c = osmeter("compare", str(out))
    assert c.returncode == 0 and "only one host has results" in c.stdout and "no results:" in c.stdout


@needs_hosts
def test_fleet_load_is_synchronized_and_merges_histograms(hosts, tmp_path):
    target = ROOT / "build" / "test-fleet-{host}.dat"
    out = tmp_path / "load"
    r = fleet_cmd(hosts, "load", "--hosts", f"{hosts[0].target},{hosts[1].target}", "--target", str(target),
                  "--size", "64M", "--time", "2", "--ramp", "0.2", "--qd", "4", "--log", "--dirty",
                  "--start-in", "3", "--out", str(out), timeout=600)
    try:
        assert r.returncode == 0, r.stdout + r.stderr
        doc = json.loads((out / "load.json").read_text())
        per = [json.loads((out / h.addr / "iogen.json").read_text()) for h in hosts[:2]]
        total = doc["total"]
        assert abs(total["iops"] - sum(p["iops"] for p in per)) <= 0.01 * total["iops"]
        assert total["lat_ns"]["count"] == sum(p["lat_ns"]["count"] for p in per)
        # the merged p99 against the p99 of every logged request of both hosts (measured ones only)
        lats = []
        for h, p in zip(hosts[:2], per):
            with open(out / h.addr / "iogen-log.csv") as f:
                lats += [int(row["latency_ns"]) for row in csv.DictReader(f)]
        assert len(lats) >= total["lat_ns"]["count"] * 0.99
        lats.sort()
        exact = lats[min(len(lats) - 1, int(0.99 * len(lats)))]
        assert abs(hist.bucket_of(int(total["lat_ns"]["p99"])) - hist.bucket_of(exact)) <= 1
        # the starts agree within the clocks' measured uncertainty plus a scheduling margin
        offs = [h["clock_uncertainty_s"] for h in doc["hosts"]]
        assert all(abs(h["clock_offset_s"]) < 0.05 for h in doc["hosts"])  # one kernel: one clock
        assert doc["start_spread_s"] <= 2 * max(offs) + 0.02
        assert "merged latency" in r.stdout and "clock offset" in r.stdout
    finally:
        for h in hosts[:2]:
            Path(str(target).replace("{host}", h.addr)).unlink(missing_ok=True)


@needs_hosts
def test_fleet_net_load_many_clients_one_server(hosts, tmp_path):
    out = tmp_path / "net"
    r = fleet_cmd(hosts, "load", "--net", f"local:{hosts[0].addr.rsplit('.', 1)[0]}.1", "--hosts",
                  f"{hosts[0].target},{hosts[1].target}", "--time", "1", "--start-in", "2", "--dirty",
                  "--out", str(out), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads((out / "load.json").read_text())
    sends = [h["net"]["send_mbps"] for h in doc["hosts"]]
    assert all(s > 0 for s in sends)
    assert abs(doc["total"]["send_mbps"] - sum(sends)) < 0.01 * doc["total"]["send_mbps"]
    t0 = time.monotonic()
    r = fleet_cmd(hosts, "load", "--net", "local", "--hosts", hosts[0].target, "--out", str(tmp_path / "n2"))
    assert r.returncode == 2 and "local:ADDR" in r.stderr and time.monotonic() - t0 < 10
    r = fleet_cmd(hosts, "load", "--net", "nobody@nohost.invalid", "--hosts", hosts[0].target, "--time", "1",
                  "--out", str(tmp_path / "n3"))
    assert r.returncode == 2 and "--net nobody@nohost.invalid: ssh: unknown host name" in r.stderr


@needs_hosts
def test_ctrl_c_stops_every_remote_run_and_keeps_what_finished(hosts, tmp_path):
    import signal
    import subprocess

    out = tmp_path / "fleet"
    p = subprocess.Popen([str(ROOT / "osmeter"), "fleet", "run", "--hosts", f"{hosts[0].target},{hosts[1].target}",
                          "--parallel", "--probes", "timer.latency,sched.wakeup", "--dirty", "--python", sys.executable, "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=hosts.env)
    seen: set[str] = set()
    for line in p.stdout:  # each host has finished sched.wakeup's first of 3 processes; timer.latency runs for seconds
        if "] [1/4]" in line:
            seen.add(line.split("]")[0])
        if len(seen) == 2:
            break
    p.send_signal(signal.SIGINT)
    rest, err = p.communicate(timeout=120)
    assert p.returncode == 130, err
    idx = json.loads((out / "fleet.json").read_text())
    for h in idx["hosts"]:
        assert h["status"] == "interrupted", h
        doc = json.loads((out / h["label"] / "results.json").read_text())
        probes = {m["probe"] for m in doc["measurements"]}
        assert len(probes) == 1, probes  # the first probe's ids kept, the interrupted one's not
    left = subprocess.run(["pgrep", "-f", "osmeter run"], capture_output=True, text=True).stdout.split()
    assert not [pid for pid in left if int(pid) != p.pid]
