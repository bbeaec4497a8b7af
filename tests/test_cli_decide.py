"""`osmeter decide` in git bisect's language (issue 57): 0 good, 1 bad,
125 cannot tell, 128 or more for wrong usage, an unexpected failure or a
signal (which stops git bisect); a Ctrl-C reaches the run under way, which
ends itself as `osmeter run` does."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, osmeter


def one_line_no_traceback(r: subprocess.CompletedProcess) -> None:
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("osmeter decide: error: "), r.stderr
    assert "Traceback" not in r.stderr + r.stdout


def test_wrong_usage_exits_128_or_more_in_one_line(small_run, tmp_path):
    """A missing baseline, a threshold out of range or not a number, an --out
    that is a file, an option decide does not know, run arguments not after
    --, no --baseline at all: each exits 128 or more (git bisect stops; 1 and
    2 would name a commit bad) with one line on stderr and no traceback, and
    nothing is made in --out's place; a baseline whose preset is none
    (an option, say) is refused before any run. Mutants caught: wrong usage exiting 2;
    decide's parser errors exiting argparse's 2."""
    afile = tmp_path / "afile"
    afile.write_text("x")
    hostile = tmp_path / "hostile"  # a preset from the file that would be an option of each run
    hostile.mkdir()
    doc = json.loads((small_run / "results.json").read_text())
    doc["conditions"]["preset"] = f"--out={afile}"
    (hostile / "results.json").write_text(json.dumps(doc))
    cases = {
        "a baseline's preset no preset": ("--baseline", str(hostile)),
        "missing baseline": ("--baseline", str(tmp_path / "nonexistent")),
        "threshold out of range": ("--baseline", str(small_run), "--threshold", "2"),
        "threshold not a number": ("--baseline", str(small_run), "--threshold", "abc"),
        "--out a file": ("--baseline", str(small_run), "--out", str(afile)),
        "unknown option": ("--baseline", str(small_run), "--no-such-option"),
        "run args before --": ("--baseline", str(small_run), "app.trace"),
        "no baseline": ("--probes", "cpu.*"),
        "no id matches": ("--baseline", str(small_run), "--probes", "mem.*"),
    }
    for what, args in cases.items():
        out = () if "--out" in args else ("--out", str(tmp_path / "out"))
        r = osmeter("decide", *args, *out, timeout=120)
        assert r.returncode >= 128, (what, r.returncode, r.stderr)
        one_line_no_traceback(r)
    assert afile.read_text() == "x"
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_a_run_that_fails_is_cannot_tell_125_and_its_runs_stay_in_a_private_directory(small_run, tmp_path):
    """A run that fails (its --app-trace missing) is git bisect's skip, 125,
    never bad, with its last line said; what it wrote stays in a private
    directory (0700, an unguessable name) made inside --out, and nothing
    else is made there. Mutant caught: a failed run calling the commit bad."""
    out = tmp_path / "out"
    r = osmeter("decide", "--baseline", str(small_run), "--out", str(out), "--", "--app-trace",
                str(tmp_path / "nonexistent"), timeout=300)
    assert r.returncode == 125, r.stdout + r.stderr
    assert "run 1 failed" in r.stderr and "nonexistent" in r.stderr and "Traceback" not in r.stderr
    made = list(out.iterdir())
    assert len(made) == 1 and made[0].name.startswith("decide-") and made[0].is_dir()
    assert stat.S_IMODE(made[0].stat().st_mode) == 0o700
    assert re.fullmatch(r"decide-\d{8}T\d{6}-[a-z0-9_]{8}", made[0].name), made[0].name  # mkdtemp's tail, no PID
    assert (made[0] / "run-01.log").exists()


def test_an_unexpected_failure_of_decide_is_255_in_one_line_never_1(small_run, tmp_path, monkeypatch, capsys):
    """An exception decide does not expect (here: starting the run fails
    with a RuntimeError) is one line on stderr and exit 255, which stops
    git bisect; not a traceback and exit 1, which git bisect reads as bad.
    Mutant caught: the catch-all removed."""
    from osmeter.cli import build_parser, cmd_decide

    def boom(*a, **k):
        raise RuntimeError("boom")

    monkeypatch.setattr(cmd_decide.subprocess, "Popen", boom)
    args = build_parser().parse_args(["decide", "--baseline", str(small_run), "--out", str(tmp_path / "o")])
    assert cmd_decide.main(args) == 255
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "RuntimeError: boom" in err[0], err


def test_a_dead_runs_state_that_cannot_be_undone_stops_the_bisection(small_run, tmp_path, monkeypatch, capsys):
    """What a killed run left, when it cannot be undone (here: the undo
    raises RunError, as a tracefs it cannot write), makes the whole command
    exit 255 in one line before any run; not the 2 every other command
    exits with, which git bisect would read as a bad commit. Mutant caught:
    decide back among the commands the CLI recovers first."""
    from osmeter.cli import main as cli_main
    from osmeter.core.errors import RunError
    from osmeter.running import recover

    def stuck(*a, **k):
        raise RunError("tracefs: instance osmeter-1: Device or resource busy")

    monkeypatch.setattr(recover, "undo_dead_runs", stuck)
    assert cli_main(["decide", "--baseline", str(small_run), "--out", str(tmp_path / "o")]) == 255
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "could not be undone" in err[0] and "resource busy" in err[0], err
    assert not (tmp_path / "o").exists()


def test_git_bisect_run_stops_on_a_missing_baseline_instead_of_naming_a_commit(tmp_path):
    """`git bisect run osmeter decide --baseline /nonexistent` in a repository
    of three commits: git bisect stops (the run failed, exit 128 or more)
    and names no first bad commit. Mutant caught: wrong usage exiting 2."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    commits = []
    for k in range(3):
        (repo / "n").write_text(str(k))
        subprocess.run([*git, "add", "-A"], check=True)
        subprocess.run([*git, "commit", "-qm", f"c{k}"], check=True)
        commits.append(subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip())
    subprocess.run([*git, "bisect", "start", commits[-1], commits[0]], check=True, capture_output=True)
    r = subprocess.run([*git, "bisect", "run", str(ROOT / "osmeter"), "decide", "--baseline",
                        str(tmp_path / "nonexistent"), "--out", str(tmp_path / "d")],
                       capture_output=True, text=True, timeout=300)
    assert "is the first bad commit" not in r.stdout, r.stdout
    assert r.returncode != 0 and "bisect run failed" in r.stdout + r.stderr, r.stdout + r.stderr
    assert "no such directory" in r.stdout + r.stderr


def _stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


def _pending(pid: int, signum: int) -> bool:
    """signum pending for pid (sent while it is stopped), from /proc/PID/status's ShdPnd and SigPnd."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    masks = [int(line.split()[1], 16) for line in status.splitlines() if line.startswith(("ShdPnd:", "SigPnd:"))]
    return any(m & (1 << (signum - 1)) for m in masks)


def _probe_under(pid: int, name: str = "sched_timer") -> bool:
    """A probe process (its binary's name) running under pid, at any depth."""
    parent = {}
    for st in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = st.read_text()
        except OSError:
            continue
        comm, rest = text.split("(", 1)[1].rsplit(")", 1)
        parent[int(st.parent.name)] = (int(rest.split()[1]), comm, rest.split()[0])
    for p, (_, comm, state) in parent.items():
        if comm.startswith(name) and state not in "ZX":
            q = p
            while q in parent and q > 1:
                q = parent[q][0]
                if q == pid:
                    return True
    return False


def _alive_osmeter(pid: int) -> bool:
    try:
        return b"osmeter" in Path(f"/proc/{pid}/cmdline").read_bytes() and not _zombie(pid)
    except OSError:
        return False


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_to_decide_reaches_the_run_which_ends_itself_and_decide_exits_128_plus_it(tmp_path, sig):
    """decide's run of sched.timer (5 processes of 0.5 s) is frozen
    (SIGSTOP) between its first and last process; then the signal goes to
    decide alone. decide passes it on (seen pending at the frozen run), the
    run goes on (SIGCONT) and ends itself: its results.json is marked
    interrupted, its lock is gone, no process of it is left; decide says
    what it kept where and exits 128 + the signal (130, 143: git bisect
    stops). No timing is assumed: a run that ended before it was frozen is
    let go, and the next run is caught instead. Mutant caught: the run
    killed (SIGKILL) instead of told."""
    base = tmp_path / "base"
    r = osmeter("run", "--probes", "sched.timer.latency", "--out", str(base), "--no-report", "--no-history")
    assert r.returncode == 0, r.stderr[-2000:]
    out = tmp_path / "out"
    p = subprocess.Popen([str(ROOT / "osmeter"), "decide", "--baseline", str(base), "--threshold", "0.001",
                          "--max-runs", "50", "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    caught = None
    try:
        deadline = time.monotonic() + 600
        while caught is None and p.poll() is None and time.monotonic() < deadline:
            for lock in out.glob("decide-*/run-*/.osmeter.lock"):
                d = lock.parent
                first, last = d / "raw" / "sched.timer.p1.out", d / "raw" / "sched.timer.p5.out"
                try:
                    pid = int(lock.read_text().strip() or 0)
                except (OSError, ValueError):
                    continue
                if not pid or not first.exists() or last.exists():
                    continue
                os.kill(pid, signal.SIGSTOP)
                while not _stopped(pid) and _alive_osmeter(pid):
                    time.sleep(0.01)
                # frozen inside its passes: a probe process of it runs (the run may stop before a 5th
                # process once its figure is known: a fresh CI froze one past its last, which ended whole)
                if _stopped(pid) and lock.exists() and not last.exists() and _probe_under(pid):
                    caught = (pid, d)
                    break
                os.kill(pid, signal.SIGCONT)  # it had got past them: let it go, catch the next run
            time.sleep(0.005)
        assert caught is not None, "no run of decide was caught under way: " + (p.stdout.read() if p.poll() else "")
        pid, d = caught
        os.kill(p.pid, sig)
        while not _pending(pid, sig):
            assert p.poll() is None, p.communicate()
            time.sleep(0.01)
        os.kill(pid, signal.SIGCONT)
        stdout, stderr = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
    assert p.returncode == 128 + sig, (p.returncode, stdout, stderr)
    assert not _alive_osmeter(pid)
    assert not list(out.glob("decide-*/run-*/.osmeter.lock"))
    assert json.loads((d / "results.json").read_text()).get("interrupted") is True
    tail = stderr.strip().splitlines()[-1]
    assert f"interrupted by {signal.Signals(sig).name}" in tail and str(d.parent) in tail and "Traceback" not in stderr
    assert f"{d.name} kept what finished" in tail and "which ended itself" in tail


def test_decide_junit_fails_the_id_found_bad_and_passes_the_good_one(small_run, tmp_path):
    """decide --junit: a baseline (three copies of a run, +-1% apart) in which one id was twice as fast (its
    samples and figure halved) makes this machine bad (exit 1); junitparser reads a test per id, one
    failure (that id), the other not failed."""
    junitparser = pytest.importorskip("junitparser", reason="junitparser from PyPI (make test-deps)")
    import numpy as np

    base = tmp_path / "base"
    fast = "cpu.syscall.getppid"
    names = []
    for k, j in enumerate((0.99, 1.0, 1.01)):
        d = base / f"run-{k + 1:02d}"
        shutil.copytree(small_run, d)
        doc = json.loads((d / "results.json").read_text())
        for m in doc["measurements"]:
            h = j / 2 if m["id"] == fast else j
            m["figure"] *= h
            f = d / m["samples_file"]
            z = dict(np.load(f))
            z["values"] = z["values"] * h
            np.savez(f, **z)
        (d / "results.json").write_text(json.dumps(doc))
        names.append({"name": d.name, "status": "complete"})
    (base / "campaign.json").write_text(json.dumps({"schema": "osmeter-campaign/1", "runs": names}))
    ids = sorted(m["id"] for m in doc["measurements"])
    out = tmp_path / "decide.xml"
    r = osmeter("decide", "--baseline", str(base), "--threshold", "0.3", "--max-runs", "8", "--out",
                str(tmp_path / "d"), "--junit", str(out), timeout=600)
    assert r.returncode == 1, r.stdout + r.stderr
    cases = [c for s in junitparser.JUnitXml.fromfile(str(out)) for c in s]
    assert sorted(c.name for c in cases) == ids
    failed = {c.name for c in cases if any(isinstance(x, junitparser.Failure) for x in c.result)}
    assert failed == {fast}
    # decide stops at the first bad id: the other, not yet good then, is skipped, never failed
    assert all(isinstance(x, junitparser.Skipped) for c in cases if c.name != fast for x in c.result)
