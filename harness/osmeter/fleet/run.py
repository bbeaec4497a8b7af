"""`osmeter fleet run`: the suite on several machines, driven from this one
over OpenSSH, in the manager/worker model of SPEK and Iometer. For each
host, in turn (or all at once with --parallel): check, ship, build
(host.py), then
  run     a thin host (the default): `osmeter run --on HOST --on-tree TREE`
          here, straight into DIR/<label>/: the probes run there, started by
          agent.py (Python's standard library only, no package registry
          needed there), the harness, statistics and figures here (onhost.py);
          with --python: `osmeter run` there with that interpreter (numpy and
          matplotlib there), after its setup, then
  fetch   (--python) its results directory into DIR/<label>/
The host "local" runs here, in this tree. A host that fails is recorded
with its reason and the others go on; Ctrl-C stops every remote run (each
keeps its finished probes) and fetches what finished. DIR/fleet.json indexes
it all, with the seconds each step took.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tarfile
import threading
from dataclasses import asdict
from pathlib import Path

from osmeter.core.errors import RunError
from osmeter.fleet.rounds import Rounds
from osmeter.fleet.host import (FULL_PYTHON, NEEDS, THIN_PYTHON, Driver, Host, HostFailed, build, build_local, check,
                                last_lines, python_ready, run_on, ship, source_tar, stamp, summary_text, timed)
from osmeter.remote import ssh
from osmeter.results import store
from osmeter.results.writer import write_json_atomic
from osmeter.running.runopts import run_args


def _fetch_dir(host: Host, remote_dir: str, local: Path) -> None:
    """The remote directory's files into local (tar over ssh, unpacked safely)."""
    local.mkdir(parents=True, exist_ok=True)
    argv = ssh.argv(host.target, f"tar -C {ssh.quote(remote_dir)} -cf - .")
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        with tarfile.open(fileobj=p.stdout, mode="r|") as tf:
            _extract_safely(tf, local)
    except tarfile.TarError as e:
        p.kill()
        err = p.stderr.read().decode(errors="replace")
        p.wait()
        raise HostFailed(f"fetching {remote_dir}: {ssh.lost(host.target, err, p.returncode) or err.strip() or e}")
    if p.wait() != 0:
        err = p.stderr.read().decode(errors="replace")
        raise HostFailed(f"fetching {remote_dir}: {ssh.lost(host.target, err, p.returncode) or err.strip()}")


def _extract_safely(tf: tarfile.TarFile, dest: Path) -> None:
    """A host's tar stream unpacked under dest only: Python's "data" filter
    where this Python has it (3.11.4+), else the same rules by hand: plain
    files and directories, no absolute path, no "..", nothing else."""
    if hasattr(tarfile, "data_filter"):
        tf.extractall(dest, filter="data")
        return
    for m in tf:
        parts = Path(m.name).parts
        if m.name.startswith("/") or ".." in parts or not (m.isfile() or m.isdir()):
            raise HostFailed(f"refusing {m.name!r} in the fetched results (not a plain file under the directory)")
        m.mode &= 0o755
        tf.extract(m, dest)


# ------------------------------------------------------------ fleet run

def fleet_run(hosts: list[Host], out: Path, opts: dict, parallel: bool, dirty: bool,
              python: str | None, root: Path, launcher: dict | None = None) -> int:
    """`opts`: the run options to pass on, by name (runopts.fleet_values);
    `launcher`: how the hosts were reached when not over ssh ({"slurm": ...}).
    --runs N on thin hosts and local goes in rounds (rounds.py): run 1 on
    every host, then run 2 on every host, ..., so that a drift of the
    machine room (or of the one machine namespace hosts share) falls on
    every host alike rather than on the host that ran then."""
    out.mkdir(parents=True, exist_ok=True)
    if store.is_fleet(out):
        raise RunError(f"{out} already holds a fleet ({store.FLEET}): give a new --out")
    tar, tree, what = source_tar(root, dirty)
    rounds = Rounds(out, opts) if (opts.get("runs") or 1) > 1 and not python and len(hosts) > 1 else None
    args = run_args(dict(opts, runs=None, seed=None) if rounds else opts)
    index = {"kind": "fleet-run", "created_utc": stamp(), "source": what, "tree": tree, "options": opts,
             "osmeter_run_args": args, "parallel": parallel, **(launcher or {}), "hosts": []}
    if rounds:
        index["rounds"] = {"runs": rounds.n, "seed": rounds.seed}
    lock = threading.Lock()

    def save():
        with lock:
            index["hosts"] = [asdict(h) for h in hosts]
            write_json_atomic(out / store.FLEET, index)

    print(f"fleet: {len(hosts)} host{'s' if len(hosts) != 1 else ''}, {what}, "
          f"{'all at once' if parallel else 'one after another'}"
          + (f", {rounds.n} rounds of one run each" if rounds else "") + f"; results in {out}")
    save()

    def one(h: Host, k: int):
        first = k <= 1
        dest = out / h.label / store.run_name(k) if rounds else out / h.label
        more = ["--seed", str(rounds.seeds[k - 1])] if rounds else []
        if h.local:
            if first:
                timed(h, "build", build_local, root)
            cmd = (f"echo $$; exec env OSMETER_ROOT={ssh.quote(root)} {ssh.quote(sys.executable)} -m osmeter run "
                   + ssh.quote(*args, *more) + f" --no-report --out {ssh.quote(dest)}")
            if rounds:
                rounds.run(h, k, lambda: _run_step(drv, h, cmd))
            else:
                timed(h, "run", _run_step, drv, h, cmd)
            h.results = h.label
            return
        if first:
            home = timed(h, "check", check, h, NEEDS, python, FULL_PYTHON if python else THIN_PYTHON)
            h.tree_dir = timed(h, "ship", ship, h, tar, tree, home)
            timed(h, "build", build, h, h.tree_dir)
            _clean_stale(h, f"{ssh.quote(python or 'python3')} {ssh.quote(h.tree_dir)}/harness/osmeter/remote/agent.py")
        if not python:  # a thin host: the harness here, the probes there
            cmd = (f"echo $$; exec env OSMETER_ROOT={ssh.quote(root)} {ssh.quote(sys.executable)} -m osmeter run "
                   + ssh.quote(*args, *more) + f" --no-report --on {ssh.quote(h.target)} "
                   f"--on-tree {ssh.quote(h.tree_dir)} --out {ssh.quote(dest)}")
            try:
                if rounds:
                    rounds.run(h, k, lambda: _run_step(drv, h, cmd, True))
                else:
                    timed(h, "run", _run_step, drv, h, cmd, True)
            finally:
                if store.has_run(dest):
                    h.results = h.label
            return
        _run_python(drv, h, python, args, dest)

    with contextlib.closing(_drivers(hosts, parallel, save, rounds)) as each:  # closed on Ctrl-C too
        for drv, k in each:
            drv.run(lambda h: one(h, k))
    ok = [h for h in hosts if h.status == "ok"]
    print(summary_text(hosts))
    print(f"fleet: {len(ok)} of {len(hosts)} hosts ok; compare them with: osmeter compare {out}")
    return 0 if len(ok) == len(hosts) else 1


def _drivers(hosts: list[Host], parallel: bool, save, rounds: Rounds | None):
    """(Driver, round) for each round: one without rounds; else each round
    drives the hosts still in it (a host that failed leaves), and their
    campaigns are closed however the rounds end."""
    if not rounds:
        yield Driver(hosts, parallel, save), 0
        return
    try:
        for k in range(1, rounds.n + 1):
            live = [h for h in hosts if h.status in ("not run", "ok")]
            if not live:
                break
            for h in live:
                h.status = "not run"
            yield Driver(live, parallel, save), k
    finally:
        rounds.close(hosts)
        save()


def _run_python(drv: Driver, h: Host, python: str, args: list[str], dest: Path) -> None:
    """--python: the whole of osmeter run there, its results fetched after."""
    agent = f"{ssh.quote(python)} {ssh.quote(h.tree_dir)}/harness/osmeter/remote/agent.py"
    launcher = timed(h, "setup", python_ready, h, h.tree_dir, python)
    rres = f"{h.tree_dir}/results/fleet-{stamp()}-{os.getpid()}"
    cmd = f"exec {agent} hold {ssh.quote(rres)} -- {launcher} run {ssh.quote(*args)} --no-report --out {ssh.quote(rres)}"
    failed = None
    try:
        timed(h, "run", _run_step, drv, h, cmd)
    except HostFailed as e:
        failed = e  # the run's own words stay the reason, whatever the fetch says after
    try:
        _fetch_results(h, rres, dest)
    except HostFailed as e:
        if failed is None:
            raise
        failed = HostFailed(f"{failed}; and {e}")
    if failed is not None:
        raise failed


def _clean_stale(h: Host, agent: str) -> None:
    """What killed fleet runs left in the host's tree (agent.py clean)."""
    r = run_on(h, f"{agent} clean {ssh.quote(h.tree_dir)}", timeout=60)
    gone = r.stdout.split()
    if r.returncode != 0:
        raise HostFailed(f"agent.py clean failed there: {last_lines(r.stderr)}")
    if gone:
        print(f"fleet: {h.target}: removed what killed fleet runs left: {', '.join(gone)}", file=sys.stderr)


def _fetch_results(h: Host, rres: str, dest: Path) -> None:
    """The remote run's results directory into dest, when the run wrote one
    (a run refused at its start writes nothing), then removed there."""
    q = ssh.quote(rres)
    have = run_on(h, f"test -e {q}/{store.RESULTS} -o -e {q}/{store.CAMPAIGN} && echo have", timeout=30)
    if have.stdout.strip() == "have":
        timed(h, "fetch", _fetch_dir, h, rres, dest)
        h.results = h.label
    run_on(h, f"rm -rf {q} {ssh.quote(rres + '.lock')}", timeout=60)


def _run_step(drv: Driver, h: Host, cmd: str, here: bool = False) -> None:
    rc, err = drv.follow(h, cmd, lambda line: print(f"[{h.label}] {line.rstrip()}", flush=True), here)
    if rc in (130, 143) or drv.stop.is_set():
        h.status, h.reason = "interrupted", f"stopped by Ctrl-C (exit {rc}); finished probes kept"
        return
    if rc != 0:
        raise HostFailed(f"osmeter run exited {rc}: " + last_lines(err))
