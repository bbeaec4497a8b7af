"""Each probe binary: its contract (DESIGN.md 2 and 3), its errors, its options."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import BIN, probe, probe_lines, takes_samples
from osmeter.probes import registry
from osmeter.host.machine import describe_machine

# binaries that print probe lines themselves (iogen has its own interface: test_iogen.py)
BINARIES = sorted({p.binary for p in registry.PROBES if p.parse is None})
# each probe's declaration gives smaller sizes where the defaults would take long
SMOKE = {p.binary: p.smoke for p in reversed(registry.PROBES)}  # the first probe's of a binary
KEYS = {"id", "unit", "tsc_hz", "params", "overhead_subtracted", "samples", "disturbed", "timer"}


def test_every_registered_binary_is_built():
    for b in BINARIES:
        assert (BIN / b).is_file(), b


@pytest.mark.parametrize("binary", BINARIES)
def test_help(binary):
    r = probe(binary, "--help")
    assert r.returncode == 0
    for opt in ("--samples", "--iterations", "--cpu", "--human", "--help"):
        assert opt in r.stdout


@pytest.mark.parametrize(
    "args, words",
    [
        (("--samples", "abc"), "--samples"),
        (("--samples", "0"), "--samples"),
        (("--samples", "-3"), "--samples"),
        (("--cpu", "4000"), "--cpu: expected a whole number"),
        (("--cpu", "999"), "--cpu 999: cannot pin there"),
        (("--cpu",), "needs a value"),
        (("--frobnicate",), "unknown option"),
        (("--timer", "hpet"), "--timer"),
        (("stray",), "unexpected argument"),
    ],
)
@pytest.mark.parametrize("binary", ["cpu_loop", "cpu_proc"])
def test_bad_arguments(binary, args, words):
    r = probe(binary, *args)
    assert r.returncode == 2
    assert words in r.stderr
    assert r.stdout == ""


@pytest.mark.parametrize("binary", BINARIES)
def test_json_lines_contract(binary):
    # a binary may serve several probes (mem_bw: mem.bw and mem.bw.cache): run bare, it prints them
    # all, but for the twins that need a peer or a remote file system (.remote)
    ps = [p for p in registry.PROBES if p.binary == binary and not p.needs]
    ids = {i for p in ps for i in p.ids()}
    args = (("--samples", "5") if takes_samples(binary) else ()) + ("--cpu", "0") + SMOKE.get(binary, ())
    lines = probe_lines(binary, *args)
    derived = {d["id"] for p in ps if p.derive for d in p.derive(list(lines.values()), describe_machine())}
    # the probe prints every id the harness does not derive; derived ids are
    # registered ones (how many cache levels a short curve shows may vary)
    assert derived <= ids and not set(lines) & derived
    assert set(lines) == {i for i in ids if not re.fullmatch(r"mem\.lat\.l\d", i) and i != "mem.lat.dram"}
    units = {m.id: m.unit for p in ps for m in p.measures}
    for mid, o in lines.items():
        if "refused" in o:  # an id this machine cannot give names its reason, and nothing else
            assert set(o) == {"id", "refused"} and len(o["refused"]) > 10, o
            continue
        assert KEYS <= set(o), mid
        # TSC probes print cycles and the harness reports ns; others print the reported unit
        assert o["unit"] == units[mid] or (o["unit"] == "cycles" and units[mid] == "ns"), mid
        assert o["tsc_hz"] > 1e8
        # one sample per event where the probe counts events (timer ticks, CPU pairs)
        want = {"cpu.timer_overhead": 2000, "fs.cache_size": 1, "sched.timer.latency": 200,
                "sched.noise.gap": o["params"].get("interruptions"),
                "cpu.c2c": len(o["params"].get("cpus", [])) * (len(o["params"].get("cpus", [])) - 1)}.get(mid, 5)
        assert len(o["samples"]) == want, mid
        assert all(isinstance(i, int) and 0 <= i < len(o["samples"]) for i in o["disturbed"])
        assert o["timer"]["kind"] == ("clock_gettime" if mid == "sched.timer.latency" else "tsc-fenced")


def test_clock_fallback_is_labeled():
    o = probe_lines("cpu_syscall", "--samples", "5", "--timer", "clock")["cpu.syscall.getppid"]
    assert o["unit"] == "ns" and o["tsc_hz"] == 1e9
    assert o["timer"]["kind"] == "clock_gettime" and "fallback" in o["timer"]


def test_human_output_one_line_per_measurement():
    r = probe("cpu_syscall", "--samples", "5", "--human")
    assert r.returncode == 0
    lines = r.stdout.strip().splitlines()
    assert len(lines) == 7 and all("median" in ln and "ns" in ln for ln in lines)
    with pytest.raises(json.JSONDecodeError):
        json.loads(lines[0])


def test_loop_series_shape_and_slope():
    o = probe_lines("cpu_loop", "--samples", "20", "--series-max", "4096", "--cpu", "0")["cpu.loop"]
    s = o["series"]
    assert s["x"][0] == 0 and s["x"][-1] == 4096
    med = [sorted(row)[len(row) // 2] for row in s["samples"]]
    # the whole-window time grows with the loop count; the intercept is the timer's cost
    assert med[-1] > med[0] + 4096 * 0.1
    assert abs(med[0] - o["timer"]["overhead_median"]) < 0.5 * o["timer"]["overhead_median"] + 50


def test_fixed_iteration_probes_refuse_batches():
    r = probe("cpu_proc", "--iterations", "10")
    assert r.returncode == 2 and "one fork" in r.stderr
    # the probes whose sample is one event say so in their declaration; args.c refuses for them all
    for binary, event in (("cpu_thread", "one thread creation"), ("cpu_exec", "one program start"),
                          ("net_conn", "one connection"), ("fs_reread", "one pass over the file")):
        r = probe(binary, "--iterations", "2")
        assert r.returncode == 2 and f"--iterations: a sample is {event}; only 1 is allowed" in r.stderr, r.stderr
        assert probe(binary, "--iterations", "1", "--help").returncode == 0


# An option given before --help is parsed (and refused when bad) before the help exits: a cheap way to
# try a row's limits without measuring anything.
@pytest.mark.parametrize("binary, args, error", [
    ("cpu_ctxring", ("--switches", "16"), None),
    ("cpu_ctxring", ("--switches", "15"), "--switches: expected a whole number from 16 to 16777216, got '15'"),
    ("cpu_ctxring", ("--switches", "16777217"), "--switches: expected a whole number from 16 to 16777216"),
    ("cpu_ctxring", ("--procs", ",".join(["64"] * 16)), None),
    ("cpu_ctxring", ("--procs", ",".join(["2"] * 17)), "--procs: at most 16 values"),
    ("cpu_ctxring", ("--procs", "2,65"), "--procs: expected a whole number from 2 to 64, got '65'"),
    ("mem_loaded", ("--delays", ","), "--delays: give a comma-separated list"),
    ("mem_loaded", ("--delays", ",".join(["0"] * 16)), "--delays: at most 15 values"),
    ("fs_contention", ("--block", "512"), None),
    ("fs_contention", ("--block", "511"), "--block: 511 is outside 512 .. 67108864 bytes"),
    ("fs_read", ("--sizes", "4K,64M"), None),
    ("fs_read", ("--sizes", "4K,2K"), "--sizes: 2K is outside 4096 .. 1099511627776 bytes"),
    ("sched_timer", ("--seconds", "86400"), None),
    ("sched_timer", ("--seconds", "86401"), "--seconds: expected a number above 0, at most 86400; got '86401'"),
    ("sched_timer", ("--seconds", "nan"), "--seconds: expected a number above 0"),
    ("mem_lat", ("--pages", "thp", "--chain", "sequential"), None),
    ("mem_lat", ("--pages", "2m"), "--pages: expected one of 4k|thp, got '2m'"),
    ("mem_lat", ("--max", "auto"), None),
    ("sched_wakeup", ("--other-cpu", "-1"), "--other-cpu: expected a whole number from 0"),
    ("cpu_c2c", ("--list-pairs=yes",), "--list-pairs takes no value"),
    ("net_rtt", ("--timeout", "0"), "--timeout: expected a whole number from 1 to 600000, got '0'"),
    ("cpu_proc", ("--child-exit", "exit"), None),
    ("cpu_proc", ("--child-exit", "quit"), "--child-exit: expected one of _exit|exit, got 'quit'"),
])
def test_option_rows_keep_their_limits(binary, args, error):
    r = probe(binary, *args, "--help")
    if error is None:
        assert r.returncode == 0 and "usage:" in r.stdout, r.stderr
    else:
        assert r.returncode == 2 and error in r.stderr and r.stdout == "", r.stderr


def _own_options(helptext: str) -> dict[str, str]:
    """A probe's own options in its --help (after the shared ones): name -> the rest of the line."""
    own = helptext.split("--help           this text\n", 1)[1]
    return {m.group(1): m.group(2) for m in re.finditer(r"^  --([a-z0-9-]+)(.*)$", own, re.M)}


@pytest.mark.parametrize("binary", BINARIES)
def test_help_lists_every_option_the_harness_passes_with_its_default(binary):
    """Every option a preset or the smoke test passes is a row of the probe (parsed, within its limits:
    it and --help exit 0), listed in --help with the default it had before parsing."""
    given = [a for p in registry.PROBES if p.binary == binary
             for a in (*p.smoke, *(x for args in p.presets.values() for x in args))]
    given = ["/tmp" if a in ("{fs_dir}", "{meta_dir}") else a for a in given]
    before = _own_options(probe(binary, "--help").stdout)
    for i, a in enumerate(given):
        if a.startswith("--") and a.split("=")[0][2:] not in ("samples", "iterations", "warmup", "cpu", "timer"):
            name = a.split("=")[0][2:]
            assert name in before, f"{binary}: {a} is not in --help"
            takes = i + 1 < len(given) and not given[i + 1].startswith("--") and "=" not in a
            assert "(default" in before[name] or not takes, (binary, a)  # a flag has none
    r = probe(binary, *given, "--help")
    assert r.returncode == 0, (binary, given, r.stderr)
    assert _own_options(r.stdout) == before  # the defaults, not the values just given


def test_help_says_each_rows_default():
    assert _own_options(probe("cpu_ctxring", "--help").stdout) == {
        "procs": " N,N..    processes in the ring, a list (default 2,8,16)",
        "sizes": " N,N..    KiB of working set per process, a list (default 0,16,64)",
        "switches": " N     switches per sample (default 2000)"}
    fs = _own_options(probe("fs_contention", "--size", "1G", "--method", "evict", "--help").stdout)
    assert fs["size"].endswith("(default 32M)") and fs["block"].endswith("(default 4K)")
    assert fs["method"].startswith(" direct|evict ") and fs["method"].endswith("(default direct)")
    assert _own_options(probe("sched_timer", "--help").stdout)["seconds"].endswith("how long to measure (default 5)")
    assert _own_options(probe("net_bw", "--help").stdout)["sndbuf"].endswith("(default 1048576)")
    assert _own_options(probe("mem_bw", "--help").stdout)["size"].endswith(
        "(default: 8 x the last cache, within 256M..max(1G, 2 x the cache))")  # a default said in words


def test_call_probe_subtracts_loop_and_timer():
    """A timed turn is 8 calls and one turn of the loop: per call =
    (turn - loop) / 8, the turn as timed (params.turn_median, the timer's
    overhead out) and the loop timed apart; that loop's cost agrees with
    cpu_loop's, another program timing the same empty loop. Mutant caught:
    the line that subtracts the loop deleted."""
    calls = probe_lines("cpu_call", "--samples", "15", "--cpu", "0")
    loop = float(np.median(probe_lines("cpu_loop", "--samples", "30", "--series-max", "1",
                                       "--cpu", "0")["cpu.loop"]["samples"]))
    for k in range(8):
        o = calls[f"cpu.call.args{k}"]
        p = o["params"]
        assert 0.5 * loop <= p["loop_per_iteration"] <= 2 * loop + 1, (p["loop_per_iteration"], loop)
        assert np.median(o["samples"]) == pytest.approx((p["turn_median"] - p["loop_per_iteration"]) / 8,
                                                        rel=1e-6), k
        timer = o["timer"]["overhead_median"] / p["iterations_per_sample"]
        assert o["overhead_subtracted"] == pytest.approx((timer + p["loop_per_iteration"]) / 8, rel=1e-6)


@pytest.mark.parametrize("argv, words", [
    (("cpu_c2c", "--cpus", "0,0"), "named twice"),
    (("cpu_c2c", "--cpus", "0,1,1,0"), "named twice"),
    (("cpu_call", "--iterations", "1099511627776"), "--iterations"),
])
def test_inputs_that_would_never_finish_are_refused(argv, words):
    r = probe(*argv, timeout=20)
    assert r.returncode == 2 and words in r.stderr, r.stderr
