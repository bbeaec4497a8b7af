/* msg.c - how a probe speaks to a person: errors (exit 1), bad requests
 * (exit 2, with a hint), warnings. The bottom of bench/common: it calls
 * nothing of its own. */
#include "osm.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *osm_progname = "osmeter-probe";

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: %s", osm_progname, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void osm_die(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("error: ", fmt, ap);
    va_end(ap);
    exit(1);
}

void (*osm_usage_hook)(const char *message);

void osm_usage_error(const char *fmt, ...)
{
    va_list ap;
    if (osm_usage_hook) {
        char message[1024];
        va_start(ap, fmt);
        vsnprintf(message, sizeof message, fmt, ap);
        va_end(ap);
        osm_usage_hook(message);
        exit(2);
    }
    va_start(ap, fmt);
    vmsg("error: ", fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s: try '%s --help'\n", osm_progname, osm_progname);
    exit(2);
}

void osm_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

/* Progress for a person watching a long probe: one line per step on the
 * file descriptor the harness names in OSM_PROGRESS_FD (it passes one only
 * when its own output is a terminal). Without it, nothing: standard output
 * stays JSON lines alone. */
void osm_progress(const char *fmt, ...)
{
    static int fd = -2;
    if (fd == -2) {
        const char *e = getenv("OSM_PROGRESS_FD");
        char *end;
        long v = e ? strtol(e, &end, 10) : -1;
        fd = e && *e && !*end && v > 2 && v < 1024 ? (int)v : -1;
    }
    if (fd < 0)
        return;
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if (n > (int)sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (write(fd, line, (size_t)n) < 0)
        fd = -1; /* the harness stopped listening: stay quiet */
}
