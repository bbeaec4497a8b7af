/* verify.c - --verify: what every block must hold, within a run and across
 * runs.
 *
 * Every lbs-sized block written starts with a header (a magic number, its
 * own offset, the generation of the run that wrote it and the seed); the
 * rest is a function of (offset, seed, generation). The verify state, a
 * file (--verify-state; by default beside the target), records the target,
 * its block size, the seed and, block by block, the generation that last
 * wrote it (0: never). A run that writes takes the next generation, and
 * saves the state marked unfinished before its first write and finished
 * after its last; a read must then match exactly what the state names: a
 * misplaced, lost (stale: an earlier generation's data), zeroed or
 * corrupted block cannot. After a writer that never finished (killed, a
 * power cut) a block may hold what the state names or what that writer
 * wrote, and nothing else.
 *
 * While running, per block: the generation (atomic, as completions on other
 * threads set it) and a word whose low 16 bits count the writes to it in
 * flight and whose high 16 count those completed. A read that found a write
 * in flight on any of its blocks, or whose blocks' words changed while it
 * was in flight, raced a write: either content could be right, so it is
 * counted, not checked.
 */
#include "run.h"

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VMAGIC 0x4f534d5659464932ull /* "OSMVYFI2" */
#define VMAX_BLOCKS (1ull << 28)     /* 6 bytes each in memory, 2 in the state */
#define VGEN_MAX 0xFFFEu             /* the last generation; */
#define VGEN_UNKNOWN 0xFFFFu         /* a block whose write failed: its content is not known */
#define STATE_MAGIC "iogen verify state 1"

static _Atomic uint16_t *vgen;
static _Atomic uint32_t *vbusy;
static uint64_t vblocks;

static struct {
    char path[4200];
    char ident[96];     /* "file DEV INO" or "block RDEV" */
    uint64_t seed;
    unsigned gen;       /* the generation this run writes, or the state's last */
    unsigned alt;       /* an unfinished writer's generation, also accepted (0: none) */
    bool writes;        /* this process writes: it saves the state */
    unsigned lbs;       /* the block: the targets' logical block (run_init's) */
    const char *target; /* --target, as given, for the state's header */
} vs;

/* ------------------------------------------------------------ the pattern */

static uint64_t vword(uint64_t off, uint64_t key, uint64_t i)
{
    uint64_t x = off * 0x9E3779B97F4A7C15ull ^ key ^ (i * 0xBF58476D1CE4E5B9ull);
    x ^= x >> 31;
    x *= 0x94D049BB133111EBull;
    return x ^ (x >> 29);
}

static uint64_t vkey(unsigned gen)
{
    return (vs.seed ^ 0xC0FFEEull) * 0xD6E8FEB86659FD93ull ^ (uint64_t)gen * 0xA0761D6478BD642Full;
}

void verify_fill(char *buf, uint64_t off, uint32_t len)
{
    uint64_t key = vkey(vs.gen);
    for (uint32_t b = 0; b < len; b += vs.lbs) {
        uint64_t *w = (uint64_t *)(buf + b), at = off + b;
        w[0] = VMAGIC;
        w[1] = at;
        w[2] = vs.gen;
        w[3] = vs.seed;
        for (uint32_t i = 4; i < vs.lbs / 8; i++)
            w[i] = vword(at, key, i);
    }
}

/* Does the block at `at` hold exactly what generation gen wrote there? */
static bool holds(const uint64_t *w, uint64_t at, unsigned gen)
{
    if (!gen || w[0] != VMAGIC || w[1] != at || w[2] != gen || w[3] != vs.seed)
        return false;
    uint64_t key = vkey(gen);
    for (uint32_t i = 4; i < vs.lbs / 8; i++)
        if (w[i] != vword(at, key, i))
            return false;
    return true;
}

static uint64_t busy_sum(uint64_t first, uint64_t n)
{
    uint64_t sum = 0;
    for (uint64_t b = first; b < first + n; b++)
        sum += atomic_load(&vbusy[b]);
    return sum;
}

void verify_issue(struct io *io)
{
    uint64_t first = io->off / vs.lbs, n = io->len / vs.lbs;
    if (io->write) {
        for (uint64_t b = first; b < first + n; b++)
            atomic_fetch_add(&vbusy[b], 1);
        return;
    }
    io->verify_stable = true;
    for (uint64_t b = first; b < first + n && io->verify_stable; b++)
        io->verify_stable = (atomic_load(&vbusy[b]) & 0xFFFF) == 0;
    io->verify_seq = busy_sum(first, n);
}

void verify_done(struct stream *s, struct io *io, bool ok)
{
    uint64_t first = io->off / vs.lbs, n = io->len / vs.lbs;
    if (io->write) {
        for (uint64_t b = first; b < first + n; b++) {
            atomic_store(&vgen[b], (uint16_t)(ok ? vs.gen : VGEN_UNKNOWN)); /* before the count says it is done */
            atomic_fetch_add(&vbusy[b], 0xFFFF); /* one fewer in flight, one more completed */
        }
        return;
    }
    if (!ok)
        return;
    bool raced = !io->verify_stable || busy_sum(first, n) != io->verify_seq;
    for (uint64_t k = 0; k < n; k++) {
        const uint64_t *w = (const uint64_t *)(io->buf + k * vs.lbs);
        uint64_t at = io->off + k * vs.lbs;
        unsigned g = atomic_load(&vgen[first + k]);
        s->vread++;
        if (raced || g == VGEN_UNKNOWN) {
            s->raced++;
            continue;
        }
        bool alt = holds(w, at, vs.alt);
        if (!g && !alt) {
            s->vnever++; /* nothing to check it against: reported, never a pass */
            continue;
        }
        s->verified++;
        if (alt || holds(w, at, g))
            continue;
        s->bad++;
        if (w[0] != VMAGIC)
            s->vnopattern++;
        else if (w[1] == at && w[3] == vs.seed && w[2] && w[2] < g)
            s->vstale++; /* an earlier generation's data: a later write was lost */
    }
}

/* ------------------------------------------------------------ the state */

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* The state's path: --verify-state, else beside a file target, or for a
 * block device (whose /dev is a RAM file system) in the current directory.
 * 0, or -1 when it would be too long. */
static int state_path(const struct iogen_config *cfg, const struct target *t)
{
    const char *base = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;
    int n = cfg->verify_state ? snprintf(vs.path, sizeof vs.path, "%s", cfg->verify_state)
                             : snprintf(vs.path, sizeof vs.path, "%s.iogen-verify", t->block ? base : t->path);
    return n > 0 && (size_t)n < sizeof vs.path ? 0 : -1;
}

struct loaded {
    char ident[96], target[4096];
    unsigned lbs, gen, finished;
    uint64_t blocks, seed;
};

/* Reads the state at vs.path: 1 with its header in *l and its map (at most
 * vblocks, grown to its own length) in vgen; 0 when there is none; -1. */
static int load(struct loaded *l, char *err, size_t errlen)
{
    int fd = open(vs.path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && errno == ENOENT)
        return 0;
    if (fd < 0)
        return fail(err, errlen, "--verify-state %s: %s", vs.path,
                    errno == ELOOP ? "is a symbolic link: refused" : strerror(errno));
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return fail(err, errlen, "--verify-state %s: %s", vs.path, strerror(errno));
    }
    char line[4200];
    int got = 0;
    memset(l, 0, sizeof *l);
    bool ok = fgets(line, sizeof line, f) && !strcmp(line, STATE_MAGIC "\n");
    while (ok && fgets(line, sizeof line, f) && strcmp(line, "map\n")) {
        line[strcspn(line, "\n")] = 0;
        char *v = strchr(line, ' ');
        if (!v) {
            ok = false;
            break;
        }
        *v++ = 0;
        if (!strcmp(line, "target"))
            snprintf(l->target, sizeof l->target, "%s", v), got |= 1;
        else if (!strcmp(line, "identity"))
            snprintf(l->ident, sizeof l->ident, "%s", v), got |= 2;
        else if (!strcmp(line, "block"))
            got |= (sscanf(v, "%u", &l->lbs) == 1) << 2;
        else if (!strcmp(line, "blocks"))
            got |= (sscanf(v, "%" SCNu64, &l->blocks) == 1) << 3;
        else if (!strcmp(line, "seed"))
            got |= (sscanf(v, "%" SCNu64, &l->seed) == 1) << 4;
        else if (!strcmp(line, "generation"))
            got |= (sscanf(v, "%u", &l->gen) == 1) << 5;
        else if (!strcmp(line, "finished"))
            got |= (sscanf(v, "%u", &l->finished) == 1) << 6;
        else
            ok = false;
    }
    ok = ok && got == 0x7F && !strcmp(line, "map\n") && l->lbs && l->blocks <= VMAX_BLOCKS && l->gen <= VGEN_MAX;
    if (!ok) {
        fclose(f);
        return fail(err, errlen, "--verify-state %s: is not an iogen verify state (left as it is: give another "
                    "--verify-state)", vs.path);
    }
    if (l->blocks > vblocks) { /* an earlier run's larger region: kept */
        _Atomic uint16_t *g = realloc(vgen, l->blocks * sizeof *g);
        if (!g) {
            fclose(f);
            return fail(err, errlen, "--verify-state %s: no memory for its map", vs.path);
        }
        vgen = g;
        for (uint64_t b = vblocks; b < l->blocks; b++)
            atomic_init(&vgen[b], 0);
        vblocks = l->blocks;
    }
    uint16_t buf[32768];
    for (uint64_t b = 0; ok && b < l->blocks;) {
        size_t n = l->blocks - b < 32768 ? (size_t)(l->blocks - b) : 32768;
        ok = fread(buf, 2, n, f) == n;
        for (size_t i = 0; ok && i < n; i++)
            atomic_init(&vgen[b + i], le16toh(buf[i]));
        b += n;
    }
    ok = ok && fgetc(f) == EOF && !ferror(f);
    fclose(f);
    if (!ok)
        return fail(err, errlen, "--verify-state %s: its map is cut short or too long (damaged)", vs.path);
    return 1;
}

/* Writes the state atomically: a new file beside it (created exclusively,
 * never through a link), synced, then renamed over it. */
static int save(bool finished, char *err, size_t errlen)
{
    char tmp[sizeof vs.path + 8], dir[sizeof vs.path];
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", vs.path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return fail(err, errlen, "--verify-state %s: cannot create a file beside it: %s", vs.path, strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return fail(err, errlen, "--verify-state %s: %s", vs.path, strerror(errno));
    }
    fchmod(fd, 0644);
    char target[4096];
    snprintf(target, sizeof target, "%s", vs.target);
    for (char *c = target; *c; c++)
        if (*c == '\n')
            *c = '?';
    fprintf(f, STATE_MAGIC "\ntarget %s\nidentity %s\nblock %u\nblocks %" PRIu64 "\nseed %" PRIu64 "\ngeneration %u\n"
            "finished %d\nmap\n", target, vs.ident, vs.lbs, vblocks, vs.seed, vs.gen, finished);
    uint16_t buf[32768];
    for (uint64_t b = 0; b < vblocks;) {
        size_t n = vblocks - b < 32768 ? (size_t)(vblocks - b) : 32768;
        for (size_t i = 0; i < n; i++)
            buf[i] = htole16(atomic_load(&vgen[b + i]));
        fwrite(buf, 2, n, f);
        b += n;
    }
    bool ok = fflush(f) == 0 && !ferror(f) && fsync(fd) == 0;
    int e = errno;
    ok = fclose(f) == 0 && ok;
    if (ok && rename(tmp, vs.path) != 0)
        ok = false, e = errno;
    if (!ok) {
        unlink(tmp);
        return fail(err, errlen, "--verify-state %s: cannot write it: %s", vs.path, strerror(e ? e : EIO));
    }
    snprintf(dir, sizeof dir, "%s", vs.path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        slash[slash == dir] = 0;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) { /* the rename itself, durable */
        fsync(dfd);
        close(dfd);
    }
    return 0;
}

int verify_open(const struct iogen_config *cfg, const struct target *t, unsigned lbs, bool writes, char *err,
                size_t errlen)
{
    vs.lbs = lbs;
    vs.target = cfg->target;
    if (state_path(cfg, t) != 0)
        return fail(err, errlen, "--verify: the verify state's path is too long (give a shorter --verify-state)");
    vs.writes = writes;
    struct stat st;
    if (fstat(t->fd, &st) != 0)
        return fail(err, errlen, "%s: %s", t->path, strerror(errno));
    if (S_ISBLK(st.st_mode))
        snprintf(vs.ident, sizeof vs.ident, "block %lu", (unsigned long)st.st_rdev);
    else
        snprintf(vs.ident, sizeof vs.ident, "file %lu %lu", (unsigned long)st.st_dev, (unsigned long)st.st_ino);
    vblocks = t->size / vs.lbs;
    if (vblocks > VMAX_BLOCKS) {
        snprintf(err, errlen, "--verify keeps six bytes per %u-byte block: %llu blocks is too many; verify a smaller "
                 "region with --size", vs.lbs, (unsigned long long)vblocks);
        return -1;
    }
    vgen = calloc(vblocks ? vblocks : 1, sizeof *vgen);
    if (!vgen)
        return fail(err, errlen, "--verify: no memory for the state of %" PRIu64 " blocks", vblocks);
    struct loaded l;
    int got = load(&l, err, errlen);
    if (got < 0)
        return -1;
    /* a state that does not describe what is on the target now */
    char why[sizeof l.target + sizeof l.ident + 32];
    const char *other = NULL;
    if (got && strcmp(l.ident, vs.ident))
        snprintf(why, sizeof why, "describes another target (%s, %s)", l.target, l.ident), other = why;
    else if (got)
        other = t->created          ? "describes the file that was there before iogen created this one"
                : l.lbs != vs.lbs  ? "was written in blocks of another size"
                : !l.finished && writes ? "was left by a writing run that never finished: what each block holds is "
                                          "not known"
                                    : NULL;
    if (!got && !writes)
        return fail(err, errlen, "--verify: no verify state %s: nothing on this target was written with --verify, so "
                    "nothing could be checked (write it with --verify first; --verify-state FILE if the state is "
                    "elsewhere)", vs.path);
    if (other && !writes)
        return fail(err, errlen, "--verify: the state %s %s: nothing can be checked against it (write the target "
                    "with --verify again)", vs.path, other);
    if (other)
        fprintf(stderr, "iogen: note: --verify: the state %s %s; a new one replaces it\n", vs.path, other);
    vs.seed = got && !other ? l.seed : cfg->seed;
    vs.gen = got ? l.gen : 0;
    if (other) { /* a fresh map for this target, its generations still counting up */
        free(vgen);
        vblocks = t->size / vs.lbs;
        vgen = calloc(vblocks ? vblocks : 1, sizeof *vgen);
        if (!vgen)
            return fail(err, errlen, "--verify: no memory for the state of %" PRIu64 " blocks", vblocks);
    }
    vbusy = calloc(vblocks ? vblocks : 1, sizeof *vbusy);
    if (!vbusy)
        return fail(err, errlen, "--verify: no memory for the state of %" PRIu64 " blocks", vblocks);
    if (got && !other && cfg->seed_set && cfg->seed != vs.seed)
        fprintf(stderr, "iogen: note: --verify: the blocks were written with seed %llu (the state %s says so): %s with "
                "it; --seed %llu still chooses the offsets\n", (unsigned long long)vs.seed, vs.path,
                writes ? "writing and checking" : "checking", (unsigned long long)cfg->seed);
    if (got && !other && !l.finished) {
        vs.alt = l.gen; /* only reads here: each block may hold what the state says or what that writer wrote */
        fprintf(stderr, "iogen: note: --verify: the writing run of generation %u never finished: a block may hold "
                "what it held before or what that run wrote, and nothing else\n", l.gen);
    }
    if (!writes)
        return 0;
    if (vs.gen >= VGEN_MAX)
        return fail(err, errlen, "--verify: the state %s has counted %u generations, the most: remove it and write "
                    "the target with --verify again", vs.path, VGEN_MAX);
    vs.gen++;
    if (cfg->precondition) /* its data over the whole target hold no pattern */
        for (uint64_t b = 0; b < t->size / vs.lbs; b++)
            atomic_store(&vgen[b], 0);
    return save(false, err, errlen); /* before the first write: a writer that dies is known to have begun */
}

int verify_close(char *err, size_t errlen)
{
    return vs.writes ? save(true, err, errlen) : 0;
}

void verify_json(struct json *j)
{
    json_kstr(j, "state", vs.path);
    json_kuint(j, "seed", vs.seed);
    json_kuint(j, "generation", vs.gen);
}
