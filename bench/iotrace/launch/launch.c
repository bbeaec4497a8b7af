/* launch.c - the MPI side of the command: which MPI recorder a rank takes,
 * `iotrace rank` (what the launcher starts in each rank's place: the
 * recorder preloaded, then the program), the launcher's command line for
 * `iotrace record --launcher`, and the check of a merged MPI trace's ranks
 * (docs/iotrace.md, "MPI-IO"). */
#include "commands.h"
#include "iotrace.h"
#include "mpi_launch.h"
#include "osm.h"
#include "prepare.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const impls[] = {"openmpi", "mpich"};

/* This program's directory (build/bin). */
static void self_dir(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len < 0)
        iot_fail(1, "cannot find this program's path (/proc/self/exe): %s", strerror(errno));
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    snprintf(out, n, "%s", exe);
}

const char *mpi_check_impl(const char *name)
{
    for (size_t i = 0; i < sizeof impls / sizeof impls[0]; i++)
        if (!strcmp(name, impls[i]))
            return impls[i];
    osm_usage_error("--mpi: '%s' is not an MPI this iotrace records (openmpi, mpich)", name);
}

/* The MPI that started this process, from what its launcher put in the
 * environment: Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE; srun
 * --mpi=pmix sets PMIX_RANK, the PMIx client that Debian's Open MPI speaks
 * (its MPICH speaks PMI-1 only); MPICH's Hydra and srun --mpi=pmi2 set
 * PMI_RANK or PMI_SIZE. NULL where none is there. */
static const char *impl_of_env(void)
{
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK"))
        return "openmpi";
    if (getenv("PMI_RANK") || getenv("PMI_SIZE"))
        return "mpich";
    return NULL;
}

void mpi_library(const char *impl, char *out, size_t n)
{
    char dir[PATH_MAX], lib[PATH_MAX + 64];
    self_dir(dir, sizeof dir);
    snprintf(lib, sizeof lib, "%s/../lib/libiotrace-mpi-%s.so", dir, impl);
    if (!realpath(lib, out) || access(out, R_OK))
        iot_fail(1, "the MPI-IO recorder for %s is not built (%s): install %s and run make",
                 !strcmp(impl, "openmpi") ? "Open MPI" : "MPICH", lib,
                 !strcmp(impl, "openmpi") ? "openmpi-bin and libopenmpi-dev" : "mpich and libmpich-dev");
    (void)n;
    if (strpbrk(out, " :"))
        iot_fail(1, "the recorder library's path %s has a space or colon: LD_PRELOAD cannot name it", out);
}

/* iotrace rank --dir DIR [--mpi IMPL] -- CMD [ARGS...] */
int cmd_rank(int argc, char **argv)
{
    const char *dir = NULL, *impl = NULL;
    const struct osm_opt rows[] = {
        OSM_OPT_STR("dir", dir, "where the rank's trace files go", .arg = "DIR"),
        OSM_OPT_STR("mpi", impl, "the MPI that started this rank", .arg = "openmpi|mpich",
                    .def = "from the environment"),
        {0},
    };
    const struct osm_command cmd = {
        .name = "iotrace rank", .operands = "-- CMD [ARGS...]", .opts = rows, .command_follows = true,
        .summary = "In each rank's place under an MPI launcher: runs CMD with the MPI-IO recorder.",
    };
    int i = osm_parse_command(&cmd, argc, argv, NULL);
    if (impl)
        impl = mpi_check_impl(impl);
    if (!dir || !*dir || i >= argc)
        osm_usage_error("rank runs in each rank's place under an MPI launcher: iotrace rank --dir DIR [--mpi "
                        "openmpi|mpich] -- CMD [ARGS...] (iotrace record --launcher starts it)");
    if (!impl)
        impl = impl_of_env();
    if (!impl)
        iot_fail(2, "rank: cannot tell which MPI started this process (no OMPI_COMM_WORLD_SIZE, PMIX_RANK, "
                    "PMI_RANK or PMI_SIZE in its environment; under srun, give it --mpi=pmix for Open MPI "
                    "or --mpi=pmi2 for MPICH): give --mpi openmpi|mpich");
    char lib[PATH_MAX], preload[2 * PATH_MAX + 2];
    mpi_library(impl, lib, sizeof lib);
    const char *old = getenv("LD_PRELOAD");
    snprintf(preload, sizeof preload, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_PRELOAD", preload, 1);
    setenv("IOTRACE_DIR", dir, 1);
    setenv("IOTRACE_MPI", "1", 1);
    execvp(argv[i], argv + i);
    iot_fail(errno == ENOENT ? 127 : 126, "rank: cannot run '%s': %s", argv[i], strerror(errno));
}

char **mpi_launch_argv(const char *launcher, const char *sub, const char *impl, const char *dir, char **cmd)
{
    size_t words = 0, ncmd = 0;
    char *copy = strdup(launcher);
    if (!copy)
        iot_fail(1, "out of memory");
    for (char *p = copy; *p;) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        words++;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    if (!words)
        osm_usage_error("--launcher is empty (for example --launcher \"mpirun -np 4\")");
    while (cmd[ncmd])
        ncmd++;
    char **out = iot_xcalloc(words + ncmd + 8, sizeof *out);
    size_t k = 0;
    for (char *save = NULL, *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
        out[k++] = w;
    static char self[PATH_MAX + 16];
    self_dir(self, sizeof self - 16);
    strcat(self, "/iotrace");
    out[k++] = self;
    out[k++] = (char *)sub;
    if (dir) {
        out[k++] = "--dir";
        out[k++] = (char *)dir;
    }
    if (impl) {
        out[k++] = "--mpi";
        out[k++] = (char *)impl;
    }
    out[k++] = "--";
    for (size_t j = 0; j < ncmd; j++)
        out[k++] = cmd[j];
    out[k] = NULL;
    return out;
}

/* ------------------------------------------------- the launcher's run */

static volatile sig_atomic_t pending; /* a signal iotrace got while the launcher ran, to pass on */

static void take(int sig) { pending = sig; }

/* A file in dir whose name starts with prefix: rank 0 is past MPI_Init. */
static bool started(const char *dir, const char *prefix)
{
    DIR *d = opendir(dir);
    if (!d)
        return false;
    bool yes = false;
    for (struct dirent *e; !yes && (e = readdir(d));)
        yes = !strncmp(e->d_name, prefix, strlen(prefix));
    closedir(d);
    return yes;
}

static double mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* In the launcher's child: a process group of its own (ended as one), the terminal's signals as default. */
static void launcher_group(void *unused)
{
    (void)unused;
    setpgid(0, 0);
    signal(SIGINT, SIG_DFL);
    signal(SIGQUIT, SIG_DFL);
}

int mpi_run_launcher(char **lv, const char *mark_dir, const char *mark_prefix, unsigned start_timeout,
                     unsigned run_timeout, enum launch_end *end)
{
    *end = LAUNCH_ENDED;
    pid_t child = iot_spawn(lv, launcher_group, NULL);
    if (child < 0)
        return child;
    setpgid(child, child); /* as the child does: whichever runs first */
    struct sigaction sa = {.sa_handler = take}, old[3];
    const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &sa, &old[k]);
    double t0 = mono(), up_at = 0, term_at = 0;
    bool up = start_timeout == 0;
    if (up)
        up_at = t0;
    int status = 0;
    for (;;) {
        pid_t w = waitpid(child, &status, WNOHANG);
        if (w == child)
            break;
        if (w < 0 && errno != EINTR)
            break;
        if (pending) {
            kill(-child, pending);
            pending = 0;
        }
        if (!up && started(mark_dir, mark_prefix))
            up = true, up_at = mono();
        if (*end == LAUNCH_ENDED && ((!up && mono() - t0 > start_timeout) ||
                                     (up && run_timeout && mono() - up_at > run_timeout))) {
            *end = up ? LAUNCH_RUN_TIMEOUT : LAUNCH_START_TIMEOUT;
            term_at = mono();
            kill(-child, SIGTERM);
        }
        if (*end != LAUNCH_ENDED && mono() - term_at > 5)
            kill(-child, SIGKILL);
        nanosleep(&(struct timespec){.tv_nsec = 50000000}, NULL);
    }
    kill(-child, SIGKILL); /* whatever the launcher left in its group, gone before we return (5 s at most) */
    for (double until = mono() + 5; kill(-child, 0) == 0 && mono() < until;)
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    for (int k = 0; k < 3; k++)
        sigaction(sigs[k], &old[k], NULL);
    return status;
}

void mpi_start_timeout_error(const char *launcher, unsigned start_timeout)
{
    fprintf(stderr,
            "iotrace: error: rank 0 was not past MPI_Init %u s after '%s' started (--start-timeout): a host the "
            "launcher could not start, or a rank that cannot reach the others? (the launcher's own messages are "
            "above); the launcher and what it started here were ended\n",
            start_timeout, launcher);
}

int mpi_check_ranks(const struct trace *t, char *err, size_t n)
{
    long long size = -1;
    size_t inits = 0;
    for (size_t i = 0; i < t->n; i++)
        if (trace_calls[t->rec[i].call].kind == TK_MPI_INIT) {
            char v[32];
            trace_arg(t->rec[i].args, "size", v, sizeof v);
            long long s = strtoll(v, NULL, 10);
            if (size >= 0 && s != size) {
                snprintf(err, n, "the ranks disagree on the number of ranks (%lld and %lld)", size, s);
                return -1;
            }
            size = s;
            inits++;
        }
    if (size < 0) {
        snprintf(err, n, "no rank called MPI_Init with the recorder loaded (is CMD an MPI program linked "
                         "dynamically against the MPI the launcher starts?)");
        return -1;
    }
    bool *seen = iot_xcalloc((size_t)size + 1, sizeof *seen);
    for (size_t i = 0; i < t->n; i++)
        if (trace_calls[t->rec[i].call].kind == TK_MPI_INIT && t->rec[i].rank < size)
            seen[t->rec[i].rank] = true;
    int len = snprintf(err, n, "the files of ranks");
    long long missing = 0;
    for (long long r = 0; r < size; r++)
        if (!seen[r] && len > 0 && (size_t)len < n) {
            if (missing++ < 20)
                len += snprintf(err + len, n - (size_t)len, " %lld", r);
        }
    free(seen);
    if (missing) {
        if ((size_t)len < n)
            snprintf(err + len, n - (size_t)len,
                     " of %lld are missing: they were not sent to rank 0's host at MPI_Finalize (a rank "
                     "killed, or MPI_Finalize not called), or rank 0 ran on another host than iotrace "
                     "record (put rank 0 on this host, or TMPDIR on a file system all hosts see)",
                     size);
        return -1;
    }
    (void)inits;
    return 0;
}

/* iotrace replay-rank [--mpi IMPL] -- ARGS: in each rank's place, the
 * replayer built for the MPI that started it. */
int cmd_replay_rank(int argc, char **argv)
{
    const char *impl = NULL;
    const struct osm_opt rows[] = {
        OSM_OPT_STR("mpi", impl, "the MPI that started this rank", .arg = "openmpi|mpich",
                    .def = "from the environment"),
        {0},
    };
    const struct osm_command cmd = {
        .name = "iotrace replay-rank", .operands = "-- ARGS...", .opts = rows, .command_follows = true,
        .summary = "In each rank's place under an MPI launcher: the MPI-IO replayer built for its MPI, with ARGS.",
    };
    int i = osm_parse_command(&cmd, argc, argv, NULL);
    if (impl)
        impl = mpi_check_impl(impl);
    if (!impl)
        impl = impl_of_env();
    if (!impl)
        iot_fail(2, "replay-rank: cannot tell which MPI started this process (under srun, give it --mpi=pmix "
                    "for Open MPI or --mpi=pmi2 for MPICH): give --mpi openmpi|mpich");
    char dir[PATH_MAX], prog[PATH_MAX + 64];
    self_dir(dir, sizeof dir);
    snprintf(prog, sizeof prog, "%s/iotrace-mpi-replay-%s", dir, impl);
    if (access(prog, X_OK))
        iot_fail(1, "the MPI-IO replayer for %s is not built (%s): install %s and run make",
                 !strcmp(impl, "openmpi") ? "Open MPI" : "MPICH", prog,
                 !strcmp(impl, "openmpi") ? "openmpi-bin and libopenmpi-dev" : "mpich and libmpich-dev");
    char **av = iot_xcalloc((size_t)(argc - i) + 2, sizeof *av);
    av[0] = prog;
    for (int k = i; k < argc; k++)
        av[1 + k - i] = argv[k];
    execv(prog, av);
    iot_fail(126, "replay-rank: cannot run %s: %s", prog, strerror(errno));
}

/* The files an MPI replay must find: a file the program opened without
 * MPI_MODE_CREATE (1 in both Open MPI and MPICH) and read, as large as it
 * was at that open (size_at_open), of random data; every other DIR/f<id>
 * of an MPI file is removed first. Returns the bytes written. */
long long mpi_prepare(const char *name, const struct trace *t, int dirfd, const char *dir, long long limit)
{
    size_t nfiles = 0;
    for (size_t i = 0; i < t->n; i++)
        nfiles = (size_t)t->rec[i].file + 1 > nfiles ? (size_t)t->rec[i].file + 1 : nfiles;
    long long *size = iot_xcalloc(nfiles + 1, sizeof *size), total = 0;
    const struct trace_rec *most = NULL; /* the open of the largest file found there */
    bool *seen = iot_xcalloc(nfiles + 1, sizeof *seen), *mpi = iot_xcalloc(nfiles + 1, sizeof *mpi);
    for (size_t i = 0; i < t->n; i++) {
        const struct trace_rec *r = &t->rec[i];
        if (r->call != TC_MPI_FILE_OPEN && r->call != TC_MPI_FILE_DELETE)
            continue;
        mpi[r->file] = true;
        if (seen[r->file] || r->call != TC_MPI_FILE_OPEN)
            continue;
        seen[r->file] = true;
        char v[32];
        trace_arg(r->args, "size_at_open", v, sizeof v);
        if (r->ret == 0 && !(r->flags & 1) && v[0]) {
            char *end;
            errno = 0;
            size[r->file] = strtoll(v, &end, 10);
            if (errno || *end || size[r->file] < 0)
                iot_fail(2, "%s:%zu: size_at_open=%s is not a file size", name, line_of(r), v);
            if (!most || size[r->file] > size[most->file])
                most = r;
        }
    }
    for (size_t f = 0; f < nfiles; f++)
        total = mpi[f] && size[f] > LLONG_MAX - total ? LLONG_MAX : total + (mpi[f] ? size[f] : 0);
    char why[PATH_MAX + 64];
    snprintf(why, sizeof why, "%s:%zu", name, most ? line_of(most) : (size_t)0);
    prepare_check(dir, total, limit, most ? why : name);
    char *buf = iot_xcalloc(1, 1 << 20);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < (1 << 20) / 8; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        memcpy(buf + 8 * i, &s, 8);
    }
    prepare_begin(dirfd);
    for (size_t f = 0; f < nfiles; f++) {
        if (!mpi[f])
            continue;
        char name[32];
        snprintf(name, sizeof name, "f%zu", f);
        unlinkat(dirfd, name, 0);
        if (size[f])
            prepare_fill(name, size[f], buf);
    }
    prepare_end();
    free(buf), free(size), free(seen), free(mpi);
    return total;
}
