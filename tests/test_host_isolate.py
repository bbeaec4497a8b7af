"""`osmeter run --isolate`: what it does and could not do is recorded, and
everything it changed is put back, also after Ctrl-C and after a SIGKILL.
What this machine cannot do (SMT, boost) is tested on fake /sys and /proc
trees (isolate.Isolation's root)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, kill_run, osmeter, watchdogs
from osmeter.host import isolate
from osmeter.core.errors import Interrupted, RunError, interruptible

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="--isolate needs root")
CPU = "sys/devices/system/cpu"


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text + "\n")
    (root / "proc").mkdir(exist_ok=True)
    return root


def value(root: Path, rel: str) -> str:
    return (root / rel).read_text().strip()


# an SMT machine of 4 CPUs: CPU 3's sibling is CPU 1; boost on
SMT4 = {f"{CPU}/smt/control": "on", f"{CPU}/online": "0-3", f"{CPU}/cpu3/topology/thread_siblings_list": "1,3",
        f"{CPU}/cpu1/online": "1", "proc/irq/5/smp_affinity_list": "0-3", "proc/irq/6/smp_affinity_list": "3",
        "proc/irq/7/smp_affinity_list": "0,2", "sys/devices/virtual/workqueue/cpumask": "f"}


@pytest.mark.parametrize("boost, on, off", [(f"{CPU}/cpufreq/boost", "1", "0"),
                                            (f"{CPU}/intel_pstate/no_turbo", "0", "1")])
def test_boost_and_an_smt_sibling_go_off_and_come_back(tmp_path, boost, on, off):
    """Mutants caught: restore writing the new value instead of the previous
    one; the IRQ mask keeping the offlined sibling; the state file left."""
    root = tree(tmp_path, {**SMT4, boost: on})
    said = []
    with isolate.isolated(3, root, say=lambda *a, **k: said.append(a[0])) as doc:
        assert value(root, boost) == off
        assert value(root, f"{CPU}/cpu1/online") == "0"
        assert value(root, "proc/irq/5/smp_affinity_list") == "0,2"  # neither CPU 3 nor its offline sibling
        assert value(root, "proc/irq/7/smp_affinity_list") == "0,2"  # never on CPU 3: untouched
        assert isolate.mask_cpus(value(root, "sys/devices/virtual/workqueue/cpumask")) == {0, 2}
        assert (root / "run/osmeter/isolate.json").exists()  # the plan, before anything changed
    done = {d["what"]: d for d in doc["done"]}
    assert (done["boost off"]["previous"], done["boost off"]["now"]) == (on, off)
    assert (done["SMT sibling offline"]["path"], done["SMT sibling offline"]["previous"]) == (
        str(root / CPU / "cpu1/online"), "1")
    assert [n["why"] for n in doc["not_done"]] == ["IRQ 6 may go only to CPU 3"]
    for rel, v in {**SMT4, boost: on}.items():
        assert value(root, rel) == v, rel
    assert doc["restored"] == {"values": 4, "tasks_born_during_the_run": 0, "left": []}
    assert not (root / "run/osmeter/isolate.json").exists()
    assert "boost off" in said[0] and "undone (4 values" in said[-1]


def test_what_this_machine_cannot_do_is_said_with_its_reason(tmp_path):
    """No SMT (notsupported), no boost file, a sibling that cannot go offline
    (CPU 0 has no online file), a sibling that is the harness's last CPU.
    Mutant caught: offlining a CPU without checking its online file."""
    root = tree(tmp_path / "a", {f"{CPU}/smt/control": "notsupported", f"{CPU}/online": "0-1"})
    with isolate.isolated(1, root, say=lambda *a, **k: None) as doc:
        pass
    why = {n["what"]: n["why"] for n in doc["not_done"]}
    assert why["SMT siblings offline"] == f"no SMT on this machine: {root / CPU / 'smt/control'} says notsupported"
    assert why["boost off"].startswith("no cpufreq boost file")
    root = tree(tmp_path / "b", {f"{CPU}/smt/control": "on", f"{CPU}/online": "0-1",
                                 f"{CPU}/cpu1/topology/thread_siblings_list": "0-1"})
    with isolate.isolated(1, root, say=lambda *a, **k: None) as doc:
        pass
    assert [n["why"] for n in doc["not_done"] if n["what"] == "SMT siblings offline"] == [
        f"CPU 0 cannot go offline here (no {root / CPU / 'cpu0/online'})"]
    tree(root, {f"{CPU}/cpu0/online": "1"})
    with isolate.isolated(1, root, say=lambda *a, **k: None) as doc:
        assert value(root, f"{CPU}/cpu0/online") == "1"
    assert [n["why"] for n in doc["not_done"] if n["what"] == "SMT siblings offline"] == [
        "CPU 0 is the last other online CPU: the harness runs there"]


def test_a_killed_runs_isolation_is_undone_by_the_next(tmp_path):
    """A run SIGKILLed while isolated leaves its plan; the next one puts the
    machine back first, says so, and records the true previous values.
    Mutant caught: no stale check (the next run sees boost 0 as 'already
    off' and leaves it off for good)."""
    root = tree(tmp_path, {**SMT4, f"{CPU}/cpufreq/boost": "1"})
    code = (f"import os, signal, sys; sys.path.insert(0, {str(ROOT / 'harness')!r}); from osmeter.host import isolate\n"
            f"isolate.Isolation(3, {str(root)!r}).apply(); os.kill(os.getpid(), signal.SIGKILL)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert value(root, f"{CPU}/cpufreq/boost") == "0" and (root / "run/osmeter/isolate.json").exists()
    said = []
    with isolate.isolated(3, root, say=lambda *a, **k: said.append(a[0])) as doc:
        assert value(root, f"{CPU}/cpufreq/boost") == "0"
    assert "ended without undoing its changes" in said[0] and "4 values back" in said[0], said
    assert doc["stale"]["restored"]["values"] == 4
    assert {d["what"]: d["previous"] for d in doc["done"]}["boost off"] == "1"
    for rel, v in SMT4.items():
        assert value(root, rel) == v, rel
    assert value(root, f"{CPU}/cpufreq/boost") == "1"


def test_one_isolation_at_a_time(tmp_path):
    """Mutant caught: no lock (the second run takes the first's plan for a
    killed run's and restores the machine under it)."""
    root = tree(tmp_path, {**SMT4, f"{CPU}/cpufreq/boost": "1"})
    with isolate.isolated(3, root, say=lambda *a, **k: None):
        with pytest.raises(RunError, match=rf"another `osmeter run --isolate` \(pid {os.getpid()}\)"):
            with isolate.isolated(3, root, say=lambda *a, **k: None):
                pass
        assert value(root, f"{CPU}/cpufreq/boost") == "0"
        assert (root / "run/osmeter/isolate.json").exists()
    assert value(root, f"{CPU}/cpufreq/boost") == "1"


def test_a_second_signal_during_the_restore_waits_and_the_first_decides(tmp_path, monkeypatch):
    """SIGTERM ends the run; a Ctrl-C arrives in the middle of the restore:
    every value is still put back, each once, and the exit is SIGTERM's.
    Mutant caught: restore() not shielded (the Ctrl-C stops it half way)."""
    root = tree(tmp_path, {**SMT4, f"{CPU}/cpufreq/boost": "1"})
    writes: list[str] = []
    real = isolate.Isolation._write

    def write(self, path, v):
        writes.append(str(path))
        if self._restored and len(writes) == 5:  # the first write of the restore
            os.kill(os.getpid(), signal.SIGINT)
        real(self, path, v)

    monkeypatch.setattr(isolate.Isolation, "_write", write)
    with pytest.raises(Interrupted) as e, interruptible():
        with isolate.isolated(3, root, say=lambda *a, **k: None):
            raise Interrupted(signal.SIGTERM)
    assert e.value.signum == signal.SIGTERM
    assert len(writes) == 8 and sorted(writes[:4]) == sorted(writes[4:])  # 4 applied, 4 undone, once each
    for rel, v in {**SMT4, f"{CPU}/cpufreq/boost": "1"}.items():
        assert value(root, rel) == v, rel


def test_tasks_born_during_the_run_get_their_creators_mask_back(tmp_path, monkeypatch):
    """Fake tasks and affinities: a task that moved gets its mask back; one
    that set its own meanwhile keeps it (and is named); a child and a
    grandchild of a moved task get its previous mask; a child its owner
    pinned before the run to what its parent is given keeps its pin; a task
    the kernel pins (PF_NO_SETAFFINITY) is named, not moved; a new task with
    a reused tid is not taken for the old one. Mutants caught: no
    inheritance pass; matching tasks by tid without their start time; tasks
    seen when planning taken for born ones."""
    masks = {1: {0, 1, 2, 3}, 2: {3}, 3: {0, 1, 2, 3}, 4: {0, 1, 2, 3}, 5: {0, 1, 2, 3}, 6: {0, 1, 2}}

    def task(tid, comm, ppid, start, flags=0):
        rest = ["S", ppid, 0, 0, 0, 0, flags] + [0] * 12 + [start]
        p = tmp_path / "proc" / str(tid) / "task" / str(tid) / "stat"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"{tid} ({comm}) " + " ".join(map(str, rest)) + "\n")

    for tid, comm, flags in ((1, "init", 0), (2, "pinned", 0), (3, "kworker/3:0", isolate.PF_NO_SETAFFINITY),
                             (4, "sets own", 0), (5, "ends", 0)):
        task(tid, comm, 0, 100 + tid, flags)
    task(6, "pinned by owner", 1, 106)  # init's child, pinned before the run to what init is given

    def setaff(tid, m):
        if tid not in masks:
            raise ProcessLookupError
        masks[tid] = set(m)

    monkeypatch.setattr(isolate.Isolation, "getaff", staticmethod(lambda tid: set(masks[tid])))
    monkeypatch.setattr(isolate.Isolation, "setaff", staticmethod(setaff))
    with isolate.isolated(3, tmp_path, say=lambda *a, **k: None) as doc:
        assert masks == {1: {0, 1, 2}, 2: {3}, 3: {0, 1, 2, 3}, 4: {0, 1, 2}, 5: {0, 1, 2}, 6: {0, 1, 2}}
        masks[4] = {1}                                    # set its own affinity
        task(10, "sh", 1, 200); masks[10] = {0, 1, 2}     # born from init: inherited the moved mask
        task(11, "cc", 10, 201); masks[11] = {0, 1, 2}    # and its child
        task(12, "other", 99, 202); masks[12] = {0, 1, 2}  # born from no moved task
        task(5, "reused", 99, 300); masks[5] = {0, 1, 2}  # tid 5 ended and was used again
    assert masks == {1: {0, 1, 2, 3}, 2: {3}, 3: {0, 1, 2, 3}, 4: {1}, 5: {0, 1, 2}, 6: {0, 1, 2},
                     10: {0, 1, 2, 3}, 11: {0, 1, 2, 3}, 12: {0, 1, 2}}
    assert doc["restored"]["values"] == 1 and doc["restored"]["tasks_born_during_the_run"] == 2
    assert [x["task"] for x in doc["restored"]["left"]] == ["sets own (4)"]
    stays = {n["why"]: n["tasks"] for n in doc["not_done"] if n["what"] == "task affinity"}
    assert stays == {"1 task left on CPU 3: allowed only on CPU 3 (pinned there)": ["pinned"],
                     "1 task left on CPU 3: the kernel does not let userspace move it (PF_NO_SETAFFINITY: per-CPU "
                     "kernel threads, workers of per-CPU workqueues)": ["kworker/3:0"]}


def test_not_root_is_refused_before_anything_changes(tmp_path, monkeypatch):
    """As a function (the tests run as root) and through the command line
    as nobody where setpriv exists. Mutant caught: no root check (a non-root
    run would fail half way through its changes)."""
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    with pytest.raises(RunError, match="--isolate needs root"):
        isolate.Isolation(1, tree(tmp_path, SMT4))
    if os.getuid() != 0 or not Path("/usr/bin/setpriv").exists():
        return
    # nobody must be able to read this tree (a private clone, as under mktemp -d, is not readable): else the
    # function-level check above stands alone
    if subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "test", "-r",
                       str(ROOT / "harness" / "osmeter" / "__init__.py")]).returncode != 0:
        return
    out = tmp_path / "out"
    r = subprocess.run(["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", sys.executable,
                        "-m", "osmeter", "run", "--isolate", "--probes", "cpu.syscall", "--no-report",
                        "--out", str(out)], capture_output=True, text=True, timeout=120,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "harness")))
    assert r.returncode == 2 and "--isolate needs root" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not out.exists()


# ----------------------------------------------------------- this machine

def snapshot() -> dict:
    """Every task's affinity (by tid and start time) and every IRQ's. The
    irq/N threads are left out: the kernel moves them with their IRQ's
    effective affinity, which it chooses anew when a mask is written."""
    tasks = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                stat = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
                mask = os.sched_getaffinity(int(tid))
            except OSError:
                continue
            if not stat[stat.find("(") + 1:].startswith("irq/"):
                tasks[tid, stat[stat.rfind(")") + 2:].split()[19]] = mask
    irqs = {d: Path(f"/proc/irq/{d}/smp_affinity_list").read_text() for d in os.listdir("/proc/irq") if d.isdigit()}
    wq = Path("/sys/devices/virtual/workqueue/cpumask")
    return {"tasks": tasks, "irqs": irqs, "wq": wq.read_text() if wq.exists() else None,
            "cpu": max(os.sched_getaffinity(0))}  # the CPU a default --isolate run clears


def same_as(before: dict) -> None:
    """Every IRQ and the workqueue mask as before, and every task that could
    run on the isolated CPU (the only ones --isolate moves) with its mask
    back. A task kept off that CPU before may have changed its own mask
    meanwhile: on a shared machine other programs pin themselves (a fresh
    CI run beside other work saw one go from CPU 0 to 0-1)."""
    after = snapshot()
    assert after["irqs"] == before["irqs"] and after["wq"] == before["wq"]
    changed = {k: (before["tasks"][k], after["tasks"][k]) for k in before["tasks"].keys() & after["tasks"].keys()
               if before["tasks"][k] != after["tasks"][k] and before["cpu"] in before["tasks"][k]}
    assert not changed
    assert not Path("/run/osmeter/isolate.json").exists()


def start(out: Path, *more: str) -> subprocess.Popen:
    return subprocess.Popen([str(ROOT / "osmeter"), "run", "--isolate", "--probes", "cpu.syscall", "--no-report",
                             "--out", str(out), *more], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def wait_for(path: Path, p: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while not path.exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)


@as_root
def test_an_isolated_run_records_what_it_did_and_puts_everything_back(tmp_path):
    """... and a task its owner pinned, before the run, to exactly the mask
    the run gives its parent (this test's process) keeps its pin: it was not
    born during the run. Mutant caught: tasks seen when planning taken for
    born ones (a fresh CI run's stray task pinned to one CPU came back on
    both)."""
    rest = sorted(os.sched_getaffinity(0) - {max(os.sched_getaffinity(0))})
    pinned = subprocess.Popen(["taskset", "-c", ",".join(map(str, rest)), "sleep", "120"]) if rest else None
    try:
        time.sleep(0.2)
        before = snapshot()
        r = osmeter("run", "--isolate", "--probes", "cpu.syscall", "--no-report", "--out", str(tmp_path / "r"))
        assert pinned is None or os.sched_getaffinity(pinned.pid) == set(rest)
    finally:
        if pinned:
            pinned.kill()
            pinned.wait()
    assert r.returncode == 0, r.stdout + r.stderr
    iso = json.loads((tmp_path / "r" / "results.json").read_text())["conditions"]["isolation"]
    cpu = iso["cpu"]
    moved = [d for d in iso["done"] if d["what"] == "task affinity"]
    assert moved and moved[0]["tasks"] > 0 and moved[0]["now"] == f"without CPU {cpu}"
    irqs_here = [k for k, v in before["irqs"].items() if cpu in isolate.cpus(v)]
    irq_said = {Path(x["path"]).parent.name for x in iso["done"] + iso["not_done"] if x["what"] == "IRQ affinity"}
    assert irq_said == set(irqs_here)  # each IRQ that could reach the CPU: moved, or why not
    why = " ".join(n["why"] for n in iso["not_done"])
    control = Path("/sys/devices/system/cpu/smt/control")
    if control.exists() and control.read_text().strip() == "notsupported":
        assert "no SMT on this machine" in why and "says notsupported" in why
    if not any(Path(f).exists() for f in ("/sys/devices/system/cpu/cpufreq/boost",
                                          "/sys/devices/system/cpu/intel_pstate/no_turbo")):
        assert "no cpufreq boost file" in why
    assert iso["restored"]["left"] == [] and iso["restored"]["values"] >= moved[0]["tasks"]
    assert "--isolate CPU" in r.stdout and "undone" in r.stdout
    same_as(before)


@as_root
def test_ctrl_c_in_an_isolated_run_restores_and_exits_130(tmp_path):
    """SIGINT to the whole process group, as a terminal sends it, while the
    probes run: this test's own process was moved off the CPU, and after
    the exit every mask is back. Mutant caught: no restore on Interrupted."""
    before = snapshot()
    cpu = max(os.sched_getaffinity(0))
    p = start(tmp_path / "r", "--preset", "full")
    wait_for(tmp_path / "r" / "results.json", p)
    moved_off = cpu not in os.sched_getaffinity(0)
    os.killpg(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 130, out + err
    assert moved_off
    doc = json.loads((tmp_path / "r" / "results.json").read_text())
    assert doc["interrupted"] and doc["conditions"]["isolation"]["restored"]["left"] == []
    same_as(before)


@as_root
def test_after_a_sigkill_the_runs_watchdog_puts_the_machine_back(tmp_path):
    """SIGKILL to an isolated run's whole process group: its watchdog (a
    session of its own) restores every mask, IRQ and setting within
    seconds, this test's own mask with them. Mutant caught: no watchdog."""
    before = snapshot()
    cpu = max(os.sched_getaffinity(0))
    p = start(tmp_path / "r1", "--preset", "full")
    wait_for(tmp_path / "r1" / "results.json", p)
    isolated, guards = cpu not in os.sched_getaffinity(0), watchdogs()
    kill_run(p, watchdog_too=False)
    assert isolated and len(guards) == 1, guards
    end = time.monotonic() + 30
    while (Path("/run/osmeter/isolate.json").exists() or watchdogs()) and time.monotonic() < end:
        time.sleep(0.2)
    assert cpu in os.sched_getaffinity(0)
    same_as(before)


def test_a_failed_undo_of_the_tracing_never_keeps_the_isolation_from_being_undone(tmp_path, monkeypatch):
    """undo_dead_runs: the tracing's undo raising (its message to a dead
    stderr) still lets the isolation be undone, and is raised after it.
    Mutant caught: the first failure raised at once."""
    from osmeter.running import recover
    state = tmp_path / "isolate.json"
    state.write_text("{}")
    called = []

    def broken(say):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(recover, "ISOLATE_STATE", state)
    monkeypatch.setattr(recover.os, "geteuid", lambda: 0)
    monkeypatch.setattr(recover.tracefs, "undo_killed_run", broken)
    monkeypatch.setattr(recover.isolate, "undo_killed_run", lambda say: called.append(1) or {})
    with pytest.raises(BrokenPipeError):
        recover.undo_dead_runs(say=lambda *a, **k: None)
    assert called == [1]


@as_root
def test_the_watchdog_puts_everything_back_when_the_runs_stderr_is_gone(tmp_path):
    """`osmeter run --isolate --kernel-paths ... 2>&1 | cat` and the whole
    group killed: the watchdog's stderr is a pipe nobody reads any more.
    It undoes the tracing and the isolation both, every mask and IRQ back,
    its messages' failed writes ignored (issue 57: a BrokenPipeError after
    the tracing's undo left PID 1, the IRQs and the workqueue mask moved).
    Mutant caught: the watchdog's message written before the undo goes on."""
    from osmeter.ktrace import tracefs
    before = snapshot()
    cpu = max(os.sched_getaffinity(0))
    traced = os.geteuid() == 0 and tracefs.refusal() is None
    more = ("--kernel-paths",) if traced else ()
    r, w = os.pipe()
    p = subprocess.Popen([str(ROOT / "osmeter"), "run", "--isolate", *more, "--probes", "cpu.syscall", "--no-report",
                          "--preset", "full", "--out", str(tmp_path / "r1")], stdout=w, stderr=w,
                         start_new_session=True)
    os.close(w)
    wait_for(tmp_path / "r1" / "results.json", p)
    isolated, guards = cpu not in os.sched_getaffinity(0), watchdogs()
    os.close(r)  # the reader gone: every write to the run's stderr now fails
    kill_run(p, watchdog_too=False)
    p.wait(timeout=30)
    assert isolated and len(guards) == 1, guards
    end = time.monotonic() + 30
    while (Path("/run/osmeter/isolate.json").exists() or watchdogs()) and time.monotonic() < end:
        time.sleep(0.2)
    assert not Path("/run/osmeter/isolate.json").exists()
    assert cpu in os.sched_getaffinity(0)
    same_as(before)
    if traced:
        mount = tracefs.find_mount()
        assert mount is None or not [d for d in os.listdir(mount / "instances") if d.startswith("osmeter-")]


@as_root
def test_after_a_sigkill_of_the_run_and_its_watchdog_any_next_command_puts_the_machine_back(tmp_path):
    """Run and watchdog both killed: a command that isolates nothing
    (report) undoes the isolation first and says so. Mutant caught: report
    not undoing a dead run's state."""
    before = snapshot()
    cpu = max(os.sched_getaffinity(0))
    p = start(tmp_path / "r1", "--preset", "full")
    wait_for(tmp_path / "r1" / "results.json", p)
    kill_run(p, watchdog_too=True)
    assert Path("/run/osmeter/isolate.json").exists()
    r = osmeter("report", str(tmp_path / "r1"))
    assert f"a previous isolated run (pid {p.pid}" in r.stderr and "undone now from" in r.stderr, r.stderr
    assert cpu in os.sched_getaffinity(0)
    same_as(before)


@as_root
def test_after_a_sigkill_the_next_isolated_run_puts_the_machine_back_first(tmp_path):
    before = snapshot()
    cpu = max(os.sched_getaffinity(0))
    p = start(tmp_path / "r1", "--preset", "full")
    wait_for(tmp_path / "r1" / "results.json", p)
    kill_run(p, watchdog_too=True)
    assert cpu not in os.sched_getaffinity(0)  # left isolated
    r = osmeter("run", "--isolate", "--probes", "cpu.syscall", "--no-report", "--out", str(tmp_path / "r2"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"a previous isolated run (pid {p.pid}" in r.stderr and "undone now from" in r.stderr, r.stderr
    stale = json.loads((tmp_path / "r2" / "results.json").read_text())["conditions"]["isolation"]["stale"]
    assert stale["pid"] == p.pid and stale["restored"]["values"] > 0
    # the killed run's mask, passed on to the next run by this process, was undone before it chose its CPU
    iso = json.loads((tmp_path / "r2" / "results.json").read_text())["conditions"]["isolation"]
    assert iso["cpu"] == cpu, (iso["cpu"], cpu)
    same_as(before)


@as_root
def test_an_out_that_holds_results_is_refused_before_anything_is_isolated(tmp_path):
    """--isolate with an --out that holds a run: exit 2 before a task or
    IRQ is moved (nothing said of an isolation, no state file ever
    written). Mutant caught: --out checked only when the run writes."""
    before = snapshot()
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "results.json").write_text("{}")
    r = osmeter("run", "--isolate", "--probes", "cpu.syscall", "--no-report", "--out", str(tmp_path / "r"))
    assert r.returncode == 2 and "already holds a results.json" in r.stderr, r.stdout + r.stderr
    assert "--isolate CPU" not in r.stdout and "undone" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert (tmp_path / "r" / "results.json").read_text() == "{}"
    same_as(before)


@as_root
def test_a_campaign_is_isolated_once_around_all_its_runs(tmp_path):
    """Each run's conditions carry the isolation; campaign.json has its
    restore. Mutant caught: the campaign not keeping the isolation."""
    before = snapshot()
    r = osmeter("run", "--isolate", "--runs", "2", "--probes", "cpu.syscall", "--out", str(tmp_path / "c"))
    assert r.returncode == 0, r.stdout + r.stderr
    camp = json.loads((tmp_path / "c" / "campaign.json").read_text())
    assert camp["options"]["isolate"] is True and camp["isolation"]["restored"]["left"] == []
    assert r.stdout.count("--isolate CPU") == 1 and r.stdout.count("undone") == 1
    for run in ("run-01", "run-02"):
        iso = json.loads((tmp_path / "c" / run / "results.json").read_text())["conditions"]["isolation"]
        assert (iso["pid"], iso["started_utc"]) == (camp["isolation"]["pid"], camp["isolation"]["started_utc"])
    same_as(before)


def test_a_released_lock_leaves_nothing_but_a_state_file_a_later_run_must_find(tmp_path):
    """private_lock's file and directory are removed at its release (a run
    left /run/osmeter and its lock files behind for good); a state file in
    the directory keeps both the file and the directory; a lock whose file
    was removed under it is taken again on the new file, so two holders
    never think they hold it. Mutant caught: the lock file kept."""
    from osmeter.host import cleanup

    d = tmp_path / "state"
    fd = cleanup.private_lock(d, "x.lock", "busy {pid}")
    assert (d / "x.lock").read_text() == f"{os.getpid()}\n"
    with pytest.raises(RunError, match=f"busy {os.getpid()}"):
        cleanup.private_lock(d, "x.lock", "busy {pid}")
    cleanup.release_lock(d, "x.lock", fd)
    assert not d.exists()
    fd = cleanup.private_lock(d, "x.lock", "busy {pid}")
    (d / "x.json").write_text("{}")
    cleanup.release_lock(d, "x.lock", fd)
    assert sorted(p.name for p in d.iterdir()) == ["x.json"]
    # held, then its file removed (as a release does) before another takes it: the other locks the new file
    fd = cleanup.private_lock(d, "x.lock", "busy {pid}")
    os.unlink(d / "x.lock")
    other = cleanup.private_lock(d, "x.lock", "busy {pid}")
    assert os.fstat(other).st_ino == os.stat(d / "x.lock").st_ino != os.fstat(fd).st_ino
    os.close(fd)
    cleanup.release_lock(d, "x.lock", other)
