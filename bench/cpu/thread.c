/* thread.c - thread creation.
 *
 * cpu.thread_create       pthread_create() until the first of creator or new
 *                         thread runs (each takes an end stamp at once; the
 *                         earlier counts), as cpu.proc_create does for fork.
 * cpu.thread_create_join  pthread_create(), the thread returns, pthread_join().
 * One creation per sample; new threads inherit the creator's pinning.
 */
#include "osm.h"

#include <pthread.h>
#include <string.h>

struct slot {
    uint64_t t;
    uint32_t cpu;
};

static void *stamp_and_return(void *arg)
{
    struct slot *s = arg;
    s->t = osm_end(&s->cpu);
    return NULL;
}

static void *just_return(void *arg)
{
    return arg;
}

static const struct osm_probe_info info = {
    .name = "cpu_thread",
    .summary = "Thread creation: pthread_create until first run, and create+join.",
    .default_samples = 200,
    .one_event = "one thread creation",
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);

    struct osm_meas m;
    osm_meas_init(&m, "cpu.thread_create", o.samples);
    m.single_shot = true;
    size_t thread_first = 0;
    for (size_t i = 0; i < o.warmup + o.samples; i++) {
        struct slot s = { 0, 0 };
        pthread_t th;
        uint32_t c0, cp;
        uint64_t t0 = osm_begin(&c0);
        int err = pthread_create(&th, NULL, stamp_and_return, &s);
        uint64_t tp = osm_end(&cp);
        if (err)
            osm_die("pthread_create: %s", strerror(err));
        pthread_join(th, NULL);
        if (i < o.warmup)
            continue;
        uint64_t first = tp < s.t ? tp : s.t;
        thread_first += s.t < tp;
        osm_sample_span(t0, first, 0); /* the creator's time, from its stamp to the first end stamp */
        osm_meas_add(&m, (double)(first - t0) - osm_timer.overhead, cp != c0 || s.cpu != c0);
    }
    m.overhead_subtracted = osm_timer.overhead;
    osm_param_int(&m, "new_thread_ran_first", (long long)thread_first);
    osm_emit(&m);
    osm_meas_free(&m);

    osm_meas_init(&m, "cpu.thread_create_join", o.samples);
    m.single_shot = true;
    for (size_t i = 0; i < o.warmup + o.samples; i++) {
        struct osm_window w;
        bool dist;
        pthread_t th;
        osm_window_open_blocking(&w);
        int err = pthread_create(&th, NULL, just_return, NULL);
        if (err)
            osm_die("pthread_create: %s", strerror(err));
        pthread_join(th, NULL);
        uint64_t t = osm_window_close(&w, &dist);
        if (i >= o.warmup)
            osm_meas_add(&m, (double)t - osm_timer.overhead, dist);
    }
    m.overhead_subtracted = osm_timer.overhead;
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
