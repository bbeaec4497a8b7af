/* vtimer.h - stop-watch timers for profiling code paths (the Virtual Timers
 * paper in shared/seeds): start, stop, read, clear.
 *
 * Physical timers count all elapsed time (the TSC, fenced with LFENCE and
 * RDTSCP: cheap, unlike CPUID, which is a VM exit in a guest). Virtual
 * timers count only the time the thread was on a CPU: waits, sleeps and
 * preemption are left out. Virtual time comes from the perf_event mmap page
 * of a per-thread task-clock event when the kernel lets user space convert
 * it (cap_user_time: no system call per read), else from
 * CLOCK_THREAD_CPUTIME_ID (a system call per read); vt_mode() says which.
 *
 * A private timer belongs to the thread that allocated it. A global timer
 * may be started and stopped by any number of threads at once: each
 * thread's start-stop intervals are added up (for a virtual timer, each
 * thread's own on-CPU time).
 *
 * Every call returns 0 or a negative VT_E* code; vt_strerror() names it.
 * Link: cc ... -Ibuild/include build/lib/libvtimer.a -pthread
 */
#ifndef VTIMER_H
#define VTIMER_H

#include <stdint.h>

typedef struct vt_timer vt_timer;

enum vt_kind { VT_PHYSICAL = 0, VT_VIRTUAL = 1 };
enum vt_scope { VT_PRIVATE = 0, VT_GLOBAL = 1 };

enum {
    VT_OK = 0,
    VT_EINVAL = -1,  /* not a timer (NULL, freed, or never allocated) */
    VT_ESTATE = -2,  /* started twice, or stopped while not running (in this thread) */
    VT_EOWNER = -3,  /* a private timer used by another thread */
    VT_ENOMEM = -4,
    VT_ETHREADS = -5 /* too many threads running one global timer at once */
};

int vt_alloc(vt_timer **t, enum vt_kind kind, enum vt_scope scope);
int vt_free(vt_timer *t);
int vt_start(vt_timer *t);
int vt_stop(vt_timer *t);
int vt_clear(vt_timer *t);  /* total back to 0 (not while running) */
/* Total in ns: the finished intervals, plus the calling thread's running
 * interval up to now (so a read of a running timer consults the clock). */
int vt_read(vt_timer *t, uint64_t *ns);
/* "perf-mmap" or "thread-cputime": how virtual time is read here. */
const char *vt_mode(void);
const char *vt_strerror(int code);

#endif
