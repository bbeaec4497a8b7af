/* timing.c - the timer: its choice, the TSC's rate, the cost of an empty
 * window, and the checks for migrations and deschedules. Batching is in
 * batch.c, the measurements' output in emit.c. */
#include "osm.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct osm_timer_info osm_timer = { .kind = OSM_TIMER_CLOCK, .hz = 1e9 };

unsigned osm_current_cpu(void)
{
    int c = sched_getcpu();
    return c < 0 ? 0 : (unsigned)c;
}

/* A dummy software event on this thread: nothing is counted, but the
 * kernel rewrites the mmap page (bumping `lock`) at every switch in or out.
 * OSM_NO_PERF=1 forces the getrusage fallback (for tests). */
static __thread struct perf_event_mmap_page *switch_page;
static __thread int switch_tried;
static int switch_mode = -1;
static bool switch_off;
static char switch_why[160]; /* why getrusage, where it is used */

void osm_switch_check_off(void)
{
    switch_off = true;
}

volatile uint32_t *osm_switch_seq(void)
{
    if (!switch_tried) {
        switch_tried = 1;
        const char *off = getenv("OSM_NO_PERF");
        if (switch_off)
            snprintf(switch_why, sizeof switch_why,
                     "chosen by the probe: a perf event on the task would add to every context switch it times");
        else if (off && strcmp(off, "1") == 0)
            snprintf(switch_why, sizeof switch_why, "disabled with OSM_NO_PERF=1");
        else {
            struct perf_event_attr a;
            memset(&a, 0, sizeof a);
            a.size = sizeof a;
            a.type = PERF_TYPE_SOFTWARE;
            a.config = PERF_COUNT_SW_DUMMY;
            int fd = (int)syscall(__NR_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
            if (fd >= 0) {
                void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
                if (p == MAP_FAILED)
                    snprintf(switch_why, sizeof switch_why, "mmap of the perf event's page failed: %s",
                             strerror(errno));
                close(fd);
                if (p != MAP_FAILED)
                    switch_page = p;
            } else {
                snprintf(switch_why, sizeof switch_why, "perf_event_open refused: %s", strerror(errno));
            }
        }
        if (switch_mode < 0)
            switch_mode = switch_page != NULL;
    }
    return switch_page ? &switch_page->lock : NULL;
}

const char *osm_deschedule_check(void)
{
    osm_switch_seq();
    return switch_mode == 1 ? "perf-mmap-lock" : "getrusage";
}

const char *osm_deschedule_check_why(void)
{
    osm_switch_seq();
    return switch_mode == 1 ? NULL : switch_why;
}

void osm_window_counters(long *nvcsw, long *nivcsw)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0) {
        *nvcsw = *nivcsw = 0;
        return;
    }
    *nvcsw = ru.ru_nvcsw;
    *nivcsw = ru.ru_nivcsw;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double osm_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ------------------------------------------------------- CPU features */

#if OSM_HAVE_TSC && (defined(__x86_64__) || defined(__i386__))
#include <cpuid.h>
static const char *tsc_missing(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(d & (1u << 4)))
        return "the CPU has no TSC (CPUID.1:EDX.TSC = 0)";
    if (!__get_cpuid(0x80000001, &a, &b, &c, &d) || !(d & (1u << 27)))
        return "the CPU has no RDTSCP (CPUID.80000001h:EDX.RDTSCP = 0)";
    return NULL;
}
#elif OSM_HAVE_TSC
static const char *tsc_missing(void) { return NULL; } /* the generic timer is architectural */
#endif

/* constant_tsc and nonstop_tsc as the kernel reports them (a hypervisor may
 * hide CPUID's invariant-TSC bit while the kernel knows better). The
 * aarch64 generic timer runs at a constant rate by the architecture.
 * OSM_FAKE_NO_INVARIANT_TSC=1 makes a machine look as if it had none (the
 * tests use it to exercise the refusals and the warnings). */
static bool tsc_flags_invariant(void)
{
    const char *fake = getenv("OSM_FAKE_NO_INVARIANT_TSC");
    if (fake && *fake && strcmp(fake, "0") != 0)
        return false;
#if defined(__aarch64__)
    return true;
#endif
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[8192];
    bool constant = false, nonstop = false;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0)
            continue;
        constant = strstr(line, " constant_tsc") != NULL;
        nonstop = strstr(line, " nonstop_tsc") != NULL;
        break;
    }
    fclose(f);
    return constant && nonstop;
}

/* -------------------------------------------------------- calibration */

/* TSC ticks per second, against CLOCK_MONOTONIC_RAW. Each end point reads the
 * clock on both sides of the TSC read and keeps the tightest of a few tries,
 * so a preemption between the reads cannot skew the pair: an end point is
 * then known to a fraction of a microsecond, and a 3 ms interval gives the
 * rate to about 1e-4 at worst, far inside any figure's spread. The interval
 * is short because every probe process pays it (three of them: the median
 * shrugs off one interval the host stretched). */
static void paired_read(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 16; i++) {
        uint32_t cpu;
        uint64_t a = osm_clock_ns();
        uint64_t t = osm_tsc_end_raw(&cpu);
        uint64_t b = osm_clock_ns();
        if (b - a < best) {
            best = b - a;
            *tsc = t;
            *ns = a + (b - a) / 2;
        }
    }
}

double osm_calibrate_hz(void)
{
    double est[3];
    for (int k = 0; k < 3; k++) {
        uint64_t t0, n0, t1, n1;
        paired_read(&t0, &n0);
        struct timespec d = { 0, 3 * 1000 * 1000 };
        nanosleep(&d, NULL);
        paired_read(&t1, &n1);
        est[k] = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
    }
    return osm_median(est, 3);
}

/* ------------------------------------------------------ the timer's step */

#define STEP_READS 20000

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The step is found from the spacing of the differences, not from their
 * divisors: a guest's scaled TSC can move by a fractional number of ticks
 * (its readings floor(n * step)), so consecutive reads differ by k * step
 * give or take a tick, for small whole k.
 *  1. The sorted differences fall into clusters: runs of values each within
 *     two ticks of the next. A cluster's centre is its mean.
 *  2. The clusters that count hold at least 3 differences (and 1 in 10,000;
 *     all of them, when fewer) and are centred more than two ticks from 0:
 *     a read off the grid by a tick differs from its neighbour by about
 *     0 * step, and a lone read (an interrupt) is no pattern.
 *  3. The smallest spacing between adjacent centres (0 counts as a centre)
 *     numbers them, k = round(centre / spacing); the step is the
 *     least-squares fit of centre = k * step with weights size / k^2, that
 *     is the mean of the clusters' centre / k weighted by their sizes (a far
 *     cluster of a few late reads, numbered from a rough spacing, cannot
 *     pull it), to a hundredth of a tick.
 *  4. It stands when at least 99% of all the differences lie within a tick
 *     of a multiple of it and it is 3 ticks or more (a finer grid leaves no
 *     difference off it). Otherwise the timer moves by single ticks (a
 *     continuum, a clock in ns): the step is 1.
 * One cluster (every move about the same): the step is then that difference
 * or a divisor of it, and it is taken to be the difference itself. Where
 * reads are quicker than the step (most see no move) that is exact; where
 * they are slower the true step may be finer, and stating the coarser one
 * errs on the safe side: windows a little longer, quantization overstated,
 * never hidden. */
#define STEP_NEAR 2.0 /* ticks: the reach of a cluster, and of reads off the grid beside 0 */

int osm_timer_step(uint64_t (*read)(void), size_t n, double *granularity, double *least)
{
    uint64_t *d = malloc(n * sizeof *d);
    if (!d)
        osm_die("out of memory");
    size_t k = 0;
    uint64_t prev = read();
    for (size_t i = 1; i < n; i++) {
        uint64_t t = read();
        if (t > prev)
            d[k++] = t - prev;
        prev = t;
    }
    if (!k) {
        free(d);
        return -1;
    }
    qsort(d, k, sizeof *d, cmp_u64);
    *least = (double)d[0];

    /* 1-2: the clusters that count, their centres and sizes */
    double *centre = malloc(k * sizeof *centre), *size = malloc(k * sizeof *size);
    if (!centre || !size)
        osm_die("out of memory");
    size_t m = 0, need = k / 10000 > 3 ? k / 10000 : 3;
    if (need > k)
        need = k;
    for (size_t i = 0, j; i < k; i = j) {
        double sum = 0;
        for (j = i; j < k && (j == i || (double)(d[j] - d[j - 1]) <= STEP_NEAR); j++)
            sum += (double)d[j];
        double c = sum / (double)(j - i);
        if (j - i >= need && c > STEP_NEAR) {
            centre[m] = c;
            size[m++] = (double)(j - i);
        }
    }

    /* 3: the smallest spacing numbers the centres; the fit gives the step */
    double step = 1;
    if (m) {
        double spacing = centre[0];
        for (size_t i = 1; i < m; i++)
            if (centre[i] - centre[i - 1] < spacing)
                spacing = centre[i] - centre[i - 1];
        double sum = 0, all = 0;
        for (size_t i = 0; i < m; i++) {
            sum += size[i] * centre[i] / round(centre[i] / spacing);
            all += size[i];
        }
        step = round(sum / all * 100) / 100;
    }

    /* 4: the grid must hold 99% of the differences */
    size_t on_grid = 0;
    for (size_t i = 0; i < k; i++)
        on_grid += fabs((double)d[i] - round((double)d[i] / step) * step) <= 1.0;
    if (step < 3 || (double)on_grid < 0.99 * (double)k)
        step = 1;

    *granularity = step;
    free(centre);
    free(size);
    free(d);
    return 0;
}

static uint64_t read_stamp(void) { return osm_stamp(); }

double osm_window_floor_ticks(void)
{
    double want = osm_timer.overhead * 100.0;
    double steps = osm_timer.step_ticks * 100.0;
    double floor_ticks = osm_timer.hz * 20e-6;
    if (want < steps)
        want = steps;
    if (want < floor_ticks)
        want = floor_ticks;
    return want < 100.0 ? 100.0 : want;
}

double osm_core_start_mhz, osm_core_start_width;

#define X16(s) s s s s s s s s s s s s s s s s
/* Ticks of one window of `adds` adds: one dependent chain (wide == 0), or
 * eight independent chains of adds / 8 each (wide != 0). */
static double chain_ticks(int wide, uint64_t adds)
{
    uint64_t k = 3;
    OSM_KEEP(k);
    uint32_t c0, c1;
    uint64_t t0, t1;
    if (!wide) {
        uint64_t x = 1;
        t0 = osm_begin(&c0);
        for (uint64_t i = 0; i < adds / 16; i++) {
            X16(x += k; OSM_KEEP(x);)
        }
        t1 = osm_end(&c1);
        OSM_USE(x);
    } else {
        uint64_t a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7, h = 8;
        t0 = osm_begin(&c0);
        for (uint64_t i = 0; i < adds / 16; i += 8) {
            X16(a += k; b += k; c += k; d += k; e += k; f += k; g += k; h += k;
                OSM_KEEP(a); OSM_KEEP(b); OSM_KEEP(c); OSM_KEEP(d);
                OSM_KEEP(e); OSM_KEEP(f); OSM_KEEP(g); OSM_KEEP(h);)
        }
        t1 = osm_end(&c1);
        OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d);
        OSM_USE(e); OSM_USE(f); OSM_USE(g); OSM_USE(h);
    }
    return (double)(t1 - t0) - osm_timer.overhead;
}

double osm_core_mhz(double *width)
{
    enum { WINDOWS = 5 };
    uint64_t adds = 1 << 14;
    double dep[WINDOWS], wide[WINDOWS];
    for (;;) { /* a window of at least the timer's floor (100 steps, 20 us) */
        for (int w = 0; w < WINDOWS; w++) {
            dep[w] = chain_ticks(0, adds);
            if (width)
                wide[w] = chain_ticks(1, adds);
        }
        double med = osm_median(dep, WINDOWS);
        if (med >= osm_window_floor_ticks() || adds >= (1ull << 26)) {
            if (width) {
                double wmed = osm_median(wide, WINDOWS);
                *width = med > 0 && wmed > 0 ? med / wmed : 0;
            }
            return med > 0 ? osm_timer.hz * (double)adds / med / 1e6 : 0;
        }
        adds *= 2;
    }
}
#undef X16

#define OVERHEAD_WINDOWS 2000

static double overhead_samples[OVERHEAD_WINDOWS];

static void calibrate_overhead(void)
{
    for (int i = 0; i < OVERHEAD_WINDOWS + 200; i++) {
        uint32_t c0, c1;
        uint64_t t0 = osm_begin(&c0);
        uint64_t t1 = osm_end(&c1);
        if (i >= 200)
            overhead_samples[i - 200] = (double)(t1 - t0);
    }
    double tmp[OVERHEAD_WINDOWS];
    memcpy(tmp, overhead_samples, sizeof tmp);
    osm_timer.overhead = osm_median(tmp, OVERHEAD_WINDOWS);
    osm_timer.overhead_min = tmp[0];
}

/* The distribution the overhead was calibrated from (cpu.timer_overhead). */
const double *osm_overhead_samples(size_t *n)
{
    *n = OVERHEAD_WINDOWS;
    return overhead_samples;
}

void osm_timer_setup(enum osm_timer_kind want)
{
    osm_timer.tsc_invariant = tsc_flags_invariant();
    osm_timer.fallback_why = NULL;
#if OSM_HAVE_TSC
    const char *missing = tsc_missing();
    if (want == OSM_TIMER_TSC && missing) {
        osm_warn("%s; timing with clock_gettime(CLOCK_MONOTONIC_RAW) instead (ns, coarser)", missing);
        osm_timer.fallback_why = missing;
        want = OSM_TIMER_CLOCK;
    }
#else
    if (want == OSM_TIMER_TSC) {
        osm_timer.fallback_why = "no fenced TSC on this architecture";
        want = OSM_TIMER_CLOCK;
    }
#endif
    if (want == OSM_TIMER_CLOCK && !osm_timer.fallback_why)
        osm_timer.fallback_why = "requested with --timer clock";
    osm_timer.kind = want;
    if (want == OSM_TIMER_TSC) {
        if (!osm_timer.tsc_invariant)
            osm_warn("the TSC is not invariant (constant_tsc/nonstop_tsc missing in /proc/cpuinfo): "
                     "cycle counts may not convert to time, and frequency changes skew them");
#if defined(__aarch64__)
        uint64_t frq;
        __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(frq));
        osm_timer.hz = frq ? (double)frq : osm_calibrate_hz(); /* CNTFRQ_EL0 is what firmware set */
#else
        osm_timer.hz = osm_calibrate_hz();
#endif
    } else {
        osm_timer.hz = 1e9;
    }
    /* the step the timer really advances by: a guest's TSC, scaled by the
     * hypervisor, can move in steps of tens of ticks, never by one */
    double g, least;
    if (osm_timer_step(read_stamp, STEP_READS, &g, &least) == 0) {
        osm_timer.step_ticks = g;
        osm_timer.min_step_ticks = least;
    } else {
        struct timespec res;
        osm_timer.step_ticks = osm_timer.min_step_ticks =
            osm_timer.kind == OSM_TIMER_CLOCK && clock_getres(CLOCK_MONOTONIC_RAW, &res) == 0 && res.tv_sec == 0
                ? (double)res.tv_nsec : 1.0;
    }
    osm_timer.resolution_ns = osm_timer.step_ticks * 1e9 / osm_timer.hz;
    calibrate_overhead();
}

/* ------------------------------------------------- where threads run */

int osm_thread_on(pthread_t *th, int cpu, void *(*fn)(void *), void *arg)
{
    pthread_attr_t attr;
    cpu_set_t set;
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return EINVAL;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    int rc = pthread_attr_init(&attr);
    if (rc == 0)
        rc = pthread_attr_setaffinity_np(&attr, sizeof set, &set);
    if (rc == 0)
        rc = pthread_create(th, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    return rc;
}

int osm_pin(int cpu)
{
    cpu_set_t set;
    /* The kernel refuses offline CPUs and CPUs outside our cpuset (EINVAL). */
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
        errno = EINVAL;
        return -1;
    }
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    return sched_setaffinity(0, sizeof set, &set);
}

int osm_pin_here(const struct osm_opts *o)
{
    if (o->cpu >= 0)
        return o->cpu;
    int cpu = (int)osm_current_cpu();
    if (osm_pin(cpu) != 0)
        osm_die("cannot pin to the current CPU (%d): %m", cpu);
    return cpu;
}

/* ------------------------------------------------- stamps across CPUs */

struct skew {
    int cpu;
    _Atomic uint64_t flag; /* 1: a's turn to have sent; 2: b answered */
    _Atomic uint64_t t_b;
    int rounds;
};

static void *skew_partner(void *arg)
{
    struct skew *s = arg;
    osm_pin(s->cpu);
    for (int r = 0; r < s->rounds; r++) {
        while (atomic_load_explicit(&s->flag, memory_order_acquire) != 1)
            ;
        atomic_store_explicit(&s->t_b, osm_stamp(), memory_order_relaxed);
        atomic_store_explicit(&s->flag, 2, memory_order_release);
    }
    return NULL;
}

/* The exchange both osm_tsc_skew and osm_pair_rtt read: a thread on b
 * answers a flag a sets, round after round. Returns the least round trip in
 * ticks (-1 when no thread could run on b), and in [*lo, *hi] the bracket
 * that round gives b's stamp minus a's. */
static double pair_exchange(int a, int b, double *lo, double *hi)
{
    struct skew s = { .cpu = b, .rounds = 2000 };
    pthread_t th;
    cpu_set_t old;
    sched_getaffinity(0, sizeof old, &old);
    osm_pin(a);
    if (osm_thread_on(&th, b, skew_partner, &s) != 0) {
        sched_setaffinity(0, sizeof old, &old);
        return -1;
    }
    double best = 1e300;
    *lo = *hi = 0;
    for (int r = 0; r < s.rounds; r++) {
        uint64_t t0 = osm_stamp();
        atomic_store_explicit(&s.flag, 1, memory_order_release);
        while (atomic_load_explicit(&s.flag, memory_order_acquire) != 2)
            ;
        uint64_t t1 = osm_stamp();
        double rt = (double)(t1 - t0);
        if (rt < best) { /* b read its stamp between t0 and t1 */
            best = rt;
            *lo = (double)atomic_load(&s.t_b) - (double)t1;
            *hi = (double)atomic_load(&s.t_b) - (double)t0;
        }
        atomic_store_explicit(&s.flag, 0, memory_order_relaxed);
    }
    pthread_join(th, NULL);
    sched_setaffinity(0, sizeof old, &old);
    return best;
}

double osm_tsc_skew(int a, int b, double *offset)
{
    double lo, hi;
    if (pair_exchange(a, b, &lo, &hi) < 0)
        return *offset = 0, -1;
    *offset = (lo + hi) / 2;
    /* the offset lies in [lo, hi]: it is at most this far from zero */
    return fmax(fabs(lo), fabs(hi));
}

double osm_pair_rtt(int a, int b)
{
    double lo, hi;
    return pair_exchange(a, b, &lo, &hi);
}
