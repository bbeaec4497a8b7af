"""`osmeter run`: pin, schedule, run each selected probe with a timeout,
collect its JSON lines, and keep the results directory valid throughout."""
from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import registry
from .machine import describe_conditions, describe_machine
from .results import ProbeOutputError, Results, parse_probe_output, summary_table, to_csv

RT_PRIORITY = 50  # below the kernel's own RT threads (migration, watchdog: 99)


class RunError(Exception):
    """A problem with the request itself: message for the user, exit status 2."""


@dataclass
class RunOptions:
    preset: str = "quick"
    patterns: list[str] | None = None
    out: Path | None = None
    cpu: int | None = None
    rt: bool = True
    disk_target: Path | None = None  # default: a file in the results directory
    disk_size: str | None = None     # default: 256M quick, 1G full
    peer: str | None = None          # HOST:PORT of a running netpeer
    fs_dir: Path | None = None       # where the fs probes make their files (default: the results directory)
    fs_remote: Path | None = None    # a directory on a network/FUSE mount: the fs.read.*.remote ids
    out_used: Path | None = None     # set by run(): where the results went
    remote: str | None = None        # USER@HOST: start a netpeer there over ssh


def repo_root() -> Path:
    env = os.environ.get("OSMETER_ROOT")
    return Path(env) if env else Path(__file__).resolve().parents[2]


def bin_dir(root: Path) -> Path:
    return root / "build" / "bin"


def start_remote_peer(remote: str, root: Path) -> tuple[str, str]:
    """Copies netpeer to USER@HOST over ssh, starts it on any free port, and
    returns (HOST:PORT, the remote path) once it says where it listens."""
    host = remote.rsplit("@", 1)[-1]
    rpath = f"/tmp/osmeter-netpeer-{os.getpid()}"
    ssh = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
    try:
        r = subprocess.run(["scp", "-q", *ssh[1:], str(bin_dir(root) / "netpeer"), f"{remote}:{rpath}"],
                           capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        raise RunError("--remote needs ssh and scp (Debian: openssh-client)") from None
    except subprocess.TimeoutExpired:
        raise RunError(f"--remote {remote}: copying netpeer timed out") from None
    if r.returncode != 0:
        raise RunError(f"--remote {remote}: cannot copy netpeer there: {r.stderr.strip() or 'scp failed'}")
    proc = subprocess.Popen([*ssh, remote, f"exec {rpath} --port 0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("listening on "):
        proc.kill()
        raise RunError(f"--remote {remote}: netpeer did not start there: {proc.stderr.read().strip()}")
    port = line.split()[-1].rsplit(":", 1)[-1]
    _REMOTE.append((proc, ssh + [remote, f"pkill -f {rpath}; rm -f {rpath}"]))
    return f"{host}:{port}", rpath


_REMOTE: list = []


def stop_remote_peers() -> None:
    while _REMOTE:
        proc, cleanup = _REMOTE.pop()
        subprocess.run(cleanup, capture_output=True, timeout=30)
        proc.kill()
        proc.wait()


def ensure_built(root: Path, binaries: list[str]) -> None:
    missing = [b for b in binaries if not (bin_dir(root) / b).exists()]
    if not missing:
        return
    print(f"osmeter: building probes ({', '.join(missing)} missing) ...", file=sys.stderr)
    r = subprocess.run(["make", "-s", "-C", str(root), "all"], capture_output=True, text=True)
    if r.returncode != 0:
        raise RunError(f"'make' failed, so the probes cannot run:\n{r.stderr.strip()[-3000:]}")
    still = [b for b in binaries if not (bin_dir(root) / b).exists()]
    if still:
        raise RunError(f"after 'make', still missing in build/bin: {', '.join(still)}")


def choose_cpu(requested: int | None) -> int:
    allowed = sorted(os.sched_getaffinity(0))
    if requested is None:
        return allowed[-1]  # the last online CPU: usually the least busy with interrupts
    if requested not in allowed:
        raise RunError(
            f"--cpu {requested}: not an online CPU this process may use (allowed: {', '.join(map(str, allowed))})"
        )
    return requested


def fifo_permission() -> tuple[bool, str | None]:
    """Can we run probes under SCHED_FIFO? Tried on ourselves, then undone."""
    if not hasattr(os, "SCHED_FIFO"):
        return False, "this platform has no SCHED_FIFO"
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))
    except PermissionError:
        return False, "not permitted (needs root or CAP_SYS_NICE, or an RLIMIT_RTPRIO above 0)"
    except OSError as e:
        return False, f"sched_setscheduler failed: {e.strerror}"
    os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
    return True, None


def default_out(root: Path) -> Path:
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return root / "results" / f"{socket.gethostname()}-{stamp}"


def _probe_env() -> dict:
    env = dict(os.environ)
    env["LC_ALL"] = "C"
    return env


def run(opts: RunOptions) -> int:
    root = repo_root()
    if opts.peer and opts.remote:
        raise RunError("give --peer or --remote, not both")
    try:
        have = frozenset(k for k, v in (("peer", opts.peer or opts.remote), ("fs_remote", opts.fs_remote)) if v)
        selection = registry.select(opts.patterns, opts.preset, have=have)
    except registry.SelectionError as e:
        raise RunError(str(e)) from None
    if not selection:
        raise RunError(f"preset '{opts.preset}' selects no probe")
    ensure_built(root, [p.binary for p, _ in selection if not p.external])
    peer = opts.peer
    if peer:
        from .osmnet import check_peer
        check_peer(peer)
    if opts.remote:
        peer, _ = start_remote_peer(opts.remote, root)
    cpu = choose_cpu(opts.cpu)

    out = opts.out or default_out(root)
    opts.out_used = out
    if (out / "results.json").exists():
        raise RunError(f"{out} already holds a results.json; choose another --out (nothing was overwritten)")
    out.mkdir(parents=True, exist_ok=True)

    if opts.rt:
        fifo, why_not = fifo_permission()
    else:
        fifo, why_not = False, "disabled with --no-rt"
    sched = {"policy": "SCHED_FIFO", "priority": RT_PRIORITY} if fifo else {"policy": "SCHED_OTHER", "why_not_fifo": why_not}
    if not fifo:
        print(f"osmeter: running without SCHED_FIFO: {why_not}", file=sys.stderr)

    # Keep the harness itself off the measuring CPU when there is another.
    others = sorted(os.sched_getaffinity(0) - {cpu})
    if others:
        os.sched_setaffinity(0, others)

    conditions = describe_conditions(root)
    conditions.update(
        {
            "pinned_cpu": cpu,
            "harness_cpus": others or [cpu],
            "scheduler": sched,
            "preset": opts.preset,
            "selection": opts.patterns,
            "started_utc": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "probe_warnings": [],
        }
    )
    disk_target = opts.disk_target or out / "disk-target.dat"
    subst = {"{disk_target}": str(disk_target),
             "{disk_size}": opts.disk_size or ("1G" if opts.preset == "full" else "256M"),
             "{peer}": peer or "",
             "{peer_host}": (peer.rsplit(":", 1)[0].strip("[]") if peer else "127.0.0.1"),
             "{ping_interval}": "0.01" if os.geteuid() == 0 else "0.2",
             "{fs_dir}": str(opts.fs_dir or out),
             "{fs_remote}": str(opts.fs_remote or "")}
    if opts.fs_remote and not opts.fs_remote.is_dir():
        raise RunError(f"--fs-remote {opts.fs_remote}: not a directory")
    conditions["disk_target"] = {"path": str(disk_target), "size": subst["{disk_size}"],
                                 "made_by_osmeter": opts.disk_target is None}
    results = Results(out, describe_machine(), conditions)
    results.save()
    raw_dir = out / "raw"
    raw_dir.mkdir(exist_ok=True)

    def preexec():
        os.sched_setaffinity(0, {cpu})
        if fifo:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(RT_PRIORITY))

    def on_term(signum, frame):
        raise KeyboardInterrupt

    old_term = signal.signal(signal.SIGTERM, on_term)
    start = time.monotonic()
    status = 0
    derived = registry.select_derived(opts.patterns)
    lines_seen: dict[str, dict] = {}  # every line of every probe so far, derived inputs
    proc = None
    print(f"osmeter: {len(selection)} probes, preset {opts.preset}, pinned to CPU {cpu}, "
          f"{sched['policy']}; writing {out}")
    try:
        for k, (probe, wanted) in enumerate(selection, 1):
            label = f"[{k:>{len(str(len(selection)))}}/{len(selection)}] {probe.name:<20}"
            print(label, end=" ", flush=True)
            args = [subst.get(a, a) for a in probe.presets[opts.preset]]
            if probe.external:
                exe = shutil.which(probe.binary)
                if not exe:
                    why = f"{probe.binary} is not installed"
                    results.doc.setdefault("skipped", []).append({"probe": probe.name, "why": why})
                    results.save()
                    print(f"skipped: {why}")
                    continue
                argv = [exe, *args]  # pinned and scheduled by preexec, like the others
            else:
                argv = [str(bin_dir(root) / probe.binary), "--cpu", str(cpu), *args]
            t0 = time.monotonic()
            proc = subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                preexec_fn=preexec, start_new_session=True, env=_probe_env(),
            )
            try:
                stdout, stderr = proc.communicate(timeout=probe.timeout)
            except subprocess.TimeoutExpired:
                _kill(proc)
                stdout, stderr = proc.communicate()
                results.add_failure(probe.name, f"timed out after {probe.timeout:.0f} s", stderr)
                results.save()
                print(f"TIMEOUT after {probe.timeout:.0f} s")
                status = 1
                continue
            finally:
                elapsed = time.monotonic() - t0
            rc, proc = proc.returncode, None
            (raw_dir / f"{probe.name}.out").write_text(stdout)
            if stderr:
                (raw_dir / f"{probe.name}.err").write_text(stderr)
            for w in (ln for ln in stderr.splitlines() if ln.strip()):
                conditions["probe_warnings"].append(f"{probe.binary}: {w}")
            ok = _collect(results, probe, wanted, rc, stdout, stderr, lines_seen)
            _derive_across(results, derived, lines_seen)
            results.save()
            print(f"{len(wanted):2d} ids {elapsed:6.1f} s  {'ok' if ok else 'FAILED'}", flush=True)
            if not ok:
                status = 1
    except KeyboardInterrupt:
        if proc is not None:
            _kill(proc)
        results.doc["interrupted"] = True
        results.doc["conditions"]["wall_s"] = round(time.monotonic() - start, 3)
        results.save()
        print("\nosmeter: interrupted; kept the probes that finished")
        _finish(results, out)
        return 130
    finally:
        signal.signal(signal.SIGTERM, old_term)
        stop_remote_peers()
        if opts.disk_target is None and disk_target.exists():
            disk_target.unlink()  # the file osmeter made for the disk probes
    results.doc["complete"] = True
    results.doc["conditions"]["wall_s"] = round(time.monotonic() - start, 3)
    results.save()
    _finish(results, out)
    if results.doc["failures"]:
        print(f"osmeter: {len(results.doc['failures'])} probe(s) failed; see 'failures' in results.json", file=sys.stderr)
        status = 1
    return status


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _collect(results: Results, probe: registry.Probe, wanted: list[str], rc: int, stdout: str, stderr: str,
             lines_seen: dict[str, dict]) -> bool:
    """Adds what a probe printed; records a failure and returns False when it
    exited non-zero, printed garbage, or left out an id it should print."""
    if rc != 0:
        why = f"exited with status {rc}" if rc > 0 else f"killed by signal {-rc}"
        results.add_failure(probe.name, why, stderr)
        return False
    try:
        lines = probe.parse(stdout) if probe.parse else parse_probe_output(stdout)
        if probe.derive is not None:
            lines += probe.derive(lines)
        descriptions = {m.id: m.description for m in probe.measures}
        got = set()
        for line in lines:
            lines_seen[line["id"]] = line
            if line["id"] in wanted:
                results.add_line(line, probe.name, descriptions[line["id"]])
                got.add(line["id"])
    except (ProbeOutputError, ValueError, KeyError, TypeError) as e:
        results.add_failure(probe.name, f"bad output: {e}", stderr)
        return False
    missing = [i for i in wanted if i not in got]
    if missing:
        results.add_failure(probe.name, f"did not print {', '.join(missing)}", stderr)
        return False
    return True


def _derive_across(results: Results, derived: list[registry.Derived], lines_seen: dict[str, dict]) -> None:
    """Adds each derived figure once all its inputs have been measured."""
    done = {m["id"] for m in results.measurements}
    for d in derived:
        if d.measure.id in done or not all(i in lines_seen for i in d.inputs):
            continue
        try:
            results.add_line(d.fn(lines_seen), "derived", d.measure.description)
        except (ProbeOutputError, KeyError, ValueError, ZeroDivisionError) as e:
            results.add_failure(d.measure.id, f"cannot derive: {e}")


def _finish(results: Results, out: Path) -> None:
    table = summary_table(results.doc)
    (out / "summary.txt").write_text(table + "\n")
    (out / "results.csv").write_text(to_csv(results.doc))
    print()
    print(table)
    dropped = [(m["id"], m["dropped_disturbed"], m["samples_total"]) for m in results.measurements
               if m.get("dropped_disturbed")]
    if dropped:
        print("disturbed samples dropped (a migration or deschedule inside the window): "
              + ", ".join(f"{i} {d}/{n}" for i, d, n in dropped))
    # the same warning from several probes (a non-invariant TSC, say) once
    warnings = dict.fromkeys(w.split("warning: ", 1)[-1] for w in results.doc["conditions"]["probe_warnings"])
    for w in warnings:
        print(f"warning: {w}")
    wall = results.doc["conditions"].get("wall_s")
    print(f"\nosmeter: {len(results.measurements)} measurements in {wall} s; results in {out}/results.json")
