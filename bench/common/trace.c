/* trace.c - sample markers for `osmeter run --kernel-paths`.
 *
 * When the harness traces a probe's run with tracefs, it names the trace
 * instance's trace_marker file in OSM_TRACE_MARKER. The probe then writes,
 * after each sample (outside the timed window), one line saying which time
 * stamps the sample spans and on which thread:
 *
 *   osm_sample ID INDEX TID T0 T1 VALUE OPS DISTURBED
 *
 * T0 and T1 are the timer's own stamps (the TSC, which the trace's x86-tsc
 * clock reads too; CLOCK_MONOTONIC_RAW under --timer clock, the trace's
 * mono_raw), so the kernel's events can be placed inside the sample. OPS is
 * how many operations the sample's value is per (0: unknown). Most samples
 * need nothing from their probe: osm_window_close notes the window, and
 * osm_meas_add writes the marker when exactly one window closed on the thread
 * since its previous sample (a sample made from several windows, or copied
 * from a series, gets none). A sample whose time is another thread's, or
 * not a window (a wake-up: the waker's stamp to the wakee's), says so with
 * osm_sample_span. Without OSM_TRACE_MARKER nothing is noted or written.
 * Calls nothing of its own but msg.c.
 */
#include "osm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

int osm_trace_fd = -1;
_Thread_local uint64_t osm_span_t0, osm_span_t1;
_Thread_local unsigned osm_span_windows;
static _Thread_local bool span_set;
static _Thread_local int span_tid;
static _Thread_local uint64_t span_ops;

int osm_gettid(void)
{
    return (int)syscall(SYS_gettid);
}

void osm_trace_setup(void)
{
    const char *path = getenv("OSM_TRACE_MARKER");
    if (!path || !*path || osm_trace_fd >= 0)
        return;
    osm_trace_fd = open(path, O_WRONLY | O_CLOEXEC);
    if (osm_trace_fd < 0)
        osm_warn("OSM_TRACE_MARKER %s: %s; no sample markers for the kernel-path trace", path, strerror(errno));
}

void osm_trace_marker(const char *fmt, ...)
{
    if (osm_trace_fd < 0)
        return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n <= 0 || n >= (int)sizeof line)
        return; /* a marker the harness could not read whole: none */
    if (write(osm_trace_fd, line, (size_t)n) != n) {
        osm_warn("writing a trace marker: %s; no more markers", strerror(errno));
        close(osm_trace_fd);
        osm_trace_fd = -1;
    }
}

void osm_sample_span(uint64_t t0, uint64_t t1, int tid)
{
    if (osm_trace_fd < 0)
        return;
    span_set = true;
    osm_span_t0 = t0;
    osm_span_t1 = t1;
    span_tid = tid;
}

void osm_sample_ops(uint64_t n)
{
    span_ops = n;
}

void osm_trace_sample(const char *id, size_t index, double v, bool disturbed)
{
    bool have = span_set || osm_span_windows == 1;
    int tid = span_set && span_tid > 0 ? span_tid : osm_gettid();
    uint64_t ops = span_ops;
    span_set = false;
    span_ops = 0;
    osm_span_windows = 0;
    if (!have)
        return;
    osm_trace_marker("osm_sample %s %zu %d %llu %llu %.17g %llu %d", id, index, tid,
                     (unsigned long long)osm_span_t0, (unsigned long long)osm_span_t1, v,
                     (unsigned long long)ops, disturbed ? 1 : 0);
}
