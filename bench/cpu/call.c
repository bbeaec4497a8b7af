/* call.c - procedure call with 0 to 7 integer arguments.
 *
 * cpu.call.argsK   cycles per call of a function the compiler must call as
 *                  written (OSM_CALLEE: GCC's noipa, or external linkage
 *                  under clang) taking K longs, 8 calls unrolled per turn.
 *                  Subtracted: the timer's overhead per window and the
 *                  loop's own cost per turn (measured here) shared by 8.
 *                  params.turn_median: the median turn before the loop's
 *                  cost was taken out, so the subtraction can be checked.
 * The callee consumes every argument through an empty asm, so none can be
 * dropped, and the caller's values are opaque, so none can be folded.
 */
#include "osm.h"

#include <stdlib.h>
#include <string.h>

OSM_CALLEE void f0(void) { OSM_BARRIER(); }
OSM_CALLEE void f1(long a) { OSM_USE(a); }
OSM_CALLEE void f2(long a, long b) { OSM_USE(a); OSM_USE(b); }
OSM_CALLEE void f3(long a, long b, long c) { OSM_USE(a); OSM_USE(b); OSM_USE(c); }
OSM_CALLEE void f4(long a, long b, long c, long d)
{ OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d); }
OSM_CALLEE void f5(long a, long b, long c, long d, long e)
{ OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d); OSM_USE(e); }
OSM_CALLEE void f6(long a, long b, long c, long d, long e, long f)
{ OSM_USE(a); OSM_USE(b); OSM_USE(c); OSM_USE(d); OSM_USE(e); OSM_USE(f); }
OSM_CALLEE void f7(long a, long b, long c, long d, long e, long f, long g)
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

    /* The loop's cost per turn (subtracted, shared by the UNROLL calls) and
     * the eight call bodies are sampled in turn, so drift affects all alike
     * and a trend over the argument count is the calls' own. */
    osm_body bodies[9] = { empty_loop, body0, body1, body2, body3, body4, body5, body6, body7 };
    void *ctx[9] = { 0 };
    struct osm_meas m[9];
    osm_meas_init(&m[0], "loop", o.samples);
    for (int k = 0; k < 8; k++) {
        char id[32];
        snprintf(id, sizeof id, "cpu.call.args%d", k);
        osm_meas_init(&m[k + 1], id, o.samples);
    }
    osm_run_interleaved(9, m, bodies, ctx, o.iterations, o.samples, NULL);
    double loop_turn = osm_median(m[0].v, m[0].n); /* sorts the loop's samples: they are not emitted */
    double *turn = malloc(o.samples * sizeof *turn);
    if (!turn)
        osm_die("out of memory");
    for (int k = 1; k <= 8; k++) {
        /* the turn as timed (timer overhead out, loop in): what the loop is subtracted from */
        memcpy(turn, m[k].v, m[k].n * sizeof *turn);
        osm_param_num(&m[k], "turn_median", osm_median(turn, m[k].n));
        for (size_t i = 0; i < m[k].n; i++)
            m[k].v[i] = (m[k].v[i] - loop_turn) / UNROLL;
        m[k].overhead_subtracted = (m[k].overhead_subtracted + loop_turn) / UNROLL;
        osm_param_int(&m[k], "args", k - 1);
        osm_param_int(&m[k], "calls_per_iteration", UNROLL);
        osm_param_num(&m[k], "loop_per_iteration", loop_turn);
        osm_emit(&m[k]);
    }
    for (int k = 0; k <= 8; k++)
        osm_meas_free(&m[k]);
    free(turn);
    return 0;
}
