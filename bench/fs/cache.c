/* cache.c - the size of the file cache.
 *
 * fs.cache_size  bytes: the largest file whose second read still comes from
 *                memory. Files of doubling size (--min .. --max) are read
 *                twice, through the page cache, in 1 MiB reads: first with
 *                the file's pages evicted, then again at once. While the file
 *                fits the cache the second read runs at memory speed; past
 *                it, reading a file in order evicts the pages the next read
 *                needs first, so the second read goes to the device. A second
 *                read counts as from memory when it is within 3x the fastest
 *                second read seen (the smallest file's must also be 2x faster
 *                than its first read). The first size that fails ends the
 *                search; the bracket is then narrowed by bisection. mincore
 *                after the first read says how much of the file stayed
 *                resident, as a check. The search stops early at the time
 *                limit, at half the free disk space, or at --max: then the
 *                figure is a lower bound (params.lower_bound).
 * The series: second-read ns per 4 KiB against file size.
 */
#include "osm.h"
#include "osmfs.h"
#include "osmscratch.h"
#include "osmmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <math.h>
#include <unistd.h>

static const char *dir = "/var/tmp";
static uint64_t min_size = 16ull << 20, max_size;
static double time_limit = 120;
static unsigned bisect_steps = 3;

static const struct osm_opt opts[] = {
    OSM_OPT_STR("dir", dir, "directory for the test file (not tmpfs)", .arg = "DIR"),
    OSM_OPT_SIZE("min", min_size, 1 << 20, 1ull << 44, "first file size"),
    OSM_OPT_SIZE("max", max_size, 1 << 20, 1ull << 44, "largest file size", .def = "2 x memory, at most half the free disk"),
    OSM_OPT_DOUBLE("time-limit", time_limit, 0, HUGE_VAL, "seconds before the search stops with a lower bound"),
    OSM_OPT_UINT("bisect", bisect_steps, 0, 10, "bisection steps once the cache is bracketed"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "fs_cache",
    .summary = "File cache size: files of growing size read twice; where the second read stops being fast.",
    .default_samples = 1,
    .samples_from = "one point per file size, each read twice",
    .opts = opts,
};

struct point {
    uint64_t size;
    double first, second; /* ns per 4 KiB */
    long resident;        /* pages resident after the first read */
};

static double read_all(int fd, uint64_t size, char *buf)
{
    uint64_t t0 = osm_clock_ns();
    for (uint64_t off = 0; off < size; off += 1 << 20) {
        size_t n = size - off < (1u << 20) ? (size_t)(size - off) : 1u << 20;
        if (pread(fd, buf, n, (off_t)off) != (ssize_t)n)
            osm_die("reading the cache test file: %s", strerror(errno));
    }
    return (double)(osm_clock_ns() - t0) / (double)(size / 4096);
}

static struct point try_size(const char *path, uint64_t size, char *buf)
{
    char err[512];
    if (osm_fs_make_file(path, size, err, sizeof err) != 0)
        osm_die("%s", err);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        osm_die("cannot open %s: %s", path, strerror(errno));
    struct point p = { .size = size };
    osm_fs_evict(fd, size);
    posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    p.first = read_all(fd, size, buf);
    p.resident = osm_fs_resident(fd, size);
    p.second = read_all(fd, size, buf);
    close(fd);
    return p;
}

static int cmp_point(const void *a, const void *b)
{
    uint64_t x = ((const struct point *)a)->size, y = ((const struct point *)b)->size;
    return (x > y) - (x < y);
}

/* Between the last fast size (pts[n - 2]) and the first slow one (pts[n - 1]): halves tried, each a
 * point more, while the steps and the time limit allow; the bracket left in lo..hi. Returns the points. */
static size_t bisect(const char *path, char *buf, struct point *pts, size_t n, double fast, uint64_t start,
                     uint64_t *lo, uint64_t *hi)
{
    *lo = pts[n - 2].size;
    *hi = pts[n - 1].size;
    for (unsigned k = 0; k < bisect_steps && (double)(osm_clock_ns() - start) * 1e-9 <= time_limit; k++) {
        uint64_t mid = (*lo + *hi) / 2 / (1 << 20) * (1 << 20);
        if (mid <= *lo || mid >= *hi)
            break;
        /* start from an empty file (its cached pages dropped): a shrinking file keeps nothing useful */
        int t = open(path, O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
        if (t < 0)
            osm_die("cannot empty %s: %s", path, strerror(errno));
        close(t);
        osm_progress("bisecting %llu..%llu MiB: step %u of at most %u, %llu MiB", (unsigned long long)(*lo >> 20),
                     (unsigned long long)(*hi >> 20), k + 1, bisect_steps, (unsigned long long)(mid >> 20));
        pts[n] = try_size(path, mid, buf);
        if (pts[n].second > 3 * fast)
            *hi = mid;
        else
            *lo = mid;
        n++;
    }
    return n;
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    char fsname[32], dev[160];
    bool tmpfs;
    osm_fs_describe(dir, fsname, sizeof fsname, dev, sizeof dev, &tmpfs);
    if (tmpfs)
        osm_usage_error("--dir %s is on %s, which is itself memory: it has no separate file cache to size", dir,
                        fsname);
    struct statvfs sv;
    uint64_t disk_free = statvfs(dir, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize : 0;
    uint64_t mem = osm_mem_available(), total = 0;
    FILE *mi = fopen("/proc/meminfo", "r");
    if (mi) {
        unsigned long long kb;
        if (fscanf(mi, "MemTotal: %llu kB", &kb) == 1)
            total = (uint64_t)kb * 1024;
        fclose(mi);
    }
    const char *stop_why = "the second read slowed down";
    if (!max_size) /* past all of memory: the doubling must reach a file the cache cannot hold */
        max_size = total ? 2 * total : 64ull << 30;
    if (disk_free && max_size > disk_free / 2)
        max_size = disk_free / 2;
    if (min_size > max_size)
        osm_usage_error("--min is larger than the largest size allowed (%llu MiB: --max, or half the free disk)",
                        (unsigned long long)(max_size >> 20));

    char path[4096];
    int made = osm_scratch_new_file(dir, "fscache", path, sizeof path); /* removed however the probe ends */
    if (made < 0)
        osm_usage_error("--dir %s: cannot make a file there: %s", dir, strerror(errno));
    close(made);
    char *buf = osm_fs_buffer(1 << 20);
    struct point pts[128];
    size_t n = 0;
    uint64_t start = osm_clock_ns();
    bool found = false, timed_out = false;
    double fast = 0; /* the fastest second read so far: memory speed */
    for (uint64_t s = min_size; s <= max_size && n < 64; s *= 2) {
        if ((double)(osm_clock_ns() - start) * 1e-9 > time_limit) {
            timed_out = true;
            break;
        }
        osm_progress("growing: %llu MiB file, read twice", (unsigned long long)(s >> 20));
        pts[n] = try_size(path, s, buf);
        bool cached = n == 0 ? pts[0].first / pts[0].second >= 2.0 : pts[n].second <= 3 * fast;
        if (cached && (n == 0 || pts[n].second < fast))
            fast = pts[n].second;
        n++;
        if (!cached) {
            found = true;
            break;
        }
    }
    uint64_t lo = 0, hi = 0;
    if (found && n >= 2) {
        n = bisect(path, buf, pts, n, fast, start, &lo, &hi);
    } else if (found) {
        stop_why = "already the smallest file was not cached";
        hi = pts[0].size;
    } else {
        lo = n ? pts[n - 1].size : 0;
        stop_why = timed_out ? "the time limit" : "the largest size allowed";
    }
    osm_scratch_remove(path);
    free(buf);
    qsort(pts, n, sizeof *pts, cmp_point);

    struct osm_meas m;
    osm_meas_init(&m, "fs.cache_size", 1);
    m.unit = "bytes";
    osm_meas_add(&m, (double)lo, false);
    osm_meas_series(&m, "bytes", "ns per 4 KiB, second read", n, 1);
    for (size_t i = 0; i < n; i++) {
        m.sx[i] = (double)pts[i].size;
        m.sy[i] = pts[i].second;
    }
    osm_param_bool(&m, "lower_bound", !found);
    struct json *j = osm_param(&m, "bracket");
    json_arr(j);
    json_uint(j, lo);
    json_uint(j, hi);
    json_arr_end(j);
    osm_param_str(&m, "stopped_by", stop_why);
    osm_param_str(&m, "dir", dir);
    osm_param_str(&m, "filesystem", fsname);
    osm_param_str(&m, "device", dev);
    osm_param_num(&m, "mem_available", (double)mem);
    osm_param_num(&m, "max_size", (double)max_size);
    osm_param_num(&m, "cached_second_read_ns_per_4k", round(fast * 10) / 10);
    j = osm_param(&m, "first_read_ns_per_4k");
    json_arr(j);
    for (size_t i = 0; i < n; i++)
        json_num(j, round(pts[i].first * 10) / 10);
    json_arr_end(j);
    j = osm_param(&m, "resident_pages_after_first_read");
    json_arr(j);
    for (size_t i = 0; i < n; i++)
        json_int(j, pts[i].resident);
    json_arr_end(j);
    osm_emit(&m);
    osm_meas_free(&m);
    return 0;
}
