/* fs.c - see osmfs.h. */
#include "osmfs.h"
#include "osm.h"
#include "osmmem.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

void *osm_fs_buffer(size_t size)
{
    void *p;
    if (posix_memalign(&p, 4096, size ? size : 4096) != 0)
        osm_die("out of memory for a %zu-byte buffer", size);
    memset(p, 0x6B, size);
    return p;
}

int osm_fs_make_file(const char *path, uint64_t size, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno)), -1;
    struct stat st;
    fstat(fd, &st);
    const size_t chunk = 1 << 20;
    uint64_t *buf = osm_fs_buffer(chunk), s = 0x243F6A8885A308D3ull ^ size;
    for (size_t i = 0; i < chunk / 8; i++)
        buf[i] = osm_rand(&s);
    for (uint64_t off = (uint64_t)st.st_size; off < size; off += chunk) {
        size_t n = size - off < chunk ? (size_t)(size - off) : chunk;
        if (pwrite(fd, buf, n, (off_t)off) != (ssize_t)n) {
            snprintf(err, errlen, "writing %s: %s", path, errno ? strerror(errno) : "short write (disk full?)");
            free(buf);
            close(fd);
            return -1;
        }
    }
    free(buf);
    if (ftruncate(fd, (off_t)size) != 0 || fsync(fd) != 0) {
        snprintf(err, errlen, "syncing %s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

long osm_fs_resident(int fd, uint64_t size)
{
    if (size == 0)
        return 0;
    void *p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return -1;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (size + page - 1) / page;
    unsigned char *vec = malloc(n);
    long count = -1;
    if (vec && mincore(p, size, vec) == 0) {
        count = 0;
        for (size_t i = 0; i < n; i++)
            count += vec[i] & 1;
    }
    free(vec);
    munmap(p, size);
    return count;
}

long osm_fs_evict(int fd, uint64_t size)
{
    fdatasync(fd);
    posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    return osm_fs_resident(fd, size);
}

int osm_fs_open_nocache(const char *path, enum osm_nocache method, enum osm_nocache *used, char *err,
                        size_t errlen)
{
    if (method == OSM_NOCACHE_DIRECT) {
        int fd = open(path, O_RDONLY | O_DIRECT);
        if (fd >= 0) {
            *used = OSM_NOCACHE_DIRECT;
            return fd;
        }
        if (errno != EINVAL)
            return snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno)), -1;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno)), -1;
    *used = OSM_NOCACHE_EVICT;
    return fd;
}

const char *osm_fs_type_name(unsigned long t)
{
    switch (t) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x858458f6: return "ramfs";
    case 0x6969: return "nfs";
    case 0x65735546: return "fuse";
    case 0x794c7630: return "overlayfs";
    case 0xF2F52010: return "f2fs";
    case 0xFF534D42: return "cifs";
    case 0x2FC12FC1: return "zfs";
    default: return "other";
    }
}

void osm_dev_name(unsigned maj, unsigned min, char *out, size_t len)
{
    char p[96], line[128];
    snprintf(out, len, "%u:%u", maj, min);
    snprintf(p, sizeof p, "/sys/dev/block/%u:%u/uevent", maj, min);
    FILE *f = fopen(p, "r");
    if (!f)
        return;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "DEVNAME=", 8)) {
            line[strcspn(line, "\n")] = 0;
            snprintf(out, len, "/dev/%s", line + 8);
        }
    fclose(f);
}

void osm_fs_describe(const char *dir, char *fs, size_t fslen, char *dev, size_t devlen, bool *is_tmpfs)
{
    struct statfs sfs;
    struct stat st;
    snprintf(fs, fslen, "unknown");
    snprintf(dev, devlen, "unknown");
    *is_tmpfs = false;
    if (statfs(dir, &sfs) == 0) {
        snprintf(fs, fslen, "%s", osm_fs_type_name((unsigned long)sfs.f_type));
        *is_tmpfs = (unsigned long)sfs.f_type == 0x01021994 || (unsigned long)sfs.f_type == 0x858458f6;
    }
    if (stat(dir, &st) == 0)
        osm_dev_name(major(st.st_dev), minor(st.st_dev), dev, devlen);
}

const char *osm_fs_journal(const char *dir)
{
    struct statfs sfs;
    struct stat st;
    if (statfs(dir, &sfs) != 0 || stat(dir, &st) != 0)
        return "unknown";
    if ((unsigned long)sfs.f_type != 0xEF53)
        return "not ext4";
    char dev[160], p[256], line[64];
    osm_dev_name(major(st.st_dev), minor(st.st_dev), dev, sizeof dev);
    if (strncmp(dev, "/dev/", 5) != 0)
        return "unknown";
    snprintf(p, sizeof p, "/sys/fs/ext4/%s/journal_task", dev + 5);
    FILE *f = fopen(p, "r");
    if (!f)
        return "unknown";
    const char *what = "unknown";
    if (fgets(line, sizeof line, f))
        what = strncmp(line, "<none>", 6) == 0 ? "none" : "jbd2";
    fclose(f);
    return what;
}
