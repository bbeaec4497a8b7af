/* test_spec.c - checks of the access spec model, the shipped workloads, the
 * native spec format and the Iometer .icf import (bench/iogen/spec/) against
 * the fixtures in tests/fixtures. Run from the repository root:
 *
 *   build/test/test_spec                  the checks
 *   build/test/test_spec A.icf B.icf ...  the checks, then each real .icf given
 *   build/test/test_spec --json FILE      print the job FILE gives, as JSON
 *
 * Prints one line per check and a closing "N passed, N failed" line; exits
 * non-zero when any check fails. Run by tests/test_iogen_spec.py. */
#include "spec.h"
#include "check.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FIX "tests/fixtures/"

static struct job job, other; /* big: keep them off the stack */
static char err[1024];


/* ---- helpers ------------------------------------------------------------- */

static bool line_is(const struct spec_line *l, uint64_t size, unsigned access, unsigned read, unsigned random,
                    unsigned delay, unsigned burst, uint64_t align)
{
    return l->size == size && l->access == access && l->read == read && l->random == random &&
           l->delay_ms == delay && l->burst == burst && l->align == align;
}

static const char *fmt_line(const struct spec_line *l)
{
    static char buf[8][128];
    static int k;
    char *b = buf[k++ % 8];
    snprintf(b, 128, "%llu B, %u%% of accesses, %u%% read, %u%% random, delay %u, burst %u, align %llu",
             (unsigned long long)l->size, l->access, l->read, l->random, l->delay_ms, l->burst,
             (unsigned long long)l->align);
    return b;
}

/* The index of the first line where a and b differ, or -1. */
static int first_difference(const struct spec *a, const struct spec *b)
{
    int n = a->nlines < b->nlines ? a->nlines : b->nlines;
    for (int i = 0; i < n; i++) {
        const struct spec_line *x = &a->line[i], *y = &b->line[i];
        if (!line_is(x, y->size, y->access, y->read, y->random, y->delay_ms, y->burst, y->align))
            return i;
    }
    return a->nlines == b->nlines ? -1 : n;
}

static int spec_named(const struct job *j, const char *name)
{
    for (int i = 0; i < j->nspecs; i++)
        if (strcmp(j->specs[i].name, name) == 0)
            return i;
    return -1;
}

/* The job as JSON, in a string the caller frees. */
static char *json_of(const struct job *j)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        perror("open_memstream");
        exit(2);
    }
    job_print_json(j, f);
    fclose(f);
    if (!buf)
        exit(2);
    return buf;
}

/* A copy of src in a temporary file, each "\n" written as to_nl and the first
 * occurrence of from (if any) replaced by to. Returns the path (static). */
static const char *temp_copy(const char *src, const char *to_nl, const char *from, const char *to)
{
    static char path[64];
    FILE *in = fopen(src, "r");
    if (!in)
        return NULL;
    char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, in);
    fclose(in);
    text[n] = '\0';
    snprintf(path, sizeof path, "/tmp/test_spec.XXXXXX");
    int fd = mkstemp(path);
    if (fd < 0)
        return NULL;
    FILE *out = fdopen(fd, "w");
    char *hit = from ? strstr(text, from) : NULL;
    for (char *p = text; *p; p++) {
        if (p == hit) {
            fputs(to, out);
            p += strlen(from) - 1;
        } else if (*p == '\n') {
            fputs(to_nl, out);
        } else {
            fputc(*p, out);
        }
    }
    fclose(out);
    return (from && !hit) ? NULL : path;
}

/* ---- the shipped workloads ---------------------------------------------- */

static const char *const shipped[] = {"file-server", "web-server", "database", "workstation",
                                      "4k-random-read", "4k-random-write", "1m-seq-read", "1m-seq-write"};
#define NSHIPPED 8

/* The PenguinoMeter paper's appendix tables (size, % of accesses). */
static const uint64_t fs_mix[][2] = {{512, 10}, {1024, 5}, {2048, 5}, {4096, 60},
                                     {8192, 2}, {16384, 4}, {32768, 4}, {65536, 10}};
static const uint64_t ws_mix[][2] = {{512, 22}, {1024, 15}, {2048, 8},  {4096, 23},   {8192, 15},
                                     {16384, 2}, {32768, 6}, {65536, 7}, {131072, 1}, {524288, 1}};

static void check_mix(const char *name, const uint64_t (*mix)[2], int n, unsigned read, unsigned random)
{
    struct spec s;
    int bad = -1;
    bool ok = spec_builtin(name, &s) == 0 && s.nlines == n;
    for (int i = 0; ok && i < n; i++)
        if (!line_is(&s.line[i], mix[i][0], (unsigned)mix[i][1], read, random, 0, 1, 0))
            ok = false, bad = i;
    check(ok, name, "%d lines, as in the paper's appendix, all %u%% read %u%% random%s%s", s.nlines, read,
          random, bad >= 0 ? "; differs at " : "", bad >= 0 ? fmt_line(&s.line[bad]) : "");
}

static double mean_size(const struct spec *s)
{
    double m = 0;
    for (int i = 0; i < s->nlines; i++)
        m += (double)s->line[i].size * s->line[i].access / 100.0;
    return m;
}

static void test_shipped(void)
{
    struct spec s;
    for (int i = 0; i < NSHIPPED; i++) {
        int rc = spec_builtin(shipped[i], &s);
        int v = rc == 0 ? spec_validate(&s, err, sizeof err) : -1;
        check(rc == 0 && v == 0 && strcmp(s.name, shipped[i]) == 0, "shipped validates", "%s: %s", shipped[i],
              rc ? "unknown" : v ? err : "valid");
    }
    check(spec_builtin("file_server", &s) == -1, "shipped unknown name", "'file_server' is not a shipped name");

    spec_builtin("database", &s);
    check(s.nlines == 1 && line_is(&s.line[0], 8192, 100, 67, 100, 0, 1, 0), "shipped database", "%s",
          fmt_line(&s.line[0]));
    spec_builtin("workstation", &s);
    check(s.nlines == 1 && line_is(&s.line[0], 8192, 100, 80, 80, 0, 1, 0), "shipped workstation", "%s",
          fmt_line(&s.line[0]));
    check_mix("file-server", fs_mix, 8, 80, 100);
    check_mix("web-server", ws_mix, 10, 100, 100);

    /* The paper's own summaries: mean 11300 B (file server), 16035 B (web server). */
    spec_builtin("file-server", &s);
    double m = mean_size(&s);
    check(m > 11300 - 100 && m < 11300 + 100, "file-server mean size", "%.2f B (paper: about 11300)", m);
    spec_builtin("web-server", &s);
    m = mean_size(&s);
    check((long)m == 16035, "web-server mean size", "%.2f B (paper: 16035)", m);

    /* 4 KiB random I/O is 4 KiB aligned (as fio and every 4k test do); the
     * Iometer-derived specs keep Iometer's sector alignment (align 0). */
    static const struct { const char *name; uint64_t size; unsigned read, random; uint64_t align; } simple[] = {
        {"4k-random-read", 4096, 100, 100, 4096}, {"4k-random-write", 4096, 0, 100, 4096},
        {"1m-seq-read", 1048576, 100, 0, 0},      {"1m-seq-write", 1048576, 0, 0, 0}};
    for (int i = 0; i < 4; i++) {
        spec_builtin(simple[i].name, &s);
        check(s.nlines == 1 &&
                  line_is(&s.line[0], simple[i].size, 100, simple[i].read, simple[i].random, 0, 1, simple[i].align),
              "shipped simple", "%s: %s", simple[i].name, fmt_line(&s.line[0]));
    }

    /* The list: one "name<TAB>description" line each, in order. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    spec_list_builtins(f);
    fclose(f);
    int n = 0;
    bool ok = true;
    for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n"), n++) {
        size_t k = n < NSHIPPED ? strlen(shipped[n]) : 0;
        if (n >= NSHIPPED || strncmp(line, shipped[n], k) != 0 || line[k] != '\t' || strlen(line + k + 1) < 10)
            ok = false;
    }
    check(ok && n == NSHIPPED, "list builtins", "%d lines of name<TAB>description", n);
    free(buf);
}

/* ---- spec_validate ----------------------------------------------------------- */

static void expect_invalid(const char *name, const struct spec *s, const char *phrase)
{
    int rc = spec_validate(s, err, sizeof err);
    check(rc == -1 && strstr(err, phrase), name, "%s", rc ? err : "accepted");
}

static void test_validate(void)
{
    struct spec s = {.name = "X", .nlines = 2};
    s.line[0] = (struct spec_line){.size = 4096, .access = 50, .read = 100, .random = 100, .burst = 1};
    s.line[1] = (struct spec_line){.size = 8192, .access = 50, .read = 0, .random = 0, .burst = 1};
    check(spec_validate(&s, err, sizeof err) == 0, "validate good", "two lines of 50%%");

    s.line[1].access = 45;
    int rc = spec_validate(&s, err, sizeof err);
    check(rc == -1 && strcmp(err, "spec 'X': the lines' % of accesses add up to 95, not 100") == 0,
          "validate sum", "%s", err);
    s.line[1].access = 50;

    s.line[1].read = 101;
    expect_invalid("validate read", &s, "line 2: % read is 101");
    s.line[1].read = 0;
    s.line[0].random = 150;
    expect_invalid("validate random", &s, "line 1: % random is 150");
    s.line[0].random = 100;
    s.line[1].burst = 0;
    expect_invalid("validate burst", &s, "line 2: burst is 0");
    s.line[1].burst = 1;
    s.line[0].size = 0;
    expect_invalid("validate size", &s, "line 1: size is 0");
    s.line[0].size = 4096;
    s.nlines = 0;
    expect_invalid("validate empty", &s, "spec 'X' has no lines");
}

/* ---- .icf ---------------------------------------------------------------- */

static int parse_icf(const char *path)
{
    int rc = icf_parse_file(path, &job, err, sizeof err);
    check(rc == 0, "icf parses", "%s%s%s", path, rc ? ": " : "", rc ? err : "");
    return rc;
}

static void test_icf_file_server(void)
{
    if (parse_icf(FIX "file-server.icf"))
        return;
    check(job.nspecs == 3 && job.nworkers == 0, "icf specs only", "%d specs, %d workers (a file with no "
          "MANAGER LIST gives no workers)", job.nspecs, job.nworkers);
    const struct spec *s = &job.specs[0];
    check(strcmp(s->name, "File Server (Intel)") == 0 && s->nlines == 8, "icf file-server shape", "'%s', %d lines",
          s->name, s->nlines);
    check(line_is(&s->line[3], 4096, 60, 80, 100, 0, 1, 0), "icf file-server 4K line", "%s", fmt_line(&s->line[3]));
    struct spec fs;
    spec_builtin("file-server", &fs);
    int d = first_difference(s, &fs);
    check(d < 0, "icf file-server = shipped", "%s", d < 0 ? "all 8 lines equal" : fmt_line(&s->line[d]));

    s = &job.specs[1];
    check(strcmp(s->name, "4K; 70% read, aligned 4K") == 0, "icf name with a comma",
          "'%s' (the name is everything before the last comma)", s->name);
    check(s->nlines == 1 && line_is(&s->line[0], 4096, 100, 70, 100, 2, 8, 4096), "icf delay burst align", "%s",
          fmt_line(&s->line[0]));
    check(strcmp(job.specs[2].name, "Echo 512 (network)") == 0, "icf unassigned reply spec kept", "'%s'",
          job.specs[2].name);
}

static void test_icf_full(void)
{
    if (parse_icf(FIX "full.icf"))
        return;
    check(job.run_s == 90 && job.ramp_s == 5, "icf run and ramp", "run %g s (0 1 30), ramp %g s", job.run_s,
          job.ramp_s);
    check(job.cycle_qd && job.qd_start == 1 && job.qd_end == 32 && job.qd_step == 2 && job.qd_exponential,
          "icf queue depth cycling", "cycle %d: %u..%u step %u %s", job.cycle_qd, job.qd_start, job.qd_end,
          job.qd_step, job.qd_exponential ? "exponential" : "linear");
    check(strcmp(job.description, "osmeter fixture: two workers, queue depth 1..32") == 0, "icf description",
          "'%s'", job.description);
    check(job.nspecs == 2 && job.specs[1].nlines == 2 &&
              line_is(&job.specs[1].line[0], 65536, 40, 0, 0, 5, 4, 0) &&
              line_is(&job.specs[1].line[1], 4096, 60, 30, 100, 0, 1, 4096),
          "icf mixed spec", "%s; %s", fmt_line(&job.specs[1].line[0]), fmt_line(&job.specs[1].line[1]));
    if (job.nworkers != 2) {
        check(false, "icf workers", "%d workers, expected 2", job.nworkers);
        return;
    }
    const struct worker_cfg *a = &job.workers[0], *b = &job.workers[1];
    check(strcmp(a->name, "Worker A") == 0 && a->outstanding == 4 && strcmp(job.specs[a->spec[0]].name, "OLTP 8K") == 0,
          "icf worker A", "'%s', %u outstanding, spec '%s'", a->name, a->outstanding, job.specs[a->spec[0]].name);
    check(a->max_bytes == 1048576 && a->start_bytes == 4096, "icf sectors to bytes",
          "2048 sectors -> %llu B, sector 8 -> %llu B", (unsigned long long)a->max_bytes,
          (unsigned long long)a->start_bytes);
    check(a->fixed_seed && a->seed == 42 && a->pattern == DATA_PSEUDO_RANDOM, "icf seed and pattern",
          "fixed %d seed %llu pattern %d", a->fixed_seed, (unsigned long long)a->seed, a->pattern);
    check(strcmp(b->name, "Worker B") == 0 && b->outstanding == 16 && b->spec[0] == 1 && !b->fixed_seed &&
              b->max_bytes == 0 && b->start_bytes == 0 && b->pattern == DATA_RANDOM,
          "icf worker B", "'%s', %u outstanding, spec %d, pattern %d", b->name, b->outstanding, b->spec[0], b->pattern);
}

static void test_icf_legacy(void)
{
    if (parse_icf(FIX "legacy.icf"))
        return;
    check(job.run_s == 3600 && job.cycle_qd && job.qd_start == 1 && job.qd_end == 8 && job.qd_step == 1 &&
              !job.qd_exponential,
          "icf legacy test setup", "run %g s, Test Type 6 = cycle %u..%u step %u linear", job.run_s, job.qd_start,
          job.qd_end, job.qd_step);
    check(job.nspecs == 1 && line_is(&job.specs[0].line[0], 262144, 100, 100, 0, 0, 1, 0), "icf 7-field lines",
          "%s", fmt_line(&job.specs[0].line[0]));
    check(job.nworkers == 2 && strcmp(job.workers[1].name, "host-b worker") == 0, "icf two managers",
          "%d workers, all managers' workers taken", job.nworkers);
    if (job.nworkers == 2)
        check(job.workers[0].outstanding == 2 && job.workers[0].max_bytes == 51200 &&
                  job.workers[0].start_bytes == 512 && !job.workers[0].fixed_seed &&
                  job.workers[1].outstanding == 3,
              "icf old worker headers", "outstanding %u and %u, max %llu B, start %llu B", job.workers[0].outstanding,
              job.workers[1].outstanding, (unsigned long long)job.workers[0].max_bytes,
              (unsigned long long)job.workers[0].start_bytes);
}

/* ---- the native format ------------------------------------------------------- */

static void test_native(void)
{
    int rc = spec_parse_file(FIX "minimal.spec", &job, err, sizeof err);
    check(rc == 0, "native parses", "minimal.spec%s%s", rc ? ": " : "", rc ? err : "");
    if (rc == 0) {
        const struct spec *s = &job.specs[0];
        check(job.nspecs == 1 && strcmp(s->name, "small mix") == 0 && s->nlines == 3 &&
                  line_is(&s->line[0], 512, 25, 100, 100, 0, 1, 0) && line_is(&s->line[1], 4096, 25, 100, 100, 0, 1, 0) &&
                  line_is(&s->line[2], 65536, 50, 0, 0, 0, 16, 1048576),
              "native sizes and defaults", "%s; %s", fmt_line(&s->line[1]), fmt_line(&s->line[2]));
        check(job.nworkers == 1 && job.workers[0].outstanding == 1 && job.workers[0].spec[0] == 0, "native default worker",
              "%d worker, %u outstanding, spec %d", job.nworkers, job.workers[0].outstanding, job.workers[0].spec[0]);
    }

    rc = spec_parse_file(FIX "shipped.spec", &job, err, sizeof err);
    check(rc == 0, "native parses", "shipped.spec%s%s", rc ? ": " : "", rc ? err : "");
    if (rc == 0) {
        struct spec ws;
        spec_builtin("web-server", &ws);
        check(job.nspecs == 1 && strcmp(job.specs[0].name, "web-server") == 0 &&
                  first_difference(&job.specs[0], &ws) < 0 && job.nworkers == 1 && job.workers[0].spec[0] == 0 &&
                  job.workers[0].outstanding == 8,
              "native shipped spec", "worker '%s' runs '%s' (%d lines), %u outstanding", job.workers[0].name,
              job.specs[0].name, job.specs[0].nlines, job.workers[0].outstanding);
        check(job.transactions == 100000 && job.run_s == 0, "native transactions", "%llu",
              (unsigned long long)job.transactions);
        check(strcmp(job.description, "tab\there, \"quotes\", back\\slash # kept: a description runs to the end of "
                                      "the line") == 0,
              "native description", "'%s'", job.description);
    }
}

/* The same job from the .icf and the native file, byte for byte as JSON; and
 * from the .icf with Windows line ends, found by its content. */
static void test_round_trip(void)
{
    int r1 = icf_parse_file(FIX "full.icf", &job, err, sizeof err);
    char *a = json_of(&job);
    int r2 = spec_parse_file(FIX "full.spec", &other, err, sizeof err);
    char *b = json_of(&other);
    check(r1 == 0 && r2 == 0 && strcmp(a, b) == 0, "round trip icf = native", "%s",
          r1 || r2 ? err : strcmp(a, b) ? "the JSON differs" : "full.icf and full.spec give the same JSON");
    free(b);

    r2 = spec_parse_file(FIX "full.icf", &other, err, sizeof err);
    b = json_of(&other);
    check(r2 == 0 && strcmp(a, b) == 0, "spec_parse_file reads .icf", "%s", r2 ? err : "same job");
    free(b);

    const char *crlf = temp_copy(FIX "full.icf", "\r\n", NULL, NULL);
    r2 = crlf ? spec_parse_file(crlf, &other, err, sizeof err) : -1;
    b = json_of(&other);
    check(r2 == 0 && strcmp(a, b) == 0, "icf with CRLF line ends", "%s", r2 ? err : "same job (found by its Version line)");
    free(b);
    if (crlf)
        unlink(crlf);
    free(a);
}

static void test_json(void)
{
    icf_parse_file(FIX "full.icf", &job, err, sizeof err);
    char *s = json_of(&job);
    static const char *const want[] = {
        "{\"description\": \"osmeter fixture: two workers, queue depth 1..32\", \"run_s\": 90, \"ramp_s\": 5, ",
        "\"cycle_qd\": true, \"qd_start\": 1, \"qd_end\": 32, \"qd_step\": 2, \"qd_exponential\": true, "
        "\"specs\": [",
        "{\"size\": 4096, \"access\": 60, \"read\": 30, \"random\": 100, \"delay_ms\": 0, \"burst\": 1, "
        "\"align\": 4096}",
        "{\"name\": \"Worker A\", \"spec\": \"OLTP 8K\", \"outstanding\": 4, \"max_bytes\": 1048576, "
        "\"start_bytes\": 4096, \"pattern\": \"pseudo-random\", \"fixed_seed\": true, \"seed\": 42, ",
    };
    for (int i = 0; i < 4; i++)
        check(strstr(s, want[i]) != NULL, "json fields", "%s", want[i]);
    check(s[strlen(s) - 1] == '\n' && strchr(s, '\n') == s + strlen(s) - 1, "json one line", "%zu bytes", strlen(s));
    free(s);

    job_init(&job);
    snprintf(job.description, sizeof job.description, "q\"b\\t\tn\nc\001.");
    s = json_of(&job);
    check(strstr(s, "\"description\": \"q\\\"b\\\\t\\tn\\nc\\u0001.\"") != NULL, "json escapes", "%.60s", s);
    check(strstr(s, "\"specs\": [], \"workers\": [], \"cycle_workers\": null, \"cycle_targets\": null, "
                    "\"cycle_size\": null}\n") != NULL, "json empty job", "%s", s);
    free(s);
}

/* ---- errors --------------------------------------------------------------- */

static void test_errors(void)
{
    static const struct {
        const char *file; /* in tests/fixtures */
        int line;         /* the line the message must name */
        const char *phrase;
    } bad[] = {
        {"bad-sum99.icf", 4, "spec 'Short by one': the lines' % of accesses add up to 99, not 100"},
        {"bad-nonnumeric.icf", 6, "% of size: '1OO' is not a number"},
        {"bad-network.icf", 16, "is a NETWORK,TCP worker"},
        {"bad-connrate.icf", 19, "test connection rate is ENABLED"},
        {"bad-increment-targets.icf", 26, "Test Type INCREMENT_TARGETS_PARALLEL is not supported"},
        {"bad-header.icf", 25, "unknown header 'Bogus Key"},
        {"bad-unassigned.icf", 14, "has no assigned access spec"},
        {"bad-missing.icf", 24, "'Random 8K', which the file does not define"},
        {"bad-reply.icf", 24, "reply size is a network feature; osmeter's disk generator does not support it"},
        {"bad-truncated.icf", 58, "is it truncated?"},
        {"bad-key.spec", 6, "unknown key 'outstandng'"},
        {"bad-missing.spec", 5, "spec 'nosuch' is not defined in this file"},
        {"bad-dup.spec", 4, "spec 'r' is defined twice"},
        {"bad-size.spec", 2, "size: '4Q' is not a size"},
        {"bad-sum.spec", 1, "add up to 95, not 100"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char path[128], where[160];
        snprintf(path, sizeof path, FIX "%s", bad[i].file);
        snprintf(where, sizeof where, "%s:%d: ", path, bad[i].line);
        bool icf = strstr(path, ".icf") != NULL;
        err[0] = '\0';
        int rc = icf ? icf_parse_file(path, &job, err, sizeof err) : spec_parse_file(path, &job, err, sizeof err);
        bool ok = rc == -1 && strncmp(err, where, strlen(where)) == 0 && strstr(err, bad[i].phrase) != NULL;
        check(ok, "error", "%s -> %s", bad[i].file, rc ? err : "accepted");
    }
    int rc = spec_parse_file(FIX "no-such-file.spec", &job, err, sizeof err);
    check(rc == -1 && strstr(err, "cannot open"), "error", "missing file -> %s", err);
}

/* ---- several specs and targets per worker, cycling ----------------------- */

static void test_icf_lists(void)
{
    if (parse_icf(FIX "two-specs.icf"))
        return;
    const struct worker_cfg *w = &job.workers[0];
    check(job.nworkers == 1 && w->nspec == 2 && strcmp(job.specs[w->spec[0]].name, "Random 4K") == 0 &&
              strcmp(job.specs[w->spec[1]].name, "Seq 64K") == 0 && job_steps(&job) == 2,
          "icf specs in sequence", "%d workers, %d specs, steps %d", job.nworkers, w->nspec, job_steps(&job));
    check(w->ntarget == 1 && strcmp(w->target[0], "sdb: \"FIXTURE DISK\"") == 0, "icf target names kept", "%d: '%s'",
          w->ntarget, w->ntarget ? w->target[0] : "");
    if (parse_icf(FIX "cycle-workers.icf"))
        return;
    check(job.cycle_workers.on && job.cycle_workers.start == 1 && job.cycle_workers.step == 1 &&
              !job.cycle_workers.exponential && job.cycle_workers.end == 0 && !job.cycle_targets.on && !job.cycle_qd,
          "icf CYCLE_WORKERS", "on %d, %llu..%llu step %llu", job.cycle_workers.on,
          (unsigned long long)job.cycle_workers.start, (unsigned long long)job.cycle_workers.end,
          (unsigned long long)job.cycle_workers.step);
    uint64_t v[16];
    struct cycle c = { .on = true, .exponential = true, .start = 512, .end = 65536, .step = 2 };
    int n = cycle_values(&c, 0, 0, v, 16);
    check(n == 8 && v[0] == 512 && v[7] == 65536, "cycle values x2", "%d values, %llu..%llu", n,
          (unsigned long long)v[0], (unsigned long long)v[n - 1]);
    c = (struct cycle){ .on = true, .start = 1, .end = 0, .step = 2 };
    n = cycle_values(&c, 6, 0, v, 16);
    check(n == 3 && v[0] == 1 && v[1] == 3 && v[2] == 5, "cycle values +2 up to all", "%d values", n);
    /* the native format's lists: spec and target given again */
    const char *spec = temp_copy(FIX "minimal.spec", "\n", NULL, NULL);
    FILE *f = spec ? fopen(spec, "a") : NULL;
    if (f) {
        fputs("\n[worker W]\nspec = 1m-seq-read\ntarget = a\nspec = 4k-random-read\ntarget = b\n", f);
        fclose(f);
    }
    int rc = spec ? spec_parse_file(spec, &job, err, sizeof err) : -1;
    w = &job.workers[0];
    check(rc == 0 && job.nworkers == 1 && w->nspec == 2 && strcmp(job.specs[w->spec[1]].name, "4k-random-read") == 0 &&
              w->ntarget == 2 && strcmp(w->target[1], "b") == 0,
          "native spec and target lists", "%s", rc ? err : "two specs, two targets");
    if (spec)
        unlink(spec);
}

/* ---- .icf round trip: read, write, read the same job; the second write the same bytes ---- */

static char *icf_text(const struct job *j)
{
    char *buf = NULL, e[512];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = icf_write(j, NULL, 0, f, e, sizeof e);
    fclose(f);
    if (rc) {
        free(buf);
        snprintf(err, sizeof err, "icf_write: %s", e);
        return NULL;
    }
    return buf;
}

static void round_trip_icf(const char *path, const char *label)
{
    if (icf_parse_file(path, &job, err, sizeof err)) {
        check(false, "icf round trip", "%s: %s", label, err);
        return;
    }
    char *a = json_of(&job), *t1 = icf_text(&job);
    char tmp[] = "/tmp/test_spec_rt.XXXXXX";
    int fd = t1 ? mkstemp(tmp) : -1;
    bool ok = fd >= 0 && write(fd, t1, strlen(t1)) == (ssize_t)strlen(t1);
    if (fd >= 0)
        close(fd);
    int rc = ok ? icf_parse_file(tmp, &other, err, sizeof err) : -1;
    char *b = rc == 0 ? json_of(&other) : NULL, *t2 = rc == 0 ? icf_text(&other) : NULL;
    check(rc == 0 && b && !strcmp(a, b), "icf round trip: same job", "%s%s%s", label, rc ? ": " : "",
          rc ? err : b && strcmp(a, b) ? ": the JSON differs" : "");
    check(t1 && t2 && !strcmp(t1, t2), "icf round trip: same bytes", "%s", label);
    if (fd >= 0)
        unlink(tmp);
    free(a);
    free(b);
    free(t1);
    free(t2);
}

static void test_icf_round_trips(void)
{
    static const char *const files[] = { "full.icf", "legacy.icf", "file-server.icf", "two-specs.icf",
                                          "two-specs-mix.icf", "cycle-workers.icf" };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char p[128];
        snprintf(p, sizeof p, FIX "%s", files[i]);
        round_trip_icf(p, files[i]);
    }
    /* what the format cannot hold is refused, not dropped */
    job_init(&job);
    job.run_s = 1.5;
    char *t = icf_text(&job);
    check(!t && strstr(err, "whole seconds"), "icf write refuses what it cannot hold", "%s", t ? "written" : err);
    free(t);
}

/* ---- real .icf files (argv) ----------------------------------------------- */

static void real_kochaika(const char *path)
{
    check(job.nspecs == 13 && job.nworkers == 0, "real icf kochaika count", "%s: %d specs, %d workers", path,
          job.nspecs, job.nworkers);
    int i = spec_named(&job, "Database pattern (Intel/StorageReview.com)");
    check(i >= 0 && job.specs[i].nlines == 1 && line_is(&job.specs[i].line[0], 8192, 100, 67, 100, 0, 1, 0),
          "real icf kochaika database", "%s", i >= 0 ? fmt_line(&job.specs[i].line[0]) : "not found");
    static const struct { const char *file, *ours; } same[] = {
        {"Fileserver pattern (Intel)", "file-server"},
        {"Workstation pattern (StorageReview.com)", "workstation"},
    };
    for (int k = 0; k < 2; k++) {
        struct spec s;
        spec_builtin(same[k].ours, &s);
        i = spec_named(&job, same[k].file);
        int d = i >= 0 ? first_difference(&job.specs[i], &s) : 0;
        check(i >= 0 && d < 0, "real icf kochaika = shipped", "'%s' = %s%s%s", same[k].file, same[k].ours,
              d >= 0 && i >= 0 ? ": differs at " : "", d >= 0 && i >= 0 ? fmt_line(&job.specs[i].line[d]) : "");
    }
    /* This file's web server has 66560 B where the paper (and our mix) has 64 KiB. */
    struct spec ws;
    spec_builtin("web-server", &ws);
    i = spec_named(&job, "Webserver pattern (unknown)");
    int d = i >= 0 ? first_difference(&job.specs[i], &ws) : 0;
    bool only_line_8 = i >= 0 && d == 7 && job.specs[i].line[7].size == 66560;
    if (only_line_8) {
        struct spec copy = job.specs[i];
        copy.line[7].size = 65536;
        only_line_8 = first_difference(&copy, &ws) < 0;
    }
    check(only_line_8, "real icf kochaika web server", "same as web-server except line 8: 66560 B (paper: 65536)");
}

static void real_cov_rich(const char *path)
{
    const struct spec *s = &job.specs[0];
    check(job.nspecs == 1 && strcmp(s->name, "All in one") == 0 && s->nlines == 29 &&
              line_is(&s->line[10], 4096, 4, 100, 100, 0, 1, 4096),
          "real icf cov_rich spec", "%s: '%s', %d lines, line 11: %s", path, s->name, s->nlines, fmt_line(&s->line[10]));
    check(job.nworkers == 2 && job.workers[0].pattern == DATA_REPEATING && job.workers[1].pattern == DATA_RANDOM &&
              job.run_s == 4 && !job.cycle_qd,
          "real icf cov_rich setup", "%d workers, patterns %d %d, run %g s, NORMAL (no cycling)", job.nworkers,
          job.workers[0].pattern, job.workers[1].pattern, job.run_s);
}

/* This file enables Iometer's test connection rate, which osmeter refuses; the
 * rest of it must read once that one field is DISABLED. */
static void real_worker_rich(const char *path)
{
    const char *copy = temp_copy(path, "\n", "\t8,ENABLED,5,", "\t8,DISABLED,5,");
    int rc = copy ? icf_parse_file(copy, &job, err, sizeof err) : -1;
    check(rc == 0, "real icf worker_rich without connection rate", "%s", !copy ? "field not found" : rc ? err : "parses");
    if (copy) {
        round_trip_icf(copy, "real icf eilerjc_iometer_worker_rich.icf (connection rate disabled)");
        icf_parse_file(copy, &job, err, sizeof err);
        unlink(copy);
    }
    if (rc)
        return;
    const struct worker_cfg *w = &job.workers[0];
    check(job.nspecs == 2 && job.nworkers == 1 && strcmp(job.specs[w->spec[0]].name, "64 KiB; 100% Read; 0% random") == 0 &&
              w->outstanding == 8 && w->fixed_seed && w->seed == 12345 && w->max_bytes == 1024 * 512 &&
              w->start_bytes == 64 * 512 && w->pattern == DATA_PSEUDO_RANDOM,
          "real icf worker_rich values", "'%s' %u outstanding, seed %llu, max %llu B, start %llu B, pattern %d",
          w->name, w->outstanding, (unsigned long long)w->seed, (unsigned long long)w->max_bytes,
          (unsigned long long)w->start_bytes, w->pattern);
}

static void test_real(const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    int rc = spec_parse_file(path, &job, err, sizeof err);
    if (strcmp(base, "eilerjc_iometer_worker_rich.icf") == 0) {
        char where[512];
        snprintf(where, sizeof where, "%s:55: ", path);
        check(rc == -1 && strncmp(err, where, strlen(where)) == 0 && strstr(err, "test connection rate"),
              "real icf refused as expected", "%s: %s", base, rc ? err : "accepted");
        real_worker_rich(path);
        return;
    }
    bool valid = rc == 0;
    for (int i = 0; valid && i < job.nspecs; i++)
        valid = spec_validate(&job.specs[i], err, sizeof err) == 0;
    check(valid, "real icf parses", "%s: %s", base, rc ? err : valid ? "0 errors" : err);
    if (!valid)
        return;
    if (strcmp(base, "kochaika_iSCSI_iometer.icf") == 0)
        real_kochaika(base);
    else if (strcmp(base, "eilerjc_iometer_cov_rich_disk.icf") == 0)
        real_cov_rich(base);
    char label[300];
    snprintf(label, sizeof label, "real icf %s", base);
    round_trip_icf(path, label);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--json") == 0) {
        if (spec_parse_file(argv[2], &job, err, sizeof err)) {
            fprintf(stderr, "%s\n", err);
            return 1;
        }
        job_print_json(&job, stdout);
        return 0;
    }
    test_shipped();
    test_validate();
    test_icf_file_server();
    test_icf_full();
    test_icf_legacy();
    test_native();
    test_round_trip();
    test_json();
    test_errors();
    test_icf_lists();
    test_icf_round_trips();
    for (int i = 1; i < argc; i++)
        test_real(argv[i]);
    return check_summary();
}
