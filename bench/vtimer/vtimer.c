/* vtimer.c - see vtimer.h. */
#include "vtimer.h"

#include <linux/perf_event.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define VT_MAGIC 0x56544D52u /* live timer */
#define VT_DEAD 0xDEADBEEFu
#define VT_SLOTS 64          /* threads in one global timer at once */

struct slot {
    _Atomic pid_t tid;
    uint64_t start;
};

struct vt_timer {
    _Atomic unsigned magic;
    enum vt_kind kind;
    enum vt_scope scope;
    pid_t owner;              /* private: the allocating thread */
    bool running;             /* private */
    uint64_t start;           /* private */
    _Atomic uint64_t total;   /* ns */
    struct slot slots[VT_SLOTS]; /* global: per-thread starts */
};

/* ------------------------------------------------------------ clocks */

static double tsc_ns_per_tick;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static inline uint64_t tsc_now(void)
{
#if defined(__x86_64__)
    uint32_t lo, hi, aux;
    __asm__ volatile("lfence\n\trdtscp" : "=a"(lo), "=d"(hi), "=c"(aux) : : "memory");
    return ((uint64_t)hi << 32) | lo;
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

__attribute__((unused)) static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void calibrate(void)
{
#if defined(__x86_64__)
    uint64_t n0 = mono_ns(), t0 = tsc_now();
    struct timespec d = { 0, 20 * 1000 * 1000 };
    nanosleep(&d, NULL);
    uint64_t n1 = mono_ns(), t1 = tsc_now();
    tsc_ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
#else
    tsc_ns_per_tick = 1.0;
#endif
}

/* Virtual time of the calling thread. The perf page is per thread: opened
 * on the thread's first use, kept for its life. */
static __thread struct perf_event_mmap_page *page;
static __thread int page_tried;
static _Atomic int mode_perf = -1; /* -1 unknown, 0 cputime, 1 perf */

static struct perf_event_mmap_page *thread_page(void)
{
    if (page_tried)
        return page;
    page_tried = 1;
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.exclude_kernel = 0;
    int fd = (int)syscall(__NR_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0)
        return NULL;
    void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return NULL;
    struct perf_event_mmap_page *pg = p;
    if (!pg->cap_user_time) { /* the page cannot turn the TSC into time here */
        munmap(p, (size_t)sysconf(_SC_PAGESIZE));
        return NULL;
    }
    page = pg;
    return page;
}

static uint64_t thread_cputime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* On-CPU time of this thread from the perf page: the kernel's running time
 * up to the last switch in, plus the TSC since then, scaled as the page
 * says (the method of linux/perf_event.h's comments). */
static uint64_t perf_time(struct perf_event_mmap_page *pg)
{
    uint32_t seq;
    uint64_t running, delta;
    do {
        seq = pg->lock;
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
        running = pg->time_running;
        uint64_t cyc = tsc_now();
        uint64_t quot = cyc >> pg->time_shift, rem = cyc & (((uint64_t)1 << pg->time_shift) - 1);
        delta = pg->time_offset + quot * pg->time_mult + ((rem * pg->time_mult) >> pg->time_shift);
        __atomic_thread_fence(__ATOMIC_ACQUIRE);
    } while (pg->lock != seq);
    return running + delta;
}

static uint64_t vnow(void)
{
    struct perf_event_mmap_page *pg = thread_page();
    if (pg) {
        atomic_store(&mode_perf, 1);
        return perf_time(pg);
    }
    atomic_store(&mode_perf, 0);
    return thread_cputime();
}

static inline uint64_t now(const vt_timer *t)
{
    return t->kind == VT_VIRTUAL ? vnow() : tsc_now();
}

static inline uint64_t to_ns(const vt_timer *t, uint64_t d)
{
    return t->kind == VT_VIRTUAL ? d : (uint64_t)((double)d * tsc_ns_per_tick);
}

/* ------------------------------------------------------------ the API */

static pid_t self(void)
{
    static __thread pid_t tid;
    if (!tid)
        tid = (pid_t)syscall(SYS_gettid);
    return tid;
}

static int check(const vt_timer *t)
{
    if (!t || atomic_load(&((vt_timer *)t)->magic) != VT_MAGIC)
        return VT_EINVAL;
    if (t->scope == VT_PRIVATE && t->owner != self())
        return VT_EOWNER;
    return VT_OK;
}

int vt_alloc(vt_timer **out, enum vt_kind kind, enum vt_scope scope)
{
    if (!out || (kind != VT_PHYSICAL && kind != VT_VIRTUAL) || (scope != VT_PRIVATE && scope != VT_GLOBAL))
        return VT_EINVAL;
    pthread_once(&once, calibrate);
    vt_timer *t = calloc(1, sizeof *t);
    if (!t)
        return VT_ENOMEM;
    t->kind = kind;
    t->scope = scope;
    t->owner = self();
    atomic_store(&t->magic, VT_MAGIC);
    if (kind == VT_VIRTUAL)
        vnow(); /* settle the mode, and the page, now rather than in the first start */
    *out = t;
    return VT_OK;
}

int vt_free(vt_timer *t)
{
    int r = check(t);
    if (r)
        return r;
    atomic_store(&t->magic, VT_DEAD);
    free(t);
    return VT_OK;
}

int vt_start(vt_timer *t)
{
    int r = check(t);
    if (r)
        return r;
    if (t->scope == VT_PRIVATE) {
        if (t->running)
            return VT_ESTATE;
        t->running = true;
        t->start = now(t);
        return VT_OK;
    }
    pid_t me = self();
    for (int i = 0; i < VT_SLOTS; i++)
        if (atomic_load(&t->slots[i].tid) == me)
            return VT_ESTATE;
    for (int i = 0; i < VT_SLOTS; i++) {
        pid_t none = 0;
        if (atomic_compare_exchange_strong(&t->slots[i].tid, &none, me)) {
            t->slots[i].start = now(t);
            return VT_OK;
        }
    }
    return VT_ETHREADS;
}

int vt_stop(vt_timer *t)
{
    uint64_t end = t && t->magic == VT_MAGIC ? now(t) : 0; /* read the clock first: stop costs less */
    int r = check(t);
    if (r)
        return r;
    if (t->scope == VT_PRIVATE) {
        if (!t->running)
            return VT_ESTATE;
        t->running = false;
        atomic_fetch_add(&t->total, to_ns(t, end - t->start));
        return VT_OK;
    }
    pid_t me = self();
    for (int i = 0; i < VT_SLOTS; i++)
        if (atomic_load(&t->slots[i].tid) == me) {
            atomic_fetch_add(&t->total, to_ns(t, end - t->slots[i].start));
            atomic_store(&t->slots[i].tid, 0);
            return VT_OK;
        }
    return VT_ESTATE;
}

int vt_clear(vt_timer *t)
{
    int r = check(t);
    if (r)
        return r;
    if (t->scope == VT_PRIVATE && t->running)
        return VT_ESTATE;
    atomic_store(&t->total, 0);
    return VT_OK;
}

int vt_read(vt_timer *t, uint64_t *ns)
{
    int r = check(t);
    if (r)
        return r;
    if (!ns)
        return VT_EINVAL;
    uint64_t run = 0;
    if (t->scope == VT_PRIVATE) {
        if (t->running)
            run = to_ns(t, now(t) - t->start);
    } else {
        pid_t me = self();
        for (int i = 0; i < VT_SLOTS; i++)
            if (atomic_load(&t->slots[i].tid) == me)
                run = to_ns(t, now(t) - t->slots[i].start);
    }
    *ns = atomic_load(&t->total) + run;
    return VT_OK;
}

const char *vt_mode(void)
{
    if (atomic_load(&mode_perf) < 0)
        vnow();
    return atomic_load(&mode_perf) == 1 ? "perf-mmap" : "thread-cputime";
}

const char *vt_strerror(int code)
{
    switch (code) {
    case VT_OK: return "success";
    case VT_EINVAL: return "not a timer (NULL, freed, or never allocated)";
    case VT_ESTATE: return "started while running, or stopped while not running";
    case VT_EOWNER: return "a private timer used by a thread other than its owner";
    case VT_ENOMEM: return "out of memory";
    case VT_ETHREADS: return "too many threads in one global timer at once";
    default: return "unknown error";
    }
}
