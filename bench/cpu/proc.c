/* proc.c - process creation.
 *
 * cpu.proc_create       fork() until the first of parent or child runs: both
 *                       take an end stamp as soon as fork returns in them; the
 *                       child sends its stamp through a pipe; the sample is
 *                       the earlier of the two minus the begin stamp (the
 *                       pipe method of the CSE 221 report in shared/seeds).
 * cpu.proc_create_wait  fork(), the child _exit(0)s, the parent waitpid()s.
 * One fork per sample. Both sides are pinned to the same CPU (a child
 * inherits its parent's affinity).
 */
#include "osm.h"

#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static long rss_kib(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static void reap(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        ;
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        osm_die("child %d did not exit cleanly", (int)pid);
}

static const struct osm_probe_info info = {
    .name = "cpu_proc",
    .summary = "Process creation: fork until first run, and fork+exit+wait.",
    .default_samples = 100,
    .default_iterations = 1,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    if (o.iterations != 1)
        osm_usage_error("--iterations: a process creation sample is one fork; only 1 is allowed");

    struct osm_meas m;
    osm_meas_init(&m, "cpu.proc_create", o.samples);
    size_t child_first = 0;
    for (size_t i = 0; i < o.warmup + o.samples; i++) {
        int p[2];
        if (pipe(p) != 0)
            osm_die("pipe: %m");
        uint32_t c0, cp;
        uint64_t t0 = osm_begin(&c0);
        pid_t pid = fork();
        if (pid == 0) {
            uint32_t cc;
            uint64_t tc = osm_end(&cc);
            uint64_t msg[2] = { tc, cc };
            ssize_t w = write(p[1], msg, sizeof msg);
            _exit(w == (ssize_t)sizeof msg ? 0 : 1);
        }
        uint64_t tp = osm_end(&cp);
        if (pid < 0)
            osm_die("fork: %m");
        uint64_t msg[2];
        if (read(p[0], msg, sizeof msg) != (ssize_t)sizeof msg)
            osm_die("reading the child's time stamp: %m");
        reap(pid);
        close(p[0]);
        close(p[1]);
        if (i < o.warmup)
            continue;
        uint64_t first = tp < msg[0] ? tp : msg[0];
        child_first += msg[0] < tp;
        bool dist = cp != c0 || msg[1] != c0;
        osm_meas_add(&m, (double)(first - t0) - osm_timer.overhead, dist);
    }
    m.overhead_subtracted = osm_timer.overhead;
    osm_param_int(&m, "child_ran_first", (long long)child_first);
    osm_param_int(&m, "parent_rss_kib", rss_kib());
    osm_emit(&m);
    osm_meas_free(&m);

    osm_meas_init(&m, "cpu.proc_create_wait", o.samples);
    for (size_t i = 0; i < o.warmup + o.samples; i++) {
        struct osm_window w;
        bool dist;
        osm_window_open_blocking(&w);
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        if (pid < 0)
            osm_die("fork: %m");
        reap(pid);
        uint64_t t = osm_window_close(&w, true, &dist);
        if (i >= o.warmup)
            osm_meas_add(&m, (double)t - osm_timer.overhead, dist);
    }
    m.overhead_subtracted = osm_timer.overhead;
    osm_param_int(&m, "parent_rss_kib", rss_kib());
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
