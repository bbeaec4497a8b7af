/* syscall.c - the cheapest system calls: a real kernel entry every time.
 *
 * cpu.syscall.getppid  SYS_getppid through the syscall instruction itself
 *                      (no libc wrapper, nothing cached in user space)
 * cpu.syscall.gettid   SYS_gettid, the same way: a second cheap call
 * Per call, batched; the timer's overhead per window subtracted.
 */
#include "osm.h"

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

static const struct osm_probe_info info = {
    .name = "cpu_syscall",
    .summary = "Cost of a minimal system call (getppid, gettid) entered with the syscall instruction.",
    .default_samples = 100,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    if (raw_syscall0(SYS_getppid) != getppid())
        osm_die("raw getppid returned a different value than libc's: the syscall path is broken");

    struct { const char *id; osm_body body; } calls[] = {
        { "cpu.syscall.getppid", body_getppid },
        { "cpu.syscall.gettid", body_gettid },
    };
    for (size_t k = 0; k < 2; k++) {
        struct osm_meas m;
        osm_meas_init(&m, calls[k].id, o.samples);
        osm_run_batched(&m, calls[k].body, NULL, o.iterations, o.samples, 0);
#if defined(__x86_64__)
        osm_param_str(&m, "entry", "syscall instruction");
#else
        osm_param_str(&m, "entry", "syscall(2)");
#endif
        osm_emit(&m);
        osm_meas_free(&m);
    }
    return 0;
}
