"""Memory hierarchy: level detection, the chase, bandwidth, page faults."""
from __future__ import annotations

import json
import os
import subprocess

import numpy as np
import pytest

from conftest import BIN, by_id, ncpus, probe, probe_lines
from osmeter.host.machine import caches
from osmeter.probes.memlevels import detect_levels


def sysfs(level: int) -> int:
    return next(c["size"] for c in caches() if c["level"] == level and c["type"] in ("Data", "Unified"))


# --- level detection on curves whose answer we know -----------------------

def staircase(levels, ends, steps=4, knee=1.5, noise=0.0, seed=0):
    """A latency curve with plateaus `levels` ending at `ends` bytes. Each
    knee spans the sizes from an end to `knee` times it (a physical width,
    whatever the number of points in it), rising geometrically; then
    multiplicative noise."""
    x = 2.0 ** np.arange(10, 29 + 1e-9, 1 / steps)
    y = np.empty_like(x)
    for i, s in enumerate(x):
        k = int(np.searchsorted(ends, s, side="left"))
        y[i] = levels[min(k, len(levels) - 1)]
        if 0 < k <= len(ends) and s < ends[k - 1] * knee:  # inside the knee after ends[k-1]
            f = np.log(s / ends[k - 1]) / np.log(knee)
            y[i] = levels[k - 1] * (levels[k] / levels[k - 1]) ** f
    rng = np.random.default_rng(seed)
    return x, y * np.exp(rng.normal(0, noise, y.size))


@pytest.mark.parametrize("steps", [1, 2, 4])
@pytest.mark.parametrize("noise", [0.0, 0.03])
def test_detects_four_levels_and_their_ends(steps, noise):
    ends = [32 << 10, 1 << 20, 16 << 20]
    x, y = staircase([1.0, 4.0, 14.0, 120.0], ends, steps=steps, noise=noise)
    lv = detect_levels(x, y)
    assert [v.name for v in lv] == ["l1", "l2", "l3", "dram"]
    for v, e in zip(lv, ends):
        assert e / 2 <= v.end <= e * 2 * (1 + 1e-9), (v, e)
    assert [v.latency for v in lv[:3]] == pytest.approx([1, 4, 14], rel=0.1)
    assert lv[-1].at == x[-1]


def test_a_knee_is_not_a_level():
    # a long soft ramp between two plateaus must not become a level of its own
    x, y = staircase([1.0, 4.0, 100.0], [32 << 10, 1 << 20], steps=4, knee=3.0)
    assert [v.name for v in detect_levels(x, y)] == ["l1", "l2", "dram"]


def test_a_flat_curve_is_one_level_and_bad_input_is_refused():
    x = 2.0 ** np.arange(10, 20)
    assert [v.name for v in detect_levels(x, np.full(x.size, 5.0))] == ["l1"]
    with pytest.raises(ValueError):
        detect_levels(x, np.full(x.size - 1, 5.0))
    with pytest.raises(ValueError):
        detect_levels(x[::-1], np.full(x.size, 5.0))
    with pytest.raises(ValueError):
        detect_levels(x, np.zeros(x.size))


# --- the real machine -----------------------------------------------------

def test_latency_rises_through_the_hierarchy(quick_run):
    m = by_id(quick_run[1])
    lat = [m[f"mem.lat.{k}"]["median"] for k in ("l1", "l2", "l3", "dram")]
    assert all(b > 1.5 * a for a, b in zip(lat, lat[1:])), lat
    assert m["mem.lat.curve"]["series"]["x_name"] == "bytes"


def _levels_of_the_run(run_dir, doc) -> dict[str, dict]:
    """The cache levels the harness finds in the run's own mem_lat output
    (raw/mem.lat.p*.out, its processes merged as the run merged them)."""
    from osmeter.probes.areas.mem import mem_levels
    from osmeter.results.writer import merge_processes, parse_probe_output

    procs = [parse_probe_output(f.read_text()) for f in sorted((run_dir / "raw").glob("mem.lat.p*.out"))]
    assert procs
    return {o["id"]: o for o in mem_levels(merge_processes(procs), doc["machine"])}


def test_level_ends_bracket_sysfs_sizes(quick_run):
    """L1's plateau ends within a factor of 2 of sysfs. The L2 is the core's,
    but the host core's SMT sibling may run another guest's vCPU, which
    takes part of it (one CI run saw the plateau end at 0.47x sysfs): it
    ends within 4x below and 2x above. The L3 is shared with the host's other
    guests, so its plateau may end anywhere below sysfs's size: its end is
    checked against the curve itself instead. At half the end a load is still
    nearer (in log) the L3's latency than memory's; at twice the end it is
    nearer memory's: the end is the knee, within a factor of 2."""
    m = by_id(quick_run[1])
    lv = _levels_of_the_run(quick_run[0], quick_run[1])
    for k, below in ((1, 2), (2, 4)):
        end = lv[f"mem.lat.l{k}"]["params"]["level_end"]
        assert sysfs(k) / below <= end <= 2 * sysfs(k), (k, end, sysfs(k))
    end3 = lv["mem.lat.l3"]["params"]["level_end"]
    assert sysfs(2) < end3 <= 2 * sysfs(3)
    # the curve as measured, size by size (ns), against the levels' figures (ns)
    s = m["mem.lat.curve"]["series"]
    x, med = np.asarray(s["x"], dtype=float), np.asarray(s["median"], dtype=float)
    halfway = np.sqrt(m["mem.lat.l3"]["median"] * m["mem.lat.dram"]["median"])
    inside, beyond = x <= end3 / 2, x >= 2 * end3
    assert inside.any() and med[inside][-1] < halfway, (end3, x[inside][-1], med[inside][-1], halfway)
    if beyond.any():  # the curve may stop before twice the end (memory short of four caches)
        assert med[beyond][0] > halfway, (end3, x[beyond][0], med[beyond][0], halfway)
    # what the run recorded is what the harness finds in its output
    for i, o in lv.items():
        assert o["params"]["level_end"] == m[i]["params"]["level_end"], i
    assert m["mem.lat.l2"]["params"]["sysfs_size"] == sysfs(2)


def test_the_random_chain_defeats_the_prefetcher():
    """At a DRAM-sized set, a chain a prefetcher can follow (in address
    order) is far faster than the random chain the probe uses by default."""
    args = ("--min", "64M", "--max", "64M", "--samples", "3", "--no-thp", "--cpu", "0")
    rnd = probe_lines("mem_lat", *args)["mem.lat.curve"]
    seq = probe_lines("mem_lat", *args, "--chain", "sequential")["mem.lat.curve"]
    assert rnd["params"]["chain"] == "random" and seq["params"]["chain"] == "sequential"
    assert np.median(seq["samples"]) * 4 < np.median(rnd["samples"])


def test_huge_pages_were_really_used(quick_run):
    thp = by_id(quick_run[1])["mem.lat.dram.thp"]
    if thp["params"]["thp_mode"] in ("always", "madvise"):
        assert thp["params"]["huge_fraction"] > 0.5
    assert thp["params"]["size"] == by_id(quick_run[1])["mem.lat.dram"]["params"]["size"]


def test_bandwidth_relations(quick_run):
    m = by_id(quick_run[1])
    assert m["mem.bw.read.cache"]["median"] > 2 * m["mem.bw.read"]["median"]
    assert m["mem.bw.copy.cache"]["median"] > 2 * m["mem.bw.copy"]["median"]
    # a copy reads and writes every byte: slower than reading alone
    assert m["mem.bw.copy"]["median"] < m["mem.bw.read"]["median"]
    assert m["mem.bw.read.mt"]["params"]["threads"] == ncpus()
    llc, size = max(c["size"] for c in caches()), m["mem.bw.read"]["params"]["bytes"]
    assert size >= 2 * llc  # out of cache: a stream twice the last cache misses on every pass
    if "available memory" not in m["mem.bw.read"]["params"]["size_rule"]:
        assert size >= min(8 * llc, 1 << 30)


def test_bandwidth_counts_bytes_honestly():
    """Halving the buffer must not change MB/s much in cache, and the
    in-cache figure must not be an artefact of the pass count. Pinned, and
    the best of 7 samples each: another guest on the host can only take
    bandwidth away (one CI run's 3-sample medians differed 2.2x)."""
    cpu = str(max(os.sched_getaffinity(0)))
    a = probe_lines("mem_bw", "--samples", "7", "--no-mt", "--size", "64M", "--cache-size", "16K", "--cpu", cpu)
    b = probe_lines("mem_bw", "--samples", "7", "--no-mt", "--size", "64M", "--cache-size", "8K", "--cpu", cpu)
    ra, rb = np.max(a["mem.bw.read.cache"]["samples"]), np.max(b["mem.bw.read.cache"]["samples"])
    assert 0.6 < ra / rb < 1.6
    # out of cache a pass is a 16 MiB stretch, the next each time; memcpy alone copies the whole buffer
    assert a["mem.bw.read"]["params"]["bytes_per_pass"] == 16 << 20 and a["mem.bw.read"]["params"]["bytes"] == 64 << 20
    assert a["mem.bw.copy"]["params"]["bytes_per_pass"] == 64 << 20
    assert a["mem.bw.read.cache"]["params"]["bytes_per_pass"] == 16 << 10
    assert a["mem.bw.read"]["params"]["size_rule"] == "--size"


def test_the_bandwidths_are_three_probes_of_one_binary():
    """mem.bw.cache runs mem_bw --buffers cache in several processes a run:
    it prints the three .cache ids and nothing else, and allocates no
    out-of-cache buffer (a --size no machine has is never asked for), while
    --buffers memory leaves the .cache ids out. mem.bw takes the one-thread
    out-of-cache ids (--no-mt) in several processes, mem.bw.mt the .mt ids
    alone (--buffers mt) in one; --buffers mt with --no-mt is refused.
    Mutants caught: the memory buffers' fit check made in cache mode; the
    .cache ids printed by the memory side; the one-thread ids printed by
    --buffers mt."""
    from osmeter.probes import registry

    cache = probe_lines("mem_bw", "--buffers", "cache", "--samples", "3", "--size", "512G")
    assert set(cache) == {"mem.bw.read.cache", "mem.bw.write.cache", "mem.bw.copy.cache"}
    assert all(len(x["samples"]) == 3 and min(x["samples"]) > 0 for x in cache.values())
    r = subprocess.run([str(BIN / "mem_bw"), "--buffers", "memory", "--size", "512G", "--samples", "1"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "is available; use --size" in r.stderr
    memory = probe_lines("mem_bw", "--buffers", "memory", "--samples", "1", "--no-mt", "--size", "16M")
    assert set(memory) == {"mem.bw.read", "mem.bw.write", "mem.bw.write.nt", "mem.bw.copy", "mem.bw.copy.loop"}
    mt = probe_lines("mem_bw", "--buffers", "mt", "--samples", "1", "--size", "16M")
    assert set(mt) == {"mem.bw.read.mt", "mem.bw.write.mt", "mem.bw.copy.mt"}
    r = subprocess.run([str(BIN / "mem_bw"), "--buffers", "mt", "--no-mt"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--no-mt" in r.stderr, r.stderr
    p = {x.name: x for x in registry.PROBES}
    assert p["mem.bw.cache"].processes_in("quick") > 1 and p["mem.bw"].processes_in("quick") > 1
    assert p["mem.bw.mt"].processes_in("quick") == 1
    assert set(p["mem.bw.cache"].ids()) == set(cache) and set(p["mem.bw"].ids()) == set(memory)
    assert set(p["mem.bw.mt"].ids()) == set(mt)
    for name in ("mem.bw", "mem.bw.mt", "mem.bw.cache"):
        args = p[name].presets["quick"]
        assert ("--no-mt" in args) == (name == "mem.bw"), (name, args)


def test_the_summed_bandwidth_gives_each_thread_its_own_rate():
    """The .mt figures add the threads' bytes over the slowest thread's
    time; params.thread_mbs gives each thread's own rate (its bytes over its
    own passes), one per CPU in params.thread_cpus. A thread's own time is
    inside the sample's window, so its rate is at least its share of the
    sum, and together they are not far above it (the threads start and stop
    together). Mutant caught: a thread's rate from one pass's bytes."""
    m = probe_lines("mem_bw", "--buffers", "memory", "--samples", "3", "--size", "32M")
    for k in ("read", "write", "copy"):
        x = m[f"mem.bw.{k}.mt"]
        p = x["params"]
        assert sorted(p["thread_cpus"]) == sorted(os.sched_getaffinity(0)) and len(p["thread_mbs"]) == p["threads"]
        share = float(np.median(x["samples"])) / p["threads"]
        assert all(r >= 0.95 * share for r in p["thread_mbs"]), (k, p["thread_mbs"], share)
        # (3x was exceeded once, 54,210 against 54,022 MB/s, with another process busy on the other CPU)
        assert sum(p["thread_mbs"]) <= 4 * p["threads"] * share, (k, p["thread_mbs"], share)
    if len(os.sched_getaffinity(0)) < 2:
        return
    # the threads' CPUs' cache-line round trip, before and after the samples: at least a transfer
    # between two of them (cpu_c2c's figure for the same two CPUs), not thousands of them
    # (a shared host can move the vCPUs apart between the two probes, 571 against 10.9 ns once: the
    # relation holds in one of up to three tries, each cpu_c2c right after its mem_bw)
    cpus = sorted(os.sched_getaffinity(0))[:2]
    from osmeter.probes import registry
    assert ("pair_rtt_ns" in dict(registry.find_measure("mem.bw.read.mt")[0].host_params))
    tries = []
    for attempt in range(3):
        if attempt:
            m = probe_lines("mem_bw", "--buffers", "memory", "--samples", "3", "--size", "32M")
        line = probe_lines("cpu_c2c", "--cpus", ",".join(map(str, cpus)), "--samples", "5")["cpu.c2c"]
        c2c = float(np.median(line["samples"])) * (1e9 / line["tsc_hz"] if line["unit"] == "cycles" else 1)
        rtts = [m[f"mem.bw.{k}.mt"]["params"][key] for k in ("read", "write", "copy")
                for key in ("pair_rtt_ns", "pair_rtt_ns_after")]
        tries.append((c2c, rtts))
        if all(0.5 * c2c < r < 50 * c2c for r in rtts):
            break
    else:
        pytest.fail(f"the threads' round trip was not within 0.5-50x cpu_c2c's in three tries: {tries}")


def test_major_fault_costs_far_more_than_a_minor_one(quick_run):
    m = by_id(quick_run[1])
    major, minor = m["mem.pagefault.major"], m["mem.pagefault.minor"]
    assert major["median"] >= 10 * minor["median"]
    assert major["params"]["filesystem"] != "tmpfs" and major["params"]["device"]
    assert major["params"]["not_major"] <= major["samples_total"] // 10
    assert major["params"]["device_reads"] >= 1  # (the read itself: the next test)
    # the ratio's run figure (the median of its processes' medians) is that of its inputs' run
    # figures; the pooled median of its samples ("median") is not when the processes sit in two
    # modes (CI once: 89.99 pooled against 85.22 from the run figures)
    r = m["mem.pagefault.major_vs_copy"]
    p = r["params"]
    fig = r["processes"]["median_of_medians"]
    assert fig == pytest.approx(p["fault_ns_per_byte"] / p["copy_ns_per_byte"], rel=1e-9)
    assert fig > 1


def test_the_device_read_beside_the_faults_is_most_of_a_major_fault():
    """After each major fault the probe reads the next page of its order with
    O_DIRECT, timed alone (params.device_read_ns): the device's own read,
    which the fault contains, so most of a fault and never a cached page's
    copy. Run from the binary itself (a mutant of it must reach the test).
    Mutant caught: the page just faulted, read through the cache."""
    line = probe_lines("mem_pagefault", "--samples", "30", "--file-size", "8M")["mem.pagefault.major"]
    if "refused" in line:
        pytest.skip(line["refused"])
    hz = line.get("tsc_hz") or 1e9
    fault = float(np.median(line["samples"])) * (1e9 / hz if line["unit"] == "cycles" else 1)
    p = line["params"]
    assert p["device_reads"] == 30
    assert 0.2 * fault <= p["device_read_ns"] <= 1.5 * fault, (fault, p)


NO_DIRECT_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
/* a file system that refuses O_DIRECT: every open asking for it fails as such a one does */
static int refuse(const char *name, int flags, va_list ap, const char *sym)
{
    if (flags & O_DIRECT) {
        errno = EINVAL;
        return -1;
    }
    int (*real)(const char *, int, ...) = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, sym);
    return real(name, flags, va_arg(ap, int));
}
int open(const char *name, int flags, ...) { va_list ap; va_start(ap, flags); int r = refuse(name, flags, ap, "open"); va_end(ap); return r; }
int open64(const char *name, int flags, ...) { va_list ap; va_start(ap, flags); int r = refuse(name, flags, ap, "open64"); va_end(ap); return r; }
"""


def test_a_file_system_that_refuses_o_direct_leaves_the_faults_and_says_why(tmp_path):
    """Where the fault file's file system refuses O_DIRECT (forced here with
    a preloaded open that refuses it), the faults are measured as ever and
    params.device_read says why there is no device read, in place of a
    device_read_ns that would be a cached copy's time."""
    shim = tmp_path / "nodirect.so"
    (tmp_path / "nodirect.c").write_text(NO_DIRECT_SHIM)
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", str(shim), str(tmp_path / "nodirect.c"), "-ldl"],
                   check=True)
    r = subprocess.run([str(BIN / "mem_pagefault"), "--samples", "10", "--file-size", "4M"], capture_output=True,
                       text=True, timeout=120, env=dict(os.environ, LD_PRELOAD=str(shim)))
    assert r.returncode == 0, r.stderr
    line = {o["id"]: o for o in map(json.loads, r.stdout.splitlines())}["mem.pagefault.major"]
    if "refused" in line:
        pytest.skip(line["refused"])
    assert len(line["samples"]) == 10
    assert "device_read_ns" not in line["params"] and "device_reads" not in line["params"]
    assert line["params"]["device_read"] == os.strerror(22), line["params"]


@pytest.mark.parametrize(
    "binary, args, words",
    [
        ("mem_lat", ("--max", "12Q"), "expected a size"),
        ("mem_lat", ("--min", "1M", "--max", "64K"), "--min is larger than --max"),
        ("mem_lat", ("--stride", "4"), "--stride"),
        ("mem_lat", ("--chain", "zigzag"), "--chain"),
        ("mem_lat", ("--chain", "pagewise", "--stride", "96", "--min", "1M", "--max", "1M"), "--chain pagewise: --stride"),
        ("mem_lat", ("--chain", "pagewise", "--min", "1000", "--max", "1M"), "must be whole pages"),
        ("mem_bw", ("--size", "-1"), "expected a size"),
        ("mem_bw", ("--buffers", "l1"), "--buffers: expected one of all|memory|cache"),
        ("mem_pagefault", ("--dir", "/dev/shm"), "tmpfs"),
        ("mem_pagefault", ("--dir", "/nonexistent-dir"), "No such file"),
        ("mem_pagefault", ("--file-size", "1025K"), "multiple of the page size"),
    ],
)
def test_bad_memory_arguments(binary, args, words):
    r = probe(binary, *args)
    assert r.returncode == 2, r.stderr
    assert words in r.stderr and r.stdout == ""


def test_two_points_either_side_of_their_median_still_make_a_level():
    """A segment [1, 3] has no point within 40% of its median (2): its core
    is the nearer point in log latency (3: a factor 1.5 from 2, where 1 is
    a factor 2), not nothing. Two sizes cannot make two pieces of two, so
    it is one level, and the last level is read at the largest size.
    Mutant caught: the farther point taken as the core."""
    from osmeter.probes.memlevels import Level

    assert detect_levels([1024, 2048], [1.0, 3.0]) == [Level("l1", 3.0, 2048.0, 2048.0, 2048.0, 2048.0, 1)]


FAULT_PROBE = """#!/bin/sh
# process 1 of a run lands in a far mode (200 us a fault), the others at 50 us
n=$(cat "$0.n" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$0.n"
v=50000; [ $n -eq 1 ] && v=200000
echo '{"id": "mem.pagefault.major", "unit": "ns", "params": {"page_size": 4096}, "samples": ['$v', '$v', '$v'], "disturbed": []}'
"""
COPY_PROBE = """#!/bin/sh
echo '{"id": "mem.bw.copy", "unit": "MB/s", "params": {}, "samples": [19000, 20000, 21000], "disturbed": []}'
"""


def _run_fake_fault_and_copy(tmp_path, fault_probe: str) -> dict:
    """A run of two fake probes, mem.pagefault (three processes, the script
    `fault_probe`) and mem.bw (COPY_PROBE), with mem's derived figures,
    through the real runner: its results.json."""
    from osmeter.probes.model import Probe, measure
    from osmeter.probes.areas.mem import DERIVED
    from osmeter.running.runner import run
    from osmeter.running.runopts import RunOptions

    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, text in (("fault", fault_probe), ("copy", COPY_PROBE)):
        (bindir / name).write_text(text)
        (bindir / name).chmod(0o755)
    probes = (
        Probe(name="mem.pagefault", binary="fault", area="mem", methodology="fake",
              measures=(measure("mem.pagefault.major", "ns", "fake major fault"),),
              presets={"quick": ("--samples", "3")}, processes=3),
        Probe(name="mem.bw", binary="copy", area="mem", methodology="fake",
              measures=(measure("mem.bw.copy", "MB/s", "fake copy"),), presets={"quick": ()}),
    )
    out = tmp_path / "out"
    assert run(RunOptions(out=out, rt=False, probes=probes, derived=DERIVED, bin_dir=bindir)) == (0, out)
    return json.loads((out / "results.json").read_text())


def test_a_derived_figure_takes_every_process_of_its_inputs(tmp_path):
    """mem.pagefault.major_vs_copy is derived from mem.pagefault.major and
    mem.bw.copy. It was derived once, when both had first been measured: from
    the first of major's processes alone, so a run whose first process landed
    in a far mode reported that one process's ratio (an A/A campaign's run at
    4.4x its siblings). Fake probes: major's first process at 200 us, its
    others at 50 us; the derived figure has every process, and its
    run figure (the median of their medians) is the 50 us one. Mutants caught:
    deriving only once; the derived samples without their processes."""
    doc = _run_fake_fault_and_copy(tmp_path, FAULT_PROBE)
    m = {x["id"]: x for x in doc["measurements"]}
    n = m["mem.pagefault.major"]["processes"]["n"]  # 3, or more where the figure is not yet known to +-1%
    assert n >= 3
    r = m["mem.pagefault.major_vs_copy"]
    copy_ns_per_byte = 1e3 / 20000
    want = 50000 / 4096 / copy_ns_per_byte
    assert r["samples_total"] == 3 * n and r["processes"]["n"] == n, r
    assert r["processes"]["median_of_medians"] == pytest.approx(want)
    assert r["params"]["fault_ns_per_byte"] == pytest.approx(50000 / 4096)
    assert r["params"]["copy_ns_per_byte"] == pytest.approx(copy_ns_per_byte)
    assert not doc["failures"]


FAULT_PROBE_FIRST_DISTURBED = """#!/bin/sh
# process 1 of a run has every sample disturbed (nothing to derive from yet), the others keep theirs
n=$(cat "$0.n" 2>/dev/null || echo 0); n=$((n + 1)); echo $n > "$0.n"
d='[]'; [ $n -eq 1 ] && d='[0, 1, 2]'
echo '{"id": "mem.pagefault.major", "unit": "ns", "params": {"page_size": 4096}, "samples": [50000, 50000, 50000], "disturbed": '"$d"'}'
"""


def test_a_derived_figure_that_could_not_be_derived_at_first_keeps_no_failure(tmp_path):
    """The first process of mem.pagefault.major keeps no sample, so the
    figure cannot be derived from it; the later processes' samples derive it.
    The run then holds the figure and no "cannot derive" failure beside it
    (a stale failure would have the summary and compare say it is missing).
    Mutant: the failure left in place."""
    doc = _run_fake_fault_and_copy(tmp_path, FAULT_PROBE_FIRST_DISTURBED)
    m = {x["id"]: x for x in doc["measurements"]}
    r = m["mem.pagefault.major_vs_copy"]
    assert r["processes"]["median_of_medians"] == pytest.approx(50000 / 4096 / (1e3 / 20000))
    assert doc["failures"] == []


def test_the_loaded_latency_records_where_the_host_put_its_cpus():
    """mem.lat.loaded falls to the unloaded latency when the host puts the
    vCPUs on two dies (the load then runs on another path to memory): in 277
    runs of mem_loaded, 137 of the 137 whose round trip was far before and
    after had the unloaded figure (docs/notes/2026-11-27-derived-and-storage.md).
    The probe records that round trip between the chain's CPU and the load
    threads', before the levels and after them: at least one transfer between
    the two CPUs (cpu_c2c's figure for them), not thousands; and compare
    splits its runs by it. Mutant: the param left out."""
    if ncpus() < 2:
        pytest.skip("one CPU: no load thread")
    cpus = sorted(os.sched_getaffinity(0))[:2]
    o = probe_lines("mem_loaded", "--cpu", str(cpus[1]), "--samples", "3", "--size", "8M", "--load-size", "1M",
                    "--delays", "1000,0")["mem.lat.loaded"]
    if "refused" in o:
        pytest.skip(o["refused"])
    line = probe_lines("cpu_c2c", "--cpus", ",".join(map(str, cpus)), "--samples", "5")["cpu.c2c"]
    c2c = float(np.median(line["samples"])) * (1e9 / line["tsc_hz"] if line["unit"] == "cycles" else 1)
    p = o["params"]
    assert 0.5 * c2c < p["pair_rtt_ns"] < 50 * c2c and 0.5 * c2c < p["pair_rtt_ns_after"] < 50 * c2c, (p, c2c)
    from osmeter.probes import registry
    probe = registry.find_measure("mem.lat.loaded")[0]
    assert probe.host_mode == "pair_rtt_ns" and "pair_rtt_ns" in dict(probe.host_params)
