/* timeline.h - a trace's calls as Chrome's trace event format (timeline.c): what show --perfetto and
 * replay --timeline write. */
#ifndef IOTRACE_TIMELINE_H
#define IOTRACE_TIMELINE_H

#include "iotrace.h"
#include "json.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct timeline_map { /* uint64 -> uint64, open addressing (timeline.c) */
    uint64_t *k, *v;
    size_t cap, n;
};

struct timeline {
    struct json j;
    struct timeline_map m;
    FILE *f;
    const char *out;
    char tmp[4096 + 16];
    uint64_t t0, flows; /* ts 0 is t0 (ns); collectives linked */
    size_t calls;
};

/* Starts the timeline of `trace` into a file beside out; `times` says whose times ("recorded",
 * "replayed"); ts counts from t0 (ns). */
void timeline_begin(struct timeline *tl, const char *out, const char *trace, const char *times, uint64_t t0);
/* One row, in the trace's order: its track named when first seen, a slice (not for definitions), its
 * collective's flow. */
void timeline_row(struct timeline *tl, const struct trace_rec *r);
/* A row with no slice (one no rank replayed): what it defines (a communicator's size) still known. */
void timeline_skip(struct timeline *tl, const struct trace_rec *r);
/* Renamed over out (keep), or removed; the memory freed. */
void timeline_end(struct timeline *tl, bool keep);

/* show --perfetto: the trace at path, a row at a time, into out; exit status. */
int show_timeline(const char *path, const char *out);

#endif
