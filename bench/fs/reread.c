/* reread.c - reading a file that is in the page cache (lmbench's bw_file_rd
 * io_only and bw_mmap_rd mmap_only).
 *
 * fs.reread        read() of the whole file in 64 KiB pieces into one buffer,
 *                  each piece summed (every 8-byte word) as a program would use it
 * fs.mmap_reread   the whole file summed through one mapping made beforehand
 * The file (--size, default 64M) is written and read once before timing, so
 * both read the page cache: the first is a copy out of the cache and a sum
 * of the copy, the second a sum of the cache's own pages. A sample is one
 * pass over the file; MB/s is a million bytes per second; windows in turn.
 */
#include "osm.h"
#include "osmfs.h"
#include "osmmem.h"
#include "osmscratch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PIECE (64 * 1024)
static uint64_t size = 64ull << 20;
static const char *dir = "/var/tmp";

static const struct osm_opt opts[] = {
    OSM_OPT_SIZE("size", size, PIECE, 1ull << 40, "file size (rounded down to a whole number of pieces)"),
    OSM_OPT_STR("dir", dir, "where to make the file", .arg = "DIR"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "fs_reread",
    .summary = "Bandwidth of rereading a cached file with read() and through mmap.",
    .default_samples = 10,
    .one_event = "one pass over the file",
    .opts = opts,
};

static int fd;
static char *piece, *map;

static void by_read(void)
{
    if (lseek(fd, 0, SEEK_SET) != 0)
        osm_die("lseek: %m");
    for (uint64_t done = 0; done < size;) {
        ssize_t n = read(fd, piece, PIECE);
        if (n <= 0)
            osm_die("read: %m");
        OSM_USE(osm_sum_words(piece, (size_t)n));
        done += (uint64_t)n;
    }
}

static void by_map(void)
{
    OSM_USE(osm_sum_words(map, size));
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    size = size / PIECE * PIECE;
    static char path[PATH_MAX];
    char err[256];
    int made = osm_scratch_new_file(dir, "reread", path, sizeof path);
    if (made < 0)
        osm_usage_error("--dir %s: cannot make a file there: %s", dir, strerror(errno));
    close(made);
    if (osm_fs_make_file(path, size, err, sizeof err) != 0)
        osm_usage_error("--dir %s: %s", dir, err);
    fd = open(path, O_RDONLY);
    piece = malloc(PIECE);
    if (fd < 0 || !piece)
        osm_die("open %s: %m", path);
    map = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED)
        osm_die("mmap: %m");
    for (size_t w = 0; w <= o.warmup; w++) { /* into the cache, mapped, warm */
        by_read();
        by_map();
    }
    long resident = osm_fs_resident(fd, size);
    struct osm_meas m[2];
    osm_meas_init(&m[0], "fs.reread", o.samples);
    osm_meas_init(&m[1], "fs.mmap_reread", o.samples);
    void (*pass[2])(void) = { by_read, by_map };
    for (size_t i = 0; i < o.samples; i++)
        for (int k = 0; k < 2; k++) {
            struct osm_window w;
            bool d;
            osm_window_open(&w);
            pass[k]();
            uint64_t t = osm_window_close(&w, &d);
            osm_meas_add(&m[k], (double)size / (((double)t - osm_timer.overhead) / osm_timer.hz) / 1e6, d);
        }
    char fsname[64], dev[64];
    bool tmpfs;
    osm_fs_describe(dir, fsname, sizeof fsname, dev, sizeof dev, &tmpfs);
    for (int k = 0; k < 2; k++) {
        m[k].unit = "MB/s";
        m[k].overhead_subtracted = 0;
        osm_param_num(&m[k], "file_size", (double)size);
        osm_param_int(&m[k], "resident_pages", resident);
        osm_param_str(&m[k], "fs", fsname);
        if (!k)
            osm_param_int(&m[k], "piece", PIECE);
        osm_emit(&m[k]);
        osm_meas_free(&m[k]);
    }
    munmap(map, size);
    close(fd);
    free(piece);
    osm_scratch_remove(path);
    return 0;
}
