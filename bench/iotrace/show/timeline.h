/* timeline.h - show --perfetto (timeline.c): a trace as Chrome's trace event format, streamed. */
#ifndef IOTRACE_TIMELINE_H
#define IOTRACE_TIMELINE_H

/* Writes the trace at path as a timeline into out (whole, then renamed over it); exit status. */
int show_timeline(const char *path, const char *out);

#endif
