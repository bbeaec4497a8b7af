"""Relations a correct suite must show on any machine, checked on real runs.
Absolute times drift on a shared VM; orderings and ratios do not."""
from __future__ import annotations

import math
import time

import numpy as np
import pytest

from conftest import by_id, probe_lines
from osmeter.probes import registry


def test_every_quick_id_has_a_finite_positive_median(quick_run):
    _, doc = quick_run
    got = by_id(doc)
    for probe, ids in registry.select(None, "quick"):
        for mid in ids:
            assert mid in got, mid
            med = got[mid]["median"]
            assert med is not None and math.isfinite(med) and med > 0, (mid, med)
    assert doc["complete"] is True and doc["failures"] == []


def test_syscall_costs_more_than_a_call_which_costs_more_than_nothing(quick_run):
    m = by_id(quick_run[1])
    call = m["cpu.call.args0"]["median"]
    assert 0 < call
    assert m["cpu.syscall.getppid"]["median"] > 10 * call
    assert m["cpu.syscall.gettid"]["median"] > 10 * call
    assert m["cpu.loop"]["median"] < m["cpu.syscall.getppid"]["median"]


def test_thread_creation_cheaper_than_process_creation(quick_run):
    m = by_id(quick_run[1])
    assert m["cpu.thread_create"]["median"] < m["cpu.proc_create"]["median"]
    assert m["cpu.thread_create_join"]["median"] < m["cpu.proc_create_wait"]["median"]
    # until-first-run is part of create-and-wait
    assert m["cpu.proc_create"]["median"] < m["cpu.proc_create_wait"]["median"]


def test_call_cost_does_not_fall_as_arguments_are_added(quick_run):
    m = by_id(quick_run[1])
    costs = np.array([m[f"cpu.call.args{k}"]["median"] for k in range(8)])
    slope = np.polyfit(np.arange(8), costs, 1)[0]
    assert slope > -0.02 * costs[0], costs
    assert costs[7] >= 0.9 * costs[0], costs


def test_thread_switch_not_dearer_than_process_switch():
    """Process and thread samples alternate, so they pair up. A process
    switch also changes the address space; with PCID that costs only 2-4%
    on these VMs, and under a busy host the sign test over the pairs ranged
    from 0.54 to 0.88 in favour of the process switch being dearer. What
    holds every time: the thread switch is not dearer beyond 3%, and the
    process switch is not the cheaper one in most pairs."""
    lines = probe_lines("cpu_ctx", "--samples", "300", "--cpu", "0")
    p = np.array(lines["cpu.ctx.proc"]["samples"])
    t = np.array(lines["cpu.ctx.thread"]["samples"])
    frac = float(np.mean(p > t))
    assert frac > 0.4, f"process switch dearer in only {frac:.0%} of pairs"
    assert np.median(t) <= 1.03 * np.median(p)
    assert np.median(t) > 0


def test_switch_costs_more_than_a_pipe_write_and_read_is_subtracted():
    """A round trip is two switches plus two pipe writes and reads: the
    figure per switch is (round trip - 2 x pipe) / 2, the pipe cost being
    the median of the emitted cpu.ctx.pipe_overhead samples (computed here),
    the round trip the probe's raw one. Mutants: the pipe cost not
    subtracted, or subtracted twice (the figure moves by a pipe cost)."""
    t0 = time.monotonic()
    lines = probe_lines("cpu_ctx", "--samples", "30", "--cpu", "0")
    wall = time.monotonic() - t0
    pipe = float(np.median(lines["cpu.ctx.pipe_overhead"]["samples"]))
    spent = 0.0
    for k in ("proc", "thread"):
        o = lines[f"cpu.ctx.{k}"]
        rts, rt = o["params"]["roundtrips_per_sample"], o["params"]["roundtrip_median"]
        assert o["params"]["pipe_write_read"] == pytest.approx(pipe, rel=1e-6)
        assert float(np.median(o["samples"])) == pytest.approx((rt - 2 * pipe) / 2, rel=1e-6), k
        assert o["overhead_subtracted"] == pytest.approx(o["timer"]["overhead_median"] / rts / 2 + pipe, rel=1e-6)
        assert rt / 2 > pipe and np.median(o["samples"]) > 0, (k, rt, pipe)  # a switch costs more than nothing
        spent += len(o["samples"]) * rts * rt / o["tsc_hz"]
    # the round trips the figures stand for took place within the probe's lifetime
    assert 0 < spent < wall, (spent, wall)


def test_timer_figures_are_consistent(quick_run):
    m = by_id(quick_run[1])
    # RDTSCP waits for earlier instructions; it is never cheaper than RDTSC
    assert m["cpu.timer.rdtscp"]["median"] >= 0.9 * m["cpu.timer.rdtsc"]["median"]
    # the fenced window holds one RDTSC and one RDTSCP (the CPUIDs fall outside)
    assert m["cpu.timer_overhead"]["median"] < m["cpu.timer.cpuid"]["median"]


def test_signal_delivery_costs_more_than_a_syscall(quick_run):
    m = by_id(quick_run[1])
    assert m["cpu.signal.deliver"]["median"] > m["cpu.syscall.getppid"]["median"]
