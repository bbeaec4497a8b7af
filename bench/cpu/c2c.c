/* c2c.c - core-to-core transfer latency: one cache line bounced between two
 * threads pinned to two CPUs by compare-and-swap ping-pong; half a round
 * trip is one transfer.
 *
 *   cpu.c2c   per ordered pair (A, B) of online CPUs: A starts every round,
 *             B answers; a sample of a pair is the median of its windows of
 *             --iterations round trips, halved. The probe's samples are the
 *             pairs' figures; params.matrix_ns holds them by pair (ns,
 *             A's row, B's column; null on the diagonal and where a pair was
 *             not measured).
 *
 * Placement: each pair gets a fresh page, first touched by A (so it is
 * allocated where A is), and the line sits at its start; nothing else
 * shares it. Both threads spin under SCHED_OTHER (spinning under SCHED_FIFO
 * could starve the machine).
 *
 * Many CPUs: n CPUs have n(n-1) ordered pairs; --c2c-pairs N measures N of
 * them (default 64), chosen so each CPU is a source and a destination
 * about equally often: whole "offset rounds" (every CPU i to i+d, for an
 * offset d from a seeded shuffle of 1..n-1) first, then part of one.
 * --list-pairs prints the choice for --cpus without measuring (a test uses
 * it with 64 CPUs).
 */
#include "osm.h"
#include "osmmem.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static unsigned max_pairs = 64;
static const char *cpus_arg;
static bool list_pairs;
static uint64_t seed = 221;

static const struct osm_opt opts[] = {
    OSM_OPT_UINT("c2c-pairs", max_pairs, 1, 1u << 20, "ordered pairs to measure (all when there are fewer)"),
    OSM_OPT_STR("cpus", cpus_arg, "the CPUs, as a list such as 0-7,16", .def = "every online CPU", .arg = "LIST"),
    OSM_OPT_FLAG("list-pairs", list_pairs, "print the pairs that would be measured, as JSON, and exit"),
    OSM_OPT_U64("seed", seed, 0, UINT64_MAX, "seed of the pair choice"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "cpu_c2c",
    .summary = "Core-to-core latency: a cache line bounced between two CPUs (compare-and-swap ping-pong).",
    .default_samples = 7,
    .default_iterations = 2000,
    .opts = opts,
};

/* "0-3,8" -> CPUs; returns how many, or -1. */
struct pair {
    int a, b; /* indices into the CPU list */
};

/* The pairs to measure (see the top of the file); returns how many. */
static unsigned choose_pairs(int n, unsigned want, struct pair *out)
{
    unsigned total = (unsigned)(n * (n - 1)), k = 0;
    if (want > total)
        want = total;
    int *offs = malloc((size_t)(n > 1 ? n - 1 : 1) * sizeof *offs);
    for (int d = 1; d < n; d++)
        offs[d - 1] = d;
    uint64_t s = seed | 1;
    for (int i = n - 2; i > 0; i--) { /* shuffle the offsets */
        int j = (int)(osm_rand(&s) % (uint64_t)(i + 1)), t = offs[i];
        offs[i] = offs[j];
        offs[j] = t;
    }
    int start = (int)(osm_rand(&s) % (uint64_t)(n ? n : 1));
    for (int r = 0; r < n - 1 && k < want; r++)
        for (int i = 0; i < n && k < want; i++) {
            int a = (start + i) % n;
            out[k++] = (struct pair){ a, (a + offs[r]) % n };
        }
    free(offs);
    return k;
}

struct pingpong {
    _Atomic uint64_t *line;
    int cpu;
    uint64_t rounds;
    _Atomic int go, stop;
};

static void *answerer(void *arg)
{
    struct pingpong *p = arg;
    osm_pin(p->cpu);
    struct sched_param sp = { 0 };
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
    for (;;) {
        while (!atomic_load_explicit(&p->go, memory_order_acquire))
            if (atomic_load_explicit(&p->stop, memory_order_relaxed))
                return NULL;
        atomic_store(&p->go, 0);
        for (uint64_t r = 0; r < p->rounds; r++) {
            uint64_t want = 2 * r + 1;
            while (!atomic_compare_exchange_weak_explicit(p->line, &want, want + 1, memory_order_acq_rel,
                                                          memory_order_relaxed))
                want = 2 * r + 1;
        }
    }
}

/* Half a round trip, in ticks, over `rounds` round trips; A on cpu_a. */
static double window(struct pingpong *p)
{
    atomic_store_explicit(p->line, 0, memory_order_relaxed);
    atomic_store_explicit(&p->go, 1, memory_order_release);
    while (atomic_load_explicit(&p->go, memory_order_acquire))
        ; /* the answerer has started its rounds */
    uint64_t t0 = osm_stamp();
    for (uint64_t r = 0; r < p->rounds; r++) {
        uint64_t want = 2 * r;
        while (!atomic_compare_exchange_weak_explicit(p->line, &want, want + 1, memory_order_acq_rel,
                                                      memory_order_relaxed))
            want = 2 * r;
    }
    while (atomic_load_explicit(p->line, memory_order_acquire) != 2 * p->rounds)
        ; /* the last answer */
    return (double)(osm_stamp() - t0) / (double)p->rounds / 2;
}

static double measure_pair(int cpu_a, int cpu_b, const struct osm_opts *o)
{
    osm_pin(cpu_a);
    struct sched_param sp = { 0 };
    pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp);
    long page = sysconf(_SC_PAGESIZE);
    void *mem = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        osm_die("mmap: %m");
    memset(mem, 0, (size_t)page); /* first touched here, on A */
    struct pingpong p = { .line = mem, .cpu = cpu_b, .rounds = o->iterations };
    pthread_t th;
    if (osm_thread_on(&th, cpu_b, answerer, &p) != 0)
        osm_die("cannot start the answering thread");
    double *v = malloc((o->warmup + o->samples) * sizeof *v);
    for (size_t i = 0; i < o->warmup + o->samples; i++)
        v[i] = window(&p);
    atomic_store(&p.stop, 1);
    pthread_join(th, NULL);
    munmap(mem, (size_t)page);
    double med = osm_median(v + o->warmup, o->samples);
    free(v);
    return med;
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    int *cpus = malloc(CPU_SETSIZE * sizeof *cpus), n = 0;
    if (cpus_arg) {
        n = osm_parse_cpu_list(cpus_arg, cpus, CPU_SETSIZE);
        if (n < 0)
            osm_usage_error("--cpus: expected a list of CPU numbers below %d such as 0-3,8, got '%s'", CPU_SETSIZE,
                            cpus_arg);
        if (n < 2 && !list_pairs)
            osm_usage_error("--cpus %s: a pair needs two CPUs", cpus_arg);
        for (int i = 0; i < n; i++) /* a CPU twice would ping-pong with itself: a pair that never answers */
            for (int k = 0; k < i; k++)
                if (cpus[i] == cpus[k])
                    osm_usage_error("--cpus %s: CPU %d is named twice", cpus_arg, cpus[i]);
    } else {
        /* the online CPUs, which need not be 0..n-1 */
        char buf[4096] = "";
        FILE *f = fopen("/sys/devices/system/cpu/online", "r");
        if (f) {
            if (!fgets(buf, sizeof buf, f))
                buf[0] = 0;
            fclose(f);
        }
        buf[strcspn(buf, "\n")] = 0;
        n = buf[0] ? osm_parse_cpu_list(buf, cpus, CPU_SETSIZE) : -1;
        if (n < 0) { /* no sysfs: count */
            long online = sysconf(_SC_NPROCESSORS_ONLN);
            for (n = 0; n < online && n < CPU_SETSIZE; n++)
                cpus[n] = n;
        }
    }
    int outside = 0; /* online CPUs this process may not use (a cpuset): left out, not an error */
    if (!list_pairs) {
        int kept = 0;
        for (int i = 0; i < n; i++) {
            if (osm_pin(cpus[i]) == 0)
                cpus[kept++] = cpus[i];
            else if (cpus_arg)
                osm_usage_error("--cpus: cannot pin to CPU %d (offline, or outside this process's cpuset)", cpus[i]);
            else
                outside++;
        }
        n = kept;
        if (o.cpu >= 0)
            osm_pin(o.cpu);
    }
    struct pair *pairs = malloc((size_t)(n > 1 ? n * (n - 1) : 1) * sizeof *pairs);
    unsigned np = n > 1 ? choose_pairs(n, max_pairs, pairs) : 0;
    if (list_pairs) {
        struct json j;
        json_to_file(&j, stdout);
        json_obj(&j);
        json_kint(&j, "cpus", n);
        json_key(&j, "pairs");
        json_arr(&j);
        for (unsigned k = 0; k < np; k++) {
            json_arr(&j);
            json_int(&j, cpus[pairs[k].a]);
            json_int(&j, cpus[pairs[k].b]);
            json_arr_end(&j);
        }
        json_arr_end(&j);
        json_obj_end(&j);
        json_line_end(&j, "the pairs");
        return 0;
    }
    if (np == 0) {
        osm_refuse("cpu.c2c", outside ? "one CPU only that this process may use (the others are outside its "
                                        "cpuset): there is no pair to measure"
                                      : "one online CPU only: there is no pair to measure");
        return 0;
    }
    double *matrix = malloc((size_t)n * (size_t)n * sizeof *matrix);
    for (int i = 0; i < n * n; i++)
        matrix[i] = -1;
    struct osm_meas m;
    osm_meas_init(&m, "cpu.c2c", np);
    for (unsigned k = 0; k < np; k++) {
        double v = measure_pair(cpus[pairs[k].a], cpus[pairs[k].b], &o);
        matrix[pairs[k].a * n + pairs[k].b] = v;
        osm_meas_add(&m, v, false);
    }
    struct json *j = osm_param(&m, "cpus");
    json_arr(j);
    for (int i = 0; i < n; i++)
        json_int(j, cpus[i]);
    json_arr_end(j);
    /* the matrix in ns (the samples are in the timer's unit; the harness converts those) */
    double to_ns = osm_timer.kind == OSM_TIMER_TSC ? 1e9 / osm_timer.hz : 1.0;
    j = osm_param(&m, "matrix_ns");
    json_arr(j);
    for (int a = 0; a < n; a++) {
        json_arr(j);
        for (int b = 0; b < n; b++)
            if (matrix[a * n + b] < 0)
                json_null(j);
            else
                json_num(j, matrix[a * n + b] * to_ns);
        json_arr_end(j);
    }
    json_arr_end(j);
    osm_param_int(&m, "pairs_measured", np);
    osm_param_int(&m, "pairs_total", (long long)n * (n - 1));
    osm_param_int(&m, "round_trips_per_window", (long long)o.iterations);
    osm_param_str(&m, "method", "compare-and-swap ping-pong on one line of a fresh page first touched by the "
                                "row's CPU; half a round trip; per pair the median of its windows");
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
