"""Reliability of the harness: no traceback for a bad input, one run per
results directory, nothing left behind by an interrupted or killed run, a
full disk reported and survived."""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import ROOT, osmeter

ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (mounts)")


def _no_traceback(r):
    assert "Traceback" not in r.stderr + r.stdout, r.stderr


# --- bad input: a message and a non-zero status ------------------------------------------------

def _results(tmp_path: Path) -> Path:
    from osmeter.results.writer import Results

    d = tmp_path / "good"
    res = Results(d, {"hostname": "h"}, {"preset": "quick"})
    res.add_line({"id": "cpu.loop", "unit": "ns", "samples": [1.0, 1.1, 0.9], "params": {}}, "cpu.loop", "x")
    res.save()
    return d


@pytest.mark.parametrize("make, words", [
    (lambda d: d.write_text("[1, 2]"), "not an osmeter results file"),
    (lambda d: d.write_text('{"schema": "osmeter/1", "machine": {}, "conditions": {}}'), "'measurements' is missing"),
    (lambda d: d.write_bytes(b'{"schema": "osmeter/1", "x": "\xff"}'), "not a JSON text"),
    (lambda d: d.write_text("{"), "is not valid JSON"),
])
def test_damaged_results_files_are_named(tmp_path, make, words):
    d = tmp_path / "bad"
    d.mkdir()
    make(d / "results.json")
    for cmd in (("compare", str(d), str(d)), ("report", str(d)), ("export", str(d))):
        r = osmeter(*cmd)
        assert r.returncode == 2, (cmd, r.stderr)
        assert words in r.stderr, (cmd, r.stderr)
        _no_traceback(r)


def test_more_bad_inputs_are_named(tmp_path):
    good = _results(tmp_path)
    (tmp_path / "afile").write_text("x")
    cases = [
        (("run", "--probes", "cpu.loop", "--out", str(tmp_path / "afile")), 2, "exists and is not a directory"),
        (("export", str(good), "--csv", str(tmp_path / "no" / "such" / "x.csv")), 2, "cannot write it"),
        (("compare", str(good), str(good), "--plot", str(tmp_path / "x.xyz")), 2, "--plot"),
        (("compare", str(good), str(good), "--min-change", "nan"), 2, "expected a fraction"),
        (("report", str(good), "--estimates", "/dev/zero"), 2, "larger than"),
        (("report", str(good), "--estimates", str(tmp_path)), 2, "is a directory"),
        (("export", str(good / "results.json")), 0, ""),  # the file instead of the directory is fine
    ]
    (tmp_path / "latin1.toml").write_bytes(b'["cpu.loop"]\nnote = "caf\xe9"\ntotal = 1\n')
    cases.append((("report", str(good), "--estimates", str(tmp_path / "latin1.toml")), 2, "not UTF-8"))
    for args, rc, words in cases:
        r = osmeter(*args)
        assert r.returncode == rc, (args, r.stdout, r.stderr)
        assert words in r.stderr, (args, r.stderr)
        _no_traceback(r)
    shutil.rmtree(good / "samples")  # a run whose samples are gone
    r = osmeter("compare", str(good), str(good))
    assert r.returncode == 2 and "cannot read the samples" in r.stderr, r.stderr
    _no_traceback(r)


@ROOT_ONLY
def test_a_read_only_out_is_named(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs")
    try:
        r = osmeter("run", "--probes", "cpu.loop", "--out", str(ro / "run"))
        assert r.returncode == 2 and "Read-only file system" in r.stderr, r.stderr
        _no_traceback(r)
    finally:
        subprocess.run(["umount", str(ro)])


# --- one run per results directory ---------------------------------------------------------------

def test_a_second_run_on_the_same_out_is_refused(tmp_path):
    from test_cli import fake_run

    p = fake_run(tmp_path, ["slow"])
    out = tmp_path / "out"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not (out / "results.json").exists():
        time.sleep(0.05)
    r = osmeter("run", "--probes", "cpu.loop", "--out", str(out))
    p.send_signal(signal.SIGINT)
    p.communicate(timeout=30)
    assert r.returncode == 2 and "being written by another osmeter run" in r.stderr, r.stderr
    doc = json.loads((out / "results.json").read_text())
    assert [m["id"] for m in doc["measurements"]] == []  # the second run wrote nothing there


# --- interrupted and killed runs leave nothing behind --------------------------------------------

# probes of every kind that makes files or children: a disk target, fs scratch
# files, fork children, a netpeer
SUBSET = "cpu.proc,disk.4k-random-read.iops,fs.cache_size,fs.contention,net.bw.tcp.loopback,mem.pagefault.minor"
RESULT_FILES = {"results.json", "samples", "raw", "summary.txt", "results.csv"}


def _ours_alive(marker: str) -> list[str]:
    """Processes whose command line names the test's directory."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if marker in cmd and "pytest" not in cmd:
                out.append(f"{d.name}: {cmd[:120]}")
    return out


def _wait_gone(marker: str, seconds: float = 10.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        left = _ours_alive(marker)
        if not left:
            return []
        time.sleep(0.1)
    return _ours_alive(marker)


def _start(out: Path, fs_dir: Path) -> subprocess.Popen:
    return subprocess.Popen([str(ROOT / "osmeter"), "run", "--probes", SUBSET, "--out", str(out), "--fs-dir",
                             str(fs_dir), "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _check_results(out: Path) -> None:
    doc = json.loads((out / "results.json").read_text())
    assert doc["schema"] == "osmeter/1" and isinstance(doc["measurements"], list)
    for m in doc["measurements"]:
        assert (out / m["samples_file"]).exists(), m["id"]


def test_interrupts_at_random_points_leave_a_valid_run_and_nothing_else(tmp_path):
    """SIGINT at 10 random points of a run, SIGKILL at 3: each time a valid
    results.json, no process left, and no file beyond the results (after a
    SIGKILL, once the next run has cleaned up)."""
    rng = random.Random(13)
    fs_dir = tmp_path / "fs"
    fs_dir.mkdir()
    # how long the whole subset takes, to spread the signals over it
    t0 = time.monotonic()
    full = _start(tmp_path / "timing", fs_dir)
    full.communicate(timeout=600)
    span = time.monotonic() - t0
    for k, sig in enumerate([signal.SIGINT] * 10 + [signal.SIGKILL] * 3):
        out = tmp_path / f"r{k:02d}"
        p = _start(out, fs_dir)
        time.sleep(rng.uniform(0.5, max(1.0, span - 0.5)))
        p.send_signal(sig)
        p.communicate(timeout=120)
        if sig == signal.SIGKILL:
            # the probe dies with the harness (PR_SET_PDEATHSIG), though not in the same instant;
            # the next run removes the files of owners that are gone (zombies included)
            assert _wait_gone(str(fs_dir), 60) == [], f"run {k}: the killed run's probe did not die"
            # the next run removes what the killed one left (its lock's age is the proof it is dead)
            lock = out / ".osmeter.lock"
            if lock.exists():
                os.utime(lock, (time.time() - 60, time.time() - 60))
            r = osmeter("run", "--probes", "cpu.loop", "--out", str(tmp_path / f"after{k:02d}"), "--fs-dir",
                        str(fs_dir), "--no-report")
            assert r.returncode == 0, r.stderr
        else:
            assert p.returncode in (0, 130), p.returncode
        assert _wait_gone(str(out)) == [], f"signal {sig} at run {k}: processes left"
        if (out / "results.json").exists():
            _check_results(out)
            left = {x.name for x in out.iterdir()} - RESULT_FILES
            assert left == set(), f"signal {sig} at run {k}: left {left}"
            assert not [x for x in out.rglob("*.tmp")]
        assert [x.name for x in fs_dir.iterdir()] == [], f"signal {sig} at run {k}: scratch files left"


def test_a_killed_runs_disk_target_is_removed_by_the_next_run(tmp_path):
    out = tmp_path / "killed"
    p = subprocess.Popen([str(ROOT / "osmeter"), "run", "--probes", "disk.4k-random-read.iops", "--out", str(out),
                          "--no-report"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    target = out / "disk-target.dat"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not target.exists():
        time.sleep(0.02)
    assert target.exists()
    time.sleep(0.3)
    p.kill()
    p.wait()
    assert _wait_gone(str(out), 5) == [], "the probe outlived the harness"
    os.utime(out / ".osmeter.lock", (time.time() - 60, time.time() - 60))
    r = osmeter("run", "--probes", "cpu.loop", "--out", str(tmp_path / "next"), "--no-report")
    assert r.returncode == 0, r.stderr
    assert not target.exists() and not (out / ".osmeter.lock").exists()
    assert "removed what killed runs left" in r.stderr


def test_a_user_named_disk_target_osmeter_made_is_removed(tmp_path):
    target = tmp_path / "mine.dat"
    r = osmeter("run", "--probes", "disk.4k-random-read.iops", "--disk-target", str(target), "--out",
                str(tmp_path / "run"), "--no-report")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "run" / "results.json").read_text())
    assert doc["conditions"]["disk_target"]["made_by_osmeter"] is True
    assert not target.exists()
    # one that was there before stays
    target.write_bytes(b"\0" * (1 << 20))
    r = osmeter("run", "--probes", "disk.4k-random-read.iops", "--disk-target", str(target), "--disk-size", "1M",
                "--out", str(tmp_path / "run2"), "--no-report")
    assert r.returncode == 0, r.stderr
    assert target.exists()


# --- a full disk ----------------------------------------------------------------------------------

@ROOT_ONLY
def test_a_full_disk_is_reported_and_earlier_results_stay_intact(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    img = tmp_path / "small.img"
    subprocess.run(["dd", "if=/dev/zero", f"of={img}", "bs=1M", "count=8"], check=True, capture_output=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", str(img)], check=True, capture_output=True)
    if subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], capture_output=True).returncode != 0:
        pytest.skip("cannot loop-mount a file system")
    try:
        first = mnt / "first"
        r = osmeter("run", "--probes", "cpu.syscall", "--out", str(first), "--no-report")
        assert r.returncode == 0, r.stderr
        before = {p.relative_to(first): p.read_bytes() for p in first.rglob("*") if p.is_file()}
        # leave a few KiB free
        st = os.statvfs(mnt)
        with open(mnt / "filler", "wb") as f:
            f.write(b"\0" * max(0, st.f_bavail * st.f_frsize - 24 * 1024))
        second = mnt / "second"
        r = osmeter("run", "--probes", "cpu.*", "--out", str(second), "--no-report")
        assert r.returncode == 1, (r.returncode, r.stderr)
        assert "No space left on device" in r.stderr
        _no_traceback(r)
        assert {p.relative_to(first): p.read_bytes() for p in first.rglob("*") if p.is_file()} == before
        if (second / "results.json").exists():
            _check_results(second)
        assert not list(mnt.rglob("*.tmp"))
    finally:
        subprocess.run(["umount", str(mnt)])


# --- small ones ------------------------------------------------------------------------------------

def test_iogen_limits_and_messages(tmp_path):
    iogen = ROOT / "build" / "bin" / "iogen"
    spec = tmp_path / "deep.spec"
    spec.write_text("[spec a]\n4K 100 100 100\n[worker w]\nspec = a\noutstanding = 65535\n")
    t0 = time.monotonic()
    r = subprocess.run([str(iogen), "--target", str(tmp_path / "t.dat"), "--size", "8M", "--spec", str(spec),
                        "--time", "1"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "the uring engine holds at most 32768" in r.stderr, r.stderr
    assert time.monotonic() - t0 < 2 and not (tmp_path / "t.dat").exists()
    r = subprocess.run([str(iogen), "--target", "x", "--workload", "4k-random-read", "--rate", "fast"],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "I/Os per second" in r.stderr and "seconds" not in r.stderr


def test_probe_warnings_are_named_once_and_the_perf_fallback_is_in_conditions(tmp_path):
    out = tmp_path / "r"
    r = subprocess.run([str(ROOT / "osmeter"), "run", "--probes", "cpu.syscall,fs.create.0k", "--fs-dir", "/dev/shm",
                        "--out", str(out), "--no-report"], capture_output=True, text=True, timeout=300,
                       env=dict(os.environ, OSM_NO_PERF="1"))
    doc = json.loads((out / "results.json").read_text())
    assert doc["conditions"]["deschedule_check"]["methods"] == ["getrusage"]
    assert "disabled with OSM_NO_PERF=1" in doc["conditions"]["deschedule_check"]["why"]
    assert "deschedules seen through getrusage" in r.stdout
    assert not any(w.startswith("fs_meta: fs_meta:") for w in doc["conditions"]["probe_warnings"])


def test_huge_estimates_print_as_numbers_a_person_reads():
    from osmeter.present.values import fmt_value

    assert fmt_value(1e300, "MB/s") == "1e+300 MB/s"
    assert fmt_value(1e300, "ns") == "1e+291 s"
    assert fmt_value(3 * 2**30, "bytes") == "3 GiB"


def test_the_cache_levels_follow_the_hardware_on_a_noisy_curve():
    """A curve with a bump in the L2 plateau: the free search could find four
    caches (an unregistered mem.lat.l4) or two (no l3); cut by the three
    caches sysfs names, the ids are always l1, l2, l3 and dram."""
    import numpy as np

    from osmeter.probes.areas.mem import mem_levels

    x = 2.0 ** np.arange(10, 28, 0.5)
    y = np.where(x <= 48e3, 1.0, np.where(x <= 1e6, 3.5, np.where(x <= 8e6, 15.0, 150.0)))
    y = y * np.where((x > 200e3) & (x < 400e3), 1.4, 1.0)  # the bump
    line = {"id": "mem.lat.curve", "unit": "ns", "samples": [1.0],
            "series": {"x": x.tolist(), "samples": [[v] * 3 for v in y]}, "params": {}}
    machine = {"caches": [{"level": 1, "type": "Data", "size": 48 << 10},
                          {"level": 1, "type": "Instruction", "size": 32 << 10},
                          {"level": 2, "type": "Unified", "size": 1 << 20},
                          {"level": 3, "type": "Unified", "size": 32 << 20}]}
    got = [o["id"] for o in mem_levels([line], machine)]
    assert got == ["mem.lat.l1", "mem.lat.l2", "mem.lat.l3", "mem.lat.dram"]


def _latex_children(pid: int) -> list[int]:
    """The LaTeX processes among a process's children."""
    try:
        kids = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return []
    out = []
    for k in kids:
        try:
            if Path(f"/proc/{k}/comm").read_text().strip() in ("pdflatex", "latexmk", "perl"):
                out.append(int(k))
        except OSError:
            pass
    return out


def _latex_in(d: Path) -> list[str]:
    """Processes whose working directory is d (a LaTeX left running there)."""
    found = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if Path(os.readlink(proc / "cwd")) == d:
                found.append(f"{proc.name} {(proc / 'comm').read_text().strip()}")
        except OSError:
            pass
    return found


def _whole_pdf(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(b"%PDF-") and data.rstrip().endswith(b"%%EOF")


def test_ctrl_c_while_the_report_is_made(tmp_path):
    """SIGINT while the figures are drawn, while LaTeX runs, and while LaTeX
    writes the PDF: the report stops at once with 130, no LaTeX is left
    running, and no PDF is half-written (one there is whole); uninterrupted,
    the same report makes a whole PDF."""
    out = tmp_path / "r"
    assert osmeter("run", "--probes", "cpu.loop,mem.bw.read", "--out", str(out), "--no-report").returncode == 0
    rep = out / "report"
    t0 = time.monotonic()
    r = osmeter("report", str(out), "--pdf")
    full = time.monotonic() - t0
    assert r.returncode == 0 and _whole_pdf(rep / "report.pdf"), r.stderr
    if not shutil.which("pdflatex"):
        pytest.skip("pdflatex is not installed: the LaTeX moments cannot be reached")
    (rep / "report.pdf").unlink()
    moments = {
        "drawing": lambda p, t: time.monotonic() - t >= min(0.3, full / 4),
        "latex runs": lambda p, t: bool(_latex_children(p.pid)),
        "the PDF is written": lambda p, t: any(rep.glob("*.pdf")),
    }
    for name, reached in moments.items():
        p = subprocess.Popen([str(ROOT / "osmeter"), "report", str(out), "--pdf"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        t = time.monotonic()
        while not reached(p, t):
            assert p.poll() is None, f"{name}: the report ended first ({p.returncode}); a whole one takes {full:.1f} s"
            time.sleep(0.002)
        p.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, err = p.communicate(timeout=60)
        took = time.monotonic() - sent
        assert p.returncode == 130, (name, p.returncode, err)
        assert took < max(3.0, full / 2), (name, took, full)  # at once, not after finishing the report
        _no_traceback(subprocess.CompletedProcess([], p.returncode, "", err))
        assert not _latex_in(rep), (name, _latex_in(rep))
        pdfs = list(rep.glob("*.pdf"))
        assert all(f.name == "report.pdf" and _whole_pdf(f) for f in pdfs), (name, pdfs)


def test_a_zombie_owner_counts_as_gone(tmp_path):
    """A probe killed with the harness may stay a zombie while PID 1 (a
    container's agent) reaps it lazily: kill(pid, 0) still succeeds, yet
    its scratch files are abandoned and the next run removes them (a fresh
    CI run once kept one). A live owner's file stays."""
    from osmeter.host import cleanup

    child = subprocess.Popen(["true"])
    deadline = time.monotonic() + 10
    while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    dead = tmp_path / f"osmeter-fscache-{child.pid}-Ab12Cd"  # bench/common/scratch.c's names
    live = tmp_path / f"osmeter-fscache-{os.getpid()}-Ef34Gh"
    dead.write_text("x")
    live.write_text("x")
    removed: list[str] = []
    cleanup.scratch(tmp_path, removed)
    assert removed == [str(dead)] and live.exists()
    child.wait()


def test_the_getrusage_note_names_the_probe_that_chose_it_and_why(tmp_path):
    """cpu.ctx keeps perf events off its switches on purpose: the note says
    so for its ids, and blames perf_event_paranoid only where
    perf_event_open was refused (here it is not, for cpu.syscall)."""
    seq = subprocess.run([str(ROOT / "build" / "bin" / "cpu_syscall"), "--samples", "3"], capture_output=True,
                         text=True, timeout=60)
    if json.loads(seq.stdout.splitlines()[0])["timer"]["deschedule_check"] != "perf-mmap-lock":
        pytest.skip("perf_event_open is refused on this machine")
    out = tmp_path / "r"
    r = subprocess.run([str(ROOT / "osmeter"), "run", "--probes", "cpu.syscall.getppid,cpu.ctx.*", "--out", str(out),
                        "--no-report"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    dc = json.loads((out / "results.json").read_text())["conditions"]["deschedule_check"]
    assert set(dc["methods"]) == {"getrusage", "perf-mmap-lock"}
    assert list(dc["getrusage"]) == ["chosen by the probe: a perf event on the task would add to every context "
                                     "switch it times"], dc
    assert all(i.startswith("cpu.ctx") for ids in dc["getrusage"].values() for i in ids)
    assert "paranoid" not in dc["why"] and "cpu.ctx" in dc["why"] and "paranoid" not in r.stdout


def test_a_signal_while_a_probe_starts_leaves_the_probe_held(tmp_path):
    """SIGINT between the fork and the exec of a probe (the start is slowed
    here so the signal lands there): the harness's Interrupted comes once the
    start is done, with the probe held, so kill() stops it (unheld, it ran
    on until the harness died and left its scratch files)."""
    import threading

    from osmeter.core.errors import Interrupted, interruptible
    from osmeter.host.launch import Launcher

    class SlowStart(Launcher):
        def _preexec(self, before_exec=None, pinned=True):
            time.sleep(1.0)  # in the child, before exec: the parent waits in Popen meanwhile

    launcher = SlowStart(tmp_path, os.sched_getaffinity(0).pop(), False)
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(Interrupted), interruptible():
        launcher.run(["sleep", "30"], timeout=60)
    assert launcher.proc is not None, "the probe was started but nobody holds it"
    launcher.kill()
    assert launcher.proc.returncode == -signal.SIGTERM  # it ran until kill() stopped it


def test_a_signal_while_a_results_file_is_written_is_neither_lost_nor_taken_for_bad_data(tmp_path, monkeypatch):
    """SIGINT while a samples file is written (a fresh CI's ab: the signal
    landed between zipfile's opening a member and numpy's `with` around it;
    zipfile's close then raised ValueError in the interrupt's place, the
    probe's output was taken for bad, and the run went on to the end): the
    file is finished whole, then Interrupted comes. And where a ValueError
    raised under a signal still reaches a reader of probe output or samples,
    the signal is raised, not a failure recorded. Mutants caught: the write
    not shielded; the output collector and the samples reader taking the
    ValueError for bad data."""
    import zipfile
    from types import SimpleNamespace

    import numpy as np

    from osmeter.core.errors import Interrupted, interruptible
    from osmeter.results import store
    from osmeter.results.writer import write_atomic
    from osmeter.running.collect import collect_process

    def write(f):
        with zipfile.ZipFile(f, "w") as z:
            member = z.open("values.npy", "w")  # opened, not yet entered: where the signal landed
            os.kill(os.getpid(), signal.SIGINT)
            with member:
                member.write(b"x" * 100)

    path = tmp_path / "samples.npz"
    with pytest.raises(Interrupted), interruptible():
        write_atomic(path, write, binary=True)
    with zipfile.ZipFile(path) as z:
        assert z.read("values.npy") == b"x" * 100
    assert [p.name for p in tmp_path.iterdir()] == ["samples.npz"]

    def under_a_signal(*_a, **_k):
        try:
            raise Interrupted(signal.SIGINT)
        finally:
            raise ValueError("Can't close the ZIP file while there is an open writing handle on it")

    failures = []
    results = SimpleNamespace(add_failure=lambda *a: failures.append(a))
    with pytest.raises(Interrupted):
        collect_process(results, SimpleNamespace(name="p", parse=under_a_signal), ["x"], 0, "{}", "", {})
    assert failures == []
    monkeypatch.setattr(np, "load", under_a_signal)
    with pytest.raises(Interrupted):
        store._arrays(path)
