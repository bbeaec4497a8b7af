/* read.c - time to read a file block, sequentially and at random, with the
 * page cache out of the way, against file size.
 *
 * fs.read.seq   ns per block (4 KiB by default) reading a file in order
 * fs.read.rand  ns per block reading every block once in random order
 * Series over file sizes (4 MiB .. 256 MiB by default); the top-level samples
 * are those of the largest size. Each sample is one whole pass over the
 * file, timed, divided by its blocks; sequential and random passes take
 * turns so drift affects both alike. Below the cache: O_DIRECT; where the
 * file system refuses it (FUSE, some network file systems) the file's pages
 * are dropped with posix_fadvise(DONTNEED) before every pass and mincore
 * must confirm it, and read-ahead is left to the kernel for the sequential
 * pass (POSIX_FADV_SEQUENTIAL) and turned off for the random one
 * (POSIX_FADV_RANDOM). --remote names the ids .remote (a path on a network
 * or FUSE mount given by the user).
 */
#include "osm.h"
#include "osmfs.h"
#include "osmscratch.h"
#include "osmmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *dir = "/var/tmp";
static uint64_t block = 4096;
static uint64_t sizes[32] = { 4u << 20, 16u << 20, 64u << 20, 256u << 20 };
static size_t nsizes = 4;
static int method = OSM_NOCACHE_DIRECT; /* enum osm_nocache */
static bool remote;

static const struct osm_opt opts[] = {
    OSM_OPT_STR("dir", dir, "directory for the test files (not tmpfs)", .arg = "DIR"),
    OSM_OPT_SIZE_LIST("sizes", sizes, nsizes, 4096, 1ull << 40, "file sizes"),
    OSM_OPT_SIZE("block", block, 512, 64u << 20, "bytes per read"),
    OSM_OPT_CHOICE("method", method, OSM_NOCACHE_CHOICES,
                   "O_DIRECT (falls back to evict where refused), or buffered reads of evicted pages"),
    OSM_OPT_FLAG("remote", remote, "name the ids .remote (the directory is on another machine)"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "fs_read",
    .summary = "File read time per block, sequential and random, below the page cache, against file size.",
    .default_samples = 3,
    .opts = opts,
};

/* One pass; returns ns per block (ticks converted by the caller). */
static double pass(int fd, enum osm_nocache used, uint64_t size, const uint64_t *order, char *buf, bool *dist,
                   const char *path)
{
    uint64_t nblocks = size / block;
    if (used == OSM_NOCACHE_EVICT) {
        long left = osm_fs_evict(fd, size);
        if (left > (long)(size / 4096 / 100))
            osm_die("%s: %ld pages stay cached after posix_fadvise(DONTNEED); cannot read below the cache", path,
                    left);
        posix_fadvise(fd, 0, 0, order ? POSIX_FADV_RANDOM : POSIX_FADV_SEQUENTIAL);
    }
    struct osm_window w;
    osm_window_open_blocking(&w);
    for (uint64_t i = 0; i < nblocks; i++) {
        uint64_t b = order ? order[i] : i;
        ssize_t r = pread(fd, buf, block, (off_t)(b * block));
        if (r != (ssize_t)block)
            osm_die("%s: reading block %llu: %s", path, (unsigned long long)b,
                    r < 0 ? strerror(errno) : "short read");
    }
    uint64_t t = osm_window_close(&w, dist);
    return ((double)t - osm_timer.overhead) / (double)nblocks;
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    char fsname[32], dev[160];
    bool tmpfs;
    osm_fs_describe(dir, fsname, sizeof fsname, dev, sizeof dev, &tmpfs);
    if (tmpfs)
        osm_usage_error("--dir %s is on %s: a file there lives in memory, so nothing can be read from a device; "
                        "choose a directory on a disk-backed or network file system", dir, fsname);
    for (size_t k = 0; k < nsizes; k++)
        if (sizes[k] % block || sizes[k] < block)
            osm_usage_error("--sizes: %llu is not a multiple of --block %llu", (unsigned long long)sizes[k],
                            (unsigned long long)block);
    const char *suffix = remote ? ".remote" : "";
    char id_seq[64], id_rand[64];
    snprintf(id_seq, sizeof id_seq, "fs.read.seq%s", suffix);
    snprintf(id_rand, sizeof id_rand, "fs.read.rand%s", suffix);
    struct osm_meas ms, mr;
    osm_meas_init(&ms, id_seq, o.samples);
    osm_meas_init(&mr, id_rand, o.samples);
    osm_meas_series(&ms, "bytes", ms.unit, nsizes, o.samples);
    osm_meas_series(&mr, "bytes", mr.unit, nsizes, o.samples);
    char *buf = osm_fs_buffer(block);
    enum osm_nocache used = method;
    for (size_t k = 0; k < nsizes; k++) {
        char path[4096], err[512];
        osm_progress("file %zu of %zu: %llu KiB", k + 1, nsizes, (unsigned long long)(sizes[k] >> 10));
        int made = osm_scratch_new_file(dir, "fsread", path, sizeof path); /* until it is unlinked below */
        if (made < 0)
            osm_die("cannot make a file in %s: %s", dir, strerror(errno));
        close(made);
        if (osm_fs_make_file(path, sizes[k], err, sizeof err) != 0)
            osm_die("%s", err);
        int fd = osm_fs_open_nocache(path, method, &used, err, sizeof err);
        if (fd < 0) {
            unlink(path);
            osm_die("%s", err);
        }
        osm_scratch_remove(path); /* gone however we exit; the open fd keeps it */
        uint64_t nb = sizes[k] / block, *order = malloc(nb * sizeof *order), s = 0x5151 + k;
        if (!order)
            osm_die("out of memory");
        for (uint64_t i = 0; i < nb; i++)
            order[i] = i;
        for (uint64_t i = nb - 1; i > 0; i--) {
            uint64_t j = osm_rand(&s) % (i + 1), t = order[i];
            order[i] = order[j];
            order[j] = t;
        }
        ms.sx[k] = mr.sx[k] = (double)sizes[k];
        for (size_t i = 0; i < o.samples; i++) {
            bool d;
            ms.sy[k * o.samples + i] = pass(fd, used, sizes[k], NULL, buf, &d, path);
            ms.sy_disturbed[k * o.samples + i] = d;
            mr.sy[k * o.samples + i] = pass(fd, used, sizes[k], order, buf, &d, path);
            mr.sy_disturbed[k * o.samples + i] = d;
        }
        free(order);
        close(fd);
    }
    size_t last = (nsizes - 1) * o.samples;
    for (size_t i = 0; i < o.samples; i++) {
        osm_meas_add(&ms, ms.sy[last + i], ms.sy_disturbed[last + i]);
        osm_meas_add(&mr, mr.sy[last + i], mr.sy_disturbed[last + i]);
    }
    struct osm_meas *both[2] = { &ms, &mr };
    for (int k = 0; k < 2; k++) {
        osm_param_str(both[k], "order", k ? "random" : "sequential");
        osm_param_num(both[k], "block", (double)block);
        osm_param_str(both[k], "method", used == OSM_NOCACHE_DIRECT ? "O_DIRECT"
                                         : "posix_fadvise(DONTNEED) before each pass, mincore-checked");
        osm_param_str(both[k], "dir", dir);
        osm_param_str(both[k], "filesystem", fsname);
        osm_param_str(both[k], "device", dev);
        osm_param_num(both[k], "samples_at", (double)sizes[nsizes - 1]);
        osm_emit(both[k]);
        osm_meas_free(both[k]);
    }
    free(buf);
    return 0;
}
