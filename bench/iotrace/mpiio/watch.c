/* watch.c - the MPI replay's time bound (replayer.h). A thread of each rank sleeps until the bound; if
 * the rank has not finished by then, it says where the rank waits (the call and its trace line, since
 * when), waits a moment for the other ranks to say theirs, and ends the rank with status 124. The
 * launcher then ends the others. A deadlock is so diagnosed, not only stopped: the ranks' lines, side
 * by side, show which waits for which. */
#include "replayer.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static _Atomic size_t at_line;
static const char *_Atomic at_what = "the start";
static _Atomic long long at_since;
static unsigned bound;

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

void watch_at(size_t line, const char *what)
{
    atomic_store(&at_what, what);
    atomic_store(&at_line, line);
    atomic_store(&at_since, mono_ns());
}

static void *watch(void *arg)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)bound;
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL))
        ;
    char host[64] = "";
    gethostname(host, sizeof host - 1);
    size_t line = atomic_load(&at_line);
    double waited = (double)(mono_ns() - atomic_load(&at_since)) / 1e9;
    char msg[512], where[64] = "";
    if (line)
        snprintf(where, sizeof where, " at line %zu", line);
    int n = snprintf(msg, sizeof msg,
                     "iotrace: error: the replay did not end within its bound of %u s (--timeout): rank %d (%s) "
                     "has waited %.1f s in %s%s\n",
                     bound, me, host, waited, atomic_load(&at_what), where);
    if (n > 0)
        (void)!write(2, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
    sleep(2); /* the other ranks say where they wait too */
    _exit(124);
    return arg;
}

void watch_start(unsigned seconds)
{
    if (!seconds)
        return;
    bound = seconds;
    pthread_t th;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &a, watch, NULL))
        found("cannot start the thread that bounds the replay's time");
    pthread_attr_destroy(&a);
}
