"""Where the users are (issue 17): a clang build with the same -Werror flags
that passes the C tests, calls that stay calls under both compilers (the
disassembly shows it), the probes cross-built for aarch64 and run under
qemu-user (function only: valid lines, the expected ids, refusals named),
and the clock-timer fallback end to end."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import BIN, ROOT, osmeter, probe, takes_samples
from osmeter.probes import registry
from osmeter.present.values import fmt_value

CROSS = "aarch64-linux-gnu-gcc"
QEMU = "qemu-aarch64"
SYSROOT = "/usr/aarch64-linux-gnu"
KEYS = {"id", "unit", "tsc_hz", "params", "overhead_subtracted", "samples", "disturbed", "timer"}


def build(cc: str, build_dir: str) -> Path:
    """make all with another compiler into build/<name> (incremental)."""
    r = subprocess.run(["make", "-s", "-C", str(ROOT), f"CC={cc}", f"BUILD={build_dir}", "all"], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "warning:" not in r.stderr, r.stderr[-3000:]  # -Werror, and nothing printed either
    return ROOT / build_dir


@pytest.fixture(scope="module")
def clang_build() -> Path:
    if not shutil.which("clang"):
        pytest.skip("clang is not installed (.ci/run installs it)")
    return build("clang", "build/clang")


def test_clang_build_passes_the_c_tests(clang_build):
    tests = sorted((clang_build / "test").iterdir())
    assert len(tests) >= 4
    for t in tests:
        r = subprocess.run([str(t)], capture_output=True, text=True, timeout=300, cwd=ROOT)
        assert r.returncode == 0, f"{t.name}: {r.stdout[-2000:]}{r.stderr[-2000:]}"
        assert re.search(r"\d+ passed, 0 failed", r.stdout), r.stdout[-500:]


def calls_in(binary: Path, caller: str, callee: str) -> int:
    """How many times caller's machine code calls callee (objdump)."""
    d = subprocess.run(["objdump", "-d", "--no-show-raw-insn", str(binary)], capture_output=True, text=True).stdout
    m = re.search(rf"^[0-9a-f]+ <{caller}>:\n(.*?)\n\n", d, re.S | re.M)
    assert m, f"{caller} is not in {binary}"
    return len(re.findall(rf"\bcall\s+[0-9a-f]+ <{callee}>", m.group(1)))


@pytest.mark.skipif(not shutil.which("objdump"), reason="needs objdump (binutils)")
@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_the_call_probe_calls(compiler, request):
    """cpu.call times calls: each body must call f<K> 8 times (unrolled), not
    inline it, under GCC (noipa) and clang (OSM_CALLEE's external linkage)."""
    if os.uname().machine != "x86_64":
        pytest.skip("reads x86-64 machine code")
    binary = (BIN if compiler == "gcc" else request.getfixturevalue("clang_build") / "bin") / "cpu_call"
    for k in range(8):
        assert calls_in(binary, f"body{k}", f"f{k}") == 8, (compiler, k)


# ----------------------------------------------------------------- aarch64

@pytest.fixture(scope="module")
def aarch64_build() -> Path:
    if not (shutil.which(CROSS) and shutil.which(QEMU) and Path(SYSROOT).is_dir()):
        pytest.skip("needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user (.ci/run installs them)")
    return build(CROSS, "build/aarch64")


def qemu(binary: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([QEMU, "-L", SYSROOT, str(binary), *args], capture_output=True, text=True,
                          timeout=timeout, cwd="/tmp")


@pytest.fixture(scope="module")
def aarch64_peer(aarch64_build):
    """netpeer, itself cross-built, under qemu: the net probes' --peer."""
    p = subprocess.Popen([QEMU, "-L", SYSROOT, str(aarch64_build / "bin" / "netpeer"), "--bind", "127.0.0.1"],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    m = re.search(r"listening on ([\d.]+:\d+)", line)
    assert m, line
    yield m.group(1)
    p.terminate()
    p.wait(timeout=10)


# one declaration per binary: the local one (net and fs also declare .remote twins)
BINARIES = sorted({p.binary: p for p in reversed(registry.PROBES) if p.parse is None and not p.external}.items())


@pytest.mark.parametrize("binary, decl", BINARIES, ids=[b for b, _ in BINARIES])
def test_aarch64_probes_print_valid_lines_under_qemu(binary, decl, aarch64_build, aarch64_peer, tmp_path):
    # a probe whose count comes from elsewhere (sched_timer, fs_cache) refuses --samples: its --help says so
    args = (["--samples", "3"] if takes_samples(binary) else []) + list(decl.smoke)
    peer = binary.startswith("net_") and "--peer" in probe(binary, "--help").stdout  # net_ipc has no peer
    if peer:
        args += ["--peer", aarch64_peer]
    if binary.startswith("fs_"):
        args = [a if a not in ("{fs_dir}", "{meta_dir}") else str(tmp_path) for a in args] + (["--dir", str(tmp_path)]
                                                                          if "--dir" not in args else [])
    r = qemu(aarch64_build / "bin" / binary, *args)
    assert r.returncode == 0, r.stderr[-2000:]
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    got = {o["id"] for o in lines}
    # every local probe of the binary (mem_bw serves mem.bw and mem.bw.cache), run bare
    local = {i for p in registry.PROBES if p.binary == binary and not p.needs for i in p.ids()}
    want = {i for i in local if not re.fullmatch(r"mem\.lat\.l\d", i) and i != "mem.lat.dram"}
    if peer:  # against a peer, the .remote twins of the loopback ids
        want = {i.replace(".loopback", ".remote") for i in want}
    assert got == want, (got, want)
    for o in lines:
        if "refused" in o:
            assert set(o) == {"id", "refused"} and o["refused"]
            continue
        assert KEYS <= set(o), o["id"]
        assert o["timer"]["kind"] in ("cntvct-isb", "clock_gettime"), o["timer"]
        assert o["timer"]["resolution_ns"] > 0


def test_aarch64_timer_states_its_resolution(aarch64_build):
    """The counter's rate comes from CNTFRQ_EL0, its step is measured (one
    tick or more, fractional where the counter moves so: the spacing of its
    differences), and batching keeps one step of quantization under 1% of a
    window (at least 100 steps per window). The typical window is checked:
    batching is calibrated on the quickest of three windows with a quarter's
    headroom, and under emulation on a busy host a single later window can
    still come out a fifth quicker than every calibration window."""
    o = json.loads(qemu(aarch64_build / "bin" / "cpu_syscall", "--samples", "9").stdout.splitlines()[0])
    t = o["timer"]
    assert t["kind"] == "cntvct-isb" and o["tsc_hz"] > 1e6
    assert t["step_ticks"] >= 1
    assert t["resolution_ns"] == pytest.approx(t["step_ticks"] * 1e9 / o["tsc_hz"])
    window_ticks = float(np.median(o["samples"])) * o["params"]["iterations_per_sample"]
    assert window_ticks >= 99 * t["step_ticks"], window_ticks


def test_aarch64_iogen_falls_back_and_says_why(aarch64_build, tmp_path):
    """qemu-user has no io_uring_setup (nor io_setup): iogen passes to the
    next engine the kernel offers and records why."""
    r = qemu(aarch64_build / "bin" / "iogen", "--target", str(tmp_path / "t.dat"), "--size", "8M", "--workload",
             "4k-random-read", "--time", "0.3", "--ramp", "0")
    assert r.returncode == 0, r.stderr
    o = json.loads(r.stdout.splitlines()[0])
    if o["engine"] != "uring":
        assert "io_uring_setup" in o["engine_fallback"] and "warning" in r.stderr
        assert o["reads"] > 0


# ------------------------------------------------------------ clock timer

def test_a_forced_clock_run_gives_labelled_results_with_the_same_ids(tmp_path):
    r = osmeter("run", "--probes", "cpu.syscall,cpu.ctx,sched.wakeup", "--timer", "clock", "--out",
                str(tmp_path / "clk"), "--no-report")
    assert r.returncode == 0, r.stderr
    r2 = osmeter("run", "--probes", "cpu.syscall,cpu.ctx,sched.wakeup", "--out", str(tmp_path / "tsc"),
                 "--no-report")
    assert r2.returncode == 0, r2.stderr
    clk = json.loads((tmp_path / "clk" / "results.json").read_text())
    tsc = json.loads((tmp_path / "tsc" / "results.json").read_text())
    ids = lambda d: {m["id"] for m in d["measurements"]} | {x["id"] for x in d.get("refused", [])}  # noqa: E731
    assert ids(clk) == ids(tsc)
    assert clk["conditions"]["timer_requested"] == "clock"
    for m in clk["measurements"]:
        assert m["timer"]["kind"] == "clock_gettime" and m["timer"]["fallback"] == "requested with --timer clock"
        assert m["unit"] == "ns" and "cycles" not in m
    # clock_gettime moves by whole ns, or, computed from a guest's stepping TSC, by that step in ns (fractional)
    t = clk["measurements"][0]["timer"]
    step = t["resolution_ns"]
    assert step >= 1 and step == pytest.approx(t["step_ticks"])
    assert f"clock_gettime (fallback: requested with --timer clock), step {fmt_value(step, 'ns')}" in r.stdout + (
        tmp_path / "clk" / "summary.txt").read_text() + _machine_rows(clk)


def _machine_rows(doc) -> str:
    from osmeter.present.rows import machine_rows

    return "\n".join(f"{k}: {v}" for k, v in machine_rows(doc))


def test_without_an_invariant_tsc_cross_cpu_ids_are_refused_with_the_reason():
    r = subprocess.run([str(BIN / "sched_wakeup"), "--samples", "20", "--gap-us", "20"], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, OSM_FAKE_NO_INVARIANT_TSC="1"))
    assert r.returncode == 0, r.stderr
    lines = {o["id"]: o for o in map(json.loads, r.stdout.splitlines())}
    for i in ("sched.wakeup.cross", "sched.wakeup.cross.fifo", "sched.wakeup.cross.pipe", "sched.wakeup.cross.loaded"):
        assert lines[i] == {"id": i, "refused": "no invariant TSC: stamps taken on two CPUs cannot be compared"}
    assert "samples" in lines["sched.wakeup.same"]
    assert "not invariant" in r.stderr  # the warning every probe gives then
