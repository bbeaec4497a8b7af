/* vm.c - the VM system's costs that lmbench's file & VM table lists.
 *
 * mem.mmap       mmap() of a --size file (default 64M), MAP_SHARED, a byte
 *                written every 16 KiB of its first tenth, munmap() (lmbench's
 *                lat_mmap): per mapping
 * mem.protfault  a write to a page mapped read-only: the fault, the SIGSEGV
 *                it raises, the handler and sigreturn, after which the write
 *                runs again and faults again (lmbench's lat_sig prot): per fault
 * Protection faults are timed in windows of many. The page is read-only for
 * the whole run (one mprotect before any window): within a window the write
 * faults again after each handler returns, and the handler leaves the write
 * by siglongjmp once it has counted the window's faults, so a window holds
 * its faults and one jump, no system call of its own (an mprotect pair per
 * window cost as much as a fault for every few faults in a short window).
 * The handler runs with SA_NODEFER, so leaving it by a jump that does not
 * restore the signal mask leaves SIGSEGV unblocked.
 * mem.protfault.less_catch  each protection-fault window less this process's
 *                own signal catch, window by window: kill(getpid(), SIGUSR1)
 *                to a handler installed with the same flags less
 *                kill(getpid(), 0) (lmbench's lat_sig prot subtracts its
 *                catch figure, measured just before, from each fault; its two
 *                handlers also share their flags). The flags set what a
 *                delivery costs besides the fault: SA_SIGINFO copies the
 *                siginfo out, and without SA_NODEFER the kernel changes the
 *                blocked mask on entry and again at sigreturn.
 * Windows of all four in turn: mmap, send, deliver, fault (the fault's
 * window follows a small one, not the mapping's).
 */
#include "osm.h"
#include "osmfs.h"
#include "osmmem.h"
#include "osmscratch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#define TOUCH_STRIDE (16 * 1024)
static uint64_t size = 64ull << 20;
static const char *dir = "/var/tmp";

static const struct osm_opt opts[] = {
    OSM_OPT_SIZE("size", size, 10 * TOUCH_STRIDE, 1ull << 40, "size of the mapped file"),
    OSM_OPT_STR("dir", dir, "where to make the file", .arg = "DIR"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "mem_vm",
    .summary = "mmap+touch+munmap of a file, and a write-protection fault caught as SIGSEGV.",
    .default_samples = 30,
    .opts = opts,
};

static int fd;

static void body_mmap(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++) {
        char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED)
            osm_die("mmap: %m");
        for (uint64_t off = 0; off < size / 10; off += TOUCH_STRIDE)
            p[off] = (char)off;
        munmap(p, size);
    }
}

#define FAULTS_PER_ITERATION 1
/* both handlers': the catch subtracted must be a delivery of the fault's kind */
#define HANDLER_FLAGS (SA_SIGINFO | SA_NODEFER)
static char *page;
static long pagesize;
static volatile uint64_t caught, target;

static sigjmp_buf out_of_the_write;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)uc;
    if ((char *)si->si_addr != page)
        _exit(3); /* a real crash: not our page */
    if (++caught >= target)
        siglongjmp(out_of_the_write, 1);
}

static volatile uint64_t delivered;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    delivered++;
}

/* ctx: the signal to send (SIGUSR1, or 0 for the sending path alone) */
static void body_kill(void *ctx, uint64_t n)
{
    int sig = *(const int *)ctx;
    pid_t self = getpid();
    for (uint64_t i = 0; i < n; i++)
        kill(self, sig);
}

static void body_prot(void *ctx, uint64_t n)
{
    (void)ctx;
    caught = 0;
    target = n * FAULTS_PER_ITERATION;
    if (!sigsetjmp(out_of_the_write, 0)) /* 0: the mask is not saved, nor restored by the jump */
        *(volatile char *)page = 1;      /* faults n times; the n-th handler jumps back here */
    if (caught != target)
        osm_die("expected %llu faults, caught %llu", (unsigned long long)target, (unsigned long long)caught);
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    static char path[PATH_MAX];
    char err[256];
    fd = osm_scratch_new_file(dir, "vm", path, sizeof path);
    if (fd < 0)
        osm_usage_error("--dir %s: cannot make a file there: %s", dir, strerror(errno));
    if (osm_fs_make_file(path, size, err, sizeof err) != 0)
        osm_usage_error("--dir %s: %s", dir, err);
    pagesize = sysconf(_SC_PAGESIZE);
    page = mmap(NULL, pagesize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (page == MAP_FAILED)
        osm_die("mmap: %m");
    page[0] = 0; /* present: every fault below is a protection fault, not a missing page */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = HANDLER_FLAGS;
    if (sigaction(SIGSEGV, &sa, NULL) != 0)
        osm_die("sigaction: %m");
    if (mprotect(page, pagesize, PROT_READ) != 0)
        osm_die("mprotect: %m");
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = HANDLER_FLAGS;
    if (sigaction(SIGUSR1, &sa, NULL) != 0)
        osm_die("sigaction: %m");
    static const int usr1 = SIGUSR1, none = 0;
    body_kill((void *)&usr1, 10);
    if (delivered != 10)
        osm_die("sent 10 signals to myself, the handler saw %llu", (unsigned long long)delivered);

    enum { MMAP, SEND, DELIVER, PROT, N };
    struct osm_meas m[N];
    osm_meas_init(&m[MMAP], "mem.mmap", o.samples);
    osm_meas_init(&m[SEND], "send", o.samples);
    osm_meas_init(&m[DELIVER], "deliver", o.samples);
    osm_meas_init(&m[PROT], "mem.protfault", o.samples);
    const osm_body bodies[N] = { body_mmap, body_kill, body_kill, body_prot };
    void *const ctxs[N] = { NULL, (void *)&none, (void *)&usr1, NULL };
    osm_run_interleaved(N, m, bodies, ctxs, o.iterations, o.samples, NULL);
    struct osm_meas less;
    osm_meas_init(&less, "mem.protfault.less_catch", o.samples);
    double *catch = calloc(m[PROT].n ? m[PROT].n : 1, sizeof *catch);
    if (!catch)
        osm_die("out of memory");
    size_t nc = 0;
    for (size_t i = 0; i < m[PROT].n && i < m[DELIVER].n && i < m[SEND].n; i++) {
        catch[nc++] = m[DELIVER].v[i] - m[SEND].v[i];
        osm_meas_add(&less, m[PROT].v[i] - catch[nc - 1],
                     m[PROT].disturbed[i] || m[DELIVER].disturbed[i] || m[SEND].disturbed[i]);
    }
    /* how many faults one mapping takes: a write fault maps one page, or
     * more of a large folio, and the file's folio sizes (how its pages came
     * into the cache) set the figure's level */
    struct rusage r0, r1;
    getrusage(RUSAGE_SELF, &r0);
    body_mmap(NULL, 1);
    getrusage(RUSAGE_SELF, &r1);
    osm_param_int(&m[MMAP], "faults_per_mapping", (long long)(r1.ru_minflt - r0.ru_minflt));
    osm_param_num(&m[MMAP], "file_size", (double)size);
    osm_param_int(&m[MMAP], "pages_touched", (long long)((size / 10 + TOUCH_STRIDE - 1) / TOUCH_STRIDE));
    osm_param_int(&m[MMAP], "touch_stride", TOUCH_STRIDE);
    osm_param_str(&m[PROT], "page", "anonymous, present, mprotect(PROT_READ)");
    osm_param_str(&m[PROT], "signal", "SIGSEGV, SA_SIGINFO|SA_NODEFER handler; the last of a window leaves by siglongjmp");
    /* in ns (the samples are in the timer's unit; the harness converts those) */
    double to_ns = osm_timer.kind == OSM_TIMER_TSC ? 1e9 / osm_timer.hz : 1.0;
    osm_param_num(&less, "catch_ns", osm_median(catch, nc) * to_ns);
    osm_param_str(&less, "catch", "kill(getpid(), SIGUSR1) less kill(getpid(), 0), to a handler with the fault's "
                                  "flags (SA_SIGINFO|SA_NODEFER), in windows interleaved with the faults' "
                                  "(lmbench's lat_sig prot)");
    free(catch);
    osm_emit(&m[MMAP]);
    osm_emit(&m[PROT]);
    osm_emit(&less);
    for (int k = 0; k < N; k++)
        osm_meas_free(&m[k]);
    osm_meas_free(&less);
    close(fd);
    osm_scratch_remove(path);
    return 0;
}
