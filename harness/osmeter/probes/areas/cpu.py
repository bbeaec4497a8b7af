"""CPU and operating-system services: the timer, loops, calls, system
calls, process and thread creation, context switches, signals, and the
cost of osmeter's own stop-watch library."""
from __future__ import annotations

import numpy as np

from osmeter.probes.model import Area, Probe, measure

AREA = Area("cpu", "CPU and operating-system services", 10)

PROBES = (
    Probe(
        name="cpu.timer", binary="cpu_timer",
        measures=(
            measure("cpu.timer_overhead", "ns", "empty fenced timing window (CPUID;RDTSC ... RDTSCP;CPUID)"),
            measure("cpu.timer.rdtsc", "ns", "one RDTSC instruction"),
            measure("cpu.timer.rdtscp", "ns", "one RDTSCP instruction"),
            measure("cpu.timer.cpuid", "ns", "one CPUID instruction (a VM exit in a guest)"),
            measure("cpu.timer.clock_gettime", "ns", "clock_gettime(CLOCK_MONOTONIC) through the vDSO"),
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
        name="cpu.loop", binary="cpu_loop",
        measures=(measure("cpu.loop", "ns", "one turn of an empty counted loop; series over loop counts 0..N"),),
        methodology=(
            "An empty counted loop (a compiler barrier keeps it a loop at -O2) runs N turns "
            "in one timed window, N chosen so the timer's cost is under 1% of the window; "
            "the timer's overhead is subtracted and the rest divided by N. One sample is one "
            "window; statistics are across windows. The series times whole windows of 0, 1, "
            "2, 4 ... {arg:--series-max=4096} turns with nothing subtracted: its intercept is the timer's cost "
            "and its slope the loop's."
        ),
        presets={"quick": ("--samples", "100", "--series-max", "1024"), "full": ("--samples", "500")},
    ),
    Probe(
        name="cpu.call", binary="cpu_call",
        measures=tuple(
            measure(f"cpu.call.args{k}", "ns", f"procedure call with {k} integer argument{'s' if k != 1 else ''}")
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
        name="cpu.syscall", binary="cpu_syscall",
        measures=(
            measure("cpu.syscall.getppid", "ns", "getppid system call (raw syscall instruction)",
              ktimer="syscall:getppid"),
            measure("cpu.syscall.gettid", "ns", "gettid system call (raw syscall instruction)", ktimer="syscall:gettid"),
            measure("cpu.syscall.getppid.libc", "ns", "getppid() through libc (lmbench's null call)",
              ktimer="syscall:getppid"),
            measure("cpu.syscall.getcwd", "ns", "getcwd() into a buffer", ktimer="syscall:getcwd"),
            measure("cpu.syscall.read", "ns", "read() of 1 byte from /dev/zero", ktimer="syscall:read"),
            measure("cpu.syscall.write", "ns", "write() of 1 byte to /dev/null", ktimer="syscall:write"),
            measure("cpu.syscall.null_io", "ns", "mean of the 1-byte read and write (lmbench's null I/O)"),
        ),
        methodology=(
            "getppid and gettid are entered with the syscall instruction itself, not a libc "
            "wrapper, so every call really enters the kernel (nothing is cached in user space). "
            "cpu.syscall.getppid.libc calls libc's getppid(), as lmbench's lat_syscall null does: "
            "what a C program pays, wrapper included. getcwd copies the working directory's path "
            "out of the kernel. Null I/O is lmbench's: a 1-byte read from /dev/zero and a 1-byte "
            "write to /dev/null, each timed, and their mean window pair by window pair. "
            "A sample is a batch of calls in one window, timer overhead subtracted, divided by "
            "the batch size; the windows of all six calls are taken in turn, so drift hits them "
            "alike. The figures include the mitigations the kernel applies on entry "
            "and exit (see conditions.mitigations)."
        ),
        presets={"quick": ("--samples", "100"), "full": ("--samples", "500")},
    ),
    Probe(
        name="cpu.select", binary="cpu_select",
        measures=(
            measure("cpu.select.tcp", "ns", "select() over 100 descriptors of a loopback TCP socket"),
            measure("cpu.select.file", "ns", "select() over 100 descriptors of a file"),
        ),
        methodology=(
            "As lmbench's lat_select: {arg:--fds=100} dup()s of one connected loopback TCP socket (or of "
            "one open file) are polled for writing by select() with a zero timeout, which walks every "
            "descriptor and asks its poll method, and returns at once. nfds is the highest descriptor "
            "plus one, so every descriptor of the set is examined (lmbench passes the count, which "
            "leaves out the few descriptors numbered above it). Batched; the two kinds run one after the "
            "other, each set on the lowest free descriptors, as lmbench's (a set numbered above another "
            "costs more: select scans and copies every descriptor number below nfds)."
        ),
        presets={"quick": ("--samples", "60"), "full": ("--samples", "300")},
    ),
    Probe(
        name="cpu.proc", binary="cpu_proc",
        measures=(
            measure("cpu.proc_create", "ns", "fork() until the first of parent or child runs"),
            measure("cpu.proc_create_wait", "ns", "fork(), child _exit(0), parent waitpid()"),
        ),
        methodology=(
            "One fork per sample. For cpu.proc_create the parent opens a window and forks; "
            "parent and child each take an end stamp as soon as fork returns in them, the child "
            "sends its stamp back through a pipe, and the earlier of the two ends the sample "
            "(the pipe method of the CSE 221 reports). cpu.proc_create_wait times fork, the "
            "child's immediate _exit and the parent's waitpid. Both processes run on the pinned "
            "CPU; the TSC is shared by all CPUs (constant_tsc), and a sample whose stamps come "
            "from different CPUs is counted as disturbed and dropped. fork copies the parent's page "
            "tables, so its cost grows with the parent's resident memory: params record the parent's "
            "RSS and mapping count, and cpu.proc_create_wait carries a series over parents grown by "
            "touched anonymous memory ({arg:--parent-mb=0|mib} in this run). lmbench's lat_proc "
            "fork forks from its benchmark process and its child calls exit(), not _exit(); pick the "
            "series point of its parent's size to compare."
        ),
        presets={"quick": ("--samples", "120", "--parent-mb", "0,16,128"),
                 "full": ("--samples", "1000", "--parent-mb", "0,1,16,64,256")},
        expect={"quick": 1.5, "full": 6},
    ),
    Probe(
        name="cpu.exec", binary="cpu_exec",
        measures=(
            measure("cpu.proc_exec", "ns", "fork(), execve() of a small program, waitpid() (lmbench's exec proc)"),
            measure("cpu.proc_sh", "ns", "fork(), /bin/sh -c a small program, waitpid() (lmbench's sh proc)"),
        ),
        methodology=(
            "One program start per sample, as lmbench's lat_proc exec and shell: the parent forks; the "
            "child closes its standard output and execve()s a small dynamically linked program that "
            "writes a line (to the closed output) and exits, or runs /bin/sh -c with that program; "
            "the parent waits. The program is the probe's own binary in its --hello mode, or "
            "--program PATH. The two kinds alternate; everything runs on the probe's CPU. The cost "
            "is dominated by the dynamic loader mapping the program's libraries, so a program "
            "linked against more libraries costs more."
        ),
        presets={"quick": ("--samples", "30"), "full": ("--samples", "150")},
        expect={"quick": 0.4, "full": 1},
    ),
    Probe(
        name="cpu.thread", binary="cpu_thread",
        measures=(
            measure("cpu.thread_create", "ns", "pthread_create() until the first of creator or new thread runs"),
            measure("cpu.thread_create_join", "ns", "pthread_create(), thread returns, pthread_join()"),
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
        name="cpu.ctx", binary="cpu_ctx",
        measures=(
            measure("cpu.ctx.proc", "ns", "context switch between two processes on one CPU"),
            measure("cpu.ctx.thread", "ns", "context switch between two threads of a process on one CPU"),
            measure("cpu.ctx.pipe_overhead", "ns", "1-byte pipe write plus read with no switch (subtracted)"),
        ),
        methodology=(
            "Two processes (or two threads) pinned to the same CPU pass a byte back and forth "
            "through two pipes, blocking in read, so each round trip is two switches, two writes "
            "and two reads. The cost of a write and a read on a pipe without a switch is measured "
            "in the same run and subtracted (lmbench's lat_ctx method): per switch = (round trip "
            "- 2 x (write + read)) / 2. A sample is 1000 round trips after 16 untimed ones; process "
            "and thread samples alternate so the machine's drift affects both alike (each window "
            "has a fixed cost at its edges, which windows of 50 round trips did not amortize). Waiting is by blocking, never "
            "by spinning, so SCHED_FIFO cannot livelock the pair."
        ),
        presets={"quick": ("--samples", "40"), "full": ("--samples", "200")},
        expect={"quick": 1.5, "full": 7},
    ),
    Probe(
        name="cpu.signal", binary="cpu_signal",
        measures=(
            measure("cpu.signal.install", "ns", "sigaction() installing a handler"),
            measure("cpu.signal.install.old", "ns", "sigaction() installing a handler and reading back the old one "
                                              "(lmbench's sig inst)"),
            measure("cpu.signal.deliver", "ns", "kill() to oneself, handler runs, sigreturn"),
            measure("cpu.signal.send", "ns", "kill(self, 0): the sending system call without a signal"),
            measure("cpu.signal.catch", "ns", "deliver minus send: what catching adds (lmbench's signal handler overhead)"),
        ),
        methodology=(
            "cpu.signal.install times sigaction calls alternating between two handlers, in "
            "batches; cpu.signal.install.old, in windows alternating with them, also has the old action "
            "copied back, as lmbench's lat_sig install asks. cpu.signal.deliver times kill(getpid(), SIGUSR1) with a handler installed: "
            "the kill system call, delivery on its way back to user space, the handler and "
            "sigreturn, per signal, in batches; the probe checks that every signal was caught. "
            "cpu.signal.send times kill(getpid(), 0), which checks permission and sends nothing, in "
            "windows alternating with deliver's; cpu.signal.catch is deliver minus send, window by "
            "window. lmbench's lat_sig catch reports that difference (it subtracts kill(me, 0)), so "
            "cpu.signal.catch is the figure to set beside lmbench's, and cpu.signal.deliver the whole cost."
        ),
        presets={"quick": ("--samples", "100"), "full": ("--samples", "500")},
    ),
    Probe(
        name="cpu.ctx.matrix", binary="cpu_ctxring",
        measures=(measure("cpu.ctx.matrix", "ns", "context switch in a ring of N processes each touching its own "
                                            "working set, per (processes, KiB) (series)", curve=True),),
        methodology=(
            "lmbench's lat_ctx -s, every cell at once: N processes ({arg:--procs=2,8,16|list}) pinned to one "
            "CPU pass a token round a ring of N pipes; a process that receives it sums its own working "
            "set ({arg:--sizes=0,16,64|list} KiB: every 8-byte word in order, eight sums at once) and "
            "passes it on. A trip round the ring is N switches, N pipe writes and reads and N sums. "
            "What a hop costs without a switch, one process writing and reading its own pipe and summing "
            "its own cached set, is timed in windows alternating with the ring's and subtracted: per "
            "switch = trip / N - hop. What is left is the switch plus what the set costs because the "
            "other processes' sets evicted it, which grows once all N sets no longer fit a cache level. "
            "All rings live at once and a sample takes one window of each cell in turn, {arg:--switches=2000} "
            "switches a window; the series' x is the set per process in bytes and params.processes the "
            "ring's size, point by point."
        ),
        presets={"quick": ("--samples", "5"), "full": ("--samples", "21", "--procs", "2,4,8,16",
                                                       "--sizes", "0,4,16,32,64")},
        expect={"quick": 1.5, "full": 6},
        processes=1,
        smoke=("--procs", "2,3", "--sizes", "0,4", "--switches", "200"),
    ),
    Probe(
        name="cpu.c2c", binary="cpu_c2c",
        measures=(measure("cpu.c2c", "ns", "core-to-core transfer of a cache line, per ordered pair of CPUs "
                                     "(params.matrix_ns)"),),
        methodology=(
            "Two threads pinned to CPUs A and B bounce one cache line by compare-and-swap: A "
            "increments an even value to odd, B waits for it and increments it to even, and so on; "
            "half a round trip is one transfer. A window is 2000 round trips; the figure of a pair "
            "is the median of its windows. The line is the start of a fresh page per pair, first "
            "touched by A, so that its memory sits where A is (placing it elsewhere skews whole "
            "rows); nothing else shares the line. Both threads spin at SCHED_OTHER. Every ordered "
            "pair of online CPUs is measured, up to --c2c-pairs (64 in the quick preset); beyond "
            "that the pairs are sampled in whole rounds of a seeded shuffle of offsets (every CPU i "
            "to i+d), so each CPU is a source and a destination equally often. The samples are the "
            "pairs' figures; params.matrix_ns holds them by source row and destination column."
        ),
        presets={"quick": ("--samples", "7"), "full": ("--samples", "21", "--c2c-pairs", "512")},
        smoke=("--iterations", "200"),
    ),
    Probe(
        name="cpu.ops", binary="cpu_ops",
        measures=(
            *(measure(f"cpu.ops.int.{o}", "ns", f"latency of a 32-bit integer {o}")
              for o in ("bit", "add", "mul", "div", "mod")),
            *(measure(f"cpu.ops.{t}.{o}", "ns", f"latency of a {t} {o}")
              for t in ("float", "double") for o in ("add", "mul", "div")),
            measure("cpu.clock", "MHz", "the core's clock: timer rate over timer ticks per dependent add"),
        ),
        methodology=(
            "lmbench's lat_ops, each operation one dependent chain: every operation takes the previous "
            "result, so the time per operation is its latency, not its throughput. An empty asm after "
            "each pins the value in a register of the operation's kind and hides it from the compiler, "
            "so nothing is folded, vectorised or strength-reduced; 100 operations a loop turn. The "
            "operands are lmbench's: division alternates between s / 36 and s / (s / 36); mod is "
            "x % s then x | s, the | (timed as cpu.ops.int.bit) subtracted; floating multiplication "
            "alternates a factor and its inverse so the value stays normal. Batched, windows of all "
            "eleven in turn. cpu.clock is the timer's rate over the timer ticks one add of the integer "
            "chain takes: an add is one core cycle, so this is the core's clock whatever the TSC's "
            "fixed rate, the only way to turn ns into core cycles on a core that boosts "
            "(params.timer_mhz and params.cpuinfo_mhz beside it)."
        ),
        presets={"quick": ("--samples", "30"), "full": ("--samples", "150")},
    ),
    Probe(
        name="cpu.vtimer", binary="cpu_vtimer",
        measures=(
            measure("cpu.vtimer.phys.start", "ns", "vt_start of a physical stop-watch timer"),
            measure("cpu.vtimer.phys.stop", "ns", "vt_stop of a physical stop-watch timer"),
            measure("cpu.vtimer.virt.start", "ns", "vt_start of a virtual (on-CPU time) timer"),
            measure("cpu.vtimer.virt.stop", "ns", "vt_stop of a virtual timer"),
            measure("cpu.vtimer.virt.read", "ns", "vt_read of a running virtual timer"),
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
)


# ---- figures (the report's and the notebook's; shared plot kinds in plots.py) -------------

def loop_and_calls(doc: dict, est=None):
    """Left: a timed window against the loop iterations it holds (the slope
    is one iteration). Right: the cost of a procedure call against its
    integer arguments, with the estimates."""
    from osmeter.present.plots import TEXT_WIDTH_IN, measured, plt, predicted
    m = measured(doc)
    loop = m.get("cpu.loop")
    calls = [m.get(f"cpu.call.args{k}") for k in range(8)]
    if not loop and not any(calls):
        return None
    fig, (a, b) = plt.subplots(1, 2, figsize=(TEXT_WIDTH_IN, 3.2))
    if loop and "series" in loop:
        s = loop["series"]
        a.plot(s["x"], s["median"], "o-", ms=3)
        a.set_xscale("symlog", base=2)
        a.set_xlabel("loop iterations in the window")
        a.set_ylabel("window time (ns)")
        a.set_title(f"Loop: {loop['median']:.3g} ns per iteration")
    ks = [k for k in range(8) if calls[k]]
    if ks:
        b.errorbar(ks, [calls[k]["median"] for k in ks], yerr=[calls[k].get("std") or 0 for k in ks], fmt="o-", ms=3,
                   label="measured")
        ests = [predicted(est, f"cpu.call.args{k}") for k in ks]
        if any(e is not None for e in ests):
            b.plot(ks, ests, "s--", ms=3, color="C2", label="estimate")
        b.set_xlabel("integer arguments")
        b.set_ylabel("cost per call (ns)")
        b.set_title("Procedure call")
        b.set_ylim(bottom=0)
        b.legend(fontsize=7)
    return fig


def fork_parent_size(doc: dict, est=None):
    """Process creation (fork, exit, wait) against the memory the parent
    has touched: fork copies the page tables."""
    from osmeter.present.plots import TEXT_WIDTH_IN, measured, plt
    m = measured(doc).get("cpu.proc_create_wait")
    if not m or "series" not in m:
        return None
    s = m["series"]
    x = np.array(s["x"], dtype=float)
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 3.2))
    ax.errorbar(x, np.array(s["median"]) / 1e3, yerr=[(np.array(s["median"]) - np.array(s["p25"])) / 1e3,
                                                      (np.array(s["p75"]) - np.array(s["median"])) / 1e3],
                fmt="o-", capsize=3, label="median (quartiles)")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_yscale("log")
    ax.set_xlabel("memory the parent touched before forking (MiB)")
    ax.set_ylabel("fork + exit + wait (us)")
    ax.set_title("Process creation against the parent's size")
    return fig


def c2c_heatmap(doc: dict, est=None):
    """Core to core: the time to move a cache line from one CPU (row) to
    another (column), one cell per ordered pair."""
    from osmeter.present.plots import TEXT_WIDTH_IN, measured, plt
    c = measured(doc).get("cpu.c2c")
    if not c or not c.get("params", {}).get("matrix_ns"):
        return None
    cpus = c["params"]["cpus"]
    mat = np.array([[np.nan if v is None else v for v in row] for row in c["params"]["matrix_ns"]], dtype=float)
    n = len(cpus)
    fig, ax = plt.subplots(figsize=(min(TEXT_WIDTH_IN, 3.2 + 0.3 * n), min(6.5, 2.4 + 0.28 * n)))
    # the scale starts at 0: a few percent between pairs is not a contrast
    im = ax.imshow(mat, cmap="viridis", interpolation="nearest", vmin=0, vmax=float(np.nanmax(mat)) * 1.05)
    ax.grid(False)
    step = max(1, n // 16)
    ax.set_xticks(range(0, n, step), [str(cpus[i]) for i in range(0, n, step)])
    ax.set_yticks(range(0, n, step), [str(cpus[i]) for i in range(0, n, step)])
    ax.set_xlabel("destination CPU (answers)")
    ax.set_ylabel("source CPU (line first touched here)")
    if n <= 12:
        for a in range(n):
            for b in range(n):
                if np.isfinite(mat[a, b]):
                    ax.text(b, a, f"{mat[a, b]:.0f}", ha="center", va="center", color="w", fontsize=8)
    measured = c["params"].get("pairs_measured")
    total = c["params"].get("pairs_total")
    ax.set_title("Core-to-core transfer, ns" + (f" ({measured} of {total} pairs)" if measured != total else ""))
    fig.colorbar(im, ax=ax, label="ns (half a round trip)")
    return fig


def ctx_matrix(doc: dict, est=None):
    """Context switches in a ring of N processes against the working set
    each touches, one line per N (lmbench's lat_ctx -s): the cost left
    after the cached set's own sum is subtracted grows once all N sets no
    longer fit a cache."""
    from osmeter.present.plots import TEXT_WIDTH_IN, measured, plt
    m = measured(doc).get("cpu.ctx.matrix")
    if not m or "series" not in m:
        return None
    s, procs = m["series"], m.get("params", {}).get("processes") or []
    fig, ax = plt.subplots(figsize=(TEXT_WIDTH_IN, 3.2))
    for n in sorted(set(procs)):
        pts = [(x / 1024, y / 1e3) for p, x, y in zip(procs, s["x"], s["median"]) if p == n]
        ax.plot([a for a, _ in pts], [b for _, b in pts], "o-", label=f"{n} processes")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("working set per process (KiB)")
    ax.set_ylabel("per switch (us)")
    ax.set_title("Context switch against working set")
    ax.legend()
    return fig


FIGURES = (loop_and_calls, fork_parent_size, c2c_heatmap, ctx_matrix)
