/* args.c - the options every probe shares (osm_init, over opts.c's rows), CPU lists, pinning. The
 * top of bench/common: it sets up the timer and the output. */
#include "osm.h"
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern bool osm_human_output;

/* A CPU list as sysfs and taskset write it ("0-3,8,10-11") into out[]: the count,
 * or -1 when it is malformed or holds more than max. */
int osm_parse_cpu_list(const char *s, int *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        errno = 0;
        long a = strtol(s, &end, 10), b = a;
        if (end == s || a < 0 || a >= CPU_SETSIZE || errno)
            return -1;
        if (*end == '-') {
            const char *from = end + 1;
            b = strtol(from, &end, 10);
            if (end == from || b < a || b >= CPU_SETSIZE || errno)
                return -1;
        }
        for (long c = a; c <= b; c++) {
            if (n == max)
                return -1;
            out[n++] = (int)c;
        }
        if (*end == ',')
            end++;
        else if (*end)
            return -1;
        s = end;
    }
    return n;
}

static void usage(const struct osm_probe_info *info, const struct osm_opts *o, char (*defs)[OSM_DEF_LEN])
{
    printf("usage: %s [options]\n%s\n\n", info->name, info->summary);
    printf("Prints one JSON line per measurement on stdout (see docs/DESIGN.md).\n\n");
    if (info->samples_from)
        printf("  (no --samples: %s)\n", info->samples_from);
    else
        printf("  --samples N      trials, one sample each (default %zu)\n", o->samples);
    if (info->one_event)
        printf("  --iterations 1   a sample is %s: only 1\n", info->one_event);
    else
        printf("  --iterations N   operations per trial (default %s)\n",
               info->default_iterations ? "set by the probe" : "automatic: timer cost under 1%");
    printf("  --warmup N       trials run and discarded first (default %zu)\n", o->warmup);
    printf("  --cpu N          pin to CPU N (default: not pinned; the harness pins)\n");
    printf("  --timer tsc|clock  fenced TSC (default) or clock_gettime(CLOCK_MONOTONIC_RAW)\n");
    printf("  --human          one readable line per measurement instead of JSON\n");
    printf("  --help           this text\n");
    osm_opt_help(info->opts, defs);
}

void osm_init(int argc, char **argv, const struct osm_probe_info *info, struct osm_opts *o)
{
    osm_progname = info->name;
    memset(o, 0, sizeof *o);
    o->samples = info->default_samples;
    o->iterations = info->one_event ? 1 : info->default_iterations;
    o->warmup = 2;
    o->cpu = -1;
    o->timer = OSM_TIMER_TSC;

    char(*defs)[OSM_DEF_LEN] = osm_opt_defaults(info->opts); /* the defaults, before options change them */
    for (int i = 1; i < argc; i++) {
        char name[OSM_NAME_LEN];
        const char *eq = osm_opt_name(argv[i], name);
        bool takes = strcmp(name, "samples") == 0 || strcmp(name, "iterations") == 0 ||
                     strcmp(name, "warmup") == 0 || strcmp(name, "cpu") == 0 ||
                     strcmp(name, "timer") == 0;
        const struct osm_opt *row = NULL;
        if (!takes && strcmp(name, "help") && strcmp(name, "human")) {
            row = osm_opt_find(info->opts, name);
            if (!row)
                osm_usage_error("unknown option '--%s'", name);
            takes = row->type != OSM_OPT_FLAG;
        }
        const char *val = osm_opt_value(argc, argv, &i, name, eq, takes);
        if (row) {
            osm_opt_set(row, val);
        } else if (strcmp(name, "help") == 0) {
            usage(info, o, defs);
            exit(0);
        } else if (strcmp(name, "human") == 0) {
            o->human = true;
        } else if (strcmp(name, "samples") == 0) {
            if (info->samples_from) /* taken and then ignored would be a silent wrong count */
                osm_usage_error("--samples: %s takes no sample count; %s", info->name, info->samples_from);
            o->samples = osm_parse_u64("--samples", val, 1, 10000000);
        } else if (strcmp(name, "iterations") == 0) {
            o->iterations = osm_parse_u64("--iterations", val, 1, 10000000000ull); /* 10^10: seconds a window */
            if (info->one_event && o->iterations != 1)
                osm_usage_error("--iterations: a sample is %s; only 1 is allowed", info->one_event);
        } else if (strcmp(name, "warmup") == 0) {
            o->warmup = osm_parse_u64("--warmup", val, 0, 1000000);
        } else if (strcmp(name, "cpu") == 0) {
            o->cpu = (int)osm_parse_u64("--cpu", val, 0, CPU_SETSIZE - 1);
        } else if (strcmp(name, "timer") == 0) {
            if (strcmp(val, "tsc") == 0)
                o->timer = OSM_TIMER_TSC;
            else if (strcmp(val, "clock") == 0)
                o->timer = OSM_TIMER_CLOCK;
            else
                osm_usage_error("--timer: expected 'tsc' or 'clock', got '%s'", val);
        }
    }
    free(defs);
    osm_human_output = o->human;
    osm_warmup_samples = o->warmup;
    if (o->cpu >= 0 && osm_pin(o->cpu) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        osm_usage_error("--cpu %d: cannot pin there (%s); this machine has %ld online CPUs, numbered from 0",
                        o->cpu, strerror(errno), n);
    }
    osm_timer_setup(o->timer);
    osm_core_start_mhz = osm_core_mhz(&osm_core_start_width);
    osm_trace_setup();
}
