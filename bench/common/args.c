/* args.c - the options every probe shares (osm_init), strict number parsing,
 * pinning. The top of bench/common: it sets up the timer and the output. */
#include "osm.h"

#include <errno.h>
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

int osm_scan_u64(const char *s, const char **end, uint64_t min, uint64_t max, uint64_t *out)
{
    /* digits only: strtoull would also take a sign ("-2" wraps to 2^64 - 2) and leading space */
    if (!s || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    char *e;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || v < min || v > max)
        return -1;
    *end = e;
    *out = v;
    return 0;
}

uint64_t osm_parse_u64(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    if (!s || !*s)
        osm_usage_error("%s needs a value", opt);
    const char *end;
    uint64_t v;
    if (osm_scan_u64(s, &end, min, max, &v) != 0 || *end)
        osm_usage_error("%s: expected a whole number from %llu to %llu, got '%s'", opt,
                        (unsigned long long)min, (unsigned long long)max, s);
    return v;
}

static void usage(const struct osm_probe_info *info, const struct osm_opts *o)
{
    printf("usage: %s [options]\n%s\n\n", info->name, info->summary);
    printf("Prints one JSON line per measurement on stdout (see docs/DESIGN.md).\n\n");
    if (info->samples_from)
        printf("  (no --samples: %s)\n", info->samples_from);
    else
        printf("  --samples N      trials, one sample each (default %zu)\n", o->samples);
    printf("  --iterations N   operations per trial (default %s)\n",
           info->default_iterations ? "set by the probe" : "automatic: timer cost under 1%");
    printf("  --warmup N       trials run and discarded first (default %zu)\n", o->warmup);
    printf("  --cpu N          pin to CPU N (default: not pinned; the harness pins)\n");
    printf("  --timer tsc|clock  fenced TSC (default) or clock_gettime(CLOCK_MONOTONIC_RAW)\n");
    printf("  --human          one readable line per measurement instead of JSON\n");
    printf("  --help           this text\n");
    for (const struct osm_extra_opt *e = info->extra; e && e->name; e++) {
        char flag[64];
        snprintf(flag, sizeof flag, "%s%s", e->name, e->has_arg ? " X" : "");
        printf("  --%-15s %s\n", flag, e->help);
    }
}

static const struct osm_extra_opt *find_extra(const struct osm_probe_info *info, const char *name)
{
    for (const struct osm_extra_opt *e = info->extra; e && e->name; e++)
        if (strcmp(e->name, name) == 0)
            return e;
    return NULL;
}

void osm_init(int argc, char **argv, const struct osm_probe_info *info, struct osm_opts *o)
{
    osm_progname = info->name;
    memset(o, 0, sizeof *o);
    o->samples = info->default_samples;
    o->iterations = info->default_iterations;
    o->warmup = 2;
    o->cpu = -1;
    o->timer = OSM_TIMER_TSC;

    for (int i = 1; i < argc; i++) {
        char name[64];
        const char *arg = argv[i];
        const char *val = NULL;
        if (strncmp(arg, "--", 2) != 0 || !arg[2])
            osm_usage_error("unexpected argument '%s'", arg);
        const char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        if (len >= sizeof name)
            osm_usage_error("unknown option '%s'", arg);
        memcpy(name, arg + 2, len);
        name[len] = 0;

        bool takes = strcmp(name, "samples") == 0 || strcmp(name, "iterations") == 0 ||
                     strcmp(name, "warmup") == 0 || strcmp(name, "cpu") == 0 ||
                     strcmp(name, "timer") == 0;
        const struct osm_extra_opt *extra = NULL;
        if (!takes && strcmp(name, "help") && strcmp(name, "human")) {
            extra = find_extra(info, name);
            if (!extra)
                osm_usage_error("unknown option '--%s'", name);
            takes = extra->has_arg;
        }
        if (takes) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                osm_usage_error("--%s needs a value", name);
        } else if (eq) {
            osm_usage_error("--%s takes no value", name);
        }

        if (strcmp(name, "help") == 0) {
            usage(info, o);
            exit(0);
        } else if (strcmp(name, "human") == 0) {
            o->human = true;
        } else if (strcmp(name, "samples") == 0) {
            if (info->samples_from) /* taken and then ignored would be a silent wrong count */
                osm_usage_error("--samples: %s takes no sample count; %s", info->name, info->samples_from);
            o->samples = osm_parse_u64("--samples", val, 1, 10000000);
        } else if (strcmp(name, "iterations") == 0) {
            o->iterations = osm_parse_u64("--iterations", val, 1, 10000000000ull); /* 10^10: seconds a window */
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
        } else if (info->on_extra(name, val) != 0) {
            osm_usage_error("--%s: bad value '%s'", name, val ? val : "");
        }
    }
    osm_human_output = o->human;
    osm_warmup_samples = o->warmup;
    if (o->cpu >= 0 && osm_pin(o->cpu) != 0) {
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        osm_usage_error("--cpu %d: cannot pin there (%s); this machine has %ld online CPUs, numbered from 0",
                        o->cpu, strerror(errno), n);
    }
    osm_timer_setup(o->timer);
    osm_trace_setup();
}
