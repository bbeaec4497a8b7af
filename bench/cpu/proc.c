/* proc.c - process creation.
 *
 * cpu.proc_create       fork() until the first of parent or child runs: both
 *                       take an end stamp as soon as fork returns in them; the
 *                       child sends its stamp through a pipe; the sample is
 *                       the earlier of the two minus the begin stamp (the
 *                       pipe method of the CSE 221 report in shared/seeds).
 * cpu.proc_create_wait  fork(), the child _exit(0)s, the parent waitpid()s.
 *                       --child-exit exit: the child calls libc's exit()
 *                       instead, as lmbench's lat_proc does: atexit handlers
 *                       and stdio's cleanup run in the child and write to
 *                       pages it shares copy-on-write with its parent.
 * One fork per sample. Both sides are pinned to the same CPU (a child
 * inherits its parent's affinity).
 *
 * fork copies the parent's page tables, so its cost grows with the parent's
 * resident memory: params record the parent's RSS and mapping count, and
 * --parent-mb 1,16,256 adds a series of cpu.proc_create_wait over parents
 * grown by that many MiB of touched anonymous memory (lmbench's lat_proc
 * forks from its own, larger, benchmark process: choose its size to
 * reproduce its figure).
 */
#include "osm.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

static uint64_t parent_mb[16];
static size_t nparent;
static int child_exit; /* 0: _exit(), 1: libc's exit() */

static const struct osm_opt opts[] = {
    OSM_OPT_LIST("parent-mb", parent_mb, nparent, 0, 65536,
                 "also time fork+exit+wait from parents grown by these MiB, e.g. 1,16,256 (a series)",
                 .def = "none"),
    OSM_OPT_CHOICE("child-exit", child_exit, "_exit|exit",
                   "how the forked child ends in fork+exit+wait: _exit() (the system call), or libc's exit() as lmbench's lat_proc"),
    { 0 },
};

static long maps_count(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    long n = 0;
    int c;
    if (!f)
        return -1;
    while ((c = fgetc(f)) != EOF)
        n += c == '\n';
    fclose(f);
    return n;
}

static void fork_wait_samples(struct osm_meas *m, size_t warmup, size_t samples, double *out, bool *dout);

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
    .one_event = "one fork",
    .opts = opts,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);

    struct osm_meas m;
    osm_meas_init(&m, "cpu.proc_create", o.samples);
    m.single_shot = true;
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
        osm_sample_span(t0, first, 0); /* the parent's time, from its stamp to the first end stamp */
        osm_meas_add(&m, (double)(first - t0) - osm_timer.overhead, dist);
    }
    m.overhead_subtracted = osm_timer.overhead;
    osm_param_int(&m, "child_ran_first", (long long)child_first);
    osm_param_int(&m, "parent_rss_kib", rss_kib());
    osm_emit(&m);
    osm_meas_free(&m);

    osm_meas_init(&m, "cpu.proc_create_wait", o.samples);
    m.single_shot = true;
    fflush(NULL); /* nothing buffered for a child's exit() to write again */
    fork_wait_samples(&m, o.warmup, o.samples, NULL, NULL);
    m.overhead_subtracted = osm_timer.overhead;
    osm_param_str(&m, "child_exit", child_exit ? "exit" : "_exit");
    osm_param_int(&m, "parent_rss_kib", rss_kib());
    osm_param_int(&m, "parent_mappings", maps_count());
    if (nparent) {
        /* the same, from parents grown by touched anonymous memory */
        size_t per = o.samples < 50 ? o.samples : 50;
        osm_meas_series(&m, "parent MiB added", m.unit, nparent, per);
        struct json *rss = osm_param(&m, "series_parent_rss_kib");
        json_arr(rss);
        for (size_t k = 0; k < nparent; k++) {
            size_t len = (size_t)parent_mb[k] << 20;
            char *mem = len ? mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
            if (mem == MAP_FAILED)
                osm_die("--parent-mb %llu: mmap: %m", (unsigned long long)parent_mb[k]);
            if (len) {
                madvise(mem, len, MADV_NOHUGEPAGE); /* 4 KiB pages: page tables as a program's heap has them */
                memset(mem, 1, len);
            }
            json_int(rss, rss_kib());
            m.sx[k] = (double)parent_mb[k];
            fork_wait_samples(NULL, o.warmup, per, &m.sy[k * per], &m.sy_disturbed[k * per]);
            if (len)
                munmap(mem, len);
        }
        json_arr_end(rss);
    }
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}

/* fork, the child _exit(0)s (or exit(0)s), the parent waits: into m, or into out/dout */
static void fork_wait_samples(struct osm_meas *m, size_t warmup, size_t samples, double *out, bool *dout)
{
    for (size_t i = 0; i < warmup + samples; i++) {
        struct osm_window w;
        bool dist;
        osm_window_open_blocking(&w);
        pid_t pid = fork();
        if (pid == 0) {
            if (child_exit)
                exit(0);
            _exit(0);
        }
        if (pid < 0)
            osm_die("fork: %m");
        reap(pid);
        uint64_t t = osm_window_close(&w, &dist);
        if (i < warmup)
            continue;
        double v = (double)t - osm_timer.overhead;
        if (m)
            osm_meas_add(m, v, dist);
        else {
            out[i - warmup] = v;
            dout[i - warmup] = dist;
        }
    }
}
