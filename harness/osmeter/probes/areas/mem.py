"""Memory: load latency against working-set size (the cache levels found on
the curve), bandwidth, page faults, and a fault's cost against a copy."""
from __future__ import annotations

import numpy as np

from osmeter.core.stats import run_figure
from osmeter.probes.memlevels import detect_levels, fit_levels
from osmeter.probes.model import Area, Derived, Probe, measure
from osmeter.results.writer import line_by_process

AREA = Area("mem", "Memory", 20)


def cache_sizes(machine: dict) -> list[tuple[str, int]]:
    """The data and unified caches the machine description names (from
    sysfs at the start of the run), fastest first: [("l1", bytes), ...]."""
    out = {}
    for c in machine.get("caches") or []:
        if c.get("type") in ("Data", "Unified") and c.get("level") and c.get("size"):
            out.setdefault(f"l{c['level']}", c["size"])
    return sorted(out.items(), key=lambda kv: kv[1])


def mem_levels(lines: list[dict], machine: dict) -> list[dict]:
    """mem.lat.l1 .. and mem.lat.dram from mem.lat.curve. Where the machine
    names its caches, the curve is cut into one piece per cache it reaches,
    plus the piece beyond (memory, when the curve passed the last cache), so
    the ids follow the hardware; params.clear says whether each piece is a
    plateau of its own (25% steps, a doubling of size). Without cache
    sizes, the most plateaus that pass those tests, at most three caches."""
    curve = next((ln for ln in lines if ln["id"] == "mem.lat.curve"), None)
    if curve is None or "series" not in curve:
        return []
    s = curve["series"]
    x = np.asarray(s["x"], dtype=float)
    rows = np.asarray(s["samples"], dtype=float)
    dist = s.get("disturbed") or [[] for _ in s["x"]]
    clean = [np.delete(r, d) if len(d) < r.size else r for r, d in zip(rows, dist)]
    med = np.array([np.median(r) for r in clean])
    caches = cache_sizes(machine)
    reached = [c for c in caches if c[1] < x[-1]]
    if caches and len(x) >= 2 * (len(reached) + 1):
        levels, clear = fit_levels(x, med, len(reached) + 1)
        names = [n for n, _ in reached] + (["dram"] if len(reached) == len(caches) else [caches[len(reached)][0]])
    else:
        levels, clear = detect_levels(x, med, max_levels=4), None
        names = [f"l{k + 1}" for k in range(len(levels) - 1)] + ["dram" if len(levels) > 1 else "l1"]
    if len(levels) < len(names):  # a curve too short for every piece: the last keeps its name
        names = names[:len(levels) - 1] + names[-1:]
    sysfs = dict(caches)
    out = []
    for name, lv in zip(names, levels):
        params = {
            "size": lv.at,
            "level_start": lv.start,
            "level_end": lv.end,
            "plateau_end": lv.plateau_end,
            "sysfs_size": sysfs.get(name),
            "levels_found": names,
            "clear": clear,
            "from": "mem.lat.curve",
            "method": "piecewise-constant fit of log latency; plateau cores",
            "chain": curve.get("params", {}).get("chain"),
        }
        out.append({"id": f"mem.lat.{name}", "unit": curve["unit"], "tsc_hz": curve.get("tsc_hz"),
                    "timer": curve.get("timer"), "params": params,
                    "overhead_subtracted": curve.get("overhead_subtracted", 0),
                    "samples": rows[lv.index].tolist(), "disturbed": list(dist[lv.index])})
    thp = next((ln for ln in lines if ln["id"] == "mem.lat.dram.thp"), None)
    dram = next((o for o in out if o["id"] == "mem.lat.dram"), None)
    if thp is not None and dram is not None and thp["samples"]:
        small = float(np.median(dram["samples"]))
        huge = float(np.median(thp["samples"]))
        thp["params"]["dram_4k_median"] = small
        thp["params"]["tlb_share"] = (small - huge) / small if small > 0 else None
    return out


def fault_vs_copy(lines: dict[str, dict]) -> dict:
    """mem.pagefault.major_vs_copy: (fault ns per byte) / (memcpy ns per byte),
    per fault sample, each keeping its process; both inputs' figures are their
    run's (the median of its processes' medians), every process in."""
    fault, copy = lines["mem.pagefault.major"], lines["mem.bw.copy"]
    page = fault["params"].get("page_size", 4096)
    ns, proc, per_process = line_by_process(fault)
    mbs = run_figure(line_by_process(copy)[2])
    if not ns.size or not mbs > 0:
        raise ValueError("no kept sample of mem.pagefault.major or mem.bw.copy")
    copy_ns_per_byte = 1e3 / mbs  # MB/s -> ns/B
    return {
        "id": "mem.pagefault.major_vs_copy",
        "unit": "x",
        "params": {
            "fault_ns_per_byte": run_figure(per_process) / page,
            "copy_ns_per_byte": copy_ns_per_byte,
            "page_size": page,
            "from": ["mem.pagefault.major", "mem.bw.copy"],
        },
        "overhead_subtracted": 0,
        "samples": (ns / page / copy_ns_per_byte).tolist(),
        "process": proc.tolist(),
        "disturbed": [],
    }


# what the two out-of-cache bandwidth probes (one thread, one per CPU) share
OUT_OF_CACHE_METHOD = (
    "Out-of-cache buffers are 8 x the last cache, kept within 256 MiB and "
    "1 GiB but never below 2 x the cache (a VM may be shown its host's whole L3; a stream "
    "twice the cache misses on every pass), or the most that fits in half the available "
    "memory (params.size_rule says which), and are faulted in before timing. A window's "
    "passes go over the next 16 MiB stretches of the buffer, round and round (a stretch was "
    "last touched a whole buffer ago); memcpy is called on the whole buffer, since glibc "
    "picks its method by length. "
)
# what the three bandwidth probes (one binary, mem_bw: out of cache, .mt, in cache) share
BW_METHOD = (
    "Read sums the buffer with the widest loads the CPU offers (AVX2, else SSE2) into four "
    "accumulators; write stores the same width, and its .nt twin uses non-temporal "
    "stores that bypass the caches; copy is glibc's memcpy, and copy.loop a plain vector "
    "load/store loop. A sample is one window of at least 5 ms of whole passes over the buffer. "
    "MB/s is a million bytes per second of buffer read, written or copied; a copy counts each "
    "byte once, as memcpy benchmarks (perf bench mem) do."
)

PROBES = (
    Probe(
        name="mem.lat", binary="mem_lat",
        measures=(
            measure("mem.lat.curve", "ns", "load-to-use latency against working-set size (series)", curve=True),
            measure("mem.lat.l1", "ns", "L1 data cache latency, found on the curve"),
            measure("mem.lat.l2", "ns", "L2 cache latency, found on the curve"),
            measure("mem.lat.l3", "ns", "L3 cache latency, found on the curve"),
            measure("mem.lat.dram", "ns", "memory latency at the largest size (4 KiB pages)"),
            measure("mem.lat.dram.thp", "ns", "memory latency at the largest size on transparent huge pages"),
            measure("mem.lat.stride", "ns", "the largest size walked in address order, 128-byte stride "
                                      "(lmbench's main mem)"),
        ),
        methodology=(
            "Dependent loads: each element of the working set holds the address of the next, so "
            "no load can start before the previous one returns, and 16 of them are unrolled per "
            "loop turn. Elements are 64 B (one per cache line) linked in one random cycle "
            "(Sattolo's algorithm), so no prefetcher can follow the chain. Sizes run from 1 KiB "
            "to at least four times the last cache, or less when memory is short "
            "({param:max=512 MiB by default|bytes} in this run), several per doubling; each size is walked once in full before its samples "
            "(a size over twice the last cache over twice the cache's worth of elements, "
            "at most {param:warmup_elements_max} elements in this run: the caches then hold nothing its build left), "
            "and a sample is one window of at least 65536 loads (or the whole set), timer "
            "overhead subtracted, per load. The curve uses 4 KiB pages (MADV_NOHUGEPAGE). The "
            "harness cuts the curve into plateaus of constant log latency (least squares, "
            "dynamic programming), one per cache level the machine names in sysfs that the curve "
            "passes, plus memory, and reports each level's median latency and the sizes where its "
            "plateau begins and ends, beside the size sysfs gives. DRAM is read at the largest "
            "size; the same size on a MADV_HUGEPAGE buffer (mem.lat.dram.thp) shows how much of "
            "it is TLB misses. A cache shared with other tenants (a VM's L3) can end before its "
            "sysfs size. mem.lat.stride walks the largest size once more in address order, "
            "{arg:--stride-walk=128} bytes a step (lmbench's lat_mem_rd stride walk, its \"main mem\"): "
            "the prefetchers can follow it, so it is what streaming code sees, not a miss's latency. "
            "That walk does 100 loads a loop turn, as lmbench's: a prefetcher that follows each load "
            "instruction's stride runs further ahead when each instruction strides 100 elements than 16."
        ),
        presets={
            "quick": ("--max", "auto", "--steps", "2", "--samples", "4"),
            "full": ("--steps", "4", "--samples", "15"),
        },
        expect={"quick": 4, "full": 27},
        timeout=600.0,
        derive=mem_levels,
        smoke=("--max", "4M", "--steps", "1"),
    ),
    Probe(
        name="mem.bw", binary="mem_bw",
        measures=(
            measure("mem.bw.read", "MB/s", "read bandwidth from memory (wide loads, one thread)"),
            measure("mem.bw.write", "MB/s", "write bandwidth to memory (one thread)"),
            measure("mem.bw.write.nt", "MB/s", "write bandwidth with non-temporal stores (one thread)"),
            measure("mem.bw.copy", "MB/s", "memcpy bandwidth, memory to memory (one thread)"),
            measure("mem.bw.copy.loop", "MB/s", "copy bandwidth of a plain vector load/store loop (one thread)"),
        ),
        shared_method=BW_METHOD,
        methodology=(
            OUT_OF_CACHE_METHOD
            + "A run measures these in {param:processes=several} processes interleaved with the other "
            "probes, each with buffers of its own: one process's figures agree closely from one window "
            "to the next, while the next process's may sit a few percent away."
        ),
        presets={"quick": ("--buffers", "memory", "--no-mt", "--samples", "8"),
                 "full": ("--buffers", "memory", "--no-mt", "--samples", "40")},
        expect={"quick": 4.5, "full": 8},
        timeout=600.0,
        smoke=("--size", "16M"),
        # a process spends about a second making its buffers, and its figures vary more between
        # processes than inside one (docs/notes/2026-11-27-one-process-probes.md)
        processes=4,
    ),
    Probe(
        name="mem.bw.mt", binary="mem_bw",
        measures=(
            measure("mem.bw.read.mt", "MB/s", "read bandwidth, one thread per online CPU, summed"),
            measure("mem.bw.write.mt", "MB/s", "write bandwidth, one thread per online CPU, summed"),
            measure("mem.bw.copy.mt", "MB/s", "memcpy bandwidth, one thread per online CPU, summed"),
        ),
        shared_method=BW_METHOD,
        methodology=(
            OUT_OF_CACHE_METHOD
            + "One pinned thread per online CPU on its own buffer, started and stopped together by a "
            "barrier; the figure adds up their bytes. params.thread_mbs gives "
            "each thread's own rate over its passes (median of the samples), in the order of "
            "params.thread_cpus, so a sum short of the threads' count times one thread's shows whether one "
            "thread ran slow (its CPU shared, by the host too) or all of them (the memory). "
            "params.pair_rtt_ns is the least round trip of a cache line between the first thread's CPU "
            "and each other's (their median), measured once the buffers are made and again after the "
            "samples (pair_rtt_ns_after): on a VM it says whether the host put the vCPUs on one die, which "
            "shares one path to memory, or on several. One process a run: its buffers, every CPU's, "
            "outweigh its samples."
        ),
        presets={"quick": ("--buffers", "mt", "--samples", "3"),
                 "full": ("--buffers", "mt", "--samples", "15")},
        expect={"quick": 2, "full": 5},
        timeout=600.0,
        smoke=("--size", "16M"),
        processes=1,  # its buffers (two per online CPU) outweigh its samples
        host_params=(("pair_rtt_ns", "least cache-line round trip between the .mt threads' CPUs: a few times "
                                     "longer when the host put the vCPUs on different dies, each with its own "
                                     "path to memory (the .mt sums rise with it)"),),
        host_mode="pair_rtt_ns",
    ),
    Probe(
        name="mem.bw.cache", binary="mem_bw",
        measures=(
            measure("mem.bw.read.cache", "MB/s", "read bandwidth within the L1 data cache"),
            measure("mem.bw.write.cache", "MB/s", "write bandwidth within the L1 data cache"),
            measure("mem.bw.copy.cache", "MB/s", "memcpy bandwidth within the L1 data cache"),
        ),
        shared_method=BW_METHOD,
        methodology=(
            "The buffer is half the L1 data cache (a copy's two buffers a quarter each), passed "
            "over whole, round and round. A run measures these in {param:processes=several} processes "
            "interleaved with the other probes (they allocate no large buffer): a window of a few "
            "milliseconds is one moment of the host, a process another."
        ),
        presets={"quick": ("--buffers", "cache", "--samples", "30"),
                 "full": ("--buffers", "cache", "--samples", "75")},
    ),
    Probe(
        name="mem.pagefault", binary="mem_pagefault",
        measures=(
            measure("mem.pagefault.minor", "ns", "first write to an anonymous 4 KiB page, per page", ktimer="fault"),
            measure("mem.pagefault.major", "ns", "first read of an evicted page of a mapped file, per fault",
              ktimer="fault"),
        ),
        methodology=(
            "Minor faults: a fresh anonymous mapping (4 KiB pages) is written once per page; the "
            "kernel allocates, zeroes and maps each page; a sample is one mapping of "
            "{arg:--pages=4096} pages, per page. Major faults: a {arg:--file-size=64M|bytes} file "
            "in {arg:--dir=/var/tmp} is written and synced, its pages "
            "are evicted with posix_fadvise(DONTNEED) (drop_caches when root and needed) and "
            "mincore confirms none is resident; it is mapped with MADV_RANDOM so read-ahead is "
            "off, and pages are touched in random order, one fault per sample; a sample that did "
            "not raise ru_majflt by exactly one is dropped. After each fault the next page of the "
            "order is read with an O_DIRECT pread, timed alone: the device's own read of a page at "
            "that moment (params.device_read_ns, their median), which every major fault contains; "
            "the fault less that read is the kernel's fault path. The probe reports the file system "
            "and the device, and refuses tmpfs, where no fault is ever major. A run takes "
            "{param:processes=several} processes, each with a file of its own."
        ),
        host_params=(("device_read_ns", "the device's own read of a page (O_DIRECT) beside the faults: a major "
                                        "fault contains one, so the host's storage moves both together"),),
        presets={"quick": ("--samples", "60"), "full": ("--samples", "300")},
        # each process writes and evicts a file of its own, and where its pages lie is the process's: in A/A
        # runs the major fault's figure varied more between processes than inside one, so a run takes more,
        # shorter processes (a process's setup is a fraction of a second)
        processes=6,
        expect={"quick": 1, "full": 3},
        timeout=300.0,
        smoke=("--file-size", "8M"),
    ),
)

PROBES = PROBES + (
    Probe(
        name="mem.vm", binary="mem_vm",
        measures=(
            measure("mem.mmap", "ns", "mmap of a file, a write every 16 KiB of its first tenth, munmap"),
            measure("mem.protfault", "ns", "write to a read-only page: fault, SIGSEGV, handler, sigreturn"),
            measure("mem.protfault.less_catch", "ns", "protection fault less the signal catch (lmbench's prot fault)"),
        ),
        methodology=(
            "mem.mmap is lmbench's lat_mmap: a {arg:--size=64M|bytes} file is mapped shared and "
            "writable, a byte is written every 16 KiB of its first tenth (minor faults on "
            "cached pages), and it is unmapped; per mapping (params.faults_per_mapping: the faults one mapping "
            "takes, fewer than its pages where the file sits in the cache in large folios, which set the "
            "figure's level). mem.protfault is lmbench's lat_sig prot: "
            "a present anonymous page made read-only is written, the kernel raises SIGSEGV, the "
            "handler counts and returns, the write runs again and faults again; once it has counted "
            "the window's faults the handler leaves the write by siglongjmp, so a window holds its "
            "faults and one jump (the page stays read-only for the whole run); per fault. "
            "mem.protfault.less_catch is what lmbench prints, the fault less its own signal catch measured "
            "in the same process: each fault window less, window by window, kill(getpid(), SIGUSR1) to a "
            "handler installed with the fault handler's flags (SA_SIGINFO|SA_NODEFER: the catch subtracted "
            "is a delivery of the fault's kind) less kill(getpid(), 0) (params.catch_ns: the catch's median); "
            "mem.protfault is the whole cost a program pays. Batched; the four kinds of window in turn "
            "(mmap, send, deliver, fault). A run takes {param:processes=several} processes, interleaved "
            "with the other probes, each with its own file, mapping and page."
        ),
        presets={"quick": ("--samples", "24"), "full": ("--samples", "120")},
        expect={"quick": 1, "full": 2},
        # a process costs a tenth of a second, and the protection fault's figure varies more from one
        # process to the next than inside one (docs/notes/2026-11-27-one-process-probes.md)
        processes=6,
        smoke=("--size", "4M"),
    ),
    Probe(
        name="mem.par", binary="mem_par",
        measures=(measure("mem.par", "loads", "memory-level parallelism: loads served at once, per working set "
                                        "(series; the figure is the largest set's)", curve=True),),
        methodology=(
            "lmbench's par_mem question: how many loads the memory system serves at once. The set is "
            "one random cycle of 64-byte elements (as mem.lat's); K pointers (1 to 16) start at "
            "evenly spaced addresses, so at random places far apart along the cycle, and are walked "
            "together: each pointer's loads stay dependent, the K loads of a step are independent. "
            "The figure at a size is the time per load of one chain over the time per load of K "
            "chains, the largest over K: 1 if loads were served one at a time, more as the core keeps "
            "misses outstanding, until its fill buffers or the level's bandwidth stop it. Sizes: half "
            "of each cache level sysfs names up to 32 MiB, and {arg:--mem-size=256M|bytes} for memory; "
            "a sample is one window per K, the K in turn."
        ),
        presets={"quick": ("--samples", "3"), "full": ("--samples", "9", "--mem-size", "1G")},
        expect={"quick": 3, "full": 12},
        timeout=600.0,
        processes=1,
        smoke=("--sizes", "16K,1M"),
    ),
    Probe(
        name="mem.lat.loaded", binary="mem_loaded",
        measures=(measure("mem.lat.loaded", "ns", "memory latency on one CPU while the other CPUs read memory at "
                                            "rising rates (series over load levels)", curve=True),),
        methodology=(
            "The loaded-latency curve of Intel's Memory Latency Checker: a dependent random chain over "
            "{arg:--size=256M|bytes} (as mem.lat's) is walked on the probe's CPU while one thread on "
            "every other online CPU sums its own {arg:--load-size=256M|bytes} buffer in order, 64 KiB "
            "at a time, counting an empty loop of a level's length after each piece (a guest's pause "
            "instruction could exit to the hypervisor); level 0 has the load threads parked. "
            "Per level, a sample is one window of at least 65536 loads, per load; the bytes the "
            "load threads read over the level's time are its bandwidth (params.bandwidth_mbs, a "
            "million bytes per second). The series' x is the level; the figure is the heaviest. "
            "Before the levels and after them, with the load threads parked or gone, the least "
            "round trip of a cache line between the chain's CPU and each load thread's is taken "
            "(params.pair_rtt_ns and pair_rtt_ns_after, their median): on a guest it shows whether "
            "the host put the vCPUs on one die, sharing its path to memory, or on two, where the "
            "load leaves the chain's latency as it was."
        ),
        host_params=(("pair_rtt_ns", "least cache-line round trip between the chain's CPU and the load threads': "
                                     "a few times longer when the host put the vCPUs on different dies, and then "
                                     "the load does not reach the chain's path to memory (the figure falls to "
                                     "the unloaded latency)"),),
        host_mode="pair_rtt_ns",
        presets={"quick": ("--samples", "3"), "full": ("--samples", "15", "--delays",
                                                       "65536,16384,4096,1024,256,64,0")},
        expect={"quick": 3, "full": 8},
        timeout=600.0,
        processes=1,
        smoke=("--size", "8M", "--load-size", "1M", "--delays", "1000,0"),
    ),
)

DERIVED = (
    Derived(
        measure("mem.pagefault.major_vs_copy", "x", "cost per byte of a major fault over that of memcpy"),
        ("mem.pagefault.major", "mem.bw.copy"),
        fault_vs_copy,
        "Each major-fault sample divided by the page size gives ns per byte brought in; memcpy's "
        "median bandwidth gives ns per byte copied (1000 / MB/s); their ratio says how many "
        "times dearer it is to fault a byte in from the device than to copy it in memory.",
    ),
)


# ---- figures (the report's and the notebook's; shared plot kinds in plots.py) -------------

def memory_latency(doc: dict, est=None):
    """Memory latency against the working-set size: the median load time
    with its quartiles, the cache sizes sysfs states (dotted), the level
    ends found on the curve (dashed) and the estimates (dash-dotted)."""
    from osmeter.present.plots import bytes_label, measured, plt, predicted, ticker
    m = measured(doc)
    c = m.get("mem.lat.curve")
    if not c or "series" not in c:
        return None
    s = c["series"]
    fig, ax = plt.subplots()
    x = np.array(s["x"])
    ax.plot(x, s["median"], "o-", ms=3, label="measured (median)")
    ax.fill_between(x, s["p25"], s["p75"], alpha=0.25, label="quartiles")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    for cache in doc.get("machine", {}).get("caches", []):
        if cache.get("type") in ("Data", "Unified") and cache.get("size"):
            ax.axvline(cache["size"], color="grey", ls=":", lw=1)
            ax.text(cache["size"], ax.get_ylim()[1], f" L{cache['level']} (sysfs)", rotation=90, va="top", fontsize=7)
    for lv in ("l1", "l2", "l3"):
        d = m.get(f"mem.lat.{lv}")
        if d:
            ax.axvline(d["params"]["level_end"], color="C3", ls="--", lw=1)
        e = predicted(est, f"mem.lat.{lv}")
        if e:
            ax.axhline(e, color="C2", ls="-.", lw=0.8)
    if predicted(est, "mem.lat.dram"):
        ax.axhline(predicted(est, "mem.lat.dram"), color="C2", ls="-.", lw=0.8, label="estimates")
    ax.plot([], [], "C3--", lw=1, label="detected level ends")
    ax.set_xlabel("working set (bytes, log scale)")
    ax.set_ylabel("latency per load (ns, log scale)")
    ax.set_title("Memory latency against working-set size")
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: bytes_label(v)))
    ax.legend(fontsize=7, loc="upper left")
    return fig


def bandwidths(doc: dict, est=None):
    """Memory bandwidth of each access pattern (median and standard
    deviation; .mt on every CPU at once, .cache within the cache), with the
    estimates as diamonds."""
    from osmeter.present.plots import TEXT_WIDTH_IN, lit, measured, plt, predicted
    m = measured(doc)
    ids = [i for i in ("mem.bw.read", "mem.bw.write", "mem.bw.write.nt", "mem.bw.copy", "mem.bw.copy.loop",
                       "mem.bw.read.mt", "mem.bw.write.mt", "mem.bw.copy.mt", "mem.bw.read.cache",
                       "mem.bw.write.cache", "mem.bw.copy.cache") if i in m]
    if not ids:
        return None
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 3.4))
    y = np.arange(len(ids))
    ax.barh(y, [m[i]["median"] for i in ids], xerr=[m[i].get("std") or 0 for i in ids], label="measured")
    first = True
    for k, i in enumerate(ids):
        e = predicted(est, i)
        if e:
            ax.plot(e, k, "D", color="C2", ms=4, label="estimate" if first else None)
            first = False
    ax.set_yticks(y, [lit(i.removeprefix("mem.bw.")) for i in ids])
    ax.set_xscale("log")
    ax.set_xlabel("bandwidth (MB/s, millions of bytes a second; log scale)")
    ax.set_title("Memory bandwidth")
    ax.legend(fontsize=7)
    return fig


def mem_parallelism(doc: dict, est=None):
    """Memory-level parallelism (lmbench's par_mem) against the working
    set, and latency on one CPU against the bandwidth the others draw."""
    from osmeter.present.plots import TEXT_WIDTH_IN, bytes_label, measured, plt
    c = measured(doc)
    par, loaded = c.get("mem.par"), c.get("mem.lat.loaded")
    if not (par and "series" in par) and not (loaded and "series" in loaded):
        return None
    fig, axes = plt.subplots(1, 2, figsize=(TEXT_WIDTH_IN, 3.0))
    if par and "series" in par:
        axes[0].plot(par["series"]["x"], par["series"]["median"], "o-")
        axes[0].set_xscale("log", base=2)
        axes[0].set_xticks(par["series"]["x"], [bytes_label(v) for v in par["series"]["x"]])
        axes[0].set_xlabel("working set")
        axes[0].set_ylabel("loads served at once")
        axes[0].set_title("Memory-level parallelism")
    if loaded and "series" in loaded:
        bw = np.array(loaded.get("params", {}).get("bandwidth_mbs") or [], dtype=float)
        y = np.array(loaded["series"]["median"], dtype=float)
        if bw.size == y.size:
            axes[1].plot(bw / 1e3, y, "o-")
            axes[1].set_xlabel("bandwidth drawn by the other CPUs (GB/s)")
            axes[1].set_ylabel("latency (ns)")
            axes[1].set_title("Loaded latency")
    return fig


FIGURES = (memory_latency, bandwidths, mem_parallelism)
