/* record.c - record: run a command with the recorder preloaded, merge its
 * per-process traces into one (docs/iotrace.md). */
#include "commands.h"
#include "iotrace.h"
#include "mpi_launch.h"
#include "osm.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------- record */

/* build/lib/libiotrace.so beside this program's build/bin. */
static void library_path(char *out)
{
    char exe[PATH_MAX], lib[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n < 0)
        iot_fail(1, "cannot find this program's path (/proc/self/exe): %s", strerror(errno));
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(lib, sizeof lib, "%s/../lib/libiotrace.so", exe);
    if (!realpath(lib, out) || access(out, R_OK))
        iot_fail(1, "the recorder library %s is missing (make build/lib/libiotrace.so)", lib);
    if (strpbrk(out, " :"))
        iot_fail(1, "the recorder library's path %s has a space or colon: LD_PRELOAD cannot name it", out);
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[PATH_MAX + 256];
    while (d && (e = readdir(d))) {
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* Every per-process file in dir, merged. Returns -1 (message printed) if one is bad. */
static int merge_dir(const char *dir, struct trace *out)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "iotrace: error: cannot read %s: %s\n", dir, strerror(errno));
        return -1;
    }
    struct trace *parts = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    char path[PATH_MAX + 256], err[512];
    int rc = 0;
    while (rc == 0 && (e = readdir(d))) {
        if (strncmp(e->d_name, "trace.", 6))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            parts = realloc(parts, cap * sizeof *parts);
            if (!parts)
                iot_fail(1, "out of memory");
        }
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (trace_load(path, false, true, &parts[n], err, sizeof err)) {
            fprintf(stderr, "iotrace: error: a recorder's file is bad: %s\n", err);
            rc = -1;
        } else {
            n++;
        }
    }
    closedir(d);
    int m = rc == 0 ? trace_merge(parts, n, out) : 0;
    if (m == -1)
        iot_fail(1, "out of memory");
    if (m == -2)
        iot_fail(1, "a recorder's file repeats a seq or names a parent it does not hold (kept in %s)", dir);
    for (size_t i = 0; rc && i < n; i++)
        trace_free(&parts[i]);
    free(parts);
    return rc;
}

struct preload {
    const char *lib, *dir;
};

/* In the recorded program's child: the recorder preloaded before what LD_PRELOAD had, its files' directory. */
static void preloaded(void *arg)
{
    const struct preload *p = arg;
    char preload[2 * PATH_MAX + 2];
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "%s%s%s", p->lib, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    setenv("IOTRACE_DIR", p->dir, 1);
}

struct record_opts {
    const char *out, *launcher, *impl; /* --out, --launcher, --mpi (checked) */
    unsigned start_timeout;            /* --start-timeout, seconds */
    char **cmd;                        /* the command, NULL-terminated */
};

/* record's options, checked; a bad one is a usage error (exit 2). */
static void record_args(int argc, char **argv, struct record_opts *o)
{
    *o = (struct record_opts){.start_timeout = MPI_START_TIMEOUT};
    bool timeout_given = false;
    const struct osm_opt rows[] = {
        OSM_OPT_STR("out", o->out, "the trace to write", .arg = "TRACE"),
        OSM_OPT_STR("launcher", o->launcher, "an MPI program: the launcher and its arguments, one word",
                    .arg = "\"MPIRUN ARGS\""),
        OSM_OPT_STR("mpi", o->impl, "the MPI the launcher starts", .arg = "openmpi|mpich",
                    .def = "from each rank's environment"),
        OSM_OPT_UINT("start-timeout", o->start_timeout, 0, 86400,
                     "seconds the launcher may take to start every rank", .seen = &timeout_given, .arg = "S"),
        {0},
    };
    const struct osm_command cmd = {
        .name = "iotrace record", .operands = "-- CMD [ARGS...]", .opts = rows, .command_follows = true,
        .summary = "Runs CMD and records its POSIX calls (and its MPI-IO calls, under --launcher) into --out.",
    };
    int i = osm_parse_command(&cmd, argc, argv, NULL);
    if (o->impl)
        o->impl = mpi_check_impl(o->impl);
    if (!o->out || !*o->out)
        osm_usage_error("record needs --out TRACE");
    if (i >= argc)
        osm_usage_error("record needs a command: iotrace record --out TRACE -- CMD [ARGS...]");
    o->cmd = argv + i;
    if (o->impl && !o->launcher)
        osm_usage_error("--mpi goes with --launcher");
    if (timeout_given && !o->launcher)
        osm_usage_error("--start-timeout goes with --launcher");
}

/* Runs the command with the recorder, its files going to dir, and waits for it and every descendant:
 * under the launcher, which starts `iotrace rank` in each rank's place, or with lib preloaded. Its wait
 * status in *status; errno of a command that could not run in *exec_err. True where the launcher's ranks
 * did not start within the start timeout. */
static bool run_recorded(const struct record_opts *o, const char *lib, const char *dir, int *status, int *exec_err)
{
    /* Descendants that outlive CMD are re-parented to us; wait for them too. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    *status = 0;
    *exec_err = 0;
    bool timed_out = false;
    if (o->launcher) {
        char **lv = mpi_launch_argv(o->launcher, "rank", o->impl, dir, o->cmd);
        enum launch_end end;
        *status = mpi_run_launcher(lv, dir, "trace.r0.", o->start_timeout, 0, &end);
        free(lv);
        if (*status < 0)
            *exec_err = -*status;
        else
            timed_out = end == LAUNCH_START_TIMEOUT;
    } else {
        pid_t child = iot_spawn(o->cmd, preloaded, &(struct preload){lib, dir});
        if (child < 0)
            *exec_err = -child;
        else {
            signal(SIGINT, SIG_IGN); /* the program gets the terminal's signals; we merge after */
            signal(SIGQUIT, SIG_IGN);
            while (waitpid(child, status, 0) < 0 && errno == EINTR)
                ;
        }
    }
    while (wait(NULL) > 0 || errno == EINTR)
        ;
    return timed_out;
}

int cmd_record(int argc, char **argv)
{
    struct record_opts o;
    record_args(argc, argv, &o);
    const char *out = o.out, *launcher = o.launcher;
    char **cmd = o.cmd;

    char lib[PATH_MAX];
    if (o.impl)
        mpi_library(o.impl, lib, sizeof lib); /* before anything runs: is that MPI's recorder built? */
    else if (!launcher)
        library_path(lib);
    char tmp[PATH_MAX];
    FILE *f = iot_open_beside(out, tmp, sizeof tmp);
    const char *tmpdir = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/iotrace.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
    if (!mkdtemp(dir) && (unlink(tmp) || 1))
        iot_fail(1, "cannot make a directory for the recorder (%s): %s", dir, strerror(errno));

    int status, exec_err;
    if (run_recorded(&o, lib, dir, &status, &exec_err)) {
        remove_dir(dir);
        fclose(f);
        unlink(tmp);
        mpi_start_timeout_error(launcher, o.start_timeout);
        return 1;
    }
    if (exec_err) {
        remove_dir(dir);
        fclose(f);
        unlink(tmp);
        fprintf(stderr, "iotrace: error: cannot run '%s': %s\n", launcher ? launcher : cmd[0], strerror(exec_err));
        return exec_err == ENOENT ? 127 : 126;
    }

    struct trace t;
    if (merge_dir(dir, &t)) {
        fprintf(stderr, "iotrace: the recorder's files are kept in %s\n", dir);
        fclose(f);
        unlink(tmp);
        return 1;
    }
    char why[1024];
    size_t ranks = 0;
    for (size_t k = 0; k < t.n; k++)
        ranks += trace_calls[t.rec[k].call].kind == TK_MPI_INIT;
    bool launcher_failed = !WIFEXITED(status) || WEXITSTATUS(status);
    if (launcher && !ranks && launcher_failed) {
        fprintf(stderr, "iotrace: error: the launcher '%s' %s %d before any rank was past MPI_Init (its own "
                        "messages are above)\n", launcher, WIFSIGNALED(status) ? "was killed by signal" :
                "exited with status", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
        remove_dir(dir);
        fclose(f);
        unlink(tmp);
        trace_free(&t);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (launcher && mpi_check_ranks(&t, why, sizeof why)) {
        if (t.n) /* the rows that came, for a look */
            fprintf(stderr, "iotrace: error: %s; the recorder's files are kept in %s\n", why, dir);
        else {
            remove_dir(dir);
            fprintf(stderr, "iotrace: error: %s\n", why);
        }
        fclose(f);
        unlink(tmp);
        trace_free(&t);
        return WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status) : 1;
    }
    remove_dir(dir);
    if (trace_write(f, &t) || fclose(f) || rename(tmp, out)) {
        int e = errno;
        unlink(tmp);
        iot_fail(1, "cannot write the trace %s: %s", out, strerror(e));
    }
    struct layout L = layout_of(&t);
    if (launcher)
        fprintf(stderr, "iotrace: %zu calls from %zu ranks (%zu processes, %zu threads) -> %s\n", t.n, ranks,
                L.nprocs, L.nthreads, out);
    else
        fprintf(stderr, "iotrace: %zu calls from %zu processes, %zu threads -> %s\n", t.n, L.nprocs, L.nthreads,
                out);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return WEXITSTATUS(status);
}
