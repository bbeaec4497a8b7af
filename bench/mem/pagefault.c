/* pagefault.c - what a page fault costs.
 *
 * mem.pagefault.minor  first write to each page of a fresh anonymous mapping
 *                      (4 KiB pages, MADV_NOHUGEPAGE): the kernel allocates
 *                      and zeroes a page and maps it. A sample is one mapping
 *                      of --pages pages touched in order, per page.
 * mem.pagefault.major  first read of a page of a file mapping whose pages were
 *                      evicted from the page cache: the kernel reads the page
 *                      from the device. The file is written and synced, its
 *                      pages dropped with posix_fadvise(DONTNEED) (and
 *                      drop_caches when that is not enough and we are root),
 *                      which mincore confirms; MADV_RANDOM turns off
 *                      read-ahead and the pages are touched in random order,
 *                      so each touch is one fault reading one page. One fault
 *                      per sample; getrusage's ru_majflt must rise by exactly
 *                      one or the sample is counted as disturbed. After each
 *                      fault, the next page of the order is read with an
 *                      O_DIRECT pread outside the window: the device's own
 *                      4 KiB read at that moment (params.device_read_ns, the
 *                      median of those reads), which the fault contains; the
 *                      host's storage moves both together.
 * The file lives in --dir (default /var/tmp); tmpfs and ramfs are refused,
 * since their pages are never read from a device.
 */
#include "osm.h"
#include "osmfs.h"
#include "osmmem.h"
#include "osmscratch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

static const char *dir = "/var/tmp";
static uint64_t minor_pages = 4096, file_size = 64ull << 20;

static const struct osm_opt opts[] = {
    OSM_OPT_STR("dir", dir, "directory for the major-fault file (not tmpfs)", .arg = "DIR"),
    OSM_OPT_U64("pages", minor_pages, 1, 1u << 24, "pages per minor-fault sample"),
    OSM_OPT_SIZE("file-size", file_size, 1 << 20, 1ull << 40, "size of the major-fault file"),
    { 0 },
};

static const struct osm_probe_info info = {
    .name = "mem_pagefault",
    .summary = "Page fault cost: minor (anonymous first touch) and major (evicted file page).",
    .default_samples = 30,
    .opts = opts,
};

static long majflt(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_majflt;
}

static size_t resident(const void *p, size_t len, size_t page)
{
    size_t n = len / page, count = 0;
    unsigned char *vec = malloc(n);
    if (!vec || mincore((void *)p, len, vec) != 0)
        osm_die("mincore: %s", strerror(errno));
    for (size_t i = 0; i < n; i++)
        count += vec[i] & 1;
    free(vec);
    return count;
}

static void minor_faults(const struct osm_opts *o, size_t page)
{
    struct osm_meas m;
    osm_meas_init(&m, "mem.pagefault.minor", o->samples);
    size_t len = minor_pages * page;
    for (size_t i = 0; i < o->warmup + o->samples; i++) {
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            osm_die("mmap: %s", strerror(errno));
        madvise(p, len, MADV_NOHUGEPAGE);
        struct osm_window w;
        bool d;
        osm_window_open_blocking(&w);
        for (size_t k = 0; k < len; k += page)
            p[k] = 1;
        uint64_t t = osm_window_close(&w, &d);
        munmap(p, len);
        if (i >= o->warmup) {
            osm_sample_ops(minor_pages);
            osm_meas_add(&m, ((double)t - osm_timer.overhead) / (double)minor_pages, d);
        }
    }
    m.overhead_subtracted = osm_timer.overhead / (double)minor_pages;
    osm_param_num(&m, "pages_per_sample", (double)minor_pages);
    osm_param_num(&m, "page_size", (double)page);
    osm_param_str(&m, "access", "write");
    osm_emit(&m);
    osm_meas_free(&m);
}

static bool drop_caches(void)
{
    sync();
    int fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
    if (fd < 0)
        return false;
    bool ok = write(fd, "1", 1) == 1;
    close(fd);
    return ok;
}

/* Refuses a directory whose file system cannot take major faults. */
static void check_dir(struct statfs *sfs)
{
    if (statfs(dir, sfs) != 0)
        osm_usage_error("--dir %s: %s", dir, strerror(errno));
    if ((unsigned long)sfs->f_type == 0x01021994 || (unsigned long)sfs->f_type == 0x858458f6)
        osm_usage_error("--dir %s is on %s: its pages live in memory and are never read from a device, so it "
                        "can only take minor faults; choose a directory on a disk-backed file system",
                        dir, osm_fs_type_name((unsigned long)sfs->f_type));
}

/* The fault file written whole (file_size bytes of a pattern) and on the device. */
static void fill_file(int fd)
{
    char *buf = malloc(1 << 20);
    if (!buf)
        osm_die("out of memory");
    for (size_t i = 0; i < (1 << 20); i++)
        buf[i] = (char)(i * 31 + 7);
    for (uint64_t off = 0; off < file_size; off += 1 << 20)
        if (pwrite(fd, buf, 1 << 20, (off_t)off) != 1 << 20)
            osm_die("writing the fault file: %s", strerror(errno));
    free(buf);
    if (fsync(fd) != 0)
        osm_die("fsync: %s", strerror(errno));
}

/* The pages 0..npages-1 in a random order (a fixed seed: every run the same). */
static size_t *random_order(size_t npages)
{
    size_t *order = malloc(npages * sizeof *order);
    if (!order)
        osm_die("out of memory");
    for (size_t i = 0; i < npages; i++)
        order[i] = i;
    uint64_t s = 0x12345678abcdefull;
    for (size_t i = npages - 1; i > 0; i--) {
        size_t j = osm_rand(&s) % (i + 1), t = order[i];
        order[i] = order[j];
        order[j] = t;
    }
    return order;
}

static void major_faults(const struct osm_opts *o, size_t page, struct statfs sfs)
{
    char path[4096];
    int fd = osm_scratch_new_file(dir, "pagefault", path, sizeof path);
    if (fd < 0)
        osm_die("cannot create a file in %s: %s", dir, strerror(errno));
    osm_scratch_remove(path); /* gone when we exit, however we exit */
    struct stat st;
    fstat(fd, &st);
    char dev[160];
    osm_dev_name(major(st.st_dev), minor(st.st_dev), dev, sizeof dev);

    size_t npages = file_size / page;
    fill_file(fd);
    size_t *order = random_order(npages); /* each page faulted once */

    /* the device's own read of a page, beside each fault: O_DIRECT, so the page cache plays no part */
    char fdpath[64];
    snprintf(fdpath, sizeof fdpath, "/proc/self/fd/%d", fd);
    int dfd = open(fdpath, O_RDONLY | O_DIRECT);
    void *dbuf = NULL;
    if (dfd >= 0 && posix_memalign(&dbuf, page, page) != 0)
        osm_die("out of memory");
    const char *why_no_read = dfd < 0 ? strerror(errno) : NULL;
    double *reads = malloc((o->samples + 1) * sizeof *reads);
    if (!reads)
        osm_die("out of memory");
    size_t nreads = 0;

    struct osm_meas m;
    osm_meas_init(&m, "mem.pagefault.major", o->samples);
    size_t next = 0, not_major = 0;
    bool used_drop = false;
    char *p = NULL;
    for (size_t i = 0; i < o->warmup + o->samples; i++) {
        if (!p || next + 2 > npages) { /* (re)map with every page evicted */
            if (p)
                munmap(p, file_size);
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
            p = mmap(NULL, file_size, PROT_READ, MAP_SHARED, fd, 0);
            if (p == MAP_FAILED)
                osm_die("mmap of the fault file: %s", strerror(errno));
            madvise(p, file_size, MADV_RANDOM);
            size_t r = resident(p, file_size, page);
            if (r > npages / 100) {
                used_drop = drop_caches();
                r = resident(p, file_size, page);
            }
            if (r > npages / 100)
                osm_die("%zu of %zu pages of the fault file stay in the page cache after posix_fadvise(DONTNEED)%s",
                        r, npages, geteuid() ? " (not root: drop_caches unavailable)" : " and drop_caches");
            next = 0;
        }
        volatile char *q = p + order[next++] * page;
        long f0 = majflt();
        struct osm_window w;
        bool d;
        osm_window_open_blocking(&w);
        char c = *q;
        uint64_t t = osm_window_close(&w, &d);
        OSM_USE(c);
        bool major = majflt() - f0 == 1;
        not_major += !major && i >= o->warmup;
        if (i >= o->warmup)
            osm_meas_add(&m, (double)t - osm_timer.overhead, d || !major);
        if (dfd >= 0) { /* timed by the clock, not a window: a window would note a span, and the next
                         * fault's trace marker (one window per sample) would be lost */
            off_t at = (off_t)(order[next++] * page);
            uint64_t r0 = osm_clock_ns();
            ssize_t got = pread(dfd, dbuf, page, at);
            uint64_t r1 = osm_clock_ns();
            if (got != (ssize_t)page) {
                why_no_read = got < 0 ? strerror(errno) : "short read";
                close(dfd);
                dfd = -1;
            } else if (i >= o->warmup) {
                reads[nreads++] = (double)(r1 - r0);
            }
        }
    }
    munmap(p, file_size);
    close(fd);
    if (dfd >= 0)
        close(dfd);
    free(dbuf);
    m.overhead_subtracted = osm_timer.overhead;
    char magic[32];
    snprintf(magic, sizeof magic, "0x%lx", (unsigned long)sfs.f_type);
    osm_param_str(&m, "dir", dir);
    osm_param_str(&m, "filesystem", osm_fs_type_name((unsigned long)sfs.f_type));
    osm_param_str(&m, "fs_magic", magic);
    osm_param_str(&m, "device", dev);
    osm_param_num(&m, "file_size", (double)file_size);
    osm_param_num(&m, "page_size", (double)page);
    osm_param_str(&m, "order", "random");
    osm_param_str(&m, "readahead", "off (MADV_RANDOM)");
    osm_param_int(&m, "not_major", (long long)not_major);
    osm_param_bool(&m, "drop_caches_used", used_drop);
    if (nreads && !why_no_read) {
        osm_param_num(&m, "device_read_ns", osm_median(reads, nreads));
        osm_param_int(&m, "device_reads", (long long)nreads);
    } else {
        osm_param_str(&m, "device_read", why_no_read ? why_no_read : "no undisturbed read");
    }
    free(reads);
    osm_emit(&m);
    osm_meas_free(&m);
}

int main(int argc, char **argv)
{
    struct osm_opts o;
    osm_init(argc, argv, &info, &o);
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    if (file_size % page)
        osm_usage_error("--file-size must be a multiple of the page size (%zu)", page);
    struct statfs sfs;
    check_dir(&sfs);
    minor_faults(&o, page);
    major_faults(&o, page, sfs);
    return 0;
}
