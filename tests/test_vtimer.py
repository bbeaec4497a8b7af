"""The stop-watch library (tests/c/test_vtimer.c) and its cost probe."""
import json
import os
import subprocess
import sys

import numpy as np

from conftest import BIN, ROOT, probe_lines


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


# Planted: perf_event_open refused (EACCES) to a program run with this
# preloaded, so the virtual timers must read CLOCK_THREAD_CPUTIME_ID, on
# any host, whatever its perf settings.
NO_PERF_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <sys/syscall.h>
long syscall(long n, ...)
{
    va_list ap;
    long a[6];
    va_start(ap, n);
    for (int i = 0; i < 6; i++)
        a[i] = va_arg(ap, long);
    va_end(ap);
    if (n == SYS_perf_event_open) {
        errno = EACCES;
        return -1;
    }
    long (*real)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
    return real(n, a[0], a[1], a[2], a[3], a[4], a[5]);
}
"""

# A clock_gettime(CLOCK_THREAD_CPUTIME_ID) from Python, less Python's own
# cost of a call (a vDSO clock read's): one system call, timed by another program.
PY_CPUTIME = """
import time
n = 100000
best = []
for _ in range(5):
    t0 = time.perf_counter_ns()
    for _ in range(n): time.thread_time_ns()
    t1 = time.perf_counter_ns()
    for _ in range(n): time.perf_counter_ns()
    t2 = time.perf_counter_ns()
    best.append(((t1 - t0) - (t2 - t1)) / n)
print(sorted(best)[2])
"""


def test_timer_costs_against_the_clocks_they_read(tmp_path):
    """Each call reads one clock: a physical timer the TSC (LFENCE, RDTSCP),
    so it costs about what cpu_timer measures for RDTSCP; a virtual timer
    in thread-cputime mode a CLOCK_THREAD_CPUTIME_ID system call, so it
    costs about what that call costs Python (another program); in
    perf-mmap mode no system call at all, so far less. Thread-cputime mode
    is forced with a preloaded perf_event_open that fails, so that relation
    is checked on every host. Mutants caught: the per-call division by the
    256 timers wrong; virtual timers reading the TSC."""
    shim = tmp_path / "noperf.so"
    (tmp_path / "noperf.c").write_text(NO_PERF_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(tmp_path / "noperf.c"), "-ldl"],
                   check=True)
    rdtscp = float(np.median(probe_lines("cpu_timer", "--samples", "20", "--cpu", "0")["cpu.timer.rdtscp"]["samples"]))
    py = subprocess.run(["taskset", "-c", "0", sys.executable, "-c", PY_CPUTIME], capture_output=True, text=True,
                        check=True)
    syscall_ns = float(py.stdout)

    def costs(env=None):
        r = subprocess.run([str(BIN / "cpu_vtimer"), "--samples", "30", "--cpu", "0"], capture_output=True,
                           text=True, timeout=120, env=dict(os.environ, **(env or {})))
        assert r.returncode == 0, r.stderr
        lines = {o["id"]: o for o in map(json.loads, r.stdout.splitlines())}
        # the windows' own check for deschedules falls back to getrusage where perf_event_open fails too
        check = lines["cpu.vtimer.phys.start"]["timer"]["deschedule_check"]
        assert check == "getrusage" if env else check in ("perf-mmap-lock", "getrusage"), check
        hz = lines["cpu.vtimer.phys.start"]["tsc_hz"]
        return lines["cpu.vtimer.virt.start"]["params"]["virtual_mode"], {
            i: float(np.median(o["samples"])) * 1e9 / hz for i, o in lines.items()}, 1e9 / hz

    forced_mode, forced, ns_per_tick = costs({"LD_PRELOAD": str(shim)})
    mode, default, _ = costs()
    assert forced_mode == "thread-cputime"
    print(f"syscall {syscall_ns:.0f} ns, rdtscp {rdtscp * ns_per_tick:.1f} ns; forced {forced}; {mode} {default}")
    rdtscp_ns = rdtscp * ns_per_tick
    for got in (forced, default):
        for i in ("cpu.vtimer.phys.start", "cpu.vtimer.phys.stop"):
            assert 0.5 * rdtscp_ns <= got[i] <= 3 * rdtscp_ns + 40, (i, got[i], rdtscp_ns)
    for i in ("cpu.vtimer.virt.start", "cpu.vtimer.virt.stop", "cpu.vtimer.virt.read"):
        assert 0.4 * syscall_ns <= forced[i] <= 2.5 * syscall_ns, (i, forced[i], syscall_ns)
        if mode == "thread-cputime":
            assert 0.4 * syscall_ns <= default[i] <= 2.5 * syscall_ns, (i, default[i], syscall_ns)
        else:  # the perf page: a TSC read and a few loads, no system call
            assert mode == "perf-mmap" and default[i] < 0.5 * forced[i], (i, default[i], forced[i])
