/* target.h - what iogen reads and writes: a regular file (created and filled
 * with data when needed, never sparse) or a block device; O_DIRECT unless
 * buffered; its size and the logical block size all offsets and sizes must
 * respect; and the checks that keep a write from destroying data. */
#ifndef IOGEN_TARGET_H
#define IOGEN_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct target {
    char path[4096];
    int fd;
    bool block;         /* a block device, not a file */
    bool direct;        /* opened with O_DIRECT */
    uint64_t size;      /* bytes usable */
    unsigned lbs;       /* logical block size: the alignment O_DIRECT needs */
    char fs[32];        /* file system a file lives on ("" for a device) */
    char device[160];   /* the block device (for a file: the one under it) */
    char dev_sysfs[64]; /* "major:minor" of that device */
    bool created;       /* iogen created (and filled) the file */
};

struct target_opts {
    uint64_t size;           /* wanted size; 0 = what exists (required for a new file) */
    bool writes;             /* the workload writes */
    bool direct;
    bool allow_destroy;      /* --allow-destroy-data */
    bool allow_signature;    /* --allow-signature: also over a filesystem/partition signature */
};

/* 0, or -1 with a message in err. */
int target_open(struct target *t, const char *path, const struct target_opts *o, char *err, size_t errlen);
/* No target at all (an engine that does no I/O): a region of size bytes. */
void target_none(struct target *t, uint64_t size);
/* Can requests to it be polled for completion (io_uring IOPOLL)? Else why not. */
bool target_pollable(const struct target *t, char *why, size_t whylen);
void target_close(struct target *t);
/* Does it refuse non-blocking I/O? A bio driver without nowait support
 * (zram) answers a RWF_NOWAIT read of len bytes (a multiple of its logical
 * block) at offset 0 with EOPNOTSUPP; a busy device's passing EAGAIN does
 * not count. Then io_uring and AIO can only hand each request to a kernel
 * worker thread. */
bool target_refuses_nowait(int fd, size_t len);

/* For tests and the messages: the first signature found in the first bytes
 * of a device ("ext2/3/4", "xfs", "btrfs", "swap", "MBR partition table",
 * "GPT partition table", "LUKS", "LVM2", "iso9660"), or NULL. */
const char *target_signature(int fd);

#endif
