/* call.c - procedure call with 0 to 7 integer arguments.
 *
 * cpu.call.argsK   cycles per call of a noinline (and, with GCC, noipa)
 *                  function taking K longs, 8 calls unrolled per loop turn.
 *                  Subtracted: the timer's overhead per window and the
 *                  loop's own cost per turn (measured here) shared by 8.
 * The callee consumes every argument through an empty asm, so none can be
 * dropped, and the caller's values are opaque, so none can be folded.
 */
#include "osm.h"

static OSM_NOINLINE void f0(void) { OSM_BARRIER(); }
static OSM_NOINLINE void f1(long a) { OSM_USE(a); }
static OSM_NOINLINE void f2(long a, long b) { OSM_USE(a); OSM_USE(b); }
static OSM_NOINLINE void f3(long a, long b, long c) { OSM_USE(a); OSM_USE(b); OSM_USE(c); }
static OSM_NOINLINE void f4(long a, long b, long c, long d)
{ OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d); }
static OSM_NOINLINE void f5(long a, long b, long c, long d, long e)
{ OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d); OSM_USE(e); }
static OSM_NOINLINE void f6(long a, long b, long c, long d, long e, long f)
{ OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d); OSM_USE(e); OSM_USE(f); }
static OSM_NOINLINE void f7(long a, long b, long c, long d, long e, long f, long g)
{ OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d); OSM_USE(e); OSM_USE(f); OSM_USE(g); }

#define UNROLL 8
#define X8(s) s s s s s s s s

/* Each body: n loop turns of UNROLL calls. */
#define CALL_BODY(K, CALL)                                                  \
    static void body##K(void *ctx, uint64_t n)                              \
    {                                                                       \
        (void)ctx;                                                          \
        long a = 1, b = 2, c = 3, d = 4, e = 5, f = 6, g = 7;               \
        OSM_KEEP(a); OSM_KEEP(b); OSM_KEEP(c); OSM_KEEP(d);                 \
        OSM_KEEP(e); OSM_KEEP(f); OSM_KEEP(g);                              \
        for (uint64_t i = 0; i < n; i++) {                                  \
            X8(CALL;)                                                       \
        }                                                                   \
        OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d);                     \
        OSM_USE(e); OSM_USE(f); OSM_USE(g);                                 \
    }

CALL_BODY(0, f0())
CALL_BODY(1, f1(a))
CALL_BODY(2, f2(a, b))
CALL_BODY(3, f3(a, b, c))
CALL_BODY(4, f4(a, b, c, d))
CALL_BODY(5, f5(a, b, c, d, e))
CALL_BODY(6, f6(a, b, c, d, e, f))
CALL_BODY(7, f7(a, b, c, d, e, f, g))

static OSM_NOINLINE void empty_loop(void *ctx, uint64_t n)
{
    (void)ctx;
    for (uint64_t i = 0; i < n; i++)
        OSM_BARRIER();
}

static const struct osm_probe_info info = {
    .name = "cpu_call",
    .summary = "Procedure call cost with 0..7 integer arguments (loop overhead subtracted).",
    .default_samples = 100,
};

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);

    /* the loop's cost per turn, subtracted (shared by the UNROLL calls) */
    struct osm_meas loop;
    osm_meas_init(&loop, "loop", o.samples);
    osm_run_batched(&loop, empty_loop, NULL, 0, o.samples, 0);
    double loop_turn = osm_median(loop.v, loop.n);
    osm_meas_free(&loop);

    osm_body bodies[8] = { body0, body1, body2, body3, body4, body5, body6, body7 };
    for (int k = 0; k < 8; k++) {
        char id[32];
        snprintf(id, sizeof id, "cpu.call.args%d", k);
        struct osm_meas m;
        osm_meas_init(&m, id, o.samples);
        osm_run_batched(&m, bodies[k], NULL, o.iterations, o.samples, loop_turn);
        for (size_t i = 0; i < m.n; i++)
            m.v[i] /= UNROLL;
        m.overhead_subtracted /= UNROLL;
        osm_meas_param(&m, "\"args\": %d, \"calls_per_iteration\": %d, \"loop_per_iteration\": %.9g", k,
                       UNROLL, loop_turn);
        osm_emit(&m);
        osm_meas_free(&m);
    }
    return 0;
}
