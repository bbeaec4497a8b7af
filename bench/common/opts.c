/* opts.c - bench/'s option rows (struct osm_opt): each parsed into its variable within its limits,
 * strict whole numbers and sizes, --help from the rows. A probe reaches it through osm_init (args.c),
 * iotrace's commands and the MPI-IO replayer through osm_parse_command. (iogen keeps its own table,
 * bench/iogen/options/, with each engine's own options beside it.) It calls only msg.c, so a program
 * that links nothing else of bench/common (the MPI replayer, built by mpicc) can have it. */
#include "osm.h"
#include "opts.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* A row's default, as --help says it: the variable's value before any option
 * was parsed, or the row's words for a stand-in value; "" for none. */
static void fmt_default(const struct osm_opt *r, char *out)
{
    out[0] = 0;
    if (r->def) {
        snprintf(out, OSM_DEF_LEN, "%s", r->def);
        return;
    }
    switch (r->type) {
    case OSM_OPT_U64: snprintf(out, OSM_DEF_LEN, "%llu", (unsigned long long)*r->var.u64); break;
    case OSM_OPT_UINT: snprintf(out, OSM_DEF_LEN, "%u", *r->var.uint); break;
    case OSM_OPT_INT: snprintf(out, OSM_DEF_LEN, "%d", *r->var.i); break;
    case OSM_OPT_SIZE: fmt_size(out, OSM_DEF_LEN, *r->var.u64); break;
    case OSM_OPT_DOUBLE: snprintf(out, OSM_DEF_LEN, "%g", *r->var.d); break;
    case OSM_OPT_STR:
        if (*r->var.s)
            snprintf(out, OSM_DEF_LEN, "%s", *r->var.s);
        break;
    case OSM_OPT_CHOICE: {
        const char *c = r->choices;
        for (int k = 0; c && k < *r->var.i; k++)
            c = strchr(c, '|') ? strchr(c, '|') + 1 : NULL;
        if (c)
            snprintf(out, OSM_DEF_LEN, "%.*s", (int)strcspn(c, "|"), c);
        break;
    }
    case OSM_OPT_LIST:
    case OSM_OPT_SIZE_LIST:
        for (size_t k = 0, at = 0; k < *r->count && at + 24 < OSM_DEF_LEN; k++) {
            if (k)
                out[at++] = ',';
            if (r->type == OSM_OPT_LIST)
                snprintf(out + at, OSM_DEF_LEN - at, "%llu", (unsigned long long)r->var.u64[k]);
            else
                fmt_size(out + at, OSM_DEF_LEN - at, r->var.u64[k]);
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

const struct osm_opt *osm_opt_find(const struct osm_opt *rows, const char *name)
{
    for (const struct osm_opt *r = rows; r && r->name; r++)
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

void osm_opt_set(const struct osm_opt *r, const char *val)
{
    char opt[80];
    snprintf(opt, sizeof opt, "--%s", r->name);
    if (r->seen)
        *r->seen = true;
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

char (*osm_opt_defaults(const struct osm_opt *rows))[OSM_DEF_LEN]
{
    size_t n = 0;
    while (rows && rows[n].name)
        n++;
    char(*defs)[OSM_DEF_LEN] = calloc(n + 1, OSM_DEF_LEN);
    if (!defs) {
        fprintf(stderr, "%s: error: out of memory\n", osm_progname);
        exit(1);
    }
    for (size_t k = 0; k < n; k++)
        fmt_default(&rows[k], defs[k]);
    return defs;
}

void osm_opt_help(const struct osm_opt *rows, char (*defs)[OSM_DEF_LEN])
{
    for (size_t k = 0; rows && rows[k].name; k++) {
        const struct osm_opt *r = &rows[k];
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

const char *osm_opt_name(const char *arg, char name[OSM_NAME_LEN])
{
    if (strncmp(arg, "--", 2) != 0 || !arg[2])
        osm_usage_error("unexpected argument '%s'", arg);
    const char *eq = strchr(arg, '=');
    size_t len = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
    if (len >= OSM_NAME_LEN)
        osm_usage_error("unknown option '%s'", arg);
    memcpy(name, arg + 2, len);
    name[len] = 0;
    return eq;
}

const char *osm_opt_value(int argc, char **argv, int *i, const char *name, const char *eq, bool takes)
{
    if (takes) {
        if (eq)
            return eq + 1;
        if (*i + 1 < argc)
            return argv[++*i];
        osm_usage_error("--%s needs a value", name);
    }
    if (eq)
        osm_usage_error("--%s takes no value", name);
    return NULL;
}

static _Noreturn void command_help(const struct osm_command *c, char (*defs)[OSM_DEF_LEN])
{
    printf("usage: %s [options]%s%s\n", c->name, c->operands ? " " : "", c->operands ? c->operands : "");
    if (c->summary)
        printf("%s\n", c->summary);
    printf("\n  --%-14s %s\n", "help", "this text");
    osm_opt_help(c->opts, defs);
    exit(0);
}

int osm_parse_command(const struct osm_command *c, int argc, char **argv, const char **operands)
{
    char(*defs)[OSM_DEF_LEN] = osm_opt_defaults(c->opts); /* the defaults, before options change them */
    int n = 0, i;
    for (i = 0; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            i++;
            break;
        }
        if (arg[0] != '-' || !arg[1]) { /* an operand ("-" too: a name for standard input) */
            if (c->command_follows)
                break;
            if (n == c->max_operands)
                osm_usage_error("%s: unexpected '%s' (usage: %s %s)", c->name, arg, c->name,
                                c->operands ? c->operands : "[options]");
            operands[n++] = arg;
            continue;
        }
        char name[OSM_NAME_LEN];
        const char *eq = osm_opt_name(arg, name);
        if (!strcmp(name, "help") && !eq)
            command_help(c, defs);
        const struct osm_opt *row = osm_opt_find(c->opts, name);
        if (!row)
            osm_usage_error("%s: unknown option '--%s'", c->name, name);
        osm_opt_set(row, osm_opt_value(argc, argv, &i, name, eq, row->type != OSM_OPT_FLAG));
    }
    free(defs);
    if (c->command_follows)
        return i;
    for (; i < argc; i++) { /* after "--": operands, whatever they look like */
        if (n == c->max_operands)
            osm_usage_error("%s: unexpected '%s'", c->name, argv[i]);
        operands[n++] = argv[i];
    }
    return n;
}
