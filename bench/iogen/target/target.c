/* target.c - see target.h. */
#include "target.h"
#include "osmfs.h"
#include "osmscratch.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#define TMPFS_MAGIC_ 0x01021994
#define RAMFS_MAGIC_ 0x858458f6

static int fail(char *err, size_t len, const char *fmt, const char *path, const char *why)
{
    snprintf(err, len, fmt, path, why);
    return -1;
}

static unsigned sysfs_uint(const char *path, unsigned dflt)
{
    FILE *f = fopen(path, "r");
    unsigned v = dflt;
    if (f) {
        if (fscanf(f, "%u", &v) != 1)
            v = dflt;
        fclose(f);
    }
    return v;
}

/* The logical block size of the device dev (a partition asks its disk). */
static unsigned dev_lbs(dev_t dev)
{
    char p[128];
    snprintf(p, sizeof p, "/sys/dev/block/%u:%u/queue/logical_block_size", major(dev), minor(dev));
    unsigned v = sysfs_uint(p, 0);
    if (!v) {
        snprintf(p, sizeof p, "/sys/dev/block/%u:%u/../queue/logical_block_size", major(dev), minor(dev));
        v = sysfs_uint(p, 512);
    }
    return v;
}

static void dev_name(dev_t dev, char *out, size_t len)
{
    osm_dev_name(major(dev), minor(dev), out, len);
}

const char *target_signature(int fd)
{
    /* aligned and a whole number of 4 KiB blocks: readable through O_DIRECT */
    static unsigned char b[69632] __attribute__((aligned(4096)));
    ssize_t n = pread(fd, b, sizeof b, 0);
    if (n < 0)
        return "unreadable first blocks (cannot check for a signature)";
    if (n >= 1082 && b[1080] == 0x53 && b[1081] == 0xEF)
        return "ext2/3/4";
    if (n >= 4 && !memcmp(b, "XFSB", 4))
        return "xfs";
    if (n >= 65608 && !memcmp(b + 65600, "_BHRfS_M", 8))
        return "btrfs";
    if (n >= 4096 && (!memcmp(b + 4086, "SWAPSPACE2", 10) || !memcmp(b + 4086, "SWAP-SPACE", 10)))
        return "swap";
    if (n >= 6 && !memcmp(b, "LUKS\xba\xbe", 6))
        return "LUKS";
    if (n >= 520 && !memcmp(b + 512, "LABELONE", 8))
        return "LVM2";
    if (n >= 520 && !memcmp(b + 512, "EFI PART", 8))
        return "GPT partition table";
    if (n >= 32774 && !memcmp(b + 32769, "CD001", 5))
        return "iso9660";
    if (n >= 512 && b[510] == 0x55 && b[511] == 0xAA)
        return "MBR partition table (or a FAT boot sector)";
    return NULL;
}

/* Is the device (or a partition of it) mounted? Names the mount point. */
static bool mounted(dev_t dev, char *where, size_t len)
{
    FILE *f = fopen("/proc/self/mountinfo", "r");
    if (!f)
        return false;
    char line[4096];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned ma, mi;
        char mnt[2048];
        if (sscanf(line, "%*d %*d %u:%u %*s %2047s", &ma, &mi, mnt) != 3)
            continue;
        if (ma != major(dev))
            continue;
        /* the device itself, or a partition: /sys/dev/block/M:m/partition with the disk as parent */
        bool same = mi == minor(dev);
        if (!same) {
            char p[128], real[512], diskreal[512];
            snprintf(p, sizeof p, "/sys/dev/block/%u:%u/..", ma, mi);
            char dp[128];
            snprintf(dp, sizeof dp, "/sys/dev/block/%u:%u", major(dev), minor(dev));
            if (realpath(p, real) && realpath(dp, diskreal))
                same = !strcmp(real, diskreal);
        }
        if (same) {
            snprintf(where, len, "%s", mnt);
            found = true;
        }
    }
    fclose(f);
    return found;
}

static int fill_file(int fd, uint64_t from, uint64_t to, char *err, size_t errlen, const char *path)
{
    const size_t chunk = 1 << 20;
    char *buf;
    if (posix_memalign((void **)&buf, 4096, chunk) != 0)
        return fail(err, errlen, "%s: %s", path, "out of memory");
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < chunk / 8; i++) { /* incompressible, non-zero data */
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        ((uint64_t *)buf)[i] = x;
    }
    for (uint64_t off = from; off < to; off += chunk) {
        size_t n = to - off < chunk ? (size_t)(to - off) : chunk;
        if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
            free(buf);
            return fail(err, errlen, "filling %s: %s", path, strerror(errno ? errno : ENOSPC));
        }
    }
    free(buf);
    if (fsync(fd) != 0)
        return fail(err, errlen, "fsync %s: %s", path, strerror(errno));
    return 0;
}

/* A block device: written only when allowed (--allow-destroy-data), never while mounted nor over a
 * signature unless --allow-signature; opened exclusively for writes, its size read and bounded by --size. */
static int open_block(struct target *t, const char *path, struct stat st, const struct target_opts *o,
                      char *err, size_t errlen)
{
    if (o->writes) {
        char where[2048];
        if (!o->allow_destroy)
            return fail(err, errlen,
                        "%s: %s", path,
                        "the workload writes to a block device, destroying what it holds; add "
                        "--allow-destroy-data if that is what you want");
        if (mounted(st.st_rdev, where, sizeof where)) {
            snprintf(err, errlen, "%s: refusing to write: it (or a partition of it) is mounted on %s", path,
                     where);
            return -1;
        }
    }
    int flags = (o->writes ? O_RDWR | O_EXCL : O_RDONLY) | (o->direct ? O_DIRECT : 0);
    t->fd = open(path, flags);
    for (int tries = 0; t->fd < 0 && errno == EBUSY && !mounted(st.st_rdev, NULL, 0) && tries < 20; tries++) {
        /* a program that just let it go (its io_uring torn down in a kernel worker) may still hold the
         * claim for a moment */
        usleep(50000);
        t->fd = open(path, flags);
    }
    if (t->fd < 0)
        return fail(err, errlen, "%s: %s", path,
                    errno == EBUSY ? "the device is in use (mounted or held by another program)" : strerror(errno));
    if (o->writes && !o->allow_signature) {
        const char *sig = target_signature(t->fd);
        if (sig) {
            snprintf(err, errlen,
                     "%s: refusing to write: it carries a %s signature; add --allow-signature as well "
                     "to overwrite it",
                     path, sig);
            target_close(t);
            return -1;
        }
    }
    if (ioctl(t->fd, BLKGETSIZE64, &t->size) != 0 || ioctl(t->fd, BLKSSZGET, &t->lbs) != 0) {
        snprintf(err, errlen, "%s: cannot read the device's size: %s", path, strerror(errno));
        target_close(t);
        return -1;
    }
    if (o->size && o->size < t->size)
        t->size = o->size;
    else if (o->size > t->size) {
        snprintf(err, errlen, "%s: the device holds %llu bytes, fewer than --size %llu", path,
                 (unsigned long long)t->size, (unsigned long long)o->size);
        target_close(t);
        return -1;
    }
    dev_name(st.st_rdev, t->device, sizeof t->device);
    snprintf(t->dev_sysfs, sizeof t->dev_sysfs, "%u:%u", major(st.st_rdev), minor(st.st_rdev));
    return 0;
}

/* A regular file, existing or made here (whole, never sparse; removed if it cannot be), opened for the
 * workload; its device and logical block size found. */
static int open_file(struct target *t, const char *path, bool exists, struct stat st, const struct target_opts *o,
                     char *err, size_t errlen)
{
    /* a regular file, existing or to be made */
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = 0;
    else
        snprintf(dir, sizeof dir, ".");
    struct statfs sfs;
    if (statfs(exists ? path : dir, &sfs) != 0)
        return fail(err, errlen, "%s: %s", exists ? path : dir, strerror(errno));
    snprintf(t->fs, sizeof t->fs, "%s", osm_fs_type_name((unsigned long)sfs.f_type));
    if (o->direct && ((unsigned long)sfs.f_type == TMPFS_MAGIC_ || (unsigned long)sfs.f_type == RAMFS_MAGIC_))
        return fail(err, errlen,
                    "%s is on %s: its pages live in memory, so O_DIRECT would fail or measure memory, not "
                    "a disk; put the file on a disk-backed file system, or add --buffered",
                    path, t->fs);
    if (!exists && !o->size)
        return fail(err, errlen, "%s: %s", path, "does not exist; give --size to create it");
    if (exists && o->size > (uint64_t)st.st_size) {
        snprintf(err, errlen, "%s holds %llu bytes, fewer than --size %llu: iogen does not grow a file it did not "
                 "make (give a smaller --size, or remove the file and let iogen create it)",
                 path, (unsigned long long)st.st_size, (unsigned long long)o->size);
        return -1;
    }
    if (!exists) {
        /* real data, never sparse: reading a hole measures nothing; first check it fits */
        struct statvfs sv;
        uint64_t avail = statvfs(dir, &sv) == 0 ? (uint64_t)sv.f_bavail * sv.f_frsize : UINT64_MAX;
        if (o->size > avail) {
            snprintf(err, errlen, "%s: --size %llu does not fit: %s has %llu bytes free", path,
                     (unsigned long long)o->size, dir, (unsigned long long)avail);
            return -1;
        }
        t->fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0644);
        if (t->fd < 0)
            return fail(err, errlen, "%s: %s", path, strerror(errno));
        osm_scratch_file(path); /* until it is whole: a full disk or a signal leaves no part of it */
        if (fill_file(t->fd, 0, o->size, err, errlen, path) != 0) {
            target_close(t);
            osm_scratch_remove(path);
            return -1;
        }
        osm_scratch_done(path);
        t->created = true;
        close(t->fd);
        t->fd = -1;
    }
    /* a workload that only reads opens the file read-only: a readable file that is not writable will do */
    int mode = o->writes ? O_RDWR : O_RDONLY;
    t->fd = open(path, mode | (o->direct ? O_DIRECT : 0));
    if (t->fd < 0) {
        if (o->direct && errno == EINVAL)
            snprintf(err, errlen, "%s: O_DIRECT open failed: %s (the file system may not support it; try --buffered)",
                     path, strerror(errno));
        else
            snprintf(err, errlen, "%s: %s%s", path, strerror(errno),
                     errno == EACCES && o->writes ? " (the workload writes: it needs a writable file)" : "");
        return -1;
    }
    fstat(t->fd, &st);
    t->lbs = dev_lbs(st.st_dev);
    dev_name(st.st_dev, t->device, sizeof t->device);
    snprintf(t->dev_sysfs, sizeof t->dev_sysfs, "%u:%u", major(st.st_dev), minor(st.st_dev));
    t->size = o->size ? o->size : (uint64_t)st.st_size;
    if (t->size == 0) {
        target_close(t);
        return fail(err, errlen, "%s: %s", path, "is empty; give --size");
    }
    return 0;
}

int target_open(struct target *t, const char *path, const struct target_opts *o, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    t->fd = -1;
    snprintf(t->path, sizeof t->path, "%s", path);
    struct stat st = {0};
    bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT)
        return fail(err, errlen, "%s: %s", path, strerror(errno));
    if (exists && !S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
        return fail(err, errlen, "%s: %s", path, "not a regular file or a block device");
    t->block = exists && S_ISBLK(st.st_mode);
    t->direct = o->direct;

    if (t->block)
        return open_block(t, path, st, o, err, errlen);
    return open_file(t, path, exists, st, o, err, errlen);
}

void target_none(struct target *t, uint64_t size)
{
    memset(t, 0, sizeof *t);
    t->fd = -1;
    snprintf(t->path, sizeof t->path, "(none)");
    t->size = size ? size : 1ull << 30;
    t->lbs = 4096;
}

bool target_pollable(const struct target *t, char *why, size_t whylen)
{
    char p[128];
    unsigned v = 0;
    snprintf(p, sizeof p, "/sys/dev/block/%s/queue/io_poll", t->dev_sysfs);
    FILE *f = fopen(p, "r");
    if (!f) { /* a partition: its disk's queue */
        snprintf(p, sizeof p, "/sys/dev/block/%s/../queue/io_poll", t->dev_sysfs);
        f = fopen(p, "r");
    }
    if (f) {
        if (fscanf(f, "%u", &v) != 1)
            v = 0;
        fclose(f);
    }
    if (!v)
        snprintf(why, whylen, "%s cannot be polled: %s's queue/io_poll is %s (polling needs a driver with poll "
                 "queues, such as NVMe loaded with nvme.poll_queues=N)", t->path, t->device, f ? "0" : "missing");
    return v != 0;
}

void target_close(struct target *t)
{
    if (t->fd >= 0)
        close(t->fd);
    t->fd = -1;
}

bool target_refuses_nowait(int fd, size_t len)
{
    void *buf;
    if (len < 4096)
        len = 4096;
    if (posix_memalign(&buf, 4096, len) != 0)
        return false;
    struct iovec iov = { buf, len };
    bool refuses = false;
    for (int i = 0; i < 4; i++) {
        ssize_t r = preadv2(fd, &iov, 1, 0, RWF_NOWAIT);
        if (r >= 0 || errno != EAGAIN) {
            refuses = r < 0 && errno == EOPNOTSUPP;
            break;
        }
    }
    free(buf);
    return refuses;
}
