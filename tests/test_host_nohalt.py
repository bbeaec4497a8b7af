"""--no-halt: the CPUs kept out of halt, checked by the kernel's own cpuidle
counters (issue 44, item 5), and undone however osmeter ends."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT, osmeter
from osmeter.host import nohalt

CPUS = sorted(os.sched_getaffinity(0))
HONOURING = ("haltpoll", "menu", "teo", "ladder")  # cpuidle governors that honour a CPU latency request
HAS_CPUIDLE = nohalt.halts(CPUS) is not None
needs_cpuidle = pytest.mark.skipif(not HAS_CPUIDLE, reason="no cpuidle states here to count halts by")
needs_qos = pytest.mark.skipif(not (os.geteuid() == 0 and nohalt.QOS.exists()),
                               reason="needs root and /dev/cpu_dma_latency")


def halts_over(seconds: float = 0.3) -> int:
    before = nohalt.halts(CPUS)
    time.sleep(seconds)
    return nohalt.halts(CPUS) - before


def spinning() -> list[str]:
    """The busy loops (nohalt's and launch's SPIN) alive now."""
    r = subprocess.run(["pgrep", "-f", "-a", "while :; do :; done"], capture_output=True, text=True)
    return [ln for ln in r.stdout.splitlines() if ln.strip()]


@needs_cpuidle
@needs_qos
def test_a_latency_request_keeps_the_cpus_out_of_halt_and_goes_with_the_block():
    """Where the cpuidle governor honours a 0 us CPU latency request, the CPUs do not halt while it is
    held (their non-polling states' entry counters stand still), and halt again once the block ends.
    Mutant caught: the request written as 1000 us (a governor may then halt)."""
    idle = halts_over()
    if idle <= nohalt.HALTS_OK:
        pytest.skip(f"the CPUs halted {idle} times in 0.3 s idle: nothing to keep them from")
    with nohalt.kept_awake(CPUS) as doc:
        if doc["method"] != "pm_qos" and doc["cpuidle_governor"] not in HONOURING:
            pytest.skip(f"the cpuidle governor here does not honour it: {doc.get('pm_qos_not_honoured')}")
        assert doc["method"] == "pm_qos", doc  # these governors take a 0 us request as 'poll only'
        held = halts_over()
        assert held <= nohalt.HALTS_OK and doc["halts_held"] <= nohalt.HALTS_OK, (held, doc)
        assert doc["cpuidle_driver"] and "killed or not" in doc["undone_by"]
    assert halts_over() > nohalt.HALTS_OK


@needs_cpuidle
def test_without_a_latency_request_a_busy_loop_keeps_each_cpu_awake_until_the_end(tmp_path):
    """Where the request cannot be made (here: a path that is no device), a SCHED_IDLE busy loop on
    each CPU keeps it from halting, and the loops are gone after the block. Mutant caught: the loops
    left running."""
    before = spinning()
    with nohalt.kept_awake(CPUS, qos=tmp_path / "no-such-device") as doc:
        assert doc["method"] == "polling" and "no-such-device" in doc["pm_qos_refused"]
        assert len(spinning()) >= len(before) + len(CPUS)
        assert halts_over() <= nohalt.HALTS_OK + len(CPUS)
    assert spinning() == before


@needs_cpuidle
@needs_qos
def test_a_killed_holder_leaves_nothing_kept_awake():
    """SIGKILL the process that holds the request: the kernel drops it with the file, and the CPUs
    halt again; nothing is left for a later run to undo."""
    code = ("import os, sys, time; sys.path.insert(0, %r); from osmeter.host import nohalt\n"
            "with nohalt.kept_awake(sorted(os.sched_getaffinity(0))) as d:\n"
            "    print(d['method'], flush=True); time.sleep(60)\n" % str(ROOT / "harness"))
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        method = p.stdout.readline().strip()
        if method != "pm_qos":
            pytest.skip(f"kept awake by {method!r} here")
        assert halts_over() <= nohalt.HALTS_OK
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        assert halts_over() > nohalt.HALTS_OK
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@needs_cpuidle
@needs_qos
def test_a_run_with_no_halt_records_how_and_wakes_a_halted_cpu_sooner(tmp_path):
    """`osmeter run --no-halt` records conditions.no_halt (the method, the halts counted with it held),
    and the cross-CPU wake-up, whose wakee's CPU no longer halts, costs less than in a run without it
    (the host's resume of a halted vCPU is out of it)."""
    def run(name, *extra):
        r = osmeter("run", "--probes", "sched.wakeup.cross", "--no-report", "--out", str(tmp_path / name), *extra)
        assert r.returncode == 0, r.stderr
        doc = json.loads((tmp_path / name / "results.json").read_text())
        return doc, {m["id"]: m for m in doc["measurements"]}
    doc, awake = run("awake", "--no-halt")
    nh = doc["conditions"]["no_halt"]
    if nh["method"] != "pm_qos":
        pytest.skip(f"kept awake by {nh['method']} here")
    assert nh["halts_held"] <= nohalt.HALTS_OK and nh["cpus"] == CPUS
    plain_doc, plain = run("plain")
    assert "no_halt" not in plain_doc["conditions"]
    halting = plain["sched.wakeup.cross"]["params"].get("wakee_cpu_halts_per_wakeup")
    if not halting or halting < 0.5:
        pytest.skip(f"the wakee's CPU halted {halting} times a wake-up without --no-halt: nothing to take out")
    assert awake["sched.wakeup.cross"]["params"]["wakee_cpu_halts_per_wakeup"] < 0.1
    assert awake["sched.wakeup.cross"]["median"] < plain["sched.wakeup.cross"]["median"]
