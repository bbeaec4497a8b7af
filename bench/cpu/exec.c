/* exec.c - starting a program (lmbench's lat_proc exec and shell).
 *
 * cpu.proc_exec  fork(); the child closes its standard output and execve()s a
 *                small program, which writes a line (to the closed output)
 *                and exits; the parent waitpid()s
 * cpu.proc_sh    the same, the child running /bin/sh -c PROGRAM instead
 * The program is this probe's own binary in its --hello mode (dynamically
 * linked as every osmeter probe), or --program PATH. One start per sample,
 * the two kinds taken in turn; everything runs on the probe's CPU (a child
 * inherits its parent's affinity).
 */
#include "osm.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *program;

static int on_extra(const char *name, const char *v)
{
    if (strcmp(name, "program"))
        return -1;
    if (access(v, X_OK) != 0)
        osm_usage_error("--program %s: not an executable file", v);
    program = v;
    return 0;
}

static const struct osm_extra_opt extra[] = {
    { "program", true, "the program to start (default: this binary with --hello, which prints a line and exits)" },
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "cpu_exec",
    .summary = "fork+execve+wait of a small program, directly and through /bin/sh -c.",
    .default_samples = 100,
    .default_iterations = 1,
    .extra = extra,
    .on_extra = on_extra,
};

static char *argv_prog[3], cmd[PATH_MAX + 16];

static void start(bool sh, struct osm_meas *m, bool keep)
{
    struct osm_window w;
    bool dist;
    osm_window_open_blocking(&w);
    pid_t pid = fork();
    if (pid == 0) {
        close(1);
        if (sh)
            execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        else
            execv(argv_prog[0], argv_prog);
        _exit(127);
    }
    if (pid < 0)
        osm_die("fork: %m");
    int st;
    if (waitpid(pid, &st, 0) != pid)
        osm_die("waitpid: %m");
    uint64_t t = osm_window_close(&w, true, &dist);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        osm_die("%s did not run to a clean exit (status %d)", sh ? cmd : argv_prog[0], st);
    if (keep)
        osm_meas_add(m, (double)t - osm_timer.overhead, dist);
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--hello")) {
        ssize_t r = write(1, "Hello world\n", 12);
        (void)r;
        return 0;
    }
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    if (o.iterations != 1)
        osm_usage_error("--iterations: a sample is one program start; only 1 is allowed");
    static char self[PATH_MAX];
    if (!program) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            osm_die("cannot find my own binary: %m");
        self[n] = 0;
        argv_prog[0] = self;
        argv_prog[1] = "--hello";
        snprintf(cmd, sizeof cmd, "%s --hello", self);
    } else {
        argv_prog[0] = (char *)program;
        snprintf(cmd, sizeof cmd, "%s", program);
    }

    struct osm_meas m[2];
    osm_meas_init(&m[0], "cpu.proc_exec", o.samples);
    osm_meas_init(&m[1], "cpu.proc_sh", o.samples);
    for (size_t i = 0; i < o.warmup + o.samples; i++) {
        start(false, &m[0], i >= o.warmup);
        start(true, &m[1], i >= o.warmup);
    }
    for (int k = 0; k < 2; k++) {
        m[k].single_shot = true;
        m[k].overhead_subtracted = osm_timer.overhead;
        osm_param_str(&m[k], "program", k ? cmd : argv_prog[0]);
        if (k)
            osm_param_str(&m[k], "shell", "/bin/sh");
        osm_emit(&m[k]);
        osm_meas_free(&m[k]);
    }
    return 0;
}
