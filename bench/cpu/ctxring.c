/* ctxring.c - the context-switch matrix: processes in a ring of pipes, each
 * touching a working set of its own between switches (lmbench's lat_ctx -s).
 *
 * cpu.ctx.matrix  per switch, for every pair of --procs (processes in the
 *                 ring) and --sizes (KiB each process sums when it gets the
 *                 token): a series whose x is the working set per process in
 *                 bytes and whose params.processes names each point's
 *                 process count; top-level samples are the first point's.
 * N processes on one CPU pass a token around a ring of N pipes; a process
 * that gets the token sums its own working set (every 8-byte word, in order,
 * into eight sums so that the loads set the pace) and
 * passes the token on, so one trip round the ring is N switches, N pipe
 * writes and reads and N sums. What a switch-free hop costs, one process
 * writing and reading a pipe of its own and summing its own (so cached)
 * working set, is timed in windows alternating with the ring's and
 * subtracted:
 *     per switch = ring trip / N - (write + read + sum of a cached set)
 * What is left is the switch and whatever the working set costs because the
 * other processes' sets evicted it: it grows once the sets of all N
 * processes no longer fit a cache level.
 */
#include "osm.h"
#include "osmmem.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAXP 64
static uint64_t procs[16] = { 2, 8, 16 }, sizes_kib[16] = { 0, 16, 64 };
static size_t nprocs = 3, nsizes = 3;
static uint64_t switches_per_sample = 2000;

static const struct osm_opt opts[] = {
    OSM_OPT_LIST("procs", procs, nprocs, 2, MAXP, "processes in the ring, a list"),
    OSM_OPT_LIST("sizes", sizes_kib, nsizes, 0, 1 << 20, "KiB of working set per process, a list"),
    OSM_OPT_U64("switches", switches_per_sample, 16, 1u << 24, "switches per sample"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "cpu_ctxring",
    .summary = "Context switches in a ring of N processes, each touching its own working set (lat_ctx -s).",
    .default_samples = 15,
    .one_event = "one round of --switches switches",
    .opts = opts,
};

static uint64_t sum_set(const uint64_t *w, size_t words)
{
    return osm_sum_words(w, words * 8);
}

static uint64_t *new_set(size_t bytes)
{
    if (!bytes)
        return NULL;
    uint64_t *w = malloc(bytes);
    if (!w)
        osm_die("out of memory");
    for (size_t i = 0; i < bytes / 8; i++)
        w[i] = i;
    return w;
}

/* hop: read the token, sum the set, pass the token on */
static void hop(int rd, int wr, const uint64_t *set, size_t words)
{
    char c;
    if (read(rd, &c, 1) != 1)
        _exit(0);
    OSM_USE(sum_set(set, words));
    if (write(wr, &c, 1) != 1)
        _exit(0);
}

struct ring {
    int fd[MAXP][2]; /* process i reads fd[i][0], writes fd[(i+1)%n][1] */
    pid_t pid[MAXP];
    size_t n, words;
    uint64_t *set;
};

static void ring_open(struct ring *r, size_t n, size_t bytes)
{
    r->n = n;
    r->words = bytes / 8;
    for (size_t i = 0; i < n; i++)
        if (pipe(r->fd[i]) != 0)
            osm_die("pipe: %m");
    for (size_t i = 1; i < n; i++) {
        r->pid[i] = fork();
        if (r->pid[i] < 0)
            osm_die("fork: %m");
        if (r->pid[i] == 0) {
            uint64_t *set = new_set(bytes); /* each process's own */
            for (;;)
                hop(r->fd[i][0], r->fd[(i + 1) % n][1], set, r->words);
        }
    }
    r->set = new_set(bytes);
}

static void ring_close(struct ring *r)
{
    for (size_t i = 0; i < r->n; i++) {
        close(r->fd[i][0]);
        close(r->fd[i][1]);
    }
    for (size_t i = 1; i < r->n; i++) {
        kill(r->pid[i], SIGKILL);
        waitpid(r->pid[i], NULL, 0);
    }
    free(r->set);
}

/* trips round the ring, started and ended by process 0 */
static void trips(struct ring *r, uint64_t k)
{
    char c = 't';
    for (uint64_t i = 0; i < k; i++) {
        if (write(r->fd[1 % r->n][1], &c, 1) != 1 || read(r->fd[0][0], &c, 1) != 1)
            osm_die("ring: %m");
        OSM_USE(sum_set(r->set, r->words));
    }
}

/* the switch-free hop: one process, its own pipe, its own set */
static void alone(int *fd, const uint64_t *set, size_t words, uint64_t k)
{
    char c = 't';
    for (uint64_t i = 0; i < k; i++) {
        if (write(fd[1], &c, 1) != 1 || read(fd[0], &c, 1) != 1)
            osm_die("pipe: %m");
        OSM_USE(sum_set(set, words));
    }
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    osm_switch_check_off();
    osm_pin_here(&o);
    signal(SIGPIPE, SIG_IGN);

    size_t nx = nprocs * nsizes, total = 0;
    for (size_t a = 0; a < nprocs; a++)
        total += procs[a] * nsizes;
    if (total > 1024)
        osm_usage_error("--procs x --sizes: %zu processes in all; at most 1024", total);
    struct osm_meas m;
    osm_meas_init(&m, "cpu.ctx.matrix", o.samples);
    osm_meas_series(&m, "working set per process (bytes)", m.unit, nx, o.samples);
    struct json *jp = osm_param(&m, "processes");
    json_arr(jp);
    /* every ring lives at once and the samples go round them in turn, so the
     * machine's drift hits every cell alike and cells pair sample by sample */
    struct ring *rings = calloc(nx, sizeof *rings);
    int (*own)[2] = calloc(nx, sizeof *own);
    uint64_t *k = calloc(nx, sizeof *k);
    double *hops = calloc(nx * o.samples, sizeof *hops), *hop_med = calloc(nx, sizeof *hop_med);
    if (!rings || !own || !k || !hops || !hop_med)
        osm_die("out of memory");
    for (size_t a = 0; a < nprocs; a++)
        for (size_t b = 0; b < nsizes; b++) {
            size_t x = a * nsizes + b, n = procs[a], bytes = (size_t)sizes_kib[b] << 10;
            json_int(jp, (long long)n);
            m.sx[x] = (double)bytes;
            ring_open(&rings[x], n, bytes);
            if (pipe(own[x]) != 0)
                osm_die("pipe: %m");
            k[x] = (switches_per_sample + n - 1) / n;
            trips(&rings[x], k[x] * (1 + o.warmup));
            alone(own[x], rings[x].set, rings[x].words, k[x]);
        }
    for (size_t i = 0; i < o.samples; i++) {
        osm_progress("sample %zu of %zu", i + 1, o.samples);
        for (size_t x = 0; x < nx; x++) {
            struct ring *r = &rings[x];
            struct osm_window w;
            bool d1, d2;
            osm_window_open_blocking(&w);
            alone(own[x], r->set, r->words, k[x]);
            uint64_t th = osm_window_close(&w, &d1);
            osm_window_open_blocking(&w);
            trips(r, k[x]);
            uint64_t tr = osm_window_close(&w, &d2);
            double hop_cost = ((double)th - osm_timer.overhead) / (double)k[x];
            double trip = ((double)tr - osm_timer.overhead) / (double)k[x];
            hops[x * o.samples + i] = hop_cost;
            m.sy[x * o.samples + i] = trip / (double)r->n - hop_cost;
            m.sy_disturbed[x * o.samples + i] = d1 || d2;
        }
    }
    for (size_t x = 0; x < nx; x++) {
        hop_med[x] = osm_median(&hops[x * o.samples], o.samples);
        close(own[x][0]);
        close(own[x][1]);
        ring_close(&rings[x]);
    }
    double hop_first = hop_med[0];
    free(rings);
    free(own);
    free(k);
    free(hops);
    json_arr_end(jp);
    for (size_t i = 0; i < o.samples; i++)
        osm_meas_add(&m, m.sy[i], m.sy_disturbed[i]);
    m.overhead_subtracted = hop_first;
    struct json *jh = osm_param(&m, "hop_median");
    json_arr(jh);
    for (size_t x = 0; x < nx; x++)
        json_num(jh, hop_med[x]);
    json_arr_end(jh);
    free(hop_med);
    osm_param_num(&m, "switches_per_sample", (double)switches_per_sample);
    osm_param_str(&m, "method", "ring trip / N - (pipe write + read + sum of a cached set), windows alternating");
    osm_param_int(&m, "cpu", osm_current_cpu());
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
