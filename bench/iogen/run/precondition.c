/* precondition.c - --precondition: the target written in order, twice,
 * before the runs (SSD practice: a fresh device's flash translation layer
 * flatters its first writes); and the data every write carries. */
#include "interrupt.h"
#include "osm.h"
#include "osmmem.h"
#include "run.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void fill_buffer(char *b, size_t n, enum data_pattern p, uint64_t seed)
{
    if (p == DATA_REPEATING) {
        memset(b, 0xA5, n);
        return;
    }
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t v = osm_rand(&seed);
        memcpy(b + i, &v, 8);
    }
}

int precondition(const struct target *t, uint64_t seed, struct precondition *out, char *err, size_t errlen)
{
    const size_t chunk = 1 << 20;
    char *buf;
    if (posix_memalign((void **)&buf, 4096, chunk) != 0)
        return snprintf(err, errlen, "--precondition: out of memory"), -1;
    fill_buffer(buf, chunk, DATA_PSEUDO_RANDOM, seed);
    uint64_t t0 = osm_stamp();
    memset(out, 0, sizeof *out);
    for (int pass = 0; pass < 2 && !interrupted; pass++) {
        for (uint64_t off = 0; off < t->size && !interrupted; off += chunk) {
            size_t n = t->size - off < chunk ? (size_t)(t->size - off) : chunk;
            n -= n % t->lbs;
            if (!n)
                break;
            if (pwrite(t->fd, buf, n, (off_t)off) != (ssize_t)n) {
                snprintf(err, errlen, "--precondition: writing at %llu: %s", (unsigned long long)off, strerror(errno));
                free(buf);
                return -1;
            }
            out->bytes += n;
        }
        out->passes++;
    }
    if (fdatasync(t->fd) != 0 && errno != EINVAL)
        snprintf(err, errlen, "--precondition: fdatasync: %s", strerror(errno));
    out->seconds = (double)(osm_stamp() - t0) / osm_timer.hz;
    free(buf);
    return interrupted ? -1 : 0;
}
