/* ctx.c - context switch between two processes, and between two threads,
 * both pinned to the SAME CPU, by pipe ping-pong (the lat_ctx method).
 *
 * A token byte goes back and forth through two pipes. One round trip is two
 * switches plus two 1-byte writes and two 1-byte reads; the cost of a write
 * and a read with no switch (one process writing into a pipe and reading it
 * back) is measured here too, and subtracted:
 *
 *   per switch = (round trip - 2 * (write + read)) / 2
 *
 * cpu.ctx.proc           per switch, two processes
 * cpu.ctx.thread         per switch, two threads of one process
 * cpu.ctx.pipe_overhead  one 1-byte write plus one 1-byte read, no switch
 * params.roundtrip_median: the median round trip before the pipe cost was
 * taken out (timer overhead out), so the subtraction can be checked.
 * One sample = --iterations round trips (default 1000: windows of 50 came out
 * 40% higher than lmbench's, a cost at every window's edge amortized over
 * too few switches), after 16 untimed ones. Waiting is blocking
 * (read), never spinning, so SCHED_FIFO cannot livelock the pair.
 */
#include "osm.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct pair {
    int to_partner[2];
    int from_partner[2];
};

static void partner_loop(struct pair *p)
{
    char c;
    for (;;) {
        if (read(p->to_partner[0], &c, 1) != 1 || c == 'q')
            return;
        if (write(p->from_partner[1], &c, 1) != 1)
            return;
    }
}

static void *partner_thread(void *arg)
{
    partner_loop(arg);
    return NULL;
}

static void roundtrips(struct pair *p, uint64_t n)
{
    char c = 'x';
    for (uint64_t i = 0; i < n; i++) {
        if (write(p->to_partner[1], &c, 1) != 1 || read(p->from_partner[0], &c, 1) != 1)
            osm_die("ping-pong: %m");
    }
}

static void pipe_body(void *ctx, uint64_t n)
{
    int *fd = ctx;
    char c = 'x';
    for (uint64_t i = 0; i < n; i++) {
        if (write(fd[1], &c, 1) != 1 || read(fd[0], &c, 1) != 1)
            osm_die("pipe write/read: %m");
    }
}

static void open_pair(struct pair *p)
{
    if (pipe(p->to_partner) != 0 || pipe(p->from_partner) != 0)
        osm_die("pipe: %m");
}

static void close_pair(struct pair *p)
{
    close(p->to_partner[0]);
    close(p->to_partner[1]);
    close(p->from_partner[0]);
    close(p->from_partner[1]);
}

#define WARM_RTS 16

/* One sample: --iterations round trips, reduced to the cost of one switch;
 * the round trip itself (timer overhead out, nothing else) is kept in
 * *rt_out, for params.roundtrip_median: what was subtracted from, shown. */
static void sample(struct osm_meas *m, struct pair *p, uint64_t rts, double pipe_cost, double *rt_out)
{
    struct osm_window w;
    bool dist;
    /* untimed first: the other pair's sample ran just before, and the first
     * switches into this pair pay for its cold TLB and caches (in a guest,
     * ~1 us a switch over the first tens of switches) */
    roundtrips(p, WARM_RTS);
    osm_window_open_blocking(&w);
    roundtrips(p, rts);
    uint64_t t = osm_window_close(&w, &dist);
    double rt = ((double)t - osm_timer.overhead) / (double)rts;
    *rt_out = rt;
    osm_sample_ops(2 * rts); /* the window per switch (the figure also takes out the pipe's cost) */
    osm_meas_add(m, (rt - 2 * pipe_cost) / 2, dist);
}

static void finish(struct osm_meas *m, uint64_t rts, double pipe_cost, const char *partner, double *rt, size_t n)
{
    m->overhead_subtracted = osm_timer.overhead / (double)rts / 2 + pipe_cost;
    osm_param_num(m, "roundtrip_median", osm_median(rt, n));
    osm_param_str(m, "partner", partner);
    osm_param_int(m, "roundtrips_per_sample", (long long)rts);
    osm_param_num(m, "pipe_write_read", pipe_cost);
    osm_param_int(m, "cpu", osm_current_cpu());
    osm_param_bool(m, "interleaved", true);
    osm_param_int(m, "untimed_roundtrips_first", WARM_RTS);
    osm_emit(m);
    osm_meas_free(m);
}

static const struct osm_probe_info info = {
    .name = "cpu_ctx",
    .summary = "Context switch between two processes and two threads on one CPU (pipe ping-pong).",
    .default_samples = 100,
    .default_iterations = 1000,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    osm_switch_check_off(); /* a perf event on this task would add to every switch timed here */
    osm_pin_here(&o); /* same CPU for both ends */

    int fd[2];
    if (pipe(fd) != 0)
        osm_die("pipe: %m");
    struct osm_meas m;
    osm_meas_init(&m, "cpu.ctx.pipe_overhead", o.samples);
    osm_run_batched(&m, pipe_body, fd, 0, o.samples, 0);
    close(fd[0]);
    close(fd[1]);
    double *tmp = malloc(m.n * sizeof *tmp);
    if (!tmp)
        osm_die("out of memory");
    memcpy(tmp, m.v, m.n * sizeof *tmp);
    double pipe_cost = osm_median(tmp, m.n);
    free(tmp);
    osm_param_str(&m, "what", "1-byte write + 1-byte read on one pipe, one process");
    osm_emit(&m);
    osm_meas_free(&m);

    /* Both partners live at once and the samples alternate between them,
     * so slow drift of the VM (seen: 20% between runs) hits both alike. */
    struct pair pp, tp;
    open_pair(&pp);
    open_pair(&tp);
    pid_t pid = fork();
    if (pid < 0)
        osm_die("fork: %m");
    if (pid == 0) {
        partner_loop(&pp);
        _exit(0);
    }
    pthread_t th;
    int err = pthread_create(&th, NULL, partner_thread, &tp);
    if (err)
        osm_die("pthread_create: %s", strerror(err));

    struct osm_meas mp, mt;
    osm_meas_init(&mp, "cpu.ctx.proc", o.samples);
    osm_meas_init(&mt, "cpu.ctx.thread", o.samples);
    double *rtp = malloc(o.samples * sizeof *rtp), *rtt = malloc(o.samples * sizeof *rtt);
    if (!rtp || !rtt)
        osm_die("out of memory");
    roundtrips(&pp, o.iterations * o.warmup);
    roundtrips(&tp, o.iterations * o.warmup);
    for (size_t i = 0; i < o.samples; i++) {
        sample(&mp, &pp, o.iterations, pipe_cost, &rtp[i]);
        sample(&mt, &tp, o.iterations, pipe_cost, &rtt[i]);
    }
    if (write(pp.to_partner[1], "q", 1) != 1 || write(tp.to_partner[1], "q", 1) != 1)
        osm_die("stopping the partners: %m");
    waitpid(pid, NULL, 0);
    pthread_join(th, NULL);
    close_pair(&pp);
    close_pair(&tp);
    finish(&mp, o.iterations, pipe_cost, "process", rtp, o.samples);
    finish(&mt, o.iterations, pipe_cost, "thread", rtt, o.samples);
    free(rtp);
    free(rtt);
    return 0;
}
