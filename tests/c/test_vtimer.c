/* test_vtimer.c - physical and virtual timers against what a thread really
 * did; global timers across threads; bad handles. One line per check and a
 * closing "N passed, N failed"; run by tests/test_vtimer.py. */
#include "vtimer.h"
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>



static double ms(vt_timer *t)
{
    uint64_t ns = 0;
    vt_read(t, &ns);
    return ns / 1e6;
}

static void busy_ms(double want)
{
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < want);
}

static void pin(int cpu)
{
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(cpu, &s);
    sched_setaffinity(0, sizeof s, &s);
}

static int pipefd[2];
static void *late_writer(void *arg)
{
    (void)arg;
    usleep(40000);
    if (write(pipefd[1], "x", 1) != 1)
        perror("write");
    return NULL;
}

static _Atomic int spin;
static void *competitor(void *arg)
{
    (void)arg;
    pin(0);
    while (atomic_load(&spin))
        ;
    return NULL;
}

static vt_timer *gphys, *gvirt;
static void *global_user(void *arg)
{
    (void)arg;
    vt_start(gphys);
    vt_start(gvirt);
    busy_ms(20);
    usleep(30000);
    vt_stop(gvirt);
    vt_stop(gphys);
    return NULL;
}

static vt_timer *owned;
static int other_result;
static void *other_thread(void *arg)
{
    (void)arg;
    other_result = vt_start(owned);
    return NULL;
}

int main(void)
{
    vt_timer *p, *v;
    vt_alloc(&p, VT_PHYSICAL, VT_PRIVATE);
    vt_alloc(&v, VT_VIRTUAL, VT_PRIVATE);
    const char *mode = vt_mode();
    check(!strcmp(mode, "perf-mmap") || !strcmp(mode, "thread-cputime"), "mode", "%s", mode);

    /* 1. sleeping: physical counts it, virtual does not */
    vt_start(p), vt_start(v);
    usleep(50000);
    vt_stop(v), vt_stop(p);
    check(ms(p) >= 49 && ms(v) < 5, "sleep", "50 ms sleep: physical %.2f ms, virtual %.3f ms", ms(p), ms(v));

    /* 2. blocking on a pipe until another thread writes 40 ms later */
    vt_clear(p), vt_clear(v);
    if (pipe(pipefd) != 0)
        return 2;
    pthread_t w;
    pthread_create(&w, NULL, late_writer, NULL);
    char c;
    vt_start(p), vt_start(v);
    ssize_t got = read(pipefd[0], &c, 1);
    vt_stop(v), vt_stop(p);
    pthread_join(w, NULL);
    check(got == 1 && ms(p) >= 35 && ms(v) < 5, "pipe", "blocked read: physical %.2f ms, virtual %.3f ms", ms(p),
          ms(v));

    /* 3. alone on a CPU, a busy loop reads alike on both. Another task (a
     * kernel worker, the host taking the vCPU) can only add physical time:
     * the best of five tries is the library's own answer. */
    pin(0);
    for (int try = 0; try < 5; try++) {
        vt_clear(p), vt_clear(v);
        vt_start(p), vt_start(v);
        busy_ms(60);
        vt_stop(v), vt_stop(p);
        if (ms(v) >= 59 && ms(p) - ms(v) < 0.1 * ms(v) + 2)
            break;
    }
    check(ms(v) >= 59 && ms(p) - ms(v) < 0.1 * ms(v) + 2, "busy alone", "60 ms of work: physical %.2f, virtual %.2f",
          ms(p), ms(v));

    /* 4. sharing the CPU with a busy competitor: physical counts its turns too */
    atomic_store(&spin, 1);
    pthread_t comp;
    pthread_create(&comp, NULL, competitor, NULL);
    usleep(20000);
    vt_clear(p), vt_clear(v);
    vt_start(p), vt_start(v);
    busy_ms(100);
    vt_stop(v), vt_stop(p);
    atomic_store(&spin, 0);
    pthread_join(comp, NULL);
    check(ms(v) >= 99 && ms(v) < 0.75 * ms(p), "competitor", "100 ms of work beside a spinner: physical %.2f, virtual %.2f",
          ms(p), ms(v));

    /* 5. global timers: 4 threads, each 20 ms of work and 30 ms of sleep */
    vt_alloc(&gphys, VT_PHYSICAL, VT_GLOBAL);
    vt_alloc(&gvirt, VT_VIRTUAL, VT_GLOBAL);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, global_user, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    check(ms(gvirt) >= 4 * 19.5 && ms(gvirt) < 4 * 25, "global virtual", "4 x 20 ms of work: %.2f ms", ms(gvirt));
    /* each thread's interval is at least its 50 ms; four threads on a small, shared machine wait for a
     * CPU in turn, so the sum may stretch well past 200 ms (a CI run beside other work saw 482) */
    check(ms(gphys) >= 4 * 49 && ms(gphys) < 4 * 250, "global physical", "4 x (20 ms work + 30 ms sleep): %.2f ms",
          ms(gphys));

    /* 6. bad handles and misuse */
    check(vt_start(NULL) == VT_EINVAL && vt_read(NULL, NULL) == VT_EINVAL, "null handle", "%s", vt_strerror(VT_EINVAL));
    vt_timer *bogus = (vt_timer *)&passed; /* not a timer */
    check(vt_stop(bogus) == VT_EINVAL && vt_free(bogus) == VT_EINVAL, "bogus handle", "refused");
    check(vt_stop(p) == VT_ESTATE, "stop when stopped", "%s", vt_strerror(VT_ESTATE));
    vt_start(p);
    check(vt_start(p) == VT_ESTATE && vt_clear(p) == VT_ESTATE, "start when running", "refused");
    vt_stop(p);
    vt_alloc(&owned, VT_PHYSICAL, VT_PRIVATE);
    pthread_t o;
    pthread_create(&o, NULL, other_thread, NULL);
    pthread_join(o, NULL);
    check(other_result == VT_EOWNER, "private owner", "%s", vt_strerror(other_result));
    vt_timer *unused;
    check(vt_alloc(NULL, VT_PHYSICAL, VT_PRIVATE) == VT_EINVAL && vt_alloc(&unused, 7, 0) == VT_EINVAL,
          "bad alloc", "refused");
    return check_summary();
}
