"""Each probe binary: its contract (DESIGN.md 2 and 3), its errors, its options."""
from __future__ import annotations

import json
import re

import numpy as np
import pytest

from conftest import BIN, probe, probe_lines, takes_samples
from osmeter import registry
from osmeter.machine import describe_machine

# binaries that print probe lines themselves (iogen has its own interface: test_disk.py)
BINARIES = sorted({p.binary for p in registry.PROBES if p.parse is None})
# each probe's declaration gives smaller sizes where the defaults would take long
SMOKE = {p.binary: p.smoke for p in registry.PROBES}
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
    p = next(p for p in registry.PROBES if p.binary == binary)
    args = (("--samples", "5") if takes_samples(binary) else ()) + ("--cpu", "0") + SMOKE.get(binary, ())
    lines = probe_lines(binary, *args)
    derived = {d["id"] for d in p.derive(list(lines.values()), describe_machine())} if p.derive else set()
    # the probe prints every id the harness does not derive; derived ids are
    # registered ones (how many cache levels a short curve shows may vary)
    assert derived <= set(p.ids()) and not set(lines) & derived
    assert set(lines) == {i for i in p.ids() if not re.fullmatch(r"mem\.lat\.l\d", i) and i != "mem.lat.dram"}
    units = {m.id: m.unit for m in p.measures}
    for mid, o in lines.items():
        if "refused" in o:  # an id this machine cannot give names its reason, and nothing else
            assert set(o) == {"id", "refused"} and len(o["refused"]) > 10, o
            continue
        assert KEYS <= set(o), mid
        # TSC probes print cycles and the harness reports ns; others print the reported unit
        assert o["unit"] == units[mid] or (o["unit"] == "cycles" and units[mid] == "ns"), mid
        assert o["tsc_hz"] > 1e8
        # one sample per event where the probe counts events (timer ticks, CPU pairs)
        want = {"cpu.timer_overhead": 2000, "fs.cache_size": 1, "timer.latency": 200,
                "sched.noise.gap": o["params"].get("interruptions"),
                "cpu.c2c": len(o["params"].get("cpus", [])) * (len(o["params"].get("cpus", [])) - 1)}.get(mid, 5)
        assert len(o["samples"]) == want, mid
        assert all(isinstance(i, int) and 0 <= i < len(o["samples"]) for i in o["disturbed"])
        assert o["timer"]["kind"] == ("clock_gettime" if mid == "timer.latency" else "tsc-fenced")


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
