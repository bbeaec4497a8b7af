/* options.c - iogen's options, declared once in one table that drives the
 * parsing, --help and the option list in docs/iogen.md (iogen
 * --options-markdown prints it; a test keeps the two equal); and the job
 * built from the options and the workload file. */
#include "config.h"
#include "osm.h"
#include "osmmem.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* --batch 4: on the devices measured (zram, a RAM loop device, a virtio disk)
 * four requests per submission gave the most I/Os per second, where every
 * free slot at once let a virtual disk serve them in rounds and one at a
 * time cost a system call per I/O (docs/iogen.md) */
static const struct iogen_config defaults = { .cpu = -1, .seed = 0x5eed, .batch = 4 };

#define MAX_RUN_S 1e7 /* about 116 days: far beyond any run, and well inside the tick arithmetic */

/* ------------------------------------------------------------ setters */

static const char *setting; /* the name of the option being set, for messages: "--time" */

static double parse_num(const char *v, const char *what, double lo, double hi)
{
    char *end;
    errno = 0;
    double d = strtod(v, &end);
    if (!*v || *end || errno || !(d >= lo) || !(d <= hi))
        osm_usage_error("%s: expected %s from %g to %g, got '%s'", setting, what, lo, hi, v);
    return d;
}

static void set_target(struct iogen_config *c, const char *v)
{
    if (c->ntargets == IOGEN_MAX_TARGETS)
        osm_usage_error("--target: at most %d targets", IOGEN_MAX_TARGETS);
    for (int i = 0; i < c->ntargets; i++)
        if (!strcmp(c->targets[i], v))
            osm_usage_error("--target %s is given twice", v);
    c->targets[c->ntargets++] = v;
    c->target = c->targets[0];
}
static void set_source(struct iogen_config *c, const char *v)
{
    if (c->workload || c->spec_file || c->icf_file)
        osm_usage_error("give exactly one of --workload, --spec or --icf, once");
    *(!strcmp(setting, "--workload") ? &c->workload : !strcmp(setting, "--spec") ? &c->spec_file : &c->icf_file) = v;
}
static void set_spec_name(struct iogen_config *c, const char *v) { c->spec_name = v; }
static void set_engine(struct iogen_config *c, const char *v)
{
    c->engine = engine_find(v);
    c->engine_set = true;
    if (!c->engine)
        osm_usage_error("--engine: expected %s, got '%s'", engine_names(), v);
}
static void set_qd(struct iogen_config *c, const char *v) { c->qd = (unsigned)osm_parse_u64(setting, v, 1, 65536); }
static void set_cycle(struct iogen_config *c, const char *v)
{
    *(!strcmp(setting, "--cycle-qd") ? &c->cycle : !strcmp(setting, "--cycle-workers") ? &c->cycle_workers
      : !strcmp(setting, "--cycle-targets") ? &c->cycle_targets : &c->cycle_size) = v;
}
static void set_save_icf(struct iogen_config *c, const char *v) { c->save_icf = v; }
static void set_results_csv(struct iogen_config *c, const char *v) { c->results_csv = v; }
static void set_live(struct iogen_config *c, const char *v) { (void)v; c->live = true; }
static void set_status(struct iogen_config *c, const char *v) { (void)v; c->status = true; }
static void set_ramp_ios(struct iogen_config *c, const char *v) { c->ramp_ios = osm_parse_u64(setting, v, 1, UINT64_MAX / 2); }
static void set_zones(struct iogen_config *c, const char *v) { c->zones = (unsigned)osm_parse_u64(setting, v, 1, 100000); }
static void set_workers(struct iogen_config *c, const char *v) { c->workers = (unsigned)osm_parse_u64(setting, v, 1, SPEC_MAX_WORKERS); }
static void set_size(struct iogen_config *c, const char *v) { c->size = osm_parse_size(setting, v, 4096, 1ull << 50); }
static void set_time(struct iogen_config *c, const char *v) { c->time_s = parse_num(v, "seconds", 0, MAX_RUN_S); c->time_set = true; }
static void set_ramp(struct iogen_config *c, const char *v) { c->ramp_s = parse_num(v, "seconds", 0, MAX_RUN_S); c->ramp_set = true; }
static void set_transactions(struct iogen_config *c, const char *v) { c->transactions = osm_parse_u64(setting, v, 1, UINT64_MAX); }
static void set_interval(struct iogen_config *c, const char *v) { c->interval_s = parse_num(v, "seconds", 0, MAX_RUN_S); }
static void set_rate(struct iogen_config *c, const char *v) { c->rate = parse_num(v, "I/Os per second", 0, 1e9); }
static void set_start_at(struct iogen_config *c, const char *v)
{
    c->start_at = parse_num(v, "a Unix time in seconds", 1e9, 1e11);
    /* a start instant is for hosts started together: a day away is a mistake, not a plan */
    double away = c->start_at - (double)time(NULL);
    if (away > 86400 || away < -3600)
        osm_usage_error("--start-at %s is %.0f s from now: expected a time within the next day", v, away);
}
static void set_log(struct iogen_config *c, const char *v) { c->log_file = v; }
static void set_verify(struct iogen_config *c, const char *v) { (void)v; c->verify = true; }
static void set_verify_state(struct iogen_config *c, const char *v) { c->verify_state = v; }
static void set_buffered(struct iogen_config *c, const char *v) { (void)v; c->buffered = true; }
static void set_destroy(struct iogen_config *c, const char *v) { (void)v; c->allow_destroy = true; }
static void set_signature(struct iogen_config *c, const char *v) { (void)v; c->allow_signature = true; }
static void set_cpu(struct iogen_config *c, const char *v) { c->cpu = (int)osm_parse_u64(setting, v, 0, CPU_SETSIZE - 1); }
static void set_seed(struct iogen_config *c, const char *v) { c->seed = osm_parse_u64(setting, v, 0, UINT64_MAX); c->seed_set = true; }
static void set_batch(struct iogen_config *c, const char *v) { c->batch = (unsigned)osm_parse_u64(setting, v, 0, 65536); }
static void set_dump(struct iogen_config *c, const char *v) { (void)v; c->dump_spec = true; }
static void set_steady(struct iogen_config *c, const char *v)
{
    char err[256];
    if (steady_parse(v, &c->steady, err, sizeof err) != 0)
        osm_usage_error("%s", err);
}
static void set_precondition(struct iogen_config *c, const char *v) { (void)v; c->precondition = true; }
static void set_stats(struct iogen_config *c, const char *v) { (void)v; c->stats = true; }
static void do_help(struct iogen_config *c, const char *v);
static void do_list(struct iogen_config *c, const char *v) { (void)c, (void)v; spec_list_builtins(stdout); exit(0); }
static void do_markdown(struct iogen_config *c, const char *v);

struct option_def {
    const char *name;    /* "--target" */
    const char *metavar; /* "PATH"; NULL: a flag */
    const char *help;
    void (*set)(struct iogen_config *c, const char *v);
};

static const struct option_def options[] = {
    { "--target", "PATH", "file (created and filled with --size when missing) or block device; again for more "
      "targets: each worker spreads its I/Os over them", set_target },
    { "--workload", "NAME", "a shipped workload (iogen --list-workloads)", set_source },
    { "--spec", "FILE", "a native spec file (docs/spec-format.md)", set_source },
    { "--icf", "FILE", "an Iometer .icf file", set_source },
    { "--spec-name", "NAME", "the access specification to use from a file that has no workers", set_spec_name },
    { "--engine", "E", "how requests reach the kernel (see Engines below; default uring)", set_engine },
    { "--qd", "N", "outstanding I/Os per worker (overrides the file)", set_qd },
    { "--cycle-qd", "S:E[:xK|:+K]", "run once per queue depth S..E, times K (default x2) or plus K", set_cycle },
    { "--cycle-workers", "S:E[:xK|:+K]", "run once per number of workers S..E (more than the file has: copies of "
      "the first)", set_cycle },
    { "--cycle-targets", "S:E[:xK|:+K]", "run once per number of targets S..E (the first ones given)", set_cycle },
    { "--cycle-size", "S:E[:xK|:+K]", "run once per transfer size S..E bytes (every line's size), x2 by default",
      set_cycle },
    { "--workers", "N", "workers (copies of the first one when the file has fewer)", set_workers },
    { "--size", "BYTES", "region used on the target (and the size of a new file)", set_size },
    { "--time", "SECONDS", "measured time per run (default 10)", set_time },
    { "--ramp", "SECONDS", "ramp-up before each run, not recorded (default 1)", set_ramp },
    { "--ramp-ios", "N", "ramp-up until N I/Os have completed instead (SPEK's ramp by requests)", set_ramp_ios },
    { "--transactions", "N", "stop a run after N I/Os (with --time too, at whichever comes first)", set_transactions },
    { "--interval", "SECONDS", "also report every interval (0 = only the total)", set_interval },
    { "--steady", "M:B%:Ws", "end a run once M (iops, mbps, lat; M_slope: by slope) holds within B% over W s "
      "(--time is the most)", set_steady },
    { "--precondition", NULL, "write the region in order twice before the runs (SSD practice)", set_precondition },
    { "--rate", "IOPS", "limit the total rate, in I/Os per second", set_rate },
    { "--start-at", "UNIX_S", "start the first run's requests at this wall-clock time (synchronized hosts)",
      set_start_at },
    { "--zones", "N", "bin a sequential run's throughput by offset into N zones of each target (SPEK's ZCAV)",
      set_zones },
    { "--live", NULL, "on a terminal, redraw per-worker IOPS, MB/s and latency bars every second", set_live },
    { "--status", NULL, "while measuring, a JSON status line on standard output every interval (1 s without "
      "--interval): the load and the prober's system figures since the last (fleet load streams them)", set_status },
    { "--results-csv", "FILE", "also write Iometer's results file (CSV: ALL, MANAGER, WORKER, DISK rows)",
      set_results_csv },
    { "--save-icf", "FILE", "write the job as an Iometer .icf (then run it, unless --dump-spec)", set_save_icf },
    { "--log", "FILE", "one CSV row per request: start_ns,offset,size,op,latency_ns,worker,qd,run,target", set_log },
    { "--verify", NULL, "write a checkable pattern; check every block read against the verify state", set_verify },
    { "--verify-state", "FILE", "what --verify wrote, for later runs (default TARGET.iogen-verify; for a device, "
      "NAME.iogen-verify here)", set_verify_state },
    { "--buffered", NULL, "through the page cache (default O_DIRECT)", set_buffered },
    { "--allow-destroy-data", NULL, "allow writes to a block device", set_destroy },
    { "--allow-signature", NULL, "... even one holding a file system or partition table", set_signature },
    { "--cpu", "N", "pin every worker thread to CPU N", set_cpu },
    { "--seed", "N", "random seed (default fixed; a .icf fixed seed wins)", set_seed },
    { "--batch", "N", "submit at most N requests per system call (default 4; 0: every free slot)", set_batch },
    { "--stats", NULL, "where an I/O's time goes: each batch's issue, engine call and accounting timed "
      "(cpu_per_io in the result, a line on stderr)", set_stats },
    { "--dump-spec", NULL, "print the job as JSON and exit", set_dump },
    { "--list-workloads", NULL, "the shipped workloads", do_list },
    { "--options-markdown", NULL, "this option list as a Markdown table (docs/iogen.md)", do_markdown },
    { "--help", NULL, "this text", do_help },
};

#define NOPTS (sizeof options / sizeof options[0])

/* One option's line of --help (indent: its table's) or its Markdown row. */
static void print_option(const char *indent, const char *name, const char *metavar, const char *help, bool markdown)
{
    char flag[64];
    snprintf(flag, sizeof flag, "%s%s%s", name, metavar ? " " : "", metavar ? metavar : "");
    if (markdown)
        printf("| `%s` | %s |\n", flag, help);
    else if (strlen(flag) <= 20)
        printf("%s%-20s %s\n", indent, flag, help);
    else
        printf("%s%s\n%s%-20s %s\n", indent, flag, indent, "", help);
}

/* The engines, each with its own options (once per table: an engine that shares another's says whose). */
static void print_engines(bool markdown)
{
    if (markdown)
        printf("| engine | how |\n|---|---|\n");
    else
        printf("\nEngines, each with its own options:\n");
    for (size_t i = 0; engine_at(i); i++) {
        const struct engine_ops *e = engine_at(i);
        printf(markdown ? "| `%s` | %s%s |\n" : "  %-8s %s%s\n", e->name, e->summary,
               e == engine_default ? " (default)" : "");
        const struct engine_ops *first = e;
        for (size_t k = 0; e->options && k < i; k++)
            if (engine_at(k)->options == e->options && first == e)
                first = engine_at(k);
        if (!markdown && first != e)
            printf("    the options of %s\n", first->name);
        else if (!markdown)
            for (const struct engine_option *o = e->options ? e->options->table : NULL; o && o->name; o++)
                print_option("    ", o->name, o->metavar, o->help, false);
    }
    if (!markdown)
        return;
    for (size_t i = 0; engine_at(i); i++) {
        const struct engine_ops *e = engine_at(i);
        bool first = true;
        for (size_t k = 0; k < i; k++)
            first = first && engine_at(k)->options != e->options;
        if (!e->options || !first)
            continue;
        printf("\nThe options of `%s`", e->name);
        for (size_t k = i + 1; engine_at(k); k++)
            if (engine_at(k)->options == e->options)
                printf(" and `%s`", engine_at(k)->name);
        printf(":\n\n| option | meaning |\n|---|---|\n");
        for (const struct engine_option *o = e->options->table; o->name; o++)
            print_option("", o->name, o->metavar, o->help, true);
    }
}

static void do_help(struct iogen_config *c, const char *v)
{
    (void)c, (void)v;
    printf("usage: iogen --target PATH (--workload NAME | --spec FILE | --icf FILE) [options]\n"
           "Raw I/O generator: Iometer access specifications on a file or block device.\n"
           "Prints one JSON object per run (docs/DESIGN.md, contract 7).\n\n");
    for (size_t i = 0; i < NOPTS; i++)
        print_option("  ", options[i].name, options[i].metavar, options[i].help, false);
    print_engines(false);
    exit(0);
}

static void do_markdown(struct iogen_config *c, const char *v)
{
    (void)c, (void)v;
    printf("| option | meaning |\n|---|---|\n");
    for (size_t i = 0; i < NOPTS; i++)
        print_option("", options[i].name, options[i].metavar, options[i].help, true);
    printf("\n");
    print_engines(true);
    exit(0);
}

/* The engine whose own options were set (from their defaults), or NULL. */
static const struct engine_ops *engine_options_set(void)
{
    for (size_t i = 0; engine_at(i); i++)
        if (engine_at(i)->options && engine_at(i)->options->set())
            return engine_at(i);
    return NULL;
}

/* "--a, --b and --c": the options of table, for a message. */
static const char *option_names(const struct engine_option *table)
{
    static char buf[512];
    size_t n = 0;
    buf[0] = 0;
    for (const struct engine_option *o = table; o->name && n < sizeof buf; o++) {
        int w = snprintf(buf + n, sizeof buf - n, "%s%s", o == table ? "" : !o[1].name ? " and " : ", ", o->name);
        n = w > 0 ? n + (size_t)w : n;
    }
    return buf;
}

void options_parse(int argc, char **argv, struct iogen_config *c)
{
    *c = defaults;
    c->engine = engine_default;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        const struct option_def *d = NULL;
        for (size_t k = 0; k < NOPTS && !d; k++)
            if (strlen(options[k].name) == len && !strncmp(options[k].name, a, len))
                d = &options[k];
        const struct engine_options *of;
        const struct engine_option *eo = d ? NULL : engine_option_find(a, len, &of);
        if (!d && !eo)
            osm_usage_error("unknown option '%s'", a);
        setting = d ? d->name : eo->name;
        const char *metavar = d ? d->metavar : eo->metavar;
        const char *val = NULL;
        if (metavar) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else
                osm_usage_error("%s needs a value (%s)", setting, metavar);
        } else if (eq) {
            osm_usage_error("%s takes no value", setting);
        }
        if (d)
            d->set(c, val);
        else
            eo->set(eo->name, val);
    }
    if (!!c->workload + !!c->spec_file + !!c->icf_file != 1)
        osm_usage_error("give exactly one of --workload, --spec or --icf");
    /* the one check of the engines' own options: any set keeps their engine, and no other engine takes them */
    const struct engine_ops *tuned = engine_options_set();
    c->engine_auto = !c->engine_set && !c->dump_spec && !tuned;
    if (c->engine_auto) {
        /* where the kernel (or qemu-user) offers no io_uring, the next engine, said in the results */
        c->engine = engine_usable_default(&c->engine_fallback);
        if (c->engine_fallback)
            fprintf(stderr, "iogen: warning: the kernel offers no faster engine here (%s); using --engine %s\n", c->engine_fallback,
                    c->engine->name);
    }
    if (!c->target && !c->dump_spec && !c->engine->no_target)
        osm_usage_error("--target PATH is required");
    if (c->target && c->engine->no_target)
        osm_usage_error("--engine %s does no I/O: give no --target (--size sets the region it pretends to use)",
                        c->engine->name);
    if (tuned && tuned->options != c->engine->options)
        osm_usage_error("%s %s %s's: not for --engine %s", option_names(tuned->options->table),
                        tuned->options->table[1].name ? "are" : "is", tuned->options->owner,
                        c->engine->name);
    if (c->verify_state && !c->verify)
        osm_usage_error("--verify-state goes with --verify");
    if (c->verify && c->engine->no_target)
        osm_usage_error("--verify checks what the target holds: --engine %s has none", c->engine->name);
    if (c->ramp_ios && c->ramp_set)
        osm_usage_error("give --ramp SECONDS or --ramp-ios N, not both");
    const struct engine_options *eo = c->engine->options;
    const char *refused = eo && eo->refuse ? eo->refuse(!c->buffered) : NULL;
    if (refused)
        osm_usage_error("%s", refused);
}

/* ---------------------------------------------------------------- the job */

/* The most requests any worker keeps outstanding, over every queue depth the job cycles through, on all its
 * targets (Iometer's outstanding I/Os are per target). */
static unsigned most_outstanding(const struct iogen_config *c, const struct job *job)
{
    unsigned most = 0;
    for (int i = 0; i < job->nworkers; i++)
        if (job->workers[i].outstanding > most)
            most = job->workers[i].outstanding;
    if (job->cycle_qd && job->qd_end > most)
        most = job->qd_end;
    unsigned nt = c->ntargets > 1 ? (unsigned)c->ntargets : 1;
    return most > UINT32_MAX / nt ? UINT32_MAX : most * nt;
}

/* A cycle option S:E[:xK|:+K] (whole numbers, each in full: no 32-bit wrap), x2 by default. */
static void parse_cycle_text(const char *name, const char *text, uint64_t most, struct cycle *c)
{
    const char *p = text;
    uint64_t s, e, k = 2;
    char op = 'x';
    bool ok = !osm_scan_u64(p, &p, 0, UINT64_MAX, &s) && *p++ == ':' && !osm_scan_u64(p, &p, 0, UINT64_MAX, &e);
    if (ok && *p == ':') {
        op = p[1];
        ok = (op == 'x' || op == '+') && !osm_scan_u64(p + 2, &p, 0, UINT64_MAX, &k);
    }
    if (!ok || *p)
        osm_usage_error("%s: expected START:END or START:END:xK or START:END:+K (whole numbers), got '%s'", name, text);
    if (s > most || e > most || k > 65536)
        osm_usage_error("%s '%s': the values go up to %llu and the step to 65536", name, text,
                        (unsigned long long)most);
    *c = (struct cycle){ .on = true, .exponential = op == 'x', .start = s, .end = e, .step = k };
    const char *bad = cycle_check(c, true);
    if (bad)
        osm_usage_error("%s '%s': %s", name, text, bad);
}

/* --cycle-qd into the job's queue depth cycling fields. */
static void parse_cycle(const struct iogen_config *c, struct job *job)
{
    struct cycle q;
    parse_cycle_text("--cycle-qd", c->cycle, 65536, &q);
    job->cycle_qd = true;
    job->qd_start = (unsigned)q.start;
    job->qd_end = (unsigned)q.end;
    job->qd_step = (unsigned)q.step;
    job->qd_exponential = q.exponential;
}

static void one_worker(struct job *job, int spec)
{
    job->nworkers = 1;
    memset(&job->workers[0], 0, sizeof job->workers[0]);
    snprintf(job->workers[0].name, sizeof job->workers[0].name, "worker 1");
    job->workers[0].spec[0] = spec;
    job->workers[0].nspec = 1;
    job->workers[0].outstanding = 1;
}

/* The job's specifications and workers from the workload, spec or .icf file, one spec by name if asked. */
static void job_load(const struct iogen_config *c, struct job *job)
{
    char err[512];
    job_init(job);
    if (c->workload) {
        if (spec_builtin(c->workload, &job->specs[0]) != 0)
            osm_usage_error("--workload: no shipped workload named '%s' (iogen --list-workloads)", c->workload);
        job->nspecs = 1;
    } else if (c->spec_file ? spec_parse_file(c->spec_file, job, err, sizeof err)
                             : icf_parse_file(c->icf_file, job, err, sizeof err)) {
        osm_usage_error("%s", err);
    }
    if (job->nspecs == 0)
        osm_usage_error("%s defines no access specification", c->spec_file ? c->spec_file : c->icf_file);
    if (c->spec_name) { /* one spec by name: the workers all use it */
        int k = -1;
        for (int i = 0; i < job->nspecs; i++)
            if (!strcmp(job->specs[i].name, c->spec_name))
                k = i;
        if (k < 0)
            osm_usage_error("--spec-name: no access specification named '%s' in the file", c->spec_name);
        for (int i = 0; i < job->nworkers; i++) {
            job->workers[i].spec[0] = k;
            job->workers[i].nspec = 1;
        }
        if (job->nworkers == 0)
            one_worker(job, k);
    }
    if (job->nworkers == 0) {
        if (job->nspecs > 1)
            osm_usage_error("the file defines %d access specifications and no worker: choose one with --spec-name",
                            job->nspecs);
        one_worker(job, 0);
    }
}

/* Workers, outstanding I/Os and cycling as the options say. */
static void job_shape(const struct iogen_config *c, struct job *job)
{
    if (c->workers) {
        for (unsigned i = (unsigned)job->nworkers; i < c->workers; i++) {
            job->workers[i] = job->workers[0];
            snprintf(job->workers[i].name, sizeof job->workers[i].name, "worker %u", i + 1);
        }
        job->nworkers = (int)c->workers;
    }
    if (c->qd) {
        for (int i = 0; i < job->nworkers; i++)
            job->workers[i].outstanding = c->qd;
        job->cycle_qd = false;
    }
    if (c->cycle)
        parse_cycle(c, job);
    if (c->cycle_workers)
        parse_cycle_text("--cycle-workers", c->cycle_workers, SPEC_MAX_WORKERS, &job->cycle_workers);
    if (c->cycle_targets)
        parse_cycle_text("--cycle-targets", c->cycle_targets, IOGEN_MAX_TARGETS, &job->cycle_targets);
    if (c->cycle_size)
        parse_cycle_text("--cycle-size", c->cycle_size, 1ull << 30, &job->cycle_size);
    /* cycling workers up to more than the file has: copies of the first, as --workers makes */
    if (job->cycle_workers.on && job->cycle_workers.end > (uint64_t)job->nworkers) {
        for (int i = job->nworkers; i < (int)job->cycle_workers.end; i++) {
            job->workers[i] = job->workers[0];
            snprintf(job->workers[i].name, sizeof job->workers[i].name, "worker %d", i + 1);
        }
        job->nworkers = (int)job->cycle_workers.end;
    }
    if (job->cycle_targets.on && !c->dump_spec && !c->engine->no_target &&
        (job->cycle_targets.end ? job->cycle_targets.end : job->cycle_targets.start) > (uint64_t)c->ntargets)
        osm_usage_error("cycling targets up to %llu: give that many --target",
                        (unsigned long long)(job->cycle_targets.end ? job->cycle_targets.end : job->cycle_targets.start));
    /* an end at all there are is Iometer's (an .icf gives no end): said as 0 */
    if (job->cycle_workers.end == (uint64_t)job->nworkers)
        job->cycle_workers.end = 0;
    if (job->cycle_targets.end && job->cycle_targets.end == (uint64_t)c->ntargets)
        job->cycle_targets.end = 0;
    if (job->cycle_workers.on && job->cycle_workers.start > (uint64_t)job->nworkers)
        osm_usage_error("cycling workers from %llu: the job has %d", (unsigned long long)job->cycle_workers.start,
                        job->nworkers);
}

/* What the job asks against what iogen and the engine allow, and its run and ramp times. */
static void job_check(const struct iogen_config *c, struct job *job)
{
    char err[512];
    if (c->verify && c->ntargets > 1)
        osm_usage_error("--verify checks one target: give one --target");
    if (c->zones)
        for (int i = 0; i < job->nworkers; i++)
            for (int k = 0; k < job->workers[i].nspec; k++) {
                const struct spec *s = &job->specs[job->workers[i].spec[k]];
                for (int l = 0; l < s->nlines; l++)
                    if (s->line[l].random)
                        osm_usage_error("--zones bins a sequential run by offset: spec '%s' line %d is %u%% random",
                                        s->name, l + 1, s->line[l].random);
            }
    /* a time and a count both bound the run (the first ends it); a count
     * alone leaves the time open, and with neither the run lasts 10 s */
    if (c->transactions)
        job->transactions = c->transactions;
    if (c->time_set)
        job->run_s = c->time_s;
    else if (job->run_s == 0 && !job->transactions)
        job->run_s = 10;
    if (c->ramp_set || job->ramp_s == 0)
        job->ramp_s = c->ramp_set ? c->ramp_s : 1;
    if (job->run_s <= 0 && !job->transactions)
        osm_usage_error("--time must be above 0 (or give --transactions)");
    if (job->run_s > MAX_RUN_S || job->ramp_s > MAX_RUN_S)
        osm_usage_error("a run time of %g s (ramp %g s) is beyond the %g s iogen allows", job->run_s, job->ramp_s,
                        MAX_RUN_S);
    for (int i = 0; i < job->nspecs; i++)
        if (spec_validate(&job->specs[i], err, sizeof err) != 0)
            osm_usage_error("%s", err);
    /* what the engine can hold */
    unsigned most = most_outstanding(c, job);
    if (c->engine->max_qd && most > c->engine->max_qd)
        osm_usage_error("%u outstanding I/Os per worker: the %s engine holds at most %u", most, c->engine->name,
                        c->engine->max_qd);
    if (c->engine->sync && most > 4096)
        osm_usage_error("%u outstanding I/Os per worker with the %s engine would be %u threads: at most 4096",
                        most, c->engine->name, most);
    for (int i = 0; i < job->nworkers; i++)
        for (int n = 0; n < job->workers[i].nspec; n++) {
            const struct spec *s = &job->specs[job->workers[i].spec[n]];
            for (int k = 0; k < s->nlines; k++)
                if (s->line[k].reply)
                    osm_usage_error("access spec '%s' line %d has a reply size of %llu bytes: reply size is a "
                                    "network feature; osmeter's disk generator does not support it",
                                    s->name, k + 1, (unsigned long long)s->line[k].reply);
        }
}

void options_build_job(const struct iogen_config *c, struct job *job)
{
    job_load(c, job);
    job_shape(c, job);
    job_check(c, job);
}

/* A target that refuses non-blocking I/O (zram) makes io_uring hand every request to one of its worker
 * threads: a switch there and one back per request, or a failed inline try and then the hand-over. A
 * thread per outstanding request issuing it itself (psync) does the same I/O without either, so the
 * default engine is psync there; --engine uring (or any io_uring option) insists on io_uring. */
void options_engine_for_target(struct iogen_config *c, const struct job *job, const struct target *t)
{
    const struct engine_ops *psync = engine_find("psync");
    if (!c->engine_auto || c->engine != engine_default || t->fd < 0 || most_outstanding(c, job) > 4096 ||
        !target_refuses_nowait(t->fd, t->lbs))
        return;
    c->engine = psync;
    c->engine_fallback = "uring: the target refuses non-blocking I/O, so io_uring would hand every request to a "
                          "worker thread; psync issues each from a thread of its own (--engine uring to insist)";
    fprintf(stderr, "iogen: note: %s\n", c->engine_fallback);
}
