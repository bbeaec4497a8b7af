/* osmfs.h - what the file-system probes share: test files of real data,
 * reading below the page cache (O_DIRECT, or evicting a file's pages with
 * posix_fadvise and checking with mincore where O_DIRECT is refused, as on
 * FUSE), and describing where a directory lives. */
#ifndef OSMFS_H
#define OSMFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum osm_nocache { OSM_NOCACHE_DIRECT, OSM_NOCACHE_EVICT };
/* --method's values, in the enum's order (an OSM_OPT_CHOICE row) */
#define OSM_NOCACHE_CHOICES "direct|evict"
/* Extends path, a file the program made (osm_scratch_new_file), to size bytes of pseudo-random data,
 * synced; a link is not followed. 0, or -1 with a message. */
int osm_fs_make_file(const char *path, uint64_t size, char *err, size_t errlen);
/* Opens for reading without the page cache: O_DIRECT when the file system
 * takes it (and method is DIRECT), else buffered with the pages evicted.
 * Sets *used to what was used. Returns the fd or -1 with a message. */
int osm_fs_open_nocache(const char *path, enum osm_nocache method, enum osm_nocache *used, char *err,
                        size_t errlen);
/* Drops a file's pages from the page cache; returns how many of its pages
 * stay resident (mincore), or -1 when that cannot be known. */
long osm_fs_evict(int fd, uint64_t size);
/* Resident pages of [0, size) of fd (mincore), or -1. */
long osm_fs_resident(int fd, uint64_t size);
/* The name of a file system's statfs magic ("ext4", "tmpfs", "fuse" ...). */
const char *osm_fs_type_name(unsigned long magic);
/* "/dev/NAME" of a block device number, from sysfs; "MAJOR:MINOR" if unknown. */
void osm_dev_name(unsigned maj, unsigned min, char *out, size_t len);
/* The file system type name and the device of a directory. */
void osm_fs_describe(const char *dir, char *fs, size_t fslen, char *dev, size_t devlen, bool *is_tmpfs);
/* An ext4 directory's journal, from /sys/fs/ext4/DEV/journal_task: "jbd2",
 * "none" (no journal: ext4 then skips recently freed inodes when it
 * allocates one), "not ext4" or "unknown". */
const char *osm_fs_journal(const char *dir);
/* A buffer aligned for O_DIRECT. */
void *osm_fs_buffer(size_t size);

#endif
