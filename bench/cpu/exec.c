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

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *program;

static const struct osm_opt opts[] = {
    OSM_OPT_STR("program", program, "the program to start",
                .def = "this binary with --hello, which prints a line and exits", .arg = "PATH"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "cpu_exec",
    .summary = "fork+execve+wait of a small program, directly and through /bin/sh -c.",
    .default_samples = 100,
    .one_event = "one program start",
    .opts = opts,
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
    uint64_t t = osm_window_close(&w, &dist);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        osm_die("%s did not run to a clean exit (status %d)", sh ? cmd : argv_prog[0], st);
    if (keep)
        osm_meas_add(m, (double)t - osm_timer.overhead, dist);
}

/* Whether this system can execute the program: 0, or the errno its execv
 * failed with (ENOEXEC under qemu-user without binfmt_misc, for one). */
static int exec_errno(void)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) != 0)
        osm_die("pipe2: %m");
    pid_t pid = fork();
    if (pid < 0)
        osm_die("fork: %m");
    if (pid == 0) {
        close(p[0]);
        close(1);
        execv(argv_prog[0], argv_prog);
        int e = errno;
        ssize_t w = write(p[1], &e, sizeof e);
        (void)w;
        _exit(127);
    }
    close(p[1]);
    int e = 0;
    ssize_t n = read(p[0], &e, sizeof e); /* 0 bytes: the exec closed the pipe */
    close(p[0]);
    waitpid(pid, NULL, 0);
    return n == (ssize_t)sizeof e ? e : 0;
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
    if (program && access(program, X_OK) != 0)
        osm_usage_error("--program %s: not an executable file", program);
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

    int e = exec_errno();
    if (e) {
        char why[PATH_MAX + 128];
        snprintf(why, sizeof why, "cannot execute %s here: %s", argv_prog[0], strerror(e));
        osm_refuse("cpu.proc_exec", why);
        osm_refuse("cpu.proc_sh", why);
        return 0;
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
