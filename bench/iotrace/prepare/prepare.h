/* What a replay writes before its timed part: the files the program found
 * already there. Bounded (--prepare-limit), checked against the free space
 * of DIR before the first byte, and removed again when the preparation is
 * interrupted or fails. */
#ifndef IOTRACE_PREPARE_H
#define IOTRACE_PREPARE_H

#define PREPARE_LIMIT_DEFAULT (4ll << 30) /* bytes: --prepare-limit's default */

/* Refuses (exit 2) a preparation of `total` bytes in dir over `limit` or
 * over dir's free space; `why` names what needs the most (a trace line). */
void prepare_check(const char *dir, long long total, long long limit, const char *why);

/* Until prepare_end: SIGINT, SIGTERM and SIGHUP stop the preparation, remove
 * every file prepare_fill made, and exit with 128 + the signal. Files are
 * made only inside the directory dirfd (osmconfine.h). */
void prepare_begin(int dirfd);
/* name (in the directory) removed if there, then made anew and filled with
 * `size` bytes from buf (1 MiB, repeated); a link or another file there is
 * refused, a failed write removes what was prepared, then iot_fail. */
void prepare_fill(const char *name, long long size, const char *buf);
void prepare_end(void);

#endif
