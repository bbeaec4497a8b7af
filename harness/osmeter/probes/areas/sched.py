"""Scheduler and timer latency: how long a woken thread waits before it
runs, and how late a periodic timer fires (the tails kernel tuners watch)."""
from __future__ import annotations

from osmeter.probes.model import Area, Probe, measure

AREA = Area("sched", "Scheduler and timer latency", 15)

PROBES = (
    Probe(
        name="sched.wakeup", binary="sched_wakeup",
        measures=(
            measure("sched.wakeup.same", "ns", "futex wake-up of a thread on the waker's CPU, SCHED_OTHER"),
            measure("sched.wakeup.cross", "ns", "futex wake-up of a thread on another CPU, SCHED_OTHER"),
            measure("sched.wakeup.same.fifo", "ns", "futex wake-up on the waker's CPU, both threads SCHED_FIFO"),
            measure("sched.wakeup.cross.fifo", "ns", "futex wake-up on another CPU, both threads SCHED_FIFO"),
            measure("sched.wakeup.same.pipe", "ns", "wake-up of a thread blocked in read() on a pipe, same CPU"),
            measure("sched.wakeup.cross.pipe", "ns", "wake-up of a thread blocked in read() on a pipe, another CPU"),
            measure("sched.wakeup.cross.loaded", "ns",
              "futex wake-up on another CPU that runs a CPU-bound SCHED_OTHER thread (schbench's question)"),
        ),
        methodology=(
            "A wakee thread blocks (FUTEX_WAIT, or read() on a pipe); the waker takes a time stamp and "
            "wakes it (FUTEX_WAKE, or a 1-byte write); the wakee takes a stamp as soon as its wait "
            "returns. One wake-up is one sample: the difference of the two stamps, so the percentiles "
            "are those of single wake-ups. The stamps are RDTSCP reads with no serializing CPUID in "
            "the path (in a guest CPUID is a VM exit). Between wake-ups the waker sleeps {arg:--gap-us=200} us and "
            "checks that the wakee is blocked again, so its CPU may go idle as in a real program. "
            "For .cross the two stamps come from two CPUs' TSCs: the ids are measured only where the "
            "TSC is invariant, and the probe first bounds how far the two TSCs disagree with cache-line "
            "round trips (the least round trip brackets the other CPU's reading; params.tsc_skew_bound, "
            "in ticks) and subtracts the midpoint offset; without an invariant TSC, with one CPU, or "
            "with a bound over 5 us, .cross is refused with the reason. .fifo runs both threads at "
            "SCHED_FIFO 50 (refused where that is not permitted); the other ids run both at "
            "SCHED_OTHER. .loaded adds a busy SCHED_OTHER thread on the wakee's CPU, so the wakee "
            "must preempt it. The wakee's CPU's entries into its idle states (cpuidle's usage counters, "
            "read before and after each id's wake-ups) give params.wakee_cpu_halts_per_wakeup, and "
            "POLL's apart, wakee_cpu_polls_per_wakeup: in a guest a halt is a VM exit, and a wake-up "
            "that finds its CPU halted waits for the host to resume that vCPU."
        ),
        presets={"quick": ("--samples", "1000"), "full": ("--samples", "12000")},
        expect={"quick": 2.4, "full": 27},
        # the spread between processes outweighs the spread of one process's wake-ups (the host's
        # resume of a halted vCPU drifts from one second to the next): more processes, the same samples
        processes=6,
        host_params=(("wakee_cpu_halts_per_wakeup",
                      "halts of the wakee's CPU per wake-up: a .cross wake-up of a halted vCPU waits for the host to resume it"),),
        smoke=("--warmup", "5", "--gap-us", "50"),
        timeout=300.0,
    ),
    Probe(
        name="sched.timer", binary="sched_timer",
        measures=(measure("sched.timer.latency", "ns", "how late a periodic clock_nanosleep(TIMER_ABSTIME) wakes its thread"),),
        methodology=(
            "cyclictest's method: the thread, pinned and at SCHED_FIFO where permitted, sleeps with "
            "clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) until the next tick of a 1 ms periodic "
            "schedule, then reads CLOCK_MONOTONIC; how late it came (now - tick) is one sample. The "
            "thread's timer slack is set to 1 ns, the least, so that a SCHED_OTHER run measures the "
            "timer and not the 50 us slack the kernel gives such threads by default; params record "
            "the policy, the inherited and the used slack, the clocksource, and whether the CPU is a "
            "nohz_full one. A wake-up later than a whole period skips the ticks it slept through "
            "(cyclictest's overruns, counted in params.overruns), so a stall of the vCPU is one late sample. "
            "The CPU's entries into its idle states over the run, per tick, are params.cpu_halts_per_tick "
            "(POLL's apart: cpu_polls_per_tick). "
            "A run measures it in {param:processes=several} processes of {arg:--seconds=1} s each, "
            "interleaved with the other probes: the host's delivery to a halted vCPU drifts over "
            "seconds, and a run's figure is the median of its processes'."
        ),
        presets={"quick": ("--seconds", "0.5"), "full": ("--seconds", "12")},
        expect={"quick": 2.6, "full": 61},
        processes=5,
        host_params=(("cpu_halts_per_tick",
                      "halts of the timer's CPU per tick: an expiry on a halted vCPU is the host's to deliver"),),
        smoke=("--seconds", "0.2"),
        timeout=180.0,
    ),
    Probe(
        name="sched.noise", binary="sched_noise",
        measures=(
            measure("sched.noise.lost", "%", "share of a pinned spinning thread's time lost to interruptions "
              "(interrupts, kernel threads, the hypervisor), per 10 ms quantum"),
            measure("sched.noise.gap", "ns", "length of one interruption of a pinned spinning thread"),
        ),
        methodology=(
            "sysjitter's and FTQ's method: a thread pinned to the measuring CPU (at SCHED_FIFO where "
            "permitted) reads the timer back to back; a gap between two reads longer than the threshold "
            "(1 us) is an interruption: an interrupt or softirq, a kernel thread, or the hypervisor "
            "running something else on the vCPU's core. Time is cut into 10 ms quanta and each quantum "
            "is a sample of .lost, the share of it spent away; each interruption is a sample of .gap. "
            "params give the interruptions per second and their histogram by length, the interrupts "
            "the CPU took over the same quanta (/proc/interrupts: guest_interrupts_per_s), and the "
            "interruptions beyond them (host_interruptions_per_s): no guest counter sees a VM exit or "
            "the host running something else on the core, so at least that many were the hypervisor's. "
            "Every run also "
            "measures this for 0.2 s at its start and its end (interference in results.json), beside "
            "the pinned CPU's steal, irq and softirq time and interrupt count from /proc around every "
            "probe process; compare names the runs whose noise or steal stands out."
        ),
        presets={"quick": ("--samples", "100"), "full": ("--samples", "1000")},
        expect={"quick": 1, "full": 10},
        host_params=(("host_interruptions_per_s",
                      "interruptions a second beyond every interrupt the guest took on the CPU: at least "
                      "that many were the hypervisor's (bursts of short ones flip .gap's median)"),),
        timeout=120.0,
    ),
)
