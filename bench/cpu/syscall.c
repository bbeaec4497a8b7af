/* syscall.c - the cheapest system calls, and the "null I/O" pair.
 *
 * cpu.syscall.getppid       SYS_getppid through the syscall instruction itself
 *                           (no libc wrapper, nothing cached in user space)
 * cpu.syscall.gettid        SYS_gettid, the same way: a second cheap call
 * cpu.syscall.getppid.libc  getppid() through libc, as lmbench's lat_syscall null
 *                           calls it: what a C program pays
 * cpu.syscall.getcwd        getcwd() into a buffer (the CSE 221 reports' null call)
 * cpu.syscall.read          read() of 1 byte from /dev/zero
 * cpu.syscall.write         write() of 1 byte to /dev/null
 * cpu.syscall.null_io       their mean, window pair by window pair (lmbench's "null I/O")
 * Per call, batched; the timer's overhead per window subtracted. The six
 * calls' windows are taken in turn, so drift hits them alike.
 */
#include "osm.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline long raw_syscall0(long nr)
{
#if defined(__x86_64__)
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
    return ret;
#else
    return syscall(nr);
#endif
}

static void body_getppid(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++) {
        long r = raw_syscall0(SYS_getppid);
        OSM_USE(r);
    }
}

static void body_gettid(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++) {
        long r = raw_syscall0(SYS_gettid);
        OSM_USE(r);
    }
}

static void body_getppid_libc(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++) {
        pid_t r = getppid();
        OSM_USE(r);
    }
}

static void body_getcwd(void *ctx, uint64_t n)
{
    char *buf = ctx;
    for (uint64_t i = 0; i < n; i++) {
        if (!getcwd(buf, PATH_MAX))
            osm_die("getcwd: %m");
        OSM_BARRIER();
    }
}

static void body_read(void *ctx, uint64_t n)
{
    int fd = *(int *)ctx;
    char c;
    for (uint64_t i = 0; i < n; i++)
        if (read(fd, &c, 1) != 1)
            osm_die("read /dev/zero: %m");
}

static void body_write(void *ctx, uint64_t n)
{
    int fd = *(int *)ctx;
    char c = 0;
    for (uint64_t i = 0; i < n; i++)
        if (write(fd, &c, 1) != 1)
            osm_die("write /dev/null: %m");
}

static const struct osm_probe_info info = {
    .name = "cpu_syscall",
    .summary = "Cost of minimal system calls (getppid raw and through libc, gettid, getcwd) and of "
               "1-byte read and write on /dev/zero and /dev/null.",
    .default_samples = 100,
};

enum { GETPPID, GETTID, LIBC, GETCWD, READ, WRITE, N };

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    if (raw_syscall0(SYS_getppid) != getppid())
        osm_die("raw getppid returned a different value than libc's: the syscall path is broken");
    int zero = open("/dev/zero", O_RDONLY), null = open("/dev/null", O_WRONLY);
    if (zero < 0 || null < 0)
        osm_die("cannot open /dev/zero and /dev/null: %m");
    static char cwd[PATH_MAX];

    static const char *ids[N] = { "cpu.syscall.getppid", "cpu.syscall.gettid", "cpu.syscall.getppid.libc",
                                  "cpu.syscall.getcwd", "cpu.syscall.read", "cpu.syscall.write" };
    const osm_body bodies[N] = { body_getppid, body_gettid, body_getppid_libc, body_getcwd, body_read, body_write };
    void *const ctxs[N] = { NULL, NULL, NULL, cwd, &zero, &null };
    struct osm_meas m[N + 1];
    for (int k = 0; k < N; k++)
        osm_meas_init(&m[k], ids[k], o.samples);
    osm_run_interleaved(N, m, bodies, ctxs, o.iterations, o.samples, NULL);
    osm_meas_init(&m[N], "cpu.syscall.null_io", o.samples);
    for (size_t i = 0; i < m[READ].n && i < m[WRITE].n; i++)
        osm_meas_add(&m[N], (m[READ].v[i] + m[WRITE].v[i]) / 2, m[READ].disturbed[i] || m[WRITE].disturbed[i]);
    m[N].overhead_subtracted = (m[READ].overhead_subtracted + m[WRITE].overhead_subtracted) / 2;
#if defined(__x86_64__)
    const char *raw = "syscall instruction";
#else
    const char *raw = "syscall(2)";
#endif
    osm_param_str(&m[GETPPID], "entry", raw);
    osm_param_str(&m[GETTID], "entry", raw);
    osm_param_str(&m[LIBC], "entry", "libc getppid()");
    osm_param_str(&m[GETCWD], "cwd", getcwd(cwd, sizeof cwd) ? cwd : "?");
    osm_param_str(&m[READ], "file", "/dev/zero");
    osm_param_str(&m[WRITE], "file", "/dev/null");
    osm_param_str(&m[N], "method", "(cpu.syscall.read + cpu.syscall.write) / 2, window pair by window pair "
                                   "(lmbench's null I/O)");
    for (int k = 0; k <= N; k++) {
        osm_emit(&m[k]);
        osm_meas_free(&m[k]);
    }
    close(zero);
    close(null);
    return 0;
}
