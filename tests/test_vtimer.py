"""The stop-watch library (tests/c/test_vtimer.c) and its cost probe."""
import subprocess

from conftest import ROOT, by_id


def test_vtimer_library_against_what_the_thread_did():
    r = subprocess.run([str(ROOT / "build" / "test" / "test_vtimer")], capture_output=True, text=True, timeout=120)
    print(r.stdout)
    assert r.returncode == 0 and "FAIL" not in r.stdout, r.stdout + r.stderr
    for name in ("sleep", "pipe", "busy alone", "competitor", "global virtual", "global physical", "private owner"):
        assert f"PASS {name}" in r.stdout


def test_example_program_links_and_shows_the_difference():
    r = subprocess.run([str(ROOT / "build" / "bin" / "vtimer_example")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    phys = float(r.stdout.split("physical ")[1].split(" ms")[0])
    virt = float(r.stdout.split("virtual ")[1].split(" ms")[0])
    assert phys >= 100 and virt < phys - 90  # five 20 ms sleeps are physical time only


def test_timer_costs_in_a_quick_run(quick_run):
    m = by_id(quick_run[1])
    for i in ("timer.phys.start", "timer.phys.stop", "timer.virt.start", "timer.virt.stop", "timer.virt.read"):
        assert m[i]["median"] > 0
    mode = m["timer.virt.start"]["params"]["virtual_mode"]
    if mode == "thread-cputime":  # a system call per reading: far dearer than the TSC
        assert m["timer.virt.start"]["median"] > 3 * m["timer.phys.start"]["median"]
    assert m["cpu.syscall.getppid"]["timer"]["deschedule_check"] in ("perf-mmap-lock", "getrusage")
