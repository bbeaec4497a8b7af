"""The probe registry: every probe, the measurement ids it prints, their units,
what they mean, how they are measured, and how each preset runs them.

This is the one place that knows about probes. The runner, `osmeter list`,
the summary and (later) the report all read it.
"""
from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Callable

from . import derive


@dataclass(frozen=True)
class Measure:
    id: str
    unit: str  # the unit results.json reports (cycle counts become ns)
    description: str


@dataclass(frozen=True)
class Probe:
    name: str  # short name, e.g. "cpu.call"
    binary: str  # file name in build/bin
    area: str  # cpu, mem, disk, net, fs
    measures: tuple[Measure, ...]
    methodology: str
    # preset -> extra arguments; a probe absent from a preset does not run in it
    presets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    timeout: float = 120.0  # seconds, per run of the binary
    # more JSON lines computed from the probe's own lines (derive.py)
    derive: Callable[[list[dict]], list[dict]] | None = None
    # turns the binary's stdout into probe lines when it does not print them itself
    parse: Callable[[str], list[dict]] | None = None
    needs: str | None = None  # runs only when given: "peer" (--peer/--remote), "fs_remote" (--fs-remote)
    external: bool = False    # a system command found on PATH (ping), not a build/bin probe;
                              # skipped, with the reason recorded, where it is missing

    def ids(self) -> list[str]:
        return [m.id for m in self.measures]


def _m(id: str, unit: str, description: str) -> Measure:
    return Measure(id, unit, description)


PROBES: tuple[Probe, ...] = (
    Probe(
        name="cpu.timer",
        binary="cpu_timer",
        area="cpu",
        measures=(
            _m("cpu.timer_overhead", "ns", "empty fenced timing window (CPUID;RDTSC ... RDTSCP;CPUID)"),
            _m("cpu.timer.rdtsc", "ns", "one RDTSC instruction"),
            _m("cpu.timer.rdtscp", "ns", "one RDTSCP instruction"),
            _m("cpu.timer.cpuid", "ns", "one CPUID instruction (a VM exit in a guest)"),
            _m("cpu.timer.clock_gettime", "ns", "clock_gettime(CLOCK_MONOTONIC) through the vDSO"),
        ),
        methodology=(
            "Every probe times a window opened by CPUID;RDTSC and closed by RDTSCP;CPUID "
            "(Intel's fencing method): CPUID serialises, so work before the window cannot "
            "leak in and work after it cannot be hoisted in, and RDTSCP waits for the timed "
            "code to retire. The cost of an empty window is measured 2000 times at the start "
            "of every probe; its median is subtracted from each window, and its distribution "
            "is cpu.timer_overhead. The TSC's rate is calibrated against CLOCK_MONOTONIC_RAW "
            "over three 20 ms intervals. Single instructions (RDTSC, RDTSCP, CPUID) and the "
            "vDSO clock are timed in batches long enough that the window's cost is under 1%."
        ),
        presets={"quick": ("--samples", "100"), "full": ("--samples", "500")},
    ),
    Probe(
        name="cpu.loop",
        binary="cpu_loop",
        area="cpu",
        measures=(_m("cpu.loop", "ns", "one turn of an empty counted loop; series over loop counts 0..N"),),
        methodology=(
            "An empty counted loop (a compiler barrier keeps it a loop at -O2) runs N turns "
            "in one timed window, N chosen so the timer's cost is under 1% of the window; "
            "the timer's overhead is subtracted and the rest divided by N. One sample is one "
            "window; statistics are across windows. The series times whole windows of 0, 1, "
            "2, 4 ... 4096 turns with nothing subtracted: its intercept is the timer's cost "
            "and its slope the loop's."
        ),
        presets={"quick": ("--samples", "100", "--series-max", "1024"), "full": ("--samples", "500")},
    ),
    Probe(
        name="cpu.call",
        binary="cpu_call",
        area="cpu",
        measures=tuple(
            _m(f"cpu.call.args{k}", "ns", f"procedure call with {k} integer argument{'s' if k != 1 else ''}")
            for k in range(8)
        ),
        methodology=(
            "A noinline (GCC: noipa) function taking 0 to 7 longs, each consumed by an empty "
            "asm so none can be dropped, is called 8 times per loop turn with values the "
            "compiler cannot see. A sample is one window of many turns; the timer's overhead "
            "per window and the loop's own cost per turn (measured in the same run) are "
            "subtracted and the rest divided by the number of calls. A modern core overlaps "
            "calls with one another, so this is the throughput cost of a call, not its latency."
        ),
        presets={"quick": ("--samples", "60"), "full": ("--samples", "300")},
    ),
    Probe(
        name="cpu.syscall",
        binary="cpu_syscall",
        area="cpu",
        measures=(
            _m("cpu.syscall.getppid", "ns", "getppid system call (raw syscall instruction)"),
            _m("cpu.syscall.gettid", "ns", "gettid system call (raw syscall instruction)"),
        ),
        methodology=(
            "getppid and gettid are entered with the syscall instruction itself, not a libc "
            "wrapper, so every call really enters the kernel (nothing is cached in user space). "
            "A sample is a batch of calls in one window, timer overhead subtracted, divided by "
            "the batch size. The figure includes the mitigations the kernel applies on entry "
            "and exit (see conditions.mitigations)."
        ),
        presets={"quick": ("--samples", "100"), "full": ("--samples", "500")},
    ),
    Probe(
        name="cpu.proc",
        binary="cpu_proc",
        area="cpu",
        measures=(
            _m("cpu.proc_create", "ns", "fork() until the first of parent or child runs"),
            _m("cpu.proc_create_wait", "ns", "fork(), child _exit(0), parent waitpid()"),
        ),
        methodology=(
            "One fork per sample. For cpu.proc_create the parent opens a window and forks; "
            "parent and child each take an end stamp as soon as fork returns in them, the child "
            "sends its stamp back through a pipe, and the earlier of the two ends the sample "
            "(the pipe method of the CSE 221 reports). cpu.proc_create_wait times fork, the "
            "child's immediate _exit and the parent's waitpid. Both processes run on the pinned "
            "CPU; the TSC is shared by all CPUs (constant_tsc), and a sample whose stamps come "
            "from different CPUs is counted as disturbed and dropped."
        ),
        presets={"quick": ("--samples", "200"), "full": ("--samples", "1000")},
    ),
    Probe(
        name="cpu.thread",
        binary="cpu_thread",
        area="cpu",
        measures=(
            _m("cpu.thread_create", "ns", "pthread_create() until the first of creator or new thread runs"),
            _m("cpu.thread_create_join", "ns", "pthread_create(), thread returns, pthread_join()"),
        ),
        methodology=(
            "One creation per sample, as for processes: creator and new thread each take an end "
            "stamp at once (the thread writes its stamp to shared memory) and the earlier one "
            "ends the sample. cpu.thread_create_join times creation, an empty thread body and "
            "the join. glibc reuses the stacks of joined threads, as a real program's would be."
        ),
        presets={"quick": ("--samples", "300"), "full": ("--samples", "1500")},
    ),
    Probe(
        name="cpu.ctx",
        binary="cpu_ctx",
        area="cpu",
        measures=(
            _m("cpu.ctx.proc", "ns", "context switch between two processes on one CPU"),
            _m("cpu.ctx.thread", "ns", "context switch between two threads of a process on one CPU"),
            _m("cpu.ctx.pipe_overhead", "ns", "1-byte pipe write plus read with no switch (subtracted)"),
        ),
        methodology=(
            "Two processes (or two threads) pinned to the same CPU pass a byte back and forth "
            "through two pipes, blocking in read, so each round trip is two switches, two writes "
            "and two reads. The cost of a write and a read on a pipe without a switch is measured "
            "in the same run and subtracted (lmbench's lat_ctx method): per switch = (round trip "
            "- 2 x (write + read)) / 2. A sample is 50 round trips; process and thread samples "
            "alternate so the machine's drift affects both alike. Waiting is by blocking, never "
            "by spinning, so SCHED_FIFO cannot livelock the pair."
        ),
        presets={"quick": ("--samples", "200"), "full": ("--samples", "1000")},
    ),
    Probe(
        name="cpu.signal",
        binary="cpu_signal",
        area="cpu",
        measures=(
            _m("cpu.signal.install", "ns", "sigaction() installing a handler"),
            _m("cpu.signal.deliver", "ns", "kill() to oneself, handler runs, sigreturn"),
        ),
        methodology=(
            "cpu.signal.install times sigaction calls alternating between two handlers, in "
            "batches. cpu.signal.deliver times kill(getpid(), SIGUSR1) with a handler installed: "
            "the kill system call, delivery on its way back to user space, the handler and "
            "sigreturn, per signal, in batches; the probe checks that every signal was caught."
        ),
        presets={"quick": ("--samples", "100"), "full": ("--samples", "500")},
    ),
    Probe(
        name="cpu.vtimer",
        binary="cpu_vtimer",
        area="cpu",
        measures=(
            _m("timer.phys.start", "ns", "vt_start of a physical stop-watch timer"),
            _m("timer.phys.stop", "ns", "vt_stop of a physical stop-watch timer"),
            _m("timer.virt.start", "ns", "vt_start of a virtual (on-CPU time) timer"),
            _m("timer.virt.stop", "ns", "vt_stop of a virtual timer"),
            _m("timer.virt.read", "ns", "vt_read of a running virtual timer"),
        ),
        methodology=(
            "osmeter's stop-watch library (bench/vtimer, after the Virtual Timers paper): physical timers "
            "read the TSC with LFENCE/RDTSCP; virtual timers read the thread's on-CPU time from the perf_event "
            "mmap page where the kernel allows it (cap_user_time), else CLOCK_THREAD_CPUTIME_ID, a system call "
            "(params.virtual_mode says which). A sample times one call on each of 256 private timers, so each "
            "call does its real work, per call, as the paper's Table I."
        ),
        presets={"quick": ("--samples", "50"), "full": ("--samples", "300")},
    ),
    Probe(
        name="mem.lat",
        binary="mem_lat",
        area="mem",
        measures=(
            _m("mem.lat.curve", "ns", "load-to-use latency against working-set size (series)"),
            _m("mem.lat.l1", "ns", "L1 data cache latency, found on the curve"),
            _m("mem.lat.l2", "ns", "L2 cache latency, found on the curve"),
            _m("mem.lat.l3", "ns", "L3 cache latency, found on the curve"),
            _m("mem.lat.dram", "ns", "memory latency at the largest size (4 KiB pages)"),
            _m("mem.lat.dram.thp", "ns", "memory latency at the largest size on transparent huge pages"),
        ),
        methodology=(
            "Dependent loads: each element of the working set holds the address of the next, so "
            "no load can start before the previous one returns, and 16 of them are unrolled per "
            "loop turn. Elements are 64 B (one per cache line) linked in one random cycle "
            "(Sattolo's algorithm), so no prefetcher can follow the chain. Sizes run from 1 KiB "
            "to at least four times the last cache (512 MiB by default, fewer when memory is "
            "short), several per doubling; each size is walked once in full before its samples, "
            "and a sample is one window of at least 65536 loads (or the whole set), timer "
            "overhead subtracted, per load. The curve uses 4 KiB pages (MADV_NOHUGEPAGE). The "
            "harness cuts the curve into plateaus of constant log latency (least squares, "
            "dynamic programming), keeps the most plateaus that differ by 25% and each span a "
            "doubling of size, and reports each level's median latency and the sizes where its "
            "plateau begins and ends, beside the sizes sysfs states. DRAM is read at the largest "
            "size; the same size on a MADV_HUGEPAGE buffer (mem.lat.dram.thp) shows how much of "
            "it is TLB misses. On a VM the L3 is shared with other guests: its plateau can end "
            "well before the size sysfs gives."
        ),
        presets={
            "quick": ("--max", "auto", "--steps", "2", "--samples", "7"),
            "full": ("--steps", "4", "--samples", "15"),
        },
        timeout=600.0,
        derive=derive.mem_levels,
    ),
    Probe(
        name="mem.bw",
        binary="mem_bw",
        area="mem",
        measures=(
            _m("mem.bw.read", "MB/s", "read bandwidth from memory (wide loads, one thread)"),
            _m("mem.bw.write", "MB/s", "write bandwidth to memory (one thread)"),
            _m("mem.bw.write.nt", "MB/s", "write bandwidth with non-temporal stores (one thread)"),
            _m("mem.bw.copy", "MB/s", "memcpy bandwidth, memory to memory (one thread)"),
            _m("mem.bw.copy.loop", "MB/s", "copy bandwidth of a plain vector load/store loop (one thread)"),
            _m("mem.bw.read.cache", "MB/s", "read bandwidth within the L1 data cache"),
            _m("mem.bw.write.cache", "MB/s", "write bandwidth within the L1 data cache"),
            _m("mem.bw.copy.cache", "MB/s", "memcpy bandwidth within the L1 data cache"),
            _m("mem.bw.read.mt", "MB/s", "read bandwidth, one thread per online CPU, summed"),
            _m("mem.bw.write.mt", "MB/s", "write bandwidth, one thread per online CPU, summed"),
            _m("mem.bw.copy.mt", "MB/s", "memcpy bandwidth, one thread per online CPU, summed"),
        ),
        methodology=(
            "Read sums the buffer with the widest loads the CPU offers (AVX2, else SSE2) into four "
            "accumulators; write stores the same width, and its .nt twin uses non-temporal "
            "stores that bypass the caches; copy is glibc's memcpy, and copy.loop a plain vector "
            "load/store loop. Out-of-cache buffers are max(8 x the last cache, 256 MiB) and "
            "faulted in before timing; the .cache figures use half the L1 data cache. A sample is "
            "one window of whole passes lasting at least 5 ms. MB/s is 10^6 bytes per second of "
            "buffer read, written or copied; a copy counts each byte once, as memcpy benchmarks "
            "(perf bench mem) do. The .mt figures run one pinned thread per online CPU on its own "
            "buffer, started and stopped together by a barrier, and add up their bytes."
        ),
        presets={"quick": ("--samples", "5"), "full": ("--samples", "15")},
        timeout=600.0,
    ),
    Probe(
        name="mem.pagefault",
        binary="mem_pagefault",
        area="mem",
        measures=(
            _m("mem.pagefault.minor", "ns", "first write to an anonymous 4 KiB page, per page"),
            _m("mem.pagefault.major", "ns", "first read of an evicted page of a mapped file, per fault"),
        ),
        methodology=(
            "Minor faults: a fresh anonymous mapping (4 KiB pages) is written once per page; the "
            "kernel allocates, zeroes and maps each page; a sample is one mapping of 4096 pages, "
            "per page. Major faults: a 64 MiB file in /var/tmp is written and synced, its pages "
            "are evicted with posix_fadvise(DONTNEED) (drop_caches when root and needed) and "
            "mincore confirms none is resident; it is mapped with MADV_RANDOM so read-ahead is "
            "off, and pages are touched in random order, one fault per sample; a sample that did "
            "not raise ru_majflt by exactly one is dropped. The probe reports the file system "
            "and the device, and refuses tmpfs, where no fault is ever major."
        ),
        presets={"quick": ("--samples", "30"), "full": ("--samples", "200")},
        timeout=300.0,
    ),
)


DISK_METHOD = (
    "iogen drives the target below the page cache (O_DIRECT) with io_uring: one ring per worker "
    "sized to its queue depth, the file and the request buffers registered, every free slot "
    "submitted in one io_uring_enter that also waits for the first completion. Each request "
    "picks an access-specification line by its % of accesses, then read or write and random or "
    "sequential by that line's own percentages (Iometer's model); sequential requests share the "
    "worker's position, advanced atomically. Latency is submission to reaping, kept in a "
    "log-linear histogram (1.6% resolution). After a ramp-up that is not recorded, the run is "
    "cut into report intervals: each interval is one trial, so the figures' spread is across "
    "intervals. The target is a file in the results directory (filled with data, never sparse), "
    "or --disk-target. The generator's CPU time, system calls and context switches per I/O, "
    "and a system prober's view of /proc (CPU, interrupts, the device's utilization and queue) "
    "are kept in the parameters and in raw/."
)

DISK_RUNS = {  # workload: (quick qd or None, full qd)
    "4k-random-read": (32, 32),
    "4k-random-write": (None, 32),
    "1m-seq-read": (4, 4),
    "1m-seq-write": (None, 4),
    "database": (16, 16),
    "file-server": (None, 16),
    "web-server": (None, 16),
    "workstation": (None, 16),
}


def _disk_probe(workload: str, quick_qd: int | None, full_qd: int) -> Probe:
    def args(qd, secs):
        return ("--target", "{disk_target}", "--size", "{disk_size}", "--workload", workload,
                "--qd", str(qd), "--time", str(secs), "--ramp", "0.5", "--interval", str(secs / 10))
    presets = {"full": args(full_qd, 10)}
    if quick_qd:
        presets["quick"] = args(quick_qd, 2)
    return Probe(
        name=f"disk.{workload}",
        binary="iogen",
        area="disk",
        measures=(
            _m(f"disk.{workload}.iops", "IOPS", f"{workload}: I/Os per second"),
            _m(f"disk.{workload}.mbps", "MB/s", f"{workload}: 10^6 bytes per second"),
            _m(f"disk.{workload}.lat_mean", "ns", f"{workload}: mean latency"),
            _m(f"disk.{workload}.lat_p99", "ns", f"{workload}: 99th percentile latency"),
        ),
        methodology=DISK_METHOD,
        presets=presets,
        timeout=300.0,
        parse=lambda out, w=workload: derive.iogen_lines(out, w, sweep=False),
    )


PROBES = PROBES + tuple(_disk_probe(w, q, f) for w, (q, f) in DISK_RUNS.items()) + (
    Probe(
        name="disk.qd_sweep",
        binary="iogen",
        area="disk",
        measures=(_m("disk.4k-random-read.qd_sweep", "IOPS", "4k random read IOPS against queue depth (series)"),),
        methodology=DISK_METHOD + " The sweep runs the same workload once per queue depth, 1, 2, 4 ... N.",
        presets={
            "quick": ("--target", "{disk_target}", "--size", "{disk_size}", "--workload", "4k-random-read",
                      "--cycle-qd", "1:32:x2", "--time", "1", "--ramp", "0.3", "--interval", "0.1"),
            "full": ("--target", "{disk_target}", "--size", "{disk_size}", "--workload", "4k-random-read",
                     "--cycle-qd", "1:128:x2", "--time", "5", "--ramp", "0.5", "--interval", "0.5"),
        },
        timeout=600.0,
        parse=lambda out: derive.iogen_lines(out, "4k-random-read", sweep=True),
    ),
)


NET_METHOD = {
    "rtt": (
        "A message (1 byte by default) goes to netpeer's echo and back on one TCP connection with "
        "TCP_NODELAY, or as a UDP datagram; a sample is 100 round trips in one timed window, per round "
        "trip. For the loopback figures the probe starts its own netpeer on 127.0.0.1, which inherits "
        "the pinned CPU and scheduling, so both ends share one CPU and a round trip includes two "
        "context switches. ping's ICMP echo is recorded beside them when ping is installed."
    ),
    "bw": (
        "One TCP connection per sample carries large writes (128 KiB) for a fixed time. Sending, the "
        "sample ends only when the peer reports how many bytes it received, so data still in socket "
        "buffers is not counted; receiving, bytes read are divided by the time from the first byte "
        "to the last. MB/s is 10^6 bytes per second of payload (TCP/IP and link headers not counted)."
    ),
    "conn": (
        "connect() on a fresh socket (made before the window) until it returns established; then "
        "teardown: shutdown(SHUT_WR) sends our FIN, netpeer sees end of stream and closes its side, "
        "and the window ends when its FIN arrives (read returns 0). One connection per sample."
    ),
}


def _net_probes(where: str) -> tuple[Probe, ...]:
    remote = where == "remote"
    peer = ("--peer", "{peer}") if remote else ()
    return (
        Probe(
            name=f"net.rtt.{where}", binary="net_rtt", area="net",
            measures=(
                _m(f"net.rtt.tcp.{where}", "ns", f"TCP round trip of a 1-byte message ({where})"),
                _m(f"net.rtt.udp.{where}", "ns", f"UDP round trip of a 1-byte datagram ({where})"),
            ),
            methodology=NET_METHOD["rtt"],
            presets={"quick": peer + ("--samples", "30"), "full": peer + ("--samples", "200")},
            timeout=120.0, needs="peer" if remote else None,
        ),
        Probe(
            name=f"net.bw.{where}", binary="net_bw", area="net",
            measures=(
                _m(f"net.bw.tcp.{where}", "MB/s", f"TCP bulk bandwidth, this host sending ({where})"),
                _m(f"net.bw.tcp.recv.{where}", "MB/s", f"TCP bulk bandwidth, this host receiving ({where})"),
            ),
            methodology=NET_METHOD["bw"],
            presets={"quick": peer + ("--samples", "3", "--seconds", "0.5"),
                     "full": peer + ("--samples", "5", "--seconds", "2")},
            timeout=300.0, needs="peer" if remote else None,
        ),
        Probe(
            name=f"net.conn.{where}", binary="net_conn", area="net",
            measures=(
                _m(f"net.connect.{where}", "ns", f"TCP connect until established ({where})"),
                _m(f"net.close.{where}", "ns", f"TCP teardown until the peer has closed too ({where})"),
            ),
            methodology=NET_METHOD["conn"],
            presets={"quick": peer + ("--samples", "100"), "full": peer + ("--samples", "500")},
            timeout=120.0, needs="peer" if remote else None,
        ),
        Probe(
            name=f"net.icmp.{where}", binary="ping", area="net",
            measures=(_m(f"net.rtt.icmp.{where}", "ns", f"ICMP echo round trip, by ping ({where})"),),
            methodology="ping -c N -i 0.01 (0.2 when not root) -n; each reply's time is one sample.",
            presets={"quick": ("-n", "-c", "30", "-i", "{ping_interval}", "{peer_host}"),
                     "full": ("-n", "-c", "200", "-i", "{ping_interval}", "{peer_host}")},
            timeout=120.0, needs="peer" if remote else None, external=True,
            parse=lambda out, w=where: derive.ping_lines(out, w),
        ),
    )


PROBES = PROBES + _net_probes("loopback") + _net_probes("remote")

FS_READ_METHOD = (
    "A file of real data (made and synced first) is read in 4 KiB blocks, one whole pass per sample, "
    "timed and divided by its blocks: in order (fs.read.seq) and every block once in random order "
    "(fs.read.rand), the two taking turns. The page cache is bypassed with O_DIRECT; where the file "
    "system refuses O_DIRECT (FUSE, network file systems) the file's pages are dropped with "
    "posix_fadvise(DONTNEED) before each pass, mincore confirms it, and read-ahead stays on for the "
    "sequential pass and off for the random one. A series over file sizes; the figure is the largest size's."
)


def _fs_read(remote: bool) -> Probe:
    sfx = ".remote" if remote else ""
    where = ("--dir", "{fs_remote}", "--remote") if remote else ("--dir", "{fs_dir}")
    return Probe(
        name=f"fs.read{sfx}", binary="fs_read", area="fs",
        measures=(
            _m(f"fs.read.seq{sfx}", "ns", "time per 4 KiB block reading a file in order, below the cache (series)"),
            _m(f"fs.read.rand{sfx}", "ns", "time per 4 KiB block reading a file at random, below the cache (series)"),
        ),
        methodology=FS_READ_METHOD + (" The directory is the one named with --fs-remote." if remote else ""),
        presets={"quick": where + ("--sizes", "4M,16M,64M", "--samples", "2"),
                 "full": where + ("--sizes", "4M,16M,64M,256M,1G", "--samples", "3")},
        timeout=900.0, needs="fs_remote" if remote else None,
    )


PROBES = PROBES + (
    Probe(
        name="fs.cache", binary="fs_cache", area="fs",
        measures=(_m("fs.cache_size", "bytes", "size of the file cache: largest file whose second read is from memory"),),
        methodology=(
            "Files of doubling size are read twice through the page cache in 1 MiB reads, first with their "
            "pages evicted, then again. While a file fits the cache the second read runs at memory speed; "
            "past it, reading in order evicts the pages the next read needs first, so the second read goes to "
            "the device. A second read within 3x the fastest one counts as from memory; the first size that "
            "is not ends the doubling, and bisection narrows the bracket. mincore after the first read checks "
            "how much stayed resident. The search is bounded by twice the memory, half the free disk and a "
            "time limit; stopped by a bound, the figure is a lower bound (params.lower_bound). The quick preset "
            "stops at 1 GiB on purpose. Ground truth: under a 256 MiB memory cgroup it finds 248 MiB."
        ),
        presets={"quick": ("--dir", "{fs_dir}", "--max", "1G", "--time-limit", "20"),
                 "full": ("--dir", "{fs_dir}", "--time-limit", "300")},
        timeout=900.0,
    ),
    _fs_read(False),
    _fs_read(True),
    Probe(
        name="fs.contention", binary="fs_contention", area="fs",
        measures=(_m("fs.contention", "ns", "time per 4 KiB block as 1, 2, 4 ... processes read their own files (series)"),),
        methodology=(
            "1, 2, 4 ... N processes each read their own 32 MiB file in order, in 4 KiB blocks below the cache, "
            "all released together; a sample is one run, the mean over the processes of each one's time per "
            "block. The readers may use every CPU: the contended resource is the device."
        ),
        presets={"quick": ("--dir", "{fs_dir}", "--max-procs", "4", "--size", "16M", "--samples", "2"),
                 "full": ("--dir", "{fs_dir}", "--max-procs", "8", "--samples", "3")},
        timeout=900.0,
    ),
    Probe(
        name="fs.meta", binary="fs_meta", area="fs",
        measures=tuple(m for k in (0, 1, 4, 10) for m in (
            _m(f"fs.create.{k}k", "files/s", f"{k} KiB files created per second"),
            _m(f"fs.delete.{k}k", "files/s", f"{k} KiB files deleted per second"))),
        methodology=(
            "As lmbench's lat_fs: 1000 files of 0, 1, 4 or 10 KiB are created (open O_CREAT|O_EXCL, write, "
            "close) in a fresh directory, then deleted; a sample is one round; nothing is synced. On ext4 a new "
            "directory may land in a block group whose inode tables were never read, and then every create "
            "waits for a metadata read: on this project's VMs the same probe gave 1,200 to 90,000 creates/s "
            "depending on the directory. Compare runs in the same place (--fs-dir)."
        ),
        presets={"quick": ("--dir", "{fs_dir}", "--samples", "3"), "full": ("--dir", "{fs_dir}", "--samples", "10")},
        timeout=300.0,
    ),
)


@dataclass(frozen=True)
class Derived:
    """A figure computed from other measurements, possibly of several probes."""

    measure: Measure
    inputs: tuple[str, ...]
    fn: Callable[[dict[str, dict]], dict]  # probe lines by id -> one line
    methodology: str


DERIVED: tuple[Derived, ...] = (
    Derived(
        _m("mem.pagefault.major_vs_copy", "x", "cost per byte of a major fault over that of memcpy"),
        ("mem.pagefault.major", "mem.bw.copy"),
        derive.fault_vs_copy,
        "Each major-fault sample divided by the page size gives ns per byte brought in; memcpy's "
        "median bandwidth gives ns per byte copied (1000 / MB/s); their ratio says how many "
        "times dearer it is to fault a byte in from the device than to copy it in memory.",
    ),
)

PRESETS = ("quick", "full")


def all_measures() -> list[tuple[Probe | Derived, Measure]]:
    return [(p, m) for p in PROBES for m in p.measures] + [(d, d.measure) for d in DERIVED]


def find_measure(mid: str) -> tuple[Probe, Measure] | None:
    for p, m in all_measures():
        if m.id == mid:
            return p, m
    return None


def matches(pattern: str, mid: str) -> bool:
    """`cpu.*` and other globs; a plain word matches the id or any id under it."""
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(mid, pattern)
    return mid == pattern or mid.startswith(pattern + ".")


class SelectionError(ValueError):
    pass


NEEDS_HINT = {"peer": "--peer HOST:PORT or --remote USER@HOST", "fs_remote": "--fs-remote PATH"}


def select(patterns: list[str] | None, preset: str, have: frozenset[str] = frozenset(),
           probes: tuple[Probe, ...] | None = None,
           derived: tuple[Derived, ...] | None = None) -> list[tuple[Probe, list[str]]]:
    """Probes to run, each with the ids wanted from it, in registry order.
    A probe that only feeds a selected derived figure runs with no id wanted.
    The .remote probes run only when a peer is given."""
    if preset not in PRESETS:
        raise SelectionError(f"unknown preset '{preset}' (choose from {', '.join(PRESETS)})")
    pool = PROBES if probes is None else probes
    derived = select_derived(patterns, DERIVED if derived is None else derived)
    inputs = {i for d in derived for i in d.inputs}
    chosen = []
    used = {pat for pat in patterns or () for d in derived if matches(pat, d.measure.id)}
    for p in pool:
        if preset not in p.presets or (p.needs and p.needs not in have):
            continue
        if patterns is None:
            chosen.append((p, p.ids()))
            continue
        ids = [i for i in p.ids() if any(matches(pat, i) for pat in patterns)]
        used.update(pat for pat in patterns for i in p.ids() if matches(pat, i))
        if ids or inputs & set(p.ids()):
            chosen.append((p, ids))
    if patterns is not None:
        unknown = [pat for pat in patterns if pat not in used]
        for p in pool:
            if p.needs and p.needs not in have and any(matches(pat, m.id) for pat in unknown for m in p.measures):
                raise SelectionError(f"{', '.join(repr(u) for u in unknown)}: these ids need {NEEDS_HINT[p.needs]}")
        if unknown:
            raise SelectionError(
                f"no measurement id matches {', '.join(repr(u) for u in unknown)} "
                f"in preset '{preset}' (see ./osmeter list)"
            )
    return chosen


def select_derived(patterns: list[str] | None, derived: tuple[Derived, ...] | None = None) -> list[Derived]:
    derived = DERIVED if derived is None else derived
    if patterns is None:
        return list(derived)
    return [d for d in derived if any(matches(pat, d.measure.id) for pat in patterns)]
