/* args.c - the options every probe shares (osm_init), strict number parsing,
 * pinning. The top of bench/common: it sets up the timer and the output. */
#include "osm.h"

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

uint64_t osm_parse_size(const char *opt, const char *s, uint64_t min, uint64_t max)
{
    if (!s || !*s || !isdigit((unsigned char)*s))
        osm_usage_error("%s: expected a size such as 4096, 64K, 16M or 1G, got '%s'", opt, s ? s : "");
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    uint64_t mult = 1;
    if (*end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mult = 1ull << 10; break;
        case 'M': mult = 1ull << 20; break;
        case 'G': mult = 1ull << 30; break;
        default: mult = 0;
        }
        end++;
        if (*end == 'i' || *end == 'I')
            end++;
        if (*end == 'B' || *end == 'b')
            end++;
    }
    if (errno || *end || mult == 0 || v > UINT64_MAX / mult)
        osm_usage_error("%s: expected a size such as 4096, 64K, 16M or 1G, got '%s'", opt, s);
    uint64_t b = v * mult;
    if (b < min || b > max)
        osm_usage_error("%s: %s is outside %llu .. %llu bytes", opt, s, (unsigned long long)min,
                        (unsigned long long)max);
    return b;
}

/* A size as its row would take it back: 64M, 4K, 1G, or bytes. */
static void fmt_size(char *out, size_t len, uint64_t v)
{
    static const char unit[] = "GMK";
    for (int k = 0; k < 3; k++) {
        uint64_t m = 1ull << (30 - 10 * k);
        if (v && v % m == 0) {
            snprintf(out, len, "%llu%c", (unsigned long long)(v / m), unit[k]);
            return;
        }
    }
    snprintf(out, len, "%llu", (unsigned long long)v);
}

enum { DEF_LEN = 256 };

/* A row's default, as --help says it: the variable's value before any option
 * was parsed, or the row's words for a stand-in value; "" for none. */
static void fmt_default(const struct osm_opt *r, char *out)
{
    out[0] = 0;
    if (r->def) {
        snprintf(out, DEF_LEN, "%s", r->def);
        return;
    }
    switch (r->type) {
    case OSM_OPT_U64: snprintf(out, DEF_LEN, "%llu", (unsigned long long)*r->var.u64); break;
    case OSM_OPT_UINT: snprintf(out, DEF_LEN, "%u", *r->var.uint); break;
    case OSM_OPT_INT: snprintf(out, DEF_LEN, "%d", *r->var.i); break;
    case OSM_OPT_SIZE: fmt_size(out, DEF_LEN, *r->var.u64); break;
    case OSM_OPT_DOUBLE: snprintf(out, DEF_LEN, "%g", *r->var.d); break;
    case OSM_OPT_STR:
        if (*r->var.s)
            snprintf(out, DEF_LEN, "%s", *r->var.s);
        break;
    case OSM_OPT_CHOICE: {
        const char *c = r->choices;
        for (int k = 0; c && k < *r->var.i; k++)
            c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
        if (c)
            snprintf(out, DEF_LEN, "%.*s", (int)strcspn(c, "|"), c);
        break;
    }
    case OSM_OPT_LIST:
    case OSM_OPT_SIZE_LIST:
        for (size_t k = 0, at = 0; k < *r->count && at + 24 < DEF_LEN; k++) {
            if (k)
                out[at++] = ',';
            if (r->type == OSM_OPT_LIST)
                snprintf(out + at, DEF_LEN - at, "%llu", (unsigned long long)r->var.u64[k]);
            else
                fmt_size(out + at, DEF_LEN - at, r->var.u64[k]);
            at += strlen(out + at);
        }
        break;
    case OSM_OPT_FLAG:
    case OSM_OPT_FUNC: break;
    }
}

static const char *arg_name(const struct osm_opt *r)
{
    switch (r->type) {
    case OSM_OPT_U64:
    case OSM_OPT_UINT:
    case OSM_OPT_INT: return " N";
    case OSM_OPT_SIZE: return " SIZE";
    case OSM_OPT_DOUBLE: return " X";
    case OSM_OPT_STR:
    case OSM_OPT_FUNC: return " TEXT";
    case OSM_OPT_LIST: return " N,N..";
    case OSM_OPT_SIZE_LIST: return " SIZE,..";
    case OSM_OPT_CHOICE:
    case OSM_OPT_FLAG: break;
    }
    return "";
}

static void usage(const struct osm_probe_info *info, const struct osm_opts *o, char (*defs)[DEF_LEN])
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
    for (size_t k = 0; info->opts && info->opts[k].name; k++) {
        const struct osm_opt *r = &info->opts[k];
        char flag[96];
        if (r->type == OSM_OPT_CHOICE || r->arg)
            snprintf(flag, sizeof flag, "%s %s", r->name, r->arg ? r->arg : r->choices);
        else
            snprintf(flag, sizeof flag, "%s%s", r->name, arg_name(r));
        printf("  --%-14s %s", flag, r->help);
        if (defs[k][0])
            printf(" (default%s %s)", r->def ? ":" : "", defs[k]);
        printf("\n");
    }
}

static const struct osm_opt *find_opt(const struct osm_probe_info *info, const char *name)
{
    for (const struct osm_opt *r = info->opts; r && r->name; r++)
        if (strcmp(r->name, name) == 0)
            return r;
    return NULL;
}

/* A comma-separated list into the row's array (empty items are skipped). */
static void parse_list(const struct osm_opt *r, const char *opt, const char *val)
{
    size_t n = 0;
    for (const char *t = val; *t;) {
        size_t len = strcspn(t, ",");
        if (len) {
            char item[64];
            if (n == r->cap)
                osm_usage_error("%s: at most %zu values", opt, r->cap);
            snprintf(item, sizeof item, "%.*s", (int)(len < sizeof item - 1 ? len : sizeof item - 1), t);
            if (len >= sizeof item) /* no number is this long: say what was given */
                osm_usage_error("%s: '%.*s' is not a value", opt, (int)len, t);
            r->var.u64[n++] = r->type == OSM_OPT_LIST ? osm_parse_u64(opt, item, r->min, r->max)
                                                      : osm_parse_size(opt, item, r->min, r->max);
        }
        t += len + (t[len] == ',');
    }
    if (!n)
        osm_usage_error("%s: give a comma-separated list", opt);
    *r->count = n;
}

/* One probe option's value into its variable, within the row's limits. */
static void parse_opt(const struct osm_opt *r, const char *val)
{
    char opt[80];
    snprintf(opt, sizeof opt, "--%s", r->name);
    switch (r->type) {
    case OSM_OPT_U64: *r->var.u64 = osm_parse_u64(opt, val, r->min, r->max); break;
    case OSM_OPT_UINT: *r->var.uint = (unsigned)osm_parse_u64(opt, val, r->min, r->max); break;
    case OSM_OPT_INT: *r->var.i = (int)osm_parse_u64(opt, val, r->min, r->max); break;
    case OSM_OPT_SIZE: *r->var.u64 = osm_parse_size(opt, val, r->min, r->max); break;
    case OSM_OPT_DOUBLE: {
        char *end;
        double d = strtod(val, &end);
        if (end == val || *end || !(d > r->lo && d <= r->hi)) {
            if (r->hi < HUGE_VAL)
                osm_usage_error("%s: expected a number above %g, at most %g; got '%s'", opt, r->lo, r->hi, val);
            osm_usage_error("%s: expected a number above %g; got '%s'", opt, r->lo, val);
        }
        *r->var.d = d;
        break;
    }
    case OSM_OPT_STR: *r->var.s = val; break;
    case OSM_OPT_FLAG: *r->var.flag = true; break;
    case OSM_OPT_CHOICE: {
        int k = 0;
        for (const char *c = r->choices; c; c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL, k++) {
            size_t len = strcspn(c, "|");
            if (strlen(val) == len && strncmp(c, val, len) == 0) {
                *r->var.i = k;
                return;
            }
        }
        osm_usage_error("%s: expected one of %s, got '%s'", opt, r->choices, val);
    }
    case OSM_OPT_LIST:
    case OSM_OPT_SIZE_LIST: parse_list(r, opt, val); break;
    case OSM_OPT_FUNC:
        if (r->var.parse(val) != 0)
            osm_usage_error("%s: bad value '%s'", opt, val);
        break;
    }
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

    size_t nopts = 0;
    while (info->opts && info->opts[nopts].name)
        nopts++;
    char(*defs)[DEF_LEN] = calloc(nopts + 1, DEF_LEN); /* the defaults, before options change them */
    if (!defs)
        osm_die("out of memory");
    for (size_t k = 0; k < nopts; k++)
        fmt_default(&info->opts[k], defs[k]);

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
        const struct osm_opt *row = NULL;
        if (!takes && strcmp(name, "help") && strcmp(name, "human")) {
            row = find_opt(info, name);
            if (!row)
                osm_usage_error("unknown option '--%s'", name);
            takes = row->type != OSM_OPT_FLAG;
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

        if (row) {
            parse_opt(row, val);
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
