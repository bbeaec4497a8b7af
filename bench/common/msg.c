/* msg.c - how a probe speaks to a person: errors (exit 1), bad requests
 * (exit 2, with a hint), warnings. The bottom of bench/common: it calls
 * nothing of its own. */
#include "osm.h"

#include <stdarg.h>
#include <stdlib.h>

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

void osm_usage_error(const char *fmt, ...)
{
    va_list ap;
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
