/* wakeup.c - scheduler wake-up latency: how long a thread that is woken
 * waits before it runs (schbench's question).
 *
 * A wakee blocks; a waker takes a time stamp and wakes it; the wakee takes
 * a stamp as soon as its wait returns. One wake-up is one sample: the
 * difference of the two stamps (osm_stamp: RDTSCP, no serializing CPUID in
 * the path). Between samples the waker sleeps a gap (default 200 us), so the
 * wakee is surely asleep and its CPU may go idle, as it would in a real
 * program; it also checks the wakee's "about to sleep" flag.
 *
 *   sched.wakeup.same          futex, both threads on one CPU, SCHED_OTHER
 *   sched.wakeup.cross         futex, the wakee on another CPU, SCHED_OTHER
 *   sched.wakeup.same.fifo     the same under SCHED_FIFO (both threads)
 *   sched.wakeup.cross.fifo
 *   sched.wakeup.same.pipe     the wakee blocks in read() on a pipe instead
 *   sched.wakeup.cross.pipe
 *   sched.wakeup.cross.loaded  futex, SCHED_OTHER, with a CPU-bound SCHED_OTHER
 *                              thread on the wakee's CPU
 *
 * On another CPU the two stamps come from two TSCs: the probe runs only
 * where the TSC is invariant (constant_tsc, nonstop_tsc), and measures how
 * far the two CPUs' stamps can disagree (params.tsc_skew_bound); without
 * that, or with one CPU, the .cross ids are refused with the reason.
 */
#include "osm.h"

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum mech { M_FUTEX, M_PIPE };

struct variant {
    const char *id;
    bool cross, fifo, loaded;
    enum mech mech;
};

static const struct variant variants[] = {
    { "sched.wakeup.same", false, false, false, M_FUTEX },
    { "sched.wakeup.cross", true, false, false, M_FUTEX },
    { "sched.wakeup.same.fifo", false, true, false, M_FUTEX },
    { "sched.wakeup.cross.fifo", true, true, false, M_FUTEX },
    { "sched.wakeup.same.pipe", false, false, false, M_PIPE },
    { "sched.wakeup.cross.pipe", true, false, false, M_PIPE },
    { "sched.wakeup.cross.loaded", true, false, true, M_FUTEX },
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

static unsigned gap_us = 200;
static int other_cpu = -1;

static const struct osm_opt opts[] = {
    OSM_OPT_UINT("gap-us", gap_us, 0, 1000000, "sleep between wake-ups, us"),
    OSM_OPT_INT("other-cpu", other_cpu, 0, CPU_SETSIZE - 1, "the wakee's CPU for .cross", .def = "another online CPU"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "sched_wakeup",
    .summary = "Wake-up latency: a blocked thread woken on the same or another CPU (futex, pipe).",
    .default_samples = 1000,
    .default_iterations = 1,
    .opts = opts,
};

struct shared {
    const struct variant *v;
    int wakee_cpu;
    _Atomic uint32_t go;      /* futex word: 1 = wake up */
    _Atomic uint32_t ack;     /* futex word: 1 = the wakee has stamped */
    _Atomic uint32_t asleep;  /* the wakee is about to block */
    _Atomic int stop;
    int pipe_fd[2];
    _Atomic uint64_t t_wake;  /* the waker's stamp */
    uint64_t t_woke;          /* the wakee's */
    int wakee_tid;            /* whose time a sample is (kernel-path markers) */
    const char *err;
};

static long futex(_Atomic uint32_t *uaddr, int op, uint32_t val)
{
    return syscall(SYS_futex, (uint32_t *)uaddr, op, val, NULL, NULL, 0);
}

static int set_policy(bool fifo)
{
    struct sched_param sp = { .sched_priority = fifo ? 50 : 0 };
    return pthread_setschedparam(pthread_self(), fifo ? SCHED_FIFO : SCHED_OTHER, &sp);
}

static void *wakee(void *arg)
{
    struct shared *s = arg;
    if (osm_pin(s->wakee_cpu) != 0 || set_policy(s->v->fifo) != 0) {
        s->err = "cannot pin or schedule the wakee";
        atomic_store(&s->ack, 1);
        futex(&s->ack, FUTEX_WAKE_PRIVATE, 1);
        return NULL;
    }
    s->wakee_tid = osm_gettid();
    for (;;) {
        atomic_store_explicit(&s->asleep, 1, memory_order_release);
        if (s->v->mech == M_FUTEX) {
            while (atomic_load_explicit(&s->go, memory_order_acquire) == 0)
                futex(&s->go, FUTEX_WAIT_PRIVATE, 0);
        } else {
            char c;
            if (read(s->pipe_fd[0], &c, 1) != 1)
                return NULL;
        }
        uint64_t t = osm_stamp();
        atomic_store(&s->asleep, 0);
        if (atomic_load(&s->stop))
            return NULL;
        s->t_woke = t;
        atomic_store(&s->go, 0);
        atomic_store_explicit(&s->ack, 1, memory_order_release);
        futex(&s->ack, FUTEX_WAKE_PRIVATE, 1);
    }
}

static _Atomic int hog_stop;

static void *hog(void *arg)
{
    int cpu = *(int *)arg;
    osm_pin(cpu);
    set_policy(false);
    volatile uint64_t x = 0;
    while (!atomic_load_explicit(&hog_stop, memory_order_relaxed))
        x++;
    return NULL;
}

static void nap_us(unsigned us)
{
    struct timespec d = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };
    while (nanosleep(&d, &d) != 0 && errno == EINTR)
        ;
}

/* One variant: `samples` wake-ups after `warmup` unrecorded ones. */
static void measure(const struct variant *v, int waker_cpu, int wakee_cpu, const struct osm_opts *o, double skew,
                    double offset, const char *policy_note)
{
    struct shared s = { .v = v, .wakee_cpu = wakee_cpu };
    if (v->mech == M_PIPE && pipe(s.pipe_fd) != 0)
        osm_die("pipe: %s", strerror(errno));
    osm_pin(waker_cpu);
    if (set_policy(v->fifo) != 0) {
        char why[160];
        snprintf(why, sizeof why, "SCHED_FIFO is not permitted here (%s)", strerror(errno));
        osm_refuse(v->id, why);
        return;
    }
    pthread_t hog_th, th;
    int hog_cpu = wakee_cpu;
    atomic_store(&hog_stop, 0);
    if (v->loaded && osm_thread_on(&hog_th, hog_cpu, hog, &hog_cpu) != 0)
        osm_die("cannot start the load thread");
    if (osm_thread_on(&th, wakee_cpu, wakee, &s) != 0)
        osm_die("cannot start the wakee thread");
    struct osm_meas m;
    osm_meas_init(&m, v->id, o->samples);
    m.single_shot = true;
    long long halts0, polls0, halts1, polls1;
    int idle_known = osm_idle_entries(wakee_cpu, &halts0, &polls0);
    size_t wakeups = 0;
    for (size_t i = 0; i < o->warmup + o->samples && !s.err; i++, wakeups++) {
        nap_us(gap_us);
        while (!atomic_load_explicit(&s.asleep, memory_order_acquire))
            nap_us(50);
        atomic_store(&s.ack, 0);
        uint64_t t0 = osm_stamp();
        if (v->mech == M_FUTEX) {
            atomic_store_explicit(&s.go, 1, memory_order_release);
            futex(&s.go, FUTEX_WAKE_PRIVATE, 1);
        } else if (write(s.pipe_fd[1], "x", 1) != 1) {
            osm_die("pipe write: %s", strerror(errno));
        }
        while (atomic_load_explicit(&s.ack, memory_order_acquire) == 0)
            futex(&s.ack, FUTEX_WAIT_PRIVATE, 0);
        if (i >= o->warmup) {
            osm_sample_span(t0, s.t_woke, s.wakee_tid); /* the wakee's time: asleep, woken, running again */
            osm_meas_add(&m, (double)(s.t_woke - t0) - (v->cross ? offset : 0), false);
        }
    }
    if (idle_known == 0)
        idle_known = osm_idle_entries(wakee_cpu, &halts1, &polls1);
    atomic_store(&s.stop, 1);
    atomic_store(&s.go, 1);
    futex(&s.go, FUTEX_WAKE_PRIVATE, 1);
    if (v->mech == M_PIPE && write(s.pipe_fd[1], "q", 1) != 1)
        osm_die("pipe write: %s", strerror(errno));
    pthread_join(th, NULL);
    if (v->loaded) {
        atomic_store(&hog_stop, 1);
        pthread_join(hog_th, NULL);
    }
    if (v->mech == M_PIPE) {
        close(s.pipe_fd[0]);
        close(s.pipe_fd[1]);
    }
    if (s.err)
        osm_die("%s", s.err);
    osm_param_str(&m, "mechanism", v->mech == M_FUTEX ? "futex" : "pipe");
    osm_param_str(&m, "policy", v->fifo ? "SCHED_FIFO 50, both threads" : "SCHED_OTHER, both threads");
    osm_param_int(&m, "waker_cpu", waker_cpu);
    osm_param_int(&m, "wakee_cpu", wakee_cpu);
    osm_param_int(&m, "gap_us", gap_us);
    osm_param_bool(&m, "loaded", v->loaded);
    if (idle_known == 0 && wakeups > 0) { /* what the host adds to a wake-up: the wakee's CPU was halted */
        osm_param_num(&m, "wakee_cpu_halts_per_wakeup", (double)(halts1 - halts0) / (double)wakeups);
        osm_param_num(&m, "wakee_cpu_polls_per_wakeup", (double)(polls1 - polls0) / (double)wakeups);
    } else {
        osm_param_str(&m, "wakee_cpu_halts_per_wakeup", "not known: no cpuidle states in sysfs for that CPU");
    }
    if (v->cross && osm_timer.kind == OSM_TIMER_CLOCK) {
        osm_param_str(&m, "cross_cpu_stamps", "one system-wide clock (--timer clock): no skew to bound");
    } else if (v->cross) {
        osm_param_num(&m, "tsc_skew_bound", skew);
        osm_param_num(&m, "tsc_offset_subtracted", offset);
    }
    if (policy_note)
        osm_param_str(&m, "note", policy_note);
    osm_emit(&m);
    osm_meas_free(&m);
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    int waker = (int)osm_current_cpu();
    /* the harness pins us to one CPU: the other CPUs are the machine's online ones */
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    int wakee_cross = other_cpu;
    if (other_cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(other_cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            osm_usage_error("--other-cpu %d: not an online CPU this process may run on", other_cpu);
    }
    for (int c = 0; wakee_cross < 0 && c < ncpu; c++)
        if (c != waker) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(c, &one);
            if (sched_setaffinity(0, sizeof one, &one) == 0)
                wakee_cross = c;
        }
    osm_pin(waker);
    const char *no_cross = NULL;
    char why[200];
    double skew = 0, offset = 0;
    if (other_cpu >= 0 && other_cpu == waker)
        no_cross = "--other-cpu is the waker's own CPU: nothing crosses";
    else if (wakee_cross < 0 || wakee_cross == waker)
        no_cross = "one online CPU only: no other CPU to wake a thread on";
    else if (osm_timer.kind == OSM_TIMER_CLOCK)
        ; /* --timer clock: both stamps read clock_gettime, one system-wide clock for every CPU: nothing to bound */
    else if (!osm_timer.tsc_invariant)
        no_cross = "no invariant TSC: stamps taken on two CPUs cannot be compared";
    else {
        skew = osm_tsc_skew(waker, wakee_cross, &offset);
        if (skew < 0) {
            no_cross = "cannot measure how the two CPUs' stamps agree";
        } else if (skew * 1e9 / osm_timer.hz > 5000) {
            snprintf(why, sizeof why, "the TSCs of CPU %d and CPU %d disagree by up to %.0f ns", waker, wakee_cross,
                     skew * 1e9 / osm_timer.hz);
            no_cross = why;
        }
    }
    for (size_t k = 0; k < NVARIANTS; k++) {
        const struct variant *v = &variants[k];
        if (v->cross && no_cross) {
            osm_refuse(v->id, no_cross);
            continue;
        }
        osm_progress("%s (%zu of %zu)", v->id, k + 1, (size_t)NVARIANTS);
        measure(v, waker, v->cross ? wakee_cross : waker, &o, skew, offset, NULL);
    }
    return 0;
}
